"""Shared helpers of the matcher tests: build a one-reshard program, match it with
stg-match-collectives, and run programs on simulated ranks (the reference
interpreter runs stg.reshard directly, by regroup, which makes it the oracle)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.dialects.stg.attributes import DistributedTensorType
from stagec.passes.stg_match_collectives import match_collectives
from stagec.runtime.interpreter import Interpreter
from stagec.runtime.interpreter.values import Layout, Placement, SimulatedMesh, assemble_global, shard

CTX = make_context()


def tensor_type(text: str) -> DistributedTensorType:
    """`tensor_type("[B/dp, H] @tp, bf16")` -> the !stg.tensor."""
    return Parser(CTX, f"!stg.tensor<{text}>").parse_type()


def reshard_program(mesh: Mapping[str, int], src: str, dst: str, config: Mapping[str, int] = {}) -> str:
    """@f(%x: src) -> dst, one stg.reshard on `stg.mesh @m [mesh]`."""
    axes = ", ".join(f"{a} = {n}" for a, n in mesh.items())
    entries = ", ".join(f"{k} = {v} : i64" for k, v in config.items())
    attrs = f" attributes {{stg.config = {{{entries}}}}}" if config else ""
    return f"""builtin.module{attrs} {{
  stg.mesh @m [{axes}]
  func.func @f(%x: !stg.tensor<{src}>) -> !stg.tensor<{dst}> {{
    %r = stg.reshard %x on @m : !stg.tensor<{src}> -> !stg.tensor<{dst}>
    func.return %r : !stg.tensor<{dst}>
  }}
}}"""


def parse(text: str) -> ModuleOp:
    return Parser(CTX, text).parse_module()


def matched(text: str) -> ModuleOp:
    module = parse(text)
    match_collectives(module)
    module.verify()
    return module


def op_names(module: ModuleOp) -> list[str]:
    """The ops of @f's body, without the return."""
    func = next(op for op in module.walk() if op.name == "func.func")
    return [op.name for op in func.body.block.ops][:-1]


def run_locals(module: ModuleOp, locals_: Sequence[torch.Tensor], bindings: Mapping[str, int] = {}):
    """Runs @f on every rank from the producer's locals; every rank's result local."""
    return Interpreter(module, dict(bindings)).run_per_rank("f", None, [list(locals_)])[0]


def producer_locals(
    mesh: SimulatedMesh, ty: DistributedTensorType, shape: Sequence[int], seed: int, integers: bool = False
) -> list[torch.Tensor]:
    """Random locals that are a valid value of `ty`: ranks that differ only along axes
    the type duplicates over hold the same local; over partial-sum axes each rank
    holds its own random piece. Integer-valued with `integers`, so sums are exact in
    any order."""
    layout = Layout.of(ty)
    local_shape = [n // mesh.parts(axes) for n, axes in zip(shape, layout.splits, strict=True)]
    partial = sorted(layout.partial)
    pieces: dict[tuple, torch.Tensor] = {}
    out = []
    for rank in range(mesh.num_ranks):
        key = (
            tuple(mesh.index_over(rank, axes) for axes in layout.splits),
            tuple(mesh.coord(rank, a) for a in partial),
        )
        if key not in pieces:
            generator = torch.Generator().manual_seed(seed * 7919 + len(pieces))
            if integers:
                piece = torch.randint(-8, 8, local_shape, generator=generator).to(torch.float64)
            else:
                piece = torch.randn(local_shape, generator=generator, dtype=torch.float64)
            pieces[key] = piece
        out.append(pieces[key])
    return out


def global_of(mesh: SimulatedMesh, ty: DistributedTensorType, locals_: Sequence[torch.Tensor]) -> torch.Tensor:
    """The global tensor the ranks' locals make up: splits concatenated, partial sums summed."""
    return assemble_global(list(locals_), Layout.of(ty), Placement(mesh))


def expected_local(
    mesh: SimulatedMesh, ty: DistributedTensorType, whole: torch.Tensor, rank: int
) -> torch.Tensor:
    """The rank's block of `whole` in `ty`'s layout, ignoring its partial axes."""
    return shard(whole, Layout(ty.splits, frozenset()), mesh, rank)


def summed_over_partial(
    mesh: SimulatedMesh, ty: DistributedTensorType, locals_: Sequence[torch.Tensor], rank: int
) -> torch.Tensor:
    """The sum of the locals of the ranks that differ from `rank` only along `ty`'s
    partial-sum axes (the rank's own local when it has none)."""
    others = [a for a in mesh.axes if a not in ty.partial_axes]
    group = [r for r in range(mesh.num_ranks) if all(mesh.coord(r, a) == mesh.coord(rank, a) for a in others)]
    total = locals_[group[0]]
    for r in group[1:]:
        total = total + locals_[r]
    return total
