// RUN: not stagec-opt %s 2>&1 | filecheck %s

// A ps program's model overrides are a dictionary of config keys
// (dialects/ps/syntax.py, kind config): anything else is a syntax error at the value,
// one line, exit 2.

ps.program @p inner_steps 2 tokens_per_step 100 model "m" overrides [4] {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 1 on @A
  ps.layer "model.layers.0" bytes 2000 slave 0
  ps.outer_nesterov lr 0.7 momentum 0.9
  ps.penalty alpha 0.02 beta 3.0 clip 1.0 enabled true
  ps.heartbeat interval 1.0 missed 3
  ps.snapshot every 1 keep 2
  ps.round {
    ps.push_request @A
    ps.push_request @B
    ps.push step 0 [@A layer 0 -> slave 0]
    ps.commit prepare @A
    ps.commit commit @A
    ps.window_open grace 0.0005
    ps.push step 1 [@B layer 0 -> slave 0]
    ps.commit prepare @B
    ps.commit commit @B
    ps.window_close
    ps.update
    ps.pull_notice @A
    ps.pull_notice @B
    ps.pull step 0 [@A layer 0 from slave 0]
    ps.pull step 1 [@B layer 0 from slave 0]
  }
}

// CHECK: invalid_overrides_syntax.mlir:{{[0-9]+}}:69: error: expected a dictionary {key = value, ...} (overrides)
// CHECK-NEXT: ps.program @p inner_steps 2 tokens_per_step 100 model "m" overrides [4] {
