"""The master PS: the control flow of di-ps.md §3.2 on gRPC, the §4.1 decision, and the
master's half of the §4 resilience.

Control flow for one push (clusters call the master; slaves poll it):

1. `push_request` — a cluster that finished H inner steps asks to push; it gets a push
   id and its steps of the plan's push schedule (Fig. 5). Before each step it asks
   `push_grant`, granted only when none of the step's slaves is receiving from another
   push ("slaves not currently receiving"); `push_step_done` frees them.
2. Two-stage commit: each slave acknowledges every layer it received and checked
   with a receipt (its acknowledgement's header and MAC) that the cluster hands on in
   `push_step_done`; `push_prepare` votes yes once the master holds receipts for every
   layer of the push from live slave processes; `push_commit` then records the
   cluster and its tokens.
3-4. The first commit opens the grace window; pushes committed before it closes join
   the round (`dips`). It closes early once no live cluster can still join it: every
   cluster not in it is training, not pushing, and started its chunk so recently that
   its last chunk's training time (from `chunk` to `push_request`) and its last push's
   time (from `push_request` to `push_commit`), less a margin for its jitter, would
   bring it after the window's end (§3.2: the window is there for clusters that finish
   at about the same time; waiting for none costs the round's clusters the whole
   window).
   `async` closes the window at once; `sync` when every live cluster is in it.
5. The round: slaves send Gram matrices of their pseudo-gradients (`slave_norms`), the
   master decides participants, weights and the clip factor (`penalty.decide`), slaves
   prepare the outer step into a pending snapshot (`slave_prepared`), the master writes
   the committed version to its log and tells them to commit. A slave that votes no,
   misses a push's layer, dies or times out before the decision aborts the round: every
   participant skips it and no parameter changes.
6. Once every slave has committed, the round's clusters see `done` (or `excluded`) with
   the new version in `push_status` and pull.

Slaves learn what to do from the answer to their `slave_poll` (their heartbeat), which
is computed from the round's state, so a lost or repeated answer is harmless.

Resilience (§4): clusters and slaves that miss `missed_heartbeats` beats are dropped; a
dropped slave's process is killed so its supervisor restarts it from its latest
snapshot. The master's own state — epoch, committed version, the log of committed
versions, the penalty statistics, the tokens consumed — is one JSON file written before
a commit is announced; a restarted master reads it, starts a new epoch, and every push
of the old epoch is skipped. After the master itself has been stopped (SIGSTOP), it
grants everyone a fresh heartbeat deadline instead of dropping them all.
"""

from __future__ import annotations

import argparse
import faulthandler
import hmac
import json
import logging
import math
import os
import signal
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from stagec.runtime.ps.arrivals import Arrivals
from stagec.runtime.ps.auth import Authenticator
from stagec.runtime.ps.control import long_poll_s, push_settled, serve
from stagec.runtime.ps.deployment import Deployment, secret_from_env, write_json_atomic
from stagec.runtime.ps.penalty import PenaltyState, decide

__all__ = ["Master"]

log = logging.getLogger("stagec.ps.master")


@dataclass
class Push:
    id: str
    cluster: int
    tokens: int
    base_version: int
    loss: float
    steps: list[list[int]]
    state: str = "sending"  # sending, prepared, committed, in_round, done, excluded, skipped
    received: set = field(default_factory=set)  # (slave, layer)
    version: int = -1
    requested: float = 0.0  # time.monotonic() of its push_request


@dataclass
class Round:
    id: int
    pushes: list[str]
    phase: str = "norms"  # norms, prepare, commit
    started: float = field(default_factory=time.monotonic)
    grams: dict = field(default_factory=dict)
    prepared: set = field(default_factory=set)
    committed: set = field(default_factory=set)
    decision: dict | None = None
    version: int = -1


# the messages after which the window may close or the round take its next step
_ADVANCING = frozenset({"push_commit", "slave_norms", "slave_prepared", "slave_committed"})


# the questions a client may ask as a long poll (`wait_s` in the request): the master
# answers at once if the answer is one of these, else when the state changes to one, or
# after `wait_s` at the latest. A slave between rounds and a cluster waiting for its
# round then hear of the next step when it happens, not at their next poll (slaves
# polling every 20 ms between rounds made a round wait 10 ms on average to begin).
_READY = {
    "slave_poll": lambda reply: "instruction" in reply or bool(reply.get("shutdown")),
    "push_status": push_settled,
    "push_grant": lambda reply: bool(reply.get("granted") or reply.get("abort")),
    "push_prepare": lambda reply: reply["vote"] != "wait",
}


class Master:
    def __init__(self, dep: Deployment, auth: Authenticator):
        self.dep, self.plan, self.auth = dep, dep.plan, auth
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)  # long polls wait on it
        self.max_wait_s = long_poll_s(self.plan)
        self.state_path = dep.path("master", "state.json")
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        if self.state_path.exists():
            saved = json.loads(self.state_path.read_text())
            self.epoch = saved["epoch"] + 1
            self.version = saved["version"]
            self.log = saved["log"]
            self.penalty_state = PenaltyState.from_json(saved["penalty"])
            self.tokens = saved["tokens"]
            self.next_chunk = saved["next_chunk"]
            self.finished = saved["finished"]
            self.next_round = saved["next_round"]
            self.first_chunk_time = saved.get("first_chunk_time")
            self.told_shutdown = saved.get("told_shutdown", False)
            log.info("restarted from state: epoch %d, version %d", self.epoch, self.version)
        else:
            self.epoch, self.version, self.log = 0, 0, []
            self.penalty_state = PenaltyState()
            self.tokens, self.next_chunk, self.finished, self.next_round = 0, 0, False, 0
            self.first_chunk_time = None
            self.told_shutdown = False
        self.pushes: dict[str, Push] = {}
        self.push_counter = 0
        self.receiving: dict[int, str] = {}
        self.clusters: dict[int, float] = {}
        self.slaves: dict[int, dict] = {}
        self.window: list[str] = []
        self.window_opened = 0.0
        self.arrivals = Arrivals()  # whether a cluster can still join an open window
        self.round: Round | None = None
        self.losses: dict[int, float] = {}
        self.bye: set[int] = set()
        self.seen: set[int] = set()
        self.started = time.monotonic()
        self.status_written = 0.0
        self._save()

    # -- persistence -------------------------------------------------------------------

    def _save(self) -> None:
        write_json_atomic(self.state_path, {
            "epoch": self.epoch, "version": self.version, "log": self.log, "penalty": self.penalty_state.to_json(),
            "tokens": self.tokens, "next_chunk": self.next_chunk, "finished": self.finished,
            "next_round": self.next_round, "first_chunk_time": self.first_chunk_time,
            "told_shutdown": self.told_shutdown})

    def _status(self) -> None:
        write_json_atomic(self.dep.path("status.json"), {
            "epoch": self.epoch, "version": self.version, "tokens": self.tokens, "total_tokens": self.dep.total_tokens,
            "window": sorted({self.pushes[p].cluster for p in self.window if p in self.pushes}),
            "round": None if self.round is None else self.round.phase,
            "clusters": sorted(self.clusters), "slaves": sorted(self.slaves), "losses": self.losses,
            "receiving": {str(s): p for s, p in self.receiving.items()},
            "finished": self.finished, "time": time.time()})

    # -- the control-flow handlers ---------------------------------------------------------

    def handle(self, body: dict) -> dict:
        op = body.get("op")
        handler = getattr(self, f"op_{op}", None)
        if handler is None:
            return {"error": f"unknown op {op!r}"}
        ready = _READY.get(op)
        wait = min(float(body.get("wait_s") or 0.0), self.max_wait_s) if ready else 0.0
        with self.lock:
            deadline = time.monotonic() + wait
            while True:
                reply = handler(body)
                if op in _ADVANCING:
                    self._progress()
                answered = ready is None or ready(reply)
                if answered:
                    # what may have changed wakes the long polls (a poll that is still
                    # waiting changed nothing another one waits for: no wake-up loop)
                    self.changed.notify_all()
                left = deadline - time.monotonic()
                if answered or left <= 0:
                    return reply
                self.changed.wait(left)

    def _waited_for(self) -> tuple:
        """What the long polls' answers depend on that a tick can change."""
        r = self.round
        return (None if r is None else (r.id, r.phase), len(self.window), self.version, self.finished,
                tuple(self.clusters), tuple(self.slaves), tuple(self.receiving.items()), self.told_shutdown)

    def _beat_cluster(self, cluster: int) -> None:
        if cluster not in self.clusters:
            log.info("cluster %d joined", cluster)
        if not self.seen:
            self.started = time.monotonic()  # sync waits for late starters from here
        self.seen.add(cluster)
        self.clusters[cluster] = time.monotonic()

    def op_hello(self, b: dict) -> dict:
        self._beat_cluster(int(b["cluster"]))
        return {"epoch": self.epoch, "version": self.version, "finished": self.finished}

    def op_heartbeat(self, b: dict) -> dict:
        self._beat_cluster(int(b["cluster"]))
        return {"epoch": self.epoch, "version": self.version, "finished": self.finished}

    def op_bye(self, b: dict) -> dict:
        self.bye.add(int(b["cluster"]))
        self.clusters.pop(int(b["cluster"]), None)
        return {"ok": True}

    def op_chunk(self, b: dict) -> dict:
        self._beat_cluster(int(b["cluster"]))
        self.arrivals.took_chunk(int(b["cluster"]), time.monotonic())
        chunk = self.next_chunk
        self.next_chunk += 1
        if self.first_chunk_time is None:
            self.first_chunk_time = time.time()  # training starts: benchmarks time from here
        return {"chunk": chunk, "finished": self.finished}

    def op_push_request(self, b: dict) -> dict:
        cluster = int(b["cluster"])
        self._beat_cluster(cluster)
        self.arrivals.requested_push(cluster, time.monotonic())
        if self.finished:
            return {"finished": True}
        self.losses[cluster] = float(b.get("loss", float("nan")))
        steps = [[t.layer for t in step if t.cluster == cluster % len(self.plan.clusters)]
                 for step in self.plan.push_schedule]
        steps = [s for s in steps if s]
        covered = sorted(l for s in steps for l in s)
        if covered != list(range(len(self.plan.layers))):
            # a schedule that does not move every layer of this cluster exactly once
            steps = [[l] for l in range(len(self.plan.layers))]
        push_id = f"{self.epoch}-{self.push_counter}"
        self.push_counter += 1
        self.pushes[push_id] = Push(push_id, cluster, int(b["tokens"]), int(b["base_version"]),
                                    self.losses[cluster], steps, requested=time.monotonic())
        return {"push": push_id, "steps": steps, "epoch": self.epoch}

    def _push(self, b: dict) -> Push | None:
        return self.pushes.get(str(b.get("push")))

    def op_push_grant(self, b: dict) -> dict:
        push = self._push(b)
        if push is None or push.state != "sending":
            return {"abort": True}
        slaves = {self.plan.slave_of_layer[l] for l in push.steps[int(b["step"])]}
        if any(self.receiving.get(s, push.id) != push.id for s in slaves) or any(
                s not in self.slaves for s in slaves):
            return {"granted": False}
        for s in slaves:
            self.receiving[s] = push.id
        return {"granted": True}

    def _release(self, push_id: str) -> None:
        for s in [s for s, p in self.receiving.items() if p == push_id]:
            del self.receiving[s]

    def op_push_step_done(self, b: dict) -> dict:
        """A step's layers are sent; `receipts` are their slaves' acknowledgements."""
        push = self._push(b)
        if push is not None:
            self._release(push.id)
            for receipt in b.get("receipts") or []:
                self._receive(push, receipt)
        return {"ok": True}

    def _receive(self, push: Push, receipt: object) -> None:
        """Record a slave's receipt for a layer of `push`: the header of its
        acknowledgement and that header's MAC, which only a holder of the secret can
        make. A receipt from a slave process that has since been replaced names a layer
        that is gone, and a receipt that does not verify one nobody can vouch for: either
        way the push can never be prepared, so it is skipped."""
        why = None
        try:
            head, mac = receipt
            if not hmac.compare_digest(self.auth.mac([head.encode()]), bytes.fromhex(mac)):
                raise ValueError("its MAC does not verify")
            ack = json.loads(head)
            slave, layer = int(ack["slave"]), int(ack["layer"])
            if not ack.get("ok") or ack.get("push") != push.id or not 0 <= layer < len(self.plan.layers) or \
                    self.plan.slave_of_layer[layer] != slave:
                raise ValueError(f"it does not acknowledge a layer of push {push.id} at its slave")
        except (TypeError, ValueError, KeyError, AttributeError) as error:
            why = f"a receipt that is not valid ({error})"
        else:
            if self.slaves.get(slave, {}).get("pid") != ack.get("pid"):
                why = f"slave {slave} has restarted since it received layer {layer}"
            else:
                push.received.add((slave, layer))
        if why is not None and push.state in ("sending", "prepared"):
            log.warning("push %s of cluster %d: %s: skipped", push.id, push.cluster, why)
            push.state = "skipped"

    def op_push_failed(self, b: dict) -> dict:
        push = self._push(b)
        if push is not None and push.state in ("sending", "prepared"):
            self._release(push.id)
            push.state = "skipped"
        return {"ok": True}

    def op_push_prepare(self, b: dict) -> dict:
        push = self._push(b)
        if push is None or push.state not in ("sending", "prepared"):
            return {"vote": "abort"}
        needed = {(self.plan.slave_of_layer[l], l) for l in range(len(self.plan.layers))}
        if not needed <= push.received:
            return {"vote": "wait"}
        push.state = "prepared"
        return {"vote": "yes"}

    def op_push_commit(self, b: dict) -> dict:
        push = self._push(b)
        if push is None or push.state != "prepared":
            return {"committed": False}
        push.state = "committed"
        self.arrivals.committed_push(push.cluster, time.monotonic() - push.requested)
        self._release(push.id)
        if not self.window:
            self.window_opened = time.monotonic()
        self.window.append(push.id)
        log.info("push %s of cluster %d committed (%d tokens); window has %d", push.id, push.cluster, push.tokens,
                 len(self.window))
        return {"committed": True}

    def op_push_status(self, b: dict) -> dict:
        self._beat_cluster(int(b["cluster"]))
        push = self._push(b)
        if push is None:
            return {"state": "skipped", "version": self.version, "finished": self.finished}
        return {"state": push.state, "version": push.version, "finished": self.finished}

    # -- slaves ----------------------------------------------------------------------------

    def op_slave_poll(self, b: dict) -> dict:
        slave = int(b["slave"])
        info = self.slaves.setdefault(slave, {})
        if not info:
            log.info("slave %d is up (version %s)", slave, b.get("version"))
        if info.get("pid") not in (None, int(b.get("pid", 0))):
            # a new process: the layers the old one received are gone
            log.info("slave %d restarted (pid %s -> %s)", slave, info.get("pid"), b.get("pid"))
            self._forget_layers_on(slave)
        info.update(beat=time.monotonic(), pid=int(b.get("pid", 0)), version=int(b.get("version", -1)))
        shutdown = self.drained()
        if shutdown and not self.told_shutdown:
            # written before any slave hears it: slaves that heard it leave, and a master
            # restarted after that must not wait for them to report the last version
            self.told_shutdown = True
            self._save()
        reply = {"epoch": self.epoch, "version": self.version, "finished": self.finished,
                 "shutdown": shutdown,
                 "live_pushes": [p.id for p in self.pushes.values() if p.state in
                                 ("sending", "prepared", "committed", "in_round")]}
        r = self.round
        if r is not None:
            if r.phase == "norms" and slave not in r.grams:
                reply["instruction"] = {"op": "norms", "round": r.id, "pushes": r.pushes, "version": self.version}
            elif r.phase == "prepare" and slave not in r.prepared:
                d = r.decision
                reply["instruction"] = {"op": "prepare", "round": r.id, "pushes": r.pushes,
                                        "participants": [r.pushes[j] for j in d["participants"]],
                                        "weights": d["weights"], "scale": d["scale"], "version": r.version,
                                        "rejected": {r.pushes[int(j)]: why for j, why in d["rejected"].items()}}
            elif r.phase == "commit" and slave not in r.committed:
                reply["instruction"] = {"op": "commit", "round": r.id, "version": r.version}
        return reply

    def _forget_layers_on(self, slave: int) -> None:
        """`slave`'s process is gone, and with it every layer it had received: a push
        not yet committed that had delivered one can never be prepared, so it is
        skipped (its cluster learns so at its next grant or prepare and goes on from its
        local parameters) instead of waiting for a layer nobody will send again. Pushes
        already committed are the round's business (the slave reports the layer missing
        and the round aborts)."""
        for push in self.pushes.values():
            lost = {(sl, l) for sl, l in push.received if sl == slave}
            push.received -= lost
            if lost and push.state in ("sending", "prepared"):
                log.warning("push %s of cluster %d lost %d layers with slave %d: skipped", push.id, push.cluster,
                            len(lost), slave)
                push.state = "skipped"  # its slaves stay held until its step in flight ends

    def drained(self) -> bool:
        """Training is over and every slave holds the last committed version (a master
        restarted after the last commit waits for slaves that must still finish it, and
        one restarted after the slaves were told to shut down waits for nobody)."""
        if self.told_shutdown:
            return True
        return (self.finished and not self.clusters and self.round is None
                and all(self.slaves.get(s, {}).get("version") == self.version for s in range(self.plan.num_slaves)))

    def op_slave_norms(self, b: dict) -> dict:
        r = self.round
        if r is None or r.id != int(b["round"]) or r.phase != "norms":
            return {"ok": False}
        if b.get("missing"):
            self._abort(f"slave {b['slave']} lacks a layer of the round's pushes")
            return {"ok": True}
        r.grams[int(b["slave"])] = np.asarray(b["gram"], dtype=np.float64)
        return {"ok": True}

    def op_slave_prepared(self, b: dict) -> dict:
        r = self.round
        if r is None or r.id != int(b["round"]) or r.phase != "prepare":
            return {"ok": False}
        if not b.get("ok"):
            self._abort(f"slave {b['slave']} could not prepare version {r.version}")
        else:
            r.prepared.add(int(b["slave"]))
        return {"ok": True}

    def op_slave_committed(self, b: dict) -> dict:
        r = self.round
        if r is not None and r.phase == "commit" and int(b["version"]) == r.version:
            r.committed.add(int(b["slave"]))
        return {"ok": True}

    def op_status(self, b: dict) -> dict:
        return {"epoch": self.epoch, "version": self.version, "log": self.log, "finished": self.finished,
                "tokens": self.tokens}

    # -- the round -------------------------------------------------------------------------

    def _abort(self, why: str) -> None:
        r = self.round
        log.warning("round %d aborted: %s; every participant skips it", r.id, why)
        self.log.append({"round": r.id, "aborted": True, "pushes": r.pushes, "version": self.version, "why": why})
        for p in r.pushes:
            self.pushes[p].state = "skipped"
        self.round = None
        self._save()

    def _window_closed(self, now: float) -> bool:
        if not self.window or self.round is not None or self.finished:
            return False
        if self.dep.mode == "async":
            return True
        if self.dep.mode == "sync":
            # every live cluster, and at start-up every cluster of the plan (one that is
            # slow to start is waited for up to `round_timeout_s` after the first hello)
            waiting = {self.pushes[p].cluster for p in self.window}
            starting = now - self.started < self.dep.round_timeout_s
            expected = set(range(len(self.plan.clusters))) - self.seen if starting else set()
            return set(self.clusters) | expected <= waiting
        return now - self.window_opened >= self.plan.grace_window_s or not self._can_join()

    def _can_join(self) -> bool:
        """Whether a live cluster not in the window may still commit a push into it
        before it closes (`arrivals.Arrivals`); one that is pushing counts as yes."""
        end = self.window_opened + self.plan.grace_window_s
        joined = {self.pushes[p].cluster for p in self.window}
        pushing = {p.cluster for p in self.pushes.values() if p.state in ("sending", "prepared")}
        for cluster in self.clusters:
            if cluster in joined:
                continue
            if cluster in pushing or self.arrivals.may_arrive_by(cluster, end):
                return True
        return False

    def _start_round(self) -> None:
        pushes = self.window[:] if self.dep.mode != "async" else self.window[:1]
        self.window = self.window[len(pushes):]
        if self.window:
            self.window_opened = time.monotonic()
        for p in pushes:
            self.pushes[p].state = "in_round"
        self.round = Round(self.next_round, pushes)
        self.next_round += 1
        log.info("round %d: pushes %s", self.round.id, pushes)

    def _progress(self) -> None:
        """What a message that completes a step lets happen now, not at the next tick:
        the window's close and the round's next phase (the tick alone times out rounds
        and drops the silent, after noticing whether the master itself was stopped)."""
        if self.round is None and self._window_closed(time.monotonic()):
            self._start_round()
        if self.round is not None:
            self._advance(check_timeout=False)

    def _advance(self, check_timeout: bool = True) -> None:
        r = self.round
        slaves = set(range(self.plan.num_slaves))
        if r.phase == "norms" and set(r.grams) >= slaves:
            pushes = [self.pushes[p] for p in r.pushes]
            d = decide([r.grams[s] for s in sorted(slaves)], [p.tokens for p in pushes], self.penalty_state,
                       self.dep.penalty)
            r.decision = {"participants": list(d.participants), "weights": list(d.weights), "scale": d.scale,
                          "excluded": list(d.excluded), "totals": [_json_number(d.totals[j]) for j in range(len(pushes))],
                          "scores": {str(j): s for j, s in d.scores.items()}, "state": d.state.to_json(),
                          "rejected": {str(j): why for j, why in d.rejected.items()}}
            for j, why in d.rejected.items():
                log.warning("round %d: push %s of cluster %d left out on every slave: %s", r.id, pushes[j].id,
                            pushes[j].cluster, why)
            if not d.participants:
                log.warning("round %d: every push excluded or left out", r.id)
                self.log.append({"round": r.id, "version": self.version, "pushes": r.pushes, "committed": False,
                                 "clusters": [p.cluster for p in pushes], "tokens": [p.tokens for p in pushes],
                                 **r.decision})
                self.penalty_state = PenaltyState.from_json(r.decision["state"])
                for p in pushes:
                    p.state, p.version = "excluded", self.version
                self.round = None
                self._save()
                return
            r.phase, r.version = "prepare", self.version + 1
        elif r.phase == "prepare" and r.prepared >= slaves:
            d = r.decision
            pushes = [self.pushes[p] for p in r.pushes]
            self.version = r.version
            self.penalty_state = PenaltyState.from_json(d["state"])
            self.tokens += sum(pushes[j].tokens for j in d["participants"])
            self.finished = self.tokens >= self.dep.total_tokens
            self.log.append({"round": r.id, "version": r.version, "committed": True, "time": time.time(),
                             "pushes": r.pushes,
                             "clusters": [p.cluster for p in pushes], "tokens": [p.tokens for p in pushes],
                             "base_versions": [p.base_version for p in pushes], **d})
            self._save()  # the commit point: written before any slave is told to commit
            r.phase = "commit"
            log.info("round %d: version %d committed (participants %s, excluded %s, scale %.4g)", r.id, r.version,
                     d["participants"], d["excluded"], d["scale"])
        elif r.phase == "commit" and r.committed >= slaves:
            d = r.decision
            for j, p in enumerate(r.pushes):
                push = self.pushes[p]
                push.state = "done" if j in d["participants"] else "excluded"
                push.version = r.version
            self.round = None
        if check_timeout and self.round is not None and r.phase != "commit" and \
                time.monotonic() - r.started > self.dep.round_timeout_s:
            self._abort(f"timed out in phase {r.phase}")

    def tick(self, stalled: bool) -> None:
        with self.lock:
            before = self._waited_for()
            self._tick(stalled)
            if self._waited_for() != before:
                self.changed.notify_all()

    def _tick(self, stalled: bool) -> None:
        now = time.monotonic()
        deadline = self.plan.heartbeat_s * self.plan.missed_heartbeats
        if stalled:  # we were stopped: nobody could reach us, so nobody is late
            log.warning("master was stalled; heartbeat deadlines restart")
            for c in self.clusters:
                self.clusters[c] = now
            for info in self.slaves.values():
                info["beat"] = now
            if self.round is not None:
                self.round.started = now
            self.window_opened = now if self.window else self.window_opened
        for c in [c for c, beat in self.clusters.items() if now - beat > deadline]:
            log.warning("cluster %d missed %d heartbeats: dropped", c, self.plan.missed_heartbeats)
            del self.clusters[c]
            for p in self.pushes.values():
                if p.cluster == c and p.state in ("sending", "prepared"):
                    p.state = "skipped"
                    self._release(p.id)
        for s in [s for s, info in self.slaves.items() if now - info["beat"] > deadline and not self.finished]:
            info = self.slaves.pop(s)
            log.warning("slave %d missed %d heartbeats: restarting it", s, self.plan.missed_heartbeats)
            if info.get("pid") and not self.finished:
                _kill_slave(info["pid"])  # its supervisor restarts it from its latest snapshot
            self._forget_layers_on(s)
            if self.round is not None and self.round.phase in ("norms", "prepare"):
                self._abort(f"slave {s} was lost")
        if self.round is None and self._window_closed(now):
            self._start_round()
        if self.round is not None:
            self._advance()
        if now - self.status_written > 0.1:
            self._status()
            self.status_written = now


def _json_number(value: float) -> float | None:
    """A total for state.json: null where it is not finite (a push left out for it), as
    strict JSON readers (jq, browsers) refuse NaN and Infinity."""
    return value if math.isfinite(value) else None


def _kill_slave(pid: int) -> None:
    """SIGKILL a hung slave, after checking that `pid` still is a slave process (a pid
    from an old heartbeat may since have been given to another process)."""
    try:
        cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        return
    if b"stagec.runtime.ps.slave" in cmdline:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stagec.runtime.ps.master")
    parser.add_argument("deployment")
    args = parser.parse_args(argv)
    dep = Deployment.load(args.deployment)
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID` prints every thread's stack to stderr
    logging.basicConfig(filename=dep.path("logs", "master.log"), level=logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    master = Master(dep, Authenticator(secret_from_env()))
    # every slave and cluster may hold a thread in a long poll; the rest serve the others
    server = serve(dep.master_address, master.auth, master.handle,
                   workers=16 + len(dep.plan.clusters) + dep.plan.num_slaves)
    log.info("master up on %s (epoch %d)", dep.master_address, master.epoch)
    last = time.monotonic()
    shutdown_since = None
    while True:
        time.sleep(0.005)
        now = time.monotonic()
        master.tick(stalled=now - last > max(0.5, master.plan.heartbeat_s))
        last = now
        with master.lock:
            done = master.drained()
        shutdown_since = (shutdown_since or now) if done else None
        if shutdown_since is not None and now - shutdown_since > 3 * master.plan.heartbeat_s:
            break  # slaves have seen `shutdown` in their polls by now
    server.stop(grace=0.5)
    log.info("master done: version %d, %d tokens", master.version, master.tokens)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
