"""The lowering of a scheduled per-rank program: what one rank runs, set up once.

`RankProgram(module, bindings, world, device=...)` takes the instantiated, scheduled
training step (the module `stagec trace` / `stagec stats` build: tools/step.py
`step_module` with its `step_bindings`), this process's world communicator and its
device (device.py: the CPU by default, or one GPU), and fixes:

- the program of this rank: @train_step, or with pipeline stages the function marked
  `stg.stage = {pp = k}` whose coordinates are this rank's (docs/pipeline.md);
- the communicators: one per set of mesh axes any program of the module communicates
  over, made in the same order on every rank (comm.py; MPI splits of the world, or
  NCCL communicators on a GPU);
- the state (state.py: this rank's shards on the device, cut from seeded initial
  weights, or from a safetensors file's, weights.py) and the device's offloader
  where the program offloads;
- the execution (execution.py), which `step(inputs, t)` runs once per training step.

`step` returns the step's loss as one float on every rank: the loss the program
returns (the last stage's, under pipelining) put together over the ranks that hold it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import torch
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp
from xdsl.dialects.func import FuncOp

from stagec.dialects.stg.attributes import DistributedTensorType
from stagec.dialects.stg.comm import AllReduceStagesOp, CollectiveOp, ReshardOp
from stagec.dialects.stg.memory import OffloadOp
from stagec.dialects.stg.model_ops import CrossEntropyOp
from stagec.dialects.stg.state import InputOp
from stagec.runtime.exec.comm import Communicators, Lowering, wait
from stagec.runtime.exec.device import RankDevice
from stagec.runtime.exec.execution import RankExecution, RankPlacement
from stagec.runtime.exec.state import LocalState
from stagec.runtime.exec.weights import SafetensorsWeights, initializer
from stagec.runtime.interpreter.errors import InterpreterError
from stagec.runtime.interpreter.interpreter import Interpreter
from stagec.runtime.interpreter.values import Layout


def stage_functions(module: ModuleOp) -> dict[str, dict[str, int]]:
    """{function: coordinates} of a pipelined module's stage programs (empty if none)."""
    found = {}
    for op in module.ops:
        if isinstance(op, FuncOp) and isinstance(stage := op.attributes.get("stg.stage"), DictionaryAttr):
            found[op.sym_name.data] = {axis: c.value.data for axis, c in stage.data.items()}
    return found


def communicated_axes(module: ModuleOp) -> list[frozenset[str]]:
    """Every set of mesh axes a collective of the module runs over."""
    sets = set()
    for op in module.walk():
        if isinstance(op, ReshardOp):
            sets.add(frozenset(op.mesh_axes()))
        elif isinstance(op, CollectiveOp) and not isinstance(op, AllReduceStagesOp):
            sets.add(frozenset(op.axis_names))
        elif isinstance(op, CrossEntropyOp) and op.logits.type.splits[-1]:
            sets.add(frozenset(op.logits.type.splits[-1]))
    return sorted(sets, key=sorted)


def input_shapes(module: ModuleOp, bindings: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
    """{input name: global shape} of the module's stg.input ops."""
    sizes = Interpreter(module, bindings, verify=False).sizes
    return {op.tensor_name.data: sizes.global_shape(op.result.type) for op in module.walk() if isinstance(op, InputOp)}


class RankProgram:
    """One rank's lowered training step (module doc)."""

    def __init__(self, module: ModuleOp, bindings: Mapping[str, int], world, *, seed: int = 0,
                 init_std: float = 0.02, weights: str | None = None, check: bool = False,
                 activity: Callable[[str], None] | None = None, device: RankDevice | None = None):
        self.module, self.world = module, world
        self.device = device = device if device is not None else RankDevice()
        self.interpreter = Interpreter(module, bindings, verify=False)
        mesh = self.mesh = self.interpreter.mesh
        self.rank = world.rank
        if mesh.num_ranks != world.size:
            raise InterpreterError(f"the program's mesh ({mesh}) has {mesh.num_ranks} ranks, but {world.size} were launched")
        stages = stage_functions(module)
        fixed: dict[str, int] = {}
        name = "train_step"
        for function, coords in stages.items():
            if all(mesh.coord(self.rank, a) == c for a, c in coords.items()):
                name, fixed = function, coords
                break
        else:
            if stages:
                raise InterpreterError(f"no stage program of the module runs on rank {self.rank}")
        self.function = self.interpreter.function(name)
        self.placement = RankPlacement(mesh, fixed, self.rank)
        self.comms = Communicators(world, mesh, self.rank, communicated_axes(module), device)
        initial = SafetensorsWeights(weights) if weights else initializer(seed, init_std)
        self.state = LocalState(mesh, self.rank, initial, device.torch)
        offloader = device.offloader() if any(isinstance(op, OffloadOp) for op in module.walk()) else None
        self.execution = RankExecution(self.interpreter, self.placement, self.state, Lowering(self.comms), world,
                                       offloader, check=check, activity=activity)

    def step(self, inputs: Mapping[str, torch.Tensor], step: int) -> tuple[float, float]:
        """Runs one training step; returns (the global loss, this rank's seconds)."""
        start = time.perf_counter()
        results = self.execution.run_function(self.function, {k: v.to(self.device.torch) for k, v in inputs.items()},
                                              step)
        # summed over the MPI world: host memory
        total = torch.zeros(2, dtype=torch.float64, device="cpu")
        for ty, value in zip(self.function.function_type.outputs.data, results):
            if not isinstance(ty, DistributedTensorType):
                continue
            layout = Layout.of(ty)
            if any(layout.splits):
                raise InterpreterError(f"@{self.function.sym_name.data} returns a split tensor; the loss is a scalar")
            # duplicates count once (coordinate 0); partial sums add up over their axes
            if all(self.mesh.coord(self.rank, a) == 0 for a in self.placement.axes if a not in layout.partial):
                total[0] += float(value[self.rank].double().sum())
            if all(self.mesh.coord(self.rank, a) == 0 for a in self.placement.axes):
                total[1] += 1
        self.execution.note("summing the loss over the ranks")
        if self.world.size > 1:
            wait(self.world.all_reduce(total, "sum"))
        if total[1] != 1:
            raise InterpreterError(f"{int(total[1])} programs returned a loss; a training step returns one")
        return float(total[0]), time.perf_counter() - start
