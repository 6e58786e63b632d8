"""The error that stagec's command-line tools raise for a mistake in what the user gave.

It is shared so that every tool (stagec-opt, stagec) and every helper they call
(pipeline_spec, diagnostics) can raise it, and each tool's main can report it the
same way: one message on stderr, exit code 2, no traceback. `positive_int`,
`finite_number`, `non_negative_number` and `positive_number` are the argparse types, and
`standalone_main` the `python -m` entry point, that the `stagec` subcommands share.

Signals are reported the same way: `interrupt_handling()` makes Ctrl-C (SIGINT) a
KeyboardInterrupt and SIGTERM a `Terminated`, both raised in the main thread so that
every `finally` (temporary files, worker pools) runs; `interrupt_exit` prints the one
line and gives the shell's exit status, 128 + the signal number (130, 143).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence

from stagec.runtime.workers import WorkerDied


class UsageError(Exception):
    """An error in what the user gave (command line, pipeline text, input file):
    printed as one message; exit code 2."""


class Terminated(BaseException):
    """SIGTERM arrived; a BaseException, like KeyboardInterrupt, so that no
    `except Exception` takes it for an error of the work it stops."""


def _on_signal(signum, frame) -> None:
    # Cleanup follows (the `finally` blocks): a second Ctrl-C must not cut it short.
    for other in (signal.SIGINT, signal.SIGTERM):
        signal.signal(other, signal.SIG_IGN)
    raise KeyboardInterrupt if signum == signal.SIGINT else Terminated


@contextlib.contextmanager
def interrupt_handling() -> Iterator[None]:
    """SIGINT -> KeyboardInterrupt, SIGTERM -> Terminated while the block runs (main
    thread only; elsewhere Python's handlers stay)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def exit_on_early_signals(prog: str) -> None:
    """Before a tool's main runs (its imports): nothing is written yet, so SIGINT or
    SIGTERM ends the process at once with the one line and 130 / 143."""

    def leave(signum, frame) -> None:
        what = "interrupted" if signum == signal.SIGINT else "terminated"
        with contextlib.suppress(OSError):
            os.write(2, f"{prog}: {what}\n".encode())
        os._exit(128 + signum)

    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, leave)


def interrupt_exit(prog: str, error: BaseException) -> int:
    """The one line for an interrupt or SIGTERM, and the exit status (130 / 143)."""
    interrupted = isinstance(error, KeyboardInterrupt)
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"{prog}: {'interrupted' if interrupted else 'terminated'}\n")
        sys.stderr.flush()
    return 128 + (signal.SIGINT if interrupted else signal.SIGTERM)


def _int_at_least(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"{value} must be at least {minimum}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer of at least 1."""
    return _int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """argparse type: an integer of at least 0."""
    return _int_at_least(text, 0)


def finite_number(text: str) -> float:
    """argparse type: a number, not nan or inf (which every comparison a range check
    makes lets through, to fail later as a traceback)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"'{text}' is not a finite number")
    return value


def non_negative_number(text: str) -> float:
    """argparse type: a finite number of at least 0."""
    value = finite_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} must be at least 0")
    return value


def positive_number(text: str) -> float:
    """argparse type: a finite number greater than 0."""
    value = finite_number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be greater than 0")
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
        with interrupt_handling():
            run(args)
    except UsageError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as error:
        return interrupt_exit(prog, error)
    except WorkerDied as error:
        print(f"{prog}: error: {worker_died_message(error)}", file=sys.stderr)
        return 1
    return 0


def worker_died_message(error: BaseException) -> str:
    """The line for a worker process that ended without its result (runtime/workers.py):
    not the user's input, but usually memory, which the user can act on."""
    return (f"{error}. The kernel's out-of-memory killer ends processes so when memory runs short; "
            "fewer of them (trace --workers, check-trace --jobs) need less")
