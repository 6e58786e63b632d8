"""runtime/workers.py `quiet_pool` under SIGTERM sent to the whole process group, as
`timeout`, batch schedulers and systemd send it (issue 17 class 2, review): the parent
prints its one line and exits 143 within seconds. Workers used to die by SIGTERM's
default action; an idle one dies holding the pool's task-queue lock, and the parent's
Pool.terminate() then waited for that lock forever (`timeout 60 stagec simulate ...`
never ended)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from stagec.runtime.workers import process_alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and process groups as on Linux")

# Two workers, one task: one worker runs the task, the other waits for the next with
# the queue's lock held - the one SIGTERM's default action left locked.
PARENT = """\
import sys, time
from stagec.runtime.workers import quiet_pool
from stagec.tools.errors import Terminated, interrupt_exit, interrupt_handling

try:
    with interrupt_handling():
        with quiet_pool(2) as pool:
            pending = pool.apply_async(time.sleep, (120,))
            time.sleep(1.0)  # both workers started: one sleeping in the task, one idle in get()
            print("ready", flush=True)
            pending.get()
except (KeyboardInterrupt, Terminated) as error:
    sys.exit(interrupt_exit("parent", error))
"""


def test_sigterm_to_the_process_group_ends_the_pool():
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
