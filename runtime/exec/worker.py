"""One rank of `stagec run`: `python -m stagec.runtime.exec.worker JOB.json`, started by
mpiexec (launch.py) on every rank.

The job file (launch.py `write_job`) names the scheduled module's IR file, its
bindings, the model config, the data, the steps, the checkpoint and the device
(`cpu` or `cuda`: device.py `rank_device`, one GPU per rank). The rank parses
the module, lowers its own program (program.py) and runs the steps; rank 0 prints one
line per step on stdout for the launcher:

    STAGEC {"step": 3, "loss": 3.4521, "seconds": 0.12, "executed": {"stg.all_gather": 42, ...}}

Failures: the whole rank runs under csrc's `abort_on_failure`, so an exception prints
`stagec: rank R of N failed during <activity>: ...` and aborts every rank (MPI_Abort).
What the rank is doing is also written, op by op, to `<rundir>/rank<R>.status` (its pid
on the first line), which is where the launcher finds it when the rank is killed
outright and cannot say it itself.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from stagec.runtime.exec.status import Status, read_reports, report


def run(job: dict, world, status: Status) -> None:
    import torch
    from xdsl.parser import Parser

    from stagec.dialects import make_context
    from stagec.frontends.templates import load_config
    from stagec.runtime.exec.data import Batches
    from stagec.runtime.exec.device import rank_device
    from stagec.runtime.exec.program import RankProgram, input_shapes

    def activity(text: str) -> None:
        world.activity = text
        status.write(text)

    torch.set_num_threads(int(job.get("threads", 1)))
    activity("parsing the program")
    with open(job["ir"]) as f:
        module = Parser(make_context(), f.read(), job["ir"]).parse_module()
    bindings = job["bindings"]
    activity(f"setting up the device ({job.get('device', 'cpu')})")
    device = rank_device(job.get("device", "cpu"), world)
    activity(f"setting up communicators and weights on {device}")
    program = RankProgram(module, bindings, world, seed=job["seed"], init_std=job["init_std"],
                          weights=job.get("weights"), activity=activity, device=device)
    config = load_config(job["model"])
    batches = Batches(config, input_shapes(module, bindings), seed=job["seed"], tokens=job.get("data"))
    first = 0
    checkpoint = job.get("checkpoint")
    if checkpoint and job.get("resume"):
        activity("loading the checkpoint")
        meta = program.state.load(os.path.join(checkpoint, f"rank{world.rank}.pt"))
        if meta.get("fingerprint") != job["fingerprint"]:
            raise ValueError(f"--resume: the checkpoint in {checkpoint} is of another job "
                             f"({meta.get('fingerprint')}), not {job['fingerprint']}")
        first = int(meta["step"])
    profiler = None
    if job.get("profile"):
        from stagec.runtime.exec.profiler import RunProfiler

        profiler = program.execution.profiler = RunProfiler(module, bindings, program.execution)
    for step in range(first, first + job["steps"]):
        if profiler is not None:
            # the first step warms up, unless it is the only one; the live bytes are
            # taken in the last step (the op times leave the scan out)
            profiler.start_step(step > first or job["steps"] == 1, step == first + job["steps"] - 1)
        loss, seconds = program.step(batches.batch(step), step + 1)
        if profiler is not None:
            profiler.end_step(step + 1)
        if world.rank == 0:
            report(job["rundir"], step=step + 1, loss=loss, seconds=seconds,
                   executed=dict(program.execution.executed))
        if checkpoint and (step + 1 == first + job["steps"] or (job.get("checkpoint_every") and (step + 1) % job["checkpoint_every"] == 0)):
            activity(f"step {step + 1}: saving the checkpoint")
            save_checkpoint(program, world, checkpoint, step + 1, job["fingerprint"])
    if profiler is not None:
        program.execution.profiler = None
        activity("profiling: timing all-gathers over the sizes of T_c(V)")
        profiler.sweep_all_gather(program.comms, world)
        if world.rank == 0:
            activity(f"profiling: writing {job['profile']}")
            profiler.write(job["profile"], world.rank)
    activity("done")
    if world.rank == 0:
        report(job["rundir"], done=True)


def save_checkpoint(program, world, directory: str, step: int, fingerprint: str) -> None:
    """Every rank writes its shards (tmp, then rename); once all have, rank 0 writes
    latest.json the same way, so a checkpoint is whole or absent."""
    import torch

    os.makedirs(directory, exist_ok=True)
    program.state.save(os.path.join(directory, f"rank{world.rank}.pt"), {"step": step, "fingerprint": fingerprint})
    if world.size > 1:
        world.all_reduce(torch.zeros(1, device="cpu"), "sum").wait()  # every rank's file is in place
    if world.rank == 0:
        path = os.path.join(directory, "latest.json")
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump({"step": step, "ranks": world.size, "fingerprint": fingerprint}, f)
        os.replace(tmp, path)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as f:
        job = json.load(f)
    from stagec import csrc

    world = csrc.world()
    status = Status(job["rundir"], world.rank)
    status.write("starting")
    if job.get("fault"):
        _plant_fault(job["fault"], world, job["rundir"])
    with csrc.abort_on_failure(world):
        try:
            run(job, world, status)
        except BaseException as error:
            if not (isinstance(error, SystemExit) and error.code in (None, 0)):
                status.fail(f"{type(error).__name__}: {error}")
            raise


def _plant_fault(fault: dict, world, rundir: str) -> None:
    """Tests' failures (STAGEC_FAULT, tools/stagec_run.py): on one rank, at its `op`-th op
    of step `step` (mid-step, while the other ranks go on into their collectives), die
    of SIGKILL (`kill`) or raise (`raise`). The failure waits (up to 30 s) until rank 0
    has reported step `step - 1`: this rank can be ahead of rank 0, which still finishes
    that step after their last collective of it, and the test must know which steps
    completed."""
    if fault["rank"] != world.rank:
        return
    from stagec.runtime.exec.execution import RankExecution

    original = RankExecution.run_op
    count = [0]

    def run_op(self, op):
        if self.step == fault["step"]:
            count[0] += 1
            if count[0] == fault.get("op", 50):
                original(self, op)  # the op's activity is recorded; then the failure
                deadline = time.monotonic() + 30.0
                while fault["step"] > 1 and time.monotonic() < deadline and not any(
                        r.get("step", 0) >= fault["step"] - 1 for r in read_reports(rundir)):
                    time.sleep(0.01)
                if fault["kind"] == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                raise RuntimeError(f"planted failure after {op.name} of step {self.step}")
        return original(self, op)

    RankExecution.run_op = run_op


if __name__ == "__main__":
    main()
