"""Liveness and the memory timeline of a training step (stage.md §V-B).

STAGE tracks each tensor's lifetime "from creation to last use, assuming garbage
collection immediately thereafter"; this module does that over the schedule of one
function (a training step's `@train_step`, or any stg function), per rank: every size
is a tensor's local shard, evaluated with integer bindings.

The schedule is the function's leaf ops in program order with loop bodies unrolled:
position p is the p-th op executed. Phases are transparent; a `stg.vjp` is one fused
kernel (one position; its body is never walked); loop bodies are laid out once and
their profile is tiled `count` times, so an 80-layer model costs one layer's walk.

The memory model, by kind (KINDS):

- **Persistent states** live for the whole step: parameters (`weights`), `"grad"`
  states (`gradients`), `"master"`, `"exp_avg"`, `"exp_avg_sq"`, `"step"`,
  `"momentum"` and any other per-parameter state (`optimizer_states`). Each distinct
  (state name, param) pair is counted once, times its repeat multiplicity (a state
  read inside `stg.repeat L` names L tensors; a micro-batch loop reads the same one).
  A value written to a state by `stg.assign` *is* that state's storage (updates are
  in place), and so is every value it aliases.
- **A parameter kept only as its master** (FSDP's mixed precision,
  liveness.gathered_from_master: a parameter with a `master` state whose every read
  is an all-gather's input) is no persistent state: PyTorch FSDP keeps the fp32
  flat parameter, the master, and casts a low-precision shard before each
  all-gather. Each read is that shard, a transient of kind `weights` living until
  the all-gather; the optimizer's write of the low-precision copy is a transient.
- **The key/value cache** of an inference step (`stg.kv_cache`, docs/inference.md) is
  persistent too, kind `kv_cache`, each cache name once times its repeat multiplicity;
  the kind is a column of the report only for programs that hold a cache.
- **Transient tensors** (`activations`; results of communication ops are
  `communication`) are SSA values, live from the op defining them to their last use,
  both ends included; a value never used lives at its defining op only. Aliases
  share one buffer: a reshape's result (a view), a wait's result (its token's
  payload), a phase's result (its yield), a loop's block arguments and results.
  - Inside a loop body a value lives for its iteration unless yielded: a carried
    value lives into the next iteration until its block argument's last use there
    (the last iteration's until the loop result's last use);
  - a per-iteration output is one slice of the loop's stacked result: slices grow
    iteration by iteration, and a later loop that scans the stack (a backward
    `reverse` repeat) frees slice i after its last use in the iteration that
    receives it. Any other use of the stack keeps every slice until that use.
  - a value used inside a loop lives until its use in the loop's last iteration;
    a whole tensor scanned by a loop until the last iteration's use.
  - a value returned by the function lives to the end of the step.
  - a `stg.vjp`'s operands and results count, not the forward ops in its body.
  - a cast whose one use is an `add` assigned to a state (accumulating a bf16
    gradient into the fp32 `grad` state) is no buffer: the runtime adds the bf16
    gradient into the fp32 one in one mixed-dtype kernel (Megatron's
    `param.main_grad.add_(param.grad.data)`), so the bf16 gradient lives until the
    add (liveness.is_accumulating_cast).
  - `stg.release %x` ends x's lifetime there if its last use comes later (it never
    extends one); `stg.offload %x` ends x's device lifetime at the copy (at its
    `stg.wait` when asynchronous) and `stg.reload` makes a new device buffer. An
    offloaded persistent state is off the device from the copy until its reload.

The scheduled form (docs/scheduled-ir.md) is read as it stands: a `stg.group` is one
kernel or one call, one position, whose results are born there and are
`communication` for a coalesced collective; values its body makes and does not yield
(a summed GEMM's partial products) are the kernel's own, not buffers. An async op's
token holds its payload from the issue and the `stg.wait` result aliases it. An
async reduction or all-to-all (or a coalesced group) reads its input until the
compute stream first waits for it in the same scope: the frameworks keep the input until the collective's
event has passed (FSDP2's `reduce_scatter_state` holds the unsharded gradients of the
reduce-scatter in flight), so a gradient whose wait stg-defer-gradient-waits moved
down is counted until then. Waited for right behind its issue, an async collective
costs what the synchronous one did. An all-gather's input (a parameter shard, or
FSDP's low-precision copy freed once the gather is issued) and a send's end at their
position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from xdsl.dialects import func
from xdsl.ir import Operation

from stagec.dialects.kinds import kind_of
from stagec.dialects.stg.names import PhaseKind
from stagec.dialects.stg.inference import KvCacheOp
from stagec.dialects.stg.state import AssignOp, OptimizerStateOp, ParamOp
from stagec.dialects.stg.structure import RepeatOp
from stagec.passes.analysis.communicators import Communicator, communicators_of
from stagec.passes.analysis.liveness import (
    KINDS,
    KV_CACHE,
    AccountingError,
    Evaluator,
    Liveness,
    Schedule,
    gathered_from_master,
    state_kind,
)


# -- persistent states ----------------------------------------------------------------


@dataclass(frozen=True)
class PersistentState:
    """A state kept across steps: (state, param) is ("<name>", None) for a parameter
    and e.g. ("exp_avg", "<param name>") for one of its optimizer states."""

    state: str
    param: str | None
    kind: str
    multiplicity: int
    bytes: int  # local bytes of all `multiplicity` tensors


def repeat_multiplicity(op: Operation, ev: Evaluator, whole_stacks: bool = False) -> int:
    """How many distinct tensors a state op names: the product of the enclosing
    stg.repeat counts (micro-batch loops re-read the same tensor). With
    `whole_stacks`, a slice of a layer stack counts the whole stack."""
    count, parent = 1, op.parent_op()
    while parent is not None:
        if isinstance(parent, RepeatOp):
            size = parent.stack_expr if whole_stacks else parent.count_expr
            count *= ev.int(size, "a repeat count")
        parent = parent.parent_op()
    return count


def stack_slice(op: Operation) -> tuple[str, ...]:
    """The layer-stack slices enclosing `op` (`stg.repeat ... offset k of L`), by their
    offsets: an interleaved pipeline rank (docs/pipeline.md) reads the same per-layer
    state names in several slices, each holding its own layers."""
    offsets, parent = [], op.parent_op()
    while parent is not None:
        if isinstance(parent, RepeatOp) and parent.offset is not None:
            offsets.append(str(parent.offset_expr))
        parent = parent.parent_op()
    return tuple(offsets)


# the ops that name a persistent state, by kind (dialects/kinds.py)
_STATEFUL = kind_of(ParamOp, OptimizerStateOp, AssignOp, KvCacheOp)


def persistent_states(function: func.FuncOp, ev: Evaluator,
                      from_master: frozenset[str] | None = None) -> list[PersistentState]:
    """Every distinct (state, param) the function reads or assigns, counted once (the
    largest size if two mentions disagree); a parameter kept only as its master
    (liveness.gathered_from_master, or `from_master` where the caller has it) is none."""
    found: dict[tuple[str, str | None], dict[tuple[str, ...], PersistentState]] = {}
    if from_master is None:
        from_master = gathered_from_master(function)
    for op in function.walk():
        kind = _STATEFUL(op)
        if kind == 0:
            key, ty = (op.tensor_name.data, None), op.result.type
        elif kind == 1:
            key, ty = (op.tensor_name.data, op.param.data), op.result.type
        elif kind == 2:
            key, ty = op.key, op.value.type
        elif kind == 3:
            key, ty = (op.cache_name.data, KV_CACHE), op.result.type
        else:
            continue
        if key[1] is None and key[0] in from_master:
            continue
        mult = repeat_multiplicity(op, ev)
        kind = KV_CACHE if kind == 3 else state_kind(*key)
        state = PersistentState(key[0], key[1], kind, mult, mult * ev.device_bytes(ty))
        slices = found.setdefault(key, {})
        where = stack_slice(op)
        if where not in slices or slices[where].bytes < state.bytes:
            slices[where] = state
    return [_held(slices) for slices in found.values()]


def _held(slices: dict[tuple[str, ...], PersistentState]) -> PersistentState:
    """One state as mentioned in each layer-stack slice (`()`: outside every slice).
    The slices a rank holds are distinct layers, so their tensors add up; a mention
    outside them (a gradient bucket's whole [L/pp, ...] stack) covers what the rank
    holds, so it counts where it is larger."""
    inside = [state for where, state in slices.items() if where]
    outside = slices.get(())
    if not inside:
        assert outside is not None
        return outside
    total = PersistentState(inside[0].state, inside[0].param, inside[0].kind,
                            sum(s.multiplicity for s in inside), sum(s.bytes for s in inside))
    return outside if outside is not None and outside.bytes > total.bytes else total


# -- the report ----------------------------------------------------------------------------


class TimelineEntry(NamedTuple):
    position: int
    op: str
    phase: str
    bytes: dict[str, int]


@dataclass(frozen=True, eq=False)
class MemoryTimeline:
    """Live bytes by kind at each position of the schedule, persistent states included.
    `live[p, k]` is kind KINDS[k] at position p; `leaf[p]` indexes `op_names` and
    `phases` (the op executed there and its phase)."""

    live: np.ndarray
    leaf: np.ndarray
    op_names: tuple[str, ...]
    phases: tuple[str, ...]
    kinds: tuple[str, ...] = KINDS

    def __len__(self) -> int:
        return len(self.leaf)

    def __getitem__(self, position: int) -> TimelineEntry:
        leaf = int(self.leaf[position])
        return TimelineEntry(
            position,
            self.op_names[leaf],
            self.phases[leaf],
            {k: int(v) for k, v in zip(self.kinds, self.live[position])},
        )

    def entries(self) -> list[TimelineEntry]:
        return [self[p] for p in range(len(self))]

    def totals(self) -> np.ndarray:
        return self.live.sum(axis=1)

    def phase_spans(self) -> list[tuple[str, int, int]]:
        """Runs of consecutive positions in one phase: (phase, first, last)."""
        if not len(self):
            return []
        codes = np.asarray([self.phases[i] for i in range(len(self.phases))], dtype=object)[self.leaf]
        change = np.flatnonzero(codes[1:] != codes[:-1]) + 1
        starts = np.concatenate(([0], change))
        ends = np.concatenate((change - 1, [len(self) - 1]))
        return [(str(codes[a]), int(a), int(b)) for a, b in zip(starts, ends)]

    def to_json(self) -> dict:
        return {
            "kinds": list(self.kinds),
            "entries": [
                {"position": e.position, "op": e.op, "phase": e.phase, "bytes": e.bytes} for e in self.entries()
            ],
        }


@dataclass(frozen=True, eq=False)
class StepAllocations:
    """The step's device allocations in the order a run makes them, what a
    caching-allocator replay (reserved.py) needs beyond the live bytes:
    `persistent` the byte size of each persistent tensor (a state of a layer stack is
    one tensor per layer), allocated before the step and kept; `spans` each transient
    buffer instance as a row (first, last, bytes) of absolute positions, in the order
    the walk made them; `streams` the stream each span is allocated on (one entry per
    row, liveness.COMPUTE_STREAM or UNSHARD_STREAM; empty: all on the compute
    stream); `gaps` the same rows for an offloaded state's time off the device
    (liveness.Liveness.step_spans)."""

    persistent: tuple[int, ...] = ()
    spans: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), dtype=np.int64))
    gaps: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), dtype=np.int64))
    streams: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass(frozen=True, eq=False)
class MemoryReport:
    """Peak device memory of one rank over one step, and where it occurs."""

    peak_bytes: int
    breakdown: dict[str, int]  # live bytes by kind at the peak
    persistent: dict[str, int]  # persistent states by kind
    states: tuple[PersistentState, ...]
    peak_position: int | None
    peak_op: str | None
    peak_phase: str | None
    peak_loops: tuple[tuple[str, int, int], ...]  # (loop [reverse], iteration, count), outermost first
    timeline: MemoryTimeline
    allocations: StepAllocations = field(default_factory=StepAllocations)
    communicators: tuple[Communicator, ...] = ()  # the NCCL communicators the rank uses

    @property
    def peak_location(self) -> str:
        if self.peak_position is None:
            return "no op (persistent states only)"
        where = f"{self.peak_op} (position {self.peak_position}"
        where += f", {self.peak_phase} phase)" if self.peak_phase else ")"
        for loop, i, count in self.peak_loops:
            name, _, reverse = loop.partition(" ")
            where += f", {name}{' (' + reverse + ')' if reverse else ''} iteration {i + 1} of {count}"
        return where


def analyze_memory(function: func.FuncOp, ev: Evaluator) -> MemoryReport:
    """Peak memory, its breakdown by kind, and the timeline of one rank's step."""
    schedule = Schedule(function, ev)
    from_master = gathered_from_master(function)
    states = persistent_states(function, ev, from_master)
    # an inference step's key/value cache is a kind of its own, after the others
    kinds = KINDS + (KV_CACHE,) if any(st.kind == KV_CACHE for st in states) else KINDS
    persistent = {k: 0 for k in kinds}
    for st in states:
        persistent[st.kind] += st.bytes
    liveness = Liveness(schedule, from_master)
    liveness.add_buffers()
    liveness.add_offloaded_states()
    live = liveness.profile()
    if len(kinds) > len(KINDS):
        live = np.hstack([live, np.zeros((len(live), 1), dtype=np.int64)])
    live = live + np.asarray([persistent[k] for k in kinds], dtype=np.int64)
    timeline = MemoryTimeline(
        live,
        schedule.leaf_codes(),
        tuple(op.name for op in schedule.leaves),
        tuple(schedule.leaf_phase),
        kinds,
    )
    tensors = tuple(size for st in states for size in [st.bytes // st.multiplicity] * st.multiplicity if size)
    spans = liveness.step_spans()
    allocations = StepAllocations(tensors, spans[:, :3], liveness.step_spans(gaps=True), spans[:, 3])
    comms = communicators_of(function, ev)
    if not len(timeline):
        return MemoryReport(
            sum(persistent.values()), dict(persistent), dict(persistent), tuple(states), None, None, None, (), timeline,
            allocations, comms,
        )
    peak = int(np.argmax(timeline.totals()))
    entry = timeline[peak]
    return MemoryReport(
        sum(entry.bytes.values()),
        entry.bytes,
        dict(persistent),
        tuple(states),
        peak,
        entry.op,
        entry.phase,
        tuple(schedule.locate(peak)),
        timeline,
        allocations,
        comms,
    )


def plot_timeline(timeline: MemoryTimeline, path: str, title: str = "", max_points: int = 20000) -> None:
    """A PNG of the timeline: live bytes stacked by kind, phases shaded. Long
    timelines are binned to `max_points`, each bin showing its position of peak use."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    live, positions = timeline.live, np.arange(len(timeline))
    if len(timeline) > max_points:
        edges = np.linspace(0, len(timeline), max_points + 1).astype(np.int64)
        totals = timeline.totals()
        picks = np.asarray([a + int(np.argmax(totals[a:b])) for a, b in zip(edges[:-1], edges[1:]) if b > a])
        live, positions = live[picks], picks
    gib = float(1 << 30)
    fig, ax = plt.subplots(figsize=(13, 5))
    shades = {
        PhaseKind.FORWARD: "#dbe9f6", PhaseKind.BACKWARD: "#fbe3d6",
        PhaseKind.RECOMPUTE: "#e7f4dc", PhaseKind.OPTIMIZER: "#eee0f5",
    }
    labelled = set()
    for phase, first, last in timeline.phase_spans():
        if phase in shades:
            ax.axvspan(first, last + 1, color=shades[phase], alpha=0.6, lw=0,
                       label=None if phase in labelled else f"{phase} phase")
            labelled.add(phase)
    if len(positions):
        ax.stackplot(positions, (live / gib).T, labels=[k.replace("_", " ") for k in timeline.kinds], step="post")
        peak = int(np.argmax(timeline.totals()))
        ax.axhline(timeline.totals()[peak] / gib, color="k", lw=0.8, ls="--")
        ax.annotate(f"peak {timeline.totals()[peak] / gib:.2f} GiB", (peak, timeline.totals()[peak] / gib),
                    textcoords="offset points", xytext=(0, 4), ha="center", fontsize=8)
        ax.set_ylim(0, timeline.totals()[peak] / gib * 1.08 or 1)
    ax.set_xlabel("position in the step (ops executed)")
    ax.set_ylabel("live device memory per rank (GiB)")
    ax.set_title(title or "memory timeline")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)
    ax.margins(x=0)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = [
    "KINDS",
    "AccountingError",
    "Evaluator",
    "MemoryReport",
    "MemoryTimeline",
    "PersistentState",
    "StepAllocations",
    "Schedule",
    "TimelineEntry",
    "analyze_memory",
    "persistent_states",
    "plot_timeline",
    "repeat_multiplicity",
]
