"""The reference interpreter: runs stg programs numerically with torch on the CPU, so
that every transformation (autodiff, sharding, pipelining) can be checked against the
program it came from.

    from stagec.runtime.interpreter import Interpreter, StateStore
    store = StateStore(params={"model.layers.mlp.up_proj.weight": w},   # stacked [L, ...] in a repeat
                       states={("exp_avg", "model.layers.mlp.up_proj.weight"): m},
                       inputs={"input_ids": ids})
    interp = Interpreter(module, bindings={"B": 2, "S": 8})
    loss, = interp.run("train_step", store)     # global tensors; stg.assign updates store

Global view and simulated ranks
-------------------------------
One design serves both. The module's stg.mesh fixes the ranks (row-major, last axis
fastest; mesh.py); without a mesh, or with every axis of size 1, there is one rank
and every value is the global tensor. Otherwise every SSA value is a list of the
local tensors of all simulated ranks, in one process, and the value's stg type says
how those locals make up the global tensor (values.py: split dims are blocks, partial
sums add up, other axes duplicate). Hence:

- state and input reads cut each rank's shard out of the global tensor in the store,
  and stg.assign and a function's results put the global tensor back together;
- compute ops run rank by rank on locals, knowing the rank's coordinates where the
  global position matters (a free local slice, vocab rows, causal query offsets, the
  global token count of a loss);
- collectives and point-to-point ops move tensors between the ranks' lists, within
  the communicator groups of their mesh axes.

All ranks of a program run each op together (lockstep). Pipeline stages are separate
functions on separate ranks: `run_programs({"stage0": {"pp": 0}, "stage1": {"pp": 1}})`
runs each on the ranks its coordinates select, side by side in threads, and their
stg.send / stg.recv pair up by peer coordinates and tag (a receive waits for its
send; when every program waits, the run reports the deadlock). `run_per_rank` and
`per_rank=True` return every rank's locals instead of global tensors.

Running a sharded program and the unsharded original on the same store then compares
them exactly. Every op's result is checked against its type (local shape and dtype
under the bindings), so a transformation that gets a layout wrong fails at the op
that shows it, not at the end. Dropout runs as the identity, so that transformed
programs compare exactly; stg.opaque cannot run at all.

Modules: values.py (per-rank values, mesh, shard/assemble), tensor_types.py (types
under the bindings), registry.py (dispatch by op class), interpreter.py (Interpreter,
Execution), and one module of op implementations per dialect module: compute.py,
shape_ops.py, model_ops.py, state.py, collectives.py, memory.py, structure.py,
training.py.
"""

from stagec.runtime.interpreter.errors import InterpreterError
from stagec.runtime.interpreter.interpreter import Execution, Interpreter
from stagec.runtime.interpreter.state import StateStore
from stagec.runtime.interpreter.values import PerRank, Placement, SimulatedMesh, Token

__all__ = [
    "Execution",
    "Interpreter",
    "InterpreterError",
    "PerRank",
    "Placement",
    "SimulatedMesh",
    "StateStore",
    "Token",
]
