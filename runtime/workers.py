"""Worker pools that die with their parent and stay quiet on Ctrl-C.

The trace writers (runtime/chakra/emit.py) and the trace checker (runtime/chakra/check.py)
fork worker processes. A terminal's Ctrl-C reaches the whole process group, so a plain
`multiprocessing.Pool` prints one KeyboardInterrupt traceback per worker; a parent killed
outright leaves its workers writing into pipes nobody reads (BrokenPipe tracebacks). Here
the parent alone handles SIGINT and SIGTERM (stagec's main turns them into one line and
exit 130 / 143) and terminates the pool; a worker ignores SIGINT, dies quietly on SIGTERM
and, through Linux's PR_SET_PDEATHSIG, is killed when its parent dies, even by SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator

__all__ = ["quiet_pool"]

_PR_SET_PDEATHSIG = 1
_PARENT_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGKILL when the parent dies (Linux); elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _init_worker(parent: int, initializer: Callable | None, initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C for the job
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # Pool.terminate(): die without a word
    _die_with_parent(parent)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _PARENT_SIGNALS)
    if initializer is not None:
        initializer(*initargs)


@contextlib.contextmanager
def quiet_pool(processes: int, initializer: Callable | None = None, initargs: tuple = ()) -> Iterator:
    """A forked `multiprocessing.Pool` of `processes` workers set up as the module doc
    says; leaving the block terminates it (a worker's exception and KeyboardInterrupt
    reach the caller as they are)."""
    import multiprocessing

    # Block the signals while forking so that no worker meets one before it ignores it.
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _PARENT_SIGNALS)
    try:
        pool = multiprocessing.get_context("fork").Pool(
            processes, initializer=_init_worker, initargs=(os.getpid(), initializer, initargs))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    try:
        yield pool
    finally:
        pool.terminate()
        pool.join()
