"""Per-rank-class facts of every Chakra emission the test suite makes, held against
the baseline recorded before the schedule moved out of the emitter (issue 14): node
counts by category, FLOPs, and count and bytes per collective type and send/recv.

tests/conftest.py wraps `stagec.runtime.chakra.emit.build_programs` so that every call
a test makes is compared with `trace_facts.json` (keyed by the test, or by the
module-scoped fixture, and the call's number within it). A difference fails the test
unless a rule below folds it back, with the reason the new trace is more faithful.

Re-record (only for emissions no recording holds yet):
    STAGEC_RECORD_TRACE_FACTS=1 pytest -q -p no:randomly
"""

from __future__ import annotations

import json
import os
from pathlib import Path

BASELINE = Path(__file__).with_name("trace_facts.json")

# key -> the recorded key of the same configuration (a test added after the baseline
# emits a configuration another test's recording holds): Table VI's rows, whole.
SAME_AS: dict[str, str] = {
    f"tests/unit/chakra/test_trace_facts.py::test_table6_rows_pass_check_trace[{row}]#0":
        f"tests/unit/chakra/test_table6_counts.py::row[{row}]#0"
    for row in ("gpt3-5b fsdp=8", "gpt3-5b pp=8", "gpt3-5b tp=8 sp", "llama3-70b tp=4 pp=2", "llama3-70b tp=8",
                "mixtral-8x7b ep=8 pp=4")
}

# Differences every emission has, with the reason each trace is now more faithful;
# facts() folds them back before comparing.
#
# A vocab-parallel cross-entropy was one compute node with its three all-reduces
# issued before it, waiting on nothing but the logits. stg-vocab-parallel-cross-entropy
# makes it Megatron's: the local max, label logit and sum of exponentials are compute
# nodes of their own (stg.vocab_stat), each all-reduce waits for its statistic, and
# stg.vocab_cross_entropy combines them - 3 more elementwise nodes per cross-entropy,
# the same FLOPs (4 a logit, 2 a token) and the same all-reduces.
VOCAB_STAT_LABEL = ".vocab_stat"


def facts(programs) -> list[dict]:
    """What one emission's rank classes hold, independent of how the emitter stores it."""
    out = []
    for p in programs:
        totals = p.totals()
        counts = p.counts()
        vocab_stats = sum(1 for s in p.node_static if VOCAB_STAT_LABEL in p.statics[s].label)
        if vocab_stats:
            counts["elementwise"] -= vocab_stats
        out.append({
            "class": p.name,
            "ranks": len(p.ranks),
            "first_rank": min(p.ranks, default=0),
            "nodes": len(p) - vocab_stats,
            "counts": dict(sorted(counts.items())),
            "flops": totals.pop("flops"),
            "bytes": dict(sorted(totals.items())),
        })
    return out


class Recorder:
    """Compares (or, with STAGEC_RECORD_TRACE_FACTS=1, records) each emission's facts."""

    def __init__(self) -> None:
        self.recording = bool(os.environ.get("STAGEC_RECORD_TRACE_FACTS"))
        self.baseline: dict[str, list] = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
        self.recorded: dict[str, list] = {}
        self.key = ""
        self.calls: dict[str, int] = {}

    def enter(self, key: str) -> None:
        self.key = key

    def check(self, programs) -> None:
        index = self.calls.get(self.key, 0)
        self.calls[self.key] = index + 1
        key = f"{self.key}#{index}"
        got = facts(programs)
        if self.recording:
            self.recorded[key] = got
            return
        want = self.baseline.get(SAME_AS.get(key, key))
        if want is None:
            raise AssertionError(
                f"no recorded trace facts for {key}: a new emission in the tests - record it with "
                "STAGEC_RECORD_TRACE_FACTS=1 (tests/trace_facts.py)"
            )
        if got != want:
            raise AssertionError(f"trace facts of {key} changed:\n  was {want}\n  now {got}\n"
                                 "explain the difference in tests/trace_facts.py by a rule with its reason")

    def save(self) -> None:
        if not self.recording or not self.recorded:
            return
        merged = {**self.baseline, **self.recorded}
        text = json.dumps(dict(sorted(merged.items())), indent=0, sort_keys=True) + "\n"
        tmp = BASELINE.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(BASELINE)
