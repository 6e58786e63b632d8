"""`stagec trace` at scale: wall time and peak memory of writing every rank's trace.

    python bench/trace_scale.py                 # both cases
    python bench/trace_scale.py --case tp8      # (a) only
    python bench/trace_scale.py --case 32k --check

Cases (issue 5's benchmarks, with issue 14's targets: the scheduling passes run
before emission and must not cost the speed):
  tp8  Llama-3-70B, TP=8 with SP, global batch 128, micro-batch 8 (16 micro-batches),
       sequence 8192, one iteration with backward and optimizer step: 8 traces.
       Target: at most 2 s on the 2-core machine.
  32k  Llama-3-70B on 32,768 GPUs: TP=8, PP=16, DP=256, global batch 2048, micro-batch
       1 (8 micro-batches per replica), sequence 4096. Target: at most 25 s, peak RSS
       under 150 MB; with --check, `stagec check-trace` must pass on the result.

Each case runs `stagec trace` as a child process (so the numbers are the command's
own, imports and model building included) and reads its peak RSS from the kernel
(the largest of the process and its writer processes). Prints a table and, with
--json FILE, writes it there (bench/results/trace_scale.json is the recorded one). Traces go to a temporary directory, removed after.
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

CASES = {
    "tp8": {
        "what": "Llama-3-70B TP=8+SP, batch 128, mbs 8, seq 8192, 1 iteration",
        "args": ["--model", "llama3-70b", "--tp", "8", "--sp", "--batch", "128", "--micro-batch", "8", "--seq", "8192"],
        "ranks": 8, "limit_s": 2.0, "limit_rss_mb": None,
    },
    "32k": {
        "what": "Llama-3-70B on 32,768 GPUs: TP=8 PP=16 DP=256, batch 2048, mbs 1, seq 4096",
        "args": ["--model", "llama3-70b", "--tp", "8", "--pp", "16", "--dp", "256", "--batch", "2048",
                 "--micro-batch", "1", "--seq", "4096", "--yes"],  # 32,768 files: more than --yes's 10,000
        "ranks": 32768, "limit_s": 25.0, "limit_rss_mb": 150.0,
    },
}


def run_case(name: str, out_dir: str, check: bool = False) -> dict:
    case = CASES[name]
    cmd = [sys.executable, "-m", "stagec.tools.stagec_trace", *case["args"], "--quiet", "--out", out_dir]
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)  # this child's rusage, its writers included
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        proc = subprocess.CompletedProcess(cmd, child.returncode, out.read(), err.read())
    if proc.returncode:
        raise SystemExit(f"{name}: stagec trace failed ({proc.returncode}):\n{proc.stderr}")
    rss = usage.ru_maxrss / 1024
    files = [f for f in os.listdir(out_dir) if f.endswith(".et")]
    size = sum(os.path.getsize(os.path.join(out_dir, f)) for f in files)
    result = {
        "case": name, "what": case["what"], "ranks": len(files), "bytes": size, "wall_s": round(wall, 2),
        "peak_rss_mb": round(rss, 1), "limit_s": case["limit_s"], "limit_rss_mb": case["limit_rss_mb"],
        "summary": proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "",
    }
    result["ok"] = len(files) == case["ranks"] and wall < case["limit_s"] and (
        case["limit_rss_mb"] is None or rss < case["limit_rss_mb"])
    if check:
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "stagec.tools.stagec_cli", "check-trace", out_dir, "--json"],
                              capture_output=True, text=True)
        result["check_s"] = round(time.perf_counter() - started, 1)
        result["check_ok"] = proc.returncode == 0
        if proc.returncode:
            result["check_error"] = (proc.stderr or proc.stdout)[-2000:]
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", choices=[*CASES, "all"], default="all")
    parser.add_argument("--check", action="store_true", help="run stagec check-trace on each case's traces")
    parser.add_argument("--keep", metavar="DIR", help="write the traces under DIR/<case> and keep them")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE, keeping its other "
                        "cases (bench/results/trace_scale.json holds the recorded ones; default: print only)")
    args = parser.parse_args(argv)
    names = list(CASES) if args.case == "all" else [args.case]
    results = []
    for name in each(names, "tracing"):
        if args.keep:
            out = os.path.join(args.keep, name)
            os.makedirs(out, exist_ok=True)
            results.append(run_case(name, out, args.check))
        else:
            tmp = tempfile.mkdtemp(prefix=f"stagec-trace-{name}-")
            try:
                results.append(run_case(name, tmp, args.check))
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'case':<6} {'ranks':>7} {'GB':>7} {'wall s':>8} {'limit':>6} {'RSS MB':>8} {'check':>10}  ok")
    for r in results:
        check = f"{r['check_s']}s {'ok' if r['check_ok'] else 'FAIL'}" if "check_s" in r else "-"
        print(f"{r['case']:<6} {r['ranks']:>7} {r['bytes'] / 1e9:>7.2f} {r['wall_s']:>8.1f} {r['limit_s']:>6.0f} "
              f"{r['peak_rss_mb']:>8.1f} {check:>10}  {'yes' if r['ok'] else 'NO'}")
    if args.json:
        # cases run before into the same file stay (a run may measure some cases only)
        previous = {}
        if os.path.exists(args.json):
            with open(args.json) as stream:
                previous = {r["case"]: r for r in json.load(stream).get("results", [])}
        previous.update({r["case"]: r for r in results})
        doc = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
               "results": list(previous.values())}
        write_json(args.json, doc)
    return 0 if all(r["ok"] and r.get("check_ok", True) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
