"""stg-pipeline: pipeline parallelism by graph-level distribution (stage.md §IV-D3).

    stagec-opt step.mlir --pass-pipeline='builtin.module(stg-pipeline{pp=4 schedule=1f1b balance=layers})'

Requires: a training step from stg-autodiff with micro-batches (`@train_step` holding
a `stg.microbatch` loop of a forward and a backward phase, then an optimizer phase;
docs/training-ir.md), possibly sharded already (its types are kept as they are), and
no `pp` axis on its mesh yet.

Guarantees: the mesh gains an outermost axis `pp = <pp>` (`stg.mesh @mesh [pp = <pp>]`
if the module had none), and @train_step is replaced, for each stage k, by
- `@stage{k}_forward(the micro-batch's inputs) -> (saved values..)`: its layers
  (`stg.repeat L/pp offset k*L/pp of L`), the embedding on the first stage, the final
  norm, head and loss on the last, receiving its input activation from stage k-1 and
  sending its output to stage k+1 (stg.recv / stg.send on the pp axis);
- `@stage{k}_backward(saved values..)`: the same in reverse, the cotangents flowing
  from stage k+1 to k-1, accumulating the gradients of the weights the stage holds;
- `@train_step_stage{k}() attributes {stg.stage = {pp = k}}`: the schedule, which
  slices each micro-batch out of the inputs and calls the forward and backward in
  GPipe or 1F1B order (each forward's results passed straight to its backward, so
  the live values are the schedule's in-flight activations), sums a tied weight's
  gradient over the stages holding it (stg.all_reduce_stages), and runs the stage's
  share of the optimizer phase. The last stage returns the step's loss.
With `schedule=interleaved-1f1b virtual_stages=v` the layers are cut into pp*v chunks
and rank k holds chunks k, k+pp, ... (virtual stages; functions
`@stage{k}_chunk{c}_forward` / `_backward`), the last rank's chunk c sending to rank 0's
chunk c+1, and each rank's schedule is Megatron-LM's interleaved 1F1B order.
The program computes what @train_step computed (the reference interpreter runs the
stages side by side and compares). pp=1 leaves the module unchanged. See
docs/pipeline.md for the layer split, the schedules and the send/recv tags.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from stagec.dialects import stg
from stagec.dialects.stg.cost import region_cost
from stagec.dialects.symbolic import SymbolicError
from stagec.passes.analysis.accounting import module_bindings
from stagec.passes.diagnostics import PassError
from stagec.passes.pipeline.builder import StageBuilder, describe_layers
from stagec.passes.pipeline.partition import (
    PartitionError,
    check_chunk_count,
    check_stage_count,
    partition_by_cost,
    partition_layers,
    require_sizes,
)
from stagec.passes.pipeline.schedule import SCHEDULES, schedule
from stagec.passes.pipeline.step import TrainStep, find_train_step

BALANCES = ("layers", "cost")


@dataclass(frozen=True)
class StgPipeline(ModulePass):
    """Splits @train_step into pipeline stages with send/recv on the cut edges and a micro-batch schedule per stage."""

    name = "stg-pipeline"

    pp: int = 1
    """The number of pipeline stages."""
    schedule: str = "1f1b"
    """The micro-batch schedule of each stage: 1f1b, gpipe or interleaved-1f1b (Megatron's virtual stages)."""
    balance: str = "layers"
    """How layers are cut into stages: layers (equal layer counts) or cost (equal estimated time)."""
    seq_len: int = 4096
    """The sequence length balance=cost assumes when the model config does not bind S."""
    virtual_stages: int = 1
    """Model chunks per rank under schedule=interleaved-1f1b (Megatron's virtual pipeline size): the layers are cut into pp x virtual_stages chunks and rank k holds chunks k, k+pp, ..."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.pp < 1:
            raise PassError(f"pp={self.pp}: the number of pipeline stages must be at least 1")
        if self.schedule not in SCHEDULES:
            raise PassError(f"schedule={self.schedule} is not one of {', '.join(SCHEDULES)}")
        if self.balance not in BALANCES:
            raise PassError(f"balance={self.balance} is not one of {', '.join(BALANCES)}")
        if self.virtual_stages < 1:
            raise PassError(f"virtual_stages={self.virtual_stages}: each rank holds at least 1 model chunk")
        interleaved = self.schedule == "interleaved-1f1b"
        if self.virtual_stages > 1 and not interleaved:
            raise PassError(
                f"virtual_stages={self.virtual_stages} needs schedule=interleaved-1f1b (schedule={self.schedule} "
                "runs one chunk per rank)"
            )
        if self.pp == 1:
            return
        step = find_train_step(op)
        v = self.virtual_stages if interleaved else 1
        if interleaved and step.micro_batches % self.pp:
            raise PassError(
                f"schedule=interleaved-1f1b needs a multiple of pp={self.pp} micro-batches (as Megatron-LM); "
                f"the step has {step.micro_batches}", step.loop
            )
        mesh = self._mesh(op)
        env = module_bindings(op)
        sizes = [stack.size for stack in step.stacks]
        stages = self.pp * v
        try:
            if interleaved:
                check_chunk_count(sizes, self.pp, v, env)
            if self.balance == "cost":
                check_stage_count(sizes, stages, env)
                require_sizes(sizes, env)
                chunks = partition_by_cost(sizes, stages, env, *self._costs(op, step))
            else:
                chunks = partition_layers(sizes, stages, env)
        except PartitionError as error:
            raise PassError(str(error), step.stacks[0].forward) from None
        schedules = [schedule(self.schedule, k, self.pp, step.micro_batches, v) for k in range(self.pp)]
        builder = StageBuilder(step, chunks, self.pp, mesh, schedules, v)
        builder.build()
        returned = step.function.body.block.last_op
        assert isinstance(returned, func.ReturnOp)
        functions = builder.functions(returned.operands)
        Rewriter.insert_op(functions, InsertPoint.before(step.function))
        Rewriter.erase_op(step.function)
        op.attributes["stg.pipeline"] = DictionaryAttr({
            "pp": IntegerAttr(self.pp, i64),
            "schedule": StringAttr(self.schedule),
            "micro_batches": IntegerAttr(step.micro_batches, i64),
            "layers": describe_layers(chunks, sizes, self.pp if interleaved else None),
        } | ({"virtual_stages": IntegerAttr(v, i64)} if interleaved else {}))

    def _mesh(self, module: ModuleOp) -> str:
        """Adds the pp axis, outermost (ranks pp-major); returns the mesh's name."""
        meshes = [o for o in module.ops if isinstance(o, stg.MeshOp)]
        if not meshes:
            Rewriter.insert_op(stg.MeshOp("mesh", {"pp": self.pp}), InsertPoint.at_start(module.body.block))
            return "mesh"
        for mesh in meshes:
            if "pp" in mesh.axis_names:
                raise PassError(f"mesh @{mesh.sym_name.data} already has a pp axis: is the step pipelined already?", mesh)
            new = stg.MeshOp(mesh.sym_name.data, {"pp": self.pp, **mesh.axis_sizes})
            new.attributes |= mesh.attributes
            Rewriter.replace_op(mesh, new)
        return meshes[0].sym_name.data

    def _costs(self, module: ModuleOp, step: TrainStep) -> tuple[float, list[float], float]:
        """FLOPs per micro-batch (forward + backward) of the first stage's extra work
        (what comes before the first layer stack), of one layer of each stack, and of
        the last stage's extra work (after the last stack), with stg.config's values,
        B = 1 (every cost scales with it) and S = seq_len unless stg.config binds it."""
        env = module_bindings(module)
        env.setdefault("B", 1)
        env.setdefault("S", self.seq_len)

        def flops(ops) -> float:
            value, _ = region_cost(ops)
            try:
                return float(value.evaluate_fraction(env))
            except SymbolicError:
                unbound = ", ".join(sorted(value.symbols - env.keys()))
                raise PassError(
                    f"balance=cost cannot weigh the stages: their FLOPs ({value}) need {unbound}, "
                    "which the module's stg.config does not bind"
                ) from None

        def split(block, stacks) -> tuple[list, list]:
            ops = [o for o in block.ops if not isinstance(o, stg.YieldOp)]
            where = [i for i, o in enumerate(ops) if o in stacks]
            return ops[: where[0]], ops[where[-1] + 1 :]

        forwards = {s.forward for s in step.stacks}
        backwards = {s.backward for s in step.stacks}
        before, after = split(step.forward.body.block, forwards)
        back_before, back_after = split(step.backward.body.block, backwards)
        layers = [flops(s.forward.body.block.ops) + flops(s.backward.body.block.ops) for s in step.stacks]
        return flops(before) + flops(back_after), layers, flops(after) + flops(back_before)

