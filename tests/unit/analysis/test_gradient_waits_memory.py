"""Memory of a reduction in flight (passes/analysis/liveness.py): an asynchronous
collective reads its input until the compute stream waits for it, so a gradient whose
reduce-scatter stg-defer-gradient-waits lets run behind later compute is held until
its wait, beside the token's (sharded) result."""

from __future__ import annotations

import pytest
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.passes.analysis.accounting import account
from stagec.passes.schedule.pipeline import schedule
from tests.unit.analysis.test_accounting_scheduled import BINDINGS, CASES, step

STEP = """
stg.mesh @m [fsdp = 2]
func.func @train_step() attributes {stg.scheduled} {
  %x = stg.input "x" : !stg.tensor<[B, H], bf16>
  %d = stg.input "d" : !stg.tensor<[B, F], bf16>
  %g = stg.einsum "bh,bf->hf" %x, %d : !stg.tensor<[B, H], bf16>, !stg.tensor<[B, F], bf16> -> !stg.tensor<[H, F] @fsdp, bf16>
  %t = stg.reduce_scatter %g on @m [fsdp] async stream "fsdp" : !stg.tensor<[H, F] @fsdp, bf16> -> !stg.token<!stg.tensor<[H/fsdp, F], bf16>>
  EARLY
  %y = stg.einsum "bh,bf->hf" %x, %d : !stg.tensor<[B, H], bf16>, !stg.tensor<[B, F], bf16> -> !stg.tensor<[H, F], bf16>
  %z = stg.elementwise silu %y : !stg.tensor<[H, F], bf16> -> !stg.tensor<[H, F], bf16>
  LATE
  %c = stg.elementwise cast %r : !stg.tensor<[H/fsdp, F], bf16> -> !stg.tensor<[H/fsdp, F], f32>
  stg.assign %c to "grad" of "w" : !stg.tensor<[H/fsdp, F], f32>
  func.return
}
"""
WAIT = "%r = stg.wait %t : !stg.token<!stg.tensor<[H/fsdp, F], bf16>>"


def peak(wait_late: bool) -> int:
    text = STEP.replace("EARLY", "" if wait_late else WAIT).replace("LATE", WAIT if wait_late else "")
    module = Parser(make_context(), text).parse_module()
    return account(module, {"B": 2, "H": 4, "F": 8}).rank_classes[0].memory.peak_bytes


def test_the_input_of_a_reduction_lives_until_its_wait():
    # B 2, H 4, F 8, fsdp 2. Persistent: "grad" of "w", [H/2, F] f32 = 2 x 8 x 4 = 64 B.
    # The peak is at the silu: y and z ([H, F] bf16, 64 B each) and the sharded result
    # ([H/2, F] bf16, 32 B) - waited for before the einsum: 64 + 64 + 64 + 32 = 224
    assert peak(wait_late=False) == 224
    # waited for after the silu: the unsharded gradient g ([H, F] bf16, 64 B) is still
    # being reduced: 224 + 64 = 288
    assert peak(wait_late=True) == 288


@pytest.mark.parametrize("case", list(CASES))
def test_deferring_gradient_waits_changes_only_when_memory_is_held(case):
    """The deferral moves waits, nothing else: FLOPs and traffic are the same, and the
    peak can only grow (by gradients in flight), never shrink."""
    module = step(case)
    now = account(schedule(module.clone(), defer_gradient_waits=False), BINDINGS)
    deferred = account(schedule(module.clone()), BINDINGS)
    for a, b in zip(now.rank_classes, deferred.rank_classes, strict=True):
        assert b.flops_by_phase == a.flops_by_phase
        assert b.comm.as_dict() == a.comm.as_dict() and b.comm.calls == a.comm.calls
        assert b.memory.persistent == a.memory.persistent
        assert b.peak_memory_bytes >= a.peak_memory_bytes
