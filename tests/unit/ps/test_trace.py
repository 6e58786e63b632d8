"""Di-PS simulation (issue 19 item 6): a plan's round as Chakra traces
(runtime/ps/trace.py) timed on per-link bandwidths (runtime/sim/links.py) by
`stagec simulate`, against a hand-derived time; the 9-cluster 16-slave plan's traces
pass `stagec check-trace` and simulate; the plan <-> IR conversion is exact."""

from __future__ import annotations

import io
import json
import os

import pytest

from stagec.dialects.ps import module_from_plan, plan_from_module
from stagec.runtime.chakra.check import check_trace
from stagec.runtime.ps.config import load_config, plan_from_config
from stagec.runtime.ps.placement import build_plan
from stagec.runtime.ps.plan import Cluster, Layer
from stagec.runtime.ps.trace import TraceError, TraceOptions, build_nodes, write_traces
from stagec.runtime.sim.links import LinkNetwork
from stagec.runtime.sim.network import CollectiveError
from stagec.tools.stagec_cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def _tiny_plan():
    # A: 1000 tokens/s, B: 500; B = [[2e6, 1e6], [1e6, 1e6]] bytes/s; p = [1000, 500]:
    # B_0^T p = 2e6*1000 + 1e6*500 = 2.5e9 > B_1^T p = 1e6*1000 + 1e6*500 = 1.5e9: PS on A.
    return build_plan([Cluster("A", 1000.0), Cluster("B", 500.0)], [[2e6, 1e6], [1e6, 1e6]], 1,
                      [Layer("model.layers.0", 2000)], inner_steps=2, grace_window_s=0.0005, tokens_per_step=100)


def test_tiny_plan_iteration_time_by_hand(tmp_path, capsys):
    """Ranks A=0, B=1, slave=2, master=3. Links: A <-> PSs at B[0][0] = 2e6 B/s, B <-> PSs
    at B[0][1] = 1e6, master <-> slave at B[0][0] = 2e6. A control message (200 B) takes
    100 us from A or the master/slave, 200 us from B; the layer (2000 B) 1000 us from A,
    2000 us from B; the slave's update 2000 B / 2e6 B/s = 1000 us; grace 500 us.
    Inner steps: A 2 * 100 / 1000 = 0.2 s, B 2 * 100 / 500 = 0.4 s.
    Schedule: step 0 A's layer, step 1 B's (T = max(1, 2 * 1) = 2). Times in us:

      A: inner 0-200000, request 200000-200100           master: recv A 200100, go A -200200,
      master go(A) -> slave -200300; slave ready -> A 200300-200400; A push 200400-201400,
      prepare 201400-201500.  B: inner 0-400000, request -400200; master recv B 400200,
      go B -400400, go(B) -> slave -400500; slave ready -> B 400500-400700; B push
      400700-402700, prepare -402900. Master: prepare A (arrived 201500) at 400500, ack A
      -400600; A commit -400700; master prepare B 402900, ack B -403100; B commit -403300;
      grace 403300-403800; update -> slave -403900; slave update 403900-404900, done
      -405000. Master notices A -405100, B -405300. A's ready to pull -405200, slave's
      pull to A 405200-406200; B's ready -405500, the slave's pull to B once A's is done,
      406200-408200. A ends at 406200 (its pull), B at 408200: the iteration is 408,200 us."""
    plan = _tiny_plan()
    write_traces(plan, str(tmp_path), TraceOptions(control_bytes=200, slave_update_bytes_per_s=2e6))
    assert main(["simulate", str(tmp_path), "--json", "--quiet"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["iteration_ns"] == 408_200_000
    finish = {r["ranks"][0]: r["finish_ns"] for r in report["ranks"]}
    assert finish[0] == 406_200_000 and finish[1] == 408_200_000 and finish[3] == 405_300_000
    # the files are well-formed Chakra (stagec check-trace's checks)
    assert check_trace(str(tmp_path)).ok


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_traces_appear_whole_or_not_at_all(tmp_path, monkeypatch, failure):
    # a second plan's traces fail after the rank files are written (the links file):
    # the directory holds the first plan's, byte for byte, and no staging directory
    import stagec.runtime.ps.trace as trace

    out = tmp_path / "traces"
    write_traces(_tiny_plan(), str(out))
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def fail(*args, **kwargs):
        raise failure

    monkeypatch.setattr(trace, "write_links", fail)
    with pytest.raises(TraceError if isinstance(failure, OSError) else KeyboardInterrupt):
        write_traces(_tiny_plan(), str(out), TraceOptions(control_bytes=999))
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    # into a missing directory: none is left
    with pytest.raises(TraceError if isinstance(failure, OSError) else KeyboardInterrupt):
        write_traces(_tiny_plan(), str(tmp_path / "new"), TraceOptions(control_bytes=999))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces"]


def test_slower_link_is_what_the_time_follows(tmp_path, capsys):
    """Halving B's link (1e6 -> 5e5 B/s) doubles every message of B: B's push takes 4000
    us instead of 2000, its request 400 instead of 200, ... The tiny plan's iteration then
    grows by more than B's push alone (2000 us), which a model with one bandwidth
    for everyone could not show."""
    slow = build_plan([Cluster("A", 1000.0), Cluster("B", 500.0)], [[2e6, 5e5], [1e6, 1e6]], 1,
                      [Layer("model.layers.0", 2000)], inner_steps=2, grace_window_s=0.0005, tokens_per_step=100)
    write_traces(slow, str(tmp_path), TraceOptions(control_bytes=200, slave_update_bytes_per_s=2e6))
    assert main(["simulate", str(tmp_path), "--json", "--quiet"]) == 0
    report = json.loads(capsys.readouterr().out)
    # B's messages: request 400, go 400, ready 400, push 4000, prepare 400, ack 400,
    # commit 400, pull 4000 (us) vs 200, 200, 200, 2000, 200, 200, 200, 2000 before.
    # From B's inner end (400000): request -400400; master go B -400800, go(B) -> slave
    # -400900 (100 us, the master-slave link); ready -401300; push -405300; prepare -405700;
    # ack -406100; commit -406500; grace -407000; update -407100; slave update -408100,
    # done -408200; notices A -408300, B -408700; A's ready to pull -408400, pull A
    # 408400-409400; B's ready -409100, pull B 409400-413400.
    assert report["iteration_ns"] == 413_400_000


def test_production_traces_check_and_simulate(tmp_path, capsys):
    """The 9-cluster 16-slave plan (examples/ps/production9.yaml): 26 ranks that pass
    `stagec check-trace` and simulate."""
    plan = plan_from_config(load_config(os.path.join(ROOT, "examples", "ps", "production9.yaml")))
    report = write_traces(plan, str(tmp_path))
    assert report.world == 9 + 16 + 1
    assert main(["check-trace", str(tmp_path)]) == 0
    assert "26 ranks, no defects" in capsys.readouterr().out
    assert main(["simulate", str(tmp_path), "--json", "--quiet"]) == 0
    sim = json.loads(capsys.readouterr().out)
    # Every cluster computes 64 inner steps first: D, the slowest (152933 tokens/s), for
    # 64 * 4194304 / 152933 = 1755.25 s; the round ends after that.
    d = next(r for r in sim["ranks"] if r["ranks"][0] == 7)
    assert d["compute_ns"] == 1_755_248_743_000  # the COMP node's whole microseconds
    assert sim["iteration_ns"] > d["compute_ns"]


def test_every_push_crosses_its_clusters_link():
    """A's pushes and pulls use A's link to the PS cluster, not a shared one."""
    plan = _tiny_plan()
    nodes = build_nodes(plan, TraceOptions())
    push = next(n for n in nodes[1] if n.name == "push model.layers.0")
    assert (push.attrs["comm_src"], push.attrs["comm_dst"], push.attrs["comm_size"]) == (1, 2, 2000)
    from stagec.runtime.ps.trace import link_network

    network = link_network(plan)
    assert network.p2p_ns(1, 2, 2000) == 2_000_000  # 2000 B at 1e6 B/s
    assert network.p2p_ns(0, 2, 2000) == 1_000_000  # 2000 B at 2e6 B/s
    with pytest.raises(CollectiveError, match="no link from rank 0 to rank 1"):
        network.p2p_ns(0, 1, 8)


def test_a_plan_without_tokens_per_step_cannot_be_timed():
    plan = build_plan([Cluster("A", 1.0)], [[1.0]], 1, [Layer("x", 1)], inner_steps=1, grace_window_s=0.0)
    with pytest.raises(TraceError, match="no tokens_per_step"):
        build_nodes(plan)


def test_link_file_errors():
    with pytest.raises(ValueError, match="link \\[0, 1, 0, 0\\] has bandwidth 0; give bytes/s > 0"):
        LinkNetwork(2, [[0, 1, 0, 0]])
    with pytest.raises(ValueError, match="names rank 5, not one of 0..1"):
        LinkNetwork(2, [[0, 5, 1.0, 0]])


@pytest.mark.parametrize("config", ["tiny4.yaml", "production9.yaml"])
def test_plan_ir_round_trip(config):
    plan = plan_from_config(load_config(os.path.join(ROOT, "examples", "ps", config)))
    assert plan_from_module(module_from_plan(plan)) == plan


@pytest.mark.parametrize("change, message", [
    # 2 steps x 1e30 tokens / 1000 tokens/s: an OverflowError / varint traceback before
    (dict(tokens_per_step=10**30), "'A: 2 inner steps' takes 2e+27 s, longer than a trace can time (292 years)"),
    # PS on B (B_1^T p = 1.5e9 > 1e9), A's link B[1][0] = 1e-300 bytes/s: `stagec simulate`
    # crashed on the inf time of A's 2000-byte layer
    (dict(bandwidth=[[1e6, 1e6], [1e-300, 1e6]]), "a 2,000-byte message over the slowest link (1e-300 bytes/s, "
                                                  "latency 0 us) takes inf s, longer than a trace can time"),
])
def test_times_past_the_simulators_int64_ns_are_refused(tmp_path, change, message):
    plan = _tiny_plan()
    args = {"bandwidth": plan.bandwidth, "tokens_per_step": plan.tokens_per_step, **change}
    plan = build_plan(plan.clusters, args["bandwidth"], 1, plan.layers, inner_steps=2, grace_window_s=0.0005,
                      tokens_per_step=args["tokens_per_step"])
    with pytest.raises(TraceError) as error:
        write_traces(plan, str(tmp_path / "out"))
    assert message in str(error.value) and not (tmp_path / "out").exists()


def test_a_cluster_pulls_no_faster_than_its_link(tmp_path, capsys):
    """Cluster A pulls two 2000-byte layers from two slaves over its one link to the PS
    cluster, B[0][0] = 2e6 B/s: 2 x 1000 us at least. Old traces: both slaves sent at once,
    each on a link of its own at 2e6 B/s, and A had both layers 1000 us after the notice
    (4000 B/ms, twice what its link carries). Now, in us from the end of the master's
    notice: A's ready to slave 0 0-100, layer 100-1100; ready to slave 1 1100-1200, layer
    1200-2200."""
    plan = build_plan([Cluster("A", 1000.0)], [[2e6]], 2,
                      [Layer("model.layers.0", 2000), Layer("model.layers.1", 2000)], inner_steps=2,
                      grace_window_s=0.0005, tokens_per_step=100)
    write_traces(plan, str(tmp_path), TraceOptions(control_bytes=200, slave_update_bytes_per_s=2e6))
    timeline = tmp_path / "timeline.json"
    assert main(["simulate", str(tmp_path), "--quiet", "--timeline", str(timeline)]) == 0
    capsys.readouterr()
    events = json.loads(timeline.read_text())
    events = [e for e in (events["traceEvents"] if isinstance(events, dict) else events)
              if e.get("ph") == "X" and e["pid"] == 0]
    notice = next(e for e in events if e["name"] == "pull_notice")
    pulls = [e for e in events if e["name"].startswith("pull ")]
    assert len(pulls) == 2
    assert max(e["ts"] + e["dur"] for e in pulls) - (notice["ts"] + notice["dur"]) == pytest.approx(2200)


UNUSUAL = {
    "one cluster": ([Cluster("A", 1000.0)], [[2e6]], 2),
    "one slave": ([Cluster("A", 1000.0), Cluster("B", 500.0), Cluster("C", 800.0)],
                  [[2e6, 1e6, 5e5], [1e6, 2e6, 1e6], [5e5, 1e6, 2e6]], 1),
    "more slaves than layers": ([Cluster("A", 1000.0), Cluster("B", 500.0)], [[2e6, 1e6], [1e6, 2e6]], 7),
    "equal bandwidths": ([Cluster("A", 1000.0), Cluster("B", 1000.0), Cluster("C", 1000.0)], [[1e6] * 3] * 3, 2),
    "asymmetric bandwidths": ([Cluster("A", 1000.0), Cluster("B", 500.0, 0.25), Cluster("C", 2000.0)],
                              [[2e6, 1e4, 4e5], [8e5, 1e6, 3e4], [5e4, 6e5, 2e6]], 3),
}


@pytest.mark.parametrize("name", UNUSUAL)
def test_unusual_plans_print_read_back_and_move_every_layer_at_their_links_rate(name, tmp_path, capsys):
    """The program prints, parses and prints the same text; the traces pass check-trace
    and simulate; every push and pull of cluster c takes its bytes / B[p][c], one at a
    time (a cluster's transfers never overlap on its link)."""
    from xdsl.parser import Parser
    from xdsl.printer import Printer

    from stagec.dialects import make_context

    clusters, bandwidth, slaves = UNUSUAL[name]
    layers = [Layer("model.embed_tokens", 4000), Layer("model.layers.0", 3000), Layer("model.layers.1", 3000),
              Layer("model.norm", 40), Layer("lm_head", 4000)]
    plan = build_plan(clusters, bandwidth, slaves, layers, inner_steps=2, grace_window_s=0.0005, tokens_per_step=100)

    def text(module):
        out = io.StringIO()
        Printer(stream=out).print_op(module)
        return out.getvalue()

    printed = text(module_from_plan(plan))
    assert text(Parser(make_context(), printed).parse_module()) == printed
    assert plan_from_module(Parser(make_context(), printed).parse_module()) == plan

    write_traces(plan, str(tmp_path))
    assert check_trace(str(tmp_path)).ok
    timeline = tmp_path / "timeline.json"
    assert main(["simulate", str(tmp_path), "--quiet", "--timeline", str(timeline)]) == 0
    capsys.readouterr()
    events = json.loads(timeline.read_text())
    events = [e for e in (events["traceEvents"] if isinstance(events, dict) else events) if e.get("ph") == "X"]
    p = plan.ps_cluster
    transfers = {f"{way} {layer.prefix}" for way in ("push", "pull") for layer in layers}
    for c in range(len(clusters)):
        moves = sorted((e for e in events if e["pid"] == c and e["name"] in transfers), key=lambda e: e["ts"])
        assert len(moves) == 2 * len(layers)
        for e in moves:
            if e["name"].startswith("push"):  # the cluster's own send: exactly bytes / B[p][c]
                assert e["dur"] == pytest.approx(e["args"]["bytes"] / bandwidth[p][c] * 1e6, abs=1e-3)  # whole ns
        pulls = [e for e in moves if e["name"].startswith("pull")]
        first = min(e["ts"] for e in pulls)
        assert max(e["ts"] + e["dur"] for e in pulls) - first >= sum(e["args"]["bytes"] for e in pulls) \
            / bandwidth[p][c] * 1e6 * (1 - 1e-9)
