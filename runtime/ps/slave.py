"""A slave PS: the data flow of di-ps.md §3.2 on ZeroMQ and the outer step for its layers.

Each layer the plan gives this slave is served from its own port by its own receiver
thread (a ZeroMQ ROUTER socket), with a consumer thread behind it (§3.2's
producer-consumer model): the receiver checks a message's header — its MAC, nonce,
layer, tensor names, dtypes, shapes, byte sizes and version — and hands the frames on;
the consumer checks the payload's Poly1305 tag in the same pass that copies it into a
buffer from the layer's memory pool (the buffer is the push's only if the tag matched),
reports the layer to the master, and passes the acknowledgement back to the receiver
over an inproc socket. Pulls are answered from frames sealed once per committed
version, so serving a pull costs no serialization and no MAC.

The control loop polls the master (that is its heartbeat) and follows its
instructions for the round: Gram matrices of the pseudo-gradients (`norms`), the outer
step into a pending snapshot (`prepare`), and the switch to it (`commit`). The live
parameters are replaced only at commit: a round aborted before it leaves them
bit-identical.

Snapshots (§4): after each committed update the slave's layers and momentum buffers are
written to `slave<i>/v<version>.npz`; those of the plan's `ps.snapshot every E keep K` are
kept, and the newest (`retained_snapshots`). A restarted slave
loads the snapshot of the master's committed version, promoting a pending one if the
master had committed it.
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import signal
import queue
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import zmq

from stagec.runtime.ps.auth import AuthError, Authenticator
from stagec.runtime.ps.control import ControlClient, long_poll_s
from stagec.runtime.ps.deployment import Deployment, secret_from_env
from stagec.runtime.ps.penalty import outer_step, pseudo_gradient, slave_gram, weighted_pseudo_gradient
from stagec.runtime.ps.wire import LayerSpec, WireError, check_tensors, encode_header, group_by_layer

__all__ = ["MemoryPool", "Slave", "load_snapshot", "retained_snapshots"]

log = logging.getLogger("stagec.ps.slave")


class MemoryPool:
    """Preallocated buffer sets for one layer's incoming pushes (§3.2): a push borrows
    one on arrival and returns it when its round is over."""

    def __init__(self, spec: LayerSpec, count: int):
        self.spec = spec
        self._free = [self._new() for _ in range(count)]
        self._lock = threading.Lock()
        self.allocated = count

    def _new(self) -> list[np.ndarray]:
        return [np.empty(s, dtype=d) for s, d in zip(self.spec.shapes, self.spec.dtypes)]

    def take(self) -> list[np.ndarray]:
        with self._lock:
            if self._free:
                return self._free.pop()
            self.allocated += 1
        return self._new()

    def give(self, buffers: list[np.ndarray]) -> None:
        with self._lock:
            self._free.append(buffers)


def snapshot_path(dep: Deployment, slave: int, version: int, pending: bool = False) -> Path:
    return dep.path(f"slave{slave}", f"v{version:06d}{'.pending' if pending else ''}.npz")


def save_snapshot(path: Path, params: dict, momentum: dict) -> None:
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **{f"p/{k}": v for k, v in params.items()}, **{f"m/{k}": v for k, v in momentum.items()})
    os.replace(tmp, path)


def retained_snapshots(versions: list[int], every: int, keep: int, override: int | None = None) -> set[int]:
    """The committed versions (ascending `versions`) whose snapshots a slave keeps: the
    plan's `ps.snapshot every E keep K` (§4: for evaluation and joining clusters), the
    newest K of the versions that are multiples of E (none for E = 0), and always the
    newest version, which a restarted slave resumes from: the two-stage commit writes a
    snapshot of every version, so no committed update is lost. `override` (tests and
    benches that read old versions) keeps the newest `override` versions instead."""
    if not versions:
        return set()
    if override is not None:
        return set(versions[-override:])
    periodic = [v for v in versions if every and v % every == 0][-keep:] if keep else []
    return {versions[-1], *periodic}


def load_snapshot(path: Path) -> tuple[dict, dict]:
    with np.load(path) as data:
        params = {k[2:]: data[k] for k in data.files if k.startswith("p/")}
        momentum = {k[2:]: data[k] for k in data.files if k.startswith("m/")}
    return params, momentum


class Slave:
    def __init__(self, dep: Deployment, index: int, auth: Authenticator):
        self.dep, self.plan, self.index, self.auth = dep, dep.plan, index, auth
        self.layers = [l for l, s in enumerate(self.plan.slave_of_layer) if s == index]
        self.client = ControlClient(dep.master_address, auth)
        self.lock = threading.RLock()
        dep.path(f"slave{index}").mkdir(parents=True, exist_ok=True)
        with np.load(dep.path("init.npz")) as init:
            groups = group_by_layer({k: init[k] for k in init.files}, self.plan.layers)
        self.specs = {l: LayerSpec.of(groups[l]) for l in self.layers}
        self.version, self.params, self.momentum = self._recover(groups)
        self.pools = {l: MemoryPool(self.specs[l], len(self.plan.clusters)) for l in self.layers}
        self.pushes: dict[str, dict[int, list[np.ndarray]]] = defaultdict(dict)
        self.deltas: dict[int, dict] = {}
        self.pending: dict | None = None
        self.refused: set[int] = set()
        self.reached = False
        self.epoch: int | None = None
        self.pull_frames: dict[int, tuple[int, str]] = {}
        self._serialize()
        self.stop = threading.Event()

    def _names(self, layer: int) -> tuple[str, ...]:
        return self.specs[layer].names

    def _recover(self, groups) -> tuple[int, dict, dict]:
        """The committed version (asked of the master) and its parameters."""
        while (reply := self.client.call("slave_poll", slave=self.index, pid=os.getpid(), version=-1)) is None:
            time.sleep(0.05)
        version = reply["version"]
        if version == 0:
            params = {n: a for l in self.layers for n, a in groups[l].items()}
            return 0, params, {n: np.zeros_like(a) for n, a in params.items()}
        path = snapshot_path(self.dep, self.index, version)
        pending = snapshot_path(self.dep, self.index, version, pending=True)
        if not path.exists() and pending.exists():
            os.replace(pending, path)  # the master committed it before we could
        params, momentum = load_snapshot(path)
        log.info("slave %d recovered version %d from %s", self.index, version, path)
        return version, params, momentum

    def _serialize(self) -> None:
        """Pull frames for the committed version, built once (the producer side)."""
        frames = {}
        for l in self.layers:
            payload = [memoryview(np.ascontiguousarray(self.params[n])).cast("B") for n in self._names(l)]
            frames[l] = (self.version, self.auth.seal_payload(payload), payload)
        self.pull_frames = frames

    # -- the data flow: a receiver and a consumer thread per layer --------------------------

    def serve_layer(self, layer: int, ctx: zmq.Context) -> None:
        sock = ctx.socket(zmq.ROUTER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.bind(self.dep.layer_address(layer))
        # the consumer's acknowledgements come back on an inproc socket, so the
        # receiver sends them as soon as they exist (a ZeroMQ socket has one owner thread)
        replies = ctx.socket(zmq.PULL)
        replies.bind(f"inproc://slave-{self.index}-layer-{layer}-replies")
        work: queue.Queue = queue.Queue()
        consumer = threading.Thread(target=self._consume, args=(layer, work, ctx), daemon=True)
        consumer.start()
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        poller.register(replies, zmq.POLLIN)
        spec = self.specs[layer]
        while not self.stop.is_set():
            ready = dict(poller.poll(100))
            if replies in ready:
                sock.send_multipart(replies.recv_multipart(copy=False), copy=False)
            if sock not in ready:
                continue
            msg = sock.recv_multipart(copy=False)
            ident, frames = msg[0].bytes, [f.buffer for f in msg[1:]]
            peer = f"layer {layer} peer {ident.hex()}"
            header = {}
            try:
                header, payload = self.auth.open_header(frames, peer)
                if header.get("layer") != layer:
                    raise WireError(f"message for layer {header.get('layer')} sent to layer {layer}")
                if header.get("kind") == "pull":
                    sock.send_multipart([ident, *self._pull_reply(layer, header)], copy=False)
                    continue
                if header.get("kind") != "push":
                    raise WireError(f"unknown data message kind {header.get('kind')!r}")
                check_tensors(header, payload, spec)
                if not isinstance(header.get("base_version"), int) or not 0 <= header["base_version"] <= self.version:
                    raise WireError(f"push based on version {header.get('base_version')}, but this slave is at "
                                    f"version {self.version}")
                work.put((ident, header, payload, peer))
            except (AuthError, WireError, ValueError) as error:
                log.warning("refused a data message on layer %d: %s", layer, error)
                # a request we could authenticate is named, so its sender knows the answer is its own
                refusal = {"ok": False, "error": str(error), **({"request": header["nonce"]} if header else {})}
                sock.send_multipart([ident, *self.auth.frames(refusal, [])])
        replies.close()
        sock.close()

    def _pull_reply(self, layer: int, header: dict) -> list:
        version, seal, payload = self.pull_frames[layer]
        if version < int(header.get("min_version", 0)):
            return self.auth.frames({"ok": False, "not_ready": True, "version": version,
                                     "request": header["nonce"]}, [])
        reply = {"ok": True, "layer": layer, "version": version, "request": header["nonce"],
                 "tensors": encode_header(self.specs[layer])}
        return self.auth.frames(reply, payload, sealed=seal)

    def _consume(self, layer: int, work: queue.Queue, ctx: zmq.Context) -> None:
        replies = ctx.socket(zmq.PUSH)
        replies.connect(f"inproc://slave-{self.index}-layer-{layer}-replies")
        pool = self.pools[layer]
        while not self.stop.is_set():
            try:
                ident, header, payload, peer = work.get(timeout=0.1)
            except queue.Empty:
                continue
            self._planted_kill()
            # the MAC is checked in the same pass that copies the payload into a pool
            # buffer; the buffer becomes the push's only once the MAC matched
            buffers = pool.take()
            try:
                self.auth.check_payload(header, payload, peer, into=buffers)
            except AuthError as error:
                pool.give(buffers)
                replies.send_multipart([ident, *self.auth.frames({"ok": False, "error": str(error),
                                                                  "request": header["nonce"]}, [])])
                continue
            push = str(header["push"])
            with self.lock:
                old = self.pushes[push].get(layer)
                self.pushes[push][layer] = buffers
            if old is not None:
                pool.give(old)
            # the acknowledgement is our receipt: the cluster hands it to the master with
            # its step (one message per step, not one from us per layer), and our pid in it
            # tells the master whether the process that holds the layer still lives
            replies.send_multipart([ident, *self.auth.frames({"ok": True, "push": push, "layer": layer,
                                                              "slave": self.index, "pid": os.getpid(),
                                                              "request": header["nonce"]}, [])])
        replies.close()

    def _planted_kill(self) -> None:
        """Faults.kill_slave_mid_push (tests only): die here, once, with a push received
        and unacknowledged, after version 1 (so a snapshot to restart from exists)."""
        marker = self.dep.path(f"slave{self.index}", "killed.fault")
        if self.dep.faults.kill_slave_mid_push != self.index or self.version < 1 or marker.exists():
            return
        marker.touch()  # once: the restarted slave goes on
        log.warning("injected fault: slave %d killed mid-push at version %d", self.index, self.version)
        for handler in logging.getLogger().handlers:
            handler.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    # -- the control flow ------------------------------------------------------------------

    def _drop(self, keep: set) -> None:
        with self.lock:
            for push in [p for p in self.pushes if p not in keep]:
                for layer, buffers in self.pushes.pop(push).items():
                    self.pools[layer].give(buffers)

    def _norms(self, ins: dict) -> dict:
        pushes = ins["pushes"]
        with self.lock:
            if ins["version"] != self.version or any(set(self.pushes.get(p, {})) != set(self.layers)
                                                     for p in pushes):
                return {"missing": True}
            deltas = [[pseudo_gradient(self.params[n], self.pushes[p][l][k]) for l in self.layers
                       for k, n in enumerate(self._names(l))] for p in pushes]
        self.deltas = {ins["round"]: deltas}
        return {"gram": slave_gram(deltas).tolist()}

    def _prepare(self, ins: dict) -> bool:
        version = ins["version"]
        faults = self.dep.faults
        if version in faults.fail_prepare_versions and faults.fail_prepare_slave == self.index and \
                version not in self.refused:
            self.refused.add(version)
            log.warning("injected fault: refusing to prepare version %d", version)
            return False
        deltas = self.deltas.get(ins["round"])
        if deltas is None or version != self.version + 1:
            return False
        index = {p: j for j, p in enumerate(ins["pushes"])}
        chosen = [deltas[index[p]] for p in ins["participants"]]
        # §4.1: a push the master flags is left out on every slave; each says so here
        excluded = [p for p in ins["pushes"] if p not in ins["participants"]]
        log.info("slave %d round %d: version %d from pushes %s (weights %s, scale %.6g); excluded %s", self.index,
                 ins["round"], version, ins["participants"], ins["weights"], ins["scale"], excluded)
        for push, why in ins.get("rejected", {}).items():
            log.warning("slave %d round %d: push %s left out: %s", self.index, ins["round"], push, why)
        params, momentum = {}, {}
        names = [n for l in self.layers for n in self._names(l)]
        for k, n in enumerate(names):
            g = weighted_pseudo_gradient([d[k] for d in chosen], ins["weights"], ins["scale"])
            params[n], momentum[n] = outer_step(self.params[n], self.momentum[n], g, self.dep.plan.outer)
        save_snapshot(snapshot_path(self.dep, self.index, version, pending=True), params, momentum)
        self.pending = {"version": version, "round": ins["round"], "pushes": ins["pushes"], "params": params,
                        "momentum": momentum}
        return True

    def _commit(self, version: int) -> None:
        if self.version >= version:
            return
        pending = self.pending
        path = snapshot_path(self.dep, self.index, version)
        if pending is None or pending["version"] != version:
            params, momentum = load_snapshot(snapshot_path(self.dep, self.index, version, pending=True))
            pending = {"params": params, "momentum": momentum, "pushes": []}
        os.replace(snapshot_path(self.dep, self.index, version, pending=True), path)
        with self.lock:
            self.params, self.momentum, self.version = pending["params"], pending["momentum"], version
            self._serialize()
        self.pending = None
        self._drop(set(self.pushes) - set(pending["pushes"]))
        snapshots = {int(p.name[1:7]): p for p in self.dep.path(f"slave{self.index}").glob("v??????.npz")}
        keep = retained_snapshots(sorted(snapshots), self.plan.snapshot_every, self.plan.snapshots_kept,
                                  self.dep.keep_snapshots)
        for v, p in snapshots.items():
            if v not in keep:
                p.unlink(missing_ok=True)
        log.info("slave %d committed version %d", self.index, version)

    def _abort_pending(self) -> None:
        if self.pending is not None:
            snapshot_path(self.dep, self.index, self.pending["version"], pending=True).unlink(missing_ok=True)
            self.pending = None

    def poll_once(self) -> bool:
        """One heartbeat and instruction (a long poll: the master answers when it has an
        instruction for us, or after `long_poll_s`); False when the master says to shut
        down. `self.reached` says whether the master answered."""
        reply = self.client.call("slave_poll", slave=self.index, pid=os.getpid(), version=self.version,
                                 wait_s=long_poll_s(self.plan))
        self.reached = reply is not None
        if reply is None:
            return True  # the master is away: keep serving pulls and keep trying
        if self.epoch is not None and reply["epoch"] != self.epoch:
            log.info("master restarted (epoch %d): pushes and pending updates of the old epoch dropped",
                     reply["epoch"])
            if self.pending is not None and self.pending["version"] <= reply["version"]:
                self._commit(self.pending["version"])
            self._abort_pending()
            self._drop(set())
            self.deltas = {}
        self.epoch = reply["epoch"]
        if self.pending is not None and self.pending["version"] <= reply["version"]:
            self._commit(self.pending["version"])  # committed by the master's log
        ins = reply.get("instruction")
        if ins is None:
            if self.pending is not None and reply.get("instruction") is None and self.pending["version"] > reply[
                    "version"] and not any(p in reply["live_pushes"] for p in self.pending["pushes"]):
                self._abort_pending()  # the round was aborted
            self._drop(set(reply["live_pushes"]))
        elif ins["op"] == "norms":
            self._abort_pending()
            self.client.call("slave_norms", slave=self.index, round=ins["round"], **self._norms(ins))
        elif ins["op"] == "prepare":
            ok = (self.pending is not None and self.pending["round"] == ins["round"]) or self._prepare(ins)
            self.client.call("slave_prepared", slave=self.index, round=ins["round"], ok=ok)
        elif ins["op"] == "commit":
            self._commit(ins["version"])
            self.client.call("slave_committed", slave=self.index, version=self.version)
        return not reply.get("shutdown")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stagec.runtime.ps.slave")
    parser.add_argument("deployment")
    parser.add_argument("index", type=int)
    args = parser.parse_args(argv)
    dep = Deployment.load(args.deployment)
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID` prints every thread's stack to stderr
    logging.basicConfig(filename=dep.path("logs", f"slave{args.index}.log"), level=logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    slave = Slave(dep, args.index, Authenticator(secret_from_env()))
    ctx = zmq.Context()
    threads = [threading.Thread(target=slave.serve_layer, args=(l, ctx), daemon=True) for l in slave.layers]
    for t in threads:
        t.start()
    log.info("slave %d up at version %d serving layers %s", args.index, slave.version, slave.layers)
    while slave.poll_once():
        if not slave.reached:
            time.sleep(0.02)  # the master waits out our polls itself, but not while it is away
    slave.stop.set()
    for t in threads:
        t.join(timeout=2)
    log.info("slave %d done at version %d", args.index, slave.version)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
