"""Worker processes that die with their parent and stay quiet on Ctrl-C.

The trace writers (runtime/chakra/emit.py), the trace checker (runtime/chakra/check.py),
the memory analysis (runtime/sim/memory.py) and stagec dse fork worker processes. A
terminal's Ctrl-C reaches the whole process group, so a plain `multiprocessing.Pool`
prints one KeyboardInterrupt traceback per worker; a parent killed outright leaves its
workers writing into pipes nobody reads. Here the parent alone handles SIGINT and
SIGTERM (stagec's main turns them into one line and exit 130 / 143); a worker ignores
SIGINT, dies quietly on SIGTERM and, through Linux's PR_SET_PDEATHSIG, is killed when
its parent dies, even by SIGKILL.

`quiet_pool` is a pool of its own rather than `multiprocessing.Pool`, because that
pool's workers share its task queue's lock and so cannot be ended safely: a worker
killed while it waits for a task holds the lock, and `Pool.terminate()` takes it
first, so it waited forever (SIGTERM to the whole process group, as `timeout`, batch
schedulers and systemd send it); a worker that met SIGTERM just before it blocked on
that lock never acted on it; and workers ended by that SIGTERM were started again by
the pool's own thread, holding the lock anew. Each worker here has a pipe for its
tasks and one for its results and shares nothing else, so ending the pool is SIGKILL
to each worker and a wait for it: no order of signals can leave anything locked. A
worker that dies mid-task (killed, out of memory) fails that task with WorkerDied
instead of leaving the caller waiting.
"""

from __future__ import annotations

import collections
import contextlib
import os
import pickle
import queue
import selectors
import signal
import struct
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any

__all__ = ["WorkerDied", "fork_each", "process_alive", "quiet_pool"]

_PR_SET_PDEATHSIG = 1
_PARENT_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_FRAME = struct.Struct("<Q")  # a message's length in front of its pickle

# The parent's ends of every live pool's pipes: a worker forked later closes them, so
# that it keeps no other worker's pipe open.
_PARENT_FDS: set[int] = set()


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
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # die without a word
    _die_with_parent(parent)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _PARENT_SIGNALS)
    if initializer is not None:
        initializer(*initargs)


def _dumps_outcome(ok: bool, value: Any) -> bytes:
    """A task's outcome pickled; an exception pickle cannot take becomes a RuntimeError
    with its text."""
    try:
        return pickle.dumps((ok, value), pickle.HIGHEST_PROTOCOL)
    except Exception as error:  # noqa: BLE001 - reported to the parent instead
        if ok:
            value = RuntimeError(f"the task's result cannot be sent back: {type(error).__name__}: {error}")
        return pickle.dumps((False, RuntimeError(f"{type(value).__name__}: {value}")))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exactly(fd: int, size: int) -> bytes | None:
    """`size` bytes from `fd`, or None at its end."""
    parts, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _serve(tasks: int, results: int, failed: BaseException | None) -> None:
    """A pool worker's life: run each task that comes down `tasks` and send its outcome
    up `results`, until the pipe ends; with `failed`, the initializer's exception, each
    task fails with it."""
    while (header := _read_exactly(tasks, _FRAME.size)) is not None:
        message = _read_exactly(tasks, _FRAME.unpack(header)[0])
        if message is None:
            return
        try:
            if failed is not None:
                raise failed
            function, calls = pickle.loads(message)
            outcome = _dumps_outcome(True, [function(*args) for args in calls])
        except BaseException as error:  # noqa: BLE001 - handed to the parent
            outcome = _dumps_outcome(False, error)
        _write_all(results, _FRAME.pack(len(outcome)) + outcome)


class _Worker:
    """The parent's side of one pool worker."""

    def __init__(self, parent: int, initializer: Callable | None, initargs: tuple):
        task_read, self.tasks = os.pipe()
        self.results, result_write = os.pipe()
        try:
            self.pid = os.fork()
        except OSError:
            for fd in (task_read, self.tasks, self.results, result_write):
                os.close(fd)
            raise
        if self.pid == 0:  # the worker: never returns into the caller's code
            status = 1
            try:
                for fd in (*_PARENT_FDS, self.tasks, self.results):
                    with contextlib.suppress(OSError):
                        os.close(fd)
                try:
                    _init_worker(parent, initializer, initargs)
                    failed = None
                except Exception as error:  # noqa: BLE001 - each task reports it
                    failed = error
                _serve(task_read, result_write, failed)
                status = 0
            finally:
                os._exit(status)
        os.close(task_read)
        os.close(result_write)
        _PARENT_FDS.update((self.tasks, self.results))
        self.buffer = bytearray()
        self.job: Future | None = None  # the task it runs
        self.status: int | None = None

    def take(self, chunk: bytes) -> bytes | None:
        """Add what the results pipe gave; the message once it is whole."""
        self.buffer += chunk
        if len(self.buffer) < _FRAME.size:
            return None
        size = _FRAME.unpack_from(self.buffer)[0]
        if len(self.buffer) < _FRAME.size + size:
            return None
        message = bytes(self.buffer[_FRAME.size:_FRAME.size + size])
        del self.buffer[:_FRAME.size + size]
        return message

    def reap(self) -> int | None:
        """Wait for the worker to end; its wait status."""
        if self.status is None:
            with contextlib.suppress(ChildProcessError):
                self.status = os.waitpid(self.pid, 0)[1]
        return self.status

    def close(self) -> None:
        for fd in (self.tasks, self.results):
            _PARENT_FDS.discard(fd)
            with contextlib.suppress(OSError):
                os.close(fd)


class AsyncResult:
    """One task's outcome to come, as `multiprocessing.pool.AsyncResult` offers it."""

    def __init__(self, future: Future):
        self._future = future

    def get(self, timeout: float | None = None) -> Any:
        return self._future.result(timeout)[0]


class Pool:
    """Workers forked from the calling thread, fed by one thread of the parent (module
    doc). Use it through `quiet_pool`, which ends it."""

    def __init__(self, processes: int, initializer: Callable | None = None, initargs: tuple = ()):
        self._queue: collections.deque[tuple[Future, bytes]] = collections.deque()
        self._lock = threading.Lock()
        self._closing = False
        self._failed: Exception | None = None  # why no task can run any more (the feeding thread failed)
        self._workers: list[_Worker] = []
        self._thread: threading.Thread | None = None
        self._wake_read, self._wake_write = os.pipe()
        _PARENT_FDS.update((self._wake_read, self._wake_write))
        os.set_blocking(self._wake_write, False)  # a full pipe has woken the thread already
        self._selector = selectors.DefaultSelector()  # the feeding thread's
        _PARENT_FDS.add(self._selector.fileno())
        # The signals stay blocked while forking, so that no worker meets one before it
        # ignores it, and in the feeding thread, which inherits the mask: SIGINT and
        # SIGTERM then always reach the main thread, and wake it from a wait for a result.
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, _PARENT_SIGNALS)
        try:
            parent = os.getpid()
            for _ in range(max(1, processes)):
                self._workers.append(_Worker(parent, initializer, initargs))
            self._thread = threading.Thread(target=self._feed, name="quiet_pool", daemon=True)
            self._thread.start()
        except BaseException:
            self.terminate()
            raise
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def apply_async(self, function: Callable, args: tuple = ()) -> AsyncResult:
        """`function(*args)` in a worker."""
        return AsyncResult(self._submit(function, [tuple(args)]))

    def imap(self, function: Callable, iterable: Iterable, chunksize: int = 1) -> Iterator:
        """`function(item)` for every item, sent `chunksize` items to a task; the results
        in the items' order. The tasks are all submitted now."""
        futures = [self._submit(function, [(item,) for item in chunk]) for chunk in _chunks(iterable, chunksize)]

        def results() -> Iterator:
            for future in futures:
                yield from future.result()

        return results()

    def imap_unordered(self, function: Callable, iterable: Iterable, chunksize: int = 1) -> Iterator:
        """As `imap`, each task's results as soon as it finishes."""
        finished: queue.SimpleQueue[Future] = queue.SimpleQueue()
        futures = [self._submit(function, [(item,) for item in chunk]) for chunk in _chunks(iterable, chunksize)]
        for future in futures:
            future.add_done_callback(finished.put)

        def results() -> Iterator:
            for _ in futures:
                yield from finished.get().result()

        return results()

    def terminate(self) -> None:
        """SIGKILL to every worker, wait for each, and fail the tasks not finished."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
        for worker in self._workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, signal.SIGKILL)
        if self._thread is not None:  # it leaves at its next turn; a write to a dead worker fails
            with contextlib.suppress(BlockingIOError):
                os.write(self._wake_write, b"x")
            self._thread.join()
            self._thread = None
        for worker in self._workers:
            worker.reap()
            worker.close()
        _PARENT_FDS.difference_update((self._wake_read, self._wake_write, self._selector.fileno()))
        self._selector.close()
        os.close(self._wake_read)
        os.close(self._wake_write)
        self._fail_unfinished(RuntimeError("the worker pool was ended before the task finished"))

    def _submit(self, function: Callable, calls: list[tuple]) -> Future:
        future: Future = Future()
        message = pickle.dumps((function, calls), pickle.HIGHEST_PROTOCOL)
        with self._lock:
            if self._closing:
                raise RuntimeError("the worker pool has ended")
            if self._failed is not None:
                raise self._failed
            self._queue.append((future, _FRAME.pack(len(message)) + message))
            with contextlib.suppress(BlockingIOError):  # under the lock: terminate() closes the pipe
                os.write(self._wake_write, b"x")
        return future

    def _feed(self) -> None:
        """The parent's thread: hand queued tasks to idle workers, collect outcomes. Should
        it fail, every task not finished fails with it rather than wait for ever."""
        try:
            self._feed_until_closed()
        except BaseException as error:  # noqa: BLE001 - handed to the tasks' callers
            failure = RuntimeError(f"the worker pool failed: {type(error).__name__}: {error}")
            failure.__cause__ = error
            self._fail_unfinished(failure)

    def _fail_unfinished(self, error: Exception) -> None:
        """Fail the tasks running or queued with `error`; later submissions too."""
        with self._lock:
            self._failed = self._failed or error
            unfinished = [w.job for w in self._workers if w.job is not None] + [f for f, _ in self._queue]
            self._queue.clear()
            for worker in self._workers:
                worker.job = None
        for future in unfinished:
            future.set_exception(error)

    def _feed_until_closed(self) -> None:
        selector = self._selector
        selector.register(self._wake_read, selectors.EVENT_READ)
        live: dict[int, _Worker] = {}
        for worker in self._workers:
            selector.register(worker.results, selectors.EVENT_READ, worker)
            live[worker.results] = worker
        while True:
            with self._lock:
                if self._closing:
                    return
                starting, orphaned = self._start_tasks(list(live.values()))
            for worker, message in starting:
                with contextlib.suppress(OSError):  # it died: its results pipe ends, and that says so
                    _write_all(worker.tasks, message)
            for future in orphaned:
                future.set_exception(WorkerDied("every worker of the pool has died"))
            for key, _ in selector.select():
                if key.fd == self._wake_read:
                    os.read(self._wake_read, 4096)
                elif not self._collect(key.data):
                    selector.unregister(key.fd)
                    del live[key.fd]

    def _start_tasks(self, live: list[_Worker]) -> tuple[list[tuple[_Worker, bytes]], list[Future]]:
        """Queued tasks for the idle workers (the lock held): the (worker, task) pairs to
        send, and the tasks left with no worker alive to run them."""
        idle = [w for w in live if w.job is None]
        if not live:
            orphaned = [future for future, _ in self._queue]
            self._queue.clear()
            return [], orphaned
        starting = []
        while idle and self._queue:
            future, message = self._queue.popleft()
            if future.set_running_or_notify_cancel():
                worker = idle.pop()
                worker.job = future
                starting.append((worker, message))
        return starting, []

    def _collect(self, worker: _Worker) -> bool:
        """Read what the worker sent, settling its task when its outcome is whole;
        False once its pipe has ended (it died)."""
        chunk = os.read(worker.results, 1 << 20)
        if chunk:
            message = worker.take(chunk)
            if message is not None and worker.job is not None:
                future, worker.job = worker.job, None
                try:
                    ok, value = pickle.loads(message)
                except Exception as error:  # noqa: BLE001 - the task's outcome says so
                    ok, value = False, RuntimeError(
                        f"a task's outcome cannot be read back: {type(error).__name__}: {error}")
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)
            return True
        with self._lock:
            if self._closing:  # terminate() killed it
                return False
        if worker.job is not None:
            status = worker.reap()
            why = _describe_status(status) if status is not None else "its exit status is unknown"
            future, worker.job = worker.job, None
            future.set_exception(WorkerDied(f"a worker of the pool ended without its result ({why})"))
        return False


def _chunks(iterable: Iterable, size: int) -> Iterator[list]:
    chunk: list = []
    for item in iterable:
        chunk.append(item)
        if len(chunk) >= max(1, size):
            yield chunk
            chunk = []
    if chunk:
        yield chunk


@contextlib.contextmanager
def quiet_pool(processes: int, initializer: Callable | None = None, initargs: tuple = ()) -> Iterator[Pool]:
    """A `Pool` of `processes` forked workers, each running `initializer(*initargs)`
    first; leaving the block ends it (module doc). A task's exception is raised where
    its result is taken; a worker's death, as WorkerDied."""
    pool = Pool(processes, initializer, initargs)
    try:
        yield pool
    finally:
        pool.terminate()


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
                    payload = _dumps_outcome(True, function(item))
                except BaseException as error:  # noqa: BLE001 - handed to the parent
                    payload = _dumps_outcome(False, error)
                _write_all(write, payload)
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
