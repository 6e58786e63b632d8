// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The ps program's verifiers (dialects/ps/ops.py): each case is the valid program of
// roundtrip.mlir's first case with one thing wrong, and the message it must give.

// A layer owned by a slave the program does not have ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 1 on @A
  ps.layer "model.layers.0" bytes 2000 slave 3
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

// CHECK: 'ps.layer' "model.layers.0" is owned by slave 3, but ps.slaves declares 1 (slaves 0..0)

// -----

// ... more slave PSs than there can be processes (10^20 crashed `stagec ps plan`'s summary) ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 100000000000000000000 on @A
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

// CHECK: 'ps.slaves' declares 100000000000000000000 slaves; give 1 to 65,536

// -----

// ... two clusters sending to one slave in one step (Fig. 5 forbids it) ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
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
    ps.push step 0 [@A layer 0 -> slave 0, @B layer 0 -> slave 0]
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

// CHECK: 'ps.push' step 0: @A and @B both use slave 0; a slave serves one cluster per step (Fig. 5)

// -----

// ... one cluster sending two layers in one step ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 2 on @A
  ps.layer "model.layers.0" bytes 2000 slave 0
  ps.layer "model.norm" bytes 8 slave 1
  ps.outer_nesterov lr 0.7 momentum 0.9
  ps.penalty alpha 0.02 beta 3.0 clip 1.0 enabled true
  ps.heartbeat interval 1.0 missed 3
  ps.snapshot every 1 keep 2
  ps.round {
    ps.push_request @A
    ps.push_request @B
    ps.push step 0 [@A layer 0 -> slave 0, @A layer 1 -> slave 1]
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

// CHECK: 'ps.push' step 0: @A sends layers 0 and 1; a cluster sends one layer per step

// -----

// ... one cluster sending two layers to one slave in one step: the cluster's mistake ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 2 on @A
  ps.layer "model.layers.0" bytes 2000 slave 0
  ps.layer "model.norm" bytes 8 slave 0
  ps.outer_nesterov lr 0.7 momentum 0.9
  ps.penalty alpha 0.02 beta 3.0 clip 1.0 enabled true
  ps.heartbeat interval 1.0 missed 3
  ps.snapshot every 1 keep 2
  ps.round {
    ps.push_request @A
    ps.push_request @B
    ps.push step 0 [@A layer 0 -> slave 0, @A layer 1 -> slave 0]
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

// CHECK: 'ps.push' step 0: @A sends layers 0 and 1; a cluster sends one layer per step

// -----

// ... a transfer of a layer the program does not have ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
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
    ps.push step 1 [@B layer 5 -> slave 0]
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

// CHECK: 'ps.push' step 1 moves layer 5, but the program has 1 layers (0..0)

// -----

// ... a transfer through a slave that does not own the layer ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 2 on @A
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
    ps.push step 1 [@B layer 0 -> slave 1]
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

// CHECK: 'ps.push' step 1 moves layer 0 via slave 1, but slave 0 owns it

// -----

// ... a transfer of a cluster the program does not declare ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
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
    ps.pull step 1 [@Z layer 0 from slave 0]
  }
}

// CHECK: 'ps.pull' step 1 moves a layer of @Z, which is not a ps.cluster of the program (@A, @B)

// -----

// ... a cluster that never pushes a layer ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
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
    ps.push step 1 []
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

// CHECK: 'ps.push': @B never moves layer 0; every cluster moves every layer once a round

// -----

// ... steps out of order ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
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
    ps.pull step 2 [@B layer 0 from slave 0]
  }
}

// CHECK: 'ps.pull' step 2 comes where step 1 is due; steps are numbered 0, 1, ... in order

// -----

// ... a bandwidth matrix of the wrong size ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
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

// CHECK: 'ps.bandwidth' is 3 x 3 but the program has 2 clusters; give an 2 x 2 matrix

// -----

// ... one that is not square ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[1.0, 1.0], [1.0]]
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

// CHECK: 'ps.bandwidth' is not square: row 1 has 1 entries, the matrix 2 rows; give an N x N matrix

// -----

// ... one with a bandwidth that is not positive ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 0.0], [1000000.0, 1000000.0]]
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

// CHECK: 'ps.bandwidth' entry [0][1] is 0.0; every bandwidth is a finite number of bytes/s > 0

// -----

// ... a penalty threshold beta <= 0 ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 1 on @A
  ps.layer "model.layers.0" bytes 2000 slave 0
  ps.outer_nesterov lr 0.7 momentum 0.9
  ps.penalty alpha 0.02 beta 0.0 clip 1.0 enabled true
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

// CHECK: 'ps.penalty' beta 0.0: the outlier threshold is finite and > 0 (§4.1: 3)

// -----

// ... an EMA factor outside (0, 1] ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 1 on @A
  ps.layer "model.layers.0" bytes 2000 slave 0
  ps.outer_nesterov lr 0.7 momentum 0.9
  ps.penalty alpha 1.5 beta 3.0 clip 1.0 enabled true
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

// CHECK: 'ps.penalty' alpha 1.5: the EMA factor is in (0, 1] (§4.1: 0.02)

// -----

// ... no heartbeat declaration ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 1 on @A
  ps.layer "model.layers.0" bytes 2000 slave 0
  ps.outer_nesterov lr 0.7 momentum 0.9
  ps.penalty alpha 0.02 beta 3.0 clip 1.0 enabled true
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

// CHECK: 'ps.program' needs exactly one ps.heartbeat, it has 0

// -----

// ... a heartbeat that never misses ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 1 on @A
  ps.layer "model.layers.0" bytes 2000 slave 0
  ps.outer_nesterov lr 0.7 momentum 0.9
  ps.penalty alpha 0.02 beta 3.0 clip 1.0 enabled true
  ps.heartbeat interval 1.0 missed 0
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

// CHECK: 'ps.heartbeat' missed 0: give at least 1 beat

// -----

// ... a cluster declared twice ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @A throughput 500.0 delay 0.0
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

// CHECK: 'ps.program' declares cluster @A twice

// -----

// ... master and slaves on different clusters ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 1 on @B
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

// CHECK: 'ps.slaves' run on @B but 'ps.master' on @A; the PSs share the PS cluster (§3.1)

// -----

// ... a commit before the cluster has pushed every layer ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
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
    ps.commit prepare @A
    ps.commit commit @A
    ps.push step 0 [@A layer 0 -> slave 0]
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

// CHECK: 'ps.commit' prepare @A comes before @A's last push step; a cluster commits once it has sent every layer (§3.2 step 2)

// -----

// ... the second stage of a commit before the first ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
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
    ps.commit commit @B
    ps.commit prepare @B
    ps.window_close
    ps.update
    ps.pull_notice @A
    ps.pull_notice @B
    ps.pull step 0 [@A layer 0 from slave 0]
    ps.pull step 1 [@B layer 0 from slave 0]
  }
}

// CHECK: 'ps.commit' comes before 'ps.commit' in ps.round; the two-stage commit prepares before it commits

// -----

// ... a cluster without its push request ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
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

// CHECK: 'ps.round' needs exactly one ps.push_request @B, it has 0

// -----

// ... the window closing before a cluster commits ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
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
    ps.window_close
    ps.commit commit @B
    ps.update
    ps.pull_notice @A
    ps.pull_notice @B
    ps.pull step 0 [@A layer 0 from slave 0]
    ps.pull step 1 [@B layer 0 from slave 0]
  }
}

// CHECK: 'ps.window_close' comes before 'ps.commit' in ps.round; @B commits inside the window

// -----

// ... pulls announced before the update ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
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
    ps.pull_notice @A
    ps.update
    ps.pull_notice @B
    ps.pull step 0 [@A layer 0 from slave 0]
    ps.pull step 1 [@B layer 0 from slave 0]
  }
}

// CHECK: 'ps.pull_notice' comes before 'ps.update' in ps.round; the master notifies pulls after the update (§3.2 step 6)

// -----

// ... and a control message outside the round.
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
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
  ps.update
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

// CHECK: 'ps.update' expects parent op 'ps.round'

// -----

// The model's overrides are JSON values (dialects/ps/syntax.py, kind config): an
// integer of another width than i64 is not one ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" overrides {num_hidden_layers = 3 : i32} {
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

// CHECK: 'ps.program' model override 'num_hidden_layers': 3 : i32 is not a JSON value; give an integer, a number with a '.', true or false, a string, unit (null), a list [...] or a dictionary {...}

// -----

// ... nor, inside an object, an f32 ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" overrides {rope_scaling = {factor = 8.0 : f32, rope_type = "llama3"}} {
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

// CHECK: 'ps.program' model override 'rope_scaling': 8.000000e+00 : f32 is not a JSON value

// -----

// ... and the model's dtype, which the custom form only spells as one of the dtypes,
// is checked in the generic form too.
"ps.program"() <{sym_name = "p", inner_steps = #builtin.int<2>, tokens_per_step = #builtin.int<100>, model = "m", model_dtype = "i8"}> ({
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
}) : () -> ()

// CHECK: 'ps.program' has model dtype 'i8'; give one of bf16, f16, f32, f64

// -----

// An op whose property is missing (generic form) is blamed at its own line: the program's
// checks, which read every op's properties, wait until each op passes its own (they
// raised an internal error here) ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  "ps.master"() <{}> : () -> ()
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

// CHECK: invalid.mlir:[[# @LINE - 26]]:3: error: 'ps.master' op property 'cluster' expected in operation 'ps.master'

// -----

// ... and so is one with a wrong value: the slave count, not the layer it leaves ownerless.
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  "ps.slaves"() <{count = #builtin.int<-2>, cluster = "A"}> : () -> ()
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

// CHECK: invalid.mlir:[[# @LINE - 25]]:3: error: 'ps.slaves' op 'ps.slaves' declares -2 slaves; give 1 to 65,536

// -----

// The properties have the types the custom syntax prints: B is a matrix of f64 ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  "ps.bandwidth"() <{matrix = [["a", "b"], ["c", "d"]]}> : () -> ()
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

// CHECK: 'ps.bandwidth' op "a" should be of base attribute float

// -----

// ... not a vector ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  "ps.bandwidth"() <{matrix = [2.0e6 : f64, 1.0e6 : f64]}> : () -> ()
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

// CHECK: 'ps.bandwidth' op expected ArrayAttr attribute

// -----

// ... a rate is f64, not f32 (it would print as `1000.0` and read back as f64) ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  "ps.cluster"() <{sym_name = "A", throughput = 1.0e3 : f32, extra_delay = 0.0 : f64}> : () -> ()
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

// CHECK: 'ps.cluster' op f32 should be of base attribute f64

// -----

// ... and `enabled` is an i1 (3 : i64 printed as `true`).
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 1 on @A
  ps.layer "model.layers.0" bytes 2000 slave 0
  ps.outer_nesterov lr 0.7 momentum 0.9
  "ps.penalty"() <{alpha = 0.02 : f64, beta = 3.0 : f64, clip = 1.0 : f64, enabled = 3 : i64}> : () -> ()
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

// CHECK: 'ps.penalty' op Expected attribute i1 but got i64

// -----

// Every number is finite: an inf, which only the generic form can write, printed as `inf`,
// which no parser reads back. A throughput ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  "ps.cluster"() <{sym_name = "A", throughput = 0x7FF0000000000000 : f64, extra_delay = 0.0 : f64}> : () -> ()
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

// CHECK: 'ps.cluster' @A has throughput inf; give a finite number of tokens/s > 0

// -----

// ... a delay ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  "ps.cluster"() <{sym_name = "A", throughput = 1.0e3 : f64, extra_delay = 0x7FF0000000000000 : f64}> : () -> ()
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

// CHECK: 'ps.cluster' @A has delay inf; give a finite fraction of a step >= 0

// -----

// ... the outer learning rate ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 1 on @A
  ps.layer "model.layers.0" bytes 2000 slave 0
  "ps.outer_nesterov"() <{lr = 0x7FF0000000000000 : f64, momentum = 0.9 : f64}> : () -> ()
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

// CHECK: 'ps.outer_nesterov' lr inf: give a finite lr > 0

// -----

// ... beta ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 1 on @A
  ps.layer "model.layers.0" bytes 2000 slave 0
  ps.outer_nesterov lr 0.7 momentum 0.9
  "ps.penalty"() <{alpha = 0.02 : f64, beta = 0x7FF0000000000000 : f64, clip = 1.0 : f64, enabled = true}> : () -> ()
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

// CHECK: 'ps.penalty' beta inf: the outlier threshold is finite and > 0 (§4.1: 3)

// -----

// ... the clipping norm ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 1 on @A
  ps.layer "model.layers.0" bytes 2000 slave 0
  ps.outer_nesterov lr 0.7 momentum 0.9
  "ps.penalty"() <{alpha = 0.02 : f64, beta = 3.0 : f64, clip = 0x7FF0000000000000 : f64, enabled = true}> : () -> ()
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

// CHECK: 'ps.penalty' clip inf: the clipping norm is finite and > 0 (§4.1: 1)

// -----

// ... the heartbeat ...
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
  ps.cluster @A throughput 1000.0 delay 0.0
  ps.cluster @B throughput 500.0 delay 0.0
  ps.bandwidth [[2000000.0, 1000000.0], [1000000.0, 1000000.0]]
  ps.master on @A
  ps.slaves 1 on @A
  ps.layer "model.layers.0" bytes 2000 slave 0
  ps.outer_nesterov lr 0.7 momentum 0.9
  ps.penalty alpha 0.02 beta 3.0 clip 1.0 enabled true
  "ps.heartbeat"() <{interval = 0x7FF0000000000000 : f64, missed = #builtin.int<3>}> : () -> ()
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

// CHECK: 'ps.heartbeat' interval inf: give a finite number of seconds > 0

// -----

// ... and the grace window.
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
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
    "ps.window_open"() <{grace = 0x7FF0000000000000 : f64}> : () -> ()
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

// CHECK: 'ps.window_open' grace inf: give a finite number of seconds >= 0

// -----

// The round's region takes no block arguments: the custom syntax, which prints none,
// would drop them.
ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
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
  "ps.round"() ({
  ^bb0(%a: i32):
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
  }) : () -> ()
}

// CHECK: 'ps.round' has 1 block arguments; its region takes none
