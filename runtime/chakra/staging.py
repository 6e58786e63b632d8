"""Where a trace job's files go: a directory's previous job, and a staging directory
that becomes the result whole or not at all (emit_traces, and runtime/ps/trace.py's
write_traces).

A directory holds one job of a prefix: `P.N.et`, the `P.N.json` dumps, `P.ranks.json`
and comm_group.json (`previous_output` names them, a user's other files apart). A job
is written into a `Staging` directory first and made the result by `commit`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
from collections.abc import Sequence
from dataclasses import dataclass

from stagec.runtime.chakra.errors import OutputError
from stagec.runtime.workers import process_alive

__all__ = ["COMM_GROUP_FILE", "OutputEstimate", "PreviousJobError", "Staging", "file_list", "is_staging",
           "previous_output"]


class PreviousJobError(OutputError):
    """The output directory holds another job's traces (`files`), which writing this
    job beside would mix with it."""

    def __init__(self, directory: str, files: Sequence[str]):
        super().__init__(f"'{directory}' holds the traces of another job ({file_list(files)}): "
                         f"remove them or write elsewhere")
        self.directory = directory
        self.files = list(files)


@dataclass(frozen=True)
class OutputEstimate:
    """What a job writes, estimated before anything is written: `files` in `directory`
    and their `bytes` (each trace file encoded for one rank of its class - ranks of a
    class differ only in a few patched varints - times the class's ranks)."""

    directory: str
    files: int
    bytes: int


# A trace file, its decoded dump, and the files beside them (module doc; ../shared/CHAKRA.md).
_TRACE_FILE = re.compile(r"(?P<prefix>[^/]+)\.(?P<rank>0|[1-9][0-9]*)\.(?P<ext>et|json)\Z")
COMM_GROUP_FILE = "comm_group.json"


def previous_output(out_dir: str) -> tuple[list[str], list[str]]:
    """The names in `out_dir` that a trace job writes (`P.N.et`, the `P.N.json` dumps of
    a prefix with traces, `P.ranks.json`, comm_group.json) and the other entries
    (a user's files, directories and links, which stagec never deletes)."""
    try:
        names = sorted(os.listdir(out_dir))
    except FileNotFoundError:
        return [], []
    prefixes = {m["prefix"] for n in names if (m := _TRACE_FILE.match(n)) and m["ext"] == "et"}
    prefixes |= {n.removesuffix(".ranks.json") for n in names if n.endswith(".ranks.json")}
    ours, others = [], []
    for name in names:
        match = _TRACE_FILE.match(name)
        mine = (name == COMM_GROUP_FILE or (match is not None and match["prefix"] in prefixes)
                or (name.endswith(".ranks.json") and name.removesuffix(".ranks.json") in prefixes))
        if mine and os.path.isfile(os.path.join(out_dir, name)) and not os.path.islink(os.path.join(out_dir, name)):
            ours.append(name)
        elif not _STAGING.match(name):
            others.append(name)
    return ours, others


def file_list(names: Sequence[str], limit: int = 4) -> str:
    """The first names, and how many there are in all."""
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


# A staging directory: `.stagec-<pid>.tmp` inside --out, `.<out>.stagec-<pid>.tmp` beside it.
_STAGING = re.compile(r"\..*stagec-(?P<pid>[0-9]+)\.tmp\Z")


def _remove_stale_staging(directory: str, prefix: str) -> None:
    """Remove the staging directories `<prefix>stagec-<pid>.tmp` in `directory` that runs
    killed by SIGKILL (no cleanup) left for the same --out."""
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            match = _STAGING.match(name)
            if match is None or not name.startswith(prefix) or not os.path.isdir(os.path.join(directory, name)):
                continue
            pid = int(match["pid"])
            if pid != os.getpid() and not process_alive(pid):
                shutil.rmtree(os.path.join(directory, name), ignore_errors=True)


class Staging:
    """Where a job's files are written before they are the result (emit_traces, and
    runtime/ps/trace.py's write_traces): a
    sibling directory renamed to a missing `out_dir` (one rename: SIGKILL leaves no
    result at all), else a directory inside `out_dir` whose files are moved in, with
    SIGINT and SIGTERM held off, the previous job's completeness markers
    (comm_group.json, the ranks file) removed first and the new ones moved last.
    SIGKILL during those renames (milliseconds per thousand files) is the one case
    that leaves traces without their ranks file."""

    def __init__(self, out_dir: str):
        self.out_dir = out_dir
        out = os.path.abspath(out_dir)
        parent = os.path.dirname(out)
        self.created: list[str] = []  # missing ancestors of out_dir this run creates
        path = parent
        while not os.path.exists(path):
            self.created.append(path)
            path = os.path.dirname(path)
        for missing in reversed(self.created):
            os.mkdir(missing)
        exists = os.path.lexists(out)
        if exists and not os.path.isdir(out):
            raise OutputError(f"'{out_dir}' is not a directory")
        # A missing directory appears by one rename. An existing one is never replaced,
        # even empty: it keeps its owner and mode, and a shell whose working directory
        # it is keeps seeing it.
        whole = not exists and os.access(parent, os.W_OK)
        self.whole = whole
        if not whole and not exists:
            os.mkdir(out)
            self.created.insert(0, out)
        stem = f".{os.path.basename(out)}." if whole else "."
        base = parent if whole else out
        _remove_stale_staging(base, stem)
        name = f"{stem}stagec-{os.getpid()}.tmp"
        self.path = os.path.join(base, name)
        shutil.rmtree(self.path, ignore_errors=True)
        os.mkdir(self.path)

    def shown(self, path: str | None) -> str:
        """The final path a staged path stands for (for messages)."""
        if not path:
            return self.out_dir
        path = os.fspath(path)
        if path.startswith(self.path + os.sep):
            name = os.path.basename(path)
            temporary = re.fullmatch(r"\.?(.+)\.tmp-[0-9]+", name)  # write_atomic's and wire's names
            path = os.path.join(self.out_dir, temporary[1] if temporary else name)
        elif path == self.path:
            path = self.out_dir
        return path

    def commit(self, replaced: Sequence[str]) -> None:
        """Make the staged files the result; `replaced` (a previous job's files, --force)
        go first."""
        signals = {signal.SIGINT, signal.SIGTERM}
        held = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
        try:
            out = self.out_dir
            if self.whole:
                os.replace(self.path, out)
                return
            # completeness markers go first and come last, so a reader never pairs files of two jobs
            order = sorted(replaced, key=lambda n: (n != COMM_GROUP_FILE and not n.endswith(".ranks.json"), n))
            for name in order:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(out, name))
            staged = sorted(os.listdir(self.path),
                            key=lambda n: (n.endswith(".ranks.json"), n == COMM_GROUP_FILE, n))
            for name in staged:
                os.replace(os.path.join(self.path, name), os.path.join(out, name))
            os.rmdir(self.path)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        for path in self.created:  # the ancestors it created, innermost first, if still empty
            with contextlib.suppress(OSError):
                os.rmdir(path)


def is_staging(name: str) -> bool:
    """Whether `name` is a staging directory's (never a job's file)."""
    return _STAGING.match(name) is not None
