"""Starts a Di-PS deployment's roles as real processes on loopback and supervises them.

The supervisor plays the part §4 gives a cluster's job scheduler (Kubernetes): it
restarts a master, slave or cluster process that died, until the master's state says
training is finished. Every child runs in its own process group, so `stop` (and the
tests' fixtures) can end each one with everything it started.

`prepare(...)` writes the working directory: the deployment JSON, the initial
parameters (`init.npz`, the model of `ModelSpec.seed`) and the log folder.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stagec.runtime.ps.deployment import SECRET_ENV, Deployment

__all__ = ["RunSummary", "Supervisor", "evaluate", "free_port_block", "prepare", "run"]

ROLES = {"master": "stagec.runtime.ps.master", "slave": "stagec.runtime.ps.slave",
         "cluster": "stagec.runtime.ps.cluster"}


def free_port_block(count: int) -> int:
    """A base port p with p..p+count-1 free on loopback (best effort)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count >= 65535:
            continue
        try:
            socks = []
            for p in range(base, base + count):
                s = socket.socket()
                s.bind(("127.0.0.1", p))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise OSError(f"no block of {count} free ports on loopback")


def prepare(dep: Deployment) -> Path:
    """Write the working directory of `dep`; returns the deployment file's path."""
    from stagec.runtime.ps.model import TinyLlama  # torch: imported only by who builds a model

    work = Path(dep.workdir)
    for sub in ("logs", "master", "pushes", *(f"slave{i}" for i in range(dep.plan.num_slaves))):
        (work / sub).mkdir(parents=True, exist_ok=True)
    model = TinyLlama(dep.model)
    params = {n: p.detach().numpy() for n, p in model.named_parameters()}
    np.savez(work / "init.npz.tmp.npz", **params)
    os.replace(work / "init.npz.tmp.npz", work / "init.npz")
    path = work / "deployment.json"
    dep.save(path)
    return path


@dataclass
class Supervisor:
    dep: Deployment
    secret: bytes
    restart: bool = True
    procs: dict[tuple[str, int], subprocess.Popen] = field(default_factory=dict)
    restarts: dict[tuple[str, int], int] = field(default_factory=dict)
    master_exited: float = 0.0

    @property
    def deployment_file(self) -> Path:
        return self.dep.path("deployment.json")

    def spawn(self, role: str, index: int = 0) -> subprocess.Popen:
        args = [sys.executable, "-m", ROLES[role], str(self.deployment_file)] + ([] if role == "master" else [str(index)])
        env = {**os.environ, SECRET_ENV: self.secret.decode()}
        err = open(self.dep.path("logs", f"{role}{index}.stderr"), "ab")
        proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        err.close()
        self.procs[(role, index)] = proc
        return proc

    def start(self) -> None:
        self.spawn("master")
        for i in range(self.dep.plan.num_slaves):
            self.spawn("slave", i)
        for i in range(len(self.dep.plan.clusters)):
            self.spawn("cluster", i)

    def master_state(self) -> dict:
        try:
            return json.loads(self.dep.path("master", "state.json").read_text())
        except (OSError, ValueError):
            return {}

    def status(self) -> dict:
        try:
            return json.loads(self.dep.path("status.json").read_text())
        except (OSError, ValueError):
            return {}

    def poll(self) -> bool:
        """Restart what died; True while any role is still running."""
        finished = self.master_state().get("finished", False)
        master = self.procs.get(("master", 0))
        ending = finished and master is not None and master.poll() == 0
        if ending:
            # the job is over; a role still trying to reach the master (one restarted
            # too late to take part) is ended after a grace period
            self.master_exited = self.master_exited or time.monotonic()
            if time.monotonic() - self.master_exited > 3 * self.dep.plan.heartbeat_s + 2:
                for key, proc in self.procs.items():
                    if proc.poll() is None:
                        self.signal(*key, signal.SIGKILL)
        alive = False
        for key, proc in list(self.procs.items()):
            code = proc.poll()
            if code is None:
                alive = True
            elif self.restart and code != 0 and not ending:
                # even after the budget is consumed: the last round may still have to
                # be committed (a killed master or slave finishes it when restarted)
                self.restarts[key] = self.restarts.get(key, 0) + 1
                self.spawn(*key)
                alive = True
        return alive

    def signal(self, role: str, index: int, sig: int) -> None:
        proc = self.procs[(role, index)]
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass

    def wait(self, timeout: float, on_tick=None) -> bool:
        """Supervise until every role has exited (True) or `timeout` passes (False)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if not self.poll():
                return True
            if on_tick is not None:
                on_tick(self)
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        """End every child's process group (SIGCONT first: a stopped one cannot die)."""
        for proc in self.procs.values():
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    pass
        for proc in self.procs.values():
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


@dataclass
class RunSummary:
    finished: bool
    version: int
    tokens: int
    wall_s: float
    eval_loss: float
    log: list
    restarts: dict
    training_s: float = 0.0  # from the first chunk handed out to the last commit


def evaluate(dep: Deployment, version: int, batches: int = 8) -> float:
    """The held-out loss of the global parameters of `version` (the slaves' snapshots)."""
    import torch

    from stagec.runtime.ps.model import TinyLlama, eval_loss
    from stagec.runtime.ps.replay import final_parameters

    model = TinyLlama(dep.model)
    if version > 0:
        params, _ = final_parameters(dep, version)
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(torch.from_numpy(params[name]))
    return eval_loss(model, batches)


def run(dep: Deployment, secret: bytes, timeout_s: float = 3600.0, on_tick=None) -> RunSummary:
    """Prepare `dep`'s working directory, run every role to the end (or `timeout_s`),
    always ending the processes; evaluate the final global parameters."""
    prepare(dep)
    sup = Supervisor(dep, secret)
    start = time.monotonic()
    sup.start()
    try:
        finished = sup.wait(timeout_s, on_tick)
    finally:
        sup.stop()
    wall = time.monotonic() - start
    state = sup.master_state()
    version = state.get("version", 0)
    commits = [e["time"] for e in state.get("log", []) if e.get("committed")]
    training = max(commits) - state["first_chunk_time"] if commits and state.get("first_chunk_time") else 0.0
    return RunSummary(bool(finished and state.get("finished")), version, state.get("tokens", 0), wall,
                      evaluate(dep, version), state.get("log", []),
                      {f"{role}{i}": n for (role, i), n in sup.restarts.items()}, training)
