"""`stagec run`: compile a training job and run it on real ranks (docs/run.md).

It builds the scheduled training step the way `stagec stats` and `stagec trace` do
(tools/stagec_stats.py `training_passes`: stg-autodiff, stg-shard,
stg-match-collectives, stg-pipeline, the scheduling passes). With --prefetch,
--unshard or --offload it builds it as `stagec compile` does instead
(tools/stagec_compile.py: `fully_sharded_step`, then `compile_step`, DeepCompile's
profile loop over stg-prefetch, stg-unshard and stg-offload under --memory-limit).
It checks that the job can run on the ranks asked for (and that a --weights file
holds every parameter), and hands it to the launcher (runtime/exec/launch.py):
mpiexec starts the ranks, each lowers its own program (runtime/exec/program.py) and
runs the steps. Register it with `add_parser(subcommands)` and call `run(args)`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import io
import json
import os
import shutil
import statistics
import sys
import tempfile

from stagec.runtime.exec.device import DEVICES
from stagec.tools.errors import UsageError, finite_number, non_negative_number, positive_int, positive_number
from stagec.tools.output import check_output_path
from stagec.tools.stagec_stats import DTYPES, STRATEGY_AXES, add_frontend_arguments, micro_batches_of, strategy_options

HELP = """\
Compile a training job and run it: one process per rank under mpiexec (the mpich
wheel's; --hostfile spreads the ranks over machines), compute through torch on the
CPU, communication through the C++ runtime's MPI communicator (csrc); with --device
cuda, each rank on one GPU (local rank modulo the host's GPUs), communication through
csrc's NCCL communicators and offload through its copy stream. Prints the loss of
every step and the step time; -n 1 runs the same program on one rank, the reference
the parallel runs must match.

The ranks (-n) must be the mesh the strategy makes: dp x fsdp x ep x cp x tp x pp.
Weights start from --seed (N(0, --init-std), norms at 1) identically on every rank,
or from a safetensors file (--weights: a transformers LlamaForCausalLM's or
MixtralForCausalLM's state_dict), and are sharded as the program's types say;
batches are seeded random tokens, or windows of a token file (--data tokens.npy, a
1-D integer array).

--frontend torch runs the program the torch frontend imports (docs/torch-frontend.md):
transformers' class for --model, or --torch-factory MODULE:FACTORY's nn.Module. The
module is built for real after torch.manual_seed(--seed), so the run starts from its
own initialisation (or from --weights: a safetensors file of the module's own
state_dict, loaded into it), and its parameters are sharded as the program's types
say. Every strategy and DeepCompile option above applies to it.

DeepCompile (--fsdp N alone; docs/run.md): --prefetch, --unshard and --offload
run stg-prefetch, stg-unshard and stg-offload on the fully-sharded step in
`stagec compile`'s profile loop (2 rounds; each program profiled by the simulator,
or --profiler cost-model), under the memory limit M of --memory-limit GB (default:
an H100's, as `stagec compile`). The run prints what each pass decided.

examples:
  stagec run -n 4 --model tiny.json --dp 4 --steps 20
  stagec run -n 4 --model tiny.json --fsdp 4 --prefetch --steps 20 --json out.json
  stagec run -n 4 --model tiny.json --fsdp 4 --prefetch --unshard --offload --memory-limit 0.001 --steps 20
  stagec run -n 2 --model tiny.json --fsdp 2 --weights model.safetensors --steps 20
  stagec run -n 2 --model tiny.json --frontend torch --fsdp 2 --steps 10
  stagec run -n 4 --model tiny.json --dp 2 --tp 2 --sp --checkpoint ckpt/ --steps 10
  stagec run -n 4 --model tiny.json --dp 2 --tp 2 --sp --checkpoint ckpt/ --resume --steps 10
  stagec run -n 4 --model tiny.json --pp 2 --dp 2 --micro-batches 4
  stagec run -n 2 --model tiny.json --ir step.mlir --steps 5 --profile measured.json
  stagec run -n 1 --model tiny.json --device cuda --steps 20

--ir FILE runs a scheduled module written by `stagec compile -o` (its stg.config
binds the sizes; the strategy and batch options are then the module's own).
--profile FILE records, on rank 0, each op's time (median over the steps after the
first), the live bytes before each op (P_mem) and the all-gather time curve T_c(V),
in the version 2 profile format `stagec compile --profile` reads (docs/run.md).

A configuration that cannot run (ranks that do not make the mesh, sizes that do not
divide, an unknown model, a factory that raises or whose module's parameters are not
the imported program's, --device cuda where there is no GPU or more ranks than one
host's GPUs without --hostfile) is one message and exit status 2, before any rank
starts.
A rank that fails or is killed stops every rank within seconds, with one message
naming the rank and what it was doing; exit status 1."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--ranks", type=positive_int, required=True, metavar="N", help="ranks (processes) to run")
    parser.add_argument("--hostfile", metavar="FILE", help="mpiexec's host file (-f): ranks across machines")
    parser.add_argument("--device", choices=DEVICES, default="cpu",
                        help="where each rank computes: the CPU (MPI) or one GPU (NCCL) (default: %(default)s)")
    parser.add_argument("--model", required=True, metavar="NAME|config.json",
                        help="a named model config or a Hugging Face config.json path")
    parser.add_argument("--batch", type=positive_int, metavar="GLOBAL_BATCH",
                        help="sequences per step, every replica and micro-batch together (default: one micro-batch per replica)")
    parser.add_argument("--micro-batches", type=positive_int, metavar="M",
                        help="micro-batches per step on each replica (gradient accumulation), instead of --batch")
    parser.add_argument("--micro-batch", type=positive_int, default=1, metavar="MBS",
                        help="sequences per micro-batch on one data-parallel replica (default: %(default)s)")
    parser.add_argument("--seq", type=positive_int, default=64, metavar="S", help="sequence length (default: %(default)s)")
    add_frontend_arguments(parser)
    strategy = parser.add_argument_group("parallel strategy")
    for axis in STRATEGY_AXES:
        strategy.add_argument(f"--{axis}", type=positive_int, default=1, metavar="N", help=f"{axis} size (default: 1)")
    strategy.add_argument("--sp", action="store_true", help="Megatron sequence parallelism on the tp axis")
    strategy.add_argument("--zero", type=int, choices=(0, 1, 2), default=0, help="ZeRO stage over dp (default: 0)")
    strategy.add_argument("--schedule", choices=("1f1b", "gpipe"), default="1f1b", help="pipeline schedule (default: %(default)s)")
    deepcompile = parser.add_argument_group("DeepCompile (with --fsdp N alone)")
    for opt in _optimizations():
        deepcompile.add_argument(f"--{opt.flag}", action="store_true",
                                 help=f"run {opt.pass_name} in `stagec compile`'s profile loop")
    deepcompile.add_argument("--memory-limit", type=finite_number, metavar="GB",
                             help="M of the passes in GB (1e9 bytes) (default: an H100's, less 7 GB and 10%%)")
    deepcompile.add_argument("--profiler", choices=_profilers(),
                             help="what profiles each program of the loop, as `stagec compile` (default: simulator)")
    training = parser.add_argument_group("training")
    training.add_argument("--steps", type=positive_int, default=10, metavar="N", help="training steps (default: %(default)s)")
    training.add_argument("--dtype", default="f32", choices=DTYPES, help="parameter and activation type (default: %(default)s)")
    training.add_argument("--optimizer", default="adamw", choices=("adamw", "adam", "sgd"), help="(default: %(default)s)")
    training.add_argument("--lr", type=finite_number, default=1e-3, help="learning rate (default: %(default)s)")
    training.add_argument("--recompute", action="store_true", help="recompute each layer's activations in the backward pass")
    training.add_argument("--bucket-mb", type=non_negative_number, default=25.0, metavar="MB", help="gradient bucket size (default: %(default)s)")
    training.add_argument("--seed", type=int, default=0, help="weights and synthetic data seed (default: %(default)s)")
    training.add_argument("--init-std", type=positive_number, metavar="STD",
                          help="the template's initial weights' standard deviation (default: 0.02)")
    training.add_argument("--data", metavar="TOKENS.npy", help="a 1-D integer .npy array of token ids (default: seeded random tokens)")
    training.add_argument("--weights", metavar="FILE.safetensors",
                          help="initial weights under transformers' names (with --frontend torch: the module's "
                          "state_dict) (default: seeded)")
    output = parser.add_argument_group("output")
    output.add_argument("--json", metavar="PATH", help="write the per-step losses and the median step time as JSON")
    output.add_argument("--checkpoint", metavar="DIR", help="save every rank's shards here at the end (and --checkpoint-every)")
    output.add_argument("--checkpoint-every", type=positive_int, metavar="N", help="also save every N steps")
    output.add_argument("--resume", action="store_true", help="start from the checkpoint in --checkpoint DIR")
    output.add_argument("--quiet", action="store_true", help="no progress bar")
    output.add_argument("--profile", metavar="PATH",
                        help="write the measured profile (op times, P_mem, T_c(V); version 2) of the step here")
    parser.add_argument("--ir", metavar="STEP.mlir",
                        help="run this scheduled module (written by `stagec compile -o`) instead of compiling one")
    output.add_argument("--threads", type=positive_int, default=1, help="torch threads per rank (default: %(default)s)")


def add_parser(subcommands) -> argparse.ArgumentParser:
    parser = subcommands.add_parser("run", help="compile a training job and run it on real ranks (mpiexec)",
                                    description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return parser


# -- compiling ---------------------------------------------------------------------------


def _optimizations():
    from stagec.tools.stagec_compile import OPTIMIZATIONS

    return OPTIMIZATIONS


def _profilers():
    from stagec.tools.stagec_compile import PROFILERS

    return PROFILERS


def deepcompile_flags(args: argparse.Namespace) -> list[str]:
    """The DeepCompile passes asked for, by flag, in the loop's order."""
    return [opt.flag for opt in _optimizations() if getattr(args, opt.flag, False)]


_WHAT = {"prefetch": "moves FSDP's all-gathers earlier", "unshard": "keeps FSDP's parameters gathered",
         "offload": "offloads FSDP's optimizer states"}


def _check_deepcompile(args: argparse.Namespace, flags: list[str]) -> None:
    if not flags:
        for option, value in (("--memory-limit", args.memory_limit), ("--profiler", args.profiler)):
            if value is not None:
                raise UsageError(f"{option} is for DeepCompile's passes: give --prefetch, --unshard or --offload")
        return
    flag = flags[0]
    if args.fsdp == 1:
        raise UsageError(f"--{flag} {_WHAT[flag]}: give --fsdp N with N > 1")
    if args.pp > 1:
        raise UsageError(f"--{flag} with --pp is not supported: stg-fully-shard runs on unpipelined steps")
    others = [f"--{a} {getattr(args, a)}" for a in STRATEGY_AXES if a != "fsdp" and getattr(args, a) > 1]
    others += ["--sp"] * args.sp + [f"--zero {args.zero}"] * bool(args.zero)
    if others:
        raise UsageError(f"--{flag} runs DeepCompile's passes on a fully-sharded step: give --fsdp N alone "
                         f"(not with {others[0]})")
    if args.memory_limit is not None and args.memory_limit <= 0:
        raise UsageError(f"--memory-limit {args.memory_limit}: a size in GB > 0")


def _scheduled_passes(args: argparse.Namespace, micro_batches: int) -> list:
    from stagec.passes.stg_autodiff import StgAutodiff
    from stagec.tools.stagec_stats import training_passes

    args.no_gemm_fusion = False
    passes = training_passes(args, micro_batches)
    assert isinstance(passes[0], StgAutodiff)
    passes[0] = dataclasses.replace(passes[0], lr=args.lr)
    return passes


def _deepcompile_job(args: argparse.Namespace, flags: list[str], micro_batches: int, forward=None):
    """The fully-sharded step and DeepCompile's loop over it, as `stagec compile`
    builds them (from `forward`, the imported program of --frontend torch, if given);
    (module, bindings, the last round's pass runs)."""
    from stagec.frontends.templates import ConfigError, load_config
    from stagec.tools.stagec_compile import CompileSettings, compile_step, fully_sharded_step

    try:
        load_config(args.model)
    except (ConfigError, ImportError, OSError) as error:
        raise UsageError(f"--model {args.model}: {error}") from None
    module, bindings = fully_sharded_step(args.model, args.fsdp, seq=args.seq, micro_batch=args.micro_batch,
                                          micro_batches=micro_batches, recompute=args.recompute,
                                          dtype=args.dtype, optimizer=args.optimizer, lr=args.lr, forward=forward)
    settings = CompileSettings(enabled={opt.flag: opt.flag in flags for opt in _optimizations()},
                               memory_limit=int(args.memory_limit * 1e9) if args.memory_limit else 0,
                               profiler=args.profiler or "simulator")
    result = compile_step(module, bindings, settings)
    last = max((r.round for r in result.runs), default=0)
    return result.module, dict(bindings), [r for r in result.runs if r.round == last]


def compile_job(args: argparse.Namespace):
    """(module, bindings) of the job `args` describe; UsageError for what cannot run.
    With DeepCompile's flags, `args.pass_runs` holds what the passes decided."""
    from stagec.dialects import make_context
    from stagec.frontends.templates import ConfigError, build_model, load_config
    from stagec.passes.diagnostics import PassError

    flags = deepcompile_flags(args)
    args.pass_runs = []
    if getattr(args, "ir", None):
        given = [f"--{f}" for f in flags] + [o for o, v in (("--memory-limit", args.memory_limit),
                                                            ("--profiler", args.profiler)) if v is not None]
        if args.frontend == "torch" or args.torch_factory:
            raise UsageError(f"--ir runs the module {args.ir} as it was compiled, from seeded or --weights "
                             "weights: drop --frontend torch (and --torch-factory)")
        if given:
            raise UsageError(f"--ir runs the module {args.ir} as it was compiled: drop {given[0]} "
                             "(give it to `stagec compile`)")
        return _compiled_job(args)
    _check_frontend(args)
    _check_deepcompile(args, flags)
    mesh = 1
    for axis in STRATEGY_AXES:
        mesh *= getattr(args, axis)
    if mesh != args.ranks:
        axes = " x ".join(f"{a} {getattr(args, a)}" for a in STRATEGY_AXES if getattr(args, a) > 1) or "no parallel axes"
        raise UsageError(f"-n {args.ranks}: the strategy's mesh ({axes}) has {mesh} rank(s); "
                         f"give -n {mesh} or axes whose product is {args.ranks}")
    if args.resume and not args.checkpoint:
        raise UsageError("--resume needs --checkpoint DIR (the checkpoint to start from)")
    if args.resume and not os.path.exists(os.path.join(args.checkpoint, "latest.json")):
        raise UsageError(f"--resume: {args.checkpoint} holds no checkpoint (no latest.json)")
    if args.data is not None and not os.path.isfile(args.data):
        raise UsageError(f"--data {args.data}: no such file (a .npy array of token ids)")
    if args.lr <= 0:
        raise UsageError(f"--lr {args.lr}: the learning rate must be positive")
    micro_batches = micro_batches_of(args)
    forward = _torch_forward(args) if args.frontend == "torch" else None
    if flags:
        module, bindings, args.pass_runs = _deepcompile_job(args, flags, micro_batches, forward)
        return module, bindings
    try:
        module = forward if forward is not None else build_model(load_config(args.model), args.dtype)
    except (ConfigError, ImportError, OSError) as error:
        raise UsageError(f"--model {args.model}: {error}") from None
    for step in _scheduled_passes(args, micro_batches):
        try:
            step.apply(make_context(), module)
        except PassError as error:
            raise UsageError(f"{step.name}: {error}") from None
    return module, {"B": args.micro_batch * args.dp * args.fsdp * args.ep, "S": args.seq, "M": micro_batches}


def _check_frontend(args: argparse.Namespace) -> None:
    """--frontend torch starts from the module's own weights: the template's
    initialisation options do not apply."""
    if args.frontend != "torch":
        if args.torch_factory:
            raise UsageError(f"--torch-factory {args.torch_factory} builds the model through the torch frontend: "
                             "give --frontend torch too")
        return
    if args.init_std is not None:
        raise UsageError(f"--init-std {args.init_std} sets the template's initialisation; --frontend torch starts "
                         "from the module's own (seeded by --seed): drop --init-std")
    if args.weights and args.resume:
        raise UsageError(f"--weights {args.weights} with --resume: the checkpoint holds the weights; drop --weights")


def _torch_forward(args: argparse.Namespace):
    """The forward program imported from the torch module of --frontend torch, built
    for real after torch.manual_seed(--seed) (frontends/torch/models.py
    `initial_model`), its state_dict loaded from --weights if given. Sets
    `args.torch_parameters`: the module's parameters under the program's names and
    stacked shapes (frontends/torch/parameters.py), which the ranks start from."""
    from stagec.frontends.templates import ConfigError, load_config
    from stagec.frontends.torch.models import FactoryError, import_model, initial_model
    from stagec.frontends.torch.parameters import ParameterError, load_state, program_parameters
    from stagec.runtime.exec.weights import parameter_shapes
    from stagec.tools.progress import status

    target = args.torch_factory or "hf"
    with status(f"building {args.model} in torch", args.quiet) as update:
        try:
            config = load_config(args.model)
        except (ConfigError, OSError) as error:
            raise UsageError(f"--model {args.model}: {error}") from None
        try:
            model = initial_model(config, target, args.dtype, seed=args.seed)
            if args.weights:
                try:
                    load_state(model, args.weights)
                except ParameterError as error:
                    raise UsageError(f"--weights {error}") from None
            update(f"importing {args.model} from torch (torch.export, torch-mlir)")
            forward = import_model(model, config, target)
            args.torch_parameters = program_parameters(model, parameter_shapes(forward))
        except FactoryError as error:
            raise UsageError(str(error)) from None
        except (ConfigError, ImportError) as error:
            text = str(error)  # the frontend's own refusal of a model family names --frontend torch itself
            raise UsageError(text if text.startswith("--frontend torch") else f"--frontend torch: {text}") from None
    return forward


def _check_weights(args: argparse.Namespace) -> None:
    """A --weights file must hold every parameter of the model, in its shape."""
    from stagec.frontends.templates import ConfigError, build_model, load_config
    from stagec.runtime.exec.weights import SafetensorsWeights, WeightsError, parameter_shapes

    if args.resume:
        raise UsageError(f"--weights {args.weights} with --resume: the checkpoint holds the weights; drop --weights")
    try:
        shapes = parameter_shapes(build_model(load_config(args.model), args.dtype))
    except (ConfigError, ImportError, OSError) as error:
        raise UsageError(f"--model {args.model}: {error}") from None
    try:
        SafetensorsWeights(args.weights).check(shapes)
    except WeightsError as error:
        raise UsageError(f"--weights {error}") from None


def _compiled_job(args: argparse.Namespace):
    """(module, bindings) of `--ir FILE`: a module `stagec compile -o` wrote."""
    from stagec.runtime.interpreter.errors import InterpreterError
    from stagec.runtime.interpreter.interpreter import Interpreter
    from stagec.tools.stagec_compile import load_compiled

    if args.resume:
        raise UsageError("--resume with --ir is not supported: run the checkpointed job as it was compiled")
    module, bindings = load_compiled(args.ir)
    try:
        ranks = Interpreter(module, bindings, verify=False).mesh.num_ranks
    except InterpreterError as error:
        raise UsageError(f"--ir {args.ir}: the job cannot run: {error}") from None
    if ranks != args.ranks:
        raise UsageError(f"-n {args.ranks}: the module in {args.ir} runs on {ranks} rank(s); give -n {ranks}")
    return module, bindings


def _check_runs(module, bindings, args) -> None:
    """Sizes that do not divide fail here, before any rank starts."""
    from stagec.runtime.exec.program import input_shapes
    from stagec.runtime.interpreter.errors import InterpreterError
    from stagec.runtime.interpreter.interpreter import Interpreter

    try:
        interpreter = Interpreter(module, bindings, verify=False)
        for op in module.walk():
            for result in op.results:
                if hasattr(result.type, "dims") and hasattr(result.type, "splits"):
                    interpreter.sizes.local_shape(result.type)
        input_shapes(module, bindings)
    except InterpreterError as error:
        raise UsageError(f"the job cannot run: {error}") from None


def _module_text(module) -> str:
    from xdsl.printer import Printer

    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue()


# -- running -----------------------------------------------------------------------------


def check_device(args: argparse.Namespace) -> None:
    """--device cuda needs a GPU here, and a GPU per rank on this host unless a
    --hostfile spreads the ranks over hosts (UsageError otherwise)."""
    if getattr(args, "device", "cpu") != "cuda":
        return
    from stagec import csrc

    try:
        count = csrc.require_gpu()
    except (csrc.NoGpuError, csrc.MissingExtensionError) as error:
        raise UsageError(f"--device cuda: {error}; run on a machine with a GPU, or give --device cpu") from None
    if args.hostfile is None and args.ranks > count:
        raise UsageError(f"-n {args.ranks} --device cuda: this host has {count} GPU(s), one per rank; give a strategy "
                         f"of at most {count} rank(s), or --hostfile to spread the ranks over hosts with GPUs")


def _check_data(args: argparse.Namespace, seq: int) -> None:
    """--data as every rank's loader will read it (runtime/exec/data.py)."""
    from types import SimpleNamespace

    from stagec.frontends.templates import ConfigError, load_config
    from stagec.runtime.exec.data import Batches, DataError

    try:
        config = load_config(args.model)
    except ConfigError:  # --ir without a config: the ranks check the vocabulary
        config = SimpleNamespace(vocab_size=2**63)
    try:
        Batches(config, {"input_ids": (1, seq)}, tokens=args.data)
    except DataError as error:
        raise UsageError(str(error)) from None


def run(args: argparse.Namespace) -> None:
    from stagec.runtime.exec.launch import RunFailed, launch

    check_device(args)
    # what the ranks would read or write, checked here: a rank's failure is exit 1 and
    # comes after mpiexec started them all
    if args.hostfile is not None and not os.path.isfile(args.hostfile):
        raise UsageError(f"--hostfile {args.hostfile}: no such file (mpiexec's host file: one host[:slots] a line)")
    if args.checkpoint and os.path.lexists(args.checkpoint) and not os.path.isdir(args.checkpoint):
        raise UsageError(f"--checkpoint {args.checkpoint}: not a directory; give the directory the shards go in")
    for option, path in (("--json", args.json), ("--profile", args.profile)):
        if path:
            check_output_path(option, path)
    if args.profile:
        if args.pp > 1:
            raise UsageError("--profile with --pp: a profile covers one step function; pipelined stages have several")
    args.torch_parameters = None
    module, bindings = compile_job(args)
    _check_runs(module, bindings, args)
    if args.data:
        _check_data(args, bindings["S"])
    if args.weights and args.frontend != "torch":
        _check_weights(args)
    text = _module_text(module)
    fingerprint = hashlib.sha256((text + json.dumps(bindings, sort_keys=True) + str(args.ranks) + str(args.seed)).encode()).hexdigest()[:16]
    if args.resume:
        _check_checkpoint(args.checkpoint, fingerprint)
    from stagec.runtime.exec.weights import DEFAULT_STD

    job = {"model": args.model, "steps": args.steps, "seed": args.seed,
           "init_std": DEFAULT_STD if args.init_std is None else args.init_std,
           "data": os.path.abspath(args.data) if args.data else None, "threads": args.threads,
           "checkpoint": os.path.abspath(args.checkpoint) if args.checkpoint else None,
           "checkpoint_every": args.checkpoint_every, "resume": args.resume, "fingerprint": fingerprint,
           "profile": os.path.abspath(args.profile) if args.profile else None,
           "weights": os.path.abspath(args.weights) if args.weights else None, "device": args.device}
    if fault := os.environ.get("STAGEC_FAULT"):
        job["fault"] = json.loads(fault)  # tests: {"rank": 1, "step": 2, "kind": "kill" | "raise"}
    strategy = " ".join(f"{k}={'true' if v is True else v}" for k, v in strategy_options(args).items())
    if args.pp > 1:
        strategy += f" pp={args.pp} ({args.schedule})"
    if args.ir:
        strategy = f"the scheduled module {args.ir}"
    flags = deepcompile_flags(args)
    print(f"stagec run: {args.model}, {args.ranks} rank(s){' on GPUs' if args.device == 'cuda' else ''}, "
          f"{strategy or 'one rank'}"
          f"{''.join(' + ' + f for f in flags)}, B={bindings['B']} S={bindings['S']} M={bindings['M']}, "
          f"{args.steps} step(s)", flush=True)
    for pass_run in args.pass_runs:
        for decision in pass_run.decisions:
            print(f"stagec run: {pass_run.pass_name}: {decision.text()}")
    progress = _Progress(args.steps, quiet=args.quiet)
    try:
        with progress, _torch_weights(args, job):
            steps = launch(text, bindings, job, args.ranks, hostfile=args.hostfile, on_step=progress.step)
    except RunFailed as error:
        print(f"stagec run: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    times = [s.seconds for s in steps]
    median = statistics.median(times[1:] if len(times) > 1 else times)
    print(f"stagec run: {len(steps)} steps, final loss {steps[-1].loss:.6f}, median step {median:.4f} s"
          f"{' (first step left out)' if len(times) > 1 else ''}")
    if args.profile:
        print(f"stagec run: the measured profile is in {args.profile}")
    if args.json:
        _write_json(args.json, {"model": args.model, "ranks": args.ranks, "device": args.device, "strategy": strategy_options(args) | (
            {"pp": args.pp} if args.pp > 1 else {}), "deepcompile": flags, "prefetch": args.prefetch,
            "memory_limit_bytes": int(args.memory_limit * 1e9) if args.memory_limit else None,
            "decisions": [d.to_json() for r in args.pass_runs for d in r.decisions], "bindings": bindings,
            "losses": [s.loss for s in steps], "step_seconds": times, "median_step_seconds": median,
            # what rank 0 ran in the last step: the lowered program's communication and memory ops
            "executed": dict(steps[-1].executed)})


@contextlib.contextmanager
def _torch_weights(args: argparse.Namespace, job: dict):
    """With --frontend torch, the module's parameters (`args.torch_parameters`, under
    the program's names) in a safetensors file for the ranks, as `job["weights"]`,
    removed after the run. A resumed run starts from its checkpoint instead."""
    if args.torch_parameters is None or args.resume:
        yield
        return
    from safetensors.torch import save_file

    directory = tempfile.mkdtemp(prefix="stagec-torch-weights-")
    try:
        path = os.path.join(directory, "parameters.safetensors")
        save_file(args.torch_parameters, path + ".tmp")
        os.replace(path + ".tmp", path)
        args.torch_parameters = None  # the file holds them now
        job["weights"] = path
        yield
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _check_checkpoint(directory: str, fingerprint: str) -> None:
    path = os.path.join(directory, "latest.json")
    try:
        with open(path) as f:
            saved = json.load(f)
    except (OSError, ValueError) as error:
        raise UsageError(f"--resume: cannot read {path}: {error}") from None
    if saved.get("fingerprint") != fingerprint:
        raise UsageError(f"--resume: the checkpoint in {directory} is of another job (another model, strategy, "
                         f"batch, ranks or seed: {saved.get('ranks')} ranks); give the options it was saved with")


def _write_json(path: str, data: dict) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


class _Progress:
    """A rich progress bar over the steps, with each step's loss and time printed above it."""

    def __init__(self, steps: int, *, quiet: bool):
        self.steps, self.quiet = steps, quiet
        self._progress = None

    def __enter__(self):
        if not self.quiet:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._progress = Progress(TextColumn("steps"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                      transient=True)
            self._progress.__enter__()
            self._task = self._progress.add_task("steps", total=self.steps)
        return self

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.__exit__(*exc)

    def step(self, report) -> None:
        line = f"step {report.step:>4}  loss {report.loss:.6f}  {report.seconds:.4f} s"
        if self._progress is not None:
            self._progress.console.print(line, highlight=False)
            self._progress.advance(self._task)
        else:
            print(line, flush=True)
