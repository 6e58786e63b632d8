"""`stagec run --device` (issue 18 item 2, runtime/exec/device.py): what can be checked
without a GPU.

- The refusals, before any rank starts: `--device cuda` where there is no GPU (this
  machine: the real CLI, exit 2, one line naming csrc's NoGpuError text), and more
  ranks than one host's GPUs without --hostfile.
- The device plumbing: a rank's program given the CPU device explicitly computes the
  same losses as without it, and as plain PyTorch; no tensor allocation in
  runtime/exec leaves its device to torch's default.
- The NCCL communicators' bootstrap: the unique ids go over the MPI world from each
  group's first member (real mpiexec ranks, stand-in ids: bootstrap_ranks.py).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from stagec import csrc
from stagec.runtime.exec import Batches, RankProgram, initial_weight, input_shapes
from stagec.runtime.exec.device import RankDevice, local_rank
from stagec.tools.stagec_cli import main
from stagec.tools.stagec_run import add_arguments, check_device, compile_job
from tests.unit.exec.run_testing import LR, config_file, max_relative_error, torch_losses
from tests.unit.exec.test_rank_program import STEP as OFFLOAD_STEP
from tests.unit.interpreter.interp_testing import parse

REPO = Path(__file__).resolve().parents[3]
NO_GPU = csrc.gpu_count() == 0


# -- refusals -------------------------------------------------------------------------------


@pytest.mark.skipif(not NO_GPU, reason="checks the refusal on a machine without a GPU")
def test_device_cuda_without_a_gpu_is_one_line_and_exit_2(tmp_path):
    config = config_file(tmp_path)
    done = subprocess.run([sys.executable, "-m", "stagec.tools.stagec_cli", "run", "-n", "1", "--model", config,
                           "--device", "cuda", "--steps", "1"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    # csrc's own reason (e.g. "cudaGetDeviceCount: CUDA driver version is insufficient ...")
    reason = csrc.cuda().gpu_status()[1]
    assert done.stderr.splitlines() == [
        f"stagec: error: --device cuda: no GPU: {reason}; run on a machine with a GPU, or give --device cpu"]
    assert "stagec run:" not in done.stdout  # refused before compiling: no job line


def test_more_ranks_than_the_hosts_gpus_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(csrc, "require_gpu", lambda: 2)  # a host with 2 GPUs
    config = config_file(tmp_path)
    code = main(["run", "-n", "4", "--dp", "4", "--model", config, "--device", "cuda", "--steps", "1", "--quiet"])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        "stagec: error: -n 4 --device cuda: this host has 2 GPU(s), one per rank; give a strategy of at most 2 "
        "rank(s), or --hostfile to spread the ranks over hosts with GPUs"]


def test_a_hostfile_lifts_the_one_host_bound(monkeypatch):
    monkeypatch.setattr(csrc, "require_gpu", lambda: 2)
    check_device(argparse.Namespace(device="cuda", ranks=4, hostfile="hosts"))  # 4 ranks over hosts of 2 GPUs
    check_device(argparse.Namespace(device="cuda", ranks=2, hostfile=None))  # one GPU each
    with pytest.raises(Exception, match="this host has 2 GPU"):
        check_device(argparse.Namespace(device="cuda", ranks=3, hostfile=None))


def test_local_rank_comes_from_the_launcher():
    # MPICH's Hydra first, then Open MPI's, PMI's; else the world rank (one host)
    assert local_rank(5, {"MPI_LOCALRANKID": "1", "OMPI_COMM_WORLD_LOCAL_RANK": "3"}) == 1
    assert local_rank(5, {"OMPI_COMM_WORLD_LOCAL_RANK": "3"}) == 3
    assert local_rank(5, {"PMI_LOCAL_RANK": "2"}) == 2
    assert local_rank(5, {}) == 5


# -- the device threaded through the lowering ------------------------------------------------

STEPS, SEQ = 3, 8


def _program_losses(config: str, device) -> list[float]:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["-n", "1", "--model", config, "--seq", str(SEQ), "--lr", str(LR)])
    module, bindings = compile_job(args)
    program = RankProgram(module, bindings, csrc.world(), device=device)
    from stagec.frontends.templates import load_config

    batches = Batches(load_config(config), input_shapes(module, bindings))
    return [program.step(batches.batch(t), t + 1)[0] for t in range(STEPS)]


def test_the_cpu_device_given_explicitly_computes_the_same_losses(tmp_path):
    config = config_file(tmp_path)
    default = _program_losses(config, None)
    explicit = _program_losses(config, RankDevice())
    assert explicit == default  # the same program on the same device: bit for bit
    # and what plain PyTorch computes (run_testing: AdamW, the same weights and batches;
    # the parity bound of issue 18, 1e-5 relative)
    assert max_relative_error(explicit, torch_losses(config, STEPS, batch=1, seq=SEQ)) <= 1e-5


def test_no_tensor_of_a_step_falls_to_torchs_default_device(tmp_path):
    """Under torch.set_default_device("meta") an allocation that names no device lands
    on the meta device, which holds no values: the first read of one fails. Every
    tensor of the rank's step names the rank's device (here the CPU), so the step runs
    and computes what it computes without the default."""
    config = config_file(tmp_path)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    module, bindings = compile_job(parser.parse_args(["-n", "1", "--model", config, "--seq", str(SEQ), "--lr", str(LR)]))
    from stagec.frontends.templates import load_config

    batches = Batches(load_config(config), input_shapes(module, bindings))
    data = [batches.batch(t) for t in range(STEPS)]  # the loader's host batches (the rotary table is the frontend's)
    device = RankDevice()
    torch.set_default_device("meta")
    try:
        program = RankProgram(module, bindings, csrc.world(), device=device)
        losses = [program.step(data[t], t + 1)[0] for t in range(STEPS)]
        offload = RankProgram(parse(OFFLOAD_STEP), {}, csrc.world(), seed=3, device=device)
        offloaded = offload.step({}, 1)[0]
    finally:
        torch.set_default_device(None)
    assert losses == _program_losses(config, None)
    # every parameter and AdamW state (2 per parameter) is on the device
    assert {tensor.device for tensor, _ in program.state.entries.values()} == {device.torch}
    # the offload step reloads w twice and adds: 2w (test_rank_program.py); 2w is exact in f32
    w = initial_weight("w", (4,), seed=3)
    assert torch.equal(offload.state.entries[("params", "w", ())][0], 2 * w)
    assert offloaded == pytest.approx(float((2 * w).sum()), rel=1e-6)


# the torch calls that make a tensor from nothing; *_like, clone and new_* take their
# input's device
FACTORIES = {"empty", "zeros", "ones", "full", "tensor", "as_tensor", "arange", "linspace", "eye", "rand", "randn",
             "randint", "randperm", "empty_strided"}


def _allocations_without_device(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FACTORIES
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"
                and not any(k.arg == "device" for k in node.keywords)):
            found.append(f"{path.relative_to(REPO)}:{node.lineno}: torch.{node.func.attr}")
    return found


def test_no_tensor_allocation_in_the_lowering_omits_its_device():
    files = sorted((REPO / "runtime" / "exec").glob("*.py"))
    # the interpreter's op implementations that a rank runs (its StateStore, state.py,
    # and the inference KV cache, inference.py, are not used by `stagec run`)
    files += [p for p in sorted((REPO / "runtime" / "interpreter").glob("*.py"))
              if p.name not in ("state.py", "inference.py")]
    assert len(files) > 20
    assert [f for p in files for f in _allocations_without_device(p)] == []


def test_the_allocation_scan_sees_a_missing_device(tmp_path):
    # the scan itself: two allocations, one without a device
    probe = REPO / "runtime" / "exec" / f"_probe_{os.getpid()}.py"
    probe.write_text("import torch\nx = torch.zeros(3)\ny = torch.empty(2, device=d)\nz = torch.empty_like(x)\n")
    try:
        assert _allocations_without_device(probe) == [f"runtime/exec/{probe.name}:2: torch.zeros"]
    finally:
        probe.unlink()


# -- the NCCL bootstrap over MPI --------------------------------------------------------------


def _mpiexec() -> str:
    beside = Path(sys.executable).with_name("mpiexec")
    return str(beside) if beside.exists() else "mpiexec"


def test_unique_ids_reach_every_member_of_each_group(tmp_path):
    env = {**os.environ, "MPIR_CVAR_DEVICE_COLLECTIVES": "none"}
    done = subprocess.run([_mpiexec(), "-n", "4", sys.executable, str(Path(__file__).with_name("bootstrap_ranks.py")),
                           str(tmp_path)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    ranks = {r: json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(4)}
    # mesh dp 2 x tp 2, rank = 2 dp + tp: dp groups {0, 2} {1, 3}; tp groups {0, 1}
    # {2, 3}; dp+tp the world. The plan's order is the axis sets sorted by name (dp,
    # dp+tp, tp), each set's groups in the mesh's order, so the first members make, in
    # turn: rank 0 the ids of {0, 2} ("0:1"), of the world ("0:2") and of {0, 1}
    # ("0:3"); rank 1 that of {1, 3} ("1:1"); rank 2 that of {2, 3} ("2:1").
    expected = {
        "dp": {0: ([0, 2], "0:1"), 1: ([1, 3], "1:1"), 2: ([0, 2], "0:1"), 3: ([1, 3], "1:1")},
        "dp+tp": {r: ([0, 1, 2, 3], "0:2") for r in range(4)},
        "tp": {0: ([0, 1], "0:3"), 1: ([0, 1], "0:3"), 2: ([2, 3], "2:1"), 3: ([2, 3], "2:1")},
    }
    for axes, by_rank in expected.items():
        for rank, (members, unique_id) in by_rank.items():
            got = ranks[rank][axes]
            assert (got["members"], got["id"]) == (members, unique_id), (axes, rank, got)
            assert (got["position"], got["size"]) == (members.index(rank), len(members))
    # groups along different axes hold different ids: 5 groups, 5 ids
    assert len({g["id"] for groups in ranks.values() for g in groups.values()}) == 5


# -- bench/gpu_run.py -------------------------------------------------------------------------


@pytest.mark.skipif(not NO_GPU, reason="checks the refusal on a machine without a GPU")
def test_the_gpu_check_refuses_a_machine_without_a_gpu():
    done = subprocess.run([sys.executable, str(REPO / "bench" / "gpu_run.py")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"gpu_run: no GPU: {csrc.cuda().gpu_status()[1]}"]
    assert done.stdout == ""  # nothing ran


@pytest.mark.scale
def test_the_gpu_check_passes_on_the_cpu(tmp_path):
    """The script's checks, run on CPU ranks (`--device cpu`): each passes, including
    the two-rank FSDP offload and profile ones a single GPU cannot run."""
    out = tmp_path / "gpu_run.json"
    done = subprocess.run([sys.executable, str(REPO / "bench" / "gpu_run.py"), "--device", "cpu", "--json", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    checks = json.loads(out.read_text())["checks"]
    assert [c["ok"] for c in checks] == [True, True, True, True], checks
