"""The master's control flow driven in-process, call by call: the orderings that the
real-process fault tests hit only by chance."""

import json

import pytest

from stagec.runtime.ps.auth import Authenticator
from stagec.runtime.ps.launcher import prepare
from stagec.runtime.ps.master import Master

from .util import SECRET, tiny_deployment


def started_master(tmp_path, **plan_args) -> Master:
    """A master whose slaves (pids 100, 101, ...) have polled and whose cluster 0 said hello."""
    dep = tiny_deployment(tmp_path, rounds=5, **plan_args)
    prepare(dep)
    m = Master(dep, Authenticator(SECRET))
    for s in range(dep.plan.num_slaves):
        m.handle({"op": "slave_poll", "slave": s, "pid": 100 + s, "version": 0})
    m.handle({"op": "hello", "cluster": 0})
    return m


@pytest.fixture
def master(tmp_path):
    return started_master(tmp_path)


def receipt(m, push_id, layer, pid=None, secret=SECRET):
    """What the slave of `layer` acknowledges (runtime/ps/slave.py `_consume`): the
    header of its answer and the header's MAC."""
    slave = m.plan.slave_of_layer[layer]
    head, mac = Authenticator(secret).frames({"ok": True, "push": push_id, "layer": layer, "slave": slave,
                                              "pid": 100 + slave if pid is None else pid, "request": "r"}, [])
    return [head.decode(), mac.hex()]


def step_done(m, cluster, push, step, **receipt_args):
    m.handle({"op": "push_step_done", "cluster": cluster, "push": push["push"], "step": step,
              "receipts": [receipt(m, push["push"], l, **receipt_args) for l in push["steps"][step]]})


def deliver_step(m, push, step, **receipt_args):
    """Cluster 0 sends step `step` of `push`, every slave acknowledges its layers, and
    the cluster hands their receipts to the master."""
    assert m.handle({"op": "push_grant", "cluster": 0, "push": push["push"], "step": step})["granted"]
    step_done(m, 0, push, step, **receipt_args)


def request(m):
    return m.handle({"op": "push_request", "cluster": 0, "tokens": 1024, "base_version": 0, "loss": 1.0})


@pytest.mark.parametrize("how", ["restarted", "missed heartbeats"])
def test_a_push_whose_delivered_layers_died_with_their_slave_is_skipped(master, how):
    # CI once hung here: slave 1 was restarted after it had acknowledged layers of a
    # push still sending, the layers were forgotten, and `push_prepare` answered "wait"
    # for ever
    push = request(master)
    first = master.plan.slave_of_layer[push["steps"][0][0]]
    deliver_step(master, push, 0)
    if how == "restarted":
        master.handle({"op": "slave_poll", "slave": first, "pid": 999, "version": 0})
    else:
        master.slaves[first]["beat"] -= 10.0
        master.tick(stalled=False)
    assert master.handle({"op": "push_grant", "cluster": 0, "push": push["push"], "step": 1}) == {"abort": True}
    assert master.handle({"op": "push_prepare", "cluster": 0, "push": push["push"]}) == {"vote": "abort"}
    assert master.handle({"op": "push_status", "cluster": 0, "push": push["push"]})["state"] == "skipped"


def test_a_slave_restart_before_it_received_anything_of_a_push_leaves_the_push_alone(master):
    push = request(master)
    later = master.plan.slave_of_layer[push["steps"][1][0]]
    deliver_step(master, push, 0)
    master.handle({"op": "slave_poll", "slave": later, "pid": 999, "version": 0})
    deliver_step(master, push, 1, pid=999)  # received by the new process
    assert master.handle({"op": "push_prepare", "cluster": 0, "push": push["push"]}) == {"vote": "yes"}
    assert master.handle({"op": "push_commit", "cluster": 0, "push": push["push"]}) == {"committed": True}


def test_a_master_restarted_after_telling_the_slaves_to_shut_down_waits_for_nobody(master):
    # the fault matrix's trial 29: the master was killed after the run ended and the
    # slaves had left; restarted, it waited for ever for slaves to report the last version
    dep = master.dep
    master.finished = True
    master.handle({"op": "bye", "cluster": 0})
    master.handle({"op": "slave_poll", "slave": 1, "pid": 101, "version": -1})
    assert not master.drained()  # slave 1 does not hold the last version yet
    for s in range(dep.plan.num_slaves):
        reply = master.handle({"op": "slave_poll", "slave": s, "pid": 100 + s, "version": master.version})
    assert reply["shutdown"] and master.drained()
    restarted = Master(dep, Authenticator(SECRET))
    assert restarted.epoch == 1 and not restarted.slaves and restarted.drained()


def test_a_master_restarted_before_the_shutdown_still_waits_for_the_slaves(master):
    dep = master.dep
    master.finished = True
    master.handle({"op": "bye", "cluster": 0})
    master.handle({"op": "slave_poll", "slave": 1, "pid": 101, "version": -1})
    master._save()
    restarted = Master(dep, Authenticator(SECRET))
    assert not restarted.drained()  # no slave has reported the last version to it yet
    for s in range(dep.plan.num_slaves):
        restarted.handle({"op": "slave_poll", "slave": s, "pid": 100 + s, "version": restarted.version})
    assert restarted.drained()


class Clock:
    """The master's time.monotonic, set by the test."""

    def __init__(self, monkeypatch):
        import stagec.runtime.ps.master as master_module

        self.now = 1000.0
        monkeypatch.setattr(master_module.time, "monotonic", lambda: self.now)


def commit_push(m, cluster, tokens=1024):
    push = m.handle({"op": "push_request", "cluster": cluster, "tokens": tokens, "base_version": 0, "loss": 1.0})
    for step in range(len(push["steps"])):
        assert m.handle({"op": "push_grant", "cluster": cluster, "push": push["push"], "step": step})["granted"]
        step_done(m, cluster, push, step)
    assert m.handle({"op": "push_prepare", "cluster": cluster, "push": push["push"]}) == {"vote": "yes"}
    assert m.handle({"op": "push_commit", "cluster": cluster, "push": push["push"]}) == {"committed": True}


def trained(m, clock, cluster, seconds):
    """`cluster` takes a chunk, trains `seconds`, asks to push, and gives the push up:
    the master has seen one chunk's training time of it."""
    m.handle({"op": "chunk", "cluster": cluster})
    clock.now += seconds
    push = m.handle({"op": "push_request", "cluster": cluster, "tokens": 1024, "base_version": 0, "loss": 1.0})
    m.handle({"op": "push_failed", "cluster": cluster, "push": push["push"]})


@pytest.mark.parametrize("started, closes_early", [
    # the window (grace 0.2 s) opens at t = 1.0 and would end at 1.2; cluster 1 trains
    # a chunk in 1.0 s (0.9 s at the 10% jitter allowed): taken at 0.5 it arrives at
    # 1.4 at the earliest, too late - the window closes at once; taken at 0.25 it may
    # arrive at 1.15, in time - the window waits its 0.2 s
    (0.5, True),
    (0.25, False),
])
def test_the_window_closes_once_no_cluster_can_join_it(master, monkeypatch, started, closes_early):
    clock = Clock(monkeypatch)
    master.handle({"op": "hello", "cluster": 1})
    t0 = clock.now
    trained(master, clock, 1, 1.0)
    trained(master, clock, 0, 1.0)
    clock.now = t0 + 10.0  # a later chunk: cluster 1 takes it, cluster 0 trains and commits
    master.handle({"op": "chunk", "cluster": 0})
    clock.now += started
    master.handle({"op": "chunk", "cluster": 1})
    clock.now += 1.0 - started
    commit_push(master, 0)
    if closes_early:  # at the commit itself: the round starts without waiting for a tick
        assert master.round is not None and master.round.pushes and not master.window
        return
    assert master.round is None and master.window
    clock.now += 0.01
    assert not master._window_closed(clock.now)
    clock.now += 0.2
    assert master._window_closed(clock.now)  # the grace window is over


def test_the_window_waits_for_a_cluster_it_cannot_predict_or_that_is_pushing(master, monkeypatch):
    clock = Clock(monkeypatch)
    master.handle({"op": "hello", "cluster": 1})
    # cluster 1 has never pushed: how long it trains is unknown
    master.handle({"op": "chunk", "cluster": 0})
    master.handle({"op": "chunk", "cluster": 1})
    clock.now += 1.0
    commit_push(master, 0)
    clock.now += 0.01
    assert not master._window_closed(clock.now)
    clock.now += 0.2
    assert master._window_closed(clock.now)
    # cluster 1 known (1 s a chunk) but in the middle of a push: it may commit any moment
    master.window.clear()
    trained(master, clock, 1, 1.0)
    master.handle({"op": "chunk", "cluster": 0})
    master.handle({"op": "chunk", "cluster": 1})
    clock.now += 1.0
    master.handle({"op": "push_request", "cluster": 1, "tokens": 1024, "base_version": 0, "loss": 1.0})
    commit_push(master, 0)
    clock.now += 0.01
    assert not master._window_closed(clock.now)


def test_a_round_takes_each_step_at_the_message_that_completes_it(master):
    """No tick between the messages: the window closes at the commit (no other cluster
    is live), and each slave phase ends at the last slave's message."""
    commit_push(master, 0)
    r = master.round
    assert r is not None and r.phase == "norms"
    slaves = range(master.plan.num_slaves)
    for s in slaves:
        master.handle({"op": "slave_norms", "slave": s, "round": r.id, "gram": [[1.0]]})
    assert r.phase == "prepare" and r.version == master.version + 1
    for s in slaves:
        master.handle({"op": "slave_prepared", "slave": s, "round": r.id, "ok": True})
    assert r.phase == "commit" and master.version == r.version
    for s in slaves:
        master.handle({"op": "slave_committed", "slave": s, "version": r.version})
    assert master.round is None
    assert master.handle({"op": "push_status", "cluster": 0, "push": r.pushes[0]})["state"] == "done"


@pytest.mark.parametrize("late_s, push_s, closes_early", [
    # the window (grace 0.2 s) opens at t = 1.0; cluster 1 has trained two chunks of
    # 1.0 s and 1.01 s (jitter 0.01 s, margin 3 x 0.01 = 0.03 s) and pushes in `push_s`.
    # Due at 1.25 (0.05 s after the window's end): the 10% rule of a cluster seen once
    # would wait for it (1.25 - 0.1 <= 1.2); its known jitter says it will not make it
    (0.05, 0.0, True),
    # due at 1.22, within the margin: it may still make it
    (0.02, 0.0, False),
    # its training ends at 1.15, in time, but its push takes 0.1 s: it arrives at 1.25
    (0.05, 0.1, True),
])
def test_the_window_predicts_a_cluster_from_its_jitter_and_its_push_time(master, monkeypatch, late_s, push_s,
                                                                        closes_early):
    clock = Clock(monkeypatch)
    master.handle({"op": "hello", "cluster": 1})
    for seconds in (1.0, 1.01):
        trained(master, clock, 1, seconds)
    assert master.arrivals.jitter_s[1] == pytest.approx(0.01)
    master.arrivals.push_s[1] = push_s
    master.handle({"op": "chunk", "cluster": 0})  # at 0; it commits at 1.0
    # cluster 1 takes its chunk so that it is due (training 1.01 s, then its push) at 1.2 + late_s
    taken = 1.0 + 0.2 + late_s - 1.01 - push_s
    clock.now += taken
    master.handle({"op": "chunk", "cluster": 1})
    clock.now += 1.0 - taken
    commit_push(master, 0)
    assert (master.round is not None) == closes_early


def test_a_push_time_is_measured_from_request_to_commit(master, monkeypatch):
    clock = Clock(monkeypatch)
    push = master.handle({"op": "push_request", "cluster": 0, "tokens": 1024, "base_version": 0, "loss": 1.0})
    clock.now += 0.25
    for step in range(len(push["steps"])):
        master.handle({"op": "push_grant", "cluster": 0, "push": push["push"], "step": step})
        step_done(master, 0, push, step)
    master.handle({"op": "push_prepare", "cluster": 0, "push": push["push"]})
    master.handle({"op": "push_commit", "cluster": 0, "push": push["push"]})
    assert master.arrivals.push_s[0] == pytest.approx(0.25)


def long_poll(master, body):
    """Run `body` with `wait_s` on a thread; (thread, {"reply", "seconds"})."""
    import threading
    import time

    out = {}

    def call():
        start = time.monotonic()
        out["reply"] = master.handle(body)
        out["seconds"] = time.monotonic() - start

    thread = threading.Thread(target=call)
    thread.start()
    return thread, out


@pytest.mark.parametrize("bad", ["old process", "forged", "another push", "another slave", "not a receipt"])
def test_a_push_with_a_receipt_nobody_can_vouch_for_is_skipped(master, bad):
    push = request(master)
    deliver_step(master, push, 0)
    layer = push["steps"][1][0]
    good = receipt(master, push["push"], layer)
    wrong = {
        "old process": receipt(master, push["push"], layer, pid=4242),  # the slave restarted since
        "forged": receipt(master, push["push"], layer, secret=b"not the secret"),
        "another push": receipt(master, "0-999", layer),
        "another slave": [good[0].replace('"slave":%d' % master.plan.slave_of_layer[layer], '"slave":7'), good[1]],
        "not a receipt": ["{}", "zz"],
    }[bad]
    assert master.handle({"op": "push_grant", "cluster": 0, "push": push["push"], "step": 1})["granted"]
    master.handle({"op": "push_step_done", "cluster": 0, "push": push["push"], "step": 1,
                   "receipts": [wrong, *(receipt(master, push["push"], l) for l in push["steps"][1][1:])]})
    assert master.handle({"op": "push_prepare", "cluster": 0, "push": push["push"]}) == {"vote": "abort"}
    assert master.handle({"op": "push_status", "cluster": 0, "push": push["push"]})["state"] == "skipped"


def test_a_push_is_prepared_only_with_a_receipt_for_every_layer(master):
    push = request(master)
    deliver_step(master, push, 0)
    assert master.handle({"op": "push_grant", "cluster": 0, "push": push["push"], "step": 1})["granted"]
    last = push["steps"][1][-1]
    master.handle({"op": "push_step_done", "cluster": 0, "push": push["push"], "step": 1,
                   "receipts": [receipt(master, push["push"], l) for l in push["steps"][1] if l != last]})
    assert master.handle({"op": "push_prepare", "cluster": 0, "push": push["push"]}) == {"vote": "wait"}
    master.handle({"op": "push_step_done", "cluster": 0, "push": push["push"], "step": 1,
                   "receipts": [receipt(master, push["push"], last)]})
    assert master.handle({"op": "push_prepare", "cluster": 0, "push": push["push"]}) == {"vote": "yes"}


@pytest.fixture
def patient_master(tmp_path):
    """A master whose long polls may last 1 s (heartbeat 2 s): long enough to tell an
    answer to a change from an answer at the timeout."""
    return started_master(tmp_path, heartbeat_s=2.0)


def test_a_slave_long_poll_is_answered_when_the_round_starts_not_at_its_timeout(patient_master):
    import time

    master = patient_master
    assert master.max_wait_s == 1.0
    wait = master.max_wait_s
    # nothing happens: the poll is answered after `wait_s` (a shorter one here), without
    # an instruction
    start = time.monotonic()
    idle = master.handle({"op": "slave_poll", "slave": 0, "pid": 100, "version": 0, "wait_s": 0.2})
    assert "instruction" not in idle and time.monotonic() - start >= 0.2
    # a push commits while slave 0 waits: the window closes (no other cluster) and the
    # round's first instruction answers the poll at once
    thread, out = long_poll(master, {"op": "slave_poll", "slave": 0, "pid": 100, "version": 0, "wait_s": wait})
    time.sleep(0.05)
    assert thread.is_alive()
    commit_push(master, 0)
    thread.join(timeout=5)
    assert out["reply"]["instruction"]["op"] == "norms"
    assert 0.05 <= out["seconds"] < wait * 0.5
    # a slave that has done its part of the phase waits again, for the next phase
    r = master.round
    master.handle({"op": "slave_norms", "slave": 0, "round": r.id, "gram": [[1.0]]})
    thread, out = long_poll(master, {"op": "slave_poll", "slave": 0, "pid": 100, "version": 0, "wait_s": wait})
    time.sleep(0.05)
    assert thread.is_alive()
    master.handle({"op": "slave_norms", "slave": 1, "round": r.id, "gram": [[1.0]]})
    thread.join(timeout=5)
    assert out["reply"]["instruction"]["op"] == "prepare" and out["seconds"] < wait * 0.5


def test_a_cluster_waiting_for_its_round_hears_of_its_end_at_once(patient_master):
    import time

    master = patient_master
    commit_push(master, 0)
    r = master.round
    thread, out = long_poll(master, {"op": "push_status", "cluster": 0, "push": r.pushes[0], "wait_s": 10.0})
    for phase, op, extra in (("norms", "slave_norms", {"gram": [[1.0]]}), ("prepare", "slave_prepared", {"ok": True})):
        for s in range(master.plan.num_slaves):
            master.handle({"op": op, "slave": s, "round": r.id, **extra})
    time.sleep(0.05)
    assert thread.is_alive()  # committed, but not every slave has switched to the new version
    for s in range(master.plan.num_slaves):
        master.handle({"op": "slave_committed", "slave": s, "version": r.version})
    thread.join(timeout=5)
    assert out["reply"]["state"] == "done" and out["seconds"] < master.max_wait_s
    # `wait_s` is capped at half a heartbeat: a slave's poll is its heartbeat
    assert master.max_wait_s <= master.plan.heartbeat_s / 2


def test_a_tick_that_changes_the_round_wakes_the_long_polls(patient_master):
    import time

    master = patient_master
    commit_push(master, 0)
    r = master.round
    thread, out = long_poll(master, {"op": "push_status", "cluster": 0, "push": r.pushes[0],
                                     "wait_s": master.max_wait_s})
    time.sleep(0.05)
    r.started -= 10 * master.dep.round_timeout_s  # the round times out at the next tick
    master.tick(stalled=False)
    thread.join(timeout=5)
    assert out["reply"]["state"] == "skipped" and out["seconds"] < master.max_wait_s * 0.8


@pytest.mark.parametrize("gram, tokens, why", [
    ([[float("nan")]], 1024, "not finite"),
    ([[float("inf")]], 1024, "not finite"),
    ([[1.0]], 0, "0 tokens"),
])
def test_an_unusable_push_is_left_out_and_the_master_goes_on(master, caplog, gram, tokens, why):
    """Old code: a NaN Gram made mu and sigma NaN and the push a participant; zero
    tokens divided 0 by 0 in the master's round (its tick thread then dies with it)."""
    state = master.penalty_state
    commit_push(master, 0, tokens=tokens)
    r = master.round
    for s in range(master.plan.num_slaves):
        master.handle({"op": "slave_norms", "slave": s, "round": r.id, "gram": gram})
    master.tick(stalled=False)
    assert master.round is None and master.version == 0 and master.penalty_state == state
    assert master.handle({"op": "push_status", "cluster": 0, "push": r.pushes[0]})["state"] == "excluded"
    assert why in master.log[-1]["rejected"]["0"]
    assert any("left out on every slave" in m and why in m for m in caplog.messages)
    # state.json stays strict JSON: a total that is not finite is null
    json.loads(master.state_path.read_text(), parse_constant=lambda name: pytest.fail(f"{name} in state.json"))
