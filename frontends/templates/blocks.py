"""Building blocks shared by the model templates: a builder that writes stg ops with
symbolic shapes, and the pieces every template reuses (linear layers, norms,
attention, FFNs, the layer stack, the LM head and loss).

Conventions are docs/training-ir.md's: activations are [B, S, H]; weights are
torch's [out, in]; parameter names are Hugging Face's without the layer index; a
layer stack is one `stg.repeat` whose body reads the per-layer parameters.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from fractions import Fraction

from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    FloatAttr,
    FunctionType,
    ModuleOp,
    StringAttr,
    bf16,
    f16,
    f32,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from stagec.dialects.stg.names import DECODE_FUNCTION, FORWARD_FUNCTION, PREFILL_FUNCTION, Phase
from stagec.dialects.stg.config import set_config
from stagec.dialects import stg
from stagec.dialects.stg import ElementwiseKind as EW
from stagec.dialects.stg import NormKind, TensorType
from stagec.dialects.symbolic import Expr
from stagec.frontends.templates.config import ConfigError, ModelConfig

__all__ = ["DTYPES", "Builder", "capacity", "element_type", "module_name", "named"]

DTYPES: dict[str, Attribute] = {"bf16": bf16, "f16": f16, "f32": f32, "f64": f64}
_DTYPE_ALIASES = {"bfloat16": "bf16", "float16": "f16", "half": "f16", "float32": "f32", "float": "f32",
                  "float64": "f64", "double": "f64"}

Dim = str | int | Expr

def element_type(dtype: str | Attribute) -> Attribute:
    """"bf16" (or torch's "bfloat16") -> the xDSL float type."""
    if isinstance(dtype, Attribute):
        if dtype in DTYPES.values():
            return dtype
        raise ConfigError(f"unsupported dtype {dtype}; use one of {', '.join(DTYPES)}")
    key = _DTYPE_ALIASES.get(dtype, dtype)
    if key not in DTYPES:
        raise ConfigError(f"unsupported dtype '{dtype}'; use one of {', '.join(DTYPES)}")
    return DTYPES[key]


def named(value: SSAValue, hint: str | None) -> SSAValue:
    """Gives `value` a printed name (%q, %attn) when it has none."""
    if hint and value.name_hint is None:
        value.name_hint = hint
    return value


def module_name(param: str) -> str:
    """The torch module a parameter belongs to: ...self_attn.q_proj.weight -> q_proj,
    ...c_attn.bias -> c_attn_bias, ...mixer.A_log -> A_log."""
    parts = param.split(".")
    if parts[-1] == "weight" and len(parts) > 1:
        name = parts[-2]
    elif parts[-1] == "bias" and len(parts) > 1:
        name = f"{parts[-2]}_bias"
    else:
        name = parts[-1]
    # xDSL reads a trailing _<n> as its own uniquing suffix: ln_1 -> ln1
    return re.sub(r"_(\d+)$", r"\1", name)


def _letter(dim: Dim, taken: str) -> str:
    """An einsum letter for a weight dim, from its last symbol: N*D -> n, KV*D -> k."""
    symbols = sorted(Expr.of(dim).symbols, reverse=True)
    for candidate in [s[0].lower() for s in symbols] + list("oijmpuvwxyz"):
        if candidate not in taken:
            return candidate
    raise AssertionError("out of einsum letters")


class Builder:
    """Writes one model's forward program. Templates call `bind` for the symbols they
    use (they become the module's `stg.config`) and the op helpers below inside
    `forward_module`'s body."""

    def __init__(self, config: ModelConfig, dtype: str | Attribute = "bf16", phase: Phase | str = Phase.TRAIN):
        self.config = config
        self.dtype = element_type(dtype)
        # train: the forward program stg-autodiff makes a step of; prefill / decode:
        # an inference step that writes (and, decoding, reads) the KV cache (docs/inference.md)
        self.phase = Phase(phase)
        # the loss (and the router's softmax) run in at least f32
        self.wide = f64 if self.dtype == f64 else f32
        self.bindings: dict[str, int] = {}

    # -- symbols and types ----------------------------------------------------------
    def bind(self, **symbols: int) -> None:
        for name, value in symbols.items():
            if not isinstance(value, int) or value <= 0:
                raise ConfigError(f"model size {name} = {value!r} must be a positive integer")
            self.bindings[name] = value

    def t(self, *dims: Dim, element: Attribute | None = None) -> TensorType:
        return TensorType(dims, element or self.dtype)

    # -- state ----------------------------------------------------------------------
    def param(self, name: str, *dims: Dim) -> SSAValue:
        return named(stg.ParamOp(name, self.t(*dims)).result, module_name(name))

    def input(self, name: str, *dims: Dim, element: Attribute) -> SSAValue:
        return named(stg.InputOp(name, self.t(*dims, element=element)).result, name.replace(".", "_"))

    # -- compute --------------------------------------------------------------------
    def einsum(self, equation: str, inputs: Sequence[SSAValue], *dims: Dim) -> SSAValue:
        return stg.EinsumOp(equation, list(inputs), self.t(*dims)).result

    def ew(self, kind: EW, *inputs: SSAValue, like: SSAValue | TensorType | None = None,
           scalar: float | None = None) -> SSAValue:
        """An elementwise op whose result has the type of `like` (default: the first input)."""
        ty = like if isinstance(like, TensorType) else (like or inputs[0]).type
        return stg.ElementwiseOp(kind, list(inputs), ty, scalar).result

    def cast(self, x: SSAValue, element: Attribute) -> SSAValue:
        if x.type.element_type == element:
            return x
        return self.ew(EW.CAST, x, like=TensorType(x.type.dims.data, element, x.type.partial_axes))

    def reshape(self, x: SSAValue, *dims: Dim) -> SSAValue:
        return stg.ReshapeOp(x, self.t(*dims, element=x.type.element_type)).result

    def split(self, x: SSAValue, dim: int, sizes: Sequence[Dim], hints: Sequence[str] = ()) -> list[SSAValue]:
        shape = list(x.type.shape)
        types = [self.t(*shape[:dim], size, *shape[dim + 1 :], element=x.type.element_type) for size in sizes]
        pieces = list(stg.SplitOp(x, dim, types).outputs)
        for piece, hint in zip(pieces, hints):
            named(piece, hint)
        return pieces

    def concat(self, xs: Sequence[SSAValue], dim: int) -> SSAValue:
        shape = list(xs[0].type.shape)
        shape[dim] = sum((x.type.shape[dim] for x in xs[1:]), xs[0].type.shape[dim])
        return stg.ConcatOp(list(xs), dim, self.t(*shape, element=xs[0].type.element_type)).result

    def linear(self, x: SSAValue, weight: str, out_dim: Dim, in_dim: Dim, bias: str | None = None,
               hint: str | None = None) -> SSAValue:
        """x [..., in] @ weight[out, in]^T (+ bias[out]): a torch nn.Linear, its result
        named after the module (q_proj -> %q) unless `hint` says otherwise."""
        hint = hint or module_name(weight).replace("_proj", "")
        lead = {2: "t", 3: "bs"}.get(x.type.rank) or "abcdeg"[: x.type.rank - 1]
        i = _letter(in_dim, lead)
        o = _letter(out_dim, lead + i)
        w = self.param(weight, out_dim, in_dim)
        shape = [*x.type.shape[:-1], out_dim]
        y = self.einsum(f"{lead}{i},{o}{i}->{lead}{o}", [x, w], *shape)
        if bias is not None:
            y = self.ew(EW.ADD, y, self.param(bias, out_dim))
        return named(y, hint)

    def norm(self, kind: NormKind, x: SSAValue, prefix: str, eps: float, bias: bool = False) -> SSAValue:
        """RMSNorm or LayerNorm over the last dim with `prefix.weight` (and `prefix.bias`)."""
        size = x.type.shape[-1]
        w = self.param(f"{prefix}.weight", size)
        b = self.param(f"{prefix}.bias", size) if bias else None
        op = stg.NormOp(kind, x, w, b)
        op.properties["eps"] = FloatAttr(eps, f64)
        return op.result

    def rms_norm(self, x: SSAValue, prefix: str, eps: float | None = None) -> SSAValue:
        return self.norm(NormKind.RMS, x, prefix, self.config.rms_norm_eps if eps is None else eps)

    def attention(self, q: SSAValue, k: SSAValue, v: SSAValue, heads: Dim, kv_heads: Dim,
                  cache: str | None = None) -> SSAValue:
        """Causal SDPA over [B, S, heads, d] tensors -> [B, S, heads, v's head dim].
        In an inference step k and v go to the KV cache `cache`.key / `cache`.value; a
        decode step attends over the cache (T positions), a prefill over its own S."""
        if self.phase is not Phase.TRAIN:
            assert cache is not None, "an inference step's attention names its cache"
            keys, values = self.kv_cache(f"{cache}.key", k), self.kv_cache(f"{cache}.value", v)
            if self.phase is Phase.DECODE:
                k, v = keys, values
        b, s = q.type.shape[:2]
        out = self.t(b, s, heads, v.type.shape[3])
        return named(stg.AttentionOp(q, k, v, out, heads, kv_heads, causal=True).result, "attn")

    def kv_cache(self, name: str, entries: SSAValue) -> SSAValue:
        """Append entries [B, S, ...] to the cache `name` of T positions: a prefill's
        prompt at 0, a decode step's new tokens at T - S. Returns the whole cache."""
        shape = list(entries.type.shape)
        shape[1] = "T"
        at = 0 if self.phase is Phase.PREFILL else Expr.sym("T") - Expr.sym("S")
        cache = self.t(*shape, element=entries.type.element_type)
        hint = name.rsplit(".", 1)[-1] + "_cache"
        return named(stg.KvCacheOp(name, entries, cache, at).result, hint)

    def embedding(self, table: SSAValue, ids: SSAValue) -> SSAValue:
        out = self.t(*ids.type.shape, table.type.shape[1])
        return named(stg.EmbeddingOp(table, ids, out).result, "x")

    # -- shared blocks ---------------------------------------------------------------
    def swiglu(self, x: SSAValue, prefix: str, size: Dim, names=("gate_proj", "up_proj", "down_proj")) -> SSAValue:
        """Llama's gate-up-down FFN: down(silu(gate(x)) * up(x))."""
        gate_name, up_name, down_name = names
        h = x.type.shape[-1]
        gate = self.linear(x, f"{prefix}.{gate_name}.weight", size, h)
        up = self.linear(x, f"{prefix}.{up_name}.weight", size, h)
        act = named(self.ew(EW.MUL, self.ew(EW.SILU, gate), up), "act")
        return self.linear(act, f"{prefix}.{down_name}.weight", h, size)

    def rotary(self, x: SSAValue, angles: SSAValue) -> SSAValue:
        """x [B, S, heads, d] rotated by angles [S, 1, d] (HF's rotate_half convention)."""
        return self.ew(EW.ROTARY, x, angles)

    def repeat(self, count: Dim, x: SSAValue, layer: Callable[[SSAValue], SSAValue]) -> SSAValue:
        """A layer stack: `layer` builds one layer's body on the carried [B, S, H]."""
        block = Block(arg_types=[x.type])
        named(block.args[0], "h")
        with ImplicitBuilder(block):
            stg.YieldOp(layer(block.args[0]))
        return named(stg.RepeatOp(count, [x], [], Region(block)).outputs[0], "h")

    def tokens(self) -> tuple[SSAValue, SSAValue | None]:
        """The `input_ids` and (shifted) `labels` inputs, [B, S] i64; an inference
        step has no labels."""
        ids = self.input("input_ids", "B", "S", element=i64)
        if self.phase is not Phase.TRAIN:
            return ids, None
        return ids, self.input("labels", "B", "S", element=i64)

    def rope_angles(self, dim: Dim) -> SSAValue:
        """The `rope.angles` input [S, 1, dim] f32, which rotary takes as is whatever
        the model's dtype: angles of thousands of radians have no bf16 precision to spare."""
        return self.input("rope.angles", "S", 1, dim, element=f32)

    def lm_loss(self, h: SSAValue, head: SSAValue, labels: SSAValue | None) -> SSAValue:
        """logits = h @ head^T ([V, H] table), then the mean token cross-entropy. An
        inference step instead returns the next token's logits: a prefill's [B, 1, V] of
        its last prompt position only, a decode step's [B, S, V] of its S (= 1) new tokens."""
        b, s, hidden = h.type.shape
        if self.phase is Phase.PREFILL:
            _, h = self.split(h, 1, [Expr.sym("S") - 1, 1], ["h_prompt", "h_last"])
        if self.phase is not Phase.TRAIN:
            return named(self.einsum("bsh,vh->bsv", [h, head], *h.type.shape[:2], head.type.shape[0]), "logits")
        logits = named(self.einsum("bsh,vh->bsv", [h, head], b, s, head.type.shape[0]), "logits")
        return named(stg.CrossEntropyOp(logits, labels, TensorType([], self.wide)).result, "loss")

    def forward_module(self, body: Callable[[], SSAValue]) -> ModuleOp:
        """`func.func @forward() -> loss` around `body`, in a module carrying
        `stg.model` and `stg.config` (the symbols bound while building)."""
        name = {Phase.TRAIN: FORWARD_FUNCTION, Phase.PREFILL: PREFILL_FUNCTION, Phase.DECODE: DECODE_FUNCTION}[self.phase]
        forward = func.FuncOp(name, ((), (TensorType([], self.wide),)))
        with ImplicitBuilder(forward.body):
            result = body()
            func.ReturnOp(result)
        # an inference step returns the next token's logits
        forward.function_type = FunctionType.from_lists([], [result.type])
        module = ModuleOp([forward])
        module.attributes["stg.model"] = StringAttr(self.config.name)
        set_config(module, self.bindings)
        return module


def capacity(config: ModelConfig) -> Expr:
    """C = capacity_factor * top_k * B * S / E, exactly (1.25 -> 5*B*S/(2*E) for top-2)."""
    factor = config.capacity * config.num_experts_per_tok
    assert isinstance(factor, Fraction)
    return Expr.const(factor.numerator) * Expr.sym("B") * Expr.sym("S") / (Expr.const(factor.denominator) * Expr.sym("E"))
