"""Where a tool's output goes: stdout, or a file that appears whole or not at all.

`-o FILE` is written through a temporary file beside it that replaces it on success
only. `-o -` is stdout, as in mlir-opt. A path that is not a regular file - a device
such as /dev/null or /dev/stdout, a FIFO - is written in place: renaming a file over
it would replace the device (as root, for every user of the machine). A symbolic link
keeps pointing where it did: the file it names is the one replaced.

A write that the machine refuses (a full disk or quota, a file-size limit, an I/O
error) is a UsageError naming the file and the error, and leaves nothing behind;
`write_failure` says the same of stdout for the tools' main functions.
`check_output_path` checks, before the work, that an output file can be made;
`require_regular_file` also refuses a device or FIFO for the outputs that other
writers replace (timelines, plots).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from typing import IO

from stagec.tools.errors import UsageError

# What a write meets that is the machine's doing, not stagec's.
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})


@contextlib.contextmanager
def output_stream(path: str | None) -> Iterator[IO[str]]:
    """stdout (`path` None or '-'), or `path` written whole or not at all."""
    if path is None or path == "-":
        yield sys.stdout
        return
    if _written_in_place(path):
        try:
            stream = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed below)
        except OSError as error:
            raise _cannot_write(path, error) from None
        try:
            with stream:
                yield stream
        except OSError as error:
            if error.errno not in WRITE_ERRNOS:
                raise
            raise _cannot_write(path, error) from None
        return
    target = os.path.realpath(path)  # a link's file is replaced, not the link
    try:
        handle, temporary = tempfile.mkstemp(
            dir=os.path.dirname(target),
            prefix=f".{os.path.basename(target)}.",
            suffix=".tmp",
        )
    except OSError as error:
        raise _cannot_write(path, error) from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            yield stream
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp made it private (0600)
        try:
            os.replace(temporary, target)
        except OSError as error:
            raise _cannot_write(path, error) from None
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if error.errno not in WRITE_ERRNOS:
            raise
        raise _cannot_write(path, error) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_failure(error: BaseException) -> str | None:
    """The one-line message for an OSError that writing stdout met (`stagec ir >
    /dev/full`), else None: the error is something else."""
    if isinstance(error, OSError) and error.errno in WRITE_ERRNOS and error.filename is None:
        return f"cannot write standard output: {error.strerror}"
    return None


def require_regular_file(option: str, path: str | None) -> None:
    """For an output that a writer elsewhere (a timeline, a plot) replaces through a
    temporary file and a rename, checked before the work that makes it: a device or
    FIFO would be replaced, and a missing directory would fail only at the end."""
    if path is None:
        return
    if _written_in_place(path):
        raise UsageError(f"{option} '{path}': not a regular file (a device, a FIFO or a path in /dev or /proc), "
                         "which this output would replace; give a file path")
    check_output_path(option, path)


def check_output_path(option: str, path: str) -> None:
    """Before the work: the file `option` names can be made - its directory exists and
    it is not itself a directory."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"{option} '{path}': the directory '{directory}' does not exist")
    if os.path.isdir(path):
        raise UsageError(f"{option} '{path}': a directory; give a file path")


def _written_in_place(path: str) -> bool:
    """Whether `path` is something other than a regular file (or a link to one, or a
    file still to be made): a device, a FIFO, a socket, or a path into /dev or /proc."""
    if os.path.realpath(path).startswith(("/dev/", "/proc/")):
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _cannot_write(path: str, error: OSError) -> UsageError:
    return UsageError(f"cannot write output file '{path}': {error.strerror or error}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
