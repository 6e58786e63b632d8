"""stagec-opt: stagec's mlir-opt. It parses a .mlir file with stagec's dialects, runs a
pass pipeline over it and writes the result through a target (`-t mlir` by default).

It is xDSL's xdsl-opt with three differences: only stagec's dialects, passes and
targets are loaded; MLIR's `--pass-pipeline='builtin.module(...)'` is accepted beside
xDSL's `-p`; and every error in what the user gave (input that does not parse or
verify, an unknown pass, target or option, a missing file) is one message on stderr,
`file:line:col: error: ...` where it has a place in the input, with exit code 2.
Exit code 1 means a bug in stagec: one line, and the traceback with STAGEC_DEBUG=1.

This module is the driver: arguments, --help, running the chunks, exit codes. The
pipeline and target text is read and checked in `pipeline_spec`, errors in the input
IR are located in `diagnostics`, and the context comes from `stagec.dialects`.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import os
import re
import sys
import textwrap
import traceback
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from io import StringIO
from typing import IO, ClassVar, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Dialect, Operation
from xdsl.passes import ModulePass
from xdsl.targets.mlir import MLIRTarget
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.diagnostic import Diagnostic
from xdsl.utils.exceptions import DiagnosticException, ParseError, ShrinkException
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from stagec.dialects import all_dialects, make_context
from stagec.passes import all_passes
from stagec.tools import pipeline_spec
from stagec.tools.diagnostics import (
    BuiltInvalidIR,
    IRError,
    LocatingParser,
    format_parse_error,
    op_location,
    verify_error_message,
)
from stagec.tools.errors import Terminated, UsageError, interrupt_exit, interrupt_handling
from stagec.tools.output import output_stream, write_failure

PROG = "stagec-opt"

DESCRIPTION = """\
stagec-opt parses an MLIR file (stdin when none or '-') with stagec's dialects, runs a
pass pipeline over it, and writes the result through a target (MLIR text by default)."""

EXAMPLES = """\
examples:
  stagec-opt examples/mlp.mlir --pass-pipeline='builtin.module(stg-annotate-costs,cse)' -o out.mlir
  stagec-opt examples/mlp.mlir -p 'stg-annotate-costs,cse'      (xDSL's spelling of the same)
  stagec-opt tests/lit/dialects/stg/invalid_compute.mlir --split-input-file --verify-diagnostics

  Pass options are written as in mlir-opt: 'builtin.module(a{opt=1 list=1,2})'."""


def stagec_targets() -> dict[str, Callable[[], type[Target]]]:
    """The output targets of `-t`, by name; `mlir` is the default."""
    return {"mlir": lambda: MLIRTarget, "chakra": _chakra_target}


def _chakra_target() -> type[Target]:
    from stagec.runtime.chakra.emit_target import ChakraTarget

    return ChakraTarget


# For --help: what upstream dialects, passes and targets without a docstring are.
_UPSTREAM_DESCRIPTIONS: dict[str, dict[str, str]] = {
    "dialect": {
        "builtin": "MLIR's builtin dialect: module, builtin types and attributes",
        "func": "functions: func.func, func.call, func.return",
    },
    "pass": {
        "cse": "Eliminate common subexpressions.",
        "dce": "Remove ops whose results are unused and that have no effects.",
    },
    "target": {"mlir": "MLIR text (the default target)"},
}


class InternalError(Exception):
    """A bug in stagec (or xDSL), with the context it happened in."""


# ------------------------------------------------------------------ --help, --version


class _HelpParser(argparse.ArgumentParser):
    """An ArgumentParser whose epilog is written only when help is printed (it loads
    every dialect and pass), and whose usage errors are one line."""

    def __init__(self, epilog_factory: Callable[[], str], **kwargs: object):
        super().__init__(**kwargs)  # pyright: ignore[reportArgumentType]
        self._epilog_factory = epilog_factory

    def format_help(self) -> str:
        self.epilog = self._epilog_factory()
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _help_table(
    kind: str, title: str, factories: dict[str, Callable[[], object]]
) -> str:
    width = max(map(len, factories), default=0)
    rows = [f"{title}:"]
    for name, factory in factories.items():
        construct = factory()
        described = (
            _dialect_doc(construct) if kind == "dialect" else _class_doc(construct)
        )
        upstream = _UPSTREAM_DESCRIPTIONS[kind].get(name, "(undocumented)")
        rows.append(f"  {name:<{width}}  {described or upstream}")
        if kind == "pass" and isinstance(construct, type):
            for option in pass_options(construct):
                rows.append(f"  {'':<{width}}    {option.name}={option.kind}  {option.doc}"
                            f" (default: {option.default})")
    return "\n".join(rows)


@dataclasses.dataclass(frozen=True)
class PassOption:
    """One option of a pass as --help shows it: its spelling in a pipeline
    (`memory-limit`), its type, its default and the field's docstring."""

    name: str
    kind: str
    default: str
    doc: str


def pass_options(cls: type) -> list[PassOption]:
    """A pass's options: its dataclass fields, each described by the docstring under
    it in the class body (the attribute-docstring convention the passes follow)."""
    if not dataclasses.is_dataclass(cls):
        return []
    docs = _attribute_docs(cls)
    options = []
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        if field.name == "bindings" and getattr(cls, "binds_symbols", False):
            # stg-instantiate: every `symbol=integer` that names no other option.
            options.append(PassOption("SYMBOL", "<int>", "none", "Bind a symbol of the program (B, S, dp, ...) to "
                                      "an integer, as many as needed."))
            continue
        default = field.default
        shown = _shown_default(default) if default is not dataclasses.MISSING else "required"
        options.append(PassOption(field.name.replace("_", "-"), _kind(field.type), shown, docs.get(field.name, "")))
    return options


def _attribute_docs(cls: type) -> dict[str, str]:
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or not dataclasses.is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for field, after in zip(body, body[1:]):
            if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[field.target.id] = " ".join(inspect.cleandoc(after.value.value).split())
    return docs


def _kind(annotation: object) -> str:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    return {"int": "<int>", "float": "<number>", "int | float": "<number>", "bool": "true|false", "str": "<string>",
            "int | str": "<int|symbol>"}.get(text, f"<{text}>")


def _shown_default(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"'{value}'" if value else "''"
    if isinstance(value, tuple) and not value:
        return "none"
    return str(value)


def _dialect_doc(dialect: object) -> str | None:
    """The first line of the docstring of the module that defines `dialect`: its
    package rather than a submodule, when both bind it."""
    modules = [
        module
        for module in list(sys.modules.values())
        # sys.modules may hold None (a blocked import) or objects without a __dict__.
        if any(
            bound is dialect for bound in list(getattr(module, "__dict__", {}).values())
        )
    ]
    module = min(modules, key=lambda m: len(m.__name__), default=None)
    return _first_doc_line(module.__doc__) if module else None


def _class_doc(cls: object) -> str | None:
    # The class's own `__doc__`: inspect.getdoc would return ModulePass's. A dataclass
    # without a docstring gets its signature as one, which describes nothing.
    doc = getattr(cls, "__doc__", None)
    if doc is None or doc.startswith(f"{getattr(cls, '__name__', '')}("):
        return None
    return _first_doc_line(doc)


def _first_doc_line(doc: str | None) -> str | None:
    """The docstring's first paragraph on one line: a summary cut at a line break
    would end mid-sentence."""
    paragraph = inspect.cleandoc(doc).split("\n\n", 1)[0] if doc else ""
    return " ".join(paragraph.split()) or None


def _stagec_version() -> str:
    try:
        return version("stagec")
    except PackageNotFoundError:
        return "(not installed)"


# ------------------------------------------------------------------ the driver


class StagecOptMain(xDSLOptMain):
    """xdsl-opt with stagec's dialects, passes and targets, MLIR's --pass-pipeline,
    and one-message errors instead of tracebacks."""

    version_format: ClassVar[str] = (
        f"{PROG}: stagec {_stagec_version()}, xDSL {{xdsl_version}}"
    )

    available_dialects: dict[str, Callable[[], Dialect]]
    available_targets: dict[str, Callable[[], type[Target]]]  # pyright: ignore[reportIncompatibleVariableOverride]

    def __init__(self, args: Sequence[str] | None = None):
        # The steps of xDSLOptMain.__init__, but with our own context and help, and a
        # bad target reported as one message rather than argparse's usage text.
        self.available_dialects = {}
        self.available_frontends = {}
        self.available_passes = {}
        self.available_targets = {}
        self.ctx = make_context()  # every dialect of all_dialects(), loaded lazily
        self._running_pass: ModulePass | None = None
        self._verifying_after: ModulePass | None = None
        self.register_all_dialects()
        self.register_all_frontends()
        self.register_all_passes()
        self.register_all_targets()

        arg_parser = _HelpParser(
            self.help_epilog,
            prog=PROG,
            description=DESCRIPTION,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        self.register_all_arguments(arg_parser)
        self.args = arg_parser.parse_args(args=args)

        self.ctx.allow_unregistered = self.args.allow_unregistered_dialect
        if self.args.disable_verify:
            # xdsl-opt's switch: attributes stop verifying themselves when built.
            Attribute.__post_init__ = lambda self: None
        if self.args.syntax_highlight:
            Diagnostic.colored = True
        self.check_target()
        self.setup_pipeline()

    # -------------------------------------------------------------- registration

    def register_all_dialects(self) -> None:
        # make_context registered these in the context already; this is for --help.
        self.available_dialects.update(all_dialects())

    def register_all_passes(self) -> None:
        for name, factory in all_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        self.available_targets.update(stagec_targets())

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--pass-pipeline",
            metavar="PIPELINE",
            help="the passes to run, as mlir-opt writes them: "
            "'builtin.module(pass,pass{option=value other=1,2})'",
        )

    def help_epilog(self) -> str:
        return "\n\n".join(
            [
                EXAMPLES,
                _help_table("dialect", "dialects", self.available_dialects),
                _help_table("pass", "passes", self.available_passes),
                _help_table("target", "targets (-t)", self.available_targets),
            ]
        )

    # -------------------------------------------------------------- command line

    def check_target(self) -> None:
        pipeline_spec.check_target(self.args.target, self.available_targets)

    def setup_pipeline(self) -> None:
        """Build the pipeline from -p or --pass-pipeline, after checking each pass and
        option, so that a wrong one gets a message naming it."""
        mlir_syntax = self.args.pass_pipeline is not None
        if mlir_syntax and self.args.passes:
            raise UsageError(
                "give the pass pipeline with -p/--passes or with --pass-pipeline,"
                " not both"
            )
        spec = self.args.pass_pipeline if mlir_syntax else self.args.passes
        self.args.passes = pipeline_spec.check_pipeline(
            spec, mlir_syntax=mlir_syntax, passes=self.available_passes
        )
        # xdsl-opt builds the checked pipeline, with its between-passes callback
        # (--time-passes, verification, --print-between-passes).
        super().setup_pipeline()
        self.pipeline = dataclasses.replace(
            self.pipeline, callback=self._tracking(self.pipeline.callback)
        )

    def _tracking(
        self, between_passes: Callable[..., None] | None
    ) -> Callable[..., None]:
        """Wrap xdsl-opt's between-passes callback (timing, printing, verification) to
        know, when something fails, whether a pass was running or the IR was being
        verified after one."""

        def callback(
            previous: ModulePass | None, module: ModuleOp, next_pass: ModulePass | None
        ) -> None:
            self._running_pass = None
            self._verifying_after = previous
            if between_passes is not None:
                between_passes(previous, module, next_pass)
            self._running_pass = next_pass

        return callback

    # -------------------------------------------------------------- input

    def get_input_name(self) -> str:
        path = self.args.input_file
        return "<stdin>" if path in (None, "-") else path

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        path = self.args.input_file
        if path in (None, "-"):
            return sys.stdin.buffer, "mlir"
        try:
            stream = open(path, "rb")  # noqa: SIM115 (run closes it, as in xdsl-opt)
        except OSError as error:
            raise UsageError(
                f"cannot open input file '{path}': {error.strerror}"
            ) from None
        # Like mlir-opt, read any file as MLIR unless a frontend claims its extension.
        extension = os.path.splitext(path)[1].removeprefix(".")
        return stream, extension if extension in self.available_frontends else "mlir"

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        if file_extension != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        name = self.get_input_name()
        try:
            text = chunk.read().decode("utf-8")
        except UnicodeDecodeError as error:
            raise IRError(
                f"{name}: error: the input is not UTF-8 text ({error})",
                when_parsing=True,
            ) from None
        if start_offset == 0:
            # an editor's byte order mark: no MLIR token, invisible in a message
            text = text.removeprefix("\ufeff")
        if not _code(text).strip() and not self.args.no_implicit_module:
            return ModuleOp([])  # an empty file or chunk: an empty module, as mlir-opt prints
        try:
            # the parser reads the first token as it is made: a lexer error can come here
            parser = LocatingParser(self.ctx, text, name, start_offset)
            return parser.parse_module(not self.args.no_implicit_module)
        except ParseError as error:
            at = error.span.start
            if at < len(text) and _CONTROL_CHARACTER.match(text, at):
                # the lexer's "Unexpected character" would print it invisibly
                line, column = _line_column(text, at)
                raise IRError(f"{name}:{line + start_offset}:{column}: error: the input holds the control character "
                              f"U+{ord(text[at]):04X}: stagec-opt reads MLIR text, not a binary file",
                              when_parsing=True) from None
            if at < len(text) and text[at] == "}" and "Could not parse entire input" in error.msg:
                line, column = _line_column(text, at)
                source = text.splitlines()[line - 1] if text.splitlines() else ""
                raise IRError(f"{name}:{line + start_offset}:{column}: error: unexpected '}}': it closes no region "
                              f"or block (one '}}' too many?)\n{source}\n{' ' * (column - 1)}^",
                              when_parsing=True) from None
            unclosed = _unclosed_brace(text) if error.span.start >= len(_code(text).rstrip()) else None
            if unclosed is not None:
                line, column = unclosed
                raise IRError(
                    f"{name}:{line + start_offset}:{column}: error: expected '}}' before the end of the input: "
                    "the region or block opened here is not closed",
                    when_parsing=True,
                ) from None
            message = format_parse_error(error, start_offset)
            when_parsing = not isinstance(error, BuiltInvalidIR)
            raise IRError(message, when_parsing=when_parsing) from None
        except RecursionError:
            raise IRError(
                f"{name}: error: the input nests regions more deeply than stagec-opt's parser can "
                "follow (Python's recursion limit); flatten it or split it into functions",
                when_parsing=True,
            ) from None

    # -------------------------------------------------------------- running

    def run(self) -> None:
        chunks, file_extension = self.prepare_input()
        failed: list[IRError] = []
        try:
            # -t chakra writes a directory: -o names it, the summary goes to stdout
            chakra = parse_spec(self.args.target).name == "chakra"
            with output_stream(None if chakra else self.args.output_file) as output:
                written = 0
                for chunk, line_offset in chunks:
                    try:
                        text = self._process(chunk, file_extension, line_offset)
                    except IRError as error:
                        if not self._prints_diagnostic(error):
                            if not self.args.split_input_file:
                                raise
                            # as mlir-opt: report the chunk, go on with the next
                            print(error, file=sys.stderr)
                            failed.append(error)
                            continue
                        text = f"{error}\n"
                    finally:
                        chunk.close()
                    output.write(("// -----\n" if written else "") + text)
                    written += 1
                if failed:  # inside: a failed run keeps no -o file, as mlir-opt keeps none
                    raise SystemExit(2)  # each chunk's error is printed already
        except ShrinkException:  # --shrink: the pass shrinkray is reducing for fired
            assert self.args.shrink
            print("Success, can shrink")
            return
        if self.args.shrink:
            print("Failure, can't shrink")
            raise SystemExit(1)

    def _process(self, chunk: IO[bytes], file_extension: str, line_offset: int) -> str:
        module = self.parse_chunk(chunk, file_extension, line_offset)
        if module is None:
            return ""
        self.apply_passes(module)
        try:
            return self.output_resulting_program(module)
        except DiagnosticException as error:
            raise IRError(
                f"{self.get_input_name()}: error: target '{self.args.target}' "
                f"failed: {error}",
                when_parsing=False,
            ) from None

    def _prints_diagnostic(self, error: IRError) -> bool:
        if error.when_parsing:
            return self.args.parsing_diagnostics
        return self.args.verify_diagnostics

    def apply_passes(self, prog: ModuleOp) -> None:
        try:
            super().apply_passes(prog)
        except DiagnosticException as error:
            raise self._ir_error(prog, error) from None
        except ShrinkException:
            raise
        except Exception as error:
            if self._running_pass is None:
                raise
            raise InternalError(
                f"pass '{self._running_pass.name}' crashed: "
                f"{type(error).__name__}: {error}"
            ) from error

    def _ir_error(self, module: ModuleOp, error: DiagnosticException) -> IRError:
        input_name = self.get_input_name()
        if self._running_pass is not None:
            message = f"pass '{self._running_pass.name}' failed: {error}"
            op = getattr(error, "op", None)  # passes.diagnostics.PassError names its op
            where = op_location(op, input_name) if isinstance(op, Operation) else input_name
            return IRError(f"{where}: error: {message}", when_parsing=False)
        after = self._verifying_after
        context = f" (the IR after pass '{after.name}')" if after else ""
        message = verify_error_message(module, error, input_name, context)
        return IRError(message, when_parsing=False)

    def output_resulting_program(self, prog: ModuleOp) -> str:
        spec = parse_spec(self.args.target)
        target = self.available_targets[spec.name]().from_spec(spec)
        if spec.name == "chakra" and not getattr(target, "dir", "") and self.args.output_file:
            target = dataclasses.replace(target, dir=self.args.output_file)
        if isinstance(target, MLIRTarget):
            # The printing flags add to the target's options; xdsl-opt's replace them,
            # which silently drops `-t 'mlir{print-generic-format=true}'`.
            args = self.args
            target = dataclasses.replace(
                target,
                print_generic_format=target.print_generic_format
                or args.print_op_generic,
                print_properties_as_attributes=target.print_properties_as_attributes
                or args.print_no_properties,
                print_debuginfo=target.print_debuginfo or args.print_debuginfo,
                syntax_highlight=target.syntax_highlight or args.syntax_highlight,
            )
        output = StringIO()
        target.emit(self.ctx, prog, output)
        return output.getvalue()


# Characters no MLIR text holds (tabs, line and page breaks aside): a binary file's.
_CONTROL_CHARACTER = re.compile("[\x00-\x08\x0e-\x1f\x7f]")


def _code(text: str) -> str:
    """`text` with its // comments blanked (string literals kept), same length."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _unclosed_brace(text: str) -> tuple[int, int] | None:
    """(line, column), 1-based, of the last '{' that no '}' closes; None if all close."""
    code = _code(text)
    opened: list[int] = []
    in_string = False
    for i, c in enumerate(code):
        if c == '"':
            in_string = not in_string
        elif in_string:
            continue
        elif c == "{":
            opened.append(i)
        elif c == "}" and opened:
            opened.pop()
    if not opened:
        return None
    return _line_column(code, opened[-1])


def _line_column(text: str, at: int) -> tuple[int, int]:
    """(line, column), 1-based, of offset `at` in `text`."""
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def _report_internal_error(error: BaseException) -> int:
    if isinstance(error, InternalError):
        what = str(error)
    else:
        what = f"{type(error).__name__}: {error}"
    print(
        f"{PROG}: internal error: {what.splitlines()[0]} -- this is a bug in stagec,"
        " please report it (STAGEC_DEBUG=1 shows the traceback)",
        file=sys.stderr,
    )
    if os.environ.get("STAGEC_DEBUG") == "1":
        traceback.print_exception(error)
    return 1


def main(argv: list[str] | None = None) -> int:
    """Run stagec-opt; return its exit code: 0 done, 2 an error in the input or the
    command line, 1 a bug in stagec."""
    try:
        with interrupt_handling():
            StagecOptMain(argv).run()
            sys.stdout.flush()  # a full disk behind stdout shows here, not at exit
    except IRError as error:  # located already
        print(error, file=sys.stderr)
        return 2
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    except SystemExit as exit:  # argparse: --help, --version, usage errors (code 2)
        return exit.code if isinstance(exit.code, int) else int(exit.code is not None)
    except (KeyboardInterrupt, Terminated) as error:
        # Ctrl-C or SIGTERM: output_stream has removed its temporary file.
        return interrupt_exit(PROG, error)
    except BrokenPipeError:  # the reader of stdout went away, e.g. `| head`
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (nothing to flush at exit)
        return 1
    except BaseException as error:  # noqa: BLE001 (anything else is a bug in stagec)
        message = write_failure(error)  # `stagec-opt x.mlir > /dev/full`
        if message is None:
            return _report_internal_error(error)
        print(f"{PROG}: error: {message}", file=sys.stderr)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what stdout buffers would fail again
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
