"""A benchmark's cases with a progress bar on stderr (a terminal, or STAGEC_PROGRESS
set), so a run of minutes says where it is; the results table comes at the end."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def each(items: Iterable[T], what: str) -> Iterator[T]:
    """`items`, one by one, under a bar naming `what` and the item being run."""
    items = list(items)
    if not (sys.stderr.isatty() or os.environ.get("STAGEC_PROGRESS")):
        yield from items
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(file=sys.stderr, force_terminal=True if os.environ.get("STAGEC_PROGRESS") else None)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=True, console=console) as bar:
        task = bar.add_task(what, total=len(items))
        for done, item in enumerate(items):
            bar.update(task, completed=done, description=f"{what}: {item}")
            yield item
        bar.update(task, completed=len(items))
