"""runtime/workers.py `fork_each`: a process forked per item (stagec dse's workers)."""

import os
import signal
import time

import pytest
from stagec.runtime.workers import WorkerDied, fork_each


def square_and_pid(x):
    return x * x, os.getpid()


def test_every_item_once_in_a_process_of_its_own():
    got = dict(fork_each(square_and_pid, list(range(7)), jobs=3))
    assert sorted(got) == list(range(7))
    assert [v for v, _ in (got[i] for i in range(7))] == [i * i for i in range(7)]
    pids = {pid for _, pid in got.values()}
    assert len(pids) == 7 and os.getpid() not in pids


def fail_on_three(x):
    if x == 3:
        raise ValueError(f"item {x} is bad")
    return x


def test_an_items_exception_is_raised_in_the_caller():
    with pytest.raises(ValueError, match="item 3 is bad"):
        list(fork_each(fail_on_three, [1, 2, 3, 4], jobs=2))


def die(x):
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_killed_worker_is_reported_not_waited_for():
    with pytest.raises(WorkerDied, match="item 0 ended without a result \\(killed by SIGKILL\\)"):
        list(fork_each(die, [0], jobs=1))


def sleep_unless_zero(args):
    index, path = args
    path.write_text(str(os.getpid()))
    if index:
        time.sleep(60)
    return index


def test_closing_early_kills_the_workers_still_running(tmp_path):
    items = [(i, tmp_path / f"{i}") for i in range(3)]
    results = fork_each(sleep_unless_zero, items, jobs=3)
    assert next(results) == (0, 0)  # items 1 and 2 are still sleeping
    deadline = time.monotonic() + 10
    while not all(path.exists() and path.read_text() for _, path in items):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    results.close()
    for _, path in items[1:]:  # killed and reaped: no such process
        with pytest.raises(ProcessLookupError):
            os.kill(int(path.read_text()), 0)
