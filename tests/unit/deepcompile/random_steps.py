"""Random small fully-sharded training steps for the property tests of stg-unshard and
stg-offload: a forward phase of layers (a square weight, or a wide up/down pair, each
all-gathered, with extra elementwise ops), saving each layer's output; a backward phase
that gathers the weights again in reverse and multiplies in the saved outputs; an
optimizer phase that reads and writes two Adam states of every weight. Sizes are
numbers, so the memory analysis needs no bindings."""

from __future__ import annotations

from hypothesis import strategies as st

T = "!stg.tensor<[8, 64], bf16>"
WIDE = "!stg.tensor<[8, 128], bf16>"

# (wide, extra elementwise ops after the layer)
layer = st.tuples(st.booleans(), st.integers(0, 2))


def _shard(rows: int, cols: int) -> str:
    return f"!stg.tensor<[{rows}/fsdp, {cols}], f32>"


def _full(rows: int, cols: int) -> str:
    return f"!stg.tensor<[{rows}, {cols}], bf16>"


class _Lines:
    def __init__(self):
        self.lines: list[str] = []
        self.n = 0

    def fresh(self, prefix: str = "v") -> str:
        self.n += 1
        return f"%{prefix}{self.n}"

    def gather(self, name: str, rows: int, cols: int) -> str:
        shard, full = self.fresh("p"), self.fresh("g")
        half = f"!stg.tensor<[{rows}/fsdp, {cols}], bf16>"
        self.lines += [f'    {shard} = stg.param "{name}" : {half}',
                       f"    {full} = stg.all_gather {shard} on @m [fsdp] : {half} -> {_full(rows, cols)}"]
        return full

    def add(self, text: str) -> str:
        out = self.fresh()
        self.lines.append(f"    {out} = {text}")
        return out


def weights(layers) -> list[tuple[str, int, int]]:
    out = []
    for k, (wide, _) in enumerate(layers):
        out += [(f"up{k}", 64, 128), (f"down{k}", 128, 64)] if wide else [(f"w{k}", 64, 64)]
    return out


def program(layers) -> str:
    fw, saved, value = _Lines(), [], "%x"
    for k, (wide, extra) in enumerate(layers):
        if wide:
            up = fw.gather(f"up{k}", 64, 128)
            hidden = fw.add(f'stg.einsum "bh,hf->bf" {value}, {up} : {T}, {_full(64, 128)} -> {WIDE}')
            down = fw.gather(f"down{k}", 128, 64)
            value = fw.add(f'stg.einsum "bf,fh->bh" {hidden}, {down} : {WIDE}, {_full(128, 64)} -> {T}')
        else:
            w = fw.gather(f"w{k}", 64, 64)
            value = fw.add(f'stg.einsum "bh,hf->bf" {value}, {w} : {T}, {_full(64, 64)} -> {T}')
        for _ in range(extra):
            value = fw.add(f"stg.elementwise silu {value} : {T} -> {T}")
        saved.append(value)
    bw = _Lines()
    bw.n = fw.n
    args = [f"%s{k}" for k in range(len(saved))]
    d = "%dy"
    for k in reversed(range(len(layers))):
        d = bw.add(f"stg.elementwise mul {d}, {args[k]} : {T}, {T} -> {T}")
        if layers[k][0]:
            down = bw.gather(f"down{k}", 128, 64)
            hidden = bw.add(f'stg.einsum "bh,fh->bf" {d}, {down} : {T}, {_full(128, 64)} -> {WIDE}')
            up = bw.gather(f"up{k}", 64, 128)
            d = bw.add(f'stg.einsum "bf,hf->bh" {hidden}, {up} : {WIDE}, {_full(64, 128)} -> {T}')
        else:
            w = bw.gather(f"w{k}", 64, 64)
            d = bw.add(f'stg.einsum "bf,hf->bh" {d}, {w} : {T}, {_full(64, 64)} -> {T}')
    opt = []
    for name, rows, cols in weights(layers):
        ty = _shard(rows, cols)
        opt += [f'    %m_{name} = stg.optimizer_state "exp_avg" of "{name}" : {ty}',
                f'    %v_{name} = stg.optimizer_state "exp_avg_sq" of "{name}" : {ty}',
                f"    %u_{name} = stg.elementwise add %m_{name}, %v_{name} : {ty}, {ty} -> {ty}",
                f'    stg.assign %u_{name} to "exp_avg" of "{name}" : {ty}']
    types = ", ".join([T] * len(saved))
    results = ", ".join(args)
    return "\n".join([
        "stg.mesh @m [fsdp = 2]",
        f"func.func @step(%x: {T}, %dy: {T}) {{",
        f"  {results} = stg.phase forward {{",
        *fw.lines,
        f"    stg.yield {', '.join(saved)} : {types}",
        "  }",
        "  stg.phase backward {",
        *[line for line in bw.lines],
        "    stg.yield",
        "  }",
        "  stg.phase optimizer {",
        *opt,
        "    stg.yield",
        "  }",
        "  func.return",
        "}",
    ]) + "\n"
