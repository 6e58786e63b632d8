"""`stagec simulate` at scale: wall time and peak memory of simulating one iteration.

    python bench/sim_scale.py                        # every case
    python bench/sim_scale.py --case 70b-ir --case 70b-traces
    python bench/sim_scale.py --json out.json        # also write the results there

Cases (issue 15's targets, on the 2-core machine):
  70b-ir      Llama-3-70B, TP=8 PP=4 DP=2 with SP on 64 GPUs, global batch 128,
              micro-batch 1, sequence 4096, from the model (the scheduled IR, no trace
              files; model building, emission and the memory analysis included).
              Target: at most 6 s, peak RSS under 700 MB.
  70b-traces  The same job from its trace directory (5.07M nodes, written by
              `stagec trace` before the clock starts). Same targets.
  32k-ir      Llama-3-70B on 32,768 GPUs: TP=8 PP=16 DP=256, batch 2048, from the
              model. Target: under 2 minutes.

For comparison, ASTRA-sim's analytical backend takes 123 s and 7 GB for the 70b-traces
directory (../shared/ASTRA-SIM.md). Each case runs `stagec simulate --json` as a child
process (imports included) and reads its peak RSS from the kernel (the largest of the
process and the memory-analysis process it forks). Prints a table; writes
the file --json names (bench/results/sim_scale.json is the recorded one).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

from progress_bar import each  # bench/, the script's own folder
from results_io import write_json

HERE = os.path.dirname(os.path.abspath(__file__))
JOB_70B = ["--model", "llama3-70b", "--tp", "8", "--pp", "4", "--dp", "2", "--sp", "--batch", "128",
           "--micro-batch", "1", "--seq", "4096"]
JOB_32K = ["--model", "llama3-70b", "--tp", "8", "--pp", "16", "--dp", "256", "--batch", "2048",
           "--micro-batch", "1", "--seq", "4096"]
CASES = {
    "70b-ir": {"what": "Llama-3-70B TP=8 PP=4 DP=2 SP, 64 GPUs, from the IR", "job": JOB_70B, "traces": False,
               "limit_s": 6.0, "limit_rss_mb": 700.0},
    "70b-traces": {"what": "the same job from its trace directory", "job": JOB_70B, "traces": True,
                   "limit_s": 6.0, "limit_rss_mb": 700.0},
    "32k-ir": {"what": "Llama-3-70B TP=8 PP=16 DP=256, 32,768 GPUs, from the IR", "job": JOB_32K, "traces": False,
               "limit_s": 120.0, "limit_rss_mb": None},
}


def _child(cmd: list[str]) -> tuple[float, float, str, str, int]:
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        return wall, usage.ru_maxrss / 1024, out.read(), err.read(), os.waitstatus_to_exitcode(status)


def run_case(name: str, work: str) -> dict:
    case = CASES[name]
    stagec = [sys.executable, "-m", "stagec.tools.stagec_cli"]
    if case["traces"]:
        traces = os.path.join(work, name)
        wall, _, _, err, code = _child([*stagec, "trace", *case["job"], "--quiet", "--out", traces])
        if code:
            raise SystemExit(f"{name}: stagec trace failed ({code}):\n{err}")
        cmd = [*stagec, "simulate", traces, "--json", "--quiet"]
    else:
        cmd = [*stagec, "simulate", *case["job"], "--json", "--quiet"]
    wall, rss, out, err, code = _child(cmd)
    if code:
        raise SystemExit(f"{name}: stagec simulate failed ({code}):\n{err}")
    report = json.loads(out)
    result = {
        "case": name, "what": case["what"], "world": report["world"], "simulated_actors": len(report["ranks"]),
        "nodes_simulated": sum(r["nodes"] for r in report["ranks"]), "iteration_ms": report["iteration_ns"] / 1e6,
        "wall_s": round(wall, 2), "peak_rss_mb": round(rss, 1), "limit_s": case["limit_s"],
        "limit_rss_mb": case["limit_rss_mb"],
    }
    result["ok"] = wall <= case["limit_s"] and (case["limit_rss_mb"] is None or rss < case["limit_rss_mb"])
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", choices=list(CASES), action="append", help="a case to run (default: all)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE, keeping its other "
                        "cases (bench/results/sim_scale.json holds the recorded ones; default: print only)")
    args = parser.parse_args(argv)
    names = args.case or list(CASES)
    work = tempfile.mkdtemp(prefix="stagec-sim-")
    try:
        results = [run_case(name, work) for name in each(names, "simulating")]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'case':<11} {'ranks':>7} {'actors':>6} {'nodes':>9} {'iteration ms':>13} {'wall s':>7} {'limit':>6} "
          f"{'RSS MB':>7}  ok")
    for r in results:
        print(f"{r['case']:<11} {r['world']:>7} {r['simulated_actors']:>6} {r['nodes_simulated']:>9,} "
              f"{r['iteration_ms']:>13,.1f} {r['wall_s']:>7.1f} {r['limit_s']:>6.0f} {r['peak_rss_mb']:>7.1f}  "
              f"{'yes' if r['ok'] else 'NO'}")
    doc = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
           "results": results}
    if args.json:
        # cases run before into the same file stay (a run may measure some cases only)
        previous = {}
        if os.path.exists(args.json):
            with open(args.json) as stream:
                previous = {r["case"]: r for r in json.load(stream).get("results", [])}
        previous.update({r["case"]: r for r in results})
        write_json(args.json, {**doc, "results": list(previous.values())})
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
