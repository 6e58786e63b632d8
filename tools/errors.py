"""The error that stagec's command-line tools raise for a mistake in what the user gave.

It is shared so that every tool (stagec-opt, stagec) and every helper they call
(pipeline_spec, diagnostics) can raise it, and each tool's main can report it the
same way: one message on stderr, exit code 2, no traceback. `positive_int` and
`standalone_main` are the argparse type and the `python -m` entry point that the
`stagec` subcommands share.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence


class UsageError(Exception):
    """An error in what the user gave (command line, pipeline text, input file):
    printed as one message; exit code 2."""


def positive_int(text: str) -> int:
    """argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def standalone_main(
    prog: str,
    description: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], None],
    argv: Sequence[str] | None = None,
) -> int:
    """Run one `stagec` subcommand on its own (`python -m stagec.tools.stagec_trace`)."""
    parser = argparse.ArgumentParser(prog=prog, description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        run(args)
    except UsageError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    return 0
