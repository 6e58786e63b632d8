"""The simulator end to end on real jobs: identical ranks simulated once give every
rank's exact times, a trace directory simulates as the IR it came from, the peak
memory is `stagec stats`'s, and the timeline holds one slice per node."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stagec.passes.analysis.accounting import account
from stagec.passes.analysis.reserved import reserved_memory
from stagec.runtime.chakra.emit import EmitOptions, build_programs, emit_traces
from stagec.runtime.cost.hardware_description import load_hardware
from stagec.runtime.sim.engine import simulate
from stagec.runtime.sim.from_chakra import read_trace_dir
from stagec.runtime.sim.from_ir import build_actors
from stagec.runtime.sim.network import NetworkModel
from stagec.runtime.sim.simulate import simulate_module
from stagec.tools.stagec_cli import _parser
from stagec.tools.stagec_stats import micro_batches_of, training_step

JOBS = {
    "dp2 tp2 pp2": ["--model", "llama3.2-1b", "--dp", "2", "--tp", "2", "--pp", "2", "--batch", "4", "--seq", "256"],
    "ep2 pp2 recompute": ["--model", "mixtral-8x7b", "--ep", "2", "--pp", "2", "--batch", "4", "--seq", "128",
                          "--recompute"],
    "fsdp4": ["--model", "llama3.2-1b", "--fsdp", "4", "--batch", "4", "--seq", "256"],
    "cp2 tp2 sp zero1 dp2": ["--model", "llama3.2-1b", "--dp", "2", "--cp", "2", "--tp", "2", "--sp", "--zero", "1",
                             "--batch", "2", "--seq", "256"],
}


def job(argv):
    args = _parser().parse_args(["simulate", *argv])
    micro_batches = micro_batches_of(args)
    module = training_step(args, micro_batches)
    bindings = {"B": args.micro_batch * args.dp * args.fsdp * args.ep, "S": args.seq, "M": micro_batches}
    world = args.dp * args.fsdp * args.ep * args.cp * args.tp * args.pp
    return module, bindings, world


def per_rank(actors, times):
    """rank -> (finish, every node's end), for actors that stand for several ranks too."""
    return {r: (t.finish, list(t.end)) for a, t in zip(actors, times) for r in a.ranks}


@pytest.mark.parametrize("name", JOBS)
def test_identical_ranks_simulated_once_are_exact(name):
    # 4 GPUs per node: the groups of these jobs cross nodes differently, so the
    # partition must split classes where the network makes ranks differ.
    module, bindings, world = job(JOBS[name])
    hardware = load_hardware("h100-sxm")
    network = NetworkModel.from_hardware(hardware, world)
    programs, space = build_programs(module, bindings)
    merged = build_actors(programs, space, network)
    alone = build_actors(programs, space, network, merge=False)
    assert len(alone) == world and len(merged) < world
    assert per_rank(merged, simulate(merged)) == per_rank(alone, simulate(alone))


def test_a_network_that_makes_ranks_differ_splits_their_class(tmp_path):
    # dp=2 x tp=4 on nodes of 2 GPUs: a tp group spans two nodes, so tp rank pairs
    # (0,1) and (2,3) sit in different nodes; every rank still runs one program, and
    # the parts must agree with simulating every rank.
    module, bindings, world = job(["--model", "llama3.2-1b", "--dp", "2", "--tp", "4", "--batch", "2", "--seq", "256"])
    spec = json.loads(open(load_hardware.__globals__["HARDWARE_DIR"] / "h100-sxm.json").read())
    spec["gpus_per_node"] = 2
    path = tmp_path / "two-per-node.json"
    path.write_text(json.dumps(spec))
    network = NetworkModel.from_hardware(load_hardware(str(path)), world)
    programs, space = build_programs(module, bindings)
    merged = build_actors(programs, space, network)
    alone = build_actors(programs, space, network, merge=False)
    assert per_rank(merged, simulate(merged)) == per_rank(alone, simulate(alone))


@pytest.mark.parametrize("name", ["dp2 tp2 pp2", "ep2 pp2 recompute"])
def test_a_trace_directory_simulates_as_the_ir_it_came_from(name, tmp_path):
    # The trace holds whole microseconds: the IR simulated with the same rounding
    # (trace_times) gives every rank the same finish and every node the same end.
    module, bindings, world = job(JOBS[name])
    network = NetworkModel.from_hardware(load_hardware("h100-sxm"), world)
    programs = build_programs(module, bindings)
    emit_traces(module, str(tmp_path), bindings, programs=programs, options=EmitOptions(workers=1))
    from_ir = build_actors(*programs, network, trace_times=True)
    from_dir, dir_world, _ = read_trace_dir(str(tmp_path), network)
    assert dir_world == world
    assert per_rank(from_ir, simulate(from_ir)) == per_rank(from_dir, simulate(from_dir))


@pytest.mark.parametrize("name", ["dp2 tp2 pp2", "fsdp4"])
def test_peak_memory_is_the_memory_analysis_and_the_series_reaches_it(name, tmp_path):
    module, bindings, world = job(JOBS[name])
    network = NetworkModel.from_hardware(load_hardware("h100-sxm"), world)
    hardware = load_hardware("h100-sxm")
    report = simulate_module(module, network, bindings, timeline=str(tmp_path / "t.json"), hardware=hardware)
    # stagec stats's numbers: the live peak and the reserved peak of each rank class
    peaks = {tuple(rc.ranks): (rc.memory.peak_bytes, reserved_memory(rc.memory, hardware).peak_bytes)
             for rc in account(module, bindings).rank_classes}
    for a in report.actors:
        live, reserved = next(p for ranks, p in peaks.items() if a.ranks[0] in ranks)
        assert (a.peak_memory_bytes, a.reserved_memory_bytes) == (live, reserved)
        assert reserved > live
    doc = json.loads((tmp_path / "t.json").read_text())
    for a in report.actors:
        series = [e["args"]["bytes"] for e in doc["traceEvents"] if e["ph"] == "C" and e["pid"] == a.ranks[0]]
        assert max(series) == a.peak_memory_bytes
        times = [e["ts"] for e in doc["traceEvents"] if e["ph"] == "C" and e["pid"] == a.ranks[0]]
        assert times == sorted(times) and times[-1] <= a.finish_ns / 1000


def test_timeline_has_one_slice_per_node_on_its_engine(tmp_path):
    module, bindings, world = job(JOBS["dp2 tp2 pp2"])
    network = NetworkModel.from_hardware(load_hardware("h100-sxm"), world)
    report = simulate_module(module, network, bindings, timeline=str(tmp_path / "t.json"))
    doc = json.loads((tmp_path / "t.json").read_text())
    events = doc["traceEvents"]
    for a in report.actors:
        slices = [e for e in events if e["ph"] == "X" and e["pid"] == a.ranks[0]]
        assert len(slices) == a.nodes
        colls = [e for e in slices if e["tid"] == 2 and e["args"]["kind"] == "all_reduce"]
        assert colls and all(e["args"]["bytes"] > 0 and e["args"]["group"] for e in colls)
        # the compute track's slices never overlap: one compute engine
        compute = sorted((e["ts"], e["ts"] + e["dur"]) for e in slices if e["tid"] == 1)
        assert all(b[0] >= a_[1] - 1e-9 for a_, b in zip(compute, compute[1:]))
        end = max(e["ts"] + e["dur"] for e in slices)
        assert end == pytest.approx(a.finish_ns / 1000, abs=1e-3)
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {"compute", "communication", "copy"}


def test_a_trace_directory_decodes_one_file_per_class_only_while_its_files_are_unchanged(tmp_path, monkeypatch):
    # With <prefix>.ranks.json and unchanged files, one file per class is decoded and
    # the identical ranks are merged; without it (or after a file changed) every file
    # is decoded. Every rank's times agree in all three.
    from stagec.runtime.sim import from_chakra

    module, bindings, world = job(JOBS["dp2 tp2 pp2"])
    network = NetworkModel.from_hardware(load_hardware("h100-sxm"), world)
    programs = build_programs(module, bindings)
    emit_traces(module, str(tmp_path), bindings, programs=programs, options=EmitOptions(workers=1))
    decoded = []
    original = from_chakra.read_rank
    monkeypatch.setattr(from_chakra, "read_rank", lambda path, *a: decoded.append(path) or original(path, *a))
    fast, _, _ = read_trace_dir(str(tmp_path), network)
    assert len(decoded) == 2 and len(fast) == 2  # two pipeline stages: two classes, two actors
    alone, _, _ = read_trace_dir(str(tmp_path), network, merge=False)
    expected = per_rank(alone, simulate(alone))
    assert per_rank(fast, simulate(fast)) == expected
    decoded.clear()
    (tmp_path / "trace.5.et").write_bytes((tmp_path / "trace.5.et").read_bytes())  # same bytes: still fast
    read_trace_dir(str(tmp_path), network)
    assert len(decoded) == 2
    decoded.clear()
    doc = json.loads((tmp_path / "trace.ranks.json").read_text())
    doc["files"]["5"][1] = "0" * 32  # as if trace.5.et had changed since it was written
    (tmp_path / "trace.ranks.json").write_text(json.dumps(doc))
    changed, _, _ = read_trace_dir(str(tmp_path), network)
    assert len(decoded) == world and per_rank(changed, simulate(changed)) == expected
    decoded.clear()
    (tmp_path / "trace.ranks.json").unlink()
    slow, _, _ = read_trace_dir(str(tmp_path), network)
    assert len(decoded) == world and per_rank(slow, simulate(slow)) == expected


def _write_ring_job(directory, nodes_of_rank):
    from stagec.runtime.chakra.wire import TraceWriter

    for rank in range(8):
        with TraceWriter(f"{directory}/trace.{rank}.et") as w:
            for node in nodes_of_rank(rank):
                w.write(node)


def test_a_trace_on_astra_sims_files_takes_the_time_derived_by_hand(tmp_path):
    # ../shared/ASTRA-SIM.md: an all-reduce of 16 MiB on 8 ranks of a 50 GB/s, 500 ns
    # ring, one chunk, takes 10 + 14 * 39,572 + 7 * 3,930 = 581,528 ns. Independent of a
    # 100 us compute node it overlaps it; a 50 us node after both ends at 631,528 ns. On
    # rank 3 the compute takes 700 us: every rank's all-reduce then starts at 700,000
    # (stagec starts a collective when its last member issues it) and rank 3 ends at
    # 700,000 + 581,528 + 50,000 = 1,331,528 ns, the others 50 us after the all-reduce too.
    from stagec.runtime.chakra.schema import CommType, Node, NodeType

    def nodes(rank):
        return [
            Node(0, "compute", NodeType.COMP_NODE, duration_micros=700 if rank == 3 else 100),
            Node(1, "all_reduce", NodeType.COMM_COLL_NODE,
                 data_deps=[0] if rank == 3 else [],
                 attrs={"comm_type": int(CommType.ALL_REDUCE), "comm_size": 16 << 20}),
            Node(2, "after", NodeType.COMP_NODE, data_deps=[0, 1], duration_micros=50),
        ]

    _write_ring_job(tmp_path, nodes)
    data = Path(__file__).parent / "data"
    network = NetworkModel.from_astra(str(data / "ring_8npus.yml"), str(data / "ring_1chunk.json"))
    actors, _, _ = read_trace_dir(str(tmp_path), network)
    finish = {r: t.finish for a, t in zip(actors, simulate(actors)) for r in a.ranks}
    assert finish == {r: 700_000 + 581_528 + 50_000 for r in range(8)}
    # without rank 3's dependency every rank overlaps compute and the all-reduce
    (tmp_path / "trace.3.et").unlink()

    def overlapped(rank):
        return [
            Node(0, "compute", NodeType.COMP_NODE, duration_micros=100),
            Node(1, "all_reduce", NodeType.COMM_COLL_NODE,
                 attrs={"comm_type": int(CommType.ALL_REDUCE), "comm_size": 16 << 20}),
            Node(2, "after", NodeType.COMP_NODE, data_deps=[0, 1], duration_micros=50),
        ]

    _write_ring_job(tmp_path, overlapped)
    actors, _, _ = read_trace_dir(str(tmp_path), network)
    assert len(actors) == 1  # eight identical ranks, simulated once
    (times,) = simulate(actors)
    assert times.finish == 581_528 + 50_000
