"""A training cluster of `stagec ps run`: plain torch on CPU (issue 19 allows it).

Loop (Algorithm 1 seen from a cluster): join — the master's `hello`, then pull the
latest parameters (§4: "a joining cluster gets the latest parameters"); take the next
data chunk from the master; train H inner steps with AdamW (the optimizer state stays
with the cluster across rounds, as in DiLoCo), sleeping `extra_delay` of each step's
time to emulate a slower cluster (§5.1); push layer by layer as the master grants the
schedule's steps; prepare and commit; wait for the round and pull the new version —
or, if the round was skipped, go on from the local parameters (§4). Heartbeats go to
the master from a thread of their own; when the master cannot be reached the cluster
keeps training and tries again (non-blocking reconnection, §4).
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import signal
import threading
import time

import numpy as np
import torch

from stagec.runtime.ps.auth import Authenticator
from stagec.runtime.ps.control import ControlClient, long_poll_s, push_settled
from stagec.runtime.ps.dataplane import DataClient, DataError
from stagec.runtime.ps.deployment import Deployment, secret_from_env
from stagec.runtime.ps.model import TinyLlama, chunk_batches
from stagec.runtime.ps.wire import LayerSpec, group_by_layer

__all__ = ["ClusterWorker"]

log = logging.getLogger("stagec.ps.cluster")


class ClusterWorker:
    def __init__(self, dep: Deployment, index: int, auth: Authenticator):
        self.dep, self.plan, self.index = dep, dep.plan, index
        self.spec = self.plan.clusters[index]
        self.client = ControlClient(dep.master_address, auth)
        torch.manual_seed(1000 + index)
        self.model = TinyLlama(dep.model)
        self.names = dict(self.model.named_parameters())
        groups = group_by_layer({n: p.detach().numpy() for n, p in self.names.items()}, self.plan.layers)
        self.specs = [LayerSpec.of(g) for g in groups]
        self.data = DataClient(auth, dep.layer_address, self.specs, dep.data_timeout_s)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=dep.inner_lr)
        self.version = -1
        self.finished = False
        self.pushes = 0
        self.stop = threading.Event()

    def _call(self, op: str, **fields) -> dict:
        """A control call retried until the master answers (it may be restarting)."""
        while not self.stop.is_set():
            reply = self.client.call(op, cluster=self.index, **fields)
            if reply is not None:
                return reply
            time.sleep(0.1)
        return {"finished": True}

    def heartbeats(self) -> None:
        while not self.stop.wait(self.plan.heartbeat_s / 2):
            reply = self.client.call("heartbeat", cluster=self.index, timeout=self.plan.heartbeat_s)
            if reply is not None and reply.get("finished"):
                self.finished = True

    def pull(self, version: int) -> bool:
        """Pull every layer at a common version >= `version`; False if training finished
        (and the slaves left) before the pull could be done."""
        while True:
            try:
                got, arrays = self.data.pull(range(len(self.specs)), version)
                break
            except DataError as error:
                log.info("pull of version %d not done (%s); retrying", version, error)
                if self._call("heartbeat").get("finished"):
                    return False
                time.sleep(0.1)
        with torch.no_grad():
            for l, layer_arrays in enumerate(arrays):
                for name, array in zip(self.specs[l].names, layer_arrays):
                    self.names[name].copy_(torch.from_numpy(array))
        self.version = got
        log.info("cluster %d pulled version %d", self.index, got)
        return True

    def train(self, chunk: int) -> tuple[int, float]:
        """H inner AdamW steps on `chunk`; (tokens consumed, mean loss)."""
        losses = []
        for batch in chunk_batches(self.dep.model, chunk, self.plan.inner_steps):
            start = time.perf_counter()
            loss = self.model(batch)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            losses.append(loss.item())
            took = time.perf_counter() - start
            time.sleep(max(0.0, self.dep.step_time_s - took) + self.spec.extra_delay * max(took, self.dep.step_time_s))
        tokens = self.plan.inner_steps * self.dep.model.batch * self.dep.model.seq
        return tokens, float(np.mean(losses))

    def _push_tensors(self, push_id: str) -> list[dict[str, np.ndarray]]:
        params = {n: p.detach().numpy().copy() for n, p in self.names.items()}
        f = self.dep.faults
        if f.poison_cluster == self.index and f.poison_push == self.pushes:
            # a pseudo-gradient `factor` times too large: theta_base + factor (theta - theta_base),
            # made here on the tensors that go on the wire (and into the record of the push)
            base = self.base
            params = {n: base[n] + np.float32(f.poison_factor) * (v - base[n]) for n, v in params.items()}
            log.warning("injected fault: push %d (%s) of cluster %d is %gx too large", self.pushes, push_id,
                        self.index, f.poison_factor)
        return group_by_layer(params, self.plan.layers)

    def push(self, tokens: int, loss: float) -> dict | None:
        """The control flow of one push (§3.2 steps 1-2); the master's reply to commit,
        or None if the push failed (the round is then skipped by this cluster)."""
        req = self._call("push_request", tokens=tokens, base_version=self.version, loss=loss)
        if req.get("finished") or "push" not in req:
            return None
        push_id = req["push"]
        tensors = self._push_tensors(push_id)
        if self.dep.record_pushes:
            np.savez(self.dep.path("pushes", f"{push_id}.npz"), **{n: a for g in tensors for n, a in g.items()})
        header = {"push": push_id, "cluster": self.index, "base_version": self.version}
        wait = long_poll_s(self.plan)  # the master answers each wait below when it is over
        self.pushes += 1
        try:
            for step, layers in enumerate(req["steps"]):
                while not (grant := self._call("push_grant", push=push_id, step=step, wait_s=wait)).get("granted"):
                    if grant.get("abort") or self.stop.is_set():
                        return None
                receipts = []
                try:
                    receipts = self.data.push(layers, tensors, header)
                finally:
                    self._call("push_step_done", push=push_id, step=step, receipts=receipts)
            while (vote := self._call("push_prepare", push=push_id, wait_s=wait)["vote"]) == "wait":
                pass
            if vote != "yes":
                return None
            if not self._call("push_commit", push=push_id).get("committed"):
                return None
        except DataError as error:
            log.warning("push %s failed: %s", push_id, error)
            self._call("push_failed", push=push_id)
            return None
        while not push_settled(status := self._call("push_status", push=push_id, wait_s=wait)):
            pass
        return status

    def run(self) -> None:
        hello = self._call("hello")
        if hello.get("finished") or not self.pull(hello["version"]):
            self.client.call("bye", cluster=self.index)
            return
        beats = threading.Thread(target=self.heartbeats, daemon=True)
        beats.start()
        while not self.finished:
            reply = self._call("chunk")
            if reply.get("finished"):
                break
            self.base = {n: p.detach().numpy().copy() for n, p in self.names.items()}
            tokens, loss = self.train(reply["chunk"])
            log.info("cluster %d trained chunk %d: loss %.4f", self.index, reply["chunk"], loss)
            status = self.push(tokens, loss)
            if status is None or status["state"] == "skipped":
                log.info("cluster %d skips this outer step", self.index)
                continue
            if status["state"] in ("done", "excluded") and not self.pull(status["version"]):
                break
            if status.get("finished"):
                break
        self.stop.set()
        self.client.call("bye", cluster=self.index)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stagec.runtime.ps.cluster")
    parser.add_argument("deployment")
    parser.add_argument("index", type=int)
    args = parser.parse_args(argv)
    dep = Deployment.load(args.deployment)
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID` prints every thread's stack to stderr
    logging.basicConfig(filename=dep.path("logs", f"cluster{args.index}.log"), level=logging.DEBUG if os.environ.get("DIPS_DEBUG") else logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    torch.set_num_threads(1)
    log.info("cluster %d up (pid %d)", args.index, os.getpid())  # a restart starts a new section of the log
    worker = ClusterWorker(dep, args.index, Authenticator(secret_from_env()))
    worker.run()
    log.info("cluster %d done at version %d", args.index, worker.version)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
