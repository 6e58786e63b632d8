"""One memory-model rule per test (passes/analysis/memory.py), on the smallest program
that shows it. `!t` is a [4] f32 tensor: 16 bytes; `!big` [8] f32: 32 bytes. Each
test writes out the lifetimes [first, last position] it expects."""

import pytest
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.passes.analysis.accounting import AccountingError, account
from stagec.passes.analysis.liveness import COMPUTE_STREAM, PRE_UNSHARD_STREAM, UNSHARD_STREAM

TYPES = """
!t = !stg.tensor<[4], f32>
!big = !stg.tensor<[8], f32>
!host = !stg.host<[4], f32>
"""


def memory(body: str, bindings=None, prefix: str = ""):
    text = f"{TYPES}{prefix}\nfunc.func @f() {{\n{body}\n  func.return\n}}"
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return account(module, bindings or {}).rank_classes[0].memory


def live(mem, kind="activations"):
    return [e.bytes[kind] for e in mem.timeline.entries()]


def test_a_tensor_lives_from_definition_to_last_use():
    mem = memory("""
  %a = stg.input "a" : !t
  %b = stg.elementwise neg %a : !t -> !t
  %c = stg.elementwise neg %b : !t -> !t
  %d = stg.elementwise add %a, %c : !t, !t -> !t
""")
    # a [0, 3], b [1, 2], c [2, 3], d [3, 3] (never used: its defining op only)
    assert live(mem) == [16, 32, 48, 48]
    assert (mem.peak_bytes, mem.peak_position) == (48, 2)


def test_release_ends_a_lifetime_and_never_extends_one():
    after_last_use = memory("""
  %a = stg.input "a" : !t
  %b = stg.elementwise neg %a : !t -> !t
  stg.release %a : !t
  %c = stg.elementwise neg %b : !t -> !t
""")
    # a [0, 1]: the release at 2 comes after its last use and changes nothing
    assert live(after_last_use) == [16, 32, 16, 32]
    early = memory("""
  %a = stg.input "a" : !t
  %b = stg.elementwise neg %a : !t -> !t
  stg.release %a : !t
  %c = stg.elementwise neg %b : !t -> !t
  stg.release %b : !t
  %d = stg.elementwise neg %b : !t -> !t
""")
    # b is released at 4 although read at 5: b [1, 4], c [3, 3], d [5, 5]
    assert live(early) == [16, 32, 16, 32, 16, 16]


def test_offload_frees_the_device_copy_until_reload():
    mem = memory("""
  %a = stg.input "a" : !t
  %h = stg.offload %a : !t -> !host
  %z = stg.input "z" : !big
  %r = stg.reload %h : !host -> !t
  %s = stg.elementwise add %r, %r : !t, !t -> !t
  %y = stg.elementwise neg %z : !big -> !big
""")
    # a [0, 1] (the copy), z [2, 5], r [3, 4] (a new device buffer), s [4, 4], y [5, 5]
    assert live(mem) == [16, 16, 32, 48, 64, 64]


def test_async_offload_holds_the_device_copy_until_its_wait():
    mem = memory("""
  %a = stg.input "a" : !t
  %tok = stg.offload %a async : !t -> !stg.token<!host>
  %z = stg.input "z" : !big
  %h = stg.wait %tok : !stg.token<!host>
  %y = stg.elementwise neg %z : !big -> !big
""")
    # a [0, 3]: the copy completes at the wait; z [2, 4], y [4, 4]
    assert live(mem) == [16, 16, 48, 48, 64]


def test_offloaded_state_leaves_the_device_until_reload():
    mem = memory("""
  %m = stg.optimizer_state "exp_avg" of "w" : !t
  %h = stg.offload %m : !t -> !host
  %x = stg.input "x" : !big
  %r = stg.reload %h : !host -> !t
  stg.assign %r to "exp_avg" of "w" : !t
""")
    assert mem.persistent["optimizer_states"] == 16
    # off the device after the copy (1) until the reload (3); x [2, 2]
    assert live(mem, "optimizer_states") == [16, 16, 0, 16, 16]
    assert live(mem) == [0, 0, 32, 0, 0]
    assert mem.peak_bytes == 32


def test_async_collectives_are_communication_buffers_until_the_waited_value_dies():
    mem = memory(
        """
  %x = stg.input "x" : !stg.tensor<[B/dp], f32>
  %tok = stg.all_gather %x on @m [dp] async : !stg.tensor<[B/dp], f32> -> !stg.token<!stg.tensor<[B], f32>>
  %y = stg.elementwise neg %x : !stg.tensor<[B/dp], f32> -> !stg.tensor<[B/dp], f32>
  %w = stg.wait %tok : !stg.token<!stg.tensor<[B], f32>>
  %z = stg.elementwise neg %w : !stg.tensor<[B], f32> -> !stg.tensor<[B], f32>
""",
        {"B": 8},
        prefix="stg.mesh @m [dp = 2]",
    )
    # per rank: x is B/dp = 4 floats, the gathered buffer 8. x [0, 2], y [2, 2],
    # the gathered buffer (token and waited value) [1, 4], z [4, 4]; an all-gather's
    # input is a shard the framework frees once it is issued (liveness._is_async_issue)
    assert live(mem) == [16, 16, 32, 0, 32]
    assert live(mem, "communication") == [0, 32, 32, 32, 32]
    assert (mem.peak_bytes, mem.peak_position) == (64, 2)


def test_a_value_used_inside_a_loop_lives_until_the_last_iteration():
    mem = memory("""
  %k = stg.input "k" : !t
  %a = stg.input "a" : !t
  %r = stg.repeat 3 carry(%c = %a : !t) {
    %n = stg.elementwise add %c, %k : !t, !t -> !t
    stg.yield %n : !t
  }
  %z = stg.elementwise neg %r : !t -> !t
""")
    # k [0, 4] (iteration 2 at 4); a [1, 2]; iteration i's n [2+i, 3+i]: carried to
    # the next iteration, the last one's to the loop result read at 5; z [5, 5]
    assert live(mem) == [16, 32, 48, 48, 48, 32]
    assert mem.timeline[3].op == "stg.elementwise"


def test_stacked_outputs_grow_and_a_scan_frees_each_slice_after_its_iteration():
    mem = memory("""
  %a = stg.input "a" : !t
  %r, %st = stg.repeat 3 carry(%c = %a : !t) {
    %n = stg.elementwise neg %c : !t -> !t
    stg.yield %n, %n : !t, !t
  }
  %q = stg.repeat 3 carry(%d = %r : !t) scan(%x = %st : !stg.tensor<[3, 4], f32>) reverse {
    %m = stg.elementwise add %d, %x : !t, !t -> !t
    stg.yield %m : !t
  }
""")
    # forward: n_i [1+i, ...] stacked; the reverse scan gives slice 2-j to iteration j
    # (position 4+j): n_2 [3, 4], n_1 [2, 5], n_0 [1, 6]; a [0, 1]; m_0 [4, 5],
    # m_1 [5, 6], m_2 [6, 6] (the result is unused)
    assert live(mem) == [16, 32, 32, 48, 64, 64, 48]
    assert [e.op for e in mem.timeline.entries()][3:] == ["stg.elementwise"] * 4


def test_any_other_use_of_a_stack_keeps_every_slice():
    mem = memory("""
  %a = stg.input "a" : !t
  %r, %st = stg.repeat 2 carry(%c = %a : !t) {
    %n = stg.elementwise neg %c : !t -> !t
    stg.yield %n, %n : !t, !t
  }
  %s = stg.reduce sum %st dims [0] : !stg.tensor<[2, 4], f32> -> !t
""")
    # n_0 [1, 3], n_1 [2, 3] (both read by the reduce), a [0, 1], s [3, 3]
    assert live(mem) == [16, 32, 32, 48]


def test_a_vjp_is_one_kernel_its_body_holds_no_memory():
    mem = memory("""
  %x = stg.input "x" : !t
  %w = stg.param "w" : !t
  %dy = stg.input "dy" : !t
  %dx = stg.vjp(%x, %w) wrt [0] cotangents(%dy : !t) {
  ^bb0(%a : !t, %b : !t):
    %p = stg.elementwise mul %a, %b : !t, !t -> !t
    %q = stg.elementwise exp %p : !t -> !t
    stg.yield %q : !t
  } : (!t, !t) -> (!t)
""")
    # x [0, 3], dy [2, 3], dx [3, 3]; the weight is a persistent state
    assert live(mem) == [16, 16, 32, 48]
    assert live(mem, "weights") == [16] * 4


def test_persistent_states_count_distinct_pairs_times_repeat_multiplicity():
    mem = memory("""
  stg.microbatch 3 {
    stg.repeat 4 {
      %w = stg.param "w" : !t
      %g = stg.optimizer_state "grad" of "w" : !t
      %g2 = stg.elementwise add %g, %w : !t, !t -> !t
      stg.assign %g2 to "grad" of "w" : !t
      stg.yield
    }
    stg.yield
  }
  %e = stg.param "tied" : !big
  %e2 = stg.param "tied" : !big
  stg.repeat 2 {
    stg.repeat 3 {
      %m = stg.optimizer_state "exp_avg" of "x" : !t
      stg.yield
    }
    stg.yield
  }
""")
    # w: 4 layers (the micro-batch loop re-reads them), the tied table once,
    # exp_avg of x: 2*3 tensors; the assigned sum is the grad state itself
    assert mem.persistent == {
        "weights": 4 * 16 + 32, "gradients": 4 * 16, "optimizer_states": 6 * 16, "activations": 0, "communication": 0
    }
    assert set(live(mem)) == {0}
    assert len(mem.timeline) == 3 * 4 * 4 + 2 + 6


def test_ranks_and_local_shards_come_from_the_mesh():
    text = TYPES + """
stg.mesh @m [dp = 2, tp]
func.func @f() {
  %w = stg.param "w" : !stg.tensor<[H, F/tp], f32>
  %x = stg.input "x" : !stg.tensor<[B/dp, H], f32>
  func.return
}"""
    module = Parser(make_context(), text).parse_module()
    module.verify()
    result = account(module, {"B": 8, "H": 4, "F": 16, "tp": 4})
    (rc,) = result.rank_classes
    assert rc.ranks == tuple(range(8))
    assert (result.params, rc.params) == (64, 16)
    assert rc.memory.persistent["weights"] == 16 * 4
    assert rc.memory.peak_bytes == 16 * 4 + 4 * 4 * 4


def test_unbound_and_indivisible_sizes_are_clear_errors():
    body = '  %x = stg.input "x" : !stg.tensor<[B/dp], f32>'
    with pytest.raises(AccountingError, match="B"):
        memory(body, {}, prefix="stg.mesh @m [dp = 2]")
    with pytest.raises(AccountingError, match="divid|integer|not"):
        memory(body, {"B": 3}, prefix="stg.mesh @m [dp = 2]")


def test_a_gradient_accumulation_cast_holds_no_buffer():
    """is_accumulating_cast: a cast whose one use is an add assigned to a state is
    Megatron's `param.main_grad.add_(param.grad.data)` - one mixed-dtype kernel, no
    fp32 copy; the bf16 gradient lives until the add."""
    prefix = "!t16 = !stg.tensor<[4], bf16>"
    mem = memory("""
  %w = stg.param "w" : !t16
  %d = stg.elementwise neg %w : !t16 -> !t16
  %d32 = stg.elementwise cast %d : !t16 -> !t
  %g = stg.optimizer_state "grad" of "w" : !t
  %g2 = stg.elementwise add %g, %d32 : !t, !t -> !t
  stg.assign %g2 to "grad" of "w" : !t
""", prefix=prefix)
    # d (bf16 [4], 8 B) [1, 4]: read by the add through the cast; the sum is the state
    assert live(mem) == [0, 8, 8, 8, 8, 0]
    kept = memory("""
  %w = stg.param "w" : !t16
  %d = stg.elementwise neg %w : !t16 -> !t16
  %d32 = stg.elementwise cast %d : !t16 -> !t
  %e = stg.elementwise neg %d32 : !t -> !t
""", prefix=prefix)
    # any other cast is a buffer: d 8 B [1, 2], d32 16 B [2, 3], e 16 B [3, 3]
    assert live(kept) == [0, 8, 24, 32]


FSDP_STEP = """
stg.mesh @m [fsdp = 2]
func.func @f() {
  %w = stg.param "w" : !stg.tensor<[8/fsdp], bf16>
  %g = stg.all_gather %w on @m [fsdp] : !stg.tensor<[8/fsdp], bf16> -> !stg.tensor<[8], bf16>
  %y = stg.elementwise neg %g : !stg.tensor<[8], bf16> -> !stg.tensor<[8], bf16>
  %m = stg.optimizer_state "master" of "w" : !stg.tensor<[8/fsdp], f32>
  %m2 = stg.elementwise neg %m : !stg.tensor<[8/fsdp], f32> -> !stg.tensor<[8/fsdp], f32>
  stg.assign %m2 to "master" of "w" : !stg.tensor<[8/fsdp], f32>
  %w2 = stg.elementwise cast %m2 : !stg.tensor<[8/fsdp], f32> -> !stg.tensor<[8/fsdp], bf16>
  stg.assign %w2 to "w" : !stg.tensor<[8/fsdp], bf16>
  func.return
}"""


@pytest.mark.parametrize("master", [True, False])
def test_an_fsdp_parameter_with_a_master_is_stored_only_as_the_master(master):
    """gathered_from_master: FSDP's mixed precision keeps the fp32 flat parameter
    and casts a bf16 shard before each all-gather; without a master the bf16 shard
    is the parameter's storage."""
    text = FSDP_STEP if master else FSDP_STEP.replace('"master" of "w"', '"exp_avg" of "w"')
    module = Parser(make_context(), TYPES + text).parse_module()
    module.verify()
    mem = account(module, {}).rank_classes[0].memory
    # shard: [4] bf16 = 8 B; master (or exp_avg) [4] f32 = 16 B; gathered [8] bf16 16 B
    # positions: 0 param, 1 all_gather, 2 neg, 3 state read, 4 neg, 5 assign, 6 cast, 7 assign
    if master:
        # no weights state; the shard lives [0, 1] (kind weights), the cast written
        # to "w" at 6 is a transient [6, 7] (activations; the assign reads it)
        assert mem.persistent["weights"] == 0 and mem.persistent["optimizer_states"] == 16
        assert live(mem, "weights") == [8, 8, 0, 0, 0, 0, 0, 0]
        assert live(mem) == [0, 0, 16, 0, 0, 0, 8, 8]
        assert live(mem, "communication") == [0, 16, 16, 0, 0, 0, 0, 0]  # gathered [1, 2]
        # the shard on FSDP's pre-unshard stream, the gathered weight on its unshard one
        assert mem.allocations.streams.tolist() == [PRE_UNSHARD_STREAM, UNSHARD_STREAM, COMPUTE_STREAM, COMPUTE_STREAM]
    else:
        assert mem.persistent["weights"] == 8
        assert live(mem, "weights") == [8] * 8
        assert live(mem) == [0, 0, 16, 0, 0, 0, 0, 0]  # the cast is the state's storage
