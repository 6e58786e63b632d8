"""Design-space exploration (stage.md §VI, Fig. 8): every valid parallel strategy of a
model on a GPU count, simulated, and the Pareto front of iteration time against peak
memory.

A strategy is a `stagec simulate` command line - tp, pp, cp, ep, the data-parallel
degree as plain DP with a ZeRO stage (0, 1, 2) or as FSDP, activation recompute and the
micro-batch size - so every point can be rerun and inspected on its own. Enumeration
keeps what the sharding rules allow before anything is built: tp divides the query
heads and divides or is a multiple of the key/value heads, and stays inside a node;
pp divides the layers; ep divides the experts (MoE only); tp x pp x cp x ep divides the
GPUs; the global batch is a whole number of micro-batches on every replica, at least
one per pipeline stage; with
sequence parallelism (on whenever tp > 1, as Megatron runs it) and cp the sequence
divides. A strategy the passes still refuse is reported as invalid with their reason
and left out of the front.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Strategy:
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    data: int = 1  # data-parallel replicas (dp, or fsdp)
    fsdp: bool = False
    zero: int = 0
    recompute: bool = False
    micro_batch: int = 1

    @property
    def relative_cost(self) -> float:
        """How long simulating it takes, relative to other strategies of one model,
        GPU count and batch: it grows with the micro-batches each replica runs (batch /
        (data x ep x micro_batch) for all of them alike), then with the stages."""
        return self.pp / (self.data * self.ep * self.micro_batch) + self.pp * 1e-6

    @property
    def label(self) -> str:
        parts = [f"tp{self.tp}" + ("+sp" if self.tp > 1 else "")] if self.tp > 1 else []
        parts += [f"{a}{getattr(self, a)}" for a in ("pp", "cp", "ep") if getattr(self, a) > 1]
        if self.data > 1:
            parts.append(f"fsdp{self.data}" if self.fsdp else f"dp{self.data}" + (f" zero{self.zero}" if self.zero else ""))
        parts.append(f"mbs{self.micro_batch}")
        if self.recompute:
            parts.append("recompute")
        return " ".join(parts)

    def argv(self) -> list[str]:
        out = ["--tp", str(self.tp), "--pp", str(self.pp), "--cp", str(self.cp), "--ep", str(self.ep),
               "--micro-batch", str(self.micro_batch)]
        out += ["--fsdp" if self.fsdp else "--dp", str(self.data)]
        if self.tp > 1:
            out.append("--sp")
        if self.zero:
            out += ["--zero", str(self.zero)]
        if self.recompute:
            out.append("--recompute")
        return out


def _divisors(n: int, limit: int | None = None) -> list[int]:
    return [d for d in range(1, (limit or n) + 1) if n % d == 0]


def _powers_of_two(limit: int) -> list[int]:
    out, p = [], 1
    while p <= limit:
        out.append(p)
        p *= 2
    return out


def strategies(config, gpus: int, batch: int, seq: int, *, gpus_per_node: int = 8,
               micro_batches: Sequence[int] = (1, 2), max_cp: int = 2) -> list[Strategy]:
    """The strategies of `config` (a template ModelConfig) on `gpus` that the sharding
    rules allow (module docstring)."""
    heads = config.num_attention_heads or 1
    kv_heads = config.num_key_value_heads or heads
    layers = config.num_hidden_layers
    experts = config.num_local_experts or 1
    out = []
    for tp, pp, cp, ep in itertools.product(
        [t for t in _powers_of_two(gpus_per_node) if heads % t == 0 and (t <= kv_heads and kv_heads % t == 0
                                                                          or t % kv_heads == 0)],
        [p for p in _powers_of_two(min(layers, 64)) if layers % p == 0],
        _powers_of_two(max_cp),
        [e for e in _powers_of_two(experts) if experts % e == 0] if experts > 1 else [1],
    ):
        model_parallel = tp * pp * cp
        if gpus % model_parallel:
            continue
        replicas = gpus // model_parallel
        if replicas % ep:
            continue  # ep splits the data-parallel ranks (stg-shard: ep is a data axis)
        if seq % (cp * tp):
            continue  # sequence parallelism splits S over tp, context parallelism over cp
        data = replicas // ep
        for mbs in micro_batches:
            if batch % (replicas * mbs) or batch // (replicas * mbs) < pp:
                continue  # whole micro-batches on every replica, at least one per stage
            for recompute in (False, True):
                kinds = [(False, 0)] if data == 1 and ep == 1 else [(False, 0), (False, 1), (False, 2), (True, 0)]
                for fsdp, zero in kinds:
                    if fsdp and ep > 1:
                        continue
                    out.append(Strategy(tp, pp, cp, ep, data, fsdp, zero, recompute, mbs))
    return out


@dataclass
class Point:
    strategy: Strategy
    iteration_ns: float | None = None
    live_bytes: int | None = None
    reserved_bytes: int | None = None
    error: str | None = None
    fits: bool = False
    pareto: bool = False

    def to_json(self) -> dict:
        return {"strategy": self.strategy.label, "argv": self.strategy.argv(), "iteration_ns": self.iteration_ns,
                "live_peak_bytes": self.live_bytes, "reserved_peak_bytes": self.reserved_bytes, "fits": self.fits,
                "pareto": self.pareto, "error": self.error}


def pareto_front(points: Iterable[Point]) -> list[Point]:
    """The points no other point beats on both iteration time and reserved memory (ties
    kept), in order of memory."""
    done = sorted((p for p in points if p.error is None), key=lambda p: (p.reserved_bytes, p.iteration_ns))
    front, best = [], float("inf")
    for p in done:
        if p.iteration_ns < best:
            front.append(p)
            best = p.iteration_ns
    return front


def explore(evaluate: Callable[[Strategy], Point], candidates: Sequence[Strategy], *, jobs: int = 1,
            progress: Callable[[int, int], None] | None = None) -> list[Point]:
    """Every candidate evaluated (in `jobs` processes), in candidate order.

    The processes take the candidates in order of decreasing `relative_cost`
    (longest-processing-time first), so the last ones to finish are short and no core
    idles long at the end while one finishes a 16-stage pipeline.

    With `jobs` > 1 each candidate runs in a process of its own, forked for it with the
    cyclic garbage collector off: a strategy's IR is millions of objects in reference
    cycles, which a long-lived worker would have to collect (5-9% of a strategy's time
    on Llama-3-70B) and a process's exit frees at no cost; the fork's page copies cost
    about 3%. Import what `evaluate` needs before calling, so each fork inherits it."""
    points: list[Point | None] = [None] * len(candidates)
    if jobs > 1 and len(candidates) > 1:
        import gc

        from stagec.runtime.workers import fork_each

        order = sorted(range(len(candidates)), key=lambda i: -candidates[i].relative_cost)

        def died(k: int, why: str) -> Point:  # one strategy out of memory: the others go on
            return Point(candidates[order[k]], error=f"its process ended without a result ({why}; out of memory?)")

        dispatched = fork_each(evaluate, [candidates[i] for i in order], jobs, initializer=gc.disable, on_death=died)
        for done, (k, point) in enumerate(dispatched, 1):
            points[order[k]] = point
            if progress:
                progress(done, len(candidates))
    else:
        for i, s in enumerate(candidates):
            points[i] = evaluate(s)
            if progress:
                progress(i + 1, len(candidates))
    return points  # type: ignore[return-value]


def plot(points: Sequence[Point], path: str, *, hbm_bytes: int, title: str) -> None:
    """Iteration time against reserved peak memory: fitting and not fitting points,
    the Pareto front, the HBM line; written to a temporary name and renamed."""
    import os

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gib = 2**30
    done = [p for p in points if p.error is None]
    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    for fits, colour, name in ((True, "tab:blue", "fits"), (False, "tab:gray", "does not fit")):
        xs = [p.reserved_bytes / gib for p in done if p.fits == fits]
        ys = [p.iteration_ns / 1e9 for p in done if p.fits == fits]
        ax.scatter(xs, ys, s=14, c=colour, alpha=0.6, label=f"{name} ({len(xs)})")
    front = [p for p in done if p.pareto]
    ax.plot([p.reserved_bytes / gib for p in front], [p.iteration_ns / 1e9 for p in front], "o-", c="tab:red",
            ms=5, label=f"Pareto front ({len(front)})")
    for p in front[:12]:
        ax.annotate(p.strategy.label, (p.reserved_bytes / gib, p.iteration_ns / 1e9), fontsize=6,
                    xytext=(4, 3), textcoords="offset points")
    ax.axvline(hbm_bytes / gib, ls="--", c="k", lw=1, label=f"HBM {hbm_bytes / gib:g} GiB")
    ax.set_xlabel("reserved peak memory per GPU (GiB)")
    ax.set_ylabel("iteration time (s)")
    ax.set_yscale("log")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    root, ext = os.path.splitext(path)
    temporary = f"{root}.tmp{os.getpid()}{ext}"
    try:
        fig.savefig(temporary)
        os.replace(temporary, path)
    finally:
        plt.close(fig)
        if os.path.exists(temporary):
            os.unlink(temporary)
