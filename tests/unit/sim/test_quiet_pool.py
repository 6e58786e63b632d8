"""runtime/workers.py `quiet_pool`: tasks and their outcomes, a worker's death, and
the end of the pool under SIGTERM sent to the whole process group, as `timeout`, batch
schedulers and systemd send it (issue 17 class 2, review): the parent prints its one
line and exits 143 within seconds. With `multiprocessing.Pool` underneath, 4 of 30 such
runs hung: its workers share a task queue's lock, which Pool.terminate() waits for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from stagec.runtime.workers import WorkerDied, process_alive, quiet_pool

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and process groups as on Linux")

# Two workers, one task: one worker runs the task, the other waits for the next.
PARENT = """\
import sys, time
from stagec.runtime.workers import quiet_pool
from stagec.tools.errors import Terminated, interrupt_exit, interrupt_handling

try:
    with interrupt_handling():
        with quiet_pool(2) as pool:
            pending = pool.apply_async(time.sleep, (120,))
            time.sleep(0.2)  # both workers started: one sleeping in the task, one idle
            print("ready", flush=True)
            pending.get()
except (KeyboardInterrupt, Terminated) as error:
    sys.exit(interrupt_exit("parent", error))
"""


@pytest.mark.parametrize("attempt", range(12))  # the hang it guards against came in about 1 run of 8
def test_sigterm_to_the_process_group_ends_the_pool(attempt):
    process = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        assert process.stdout.readline() == "ready\n"
        os.killpg(process.pid, signal.SIGTERM)
        started = time.monotonic()
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 143
    assert err.splitlines() == ["parent: terminated"]  # no worker says anything
    assert time.monotonic() - started < 10
    with pytest.raises(ProcessLookupError):  # nothing of the group is left
        os.killpg(process.pid, 0)


def test_process_alive_counts_a_zombie_as_dead():
    # a trace job's lock (staging) and a run's ranks (launch) both ask whether a
    # recorded pid still runs; an exited child not yet reaped must read as gone
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(f"/proc/{child.pid}/stat") as stat:
            if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.01)
    assert not process_alive(child.pid)  # a zombie
    child.wait()
    assert not process_alive(child.pid)  # reaped
    assert process_alive(os.getpid())
    assert process_alive(1)  # init: running, though perhaps not ours to signal


def square_and_pid(x):
    return x * x, os.getpid()


def test_results_come_from_the_workers_in_the_order_asked():
    with quiet_pool(3) as pool:
        ordered = list(pool.imap(square_and_pid, range(50), chunksize=4))
        unordered = sorted(pool.imap_unordered(square_and_pid, range(50), chunksize=3))
        single = pool.apply_async(square_and_pid, (7,)).get()
    assert [v for v, _ in ordered] == [x * x for x in range(50)]
    assert [v for v, _ in unordered] == [x * x for x in range(50)]
    assert single[0] == 49
    pids = {pid for _, pid in ordered + unordered + [single]}
    assert os.getpid() not in pids and 1 <= len(pids) <= 3


def big(n):
    return bytes([n]) * (5 << 20)  # many reads of the results pipe for one outcome


def test_an_outcome_larger_than_a_pipe_arrives_whole():
    with quiet_pool(2) as pool:
        assert [len(b) == 5 << 20 and b[0] == n and b[-1] == n for n, b in enumerate(pool.imap(big, range(4)))] \
            == [True] * 4


def open_missing(x):
    if x == 2:
        with open(f"/nonexistent/stagec-test/{x}"):
            pass
    return x


def test_a_tasks_exception_is_raised_where_its_result_is_taken():
    with quiet_pool(2) as pool:
        results = pool.imap(open_missing, range(4))
        assert [next(results), next(results)] == [0, 1]
        with pytest.raises(FileNotFoundError) as raised:
            next(results)
        assert raised.value.filename == "/nonexistent/stagec-test/2"  # as the caller needs it for its message
        assert pool.apply_async(open_missing, (5,)).get() == 5  # the pool goes on


def die_on_one(x):
    if x == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return x


def test_a_worker_killed_mid_task_fails_that_task_not_the_wait():
    # multiprocessing.Pool waits for ever for a task whose worker was killed (OOM)
    with quiet_pool(2) as pool:
        doomed = pool.apply_async(die_on_one, (1,))
        with pytest.raises(WorkerDied, match=r"a worker of the pool ended without its result \(killed by SIGKILL\)"):
            doomed.get(timeout=30)
        assert [pool.apply_async(die_on_one, (x,)).get(timeout=30) for x in (2, 3)] == [2, 3]  # on the other


def test_tasks_left_with_no_worker_fail():
    with quiet_pool(1) as pool:
        doomed = pool.apply_async(die_on_one, (1,))
        stranded = pool.apply_async(die_on_one, (2,))
        with pytest.raises(WorkerDied, match="killed by SIGKILL"):
            doomed.get(timeout=30)
        with pytest.raises(WorkerDied, match="every worker of the pool has died"):
            stranded.get(timeout=30)


def stubborn(path):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    path.write_text(str(os.getpid()))
    time.sleep(120)


def test_leaving_the_block_ends_a_worker_that_ignores_sigterm(tmp_path):
    marker = tmp_path / "pid"
    started = time.monotonic()
    with quiet_pool(2) as pool:
        pending = pool.apply_async(stubborn, (marker,))
        while not (marker.exists() and marker.read_text()):
            assert time.monotonic() - started < 30
            time.sleep(0.01)
    assert time.monotonic() - started < 10
    assert not process_alive(int(marker.read_text()))  # killed and reaped
    with pytest.raises(RuntimeError, match="ended before the task finished"):
        pending.get()


def open_fds(_):
    return sorted(int(fd) for fd in os.listdir("/proc/self/fd"))


def test_a_worker_holds_no_other_pools_pipes_and_nothing_leaks():
    before = open_fds(None)
    with quiet_pool(2) as first:
        theirs = set(open_fds(None)) - set(before)  # the first pool's ends of its pipes
        assert len(theirs) == 2 * 2 + 3  # two per worker, the wake-up pipe and the feeding thread's epoll
        with quiet_pool(1) as second:
            in_worker = set(second.apply_async(open_fds, (None,)).get())
        assert first.apply_async(square_and_pid, (3,)).get()[0] == 9
    assert not in_worker & theirs
    assert open_fds(None) == before


def test_a_pool_that_has_ended_takes_no_tasks():
    with quiet_pool(1) as pool:
        pass
    with pytest.raises(RuntimeError, match="the worker pool has ended"):
        pool.apply_async(square_and_pid, (1,))


def refuse():
    raise ValueError("no set-up here")


def test_an_initializers_exception_fails_each_task_with_it():
    # multiprocessing.Pool starts such workers again and again, and the caller waits
    with quiet_pool(2, initializer=refuse) as pool, pytest.raises(ValueError, match="no set-up here"):
        list(pool.imap(square_and_pid, range(3)))


def refuse_to_load():
    raise ValueError("not here")


class Unloadable:
    def __reduce__(self):
        return refuse_to_load, ()


def unloadable(_):
    return Unloadable()


def test_an_outcome_that_cannot_be_read_back_fails_its_task_only():
    with quiet_pool(1) as pool:
        with pytest.raises(RuntimeError, match="outcome cannot be read back: ValueError: not here"):
            pool.apply_async(unloadable, (0,)).get(timeout=30)
        assert pool.apply_async(square_and_pid, (4,)).get(timeout=30)[0] == 16


def test_a_failure_of_the_feeding_thread_fails_the_tasks_not_the_wait(monkeypatch):
    from stagec.runtime import workers

    start_tasks = workers.Pool._start_tasks

    def broken(self, live):
        if self._queue:  # once a task has come
            raise MemoryError("no room")
        return start_tasks(self, live)

    monkeypatch.setattr(workers.Pool, "_start_tasks", broken)
    with quiet_pool(1) as pool:
        pending = pool.apply_async(square_and_pid, (2,))
        with pytest.raises(RuntimeError, match="the worker pool failed: MemoryError: no room"):
            pending.get(timeout=30)
        with pytest.raises(RuntimeError, match="the worker pool failed"):
            pool.apply_async(square_and_pid, (3,))
