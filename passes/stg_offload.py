"""stg-offload{memory-limit, mode}: DeepCompile's adaptive offloading of optimizer
states (deepcompile.md §4.4, Algorithm 2) - only the fragments that exceed the memory
limit M go to the host, asynchronously, each freed just before memory would cross M,
and each reloaded during the backward pass as soon as memory allows from there on.

S_0 is the step's op sequence in the function's scope: the function body's ops, with
phases (forward, backward, optimizer) opened, and each loop (a layer stack, the
micro-batch loop) one op whose P_mem is its largest. The fragments OS are the
profile's `optimizer_states` (B_os per state of each parameter, per layer of a
stack). stagec's P_mem counts the persistent optimizer states (the memory analysis
keeps them resident for the step), so the paper's P_mem(o) + M_opt is P_mem(o) here:

- offload (Algorithm 2, first loop): with M_peak the largest P_mem of S_0, fragments
  in profile order join OS_offload while M_peak - sum(B_os(OS_offload)) > M; each is
  read (`stg.optimizer_state ... layer k of L`) and copied with `stg.offload ... async
  stream "copy"` before the first op of the forward pass;
- synchronize (second loop): walking S_0 from the forward's start, while
  P_mem(o_i) - M^- > M the next fragment of OS_offload (the order they were issued in:
  the copy stream finishes them in that order) gets its `stg.wait`, which frees its
  device copy (the memory analysis frees an offloaded state at its wait), right before
  o_i; M^- grows by its bytes;
- reload (§4.4's backward policy): walking the backward's ops from the first one after
  the forward and the last synchronization, a fragment is reloaded (`stg.reload ...
  async stream "copy"`) before o_j as soon as every op from o_j to the optimizer step
  stays under M with it back; the rest are reloaded before the optimizer step. The
  reloads are waited for at the end of their block (before the optimizer reads the
  states), and the reloaded value is assigned back to its state, so the optimizer's
  read is ordered after the copy in every backend.

`mode=all-sync` is §5.4's baseline "offload all + sync": every fragment offloaded at
the forward's start and waited for at once, every one reloaded and waited for right
before the optimizer step.

Loops stay structured (ARCHITECTURE.md "Scale"), so a synchronization or reload lands
before a layer loop, never inside it: one op of S_0 covers a whole layer stack, and
with gradient accumulation the micro-batch loop is one op (offloads before it, reloads
after it). Where the waits and reloads stand in different phases, the offloaded
(host) values leave their phase through its stg.yield.

Options: `memory-limit` (M, bytes; 0: the hardware's HBM capacity), `mode`
(`selective`, the paper's adaptive offloading, or `all-sync`), `profile` (a version 2
profile file of this program; without one, the cost model's), `hardware` (h100-sxm).

Requires: the scheduled form (every function `stg.scheduled`), sizes bound. Fails
with a clear message when the optimizer step itself needs more than M (its states are
updated on the device), when more than M is in use where the forward starts (where
the fragments start to leave), or when even every fragment off the device leaves the
peak over M.
Guarantees: by the profile's P_mem, the memory analysis's value at every op stays
under M (at most M); the optimizer reads states that are back on the device.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from stagec.passes.deepcompile.decisions import record
from stagec.dialects.stg.memory import OffloadOp, ReloadOp, WaitOp
from stagec.dialects.stg.names import PhaseKind
from stagec.dialects.stg.schedule import SCHEDULED
from stagec.dialects.stg.state import AssignOp, OptimizerStateOp
from stagec.dialects.stg.structure import PhaseOp, RepeatOp, YieldOp
from stagec.passes.deepcompile.block_profile import BlockProfile, profiled_view
from stagec.passes.deepcompile.sites import top_level, with_extra_yield
from stagec.passes.diagnostics import PassError
from stagec.runtime.cost.profile import Profile, ProfileError, StateFragment, load_profile

__all__ = ["MODES", "OffloadResult", "StgOffload", "offload"]

MODES = ("selective", "all-sync")
COPY_STREAM = "copy"  # the scheduled form's host-device copy stream (docs/scheduled-ir.md)


@dataclass(frozen=True)
class StgOffload(ModulePass):
    """Offload the optimizer-state fragments over M asynchronously, reload in the backward (§4.4)."""

    name = "stg-offload"

    memory_limit: int = 0
    """M in bytes (0: the hardware's HBM capacity)."""

    mode: str = "selective"
    """`selective` (Algorithm 2) or `all-sync` (offload all + sync, §5.4's baseline)."""

    profile: str = ""
    """A version 2 profile file of this program (empty: the cost model's)."""

    hardware: str = "h100-sxm"
    """The hardware description the cost model uses without a profile."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            profile = load_profile(self.profile) if self.profile else None
        except ProfileError as error:
            raise PassError(str(error)) from None
        result = offload(op, self, profile=profile)
        record(op, self.name, "optimizer-state fragments offloaded", len(result.offloaded))
        record(op, self.name, "optimizer-state bytes offloaded", result.offloaded_bytes, unit="bytes")


@dataclass
class OffloadResult:
    """What the pass decided (fragments as `state of param[layer]`)."""

    peak_bytes: int = 0  # M_peak, the profile's
    limit: int = 0
    offloaded: list[str] = field(default_factory=list)  # in issue order
    offloaded_bytes: int = 0
    fragment_bytes: list[int] = field(default_factory=list)  # B_os of each offloaded fragment
    syncs: list[tuple[str, str]] = field(default_factory=list)  # (fragment, the op its wait stands before)
    reloads: list[tuple[str, str]] = field(default_factory=list)  # (fragment, the op its reload stands before)


def offload(module: ModuleOp, options: StgOffload = StgOffload(), *, profile: Profile | None = None,
            bindings: Mapping[str, int] | None = None) -> OffloadResult:
    """Run Algorithm 2 and the backward reload policy on `module`'s step (module doc)."""
    functions = [f for f in module.ops if isinstance(f, func.FuncOp)]
    if not functions or any(SCHEDULED not in f.attributes for f in functions):
        raise PassError("stg-offload adds copies to the scheduled form: run stg-schedule first "
                        "(a function is not stg.scheduled)")
    if options.mode not in MODES:
        raise PassError(f"stg-offload: mode must be one of {', '.join(MODES)}, not '{options.mode}'")
    view, limit = profiled_view("stg-offload", module, profile, bindings, options.hardware, options.memory_limit)
    function = view.program.function
    ops = list(_sequence(function.body.block))
    kinds = [_phase_kinds(op, function) for op in ops]
    p_mem = [view.p_mem(op) for op in ops]
    result = OffloadResult(peak_bytes=max(p_mem, default=0), limit=limit)
    forward = next((i for i, k in enumerate(kinds) if PhaseKind.FORWARD in k), 0)
    step = next((i for i, k in enumerate(kinds) if PhaseKind.OPTIMIZER in k), len(ops))
    if step < len(ops) and max(p_mem[step:]) > limit:
        raise PassError(f"stg-offload: the optimizer step needs {max(p_mem[step:])} bytes with its states on the "
                        f"device, over the memory limit {limit}: the states it updates cannot stay on the host")
    fragments = list(view.profile.optimizer_states)
    if options.mode == "all-sync":
        chosen = fragments
    else:
        chosen, total = [], 0
        for fragment in fragments:  # Algorithm 2, first loop
            if result.peak_bytes - total <= limit:
                break
            chosen.append(fragment)
            total += fragment.bytes
    if not chosen:
        return result
    # the fragments leave from the forward's start: what is in use there stays
    start = p_mem[forward - 1] if forward > 0 else p_mem[forward] if ops else 0
    if start > limit:
        raise PassError(f"stg-offload: {start} bytes are in use where the forward starts, before any optimizer "
                        f"state can leave the device: over the memory limit {limit}")
    if result.peak_bytes - sum(f.bytes for f in fragments) > limit:
        raise PassError(f"stg-offload: the peak is {result.peak_bytes} bytes and the optimizer states are "
                        f"{sum(f.bytes for f in fragments)}: even all of them on the host leave it over the "
                        f"memory limit {limit}")
    last_forward = max((i for i, k in enumerate(kinds) if PhaseKind.FORWARD in k), default=-1)

    # when each fragment is freed (its wait stands before ops[i]) and reloaded
    sync_at: list[int] = []
    if options.mode == "all-sync":
        sync_at = [forward] * len(chosen)
    else:
        freed, queue = 0, 0
        for i in range(forward, max(step, forward + 1)):
            while queue < len(chosen) and (i >= len(ops) or p_mem[i] - freed > limit):
                sync_at.append(i)
                freed += chosen[queue].bytes
                queue += 1
        sync_at += [max(step, forward)] * (len(chosen) - len(sync_at))
    reload_at: list[int] = []
    if options.mode == "all-sync":
        reload_at = [step] * len(chosen)
    else:
        first = max(last_forward + 1, max(sync_at) + 1)
        suffix = [0] * (step + 1)
        for i in range(step - 1, -1, -1):
            suffix[i] = max(p_mem[i], suffix[i + 1])
        off = sum(f.bytes for f in chosen)  # bytes on the host while ops[i] runs
        pending = 0
        for i in range(first, step):
            while pending < len(chosen) and suffix[i] - (off - chosen[pending].bytes) <= limit:
                reload_at.append(i)
                off -= chosen[pending].bytes
                pending += 1
        reload_at += [step] * (len(chosen) - len(reload_at))

    anchor_op = ops[forward] if forward < len(ops) else None
    _Rewriter(function, ops, view, options.mode, result).run(chosen, anchor_op, sync_at, reload_at, step)
    return result


def _sequence(block: Block):
    """S_0: the ops of `block`, phases opened, loops whole, terminators left out."""
    for op in block.ops:
        if isinstance(op, (YieldOp, func.ReturnOp)):
            continue
        if isinstance(op, PhaseOp):
            yield from _sequence(op.body.block)
        else:
            yield op


def _phase_kinds(op: Operation, function) -> set:
    kinds = {o.kind.data for o in op.walk() if isinstance(o, PhaseOp)}
    parent = op.parent_op()
    while parent is not None and parent is not function:
        if isinstance(parent, PhaseOp):
            kinds.add(parent.kind.data)
        parent = parent.parent_op()
    return kinds


def _label(fragment: StateFragment) -> str:
    layer = f"[{fragment.layer}]" if fragment.layer is not None else ""
    return f"{fragment.state} of {fragment.param}{layer}"


class _Rewriter:
    def __init__(self, function, ops: list[Operation], view: BlockProfile, mode: str, result: OffloadResult):
        self.function, self.ops, self.view, self.mode, self.result = function, ops, view, mode, result
        self.reads: dict[tuple[str, str], OptimizerStateOp] = {}
        for op in function.walk():
            if isinstance(op, OptimizerStateOp) and op.explicit_layer() is None:
                self.reads.setdefault((op.tensor_name.data, op.param.data), op)

    def _read(self, fragment: StateFragment) -> OptimizerStateOp:
        model = self.reads.get((fragment.state, fragment.param))
        if model is None:
            raise PassError(f"stg-offload: the profile's optimizer state '{_label(fragment)}' is not read in the "
                            "step: profile the program the pass runs on")
        layer = None
        if fragment.layer is not None:
            loop = model.parent_op()
            while loop is not None and not isinstance(loop, RepeatOp):
                loop = loop.parent_op()
            if loop is None:
                raise PassError(f"stg-offload: the profile names layer {fragment.layer} of '{fragment.state} of "
                                f"{fragment.param}', which is not in a layer stack")
            layer = (fragment.layer, self.view.program.ev.int(loop.stack_expr, "a layer stack"))
        read = OptimizerStateOp(fragment.state, fragment.param, model.result.type, layer)
        read.result.name_hint = model.result.name_hint
        return read

    def _before(self, i: int, step: int) -> tuple[Block, Operation | None]:
        """Where an op placed before ops[i] goes (the end of the function at the end)."""
        if i < len(self.ops):
            return self.ops[i].parent_block(), self.ops[i]
        block = self.function.body.block
        return block, block.last_op

    @staticmethod
    def _insert(block: Block, before: Operation | None, new: list[Operation]) -> None:
        for op in new:
            if before is None:
                block.add_op(op)
            else:
                block.insert_op_before(op, before)

    @staticmethod
    def _encloses(block: Block, inner: Block) -> bool:
        while inner is not None:
            if inner is block:
                return True
            parent = inner.parent_op()
            inner = parent.parent_block() if parent is not None else None
        return False

    def _visible(self, value: SSAValue, block: Block) -> SSAValue:
        """`value`, through the yields of the phases around it, where `block` sees it."""
        while not self._encloses(value.owner.parent_block(), block):
            phase = value.owner.parent_block().parent_op()
            if not isinstance(phase, PhaseOp):
                raise PassError("stg-offload: internal: an offloaded state would leave a loop")
            _, value = with_extra_yield(phase, value)
        return value

    def run(self, chosen: list[StateFragment], anchor: Operation | None, sync_at: list[int],
            reload_at: list[int], step: int) -> None:
        home, before = (anchor.parent_block(), anchor) if anchor is not None else self._before(len(self.ops), step)
        tokens = []
        for fragment in chosen:
            read = self._read(fragment)
            copy = OffloadOp(read.result, is_async=True)
            copy.properties["stream"] = StringAttr(COPY_STREAM)
            hint = read.result.name_hint or fragment.state
            copy.results[0].name_hint = f"{hint}_off"
            self._insert(home, before, [read, copy])
            tokens.append(copy.results[0])
            self.result.offloaded.append(_label(fragment))
            self.result.offloaded_bytes += fragment.bytes
            self.result.fragment_bytes.append(fragment.bytes)
        hosts = []
        for fragment, token, i in zip(chosen, tokens, sync_at):
            block, at = self._before(i, step)
            where = self.ops[i].name if i < len(self.ops) else "the end"
            if not self._encloses(home, block):  # a later phase: the forward's end
                block, at = home, home.last_op if isinstance(home.last_op, YieldOp) else None
                where = "the forward's end"
            wait = WaitOp(token)
            wait.result.name_hint = f"{token.name_hint.removesuffix('_off')}_host"
            self._insert(block, at, [wait])
            hosts.append(wait.result)
            self.result.syncs.append((_label(fragment), where))
        waits_at: dict[int, list[Operation]] = {}
        for fragment, host, i in zip(chosen, hosts, reload_at):
            block, at = self._before(i, step)
            host = self._visible(host, block)
            back = ReloadOp(host, is_async=True)
            back.properties["stream"] = StringAttr(COPY_STREAM)
            back.results[0].name_hint = f"{host.name_hint.removesuffix('_host')}_back" if host.name_hint else None
            self._insert(block, at, [back])
            value = WaitOp(back.results[0])
            layer = None
            if fragment.layer is not None:
                layer = (fragment.layer, self._read(fragment).properties["stack"].value.data)
            assign = AssignOp(value.result, fragment.state, fragment.param, layer)
            waits_at.setdefault(id(block), [block]).extend([value, assign])
            self.result.reloads.append((_label(fragment), self.ops[i].name if i < len(self.ops) else "the end"))
        for block, *new in waits_at.values():
            # the states are back before the optimizer reads them: right before the
            # optimizer step where the reloads' block holds it, else at the block's end
            if step < len(self.ops) and self._encloses(block, self.ops[step].parent_block()):
                self._insert(block, top_level(self.ops[step], block), new)
            else:
                self._insert(block, block.last_op if isinstance(block.last_op, (YieldOp, func.ReturnOp)) else None,
                             new)
