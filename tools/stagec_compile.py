"""`stagec compile`: DeepCompile's optimization and profiling loop (deepcompile.md §3,
Fig. 2-3) over a fully-sharded training step, writing the scheduled IR that
`stagec trace --ir` and `stagec simulate FILE.mlir` take.

The step: the model template -> stg-autodiff (micro-batches, recompute) ->
stg-shard{fsdp=N} -> stg-match-collectives -> the scheduling passes with
stg-fully-shard instead of FSDP's units (docs/deepcompile.md). Then the loop:

- the inner loop: each optimization pass runs on the latest profile, and the program
  it wrote is profiled again for the next pass (the simulator, or the cost model);
- the outer loop (`--rounds`): every round starts again from the fully-sharded step,
  as DeepCompile recompiles after its warm-up iterations; round 1 profiles the step
  as the first iterations run it, before the optimizer's states exist
  (runtime/cost/warmup.py), later rounds with them. A measured profile (`--profile`,
  version 2, of this step) is round 1's first profile; the later ones are simulated.

The optimization passes are data (`OPTIMIZATIONS`: flag, pass name, options): a pass
runs when its flag is on and it is in the pass registry (passes/__init__.py). A pass
reports what it decided through passes/deepcompile/decisions.py; the loop prints it.
`--baseline zero3|fsdp2` runs DeepSpeed's or FSDP2's schedule instead
(stg-zero3, stg-fsdp2).

Gradients are reduced as each framework's runtime reduces them, in the step every
round starts from: DeepCompile's runtime and DeepSpeed ZeRO-3 copy them into reduce
buckets of `reduce_bucket_size` elements (stg-reduce-buckets, `--reduce-bucket`),
FSDP2 reduce-scatters a layer group at a time (stg-fsdp2).

Python: `fully_sharded_step(...)` builds the step, `compile_step(module, bindings,
settings)` runs the loop (the Fig. 7 benchmark calls both), `load_compiled(path)`
reads the output back with its bindings.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from stagec.tools.errors import UsageError, finite_number, positive_int, standalone_main
from stagec.tools.job_options import DEFAULT_SEQ
from stagec.tools.progress import status

# deepcompile.md §5.3: "reserving approximately 7GB for the CUDA driver, NCCL buffers,
# and other runtime components, and then applying an additional 10% margin"
RESERVED_BYTES = 7e9
MARGIN = 0.10
# M_prefetch (§4.2): "significantly larger than the predefined prefetch buffer size" of
# ZeRO-3 (5e7 elements, 100 MB in bf16); DeepCompile's own prefetch pass caps the bytes
# it holds for prefetch at MAX_BUFFERED_SIZE = 4e9 (deepspeed/compile/passes/prefetch.py)
DEFAULT_PREFETCH_LIMIT = 4_000_000_000
# DeepSpeed's reduce_bucket_size (elements), stg-reduce-buckets' default; a constant here
# so the CLI does not import the pass to print its help
DEEPSPEED_REDUCE_BUCKET_SIZE = 500_000_000
BASELINES = ("zero3", "fsdp2")
BASELINE_PASSES = {"zero3": "stg-zero3", "fsdp2": "stg-fsdp2"}
PROFILERS = ("simulator", "cost-model")


@dataclass(frozen=True)
class CompileSettings:
    """What `compile_step` runs: the optimizations by flag, or a baseline."""

    enabled: Mapping[str, bool] = field(default_factory=lambda: {"prefetch": True})
    memory_limit: int = 0  # bytes; 0: the hardware's capacity less the paper's margins
    rounds: int = 2
    baseline: str | None = None
    hardware: str = "h100-sxm"
    profiler: str = "simulator"
    measured_profile: str | None = None  # a version 2 profile file of the step, round 1's first
    prefetch_limit: int = DEFAULT_PREFETCH_LIMIT  # M_prefetch, bytes (0: none)
    reduce_bucket: int = DEEPSPEED_REDUCE_BUCKET_SIZE  # elements per reduce bucket (0: none); not fsdp2's
    # mlir-opt's --verify-each: the IR verified after every pass, not only at the end
    # (seven more verifications, about a third of Llama-3-70B's compile)
    verify_each: bool = False


@dataclass(frozen=True)
class Optimization:
    """One pass of the loop: its flag, its name in the pass registry, and its options
    for a memory limit M (bytes) and a profile file."""

    flag: str
    pass_name: str
    options: Callable[[CompileSettings, int, str], dict]  # (settings, M, profile path) -> the pass's options


def _memory_and_profile(settings: CompileSettings, limit: int, profile: str) -> dict:
    return {"memory_limit": limit, "profile": profile, "hardware": settings.hardware}


def _prefetch_options(settings: CompileSettings, limit: int, profile: str) -> dict:
    return _memory_and_profile(settings, limit, profile) | {"prefetch_limit": settings.prefetch_limit}


# Fig. 3's passes in the paper's order (§5.2: "prefetching and unsharding, in that order").
OPTIMIZATIONS: tuple[Optimization, ...] = (
    Optimization("prefetch", "stg-prefetch", _prefetch_options),
    Optimization("unshard", "stg-unshard", _memory_and_profile),
    Optimization("offload", "stg-offload", _memory_and_profile),
)


def available(pass_name: str) -> bool:
    from stagec.passes import all_passes

    return pass_name in all_passes()


def default_memory_limit(hardware: str) -> int:
    """The paper's M: the capacity less 7 GB reserved, less 10% of the rest (§5.3)."""
    from stagec.runtime.cost.hardware_description import load_hardware

    return int((load_hardware(hardware).memory_capacity - RESERVED_BYTES) * (1 - MARGIN))


# -- the step ---------------------------------------------------------------------------


def fully_sharded_step(model: str, fsdp: int, *, seq: int, micro_batch: int = 1, micro_batches: int = 1,
                       recompute: bool = True, dtype: str = "bf16", optimizer: str = "adamw", unroll: bool = True,
                       lr: float | None = None, forward=None):
    """The fully-sharded, scheduled training step of `model` (a named config or a
    config.json) over fsdp ranks, and its bindings: B = micro_batch x fsdp sequences
    of `seq` tokens per micro-batch, M micro-batches. With `unroll` the layer loops of
    the forward and backward are unrolled after stg-fully-shard (stg-unroll-layers),
    so gathers can be issued during earlier layers. `lr`: the optimizer's learning
    rate (default: stg-autodiff's). `forward`: the forward program to start from (the
    torch frontend's import) instead of the template of `model`. Bad input: UsageError."""
    from stagec.dialects import make_context
    from stagec.frontends.templates import ConfigError, build_model, load_config
    from stagec.passes.diagnostics import PassError
    from stagec.passes.schedule.pipeline import scheduling_passes
    from stagec.passes.stg_autodiff import StgAutodiff
    from stagec.passes.stg_fsdp_units import StgFsdpUnits
    from stagec.passes.stg_fully_shard import StgFullyShard
    from stagec.passes.stg_match_collectives import StgMatchCollectives
    from stagec.passes.stg_shard import StgShard
    from stagec.passes.stg_unroll_layers import StgUnrollLayers

    if fsdp < 2:
        raise UsageError(f"--fsdp {fsdp}: DeepCompile's passes shard parameters over at least 2 ranks")
    try:
        module = forward if forward is not None else build_model(load_config(model), dtype)
    except (ConfigError, ImportError) as error:
        raise UsageError(str(error)) from None
    autodiff = StgAutodiff(optimizer=optimizer, micro_batches=micro_batches, recompute=recompute)
    passes = [autodiff if lr is None else dataclasses.replace(autodiff, lr=lr),
              StgShard(fsdp=fsdp), StgMatchCollectives()]
    for p in scheduling_passes():
        if isinstance(p, StgFsdpUnits):  # DeepCompile's per-parameter form instead of FSDP's units
            passes += [StgFullyShard()] + ([StgUnrollLayers()] if unroll else [])
        else:
            passes.append(p)
    ctx = make_context()
    for p in passes:
        try:
            p.apply(ctx, module)
        except PassError as error:
            raise UsageError(f"{p.name}: {error}") from None
    return module, {"B": micro_batch * fsdp, "S": seq, "M": micro_batches}


# -- the loop ---------------------------------------------------------------------------


@dataclass
class PassRun:
    round: int
    pass_name: str
    profile_origin: str
    decisions: list
    seconds: float


@dataclass
class Estimate:
    """What a profile of the program says: the simulated step and its peak memory."""

    round: int
    after: str  # the pass the program was profiled after (the base: stg-fully-shard or stg-reduce-buckets)
    origin: str
    step_ms: float | None
    peak_bytes: int


@dataclass
class CompileResult:
    module: object
    bindings: dict
    memory_limit: int
    runs: list[PassRun] = field(default_factory=list)
    estimates: list[Estimate] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # notes on passes not in this build
    seconds: float = 0.0


def _estimate(profile, round_: int, after: str) -> Estimate:
    positions = profile.schedule.positions
    ends = [p.start_micros + p.micros for p in positions if p.start_micros is not None]
    return Estimate(round_, after, profile.origin or "", max(ends) / 1000.0 if ends else None,
                    max(p.mem_before_bytes for p in positions))


def compile_step(module, bindings: Mapping[str, int], settings: CompileSettings,
                 progress: Callable[[str], None] | None = None) -> CompileResult:
    """Fig. 3's loop on the fully-sharded step `module` (not modified); the result
    holds the last round's program (module doc). Bad settings: UsageError."""
    from stagec.dialects import make_context
    from stagec.passes import all_passes
    from stagec.passes.deepcompile.decisions import take
    from stagec.passes.diagnostics import PassError
    from stagec.runtime.cost.profile import ProfileError, load_profile
    from stagec.runtime.cost.warmup import before_first_step

    started = time.perf_counter()
    say = progress or (lambda _: None)
    registry = all_passes()
    if settings.rounds < 1:
        raise UsageError(f"--rounds {settings.rounds}: at least 1")
    if settings.profiler not in PROFILERS:
        raise UsageError(f"the profiler '{settings.profiler}' is not one of {', '.join(PROFILERS)}")
    limit = settings.memory_limit or default_memory_limit(settings.hardware)
    result = CompileResult(module, dict(bindings), limit)
    if settings.baseline is not None:
        if settings.baseline not in BASELINES:
            raise UsageError(f"--baseline {settings.baseline}: one of {', '.join(BASELINES)}")
        chosen = [(BASELINE_PASSES[settings.baseline], {})]
    else:
        chosen = []
        for opt in OPTIMIZATIONS:
            wanted = settings.enabled.get(opt.flag)
            if wanted is False:
                continue
            if opt.pass_name not in registry:
                if wanted:
                    raise UsageError(f"{opt.pass_name} is not available in this build (--{opt.flag})")
                result.skipped.append(f"{opt.pass_name} is not available in this build: --{opt.flag} skipped")
                continue
            chosen.append((opt.pass_name, opt))
    measured = None
    if settings.measured_profile:
        try:
            measured = load_profile(settings.measured_profile)
        except (OSError, ProfileError) as error:
            raise UsageError(f"--profile: {error}") from None

    def profile_of(program, round_: int, after: str, first: bool):
        if first and measured is not None:
            profile = measured
        else:
            say(f"round {round_}: profiling after {after} ({settings.profiler})")
            profile = _profile(program, bindings, settings)
        result.estimates.append(_estimate(profile, round_, after))
        return before_first_step(profile) if round_ == 1 and settings.rounds > 1 else profile

    with tempfile.TemporaryDirectory(prefix="stagec-compile-") as tmp:
        program = module
        for round_ in range(1, settings.rounds + 1):
            program = module.clone()
            base = "stg-fully-shard"
            if settings.reduce_bucket and settings.baseline != "fsdp2":
                base = _reduce_in_buckets(program, bindings, settings.reduce_bucket, round_, result)
            profile = profile_of(program, round_, base, True)
            for k, (name, opt) in enumerate(chosen):
                path = os.path.join(tmp, f"round{round_}-{k}.json")
                options = {}
                if isinstance(opt, Optimization):
                    profile.write(path)
                    options = opt.options(settings, limit, path)
                say(f"round {round_}: {name}")
                t0 = time.perf_counter()
                try:
                    registry[name]()(**options).apply(make_context(), program)
                except PassError as error:
                    text = str(error)  # a pass's message may name the pass already
                    raise UsageError(text if text.startswith(f"{name}:") else f"{name}: {text}") from None
                if settings.verify_each:
                    _verify_after(program, name)
                result.runs.append(PassRun(round_, name, profile.origin or "", take(program),
                                           time.perf_counter() - t0))
                try:
                    profile = profile_of(program, round_, name, False)
                except Exception:
                    # an IR the pass broke fails in the profiler: say which pass, not the
                    # profiler's error (verified only now, so correct runs pay nothing)
                    _verify_after(program, name)
                    raise
        result.module = program
    if not (settings.verify_each and chosen):  # else the last pass's verification was this one
        _verify_after(program, chosen[-1][0] if chosen else base)
    result.seconds = time.perf_counter() - started
    return result


def _verify_after(program, name: str) -> None:
    """The program verified; a failure is a pass's bug, named."""
    from xdsl.utils.exceptions import VerifyException

    try:
        program.verify()
    except VerifyException as error:
        raise VerifyException(f"the IR after {name} does not verify: {error}") from error


def _reduce_in_buckets(program, bindings, elements: int, round_: int, result: CompileResult) -> str:
    """The runtime's reduce buckets on the step of round `round_` (module doc)."""
    from stagec.passes.deepcompile.decisions import take
    from stagec.passes.diagnostics import PassError
    from stagec.passes.stg_reduce_buckets import StgReduceBuckets, reduce_buckets

    t0 = time.perf_counter()
    try:
        reduce_buckets(program, StgReduceBuckets(bucket_elements=elements), bindings=bindings)
    except PassError as error:
        raise UsageError(str(error)) from None
    result.runs.append(PassRun(round_, StgReduceBuckets.name, "", take(program), time.perf_counter() - t0))
    return StgReduceBuckets.name


def _profile(program, bindings, settings: CompileSettings):
    from stagec.passes.analysis.accounting import module_bindings, world_ranks
    from stagec.passes.analysis.liveness import Evaluator
    from stagec.runtime.cost.hardware_description import load_hardware
    from stagec.runtime.cost.model import CostModel
    from stagec.runtime.cost.profiling import profile_by_cost_model, profile_by_simulation
    from stagec.runtime.sim.network import NetworkModel

    try:
        cost = CostModel(settings.hardware)
        if settings.profiler == "cost-model":
            return profile_by_cost_model(program, bindings, settings.hardware, cost=cost)
        # the network from the description itself: a description given as a file has no
        # name the profiler could look up again
        world = len(world_ranks(program, Evaluator(module_bindings(program, bindings))))
        network = NetworkModel.from_hardware(load_hardware(settings.hardware), world)
        return profile_by_simulation(program, bindings, settings.hardware, cost=cost, network=network)
    except (OSError, ValueError) as error:
        raise UsageError(f"profiling the step: {error}") from None


# -- the output -------------------------------------------------------------------------


def with_bindings(module, bindings: Mapping[str, int]) -> None:
    """Record the step's sizes in `module`'s stg.config, so the written IR carries them
    (stg-instantiate and the accounting read stg.config as bindings)."""
    from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, i64

    from stagec.dialects.stg.config import CONFIG

    config = module.attributes.get(CONFIG)
    entries = dict(config.data) if isinstance(config, DictionaryAttr) else {}
    entries.update({k: IntegerAttr(int(v), i64) for k, v in bindings.items()})
    module.attributes[CONFIG] = DictionaryAttr(entries)


def write_module(module, path: str) -> None:
    """Print `module` to `path` through a temporary file in the same directory."""
    from xdsl.printer import Printer

    from stagec.tools.output import check_output_path, output_stream

    if path == "-":
        raise UsageError("-o -: the report goes to stdout; give the scheduled IR a file")
    check_output_path("-o", path)
    # a device (-o /dev/null) is written in place, not replaced (tools/output.py)
    with output_stream(path) as stream:
        Printer(stream=stream).print_op(module)
        stream.write("\n")


def load_compiled(path: str):
    """A scheduled module written by `stagec compile` (or any stg module whose
    stg.config binds its sizes) and its bindings; bad input is a UsageError."""
    from xdsl.parser import Parser

    from stagec.dialects import make_context
    from stagec.passes.analysis.accounting import module_bindings

    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except OSError as error:
        raise UsageError(f"{path}: cannot read it: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise UsageError(f"{path}: not a stg module: the file is not UTF-8 text (byte {error.start} is "
                         f"0x{error.object[error.start]:02x}); give the .mlir that `stagec compile -o` writes") from None
    try:
        module = Parser(make_context(), text, path).parse_module()
        module.verify()
    except Exception as error:  # noqa: BLE001 - a parse or verifier error is the file's: one line
        first = str(error).strip().splitlines()
        raise UsageError(f"{path}: not a valid stg module: {first[-1] if first else error}") from None
    bindings = module_bindings(module)
    missing = [s for s in ("B", "S") if s not in bindings]
    if missing:
        raise UsageError(f"{path}: its stg.config does not bind {', '.join(missing)}: write it with "
                         "`stagec compile -o`, or bind the sizes with stg-instantiate")
    bindings.setdefault("M", 1)
    return module, bindings


# -- the command ------------------------------------------------------------------------

HELP = """\
Compile a fully-sharded training step with DeepCompile's passes (deepcompile.md §3-4)
and write its scheduled IR: the loop of Fig. 3 - each pass runs on a profile of the
program before it (simulated, from the cost model, or measured), and the outer loop
re-profiles once the optimizer's states exist (--rounds). Prints what each pass
decided (gathers moved, fused groups, parameters kept unsharded, bytes offloaded)
and the simulated step and peak memory after each.

The output is the scheduled IR with its sizes in stg.config: `stagec simulate OUT.mlir`
simulates it, `stagec trace --ir OUT.mlir --out DIR` writes its Chakra traces.

The passes (each on unless --no-...; a pass this build lacks is skipped with a note,
and asking for it with --unshard/--offload is an error):
  --prefetch   stg-prefetch (§4.2, Algorithm 1)
  --unshard    stg-unshard (§4.3)
  --offload    stg-offload (§4.4, Algorithm 2)
--baseline zero3|fsdp2 runs DeepSpeed ZeRO-3's or PyTorch FSDP2's schedule instead
(stg-zero3, stg-fsdp2: the comparisons of §5).

--memory-limit GB is M (default: the hardware's memory less 7 GB reserved, less 10%
of the rest, as §5.3; 65.7 GB on an H100).

examples:
  stagec compile --model llama3-70b --fsdp 32 --batch 32 --seq 1024 --recompute -o step.mlir
  stagec compile --model mixtral-8x7b --fsdp 16 --batch 16 --seq 2048 --recompute --baseline zero3 -o z3.mlir

DeepCompile's loop on a measured profile, on a tiny Llama and 2 CPU ranks: the program
before the passes (--no-...), profiled by `stagec run`, then compiled on what it measured:
  stagec compile --model examples/tiny.json --fsdp 2 --batch 2 --seq 64 --no-prefetch --no-unshard --no-offload -o base.mlir
  stagec run -n 2 --model examples/tiny.json --ir base.mlir --steps 5 --profile measured.json
  stagec compile --model examples/tiny.json --fsdp 2 --batch 2 --seq 64 --profile measured.json -o step.mlir

Bad input is one message and exit status 2; the output appears whole or not at all."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stagec.tools.stagec_stats import DTYPES, OPTIMIZERS

    parser.add_argument("--model", required=True, metavar="NAME|config.json",
                        help="a named model config (llama3-70b, mixtral-8x7b, ...) or a config.json path")
    parser.add_argument("--fsdp", type=positive_int, required=True, metavar="N", help="ranks the parameters are sharded over")
    parser.add_argument("--batch", type=positive_int, metavar="GLOBAL_BATCH",
                        help="sequences per iteration, every rank and micro-batch together (default: one micro-batch)")
    parser.add_argument("--micro-batch", type=positive_int, default=1, metavar="MBS",
                        help="sequences per micro-batch on one rank (default: %(default)s)")
    parser.add_argument("--seq", type=positive_int, default=DEFAULT_SEQ, metavar="S",
                        help="sequence length, S in the IR (default: %(default)s)")
    parser.add_argument("--recompute", action="store_true", help="recompute each layer in the backward (activation checkpointing)")
    parser.add_argument("--dtype", default="bf16", choices=DTYPES, help="parameter and activation type (default: %(default)s)")
    parser.add_argument("--optimizer", default="adamw", choices=[o for o in OPTIMIZERS if o != "none"],
                        help="optimizer step (default: %(default)s)")
    passes = parser.add_argument_group("DeepCompile")
    for opt in OPTIMIZATIONS:
        passes.add_argument(f"--{opt.flag}", action=argparse.BooleanOptionalAction, default=None,
                            help=f"run {opt.pass_name} (default: on where this build has it)")
    passes.add_argument("--baseline", choices=BASELINES, help="a framework's schedule instead of DeepCompile's passes")
    passes.add_argument("--prefetch-limit", type=finite_number, default=DEFAULT_PREFETCH_LIMIT / 1e9, metavar="GB",
                        help="M_prefetch: the bytes one prefetch group may gather, in GB; 0: none (default: %(default)s)")
    passes.add_argument("--reduce-bucket", type=int, default=DEEPSPEED_REDUCE_BUCKET_SIZE, metavar="ELEMENTS",
                        help="gradients reduced a bucket of this many elements at a time, as DeepCompile's and "
                             "ZeRO-3's runtimes do (stg-reduce-buckets; DeepSpeed's reduce_bucket_size); 0: one "
                             "reduce-scatter per gradient. FSDP2 groups by layer instead (default: %(default)s)")
    passes.add_argument("--unroll", action=argparse.BooleanOptionalAction, default=True,
                        help="unroll the layer loops (stg-unroll-layers) so gathers move across layers (default: on)")
    passes.add_argument("--memory-limit", type=finite_number, metavar="GB",
                        help="M in GB (1e9 bytes) (default: capacity - 7 GB reserved, less 10%%)")
    passes.add_argument("--rounds", type=positive_int, default=2, help="outer-loop rounds (default: %(default)s)")
    passes.add_argument("--profile", metavar="FILE", help="a measured version 2 profile of the step: round 1's first profile")
    passes.add_argument("--profiler", choices=PROFILERS, default="simulator",
                        help="what profiles each program of the loop (default: %(default)s)")
    passes.add_argument("--hardware", default="h100-sxm", metavar="NAME|FILE",
                        help="hardware description: h100-sxm, a100-80gb, h200 or a file (default: %(default)s)")
    passes.add_argument("--verify-each", action="store_true",
                        help="verify the IR after every pass, as mlir-opt --verify-each, so a pass that breaks it "
                             "is named (slower: about a third more time); without it the result is verified once")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.mlir", help="the scheduled IR")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def add_parser(subcommands) -> argparse.ArgumentParser:
    parser = subcommands.add_parser("compile", help="DeepCompile's profile-guided passes over a fully-sharded step",
                                    description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return parser


def _micro_batches(args) -> int:
    step = args.micro_batch * args.fsdp
    batch = step if args.batch is None else args.batch
    if batch % step:
        raise UsageError(f"--batch {batch} is not a multiple of --micro-batch {args.micro_batch} x --fsdp {args.fsdp} "
                         f"= {step}: the global batch is a whole number of micro-batches on every rank")
    from stagec.tools.stagec_stats import check_micro_batches

    check_micro_batches(batch // step, f"--batch {batch} (--micro-batch {args.micro_batch} x --fsdp {args.fsdp} "
                                       "a micro-batch)")
    return batch // step


def settings_of(args) -> CompileSettings:
    from stagec.runtime.cost.hardware_description import load_hardware

    try:
        load_hardware(args.hardware)
    except (OSError, ValueError) as error:
        raise UsageError(f"--hardware: {error}") from None
    if args.baseline is not None:
        chosen = [o.flag for o in OPTIMIZATIONS if getattr(args, o.flag)]
        if chosen:
            raise UsageError(f"--baseline {args.baseline} is a framework's schedule: drop --{chosen[0]}")
    if args.memory_limit is not None and args.memory_limit <= 0:
        raise UsageError(f"--memory-limit {args.memory_limit}: a size in GB > 0")
    if args.prefetch_limit < 0:
        raise UsageError(f"--prefetch-limit {args.prefetch_limit}: a size in GB >= 0 (0: no limit)")
    if args.reduce_bucket < 0:
        raise UsageError(f"--reduce-bucket {args.reduce_bucket}: a number of elements >= 0 (0: no buckets)")
    return CompileSettings(
        enabled={o.flag: getattr(args, o.flag) for o in OPTIMIZATIONS},
        memory_limit=int(args.memory_limit * 1e9) if args.memory_limit else 0,
        rounds=args.rounds, baseline=args.baseline, hardware=args.hardware, profiler=args.profiler,
        measured_profile=args.profile, prefetch_limit=int(args.prefetch_limit * 1e9),
        reduce_bucket=args.reduce_bucket, verify_each=args.verify_each,
    )


def run(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    settings = settings_of(args)
    micro_batches = _micro_batches(args)
    if not args.output:
        raise UsageError("-o '': give a file path")
    with status("building the fully-sharded step", args.quiet) as progress:
        module, bindings = fully_sharded_step(args.model, args.fsdp, seq=args.seq, micro_batch=args.micro_batch,
                                              micro_batches=micro_batches, recompute=args.recompute,
                                              dtype=args.dtype, optimizer=args.optimizer, unroll=args.unroll)
        result = compile_step(module, bindings, settings, progress)
        progress("writing the scheduled IR")
        with_bindings(result.module, bindings)
        write_module(result.module, args.output)
    _print_report(args, result, micro_batches, time.perf_counter() - started)


def _print_report(args, result: CompileResult, micro_batches: int, seconds: float) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 160, soft_wrap=True)
    what = args.baseline and f"baseline {BASELINE_PASSES[args.baseline]}" or "DeepCompile"
    console.print(f"[bold]{args.model}[/bold]: fsdp={args.fsdp}, {micro_batches} micro-batch(es) of "
                  f"{args.micro_batch} x {args.seq} tokens per rank{', recompute' if args.recompute else ''}; "
                  f"{what}, M = {result.memory_limit / 1e9:.1f} GB")
    for note in result.skipped:
        console.print(f"note: {note}")
    for run_ in result.runs:
        console.print(f"round {run_.round} {run_.pass_name} (profile: {run_.profile_origin}, "
                      f"{run_.seconds:.2f} s):")
        for d in run_.decisions:
            console.print(f"  {d.text()}")
    table = Table(title="the program after each pass, as profiled", title_justify="left")
    for column in ("round", "after", "profile", "step (ms)", "peak memory"):
        table.add_column(column, justify="right" if column in ("step (ms)", "peak memory") else "left")
    for e in result.estimates:
        table.add_row(str(e.round), e.after, e.origin, f"{e.step_ms:,.2f}" if e.step_ms is not None else "-",
                      f"{e.peak_bytes / 1e9:.2f} GB")
    console.print(table)
    console.print(f"wrote {args.output} in {seconds:.1f} s")


def main(argv: Sequence[str] | None = None) -> int:
    return standalone_main("stagec compile", HELP, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
