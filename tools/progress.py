"""Progress on stderr for the work a command does that takes more than a moment.

Shown on a terminal, or wherever STAGEC_PROGRESS is set (tests use it to see the bars
in a pipe); never with --quiet. Bars are transient: what stays on the screen is the
command's output.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator


def shown(quiet: bool = False) -> bool:
    return not quiet and (sys.stderr.isatty() or bool(os.environ.get("STAGEC_PROGRESS")))


def _console():
    from rich.console import Console

    # STAGEC_PROGRESS draws the bars into a pipe as on a terminal.
    return Console(file=sys.stderr, force_terminal=True if os.environ.get("STAGEC_PROGRESS") else None)


class Progress:
    """Bars for a command's steps: `with Progress(quiet) as p: update = p.task("x")`,
    then `update(done, total)`; `task` gives None when nothing is shown."""

    def __init__(self, quiet: bool = False):
        self.enabled = shown(quiet)
        self.progress = None

    def __enter__(self) -> Progress:
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self.progress = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                         TimeElapsedColumn(), transient=True, console=_console())
            self.progress.__enter__()
        return self

    def task(self, what: str) -> Callable[[int, int], None] | None:
        if self.progress is None:
            return None
        task = self.progress.add_task(what, total=None)
        return lambda done, total: self.progress.update(task, completed=done, total=total)

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.__exit__(*exc)


@contextlib.contextmanager
def status(what: str, quiet: bool = False) -> Iterator[Callable[[str], None]]:
    """A spinner with `what` while steps of unknown length run; the block gets a
    function that changes the text as it moves from step to step."""
    if not shown(quiet):
        yield lambda text: None
        return
    with _console().status(what) as spinner:
        yield spinner.update
