"""Many simulated ranks: sharded programs equal the unsharded one, collectives on a
2x2 mesh give the expected tensors rank by rank, and send/recv pair pipeline stages."""

from __future__ import annotations

import pytest
import torch

from stagec.runtime.interpreter import Interpreter, InterpreterError, StateStore

from tests.unit.interpreter.interp_testing import close, interpreter, parse, rand, run, t

# -- a Megatron MLP: column-parallel up projection, row-parallel down projection -------

MLP_GLOBAL = f"""
func.func @mlp() -> {t("B, H")} {{
  %x = stg.input "x" : {t("B, H")}
  %w1 = stg.param "up.weight" : {t("H, F")}
  %w2 = stg.param "down.weight" : {t("F, H")}
  %h = stg.einsum "bh,hf->bf" %x, %w1 : {t("B, H")}, {t("H, F")} -> {t("B, F")}
  %a = stg.elementwise gelu %h : {t("B, F")} -> {t("B, F")}
  %y = stg.einsum "bf,fh->bh" %a, %w2 : {t("B, F")}, {t("F, H")} -> {t("B, H")}
  func.return %y : {t("B, H")}
}}"""

MLP_SHARDED = f"""
stg.mesh @m [dp = {{dp}}, tp = 2]
func.func @mlp() -> {t("B/dp, H")} {{
  %x = stg.input "x" : {t("B/dp, H")}
  %w1 = stg.param "up.weight" : {t("H, F/tp")}
  %w2 = stg.param "down.weight" : {t("F/tp, H")}
  %h = stg.einsum "bh,hf->bf" %x, %w1 : {t("B/dp, H")}, {t("H, F/tp")} -> {t("B/dp, F/tp")}
  %a = stg.elementwise gelu %h : {t("B/dp, F/tp")} -> {t("B/dp, F/tp")}
  %y = stg.einsum "bf,fh->bh" %a, %w2 : {t("B/dp, F/tp")}, {t("F/tp, H")} -> {t("B/dp, H", partial="tp")}
  %z = stg.all_reduce %y on @m [tp] : {t("B/dp, H", partial="tp")} -> {t("B/dp, H")}
  func.return %z : {t("B/dp, H")}
}}"""


@pytest.mark.parametrize("dp", [1, 2])
def test_tensor_parallel_mlp_equals_the_unsharded_one(dp):
    sizes = dict(B=4, H=6, F=8)
    store = StateStore(
        params={"up.weight": rand(6, 8, seed=1), "down.weight": rand(8, 6, seed=2)},
        inputs={"x": rand(4, 6, seed=3)},
    )
    (expected,) = interpreter(MLP_GLOBAL, **sizes).run("mlp", store)
    sharded = interpreter(MLP_SHARDED.replace("{dp}", str(dp)), **sizes)
    assert sharded.mesh.num_ranks == 2 * dp
    (got,) = sharded.run("mlp", store)
    close(got, expected)
    locals_ = sharded.run_per_rank("mlp", store)[0]
    for rank, local in enumerate(locals_):  # every tp rank holds its dp block, whole
        d = sharded.mesh.coords[rank]["dp"]
        close(local, expected[d * 4 // dp : (d + 1) * 4 // dp])


# -- collectives on a 2x2 mesh (rank = 2*dp + tp) ----------------------------------------

MESH = "stg.mesh @m [dp = 2, tp = 2]"


def _collective(src: str, dst: str, body: str) -> str:
    return f"""
    {MESH}
    func.func @f(%x: {src}) -> {dst} {{
      %y = {body} : {src} -> {dst}
      func.return %y : {dst}
    }}"""


def _locals(shape, seed=0):
    return [rand(*shape, seed=seed + rank) for rank in range(4)]


def _run_locals(ir, locals_):
    return interpreter(ir).run_per_rank("f", None, [locals_])[0]


def test_all_reduce_sums_over_tp():
    x = _locals((2, 3))
    y = _run_locals(_collective(t("2, 3", partial="tp"), t("2, 3"), "stg.all_reduce %x on @m [tp]"), x)
    for rank in range(4):
        dp = rank // 2
        close(y[rank], x[2 * dp] + x[2 * dp + 1])


def test_reduce_scatter_sums_over_tp_and_scatters_columns():
    x = _locals((2, 4))
    y = _run_locals(_collective(t("2, 4", partial="tp"), t("2, 4/tp"), "stg.reduce_scatter %x on @m [tp]"), x)
    for rank in range(4):
        dp, tp = divmod(rank, 2)
        close(y[rank], (x[2 * dp] + x[2 * dp + 1])[:, 2 * tp : 2 * tp + 2])


def test_all_gather_concatenates_dp_blocks():
    x = _locals((2, 3))
    y = _run_locals(_collective(t("4/dp, 3"), t("4, 3"), "stg.all_gather %x on @m [dp]"), x)
    for rank in range(4):
        tp = rank % 2
        close(y[rank], torch.cat([x[tp], x[2 + tp]]))


def test_all_gather_over_two_axes_orders_them_as_the_split_does():
    """[8/tp/dp]: tp is the major axis of the split, so block (tp, dp) is 2*tp + dp."""
    x = _locals((2,))
    ir = _collective(t("8/tp/dp"), t("8"), "stg.all_gather %x on @m [tp, dp]")
    (y,) = interpreter(ir).run("f", None, [x])
    by_block = {2 * (rank % 2) + rank // 2: x[rank] for rank in range(4)}
    close(y, torch.cat([by_block[i] for i in range(4)]))


def test_all_to_all_moves_the_dp_split_from_batch_to_sequence():
    x = _locals((1, 4, 3))  # [B/dp, S, H] with B = 2, S = 4
    y = _run_locals(_collective(t("2/dp, 4, 3"), t("2, 4/dp, 3"), "stg.all_to_all %x on @m [dp]"), x)
    for rank in range(4):
        dp, tp = divmod(rank, 2)
        whole = torch.cat([x[tp], x[2 + tp]])  # the [B, S, H] tensor of this tp column
        close(y[rank], whole[:, 2 * dp : 2 * dp + 2])


def test_broadcast_copies_the_root_of_each_group():
    x = _locals((3,))
    y = _run_locals(_collective(t("3"), t("3"), "stg.broadcast %x on @m [dp] root 1"), x)
    for rank in range(4):
        close(y[rank], x[2 + rank % 2])
    y = _run_locals(_collective(t("3"), t("3"), "stg.broadcast %x on @m [dp, tp] root 3"), x)
    for rank in range(4):
        close(y[rank], x[3])


def test_reshard_between_any_layouts_keeps_the_global_tensor():
    g = rand(4, 6, seed=9)
    ir = f"""
    {MESH}
    func.func @f(%x: {t("4/dp, 6/tp")}) -> ({t("4/tp, 6/dp")}, {t("4, 6", partial="dp")}, {t("4, 6")}) {{
      %a = stg.reshard %x on @m : {t("4/dp, 6/tp")} -> {t("4/tp, 6/dp")}
      %p = stg.reshard %a on @m : {t("4/tp, 6/dp")} -> {t("4, 6", partial="dp")}
      %w = stg.reshard %p on @m : {t("4, 6", partial="dp")} -> {t("4, 6")}
      func.return %a, %p, %w : {t("4/tp, 6/dp")}, {t("4, 6", partial="dp")}, {t("4, 6")}
    }}"""
    interp = interpreter(ir)
    for result in interp.run("f", None, [g]):
        close(result, g)
    a, p, w = interp.run_per_rank("f", None, [g])
    for rank in range(4):
        dp, tp = divmod(rank, 2)
        close(a[rank], g[2 * tp : 2 * tp + 2, 3 * dp : 3 * dp + 3])
        close(p[rank], g if dp == 0 else torch.zeros_like(g))
        close(w[rank], g)


def test_async_collective_returns_a_token_that_wait_opens():
    x = _locals((2,))
    ir = f"""
    {MESH}
    func.func @f(%x: {t("2", partial="tp")}) -> {t("2")} {{
      %tok = stg.all_reduce %x on @m [tp] async : {t("2", partial="tp")} -> !stg.token<{t("2")}>
      %y = stg.wait %tok : !stg.token<{t("2")}>
      func.return %y : {t("2")}
    }}"""
    y = _run_locals(ir, x)
    close(y[0], x[0] + x[1])
    close(y[3], x[2] + x[3])


# -- point to point and pipeline stages -------------------------------------------------

STAGES = f"""
stg.mesh @m [pp = 2]
func.func @stage0(%x: {t("2, 3")}) -> {t("2, 3")} {{
  %h = stg.elementwise tanh %x : {t("2, 3")} -> {t("2, 3")}
  stg.send %h to @m[pp = 1] tag 0 : {t("2, 3")}
  %g = stg.recv from @m[pp = 1] tag 1 : {t("2, 3")}
  %dx = stg.elementwise tanh_grad %g, %x : {t("2, 3")}, {t("2, 3")} -> {t("2, 3")}
  func.return %dx : {t("2, 3")}
}}
func.func @stage1() -> {t("2, 3")} {{
  %h = stg.recv from @m[pp = 0] tag 0 : {t("2, 3")}
  %y = stg.elementwise square %h : {t("2, 3")} -> {t("2, 3")}
  %g = stg.elementwise scale %h by 2.0 : {t("2, 3")} -> {t("2, 3")}
  %t = stg.send %g to @m[pp = 0] tag 1 async : {t("2, 3")}
  stg.wait %t : !stg.token
  func.return %y : {t("2, 3")}
}}"""


def test_send_and_recv_between_two_pipeline_stages():
    """Stage 0 sends its activation forward and waits for the gradient stage 1 sends
    back: the stages run side by side and their messages pair by peer and tag."""
    x = rand(2, 3, seed=1)
    results = interpreter(STAGES).run_programs(
        {"stage0": {"pp": 0}, "stage1": {"pp": 1}}, args={"stage0": [x]}
    )
    h = torch.tanh(x)
    close(results["stage1"][0], h * h)
    close(results["stage0"][0], 2 * h * (1 - h * h))  # d(tanh(x)^2)/dx
    per_rank = interpreter(STAGES).run_programs(
        {"stage0": {"pp": 0}, "stage1": {"pp": 1}}, args={"stage0": [x]}, per_rank=True
    )
    assert per_rank["stage1"][0][0] is None  # rank 0 does not run stage 1
    close(per_rank["stage1"][0][1], h * h)


def test_a_receive_nobody_sends_is_a_deadlock():
    ir = STAGES.replace("stg.recv from @m[pp = 0] tag 0", "stg.recv from @m[pp = 0] tag 7")
    with pytest.raises(InterpreterError, match=r"'stg.recv' \(%[hg]\) in @stage[01]: rank 0 waits for a "
                       r"message from rank 1 with tag 1; rank 1 waits for a message from rank 0 with tag 7, "
                       r"but no program sends them \(deadlock\)"):
        interpreter(ir).run_programs({"stage0": {"pp": 0}, "stage1": {"pp": 1}}, args={"stage0": [rand(2, 3)]})


def test_a_receive_in_a_single_program_fails_at_once():
    ir = f"""
    stg.mesh @m [pp = 2]
    func.func @f() -> {t("3")} {{
      %y = stg.recv from @m[pp = 0] tag 0 : {t("3")}
      func.return %y : {t("3")}
    }}"""
    with pytest.raises(InterpreterError, match=r"'stg.recv' \(%y\) in @f: rank 0 waits for a message "
                       r"from rank 0 with tag 0, but no program sends it \(deadlock\)"):
        run(ir)


# -- the mesh, and state written from shards ---------------------------------------------


def test_rank_order_and_groups_follow_stg_mesh():
    module = parse("stg.mesh @m [dp = 2, pp = 3, tp = 2]")
    (mesh_op,) = list(module.ops)
    mesh = Interpreter(module).mesh
    assert mesh.num_ranks == 12
    for rank in range(12):
        assert tuple(mesh.coords[rank][a] for a in ("dp", "pp", "tp")) == mesh_op.coords_of(rank)
        assert mesh.rank_of(mesh.coords[rank]) == rank
        for axes in (("tp",), ("dp",), ("pp", "tp")):
            (group,) = [g for g in mesh.groups(axes) if rank in g]
            assert list(group) == mesh_op.group_of(rank, axes)


def test_assign_reassembles_the_global_tensor_from_shards():
    """A [H/tp] parameter updated on each tp rank, duplicated over dp, inside a repeat:
    the store receives the global stacked tensor (one dp copy taken)."""
    w, g = rand(3, 8, seed=1), rand(3, 8, seed=2)
    ir = f"""
    {MESH}
    func.func @f() {{
      stg.repeat 3 {{
        %w = stg.param "layers.w" : {t("8/tp")}
        %g = stg.optimizer_state "grad" of "layers.w" : {t("8/tp")}
        %w2 = stg.sgd %w, %g lr 0.5 weight_decay 0.0 : {t("8/tp")}, {t("8/tp")} -> {t("8/tp")}
        stg.assign %w2 to "layers.w" : {t("8/tp")}
        stg.yield
      }}
      func.return
    }}"""
    store = StateStore(params={"layers.w": w}, states={("grad", "layers.w"): g})
    interpreter(ir).run("f", store)
    close(store.params["layers.w"], w - 0.5 * g)
