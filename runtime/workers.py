"""Worker pools that die with their parent and stay quiet on Ctrl-C.

The trace writers (runtime/chakra/emit.py) and the trace checker (runtime/chakra/check.py)
fork worker processes. A terminal's Ctrl-C reaches the whole process group, so a plain
`multiprocessing.Pool` prints one KeyboardInterrupt traceback per worker; a parent killed
outright leaves its workers writing into pipes nobody reads (BrokenPipe tracebacks). Here
the parent alone handles SIGINT and SIGTERM (stagec's main turns them into one line and
exit 130 / 143) and terminates the pool; a worker ignores SIGINT, dies quietly on SIGTERM
and, through Linux's PR_SET_PDEATHSIG, is killed when its parent dies, even by SIGKILL.

A pool's worker leaves on SIGTERM by an exception rather than by the signal's default
action: an idle worker waits for its next task holding the pool's task-queue lock, and
SIGTERM to the whole process group (`timeout`, a batch scheduler, systemd) killed it
with the lock held, so that the parent's `Pool.terminate()`, which takes that lock,
waited forever. The exception leaves the `with lock:` and releases it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["WorkerDied", "fork_each", "process_alive", "quiet_pool"]

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


def _leave_pool_worker(signum, frame) -> None:
    """SIGTERM in a pool's worker: leave through the exception, releasing the queue
    locks it holds (module doc); quietly, with the status the signal would give."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not interrupt the way out
    raise SystemExit(128 + signum)


def _init_pool_worker(parent: int, initializer: Callable | None, initargs: tuple) -> None:
    _init_worker(parent, initializer, initargs, on_sigterm=_leave_pool_worker)


def _init_worker(parent: int, initializer: Callable | None, initargs: tuple,
                 on_sigterm: Callable | int = signal.SIG_DFL) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C for the job
    signal.signal(signal.SIGTERM, on_sigterm)  # Pool.terminate(): die without a word
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
            processes, initializer=_init_pool_worker, initargs=(os.getpid(), initializer, initargs))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    try:
        yield pool
    finally:
        pool.terminate()
        pool.join()


class WorkerDied(RuntimeError):
    """A forked worker ended without its result (killed, or out of memory)."""


def fork_each(function: Callable[[Any], Any], items: Sequence, jobs: int,
              initializer: Callable[[], None] | None = None,
              on_death: Callable[[int, str], Any] | None = None) -> Iterator[tuple[int, Any]]:
    """`function(item)` for every item, each in a process forked for it from this
    thread, at most `jobs` at a time; yields (index, result) as they finish.

    A process per item needs no collection of what the item leaves behind (its exit
    frees it), and no pool: the forks come from the caller's thread, not from a pool's
    helper threads. Workers are set up as the module doc says (no Ctrl-C, die with the
    parent) and run `initializer` first; a result comes back pickled through a pipe.
    An item's exception is raised here; a worker that ends without a result (killed,
    out of memory) raises WorkerDied, or with `on_death` yields on_death(index, why) as
    the item's result. Closing the iterator early (or an exception in the caller) kills
    the workers still running."""
    pending = list(enumerate(items))[::-1]
    running: dict[int, tuple[int, int, bytearray]] = {}  # read fd -> (pid, index, bytes so far)
    selector = selectors.DefaultSelector()
    try:
        while pending or running:
            while pending and len(running) < max(1, jobs):
                index, item = pending.pop()
                fd, pid = _fork_one(function, item, initializer)
                running[fd] = (pid, index, bytearray())
                selector.register(fd, selectors.EVENT_READ)
            for key, _ in selector.select():
                fd = key.fd
                chunk = os.read(fd, 1 << 20)
                if chunk:
                    running[fd][2].extend(chunk)
                    continue
                selector.unregister(fd)
                os.close(fd)
                pid, index, data = running.pop(fd)
                _, status = os.waitpid(pid, 0)
                if not data:
                    if on_death is not None:
                        yield index, on_death(index, _describe_status(status))
                        continue
                    raise WorkerDied(f"the worker of item {index} ended without a result "
                                     f"({_describe_status(status)})")
                ok, value = pickle.loads(bytes(data))
                if not ok:
                    raise value
                yield index, value
    finally:
        for fd, (pid, _, _) in running.items():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            selector.unregister(fd)
            os.close(fd)
        selector.close()


def _fork_one(function: Callable, item: Any, initializer: Callable[[], None] | None) -> tuple[int, int]:
    read, write = os.pipe()
    parent = os.getpid()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _PARENT_SIGNALS)
    try:
        pid = os.fork()
        if pid == 0:  # the worker: never returns into the caller's code
            status = 1
            try:
                os.close(read)
                _init_worker(parent, initializer, ())
                try:
                    payload = pickle.dumps((True, function(item)))
                except BaseException as error:  # noqa: BLE001 - handed to the parent
                    try:
                        payload = pickle.dumps((False, error))
                    except Exception:  # noqa: BLE001 - an exception pickle cannot take
                        payload = pickle.dumps((False, RuntimeError(f"{type(error).__name__}: {error}")))
                view = memoryview(payload)
                while view:
                    view = view[os.write(write, view):]
                status = 0
            finally:
                os._exit(status)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    os.close(write)
    return read, pid


def _describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


def process_alive(pid: int) -> bool:
    """Whether process `pid` still runs: one that exists but belongs to another user
    does; a zombie, which has exited and only waits for its parent to reap it, does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
