"""Properties of the memory accounting on random training steps: a forward repeat of
random layers saving random activations, a backward reverse repeat scanning them and
accumulating fp32 gradients, optionally inside a micro-batch loop, and an optimizer."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.ir import Block
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.dialects.stg import ReleaseOp
from stagec.dialects.stg.attributes import TensorType
from stagec.dialects.stg.state import StateOp
from stagec.passes.analysis.accounting import account
from stagec.passes.analysis.memory import KINDS

TYPES = """
!a = !stg.tensor<[B, H], bf16>
!w = !stg.tensor<[H, H], bf16>
!g = !stg.tensor<[H, H], f32>
!s = !stg.tensor<[], f32>
"""


def _ops(draw, pool: list[str], prefix: str, count: int) -> list[str]:
    """`count` random elementwise ops over `pool` (values of type !a), each adding its result."""
    lines = []
    for i in range(count):
        name = f"%{prefix}{i}"
        if draw(st.booleans()):
            a, b = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
            kind = draw(st.sampled_from(["add", "mul"]))
            lines.append(f"{name} = stg.elementwise {kind} {a}, {b} : !a, !a -> !a")
        else:
            a = draw(st.sampled_from(pool))
            kind = draw(st.sampled_from(["neg", "gelu", "exp"]))
            lines.append(f"{name} = stg.elementwise {kind} {a} : !a -> !a")
        pool.append(name)
    return lines


@st.composite
def train_steps(draw):
    """(IR text, bindings) of a random training step."""
    pre = ["%x0"]
    pre_lines = _ops(draw, pre, "p", draw(st.integers(0, 3)))
    body = ["%c", "%h"] + pre[1:]  # the layer reads values from before the stack too
    body_lines = _ops(draw, body, "f", draw(st.integers(1, 5)))
    if draw(st.booleans()):  # a nested loop reading a value of the layer and one from outside it
        init, captured = draw(st.sampled_from(body)), draw(st.sampled_from(body))
        inner = draw(st.sampled_from(["%ic", "%i0", captured]))
        body_lines.append(
            f"%in, %ins = stg.repeat 2 carry(%ic = {init} : !a) {{\n"
            f"  %i0 = stg.elementwise add %ic, {captured} : !a, !a -> !a\n"
            f"  stg.yield %i0, {inner} : !a, !a\n}}"
        )
        body_lines.append("%ir = stg.reduce sum %ins dims [0] : !stg.tensor<[2, B, H], bf16> -> !a")
        body += ["%in", "%ir"]
        body_lines += _ops(draw, body, "g", draw(st.integers(0, 2)))
    saved = draw(st.lists(st.sampled_from(body[:1] + body[2:]), min_size=1, max_size=3, unique=True))
    n = len(saved)
    stack_types = ", ".join(["!stg.tensor<[L, B, H], bf16>"] * n)
    saved_names = ", ".join(f"%sv{i}" for i in range(n))
    back = ["%gc"] + [f"%x{i}" for i in range(n)]
    back_lines = _ops(draw, back, "b", draw(st.integers(1, 5)))
    scans = ", ".join(f"%x{i} = %fs{i} : !stg.tensor<[L, B, H], bf16>" for i in range(n))
    micro = draw(st.integers(1, 3))
    optimizer = draw(st.booleans())
    layer_out = draw(st.sampled_from(body))  # may pass the carry through or yield a captured value
    back_out = draw(st.sampled_from(back))
    whole_stack_use = draw(st.booleans())
    fwd = f"""
    %fy, {", ".join(f"%fs{i}" for i in range(n))} = stg.phase forward {{
      %x0 = stg.input "x" : !a
      {chr(10).join(pre_lines)}
      %y, {saved_names} = stg.repeat L carry(%c = {pre[-1]} : !a) {{
        %w = stg.param "layers.w" : !w
        %h = stg.einsum "bh,hk->bk" %c, %w : !a, !w -> !a
        {chr(10).join(body_lines)}
        stg.yield {layer_out}, {", ".join(saved)} : !a, {", ".join(["!a"] * n)}
      }}
      stg.yield %y, {saved_names} : !a, {stack_types}
    }}
    stg.phase backward {{
      %d = stg.repeat L carry(%gc = %fy : !a) scan({scans}) reverse {{
        {chr(10).join(back_lines)}
        %dw = stg.einsum "bh,bk->hk" %x0, {back[-1]} : !a, !a -> !g
        %gw = stg.optimizer_state "grad" of "layers.w" : !g
        %gw2 = stg.elementwise add %gw, %dw : !g, !g -> !g
        stg.assign %gw2 to "grad" of "layers.w" : !g
        stg.yield {back_out} : !a
      }}
      {"%red = stg.reduce sum %fs0 dims [0] : !stg.tensor<[L, B, H], bf16> -> !a" if whole_stack_use else ""}
      stg.yield
    }}"""
    if micro > 1:
        fwd = f"stg.microbatch {micro} {{{fwd}\n    stg.yield\n  }}"
    opt = ""
    if optimizer:
        opt = """
    stg.phase optimizer {
      stg.repeat L {
        %m = stg.optimizer_state "master" of "layers.w" : !g
        %gg = stg.optimizer_state "grad" of "layers.w" : !g
        %ea = stg.optimizer_state "exp_avg" of "layers.w" : !g
        %ev = stg.optimizer_state "exp_avg_sq" of "layers.w" : !g
        %t = stg.optimizer_state "step" of "layers.w" : !s
        %m2, %ea2, %ev2, %t2 = stg.adam %m, %gg, %ea, %ev, %t lr 1.0e-03 betas 0.9, 0.95 eps 1.0e-08 weight_decay 0.0 decoupled : !g, !g, !g, !g, !s -> !g, !g, !g, !s
        stg.assign %m2 to "master" of "layers.w" : !g
        stg.assign %ea2 to "exp_avg" of "layers.w" : !g
        stg.assign %ev2 to "exp_avg_sq" of "layers.w" : !g
        stg.assign %t2 to "step" of "layers.w" : !s
        %w16 = stg.elementwise cast %m2 : !g -> !w
        stg.assign %w16 to "layers.w" : !w
        stg.yield
      }
      stg.yield
    }"""
    text = f"{TYPES}\nfunc.func @train_step() {{\n  {fwd}{opt}\n  func.return\n}}"
    bindings = {"B": draw(st.integers(1, 4)), "H": draw(st.sampled_from([2, 4, 8])), "L": draw(st.integers(1, 4))}
    return text, bindings


def parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(train_steps())
def test_the_peak_covers_the_persistent_states_and_is_the_timelines_max(step):
    text, bindings = step
    mem = account(parse(text), bindings).rank_classes[0].memory
    persistent = sum(mem.persistent.values())
    assert mem.peak_bytes >= persistent
    totals = mem.timeline.totals()
    assert int(totals.max()) == mem.peak_bytes
    assert int(totals[mem.peak_position]) == mem.peak_bytes
    assert sum(mem.breakdown.values()) == mem.peak_bytes
    # no kind ever goes negative, and the persistent states are there throughout
    assert (mem.timeline.live >= 0).all()
    for k, kind in enumerate(KINDS):
        assert (mem.timeline.live[:, k] >= mem.persistent[kind]).all()


def _transients(module):
    """(value, block, index of its definition) of every transient tensor a release may free."""
    found = []

    def visit(block: Block):
        for i, op in enumerate(block.ops):
            if op.name == "stg.vjp":
                continue
            if not isinstance(op, StateOp) or op.name == "stg.input":
                found.extend((r, block, i) for r in op.results if isinstance(r.type, TensorType))
            for region in op.regions:
                for b in region.blocks:
                    visit(b)

    visit(module.body.block)
    return found


@PROPERTY
@given(train_steps(), st.data())
def test_releasing_a_tensor_never_raises_the_peak(step, data):
    text, bindings = step
    before = account(parse(text), bindings).rank_classes[0].memory.peak_bytes
    module = parse(text)
    candidates = _transients(module)
    value, block, index = data.draw(st.sampled_from(candidates))
    ops = list(block.ops)
    # release it right after any later op of its block (before the terminator)
    where = data.draw(st.integers(index, len(ops) - 2)) if len(ops) - 2 >= index else index
    block.insert_op_after(ReleaseOp(value), ops[where])
    module.verify()
    after = account(module, bindings).rank_classes[0].memory.peak_bytes
    assert after <= before


@PROPERTY
@given(train_steps())
def test_flops_by_phase_add_up_and_scale_with_micro_batches(step):
    text, bindings = step
    rank = account(parse(text), bindings).rank_classes[0]
    assert rank.flops.total == sum(c.total for c in rank.flops_by_phase.values())
    # every layer runs one x W einsum forward and one dW einsum backward
    micro = int(text.split("stg.microbatch ")[1].split()[0]) if "stg.microbatch" in text else 1
    b, h, layers = bindings["B"], bindings["H"], bindings["L"]
    assert rank.flops_by_phase["forward"].gemm == micro * layers * 2 * b * h * h
    assert rank.flops_by_phase["backward"].gemm == micro * layers * 2 * b * h * h


# -- an independent oracle: run the step, one buffer object per tensor created -----------------


class _Buffer:
    def __init__(self, size: int, first: int):
        self.size, self.first, self.last, self.cap = size, first, first, None


def simulated_activations(module, bindings) -> list[int]:
    """Live transient bytes per position, by executing the step's structure: loops
    iterate, stacks are lists of per-iteration buffers, scans hand out slices,
    reshapes alias, every read of a buffer (or of a whole stack) is a use."""
    from xdsl.dialects import func

    from stagec.dialects.stg.structure import LoopOp, PhaseOp, YieldOp
    from stagec.dialects.stg.state import AssignOp

    env, buffers, clock = {}, [], [0]

    def touch(obj, t):
        if isinstance(obj, list):
            for o in obj:
                touch(o, t)
        elif obj is not None:
            obj.last = max(obj.last, t)

    def size(ty):
        n = 2 if str(ty.element_type) == "bf16" else 4
        for d in ty.shape:
            n *= d.evaluate(bindings)
        return n

    def run(block):
        for op in block.ops:
            if isinstance(op, YieldOp):
                return [env.get(v) for v in op.values]
            if isinstance(op, func.ReturnOp):
                continue
            if isinstance(op, PhaseOp):
                for r, obj in zip(op.results, run(op.body.block)):
                    env[r] = obj
                continue
            if isinstance(op, LoopOp):
                count, n = op.count_expr.evaluate(bindings), len(op.carried)
                carried, stacks = [env.get(v) for v in op.carried], None
                args = op.body.block.args
                for i in range(count):
                    for a, obj in zip(args[:n], carried):
                        env[a] = obj
                    for a, v in zip(args[n:], op.scanned):
                        whole = env.get(v)
                        env[a] = whole[count - 1 - i if op.reverse else i] if isinstance(whole, list) else whole
                    outs = run(op.body.block)
                    carried = outs[:n]
                    stacks = [[] for _ in outs[n:]] if stacks is None else stacks
                    for s, obj in zip(stacks, outs[n:]):
                        s.append(obj)
                for r, obj in zip(op.results, carried + (stacks or [])):
                    env[r] = obj
                continue
            t = clock[0]
            clock[0] += 1
            for v in op.operands:
                touch(env.get(v), t)
            for r in op.results:
                if isinstance(op, StateOp) and op.name != "stg.input":
                    env[r] = None
                elif op.name == "stg.reshape":
                    env[r] = env.get(op.operands[0])
                elif any(isinstance(u.operation, AssignOp) for u in r.uses):
                    env[r] = None
                else:
                    env[r] = _Buffer(size(r.type), t)
                    buffers.append(env[r])
        return []

    run(module.body.block.first_op.body.block)
    live = [0] * clock[0]
    for b in buffers:
        for t in range(b.first, b.last + 1):
            live[t] += b.size
    return live


@PROPERTY
@given(train_steps())
def test_the_tiled_timeline_matches_a_step_by_step_simulation(step):
    text, bindings = step
    module = parse(text)
    full = dict(bindings)
    mem = account(module, bindings).rank_classes[0].memory
    activations = [int(x) for x in mem.timeline.live[:, KINDS.index("activations")]]
    assert activations == simulated_activations(module, full)
