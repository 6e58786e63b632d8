"""`stagec import MODULE:FACTORY` (and --torch-factory) on user code that fails: one line
`stagec: error: FACTORY 'MODULE:FACTORY' ...` naming what is wrong and the user's
exception in one line, exit status 2, no traceback and no output file (issue 17, class 1)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from stagec.tools import stagec_cli

# One module of factories that go wrong in every way a user's can; each test imports it
# under its own name (a fresh module, no import cache between tests).
FACTORIES = textwrap.dedent("""\
    import torch

    def raises(config=None):
        raise ValueError("hidden size 17 is odd")

    def returns_int():
        return 3

    def returns_none(config):
        return None

    not_callable = 42

    class BrokenForward(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Linear(4, 4)

        def forward(self, input_ids, labels):
            raise RuntimeError("forward is broken")

    def broken_forward():
        return BrokenForward()

    def exits():
        import sys
        sys.exit(3)

    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no message")

    def unprintable():
        raise Unprintable()

    class OwnBase(BaseException):
        pass

    def own_base_exception():
        raise OwnBase("escaped every except Exception")

    class BrokenTo(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Linear(4, 4)

        def to(self, *args, **kwargs):
            raise RuntimeError("cannot move")

    def broken_to():
        return BrokenTo()

    class Chatty(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(64, 8)
            self.head = torch.nn.Linear(8, 64, bias=False)

        def forward(self, input_ids, labels):
            print("forward called")
            logits = self.head(self.embed(input_ids))
            return torch.nn.functional.cross_entropy(logits.view(-1, 64), labels.view(-1))

    def chatty():
        print("building the model")
        return Chatty()
""")


def line_of(code: str) -> int:
    """The line of FACTORIES that holds `code` (where the user's exception is raised)."""
    return next(i for i, line in enumerate(FACTORIES.splitlines(), 1) if code in line)


@pytest.fixture
def factories(tmp_path, monkeypatch, request):
    name = f"user_factories_{request.node.name.replace('[', '_').replace(']', '').replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(FACTORIES)
    (tmp_path / f"{name}_syntax.py").write_text("def make(:\n    pass\n")
    (tmp_path / f"{name}_import.py").write_text("import os\nraise OSError('no GPU config found')\n")
    (tmp_path / f"{name}_dependency.py").write_text("import no_such_dependency_of_the_model\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def run_import(capsys, tmp_path, target: str, *extra: str) -> tuple[int, list[str]]:
    out = tmp_path / "model.mlir"
    status = stagec_cli.main(["import", target, "-o", str(out), *extra])
    captured = capsys.readouterr()
    assert captured.out == ""
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".model")] == []
    return status, captured.err.splitlines()


# (attribute, extra arguments, the line after "stagec: error: FACTORY '<module>:<attribute>'")
CASES = [
    ("raises", (), rf" raised ValueError: hidden size 17 is odd \(.*user_factories_\w+\.py:{line_of('raise ValueError')}\)"),
    ("returns_int", (), r" returned int 3, not a torch.nn.Module \(whose forward\(input_ids, labels\) returns the loss\)"),
    ("returns_none", ("--model", "llama3-8b"), r" returned None, not a torch.nn.Module"),
    ("returns_none", (), r" takes the model config \(config\): give --model NAME\|config.json"),
    ("not_callable", (), r" is int 42, not callable: give a function or class that returns the nn.Module"),
    ("missing", (), r": 'user_factories_\w+' has no 'missing'"),
    ("exits", (), rf" raised SystemExit: 3 \(.*user_factories_\w+\.py:{line_of('sys.exit(3)')}\)"),
    ("unprintable", (), rf" raised Unprintable: \(its message cannot be shown: str\(\) raised RuntimeError\) "
                        rf"\(.*user_factories_\w+\.py:{line_of('raise Unprintable()')}\)"),
    ("own_base_exception", (), rf" raised OwnBase: escaped every except Exception "
                               rf"\(.*user_factories_\w+\.py:{line_of('raise OwnBase(')}\)"),
    ("broken_to", (), rf": moving its module to bf16 \(module.to, module.eval\) raised RuntimeError: cannot move "
                      rf"\(.*user_factories_\w+\.py:{line_of('cannot move')}\)"),
    ("broken_forward", (), r": torch.export of its forward\(input_ids, labels\) failed: "
                           rf"RuntimeError: forward is broken \(.*user_factories_\w+\.py:{line_of('forward is broken')}\)"),
]


@pytest.mark.parametrize("attribute, extra, expected", CASES, ids=[f"{c[0]}{'-model' if c[1] else ''}" for c in CASES])
def test_factory_that_fails(factories, capsys, tmp_path, attribute, extra, expected):
    import re

    target = f"{factories}:{attribute}"
    status, lines = run_import(capsys, tmp_path, target, *extra)
    assert status == 2
    assert len(lines) == 1, lines
    assert re.fullmatch(rf"stagec: error: FACTORY '{re.escape(target)}'{expected}.*", lines[0]), lines[0]


def test_module_with_a_syntax_error(factories, capsys, tmp_path):
    target = f"{factories}_syntax:make"
    status, lines = run_import(capsys, tmp_path, target)
    assert status == 2 and len(lines) == 1
    assert lines[0].startswith(f"stagec: error: FACTORY '{target}': importing '{factories}_syntax' raised SyntaxError: ")
    assert lines[0].endswith(f"{factories}_syntax.py:1)")  # the line the user wrote `def make(:` on


def test_module_that_raises_on_import(factories, capsys, tmp_path):
    target = f"{factories}_import:make"
    status, lines = run_import(capsys, tmp_path, target)
    assert status == 2 and lines == [
        f"stagec: error: FACTORY '{target}': importing '{factories}_import' raised OSError: no GPU config found "
        f"({tmp_path}/{factories}_import.py:2)"]


def test_module_whose_dependency_is_missing(factories, capsys, tmp_path):
    target = f"{factories}_dependency:make"
    status, lines = run_import(capsys, tmp_path, target)
    assert status == 2 and lines == [
        f"stagec: error: FACTORY '{target}': importing '{factories}_dependency' raised ModuleNotFoundError: "
        f"No module named 'no_such_dependency_of_the_model' ({tmp_path}/{factories}_dependency.py:1)"]


def test_not_module_colon_factory(capsys, tmp_path):
    status, lines = run_import(capsys, tmp_path, "just_a_name")
    assert status == 2 and lines == [
        "stagec: error: FACTORY 'just_a_name' is not MODULE:FACTORY (e.g. mypkg.models:make_model)"]


def test_torch_factory_of_stats_says_the_same(factories, capsys):
    target = f"{factories}:raises"
    status = stagec_cli.main(["stats", "--model", "llama3-8b", "--frontend", "torch", "--torch-factory", target])
    lines = capsys.readouterr().err.splitlines()
    assert status == 2 and len(lines) == 1
    assert lines[0].startswith(f"stagec: error: FACTORY '{target}' raised ValueError: hidden size 17 is odd (")


def test_a_real_process_exits_2_without_a_traceback(tmp_path):
    (tmp_path / "user_models.py").write_text(FACTORIES)
    out = tmp_path / "m.mlir"
    done = subprocess.run([sys.executable, "-m", "stagec.tools.stagec_cli", "import", "user_models:returns_int",
                           "-o", str(out)], cwd=tmp_path, env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == "" and not out.exists()
    assert done.stderr.splitlines() == [
        "stagec: error: FACTORY 'user_models:returns_int' returned int 3, not a torch.nn.Module "
        "(whose forward(input_ids, labels) returns the loss)"]


def test_what_user_code_prints_stays_off_stdout(factories, capsys):
    """The factory and its forward print: the IR on stdout stays parseable, their
    lines go to stderr (review: they were mixed into the IR and into --json)."""
    from xdsl.parser import Parser

    from stagec.dialects import make_context

    assert stagec_cli.main(["import", f"{factories}:chatty"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("builtin.module")
    Parser(make_context(), captured.out).parse_module().verify()
    assert "building the model" in captured.err and "forward called" in captured.err


@pytest.mark.parametrize("vocab", ["0", "-3"])
def test_vocab_must_be_positive(capsys, vocab):
    with pytest.raises(SystemExit) as exit:
        stagec_cli.main(["import", "examples.tiny_lm:make_model", "--vocab", vocab])
    assert exit.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"stagec import: error: argument --vocab: {vocab} must be at least 1")
