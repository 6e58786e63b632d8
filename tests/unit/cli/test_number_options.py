"""Number options given nan, inf or a value out of range (issue 17, review): argparse's
one line naming the option, exit status 2. `float('nan')` passes every `< 0` check and
failed later as a traceback (`int(nan * 2**30)` in dse, stg-bucket-gradients' internals
in stats); `--timeout -1` started a Di-PS deployment that gave up at once."""

from __future__ import annotations

import pytest

from stagec.tools import stagec_cli

TINY = "examples/tiny.json"

CASES = [
    (["stats", "--model", TINY], "--bucket-mb", "nan", "'nan' is not a finite number"),
    (["stats", "--model", TINY], "--bucket-mb", "inf", "'inf' is not a finite number"),
    (["stats", "--model", TINY], "--bucket-mb", "-1", "-1 must be at least 0"),
    (["trace", "--model", TINY, "--out", "unused"], "--bucket-mb", "nan", "'nan' is not a finite number"),
    (["simulate", "--model", TINY], "--bucket-mb", "inf", "'inf' is not a finite number"),
    (["summary", "--model", TINY], "--bucket-mb", "-0.5", "-0.5 must be at least 0"),
    (["compile", "--model", TINY, "--fsdp", "2", "-o", "unused.mlir"], "--prefetch-limit", "nan",
     "'nan' is not a finite number"),
    (["compile", "--model", TINY, "--fsdp", "2", "-o", "unused.mlir"], "--memory-limit", "inf",
     "'inf' is not a finite number"),
    (["dse", "--model", TINY, "--gpus", "4"], "--hbm", "nan", "'nan' is not a finite number"),
    (["dse", "--model", TINY, "--gpus", "4"], "--hbm", "inf", "'inf' is not a finite number"),
    (["ps", "plan", "examples/ps/tiny4.yaml", "--trace", "unused"], "--latency-us", "nan",
     "'nan' is not a finite number"),
    (["ps", "plan", "examples/ps/tiny4.yaml", "--trace", "unused"], "--update-rate", "inf",
     "'inf' is not a finite number"),
    (["ps", "run", "examples/ps/tiny4.yaml"], "--timeout", "-1", "-1 must be greater than 0"),
    (["ps", "run", "examples/ps/tiny4.yaml"], "--timeout", "0", "0 must be greater than 0"),
    (["run", "-n", "2", "--model", TINY], "--lr", "nan", "'nan' is not a finite number"),
    (["run", "-n", "2", "--model", TINY], "--bucket-mb", "inf", "'inf' is not a finite number"),
    (["run", "-n", "2", "--model", TINY], "--memory-limit", "nan", "'nan' is not a finite number"),
]


@pytest.mark.parametrize("command, option, value, why", CASES,
                         ids=[f"{c[0][0]}{'-' + c[0][1] if c[0][0] == 'ps' else ''}{c[1]}={c[2]}" for c in CASES])
def test_number_option(capsys, command, option, value, why):
    with pytest.raises(SystemExit) as exit:
        stagec_cli.main([*command, f"{option}={value}"])
    assert exit.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    prog = " ".join(["stagec", *command[:2]]) if command[0] == "ps" else f"stagec {command[0]}"
    assert last == f"{prog}: error: argument {option}: {why}"
