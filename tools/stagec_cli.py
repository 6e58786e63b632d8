"""stagec: the command line for people who plan, simulate and run training jobs.

Each subcommand only assembles a model and a pass pipeline; the work is in the
frontends, passes and targets that stagec-opt also runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from stagec.tools.errors import exit_on_early_signals

if __name__ == "__main__" or os.path.basename(getattr(sys.modules.get("__main__"), "__file__", None) or "") == "stagec":
    # Run as the `stagec` command: a Ctrl-C during the imports below (half a second)
    # is one line too; main() takes over the signals once it runs.
    exit_on_early_signals("stagec")

from xdsl.dialects.builtin import ModuleOp  # noqa: E402
from xdsl.printer import Printer  # noqa: E402
from xdsl.utils.exceptions import DiagnosticException  # noqa: E402

from stagec.dialects import make_context  # noqa: E402
from stagec.frontends.builtin_models import BUILTIN_MODELS  # noqa: E402
from stagec.frontends.templates import NAMED_CONFIGS, ConfigError, build_model, load_config  # noqa: E402
from stagec.frontends.templates.blocks import DTYPES  # noqa: E402
from stagec.runtime.workers import WorkerDied  # noqa: E402
from stagec.tools import (  # noqa: E402
    stagec_check_trace,
    stagec_compile,
    stagec_dse,
    stagec_import,
    stagec_ps,
    stagec_run,
    stagec_simulate,
    stagec_stats,
    stagec_summary,
    stagec_trace,
)
from stagec.tools.errors import (  # noqa: E402
    Terminated,
    UsageError,
    interrupt_exit,
    interrupt_handling,
    worker_died_message,
)
from stagec.tools.output import output_stream, write_failure  # noqa: E402
from stagec.tools.pipeline_spec import build_pipeline  # noqa: E402

PROG = "stagec"
DEFAULT_PIPELINE = "builtin.module(stg-annotate-costs)"

DESCRIPTION = """\
stagec compiles a training workload into a distributed training program in the stg
IR (symbolic tensors sharded over a device mesh) and, from it, traces, simulations
and runs. Run `stagec COMMAND --help` for each command."""

IR_HELP = f"""\
Build a model as stg IR, run a pass pipeline over it and print the result.

The default pipeline, {DEFAULT_PIPELINE}, annotates every op with its
per-rank FLOPs and bytes (#stg.expr, symbolic in the model's dims and the mesh axis
sizes) and each function with their totals.

--model names a built-in model ({', '.join(BUILTIN_MODELS)}), a model template's named
config ({', '.join(NAMED_CONFIGS)}), or a Hugging Face config.json (GPT-2, Llama,
Mistral, Mixtral, DeepSeek, DeepSeek-V2 or Mamba model_type); a template builds the
model's forward program with parameters in --dtype.

examples:
  stagec ir
  stagec ir --model llama-mlp --pass-pipeline 'builtin.module()' -o mlp.mlir
  stagec ir --model llama3-8b --dtype f32
  stagec ir --model examples/tiny.json --pass-pipeline 'builtin.module()'
  stagec ir | stagec-opt --pass-pipeline 'builtin.module(cse)'"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    ir = commands.add_parser(
        "ir",
        help="print a model's stg IR after a pass pipeline",
        description=IR_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ir.add_argument(
        "--model",
        default="llama-mlp",
        metavar="NAME|config.json",
        help="a built-in model, a named model config or a config.json path (default: %(default)s)",
    )
    ir.add_argument(
        "--dtype",
        default="bf16",
        choices=list(DTYPES),
        help="parameter and activation element type of a model template (default: %(default)s)",
    )
    ir.add_argument(
        "--pass-pipeline",
        default=DEFAULT_PIPELINE,
        metavar="PIPELINE",
        help="passes to run, as mlir-opt writes them (default: %(default)s); "
        "'builtin.module()' runs none",
    )
    ir.add_argument("--phase", choices=("train", "prefill", "decode"), default="train",
                    help="a model template's forward program (train), or its prefill or decode step "
                    "(docs/inference.md) (default: %(default)s)")
    ir.add_argument("--generic", action="store_true", help="print ops in MLIR's generic form")
    ir.add_argument("-o", "--output", metavar="FILE", help="write the IR here instead of stdout")
    stagec_summary.add_parser(commands)
    stagec_stats.add_parser(commands)
    stagec_check_trace.add_parser(commands)
    stagec_trace.add_parser(commands)
    stagec_simulate.add_parser(commands)
    stagec_dse.add_parser(commands)
    stagec_import.add_parser(commands)
    stagec_compile.add_parser(commands)
    stagec_run.add_parser(commands)
    stagec_ps.add_parser(commands)
    return parser


def run_ir(args: argparse.Namespace) -> None:
    pipeline = build_pipeline(args.pass_pipeline, mlir_syntax=True)
    module = _build(args.model, args.dtype, args.phase)
    module.verify()
    pipeline.apply(make_context(), module)
    module.verify()
    with output_stream(args.output) as stream:
        Printer(stream=stream, print_generic_format=args.generic).print_op(module)
        stream.write("\n")


def _build(model: str, dtype: str, phase: str = "train") -> ModuleOp:
    """A built-in model by name, else a model template from a named config or a
    config.json path (its `phase` step); a bad name or config is a usage error."""
    if model in BUILTIN_MODELS:
        if phase != "train":
            raise UsageError(f"--phase {phase} needs a model template; '{model}' is a built-in forward program")
        return BUILTIN_MODELS[model]()
    try:
        return build_model(load_config(model), dtype, phase)
    except ConfigError as error:
        if model in NAMED_CONFIGS or model.endswith(".json") or os.path.exists(model):
            raise UsageError(str(error)) from None
        raise UsageError(
            f"unknown model '{model}'; built-in: {', '.join(BUILTIN_MODELS)}; "
            f"named configs: {', '.join(NAMED_CONFIGS)}; or a config.json path"
        ) from None


COMMANDS = {"ir": run_ir, "stats": stagec_stats.run, "check-trace": stagec_check_trace.run,
            "trace": stagec_trace.run, "import": stagec_import.run,
            "simulate": stagec_simulate.run, "dse": stagec_dse.run,
            "summary": stagec_summary.run, "ps": stagec_ps.run, "run": stagec_run.run,
            "compile": stagec_compile.run}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    status = 0
    try:
        with interrupt_handling():
            # a command returns None, or an exit status (`ps run`: the PS runtime's)
            result = COMMANDS[args.command](args)
            status = result if isinstance(result, int) else 0
            sys.stdout.flush()  # a full disk behind stdout shows here, not at exit
    except (KeyboardInterrupt, Terminated) as error:
        # Ctrl-C or SIGTERM: the `finally` blocks have removed what was half written.
        return interrupt_exit(PROG, error)
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    except WorkerDied as error:
        print(f"{PROG}: error: {worker_died_message(error)}", file=sys.stderr)
        return 1
    except DiagnosticException as error:
        # A pass refused the model (e.g. stg-autodiff{micro_batches=0}): the user's input.
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # `stagec ir | head`: the reader left; not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError as error:
        message = write_failure(error)  # `stagec ir > /dev/full`
        if message is None:
            raise
        print(f"{PROG}: error: {message}", file=sys.stderr)
        # what stdout still buffers would fail again at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 2
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
