"""`import_module`: an ordinary torch.nn.Module -> torch.export -> torch-mlir's FX
importer -> the torch dialect in xDSL, parameters as named function arguments and
batch and sequence as symbols.

    module = import_module(model, (input_ids, labels),
                           dynamic={"input_ids": {0: "B", 1: "S"}, "labels": {0: "B", 1: "S"}})

- The model may be built on the meta device or under FakeTensorMode (`fake_model`):
  nothing is allocated, so a 70B-parameter model imports in seconds.
- torch.export runs non-strict; the exported graph is *not* run through the default
  decompositions (which turn one SDPA into ~100 ops): `decompositions` is our own
  small table (empty by default), so aten.linear, aten.scaled_dot_product_attention
  (GQA included), aten.embedding and aten.cross_entropy_loss stay single ops.
- Parameters and buffers are lifted: the exported program's PARAMETER and BUFFER
  inputs become user inputs, so they are function arguments rather than literal
  tensors; each argument carries `torch.name` (the FQN, e.g.
  "model.layers.0.self_attn.q_proj.weight", or the user input's name) and
  `torch.kind` ("parameter", "buffer" or "input").
- Symbolic shapes are imported (`torch.symbolic_int` + `torch.bind_symbolic_shape`)
  with torch's symbols (s72, ...) renamed to the names given in `dynamic`.
- Every op's location becomes `torch.module` (the nn.Module path of the op, from the
  export's nn_module_stack) and `torch.loc` (the innermost source line).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import ModuleOp, StringAttr

from stagec.dialects.stg.names import FORWARD_FUNCTION

__all__ = ["ImportResult", "export", "import_exported", "import_module"]


@dataclass
class ImportResult:
    """What the import made and how long each phase took (seconds)."""

    module: ModuleOp
    timings: dict[str, float]


def _dims(dynamic: Mapping[str, Mapping[int, str]]):
    from torch.export import Dim

    made: dict[str, Any] = {}
    spec = {}
    for arg, dims in dynamic.items():
        spec[arg] = {i: made.setdefault(name, Dim(name)) for i, name in dims.items()}
    return spec


def _forward_arg_names(model) -> list[str]:
    import inspect

    return [p for p in inspect.signature(model.forward).parameters]


def export(model, example_args: Sequence[Any], dynamic: Mapping[str, Mapping[int, str]] | None = None,
           decompositions: Mapping | None = None):
    """torch.export.export(strict=False) of `model` on `example_args` with the named
    dynamic dims, then our decomposition table (none by default). Runs under no_grad
    so that no_grad regions in the model (rotary embeddings) leave no
    set_grad_enabled wrappers: the forward graph is what stg-autodiff differentiates."""
    import torch

    dynamic = dict(dynamic or {})
    names = _forward_arg_names(model)
    shapes = None
    if dynamic:
        specs = _dims(dynamic)
        shapes = {name: specs.get(name) for name in names[: len(example_args)]}
    with torch.no_grad():
        program = torch.export.export(model, tuple(example_args), dynamic_shapes=shapes, strict=False)
        if decompositions:
            program = program.run_decompositions(dict(decompositions))
    return program


def _symbol_names(program, dynamic: Mapping[str, Mapping[int, str]]) -> dict[str, str]:
    """torch's shape symbols (s72) -> the names in `dynamic` (B)."""
    from torch.export.graph_signature import InputKind

    placeholders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    user = [s.arg.name for s in program.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
    names: dict[str, str] = {}
    by_input = dict(dynamic)
    for arg_name in user:
        node = placeholders.get(arg_name)
        if node is None or arg_name not in by_input:
            continue
        shape = node.meta["val"].shape
        for dim, name in by_input[arg_name].items():
            size = shape[dim]
            if hasattr(size, "node"):
                names.setdefault(str(size.node.expr), name)
    return names


def _lift_state(program) -> list[dict[str, StringAttr]]:
    """Rewrites PARAMETER/BUFFER inputs as user inputs (function arguments) and returns
    the argument attributes in function-argument order."""
    from torch.export.graph_signature import InputKind, InputSpec

    attrs = []
    specs = []
    kinds = {InputKind.PARAMETER: "parameter", InputKind.BUFFER: "buffer", InputKind.USER_INPUT: "input"}
    # a tied weight (GPT-2's lm_head.weight is transformer.wte.weight) is named by its
    # first name in the module, as named_parameters() and the templates name it
    canonical: dict[int, str] = {}
    for key, tensor in program.state_dict.items():
        canonical.setdefault(id(tensor), key)
    for spec in program.graph_signature.input_specs:
        if spec.kind not in kinds:
            raise NotImplementedError(f"torch.export input of kind {spec.kind.name} ({spec.arg}) is not supported")
        name = spec.target if spec.kind != InputKind.USER_INPUT else spec.arg.name
        if spec.kind == InputKind.PARAMETER and name in program.state_dict:
            name = canonical[id(program.state_dict[name])]
        attrs.append({"torch.name": StringAttr(name), "torch.kind": StringAttr(kinds[spec.kind])})
        specs.append(InputSpec(kind=InputKind.USER_INPUT, arg=spec.arg, target=None, persistent=None))
    program.graph_signature.input_specs[:] = specs
    return attrs


def _module_path(node) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    path = ""
    for entry in stack.values():
        if isinstance(entry, tuple) and entry and isinstance(entry[0], str) and not entry[0].startswith("_empty"):
            path = entry[0]
    # non-strict export may spell paths as attribute accesses: L['self'].layers[0]
    path = re.sub(r"^L\['self'\]\.?", "", path)
    return re.sub(r"\[(\d+)\]", r".\1", path)


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _allow_floordiv_shapes() -> None:
    """torch-mlir's FX importer cannot write a FloorDiv size (an MoE capacity
    `5*B*S // 16`) as a shape expression; MLIR's affine maps can (`floordiv`). Wrap its
    translation function to add that case. Idempotent."""
    from torch.utils._sympy.functions import FloorDiv
    from torch_mlir.extras import fx_importer

    original = fx_importer.sympy_expr_to_semi_affine_expr
    if getattr(original, "_stagec_floordiv", False):
        return

    def translate(expr, symbols_map):
        if isinstance(expr, FloorDiv):
            lhs, rhs = (translate(a, symbols_map) for a in expr.args)
            from torch_mlir.ir import AffineFloorDivExpr

            return AffineFloorDivExpr.get(lhs, rhs)
        return original(expr, symbols_map)

    translate._stagec_floordiv = True
    fx_importer.sympy_expr_to_semi_affine_expr = translate


def _importer(ir, context):
    """torch-mlir's FxImporter whose op locations name the nn.Module path and the
    innermost source line: loc("model.layers.0.mlp"("file.py":42:0))."""
    from torch_mlir.extras import fx_importer

    class _Locations(fx_importer.ContextCache):
        __slots__ = ()

        def get_node_location(self, node):
            frames = _FRAME.findall(node.meta.get("stack_trace") or "")
            file, line = frames[-1] if frames else ("<unknown>", "0")
            child = ir.Location.file(file, int(line), 0, context=self._c)
            return ir.Location.name(_module_path(node), childLoc=child, context=self._c)

    _allow_floordiv_shapes()
    importer = fx_importer.FxImporter(context=context)
    importer._cc = _Locations(importer._c, py_attr_tracker=importer._py_attr_tracker)
    return importer


def import_exported(program, dynamic: Mapping[str, Mapping[int, str]] | None = None,
                    timings: dict[str, float] | None = None) -> ModuleOp:
    """An ExportedProgram -> the torch dialect in xDSL (see the module doc)."""
    import time

    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_d

    from stagec.frontends.torch.translate import translate_module

    timings = timings if timings is not None else {}
    names = _symbol_names(program, dynamic or {})
    arg_attrs = _lift_state(program)
    t0 = time.perf_counter()
    context = ir.Context()
    torch_d.register_dialect(context)
    importer = _importer(ir, context)
    with context, contextlib.redirect_stdout(None):
        importer.import_program(program, func_name=FORWARD_FUNCTION, import_symbolic_shape_expressions=True)
    t1 = time.perf_counter()
    module = translate_module(importer.module, ir, arg_attrs, names)
    t2 = time.perf_counter()
    timings["fx_import"] = t1 - t0
    timings["translate"] = t2 - t1
    return module


def import_module(model, example_args: Sequence[Any], dynamic: Mapping[str, Mapping[int, str]] | None = None,
                  decompositions: Mapping | None = None, timings: dict[str, float] | None = None) -> ModuleOp:
    """`model(*example_args)` as the torch dialect in xDSL, with `dynamic` dims
    symbolic: {"input_ids": {0: "B", 1: "S"}} (see the module doc)."""
    import time

    timings = timings if timings is not None else {}
    t0 = time.perf_counter()
    program = export(model, example_args, dynamic, decompositions)
    timings["export"] = time.perf_counter() - t0
    return import_exported(program, dynamic, timings)
