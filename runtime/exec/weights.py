"""Initial weights: the same global tensors on every rank, from a seed.

The model templates declare their parameters (names, shapes, stacks per layer) but no
initialisation, so the runtime uses the usual one for these decoder models (Hugging
Face's `_init_weights` with `initializer_range`): every matrix and embedding from
N(0, std), norm weights at 1 and biases at 0. Each parameter's generator is seeded
from the run's seed and the parameter's name alone, so a rank that reads only some
parameters (a pipeline stage) draws the same values as a rank that reads them all,
and a single-process reference can rebuild them (`initial_weight`).

Or from a safetensors file (`stagec run --weights FILE`): `SafetensorsWeights(path)`
reads Hugging Face's names (a transformers LlamaForCausalLM's or MixtralForCausalLM's
state_dict, or a hub checkpoint's per-expert Mixtral tensors) as the templates' stacked
parameters; `check(parameter_shapes(module))` refuses, before any rank starts, a file
that lacks a parameter or holds one in another shape. Each rank reads the whole
tensor and keeps its shard (state.py), as with seeded weights. A tensor named exactly
as a parameter is that parameter whole, stacked: `stagec run --frontend torch` writes
the torch module's own parameters so (frontends/torch/parameters.py).
"""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

import torch

DEFAULT_STD = 0.02


def initial_weight(name: str, shape: tuple[int, ...], dtype: torch.dtype = torch.float32, *,
                   seed: int = 0, std: float = DEFAULT_STD) -> torch.Tensor:
    """The global initial value of parameter `name` (stacked per layer: [L, ...])."""
    leaf = name.rsplit(".", 1)[-1]
    owner = name.rsplit(".", 2)[-2] if name.count(".") >= 1 else ""
    # on the host, whatever device the rank computes on: the same values everywhere
    # (state.py moves each rank's shard to its device)
    if leaf == "bias":
        return torch.zeros(shape, dtype=dtype, device="cpu")
    if "norm" in owner or "ln_" in owner or owner in ("norm", "norm_f"):
        return torch.ones(shape, dtype=dtype, device="cpu")
    generator = torch.Generator().manual_seed((seed * 1_000_003 + zlib.crc32(name.encode())) % (1 << 63))
    return (torch.randn(shape, generator=generator, dtype=torch.float32, device="cpu") * std).to(dtype)


def initializer(seed: int = 0, std: float = DEFAULT_STD):
    """`initial(name, shape, dtype)` for LocalState."""
    return lambda name, shape, dtype: initial_weight(name, shape, dtype, seed=seed, std=std)


# -- weights from a safetensors file ------------------------------------------------------

# A template names a parameter as Hugging Face's modelling code does, with the layer
# (and expert) indices left out: the tensors are stacked over them, outer first
# (`model.layers.3.self_attn.q_proj.weight` is layer 3 of
# `model.layers.self_attn.q_proj.weight`, [L, N*D, H]). Matrices are [out, in] as in
# nn.Linear. transformers 5 holds Mixtral's experts fused per layer instead; a file of
# that form is read through these aliases: (the template's tail, the file's tail, the
# chunk of the file's dim 1 it is, of how many).
_INDEX = re.compile(r"\.(\d+)(?=\.|$)")
_FUSED: tuple[tuple[str, str, int, int], ...] = (
    ("block_sparse_moe.gate.weight", "mlp.gate.weight", 0, 1),
    ("block_sparse_moe.experts.w1.weight", "mlp.experts.gate_up_proj", 0, 2),
    ("block_sparse_moe.experts.w3.weight", "mlp.experts.gate_up_proj", 1, 2),
    ("block_sparse_moe.experts.w2.weight", "mlp.experts.down_proj", 0, 1),
)


class WeightsError(ValueError):
    """A weights file that does not hold the program's parameters: one line."""


@dataclass(frozen=True)
class _Source:
    """Where one stacked index of a parameter lies in the file: a tensor, or a chunk of
    its dim 1 (a fused tensor's part)."""

    key: str
    shape: tuple[int, ...]
    chunk: int = 0
    chunks: int = 1

    def part_shape(self) -> tuple[int, ...]:
        if self.chunks == 1:
            return self.shape
        return (self.shape[0], self.shape[1] // self.chunks, *self.shape[2:])


class SafetensorsWeights:
    """The parameters of a safetensors file under the templates' names (see above):
    `weights(name, stacked_shape, dtype)` is an `initial` for LocalState, and
    `check(shapes)` says, before any rank starts, whether every parameter is there in
    its shape. A file's other tensors (rotary buffers, a tied lm_head) are ignored."""

    def __init__(self, path: str):
        from safetensors import SafetensorError, safe_open

        self.path = path
        try:
            self._file = safe_open(path, framework="pt")
        except FileNotFoundError:
            raise WeightsError(f"{path}: no such file (a .safetensors file of the model's parameters)") from None
        except (OSError, SafetensorError) as error:
            raise WeightsError(f"{path}: not a safetensors file: {error}") from None
        # stripped name -> {indices: the file's tensor}
        self._groups: dict[str, dict[tuple[int, ...], _Source]] = {}
        self._keys: dict[str, _Source] = {}
        for key in self._file.keys():
            index = tuple(int(i) for i in _INDEX.findall(key))
            shape = tuple(self._file.get_slice(key).get_shape())
            self._keys[key] = _Source(key, shape)
            self._groups.setdefault(_INDEX.sub("", key), {})[index] = _Source(key, shape)
        for ours, theirs, chunk, chunks in _FUSED:
            for stripped, group in list(self._groups.items()):
                if stripped.endswith("." + theirs):
                    alias = stripped[: -len(theirs)] + ours
                    self._groups.setdefault(alias, {i: _Source(s.key, s.shape, chunk, chunks) for i, s in group.items()})

    def _parts(self, name: str, shape: tuple[int, ...]) -> tuple[list[_Source], tuple[int, ...]]:
        """The file's tensors that stack into parameter `name` of global stacked shape
        `shape`, outer index first, and the shape each must have: a tensor's indices in
        the file (layer, expert) are the leading dims of `shape`. A tensor named as the
        parameter is the whole stacked parameter (a file written under the program's
        names, which may hold indices of their own: frontends/torch/parameters.py)."""
        if name in self._keys:
            return [self._keys[name]], shape
        group = self._groups.get(name)
        if group is None:
            raise WeightsError(f"{self.path}: no tensor for the parameter {name} "
                               f"(looked for {_file_name(name)}, as transformers names it)")
        depth = len(next(iter(group)))
        if depth > len(shape):
            raise WeightsError(f"{self.path}: {next(iter(group.values())).key} has {depth} indices, but the "
                               f"program's parameter {name} is {list(shape)}")
        sources = []
        for index in itertools.product(*(range(n) for n in shape[:depth])):
            if index not in group:
                raise WeightsError(f"{self.path}: no tensor {_renumbered(next(iter(group.values())).key, index)} "
                                   f"(the parameter {name} is {list(shape)})")
            sources.append(group[index])
        return sources, shape[depth:]

    def check(self, shapes: Mapping[str, tuple[tuple[int, ...], tuple[int, ...]]]) -> None:
        """{name: (layer stack, global shape of one)} (`parameter_shapes`): WeightsError
        for the first parameter the file lacks or holds in another shape."""
        for name, (stack, one) in shapes.items():
            sources, part = self._parts(name, stack + one)
            for source in sources:
                if source.part_shape() != part:
                    what = source.key + (f" (part {source.chunk + 1} of {source.chunks} along dim 1)"
                                         if source.chunks > 1 else "")
                    raise WeightsError(f"{self.path}: {what} is {list(source.part_shape())}, but the program's "
                                       f"parameter {name} needs {list(part)} there")

    def __call__(self, name: str, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        sources, part = self._parts(name, shape)
        tensors = []
        for source in sources:
            tensor = self._file.get_tensor(source.key)
            if source.chunks > 1:
                tensor = tensor.chunk(source.chunks, dim=1)[source.chunk]
            if tuple(tensor.shape) != part:
                raise WeightsError(f"{self.path}: {source.key} is {list(tensor.shape)}, but the program's "
                                   f"parameter {name} needs {list(part)} there")
            tensors.append(tensor.to(dtype))
        return torch.stack(tensors).reshape(shape)


def _renumbered(key: str, index: tuple[int, ...]) -> str:
    """A file key with its indices replaced by `index`, in order."""
    numbers = iter(index)
    return _INDEX.sub(lambda m: f".{next(numbers, m.group(1))}", key)


def _file_name(name: str) -> str:
    """A guess of the file's key for a parameter the file lacks altogether: index 0
    after each component that holds a stack."""
    out = []
    for part in name.split("."):
        out.append(part)
        if part in ("layers", "moe_layers", "experts"):
            out.append("0")
    return ".".join(out)


def parameter_shapes(module, bindings: Mapping[str, int] | None = None) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
    """{name: (the layer stack, the global shape of one)} of a model's `stg.param`s, as
    the runtime reads them (one tensor per layer of each enclosing stg.repeat)."""
    from stagec.dialects import stg
    from stagec.dialects.stg.config import config_bindings

    env = {**config_bindings(module), **(bindings or {})}
    found: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
    for op in module.walk():
        if not isinstance(op, stg.ParamOp) or op.tensor_name.data in found:
            continue
        explicit = op.explicit_layer()  # an unrolled layer: `layer K of N`
        stack, parent = ([explicit[1]] if explicit is not None else []), op.parent_op()
        while explicit is None and parent is not None:
            if isinstance(parent, stg.RepeatOp):
                stack.insert(0, parent.stack_expr.evaluate(env))
            parent = parent.parent_op()
        found[op.tensor_name.data] = (tuple(stack), tuple(d.expr.evaluate(env) for d in op.result.type.dims.data))
    return found
