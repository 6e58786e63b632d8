"""`stagec run --checkpoint DIR` saves every rank's shards (parameters and AdamW's
states) and `--resume` starts from them: 3 steps, then 3 more resumed, give the losses
of 6 steps in one run, bit for bit (the same ops on the same values); a resume of
another job is refused before launch."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.unit.exec.run_testing import config_file, stagec_run


def test_resume_continues_the_run_exactly(tmp_path):
    config = config_file(tmp_path)
    common = ["-n", "2", "--fsdp", "2", "--model", config, "--seq", "8"]
    whole = stagec_run(*common, "--steps", "6", tmp_path=tmp_path)["losses"]
    ckpt = tmp_path / "ckpt"
    first = stagec_run(*common, "--steps", "3", "--checkpoint", str(ckpt), tmp_path=tmp_path)["losses"]
    assert json.loads((ckpt / "latest.json").read_text()) == {"step": 3, "ranks": 2, "fingerprint": json.loads(
        (ckpt / "latest.json").read_text())["fingerprint"]}
    assert sorted(p.name for p in ckpt.iterdir()) == ["latest.json", "rank0.pt", "rank1.pt"]  # no temporary left
    resumed = stagec_run(*common, "--steps", "3", "--checkpoint", str(ckpt), "--resume", tmp_path=tmp_path)["losses"]
    assert first + resumed == whole
    assert json.loads((ckpt / "latest.json").read_text())["step"] == 6


def test_resume_of_another_job_is_refused(tmp_path):
    config = config_file(tmp_path)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    # what a run of another job leaves (its program's fingerprint differs)
    (ckpt / "latest.json").write_text(json.dumps({"step": 1, "ranks": 2, "fingerprint": "0123456789abcdef"}))
    done = subprocess.run([sys.executable, "-m", "stagec.tools.stagec_cli", "run", "-n", "2", "--fsdp", "2", "--model",
                           config, "--seq", "8", "--steps", "1", "--checkpoint", str(ckpt), "--resume", "--quiet"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2  # refused before any rank starts
    assert done.stderr.startswith(f"stagec: error: --resume: the checkpoint in {ckpt} is of another job"), done.stderr
