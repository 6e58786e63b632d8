"""`stagec check-trace` speed: the working tree's checker against the one at a git
revision, on the same traces, in one process.

    python bench/check_trace_speed.py                       # against HEAD, 70B traces
    python bench/check_trace_speed.py --rev HEAD~3 --repeats 5 --json /tmp/speed.json
    python bench/check_trace_speed.py --traces DIR          # traces already written

"old" is runtime/chakra/check.py and wire.py as they are at `--rev`, imported from
`git show` under other module names; "new" is the working tree's. Both check the same
traces - by default those of `stagec trace --model llama3-70b --tp 8 --sp --batch 16
--seq 8192` (8 files, ~640K nodes), written to a temporary directory - with
`check_trace(dir, jobs=1)`, old and new alternating, best of `--repeats`. Their
reports (defects and per-rank counts) must be identical before anything is timed.
Prints a table and writes the results as JSON (`--json`, default
bench/results/check_trace_speed.json). The machine may be shared with other jobs:
compare old and new within one run, not across runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import types

from stagec.runtime.chakra import check as new_check
from results_io import write_json  # bench/, the script's own folder

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TRACE_ARGS = ["--model", "llama3-70b", "--tp", "8", "--sp", "--batch", "16", "--seq", "8192"]


def _module_at(rev: str, path: str, name: str, replace: dict[str, str]) -> types.ModuleType:
    """The file `path` as it is at `rev`, imported as module `name` (its imports of
    the other old modules renamed by `replace`)."""
    source = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for old, new in replace.items():
        source = source.replace(old, new)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as stream:
        stream.write(source)
    spec = importlib.util.spec_from_file_location(name, stream.name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    os.unlink(stream.name)
    return module


def old_checker(rev: str) -> types.ModuleType:
    wire = "stagec.runtime.chakra._bench_old_wire"
    _module_at(rev, "runtime/chakra/wire.py", wire, {})
    return _module_at(rev, "runtime/chakra/check.py", "stagec.runtime.chakra._bench_old_check",
                      {"stagec.runtime.chakra.wire": wire})


def _report(module: types.ModuleType, directory: str) -> dict:
    report = module.check_trace(directory, jobs=1)
    return {"defects": report.defects, **report.to_json()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rev", default="HEAD", help="the git revision of the old checker (default: %(default)s)")
    parser.add_argument("--traces", metavar="DIR", help="check these traces instead of writing the 70B ones")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE (bench/results/ holds the recorded ones; default: print only)")
    args = parser.parse_args(argv)

    old_check = old_checker(args.rev)
    revision = subprocess.run(["git", "rev-parse", "--short", args.rev], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    tmp = None
    directory = args.traces
    if directory is None:
        tmp = directory = tempfile.mkdtemp(prefix="stagec-check-speed-")
        subprocess.run([sys.executable, "-m", "stagec.tools.stagec_trace", *TRACE_ARGS, "--quiet", "--out", tmp],
                       check=True)
    try:
        reference = _report(old_check, directory)
        if _report(new_check, directory) != reference:
            raise SystemExit(f"the reports of {revision} and the working tree differ on {directory}: not timed")
        nodes = sum(rank["nodes"] for rank in reference["ranks"].values())
        times: dict[str, list[float]] = {"old": [], "new": []}
        for _ in range(args.repeats):
            for label, module in (("old", old_check), ("new", new_check)):
                started = time.perf_counter()
                module.check_trace(directory, jobs=1)
                times[label].append(time.perf_counter() - started)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)

    best = {label: min(runs) for label, runs in times.items()}
    ratio = best["new"] / best["old"]
    print(f"check_trace(jobs=1) on {len(reference['ranks'])} files, {nodes:,} nodes, {len(reference['defects'])} "
          f"defect(s); best of {args.repeats}")
    print(f"{'checker':<24} {'best s':>8} {'us/node':>8}  runs")
    for label, name in (("old", f"{args.rev} ({revision})"), ("new", "working tree")):
        runs = " ".join(f"{t:.3f}" for t in times[label])
        print(f"{name:<24} {best[label]:>8.3f} {best[label] / nodes * 1e6:>8.2f}  {runs}")
    print(f"new / old: {ratio:.3f}")

    doc = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "traces": args.traces or "stagec trace " + " ".join(TRACE_ARGS),
        "files": len(reference["ranks"]), "nodes": nodes, "defects": len(reference["defects"]),
        "repeats": args.repeats, "old_rev": revision,
        "old_s": [round(t, 4) for t in times["old"]], "new_s": [round(t, 4) for t in times["new"]],
        "best_old_s": round(best["old"], 4), "best_new_s": round(best["new"], 4), "new_over_old": round(ratio, 4),
    }
    if args.json:
        write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
