"""stagec-opt as users meet it: exit codes, one-message errors, -o, --help, pipelines.

Most tests run the installed `stagec-opt` console script as a subprocess, since exit
codes and stray tracebacks are what they are about. The ones that need a pass stagec
does not have (one with options, one that fails, one that crashes) call `main` in
this process with the pass added to the registry.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from stagec.dialects import all_dialects, make_context
from stagec.passes import all_passes
from stagec.tools import diagnostics, pipeline_spec, stagec_opt
from stagec.tools.errors import UsageError

VALID = "func.func @f() {\n  func.return\n}\n"
# func.return gives no value, but @g returns an i32: fails func.return's verifier.
INVALID = "func.func @g(%a: i32) -> i32 {\n  func.return\n}\n"
MALFORMED = "func.func @f() {\n  func.return\n"


def _stagec_opt_command() -> list[str]:
    # The console script beside this interpreter, so the test needs no activated venv.
    script = shutil.which("stagec-opt", path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, "-m", "stagec.tools.stagec_opt"]


def run_stagec_opt(*args: str | Path, stdin: str = ""):
    return subprocess.run(
        [*_stagec_opt_command(), *map(str, args)],
        input=stdin,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def mlir_file(tmp_path: Path) -> Callable[[str], Path]:
    def write(text: str, name: str = "input.mlir") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


# ---------------------------------------------------------------- errors: exit code 2


ERROR_CASES = {
    # the region the missing '}' would close opens at line 1, column 16 (issue 17, class 8)
    "parse error": (["{file}"], MALFORMED, "input.mlir:1:16: error: expected '}' before the end of the input"),
    "verify error": (
        ["{file}"],
        INVALID,
        (
            "input.mlir:2:3: error: 'func.return' op Expected arguments to have the same"
            " types as the function output types: expected [i32], got []"
        ),
    ),
    "attribute that does not verify": (
        ["{file}"],
        'func.func @f() {\n  "func.return"() {a = 300 : i8} : () -> ()\n}\n',
        "input.mlir:2:3: error: Integer value 300 is out of range for type i8",
    ),
    "unknown pass": (
        ["{file}", "-p", "cs"],
        VALID,
        "unknown pass 'cs'; did you mean 'cse'?",
    ),
    "unknown pass option": (
        ["{file}", "--pass-pipeline=builtin.module(cse{max-iterations=2})"],
        VALID,
        "unknown option 'max-iterations' for pass 'cse' (its options: none)",
    ),
    "wrong option type": (
        ["{file}", "-t", "mlir{print-generic-format=3}"],
        VALID,
        "option 'print-generic-format' of target 'mlir' expects bool, got '3'",
    ),
    "malformed pipeline": (
        ["{file}", "--pass-pipeline=builtin.module(cse,,dce)"],
        VALID,
        "malformed pass pipeline at column 5: Expected pass name here",
    ),
    "nested pipeline": (
        ["{file}", "--pass-pipeline=builtin.module(func.func(cse))"],
        VALID,
        "nested pass pipelines such as 'func.func(...)' are not supported",
    ),
    "both pipeline flags": (
        ["{file}", "-p", "cse", "--pass-pipeline=builtin.module(cse)"],
        VALID,
        "with -p/--passes or with --pass-pipeline, not both",
    ),
    "unknown target": (
        ["{file}", "-t", "mlr"],
        VALID,
        "unknown target 'mlr'; did you mean 'mlir'?",
    ),
    "missing input": (
        ["{missing}"],
        VALID,
        "cannot open input file '{missing}': No such file or directory",
    ),
    "unknown flag": (
        ["{file}", "--frobnicate"],
        VALID,
        "unrecognized arguments: --frobnicate",
    ),
}


@pytest.mark.parametrize("case", ERROR_CASES)
def test_error_is_one_message_and_exit_code_2(case: str, mlir_file, tmp_path: Path):
    args, text, expected = ERROR_CASES[case]
    path = mlir_file(text)
    missing = tmp_path / "missing.mlir"

    def fill(text: str) -> str:  # not str.format: pass options have braces too
        return text.replace("{file}", str(path)).replace("{missing}", str(missing))

    result = run_stagec_opt(*map(fill, args))

    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert fill(expected) in result.stderr
    assert result.stderr.count("error:") == 1, result.stderr


def test_parse_error_points_at_the_place_in_the_file(mlir_file):
    path = mlir_file(
        "func.func @f() {\n  %0 = arith.constant 1 : i32\n  func.return\n}\n"
    )

    result = run_stagec_opt(path)

    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        (
            f"{path}:2:8: error: unregistered operation 'arith.constant' (known"
            f" dialects: {', '.join(all_dialects())}; --allow-unregistered-dialect"
            " accepts other ops in generic form)"
        ),
        "  %0 = arith.constant 1 : i32",
        "       ^^^^^^^^^^^^^^",
    ]


def test_split_input_file_errors_count_lines_from_the_top_of_the_file(mlir_file):
    path = mlir_file(VALID + "\n// -----\n\n" + INVALID)

    result = run_stagec_opt(path, "--split-input-file")

    assert result.returncode == 2
    # VALID's 3 lines, a blank one, the separator, a blank one, then INVALID's 2nd line.
    assert result.stderr.startswith(f"{path}:8:3: error: 'func.return' op")


def test_verify_diagnostics_prints_the_error_and_exits_0(mlir_file):
    path = mlir_file(INVALID)

    result = run_stagec_opt(path, "--verify-diagnostics")

    assert result.returncode == 0
    assert result.stdout.startswith(f"{path}:2:3: error: 'func.return' op")
    assert result.stderr == ""


def test_ir_built_invalid_while_parsing_is_a_verify_diagnostic(mlir_file):
    path = mlir_file(
        'func.func @f() {\n  "func.return"() {a = 300 : i8} : () -> ()\n}\n'
    )

    assert run_stagec_opt(path, "--parsing-diagnostics").returncode == 2
    result = run_stagec_opt(path, "--verify-diagnostics")
    assert result.returncode == 0
    assert result.stdout.startswith(f"{path}:2:3: error: Integer value 300")


def test_stdin_is_read_when_no_file_or_dash_is_given():
    for args in ([], ["-"]):
        result = run_stagec_opt(*args, stdin=VALID)
        assert result.returncode == 0
        assert "func.func @f()" in result.stdout

    result = run_stagec_opt(stdin=MALFORMED)
    assert result.returncode == 2
    assert result.stderr.startswith("<stdin>:1:16: error: expected '}' before the end of the input")


# ---------------------------------------------------------------- -o FILE


def test_output_file_is_written_on_success(mlir_file, tmp_path: Path):
    output = tmp_path / "out.mlir"

    result = run_stagec_opt(mlir_file(VALID), "-o", output)

    assert result.returncode == 0
    assert result.stdout == ""
    assert output.read_text() == run_stagec_opt(mlir_file(VALID)).stdout


@pytest.mark.parametrize("text", [MALFORMED, INVALID])
def test_failed_run_leaves_no_output_file_behind(text: str, mlir_file, tmp_path: Path):
    path = mlir_file(text)
    output = tmp_path / "out.mlir"

    result = run_stagec_opt(path, "-o", output)

    assert result.returncode == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input.mlir"]


def test_failed_run_keeps_the_previous_output(mlir_file, tmp_path: Path):
    output = tmp_path / "out.mlir"
    output.write_text("previous output\n")

    # The first chunk is done before the second fails: as mlir-opt, the run goes on and
    # fails, and a failed run keeps no output - none of it may reach `output`.
    result = run_stagec_opt(
        mlir_file(VALID + "// -----\n" + INVALID), "--split-input-file", "-o", output
    )

    assert result.returncode == 2
    assert output.read_text() == "previous output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input.mlir", "out.mlir"]


# ---------------------------------------------------------------- --help, --version


def test_help_teaches_the_tool():
    result = run_stagec_opt("--help")

    assert result.returncode == 0
    help_text = result.stdout
    assert "stagec-opt parses an MLIR file" in help_text
    assert "--pass-pipeline" in help_text
    assert "stagec-opt examples/mlp.mlir --pass-pipeline='builtin.module(" in help_text
    for name in [*all_dialects(), *all_passes(), "mlir"]:
        assert f"\n  {name} " in help_text, name
    assert "(undocumented)" not in help_text


def test_help_describes_dialects_by_their_module_docstring():
    help_text = run_stagec_opt("--help").stdout

    torch_row = next(
        line for line in help_text.splitlines() if line.startswith("  torch ")
    )
    assert "generic-form subset of torch-mlir's torch dialect" in torch_row


def test_version_names_stagec_and_xdsl():
    from importlib.metadata import version

    result = run_stagec_opt("--version")

    assert result.returncode == 0
    assert f"stagec {version('stagec')}" in result.stdout
    assert f"xDSL {version('xdsl')}" in result.stdout


# ---------------------------------------------------------------- pipelines


@pytest.mark.parametrize(
    ("mlir", "xdsl"),
    [
        ("builtin.module(cse,dce)", "cse,dce"),
        ("builtin.module( cse , dce )", "cse,dce"),
        ("cse,dce", "cse,dce"),
        ("builtin.module()", ""),
        ("builtin.module(a{x=1 y=2,3},b)", "a{x=1 y=2,3},b"),
        ('builtin.module(a{s="x (y)"})', 'a{s="x (y)"}'),
    ],
)
def test_mlir_pass_pipeline_is_translated_to_xdsl_spelling(mlir: str, xdsl: str):
    assert pipeline_spec.xdsl_pass_pipeline(mlir) == xdsl


@pytest.mark.parametrize(
    ("mlir", "message"),
    [
        ("builtin.module(func.func(cse))", "'func.func(...)' are not supported"),
        ("func.func(cse)", "'func.func(...)' are not supported"),
        ("builtin.module(cse,any(dce))", "'any(...)' are not supported"),
        ("builtin.module(cse),dce", "expected one 'builtin.module("),
        ("builtin.module(cse", "unbalanced parentheses"),
        ("builtin.module(cse{x=1)", "unbalanced braces or quotes"),
    ],
)
def test_unsupported_pass_pipelines_are_rejected(mlir: str, message: str):
    with pytest.raises(UsageError, match=re.escape(message)):
        pipeline_spec.xdsl_pass_pipeline(mlir)


@dataclass(frozen=True)
class RecordOptions(ModulePass):
    """Record this pass's options on the module, for the tests to read back."""

    name = "test-record-options"

    factor: int = 1
    sizes: tuple[int, ...] = ()
    enabled: bool = False
    label: str = ""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        op.attributes["test.options"] = builtin.StringAttr(
            f"factor={self.factor} sizes={self.sizes} enabled={self.enabled} label={self.label}"
        )


@dataclass(frozen=True)
class FailWithDiagnostic(ModulePass):
    """Fail as a pass does when the IR breaks its contract."""

    name = "test-fail"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        raise PassFailedException("the input is not instantiated")


@dataclass(frozen=True)
class BreakReturn(ModulePass):
    """Leave IR that does not verify: drop the operand of every func.return."""

    name = "test-break-return"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for ret in op.walk():
            if isinstance(ret, func.ReturnOp):
                ret.operands = ()


@dataclass(frozen=True)
class Crash(ModulePass):
    """Crash, as a bug in a pass would."""

    name = "test-crash"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        raise KeyError("a bug")


TEST_PASSES: dict[str, type[ModulePass]] = {
    p.name: p for p in (RecordOptions, FailWithDiagnostic, BreakReturn, Crash)
}


def test_build_pipeline_builds_stagec_passes_from_either_spelling():
    def between(previous, module, next_pass) -> None: ...

    for spec, mlir_syntax in [("builtin.module(cse, dce)", True), ("cse,dce", False)]:
        pipeline = pipeline_spec.build_pipeline(
            spec, mlir_syntax=mlir_syntax, callback=between
        )
        assert [p.name for p in pipeline.passes] == ["cse", "dce"]
        assert pipeline.callback is between


def test_build_pipeline_passes_options_to_the_pass():
    registry = {n: (lambda p=p: p) for n, p in TEST_PASSES.items()}

    pipeline = pipeline_spec.build_pipeline(
        "builtin.module(test-record-options{factor=3 sizes=4,8})",
        mlir_syntax=True,
        passes=registry,
    )

    assert pipeline.passes == (RecordOptions(factor=3, sizes=(4, 8)),)


@pytest.mark.parametrize(
    ("spec", "mlir_syntax", "message"),
    [
        ("builtin.module(csee)", True, "unknown pass 'csee'; did you mean 'cse'?"),
        ("cse{x=1}", False, "unknown option 'x' for pass 'cse' (its options: none)"),
        ("builtin.module(func.func(cse))", True, "'func.func(...)' are not supported"),
        ("cse,,dce", False, "malformed pass pipeline at column"),
    ],
)
def test_build_pipeline_rejects_what_stagec_opt_rejects(
    spec: str, mlir_syntax: bool, message: str
):
    with pytest.raises(UsageError, match=re.escape(message)):
        pipeline_spec.build_pipeline(spec, mlir_syntax=mlir_syntax)


@pytest.fixture
def run_in_process(monkeypatch, capsys, tmp_path: Path):
    """main() with the test passes registered beside stagec's; returns (code, out, err)."""
    monkeypatch.setattr(
        stagec_opt,
        "all_passes",
        lambda: {
            **all_passes(),
            **{n: (lambda p=p: p) for n, p in TEST_PASSES.items()},
        },
    )

    def run(text: str, *args: str) -> tuple[int, str, str]:
        path = tmp_path / "input.mlir"
        path.write_text(text)
        code = stagec_opt.main([str(path), *args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


@pytest.mark.parametrize(
    "pipeline",
    [
        [
            '--pass-pipeline=builtin.module(test-record-options{factor=3 sizes=4,8 enabled=true label="a b"})'
        ],
        ["-p", 'test-record-options{factor=3 sizes=4,8 enabled=true label="a b"}'],
    ],
)
def test_pass_options_reach_the_pass(run_in_process, pipeline: list[str]):
    code, out, err = run_in_process(VALID, *pipeline)

    assert (code, err) == (0, "")
    assert 'test.options = "factor=3 sizes=(4, 8) enabled=True label=a b"' in out


def test_pass_option_of_wrong_type_names_the_pass_and_option(run_in_process):
    code, _, err = run_in_process(
        VALID, "--pass-pipeline=builtin.module(test-record-options{factor=many})"
    )

    assert code == 2
    assert err == (
        "stagec-opt: error: option 'factor' of pass 'test-record-options' expects int, "
        "got 'many'\n"
    )


def test_unknown_pass_option_lists_the_known_ones(run_in_process):
    code, _, err = run_in_process(VALID, "-p", "test-record-options{factr=2}")

    assert code == 2
    assert err == (
        "stagec-opt: error: unknown option 'factr' for pass 'test-record-options' "
        "(its options: factor, sizes, enabled, label)\n"
    )


def test_failing_pass_is_named(run_in_process):
    code, _, err = run_in_process(VALID, "-p", "test-fail")

    assert code == 2
    assert err.endswith(
        "input.mlir: error: pass 'test-fail' failed: the input is not instantiated\n"
    )


def test_invalid_ir_after_a_pass_says_which_pass(run_in_process, tmp_path: Path):
    code, _, err = run_in_process(
        "func.func @g(%a: i32) -> i32 {\n  func.return %a : i32\n}\n",
        "-p",
        "test-break-return",
    )

    assert code == 2
    assert err == (
        f"{tmp_path / 'input.mlir'}:2:3: error: 'func.return' op Expected arguments to have"
        " the same types as the function output types: expected [i32], got []"
        " (the IR after pass 'test-break-return')\n"
    )


def test_crashing_pass_is_an_internal_error(run_in_process, monkeypatch):
    monkeypatch.delenv("STAGEC_DEBUG", raising=False)
    code, _, err = run_in_process(VALID, "-p", "test-crash")

    assert code == 1
    assert err.splitlines() == [
        (
            "stagec-opt: internal error: pass 'test-crash' crashed: KeyError: 'a bug' --"
            " this is a bug in stagec, please report it (STAGEC_DEBUG=1 shows the traceback)"
        )
    ]

    monkeypatch.setenv("STAGEC_DEBUG", "1")
    code, _, err = run_in_process(VALID, "-p", "test-crash")

    assert code == 1
    assert "Traceback (most recent call last)" in err


# ---------------------------------------------------------------- the torch catch-all


def test_every_torch_op_name_gets_one_generic_op_class():
    from stagec.dialects.torch import TorchOp

    ctx = make_context()

    mm = ctx.get_op("torch.aten.mm")
    assert issubclass(mm, TorchOp) and mm.name == "torch.aten.mm"
    assert ctx.get_op("torch.aten.mm") is mm
    assert ctx.clone().get_op("torch.aten.add.Tensor").name == "torch.aten.add.Tensor"
    assert ctx.get_optional_op("arith.constant") is None


def test_parsed_ops_carry_their_file_location():
    ctx = make_context()
    text = "\n" + VALID

    module = diagnostics.LocatingParser(
        ctx, text, "model.mlir", line_offset=10
    ).parse_module()

    ret = next(o for o in module.walk() if isinstance(o, func.ReturnOp))
    assert ret.location == builtin.FileLineColLoc(
        builtin.StringAttr("model.mlir"), builtin.IntAttr(13), builtin.IntAttr(3)
    )
