"""`stagec ps run`: run a Di-PS deployment as real processes on loopback (issue 19).

It only assembles: the plan (a CONFIG or ps program as `stagec ps plan` reads them, or
JSON) and the run settings -> `runtime/ps/deployment.Deployment` -> the supervisor
(`runtime/ps/launcher.run`), with a live progress table. Register it with
`add_arguments(parser)` and call `run(args)`; `python -m stagec.tools.stagec_ps_run`
runs it on its own.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from stagec.tools.errors import Terminated, UsageError, interrupt_exit, interrupt_handling, positive_int, positive_number

HELP = """\
Run a Di-PS deployment (docs/dips-runtime.md): a master PS (control flow on gRPC), the
plan's slave PSs (data flow on ZeroMQ, a thread per layer) and its clusters (the plan's
Llama trained with AdamW for H inner steps, then pushed and pulled), each a process on
loopback, supervised and restarted if it dies, until the token budget is consumed.

CONFIG_OR_PLAN is what `stagec ps plan` reads (a CONFIG in YAML, or JSON with `slaves`,
or the ps program it prints, .mlir), or a JSON file: either a plan (the fields of runtime/ps/plan.py's Plan)
or {"plan": {...}, "run": {...}} where "run" may set mode, total_tokens, inner_lr,
step_time_s, model (vocab, hidden, intermediate, layers, heads, kv_heads, head_dim,
tie_embeddings, rope_theta, norm_eps, rope_scaling, seq, batch, seed). Command-line
options override "run". Without run.model the clusters train the model the plan was
made from (a CONFIG's model; a ps program and a plan record its name, dtype and
overrides): a model the runtime cannot train (not a Llama, not f32, a rope_scaling
other than default, dynamic, linear or llama3, too large for this machine) or whose tensors are
not the plan's layers and bytes is refused before any process starts.

Modes: dips (asynchronous, grace window, pseudo-gradient penalty), sync (synchronous
DiLoCo), async (asynchronous DiLoCo, no penalty).

Every message is authenticated with a shared secret: DIPS_SECRET if set, else a fresh
random one for this run.

examples:
  stagec ps run examples/ps/tiny4.yaml
  stagec ps run examples/ps/tiny4.yaml --mode sync --tokens 200000 --workdir runs/sync
  stagec ps run runs/sync/deployment.json --json result.json   (that run again, as its workdir recorded it)"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", metavar="CONFIG_OR_PLAN", help="a CONFIG (YAML), a ps program (.mlir) or a plan or deployment description (JSON)")
    parser.add_argument("--mode", choices=("dips", "sync", "async"), help="outer optimization (default: dips)")
    parser.add_argument("--tokens", type=positive_int, help="token budget over all clusters")
    parser.add_argument("--workdir", help="where snapshots, logs and the master's state go; not one holding "
                                          "another run's state (default: a new temporary directory)")
    parser.add_argument("--timeout", type=positive_number, default=3600.0, help="give up after this many seconds")
    parser.add_argument("--json", metavar="PATH", help="write the run's summary as JSON")
    parser.add_argument("--quiet", action="store_true", help="no live progress table")


# What a deployment description (runtime/ps/deployment.py's Deployment, written as
# deployment.json into every run's working directory) sets that "run" would set.
_DEPLOYMENT_RUN_KEYS = ("mode", "total_tokens", "inner_lr", "step_time_s", "model")


def _read(path: Path) -> tuple[dict, dict]:
    """(plan JSON, run settings) from the user's file."""
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if path.suffix == ".mlir":
        return _read_plan(path), {}
    if path.suffix in (".yaml", ".yml"):
        return _config_and_model(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:  # ValueError: UnicodeDecodeError too
        if path.suffix != ".json":  # not JSON: a CONFIG, as `stagec ps plan` reads any file but .mlir
            return _config_and_model(path)
        if isinstance(error, OSError):
            raise UsageError(f"{path}: cannot read: {error.strerror or error}") from None
        raise UsageError(f"{path}: not JSON ({error})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a JSON object with a plan, got {type(data).__name__}")
    if "slaves" in data:  # a CONFIG written in JSON (YAML's subset): a plan has num_slaves
        return _config_and_model(path)
    if "plan" in data:
        if "run" not in data and "mode" in data:  # a run's deployment.json: rerun it with its own settings
            return data["plan"], {key: data[key] for key in _DEPLOYMENT_RUN_KEYS if key in data}
        return data["plan"], data.get("run", {})
    return data, {}


def _config_and_model(path: Path) -> tuple[dict, dict]:
    plan, model = _read_config(path)
    return plan, {"model_description": model}


def _read_plan(path: Path) -> dict:
    """The plan of a `ps` program (the IR `stagec ps plan` prints), verified as
    `stagec ps plan` verifies it."""
    from stagec.runtime.ps.config import PsConfigError, load_plan
    from stagec.runtime.ps.deployment import plan_to_json

    try:
        return plan_to_json(load_plan(str(path)))
    except PsConfigError as error:
        raise UsageError(str(error)) from None


def _read_config(path: Path):
    """The plan of a CONFIG and its model description (what the run trains)."""
    from stagec.runtime.ps.config import PsConfigError, load_config, plan_from_config
    from stagec.runtime.ps.deployment import plan_to_json

    try:
        config = load_config(str(path))
        return plan_to_json(plan_from_config(config)), config.model
    except PsConfigError as error:
        raise UsageError(str(error)) from None


def _model_for(plan, run: dict, path: Path):
    """The clusters' model: run.model's fields where given (a JSON file, a run's
    deployment.json), else the plan's model description — the CONFIG's, or the
    name, overrides and dtype a ps program or plan JSON records — (runtime/ps/
    run_model.py), else the tests' tiny Llama with the plan's number of decoder
    layers. Checked against the plan's layers and bytes before any process starts."""
    from stagec.runtime.ps.config import PsConfigError
    from stagec.runtime.ps.model import ModelSpec
    from stagec.runtime.ps.run_model import check_run_model, plan_description, run_model_spec

    numbers = [int(m.group(1)) for l in plan.layers if (m := re.fullmatch(r"model\.layers\.(\d+)", l.prefix))]
    try:
        if "model" in run:
            fields = dict(run["model"])
            if "layers" not in fields and numbers:
                fields["layers"] = max(numbers) + 1
            try:
                spec = ModelSpec(**fields)
            except TypeError as error:
                raise UsageError(f"{path}: run.model: {error}; fields are those of runtime/ps/model.py's "
                                 f"ModelSpec") from None
        elif run.get("model_description") is not None or plan.model:
            spec = run_model_spec(run.get("model_description") or plan_description(plan), str(path))
        else:
            spec = ModelSpec(layers=max(numbers) + 1) if numbers else ModelSpec()
        check_run_model(plan, spec, str(path))
    except PsConfigError as error:
        raise UsageError(str(error)) from None
    return spec


def deployment_from_args(args: argparse.Namespace):
    from stagec.runtime.ps.deployment import MODES, Deployment, plan_from_json
    from stagec.runtime.ps.launcher import free_port_block

    path = Path(args.config)
    plan_data, run = _read(path)
    try:
        plan = plan_from_json(plan_data)
    except (KeyError, TypeError, ValueError) as error:
        raise UsageError(f"{path}: not a Di-PS plan ({type(error).__name__}: {error}); expected the fields of "
                         f"runtime/ps/plan.py's Plan") from None
    if len(plan.slave_of_layer) != len(plan.layers) or any(not 0 <= s < plan.num_slaves for s in plan.slave_of_layer):
        raise UsageError(f"{path}: slave_of_layer must give each of the {len(plan.layers)} layers a slave in "
                         f"0..{plan.num_slaves - 1}")
    _verify_plan(plan, path)
    mode = args.mode or run.get("mode", "dips")
    if mode not in MODES:
        raise UsageError(f"{path}: run.mode '{mode}' is not one of {', '.join(MODES)}")
    spec = _model_for(plan, run, path)
    tokens = args.tokens or int(run.get("total_tokens", 0)) or 8 * len(plan.clusters) * plan.inner_steps * spec.batch * spec.seq
    if args.workdir and (Path(args.workdir) / "master" / "state.json").exists():
        # The master reads it back as after its own restart (runtime/ps/master.py): the
        # run would resume that one's versions and tokens and report its result as new.
        raise UsageError(f"--workdir '{args.workdir}' holds a run's state (master/state.json): give a new directory")
    workdir = args.workdir or tempfile.mkdtemp(prefix="dips-")
    try:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    except OSError as error:  # a file there, or on the way to it; no permission
        raise UsageError(f"--workdir '{workdir}': cannot make it a directory: {error.strerror or error}") from None
    return Deployment(plan=plan, mode=mode, model=spec, workdir=str(Path(workdir).resolve()), total_tokens=tokens,
                      master_port=free_port_block(1), data_port=free_port_block(len(plan.layers)),
                      inner_lr=float(run.get("inner_lr", 3e-3)), step_time_s=float(run.get("step_time_s", 0.0)))


# The shortest silence after which `ps run` may declare a process dead: its processes
# answer within milliseconds when idle, not when a 2-core machine is busy training.
MIN_SILENCE_S = 0.05


def _verify_plan(plan, path: Path) -> None:
    """What the runtime loops on, in a plan JSON (a CONFIG or ps program is checked when
    read): with H = 0 no cluster ever consumes a token and the run never ends."""
    wrong = [f"{name} {value}" for name, value, ok in (
        ("inner_steps", plan.inner_steps, plan.inner_steps >= 1),
        ("heartbeat_s", plan.heartbeat_s, plan.heartbeat_s > 0),
        ("missed_heartbeats", plan.missed_heartbeats, plan.missed_heartbeats >= 1),
        ("clusters", len(plan.clusters), len(plan.clusters) >= 1),
        ("layers", len(plan.layers), len(plan.layers) >= 1)) if not ok]
    if wrong:
        raise UsageError(f"{path}: {', '.join(wrong)}: give inner_steps >= 1, heartbeat_s > 0, missed_heartbeats >= 1 "
                         "and at least one cluster and one layer")
    if plan.heartbeat_s * plan.missed_heartbeats < MIN_SILENCE_S:
        # a 1 us interval (a typo for 1 s) had the master restart every slave over and
        # over: no process answers that fast, and the run made no progress until --timeout
        raise UsageError(f"{path}: heartbeat interval {plan.heartbeat_s:g} s x {plan.missed_heartbeats} missed: a "
                         f"process is declared dead after {plan.heartbeat_s * plan.missed_heartbeats:g} s of silence; "
                         f"give at least {MIN_SILENCE_S:g} s (e.g. heartbeat: {{interval: 1s, missed: 3}})")


def _table(status: dict, restarts: dict):
    from rich.table import Table

    table = Table(title="Di-PS", title_justify="left")
    for column in ("version (round)", "tokens", "clusters in window", "live clusters", "loss per cluster",
                   "restarts"):
        table.add_column(column)
    losses = ", ".join(f"{c}: {l:.3f}" for c, l in sorted(status.get("losses", {}).items()))
    table.add_row(str(status.get("version", 0)), f"{status.get('tokens', 0):,} / {status.get('total_tokens', 0):,}",
                  ", ".join(map(str, status.get("window", []))) or "-",
                  ", ".join(map(str, status.get("clusters", []))) or "-", losses or "-",
                  ", ".join(f"{k[0]}{k[1]}: {n}" for k, n in restarts.items()) or "-")
    return table


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.live import Live

    from stagec.runtime.ps.launcher import run as run_deployment

    if args.json:
        from stagec.tools.output import check_output_path

        check_output_path("--json", args.json)  # before the run, not after it
    dep = deployment_from_args(args)
    secret = os.environ.get("DIPS_SECRET", "").encode() or secrets.token_hex(16).encode()
    console = Console(stderr=True)
    console.print(f"Di-PS ({dep.mode}): {len(dep.plan.clusters)} clusters, {dep.plan.num_slaves} slaves, "
                  f"{len(dep.plan.layers)} layers, H = {dep.plan.inner_steps}; working directory {dep.workdir}")
    if args.quiet:
        summary = run_deployment(dep, secret, args.timeout)
    else:
        with Live(_table({}, {}), console=console, refresh_per_second=4) as live:
            summary = run_deployment(dep, secret, args.timeout,
                                     on_tick=lambda sup: live.update(_table(sup.status(), sup.restarts)))
    console.print(f"{'finished' if summary.finished else 'did not finish'}: version {summary.version}, "
                  f"{summary.tokens:,} tokens in {summary.wall_s:.1f} s; evaluation loss {summary.eval_loss:.4f}")
    if args.json:
        from stagec.tools.output import output_stream

        with output_stream(args.json) as stream:
            stream.write(json.dumps({"mode": dep.mode, "finished": summary.finished, "version": summary.version,
                                     "tokens": summary.tokens, "wall_s": summary.wall_s,
                                     "eval_loss": summary.eval_loss, "restarts": summary.restarts,
                                     "workdir": dep.workdir, "log": summary.log}, indent=1))
    return 0 if summary.finished else 1


def main(argv: Sequence[str] | None = None) -> int:
    prog = "stagec ps run"
    parser = argparse.ArgumentParser(prog=prog, description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        with interrupt_handling():
            return run(args)
    except UsageError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as error:
        return interrupt_exit(prog, error)


if __name__ == "__main__":
    sys.exit(main())
