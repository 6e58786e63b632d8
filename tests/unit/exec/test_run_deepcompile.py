"""`stagec run --fsdp N` with DeepCompile's passes (--prefetch, --unshard, --offload,
--memory-limit; issue 18 "FSDP with each DeepCompile pass and all of them") computes
what one PyTorch process computes, and the passes' decisions really run.

The step is built as `stagec compile` builds it (fully_sharded_step, then
compile_step's profile loop); each case pins what the passes decided and what rank 0
executed (the run's JSON: `decisions`, and `executed`, the communication and memory
ops of its last step), then the per-step losses of 20 AdamW steps in fp32 against
the same model trained by torch in one process (tests/unit/exec/run_testing.py): 1e-5
relative, the issue's bound.

Counts by hand for the tiny Llama (tests/unit/templates/tiny_configs.py: H 16,
2 layers, 4 heads, 2 KV heads, F 24, V 32):
- parameter slices the unrolled step gathers: embed, lm_head, the final norm, and per
  layer q, k, v, o, gate, up, down and 2 norms: 3 + 2 x 9 = 21;
- stg-fully-shard gathers each slice before its forward use and again for the
  backward (released in between): 2 x 21 = 42 all-gathers per micro-batch, and as
  many releases; one reduce-scatter of each gradient slice per micro-batch: 21;
- kept unsharded, each slice is gathered once per step whatever the micro-batches: 21;
- parameters: embed 512 + lm_head 512 + norm 16 + 2 x (256 + 128 + 128 + 256 + 3 x 384
  + 32) = 4944, so all of them gathered are 4944 x 4 B = 19,776 B on every rank;
- a rank's AdamW state over fsdp 2: exp_avg and exp_avg_sq of its 2472 elements,
  2 x 9888 B, plus one f32 step per slice (84 B) = 19,860 B: what stg-offload can move.

Memory limits: stg-unshard keeps a slice only while the profile's peak plus what it
keeps stays under M, and stg-offload moves states only where the peak exceeds M; so
under one M at most one of the two decides. The peak P_mem of the fsdp 2 step is
62,040 B (the cost model's memory analysis; 42,264 B at fsdp 4; 69,948 B with 4
micro-batches): DeepCompile's reduce bucket (stg-reduce-buckets, 5e8 elements) holds
all of a backward's unsharded gradients until the end of the backward, 768 B more than
reducing each one as it is made (61,272 B). Unshard is tested just above it (M = 67 kB
keeps some slices), and at an H100's default M (65.7 GB: all of them); offload below
it (M = 48 kB, 56 kB with 4 micro-batches; at fsdp 4 36 kB, and 40 kB with 4
micro-batches, whose peak is 45,228 B). The profiles come from
the cost model (`--profiler cost-model`: quick, and no Chakra emission); its P_mem
is the simulator's.
"""

from __future__ import annotations

import pytest

from tests.unit.exec.run_testing import compare_with_torch, config_file, parity_tokens

COST_MODEL = ("--profiler", "cost-model")
SLICES = 21  # parameter slices the tiny Llama's unrolled step gathers (module doc)
MODEL_BYTES = 4944 * 4  # every parameter of the tiny Llama in f32


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("deepcompile")
    mixtral = config_file(tmp, "mixtral", capacity_factor=2.0)  # no capacity drops: see the EP parity test
    return tmp, config_file(tmp), mixtral, parity_tokens(tmp)


def _decided(run: dict) -> dict[tuple[str, str], int]:
    return {(d["pass"], d["what"]): d["value"] for d in run["decisions"]}


def _check_offload(run: dict, state_bytes: int) -> None:
    """Fragments offloaded, waited for and reloaded through csrc's HostOffloader on
    rank 0, exactly as stg-offload decided."""
    decided, executed = _decided(run), run["executed"]
    fragments = decided[("stg-offload", "optimizer-state fragments offloaded")]
    assert fragments > 0
    assert executed["stg.offload"] == executed["stg.reload"] == fragments
    assert executed["offloaded bytes"] == decided[("stg-offload", "optimizer-state bytes offloaded")]
    assert 0 < executed["offloaded bytes"] <= state_bytes


def test_fsdp2_with_unshard_keeps_the_smallest_slices_gathered(job):
    # M = 67 kB over the step's peak P_mem of 62,040 B (the step's gradients held in the
    # reduce bucket until the end of the backward) leaves 4,960 B.
    # stg-unshard takes the slices by T_c(B)/B, smallest first (f32, fsdp 2 gathers whole
    # slices): the 5 norms (16 x 4 = 64 B each), the 4 k/v projections (8 x 16 x 4 = 512 B),
    # then q/o (16 x 16 x 4 = 1024 B) while they fit: 320 + 2048 + 2 x 1024 = 4,416 B, 11
    # slices; a third q/o would make 5,440 B and every other slice (gate/up/down 1,536 B,
    # embed/lm_head 2,048 B) is over the 544 B left.
    tmp, llama, _, tokens = job
    _, run = compare_with_torch(tmp, llama, tokens, 2, "--fsdp", "2", *COST_MODEL, "--unshard",
                                "--memory-limit", "0.000067", batch=2)
    decided, executed = _decided(run), run["executed"]
    assert decided[("stg-unshard", "parameters kept gathered")] == 11
    assert decided[("stg-unshard", "bytes kept gathered")] == 5 * 64 + 4 * 512 + 2 * 1024
    # the 11 kept slices gathered once, the other 10 twice: 31 all-gathers instead of 42,
    # each released once
    assert executed["stg.all_gather"] == executed["stg.release"] == 11 + 2 * 10
    assert executed["stg.reduce_scatter"] == SLICES


@pytest.mark.scale
def test_fsdp2_with_unshard_at_an_h100s_limit_keeps_every_slice(job):
    # the default M (65.7 GB) holds the whole model: 21 all-gathers a step, not 42
    tmp, llama, _, tokens = job
    _, run = compare_with_torch(tmp, llama, tokens, 2, "--fsdp", "2", *COST_MODEL, "--unshard", batch=2)
    assert _decided(run)[("stg-unshard", "bytes kept gathered")] == MODEL_BYTES
    assert run["executed"]["stg.all_gather"] == SLICES


def test_fsdp2_with_offload_moves_optimizer_states_through_the_host(job):
    tmp, llama, _, tokens = job
    _, run = compare_with_torch(tmp, llama, tokens, 2, "--fsdp", "2", *COST_MODEL, "--offload", "--memory-limit", "0.000048",
                                batch=2)
    _check_offload(run, state_bytes=2 * 9888 + 84)
    assert run["executed"]["stg.all_gather"] == 2 * SLICES  # offload alone keeps stg-fully-shard's gathers


def test_fsdp2_with_all_passes_and_gradient_accumulation_4(job):
    # 4 micro-batches of 1 sequence per rank: 8 sequences per step. M = 56 kB is under the
    # peak (69,948 B) and over it less every optimizer state (19,860 B): 50,088 B
    tmp, llama, _, tokens = job
    _, run = compare_with_torch(tmp, llama, tokens, 2, "--fsdp", "2", *COST_MODEL, "--prefetch", "--unshard", "--offload",
                                "--memory-limit", "0.000056", batch=2, micro_batches=4)
    decided = _decided(run)
    assert decided[("stg-prefetch", "all-gathers issued earlier")] > 0
    assert decided[("stg-unshard", "parameters kept gathered")] == 0  # M is under the peak (module doc)
    _check_offload(run, state_bytes=2 * 9888 + 84)
    assert run["executed"]["stg.all_gather"] == 4 * 2 * SLICES  # every micro-batch gathers each slice twice


def test_fsdp2_mixtral_with_all_passes(job):
    # M = 115 kB, over the Mixtral step's peak P_mem after stg-prefetch (113,504 B; 97,888
    # B before it): unshard keeps some slices and nothing is over M to offload. The Mixtral's slices: embed, lm_head,
    # norm, and per layer q, k, v, o, the router, the stacked experts' w1, w3, w2 and
    # 2 norms: 3 + 2 x 10 = 23, each gathered twice unless kept.
    tmp, _, mixtral, tokens = job
    _, run = compare_with_torch(tmp, mixtral, tokens, 2, "--fsdp", "2", *COST_MODEL, "--prefetch", "--unshard",
                                "--offload", "--memory-limit", "0.000115", batch=2)
    decided = _decided(run)
    kept = decided[("stg-unshard", "parameters kept gathered")]
    assert kept > 0 and decided[("stg-prefetch", "all-gathers issued earlier")] > 0
    assert run["executed"]["stg.all_gather"] == 2 * 23 - kept
    assert decided[("stg-offload", "optimizer-state fragments offloaded")] == 0
    assert "stg.offload" not in run["executed"]


@pytest.mark.scale
def test_fsdp2_with_all_passes_keeps_slices_across_gradient_accumulation(job):
    # the default M keeps every slice (§4.3: across gradient-accumulation steps): 21
    # all-gathers a step for the 4 micro-batches, where stg-fully-shard's take 4 x 42 = 168
    tmp, llama, _, tokens = job
    _, run = compare_with_torch(tmp, llama, tokens, 2, "--fsdp", "2", *COST_MODEL, "--prefetch", "--unshard",
                                "--offload", batch=2, micro_batches=4)
    assert _decided(run)[("stg-unshard", "parameters kept gathered")] == SLICES
    assert run["executed"]["stg.all_gather"] == SLICES
    assert run["executed"]["stg.reduce_scatter"] == 4 * SLICES  # gradients still leave every micro-batch


@pytest.mark.scale
def test_fsdp4_with_unshard(job):
    tmp, llama, _, tokens = job
    _, run = compare_with_torch(tmp, llama, tokens, 4, "--fsdp", "4", *COST_MODEL, "--unshard", batch=4)
    assert run["executed"]["stg.all_gather"] == SLICES


@pytest.mark.scale
def test_fsdp4_with_offload(job):
    # a rank's AdamW state over fsdp 4: 2 x 1236 x 4 B, plus the 84 B of steps: 9,972 B;
    # M = 36 kB is under the peak (42,264 B) and over it less all of them (32,292 B)
    tmp, llama, _, tokens = job
    _, run = compare_with_torch(tmp, llama, tokens, 4, "--fsdp", "4", *COST_MODEL, "--offload", "--memory-limit", "0.000036",
                                batch=4)
    _check_offload(run, state_bytes=2 * 4944 + 84)


@pytest.mark.scale
def test_fsdp4_with_all_passes(job):
    # M = 50 kB over the fsdp 4 step's peak (42,264 B; 47,964 B once prefetched at 48 kB,
    # which left no slice room): unshard keeps some slices
    tmp, llama, _, tokens = job
    _, run = compare_with_torch(tmp, llama, tokens, 4, "--fsdp", "4", *COST_MODEL, "--prefetch", "--unshard",
                                "--offload", "--memory-limit", "0.000050", batch=4)
    decided = _decided(run)
    kept = decided[("stg-unshard", "parameters kept gathered")]
    assert kept > 0 and decided[("stg-prefetch", "all-gathers issued earlier")] > 0
    assert run["executed"]["stg.all_gather"] == 2 * SLICES - kept


@pytest.mark.scale
def test_fsdp4_with_all_passes_and_gradient_accumulation_4(job):
    # M = 40 kB: under the peak (45,228 B), over it less the 9,972 B of states (35,256 B)
    tmp, llama, _, tokens = job
    _, run = compare_with_torch(tmp, llama, tokens, 4, "--fsdp", "4", *COST_MODEL, "--prefetch", "--unshard", "--offload",
                                "--memory-limit", "0.000040", batch=4, micro_batches=4)
    _check_offload(run, state_bytes=2 * 4944 + 84)


@pytest.mark.scale
def test_fsdp4_mixtral(job):
    tmp, _, mixtral, tokens = job
    _, run = compare_with_torch(tmp, mixtral, tokens, 4, "--fsdp", "4", batch=4)
    assert run["decisions"] == []  # no DeepCompile pass: FSDP's units


@pytest.mark.scale
def test_fsdp4_mixtral_with_all_passes_offloading(job):
    # M = 55 kB, below the fsdp 4 Mixtral step's simulated peak (68,384 B). The tiny
    # Mixtral's parameters: embed 512 + lm_head 512 + norm 16 + 2 layers x (q 256, k 128,
    # v 128, o 256, norms 32, router E x H = 64, w1, w3, w2 E x FE x H = 768 each) = 7376;
    # a rank's AdamW state over fsdp 4: 2 x 1844 x 4 B + 23 steps x 4 B = 14,844 B
    tmp, _, mixtral, tokens = job
    _, run = compare_with_torch(tmp, mixtral, tokens, 4, "--fsdp", "4", *COST_MODEL, "--prefetch", "--unshard", "--offload",
                                "--memory-limit", "0.000055", batch=4)
    _check_offload(run, state_bytes=2 * 1844 * 4 + 23 * 4)


@pytest.mark.parametrize(("options", "message"), [
    (["-n", "2", "--dp", "2", "--unshard"], "--unshard keeps FSDP's parameters gathered: give --fsdp N with N > 1"),
    (["-n", "4", "--dp", "2", "--fsdp", "2", "--offload"],
     "--offload runs DeepCompile's passes on a fully-sharded step: give --fsdp N alone (not with --dp 2)"),
    (["-n", "1", "--memory-limit", "1"],
     "--memory-limit is for DeepCompile's passes: give --prefetch, --unshard or --offload"),
    (["-n", "2", "--fsdp", "2", "--offload", "--memory-limit", "0"], "--memory-limit 0.0: a size in GB > 0"),
    (["-n", "2", "--ir", "step.mlir", "--unshard"],
     "--ir runs the module step.mlir as it was compiled: drop --unshard (give it to `stagec compile`)"),
    # 10 kB is under what the optimizer step itself needs with its states on the device:
    # stg-offload's own message, once (not prefixed by the pass name twice)
    (["-n", "2", "--fsdp", "2", "--offload", "--memory-limit", "0.00001", *COST_MODEL],
     "stg-offload: the optimizer step needs 19784 bytes with its states on the device, over the memory limit "
     "10000: the states it updates cannot stay on the host"),
])
def test_deepcompile_jobs_that_cannot_run_are_refused_before_launch(tmp_path, capsys, options, message):
    from stagec.tools.stagec_cli import main

    code = main(["run", *options, "--model", config_file(tmp_path), "--seq", "8", "--steps", "1", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err == f"stagec: error: {message}\n", err
