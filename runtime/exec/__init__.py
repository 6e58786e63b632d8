"""The runtime's executor: a scheduled stg training step run on real ranks (issue 18,
items 2, 3 and 5; docs/run.md).

    from stagec.runtime.exec import RankProgram, launch
    program = RankProgram(module, bindings, csrc.world())   # on each rank (worker.py)
    loss, seconds = program.step(batches.batch(t), t)

Modules: device.py (where the rank computes: the CPU with MPI, or one GPU with NCCL),
comm.py (collectives -> csrc calls over each group), execution.py (the
interpreter's Execution on one rank; communication, state and memory ops lowered),
state.py (this rank's shards and checkpoint), weights.py (seeded initial weights),
data.py (synthetic or token-file batches), program.py (one rank's program, set up
once), worker.py (a rank's process), status.py (what a rank tells the launcher),
launch.py (mpiexec, step reports, failures).
"""

from stagec.runtime.exec.data import Batches, DataError
from stagec.runtime.exec.launch import RunFailed, StepReport, launch
from stagec.runtime.exec.program import RankProgram, input_shapes
from stagec.runtime.exec.weights import initial_weight

__all__ = ["Batches", "DataError", "RankProgram", "RunFailed", "StepReport", "initial_weight", "input_shapes", "launch"]
