"""Where a tool's output goes: stdout, or a file that appears whole or not at all."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import IO

from stagec.tools.errors import UsageError


@contextlib.contextmanager
def output_stream(path: str | None) -> Iterator[IO[str]]:
    """stdout, or `path` written through a temporary file beside it that replaces it
    on success only: a failed run never leaves half an output behind."""
    if path is None:
        yield sys.stdout
        return
    try:
        handle, temporary = tempfile.mkstemp(
            dir=os.path.dirname(os.path.abspath(path)),
            prefix=f".{os.path.basename(path)}.",
            suffix=".tmp",
        )
    except OSError as error:
        raise UsageError(
            f"cannot write output file '{path}': {error.strerror}"
        ) from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            yield stream
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp made it private (0600)
        try:
            os.replace(temporary, path)
        except OSError as error:
            raise UsageError(
                f"cannot write output file '{path}': {error.strerror}"
            ) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
