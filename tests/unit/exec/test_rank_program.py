"""The lowering on one rank, in this process (csrc's world without mpiexec is one
rank): offload and reload through csrc's HostOffloader, state shards and release."""

from __future__ import annotations

import torch

from stagec import csrc
from stagec.runtime.exec import RankProgram, initial_weight
from tests.unit.interpreter.interp_testing import parse

T4, H4 = "!stg.tensor<[4], f32>", "!stg.host<[4], f32>"
STEP = f"""
func.func @train_step() -> !stg.tensor<[], f32> {{
  %w = stg.param "w" : {T4}
  %h = stg.offload %w async stream "copy" : {T4} -> !stg.token<{H4}>
  %hw = stg.wait %h : !stg.token<{H4}>
  stg.release %w : {T4}
  %d = stg.reload %hw async stream "copy" : {H4} -> !stg.token<{T4}>
  %y = stg.wait %d : !stg.token<{T4}>
  %s = stg.reload %hw : {H4} -> {T4}
  %z = stg.elementwise add %y, %s : {T4}, {T4} -> {T4}
  stg.assign %z to "w" : {T4}
  %l = stg.reduce sum %z dims [0] : {T4} -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}}"""


def test_offload_reload_round_trip_through_csrc():
    program = RankProgram(parse(STEP), {}, csrc.world(), seed=3)
    assert program.execution.offloader is not None  # the program offloads: csrc's copy thread
    w = initial_weight("w", (4,), seed=3)
    # step 1: z = w + w from the two reloads of the offloaded (then released) w; 2w is exact in f32
    loss, _ = program.step({}, 1)
    assert torch.equal(program.state.entries[("params", "w", ())][0], 2 * w)
    assert abs(loss - float((2 * w).sum())) <= 1e-6 * abs(float((2 * w).sum()))
    # step 2 starts from the assigned 2w
    loss, _ = program.step({}, 2)
    assert torch.equal(program.state.entries[("params", "w", ())][0], 4 * w)
    assert abs(loss - float((4 * w).sum())) <= 1e-6 * abs(float((4 * w).sum()))
