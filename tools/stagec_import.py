"""`stagec import`: a PyTorch model -> torch.export -> torch-mlir -> stg, written as MLIR.

    stagec import mypkg.models:make_model -o model.mlir
    stagec import hf --model llama3-8b -o llama3-8b.mlir
    stagec import mypkg.models:make_model --model llama3-8b --emit torch -o model.torch.mlir

It only assembles the frontend (frontends/torch): FACTORY is called on the meta device
(with the ModelConfig of --model when it takes an argument) and must return an
nn.Module whose forward(input_ids, labels) returns the loss; `hf` builds the
transformers class of --model. `--emit torch` stops after the import (the torch
dialect, as convert-torch-to-stg reads it); the default `stg` also converts. Register
it with `add_parser(subcommands)` and call `run(args)`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from stagec.tools.errors import UsageError, positive_int, standalone_main

HELP = """\
Import a PyTorch model into stagec: torch.export (non-strict, batch and sequence
symbolic), torch-mlir's FX importer, then convert-torch-to-stg into the forward program
the templates make (docs/torch-frontend.md). Nothing is allocated: the model is built
on the meta device.

TARGET is MODULE:FACTORY (FACTORY(config) or FACTORY() returns the nn.Module; its
forward(input_ids, labels) returns the loss) or `hf` for the transformers class of
--model (LlamaForCausalLM, MixtralForCausalLM, GPT2LMHeadModel; `pip install stagec[hf]`).

examples:
  stagec import hf --model llama3-8b -o llama3-8b.mlir
  stagec import examples.tiny_lm:make_model --model examples/tiny.json --dtype f32 -o m.mlir
  stagec import examples.tiny_lm:make_model --emit torch -o m.torch.mlir
  stagec-opt m.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)'

MODULE is imported as `python -m` would import it, from the current directory first
(examples/tiny_lm.py is the README's TinyLM)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="MODULE:FACTORY|hf", help="the model factory, or hf for transformers")
    parser.add_argument("--model", metavar="NAME|config.json",
                        help="the model config handed to the factory (required for hf)")
    parser.add_argument("--dtype", default="bf16", choices=("bf16", "f16", "f32", "f64"),
                        help="parameter type (default: %(default)s)")
    parser.add_argument("--emit", default="stg", choices=("stg", "torch"),
                        help="stg: the converted forward program; torch: the imported torch dialect (default: %(default)s)")
    parser.add_argument("--vocab", type=positive_int, metavar="V",
                        help="vocabulary size for the example token ids (default: the config's, else 64)")
    parser.add_argument("--timings", action="store_true", help="print each phase's seconds on stderr")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the IR here instead of stdout")


def add_parser(subcommands) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "import", help="import a PyTorch model (torch.export + torch-mlir) as stg IR",
        description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return parser


def _model(args: argparse.Namespace):
    import torch

    from stagec.frontends.templates import ConfigError, load_config
    from stagec.frontends.torch import models

    try:
        config = load_config(args.model) if args.model else None
        if args.target == "hf":
            if config is None:
                raise UsageError("`stagec import hf` needs --model NAME|config.json")
            return models.hf_model(config, args.dtype), config
        factory = models.load_factory(args.target)
        with torch.device("meta"):
            model = models.call_factory(factory, config, args.target)
        return models.in_dtype(model, args.dtype, args.target), config
    except (ConfigError, ImportError) as error:
        raise UsageError(str(error)) from None


def run(args: argparse.Namespace) -> None:
    from xdsl.printer import Printer

    from stagec.frontends.torch import models
    from stagec.frontends.torch.importer import import_module
    from stagec.passes.diagnostics import PassError
    from stagec.tools.output import output_stream

    model, config = _model(args)
    vocab = args.vocab or (config.vocab_size if config else 64)
    timings: dict[str, float] = {}
    try:
        with models.user_code():
            if args.emit == "torch":
                module = import_module(model, models.example_args(vocab), models.DYNAMIC, timings=timings)
            else:
                name = config.name if config else args.target.rpartition(":")[2]
                symbols = models.config_symbols(config) if config else None
                module = models.import_forward(model, vocab, name, symbols, timings)
    except PassError as error:
        raise UsageError(f"convert-torch-to-stg: {error}") from None
    except BaseException as error:  # noqa: BLE001 - the factory's forward under torch.export
        if args.target == "hf" or models.is_interrupt(error):
            raise
        raise UsageError(str(models.export_error(args.target, error))) from None
    module.verify()
    with output_stream(args.output) as stream:
        Printer(stream=stream).print_op(module)
        stream.write("\n")
    if args.output not in (None, "-"):
        what = "the torch dialect import" if args.emit == "torch" else "the stg forward program"
        print(f"wrote {args.output}: {what} of {args.target}", file=sys.stderr)
    if args.timings:
        print(" ".join(f"{k}={v:.3f}s" for k, v in timings.items()), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    return standalone_main("stagec import", HELP, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
