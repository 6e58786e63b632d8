"""stage.md §VI-B's scalability studies (Fig. 12), reproduced as the trends the paper
reports, on stagec's simulator.

Study 1, data-parallel weak scaling: Llama-70B with PP=4 and a fixed per-replica batch
(8 micro-batches of one sequence), DP scaled out. The paper: "compute time stays
constant ... with scaling, communication overhead increases and finally converges,
matching the behavior of data-parallel ring all-reduce". A ring all-reduce moves
2(n-1)/n of the gradients per rank, which rises with n and converges to 2x. Beyond one
node (DP > 8) the DP group is a sub-group ring whose hops cross nodes in two places;
ASTRA-sim's model (and stagec's, ../shared/ASTRA-SIM.md) charges each hop its own link,
so the ring's critical path crosses the slow links only a few times and the step onto
the inter-node network is small; its latency terms, 2(n-1) hops per bucket, grow
linearly in n, so the growth per doubling falls to a few percent and stays there.

Study 2, tensor-parallel strong scaling with sequence parallelism: PaLM-540B (118
layers, d_model 18432, 48 heads of 256, multi-query attention, 73728 FFN, 256k shared
vocabulary) with DP=4 and CP=4 and TP growing. The paper: "compute time decreases with
more GPUs, while communication time remains nearly constant ... per-device
communication volume decreases" while the ring's steps grow. PaLM's 48 heads allow TP
4, 8 and 16 in stagec (TP splits whole heads); a 16-way group spans two 8-GPU nodes on
a two-level network, so the study runs on one NVLink switch domain as large as the job
(stagec's hardware description with every GPU in one node), which isolates TP from the
topology as the paper's Fig. 12b does by reporting TP's own communication.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from stagec.runtime.cost.hardware_description import load_hardware
from stagec.runtime.sim.network import NetworkModel
from stagec.runtime.sim.simulate import simulate_module
from stagec.tools.stagec_cli import _parser
from stagec.tools.step import micro_batches_for, step_bindings, step_module

PALM_540B = {
    "model_type": "llama", "hidden_size": 18432, "num_hidden_layers": 118, "num_attention_heads": 48,
    "num_key_value_heads": 1, "head_dim": 256, "intermediate_size": 73728, "vocab_size": 256000,
    "tie_word_embeddings": True, "rope_theta": 10000.0, "rms_norm_eps": 1e-6,
}


def simulate(argv, hardware):
    args = _parser().parse_args(["simulate", *argv])
    micro_batches = micro_batches_for(args)
    module = step_module(args, micro_batches)
    world = args.dp * args.fsdp * args.ep * args.cp * args.tp * args.pp
    network = NetworkModel.from_hardware(hardware, world)
    report = simulate_module(module, network, step_bindings(args, micro_batches), memory=False)
    return report.actors[0]  # the first pipeline stage (rank 0's part)


def test_data_parallel_weak_scaling_compute_flat_communication_rising_then_flattening():
    hardware = load_hardware("h100-sxm")
    points = {}
    for dp in (1, 2, 4, 8, 16, 32, 64):
        rank = simulate(["--model", "llama3-70b", "--pp", "4", "--dp", str(dp), "--micro-batches", "8",
                         "--seq", "2048"], hardware)
        points[dp] = (rank.compute_ns, rank.transfer_by_channel.get("dp", 0))
    compute = [c for c, _ in points.values()]
    assert max(compute) == min(compute)  # the same per-GPU work at every DP
    comm = [points[dp][1] for dp in sorted(points)]
    assert comm[0] == 0 and all(b > a for a, b in zip(comm, comm[1:]))  # rises ...
    # ... inside the node as 2(n-1)/n does (1, 1.5, 1.75 for n = 2, 4, 8, plus latency terms)
    assert points[4][1] / points[2][1] == pytest.approx(1.5, rel=0.05)
    assert points[8][1] / points[2][1] == pytest.approx(1.75, rel=0.05)
    # ... then flattens: each doubling adds less - 32 -> 64 adds 2(63/64) / 2(31/32) - 1 =
    # 1.6% of bandwidth time, plus the latency terms' few percent
    growth = [b / a for a, b in zip(comm[1:], comm[2:])]
    assert growth[0] > 1.4 and growth[-1] < 1.1 and growth[-2] < 1.1
    assert max(growth[2:]) < growth[1] < growth[0]


def test_tensor_parallel_strong_scaling_with_sp_compute_falls_communication_nearly_constant(tmp_path):
    path = tmp_path / "palm-540b.json"
    path.write_text(json.dumps(PALM_540B))
    spec = load_hardware("h100-sxm")
    hardware = dataclasses.replace(spec, gpus_per_node=4 * 4 * 16)  # one NVLink domain for the whole job
    points = {}
    for tp in (4, 8, 16):
        rank = simulate(["--model", str(path), "--dp", "4", "--cp", "4", "--tp", str(tp), "--sp",
                         "--batch", "8", "--seq", "8192", "--no-optimizer"], hardware)
        points[tp] = (rank.compute_ns, rank.transfer_by_channel.get("tp", 0))
    # compute: TP splits every GEMM and SP every elementwise op, so it halves per doubling
    assert points[8][0] / points[4][0] == pytest.approx(0.5, rel=0.1)
    assert points[16][0] / points[8][0] == pytest.approx(0.5, rel=0.1)
    # TP's communication: the ring's reduce-scatters and all-gathers move (n-1)/n of a
    # buffer of fixed size - 0.75, 0.875, 0.94 of it, a quarter more from TP=4 to 16 -
    # and take n-1 latency-bound steps, so it grows by a third while compute falls
    # four-fold: nearly constant next to compute
    tp_growth = points[16][1] / points[4][1]
    assert 1.0 < tp_growth < 1.5
    assert tp_growth < (points[4][0] / points[16][0]) / 2.5
