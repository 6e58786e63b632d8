"""Pass-pipeline and target text (xDSL arg specs): reading it and checking it.

MLIR's `--pass-pipeline='builtin.module(...)'` is translated into xDSL's `-p` text,
and every pass, target and option named is checked before xDSL builds anything, so
that a mistake gets one message (a UsageError) naming the pass and option, where
xDSL's own messages name neither.

A pass whose class sets `binds_symbols = True` (stg-instantiate) binds the model's
symbols, whose names no dataclass can list: every `symbol=integer` option that names
none of its other fields goes into its `bindings` field. Its options may be written
as MLIR does (`stg-instantiate{B=8 S=4096}`) or comma-separated
(`stg-instantiate{B=8,S=4096}`).

`build_pipeline` is the one entry point for tools that only need a pipeline (the
`stagec` CLI); stagec-opt calls `check_pipeline` and `check_target` and lets
xdsl-opt build the pipeline with its own between-passes callback.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import get_type_hints

from xdsl.passes import ModulePass, PassPipeline, PassPipelineCallbackType
from xdsl.utils.arg_spec import (
    ArgSpec,
    ArgSpecConvertible,
    _convert_arg_to_type,  # pyright: ignore[reportPrivateUsage]
    parse_pipeline,
    parse_spec,
)
from xdsl.utils.exceptions import ArgSpecParseError
from xdsl.utils.target import Target

from stagec.passes import all_passes
from stagec.tools.errors import UsageError

PassRegistry = Mapping[str, Callable[[], type[ModulePass]]]
TargetRegistry = Mapping[str, Callable[[], type[Target]]]


def build_pipeline(
    spec: str,
    *,
    mlir_syntax: bool,
    callback: PassPipelineCallbackType | None = None,
    passes: PassRegistry | None = None,
) -> PassPipeline:
    """The pass pipeline `spec` describes, after checking each pass and option as
    stagec-opt does; a mistake raises UsageError with one message naming it.

    `spec` is MLIR's `--pass-pipeline` text (`builtin.module(a,b{opt=1})`, or a bare
    `a,b`) when `mlir_syntax`, else xDSL's `-p` text (`a,b{opt=1}`). `callback` runs
    between passes, as in PassPipeline. `passes` is the registry to look names up
    in; stagec's own passes (`stagec.passes.all_passes()`) when None.
    """
    if passes is None:
        passes = all_passes()
    checked = check_pipeline(spec, mlir_syntax=mlir_syntax, passes=passes)
    return PassPipeline.parse_spec(dict(passes), checked, callback)


def check_pipeline(spec: str, *, mlir_syntax: bool, passes: PassRegistry) -> str:
    """Check every pass and option of `spec` (as in build_pipeline) against `passes`;
    return the pipeline as xDSL's `-p` text, ready for PassPipeline.parse_spec."""
    text = xdsl_pass_pipeline(spec) if mlir_syntax else spec
    text = _bindings_as_options(text, passes)
    try:
        specs = list(parse_pipeline(text))
    except ArgSpecParseError as error:
        raise UsageError(
            f"malformed pass pipeline {_format_spec_error(error)}"
        ) from None
    for pass_spec in specs:
        if pass_spec.name not in passes:
            raise UsageError(
                f"unknown pass '{pass_spec.name}'"
                + _did_you_mean(pass_spec.name, list(passes))
            )
        check_options(pass_spec, passes[pass_spec.name](), "pass")
    return text


def check_target(spec: str, targets: TargetRegistry) -> None:
    """Check the target name and options of a `-t` spec (`mlir{opt=1}`)."""
    try:
        target_spec = parse_spec(spec)
    except ArgSpecParseError as error:
        raise UsageError(f"malformed target {_format_spec_error(error)}") from None
    if target_spec.name not in targets:
        raise UsageError(
            f"unknown target '{target_spec.name}'"
            + _did_you_mean(target_spec.name, list(targets))
        )
    check_options(target_spec, targets[target_spec.name](), "target")


def xdsl_pass_pipeline(mlir_pipeline: str) -> str:
    """Translate MLIR's `--pass-pipeline` text into xDSL's `-p` text.

    `builtin.module(a, b{opt=1 list=1,2})` -> `a,b{opt=1 list=1,2}`: both write options
    the same way (space-separated `key=value`, `,` between list values), so only the
    one `builtin.module(...)` anchor and the spaces between passes go. A bare `a,b` is
    taken as it is. Nested op-anchored pipelines (`builtin.module(func.func(cse))`) are
    rejected: stagec's passes run on the whole module.
    """
    text, parens = _without_spaces_between_passes(mlir_pipeline)
    if not parens:
        return text
    anchor = text[: parens[0]]
    closing = _matching_paren(text, parens)
    if anchor == "builtin.module" and closing == len(text) - 1:
        inner = text[parens[0] + 1 : closing]
        if len(parens) == 2:
            return inner
        anchor = inner[: parens[1] - parens[0] - 1].rsplit(",", 1)[-1]
    if anchor in ("", "builtin.module"):
        raise UsageError(
            f"malformed --pass-pipeline '{mlir_pipeline}': expected one "
            "'builtin.module(pass,pass{option=value})' or a plain 'pass,pass' list"
        )
    raise UsageError(
        f"nested pass pipelines such as '{anchor}(...)' are not supported by "
        "stagec-opt: its passes run on the whole module; list them directly inside "
        "'builtin.module(...)'"
    )


# A quoted string (skipped), or a pass name and its option braces with no quote inside.
_OPTION_BRACES = re.compile(r'"(?:\\.|[^"\\])*"|([\w.-]+)\{([^{}"]*)\}')
_OPTION_PAIR = re.compile(r"([A-Za-z_][\w-]*)=([^=]+)")
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _binds_symbols(configurable: type[ArgSpecConvertible]) -> bool:
    return bool(getattr(configurable, "binds_symbols", False))


def _bindings_as_options(pipeline: str, passes: PassRegistry) -> str:
    """Rewrite the options of passes that bind symbols into xDSL's space-separated
    form: `stg-instantiate{B=8,S=4096}` -> `stg-instantiate{B=8 S=4096}`. xDSL reads a
    comma as the next value of a list option (B = 8, "S=4096"), which no binding is."""

    def rewrite(match: re.Match[str]) -> str:
        name, options = match.group(1), match.group(2)
        if name is None or name not in passes or not _binds_symbols(passes[name]()):
            return match.group(0)
        pairs = [pair for pair in re.split(r"[\s,]+", options) if pair]
        keys: set[str] = set()
        for pair in pairs:
            if (found := _OPTION_PAIR.fullmatch(pair)) is None:
                raise UsageError(
                    f"malformed option '{pair}' of pass '{name}': expected "
                    f"symbol=integer pairs, as in '{name}{{B=8 S=4096}}' or "
                    f"'{name}{{B=8,S=4096}}'"
                )
            if found.group(1) in keys:
                raise UsageError(f"option '{found.group(1)}' of pass '{name}' is given twice")
            keys.add(found.group(1))
        return f"{name}{{{' '.join(pairs)}}}"

    return _OPTION_BRACES.sub(rewrite, pipeline)


def _without_spaces_between_passes(pipeline: str) -> tuple[str, list[int]]:
    """The pipeline without white space outside option braces and quotes (where MLIR
    allows it and xDSL does not), and the positions of its parentheses there."""
    kept: list[str] = []
    parens: list[int] = []
    braces, quote = 0, ""
    for char in pipeline.strip():
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "{":
            braces += 1
        elif char == "}":
            braces -= 1
        elif braces == 0 and char.isspace():
            continue
        elif braces == 0 and char in "()":
            parens.append(len(kept))
        kept.append(char)
    if braces or quote:
        raise UsageError(f"unbalanced braces or quotes in --pass-pipeline '{pipeline}'")
    return "".join(kept), parens


def _matching_paren(text: str, parens: list[int]) -> int:
    """The position of the `)` closing the first `(`."""
    depth = 0
    for position in parens:
        depth += 1 if text[position] == "(" else -1
        if depth == 0:
            return position
    raise UsageError(f"unbalanced parentheses in --pass-pipeline '{text}'")


def _format_spec_error(error: ArgSpecParseError) -> str:
    """xDSL's 'Error parsing pass pipeline specification:' block, as one message:
    `at column 5: Expected pass name here`, then the text with the place marked."""
    lines = str(error).rstrip("\n").split("\n")
    if len(lines) < 5 or not lines[1].startswith("pass-pipeline:"):
        return f": {error}"
    column = lines[1].rsplit(":", 1)[1]
    return f"at column {column}: {lines[4].strip()}\n  {lines[2]}\n  {lines[3]}"


def _did_you_mean(name: str, known: Sequence[str]) -> str:
    if close := difflib.get_close_matches(name, known, n=3):
        return "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
    return "; known: " + ", ".join(sorted(known))


def check_options(
    spec: ArgSpec, configurable: type[ArgSpecConvertible], kind: str
) -> None:
    """Say which option of a pass (or target) spec is wrong, and how, before xDSL
    builds it: its own messages name neither the pass nor the option."""
    fields = dataclasses.fields(configurable)
    known = [f.name for f in fields if f.init and f.name != "name"]
    binds_symbols = _binds_symbols(configurable)
    if binds_symbols:
        known.remove("bindings")
        # Before `-` becomes `_` in option names: `batch-size` names no symbol.
        for option, values in spec.parameters.items():
            if option.replace("-", "_") not in known:
                _check_binding(spec.name, option, values, known)
    spec = spec.normalize_parameter_names()
    hints = get_type_hints(configurable)
    for option, values in spec.parameters.items():
        shown = option.replace("_", "-")
        if option not in known and binds_symbols:
            continue  # a binding, checked above
        if option not in known:
            options = ", ".join(k.replace("_", "-") for k in known) or "none"
            raise UsageError(
                f"unknown option '{shown}' for {kind} '{spec.name}' "
                f"(its options: {options})"
            )
        try:
            _convert_arg_to_type(values, hints[option])
        except ValueError:
            hint = hints[option]
            expected = hint.__name__ if isinstance(hint, type) else str(hint)
            given = ",".join(
                str(v).lower() if isinstance(v, bool) else str(v) for v in values
            )
            raise UsageError(
                f"option '{shown}' of {kind} '{spec.name}' expects {expected}, "
                f"got '{given}'"
            ) from None
    try:
        configurable.from_spec(spec)
    except ValueError as error:  # e.g. a required option left out
        raise UsageError(f"invalid options for {kind} '{spec.name}': {error}") from None


def _check_binding(
    pass_name: str, symbol: str, values: tuple[object, ...], options: Sequence[str]
) -> None:
    """An option of a pass that binds symbols that names none of its fields: it must
    bind a symbol to an integer."""
    if not _SYMBOL.fullmatch(symbol):
        others = ", ".join(o.replace("_", "-") for o in options) or "none"
        raise UsageError(
            f"option '{symbol}' of pass '{pass_name}' is neither a symbol name "
            f"nor one of its options ({others})"
        )
    if len(values) != 1 or type(values[0]) is not int:
        given = ",".join(str(v).lower() if isinstance(v, bool) else str(v) for v in values)
        raise UsageError(
            f"option '{symbol}' of pass '{pass_name}' binds symbol {symbol} and "
            f"expects an integer, got '{given}'"
        )
