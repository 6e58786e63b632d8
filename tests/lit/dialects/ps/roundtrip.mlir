// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// A Di-PS program (dialects/ps): two clusters, one slave PS on cluster A, one layer;
// the round of di-ps.md §3.2 in issue order. It prints back as written, through the
// custom and the generic form.
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
    ps.pull step 1 [@B layer 0 from slave 0]
  }
}

// Attributes beside the fields: the program's (a region follows) with MLIR's keyword.
ps.program @q inner_steps 1 tokens_per_step 0 model "" attributes {note = "x"} {
  ps.cluster @"cluster one" throughput 1.5e+20 delay 0.25 {site = "eu"}
  ps.bandwidth [[1250000000.0]]
  ps.master on @"cluster one"
  ps.slaves 1 on @"cluster one"
  ps.layer "lm_head" bytes 1 slave 0
  ps.outer_nesterov lr 0.7 momentum 0.0
  ps.penalty alpha 1.0 beta 0.5 clip 2.0 enabled false
  ps.heartbeat interval 0.25 missed 1
  ps.snapshot every 0 keep 1
  ps.round {
    ps.push_request @"cluster one"
    ps.push step 0 [@"cluster one" layer 0 -> slave 0]
    ps.commit prepare @"cluster one"
    ps.commit commit @"cluster one"
    ps.window_open grace 0.0
    ps.window_close
    ps.update
    ps.pull_notice @"cluster one"
    ps.pull step 0 [@"cluster one" layer 0 from slave 0]
  }
}

// A program that names its model fully (§ stagec ps plan's CONFIG `model: {name,
// overrides, dtype}`): the dtype unless f32, the overrides as written (HF config keys
// and their JSON values: integers, numbers with a '.', booleans, strings, unit for null,
// lists, nested objects, quoted keys), so that the program alone rebuilds its model.
// `dtype f32` and `overrides {}` are the defaults: they print as nothing.
ps.program @r inner_steps 1 tokens_per_step 0 model "llama3.2-1b" dtype bf16 overrides {head_dim = 10, num_hidden_layers = 3, rms_norm_eps = 1.0e-05, rope_scaling = {factor = 8.0, high_freq_factor = 4.0, low_freq_factor = 1.0, original_max_position_embeddings = 1024, rope_type = "llama3"}, rope_theta = 500000.0, tie_word_embeddings = false, "x-y" = unit, z = [-1, 2.5, "s", true, []]} {
  ps.cluster @A throughput 1.0 delay 0.0
  ps.bandwidth [[1.0]]
  ps.master on @A
  ps.slaves 1 on @A
  ps.layer "lm_head" bytes 1 slave 0
  ps.outer_nesterov lr 0.7 momentum 0.0
  ps.penalty alpha 1.0 beta 0.5 clip 2.0 enabled false
  ps.heartbeat interval 0.25 missed 1
  ps.snapshot every 0 keep 1
  ps.round {
    ps.push_request @A
    ps.push step 0 [@A layer 0 -> slave 0]
    ps.commit prepare @A
    ps.commit commit @A
    ps.window_open grace 0.0
    ps.window_close
    ps.update
    ps.pull_notice @A
    ps.pull step 0 [@A layer 0 from slave 0]
  }
}
ps.program @s inner_steps 1 tokens_per_step 0 model "m" dtype f32 overrides {} {
  ps.cluster @A throughput 1.0 delay 0.0
  ps.bandwidth [[1.0]]
  ps.master on @A
  ps.slaves 1 on @A
  ps.layer "lm_head" bytes 1 slave 0
  ps.outer_nesterov lr 0.7 momentum 0.0
  ps.penalty alpha 1.0 beta 0.5 clip 2.0 enabled false
  ps.heartbeat interval 0.25 missed 1
  ps.snapshot every 0 keep 1
  ps.round {
    ps.push_request @A
    ps.push step 0 [@A layer 0 -> slave 0]
    ps.commit prepare @A
    ps.commit commit @A
    ps.window_open grace 0.0
    ps.window_close
    ps.update
    ps.pull_notice @A
    ps.pull step 0 [@A layer 0 from slave 0]
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT: ps.program @p inner_steps 2 tokens_per_step 100 model "m" {
// CHECK-NEXT: ps.cluster @A throughput 1000.0 delay 0.0
// CHECK-NEXT: ps.cluster @B throughput 500.0 delay 0.0
// CHECK-NEXT: ps.bandwidth {{\[\[}}2000000.0, 1000000.0], [1000000.0, 1000000.0]]
// CHECK-NEXT: ps.master on @A
// CHECK-NEXT: ps.slaves 1 on @A
// CHECK-NEXT: ps.layer "model.layers.0" bytes 2000 slave 0
// CHECK-NEXT: ps.outer_nesterov lr 0.7 momentum 0.9
// CHECK-NEXT: ps.penalty alpha 0.02 beta 3.0 clip 1.0 enabled true
// CHECK-NEXT: ps.heartbeat interval 1.0 missed 3
// CHECK-NEXT: ps.snapshot every 1 keep 2
// CHECK-NEXT: ps.round {
// CHECK-NEXT: ps.push_request @A
// CHECK-NEXT: ps.push_request @B
// CHECK-NEXT: ps.push step 0 [@A layer 0 -> slave 0]
// CHECK-NEXT: ps.commit prepare @A
// CHECK-NEXT: ps.commit commit @A
// CHECK-NEXT: ps.window_open grace 0.0005
// CHECK-NEXT: ps.push step 1 [@B layer 0 -> slave 0]
// CHECK-NEXT: ps.commit prepare @B
// CHECK-NEXT: ps.commit commit @B
// CHECK-NEXT: ps.window_close
// CHECK-NEXT: ps.update
// CHECK-NEXT: ps.pull_notice @A
// CHECK-NEXT: ps.pull_notice @B
// CHECK-NEXT: ps.pull step 0 [@A layer 0 from slave 0]
// CHECK-NEXT: ps.pull step 1 [@B layer 0 from slave 0]
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: ps.program @q inner_steps 1 tokens_per_step 0 model "" attributes {note = "x"} {
// CHECK-NEXT: ps.cluster @"cluster one" throughput 1.5e+20 delay 0.25 {site = "eu"}
// CHECK-NEXT: ps.bandwidth {{\[\[}}1250000000.0]]
// CHECK-NEXT: ps.master on @"cluster one"
// CHECK-NEXT: ps.slaves 1 on @"cluster one"
// CHECK-NEXT: ps.layer "lm_head" bytes 1 slave 0
// CHECK-NEXT: ps.outer_nesterov lr 0.7 momentum 0.0
// CHECK-NEXT: ps.penalty alpha 1.0 beta 0.5 clip 2.0 enabled false
// CHECK-NEXT: ps.heartbeat interval 0.25 missed 1
// CHECK-NEXT: ps.snapshot every 0 keep 1
// CHECK-NEXT: ps.round {
// CHECK-NEXT: ps.push_request @"cluster one"
// CHECK-NEXT: ps.push step 0 [@"cluster one" layer 0 -> slave 0]
// CHECK-NEXT: ps.commit prepare @"cluster one"
// CHECK-NEXT: ps.commit commit @"cluster one"
// CHECK-NEXT: ps.window_open grace 0.0
// CHECK-NEXT: ps.window_close
// CHECK-NEXT: ps.update
// CHECK-NEXT: ps.pull_notice @"cluster one"
// CHECK-NEXT: ps.pull step 0 [@"cluster one" layer 0 from slave 0]
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: ps.program @r inner_steps 1 tokens_per_step 0 model "llama3.2-1b" dtype bf16 overrides {head_dim = 10, num_hidden_layers = 3, rms_norm_eps = 1.0e-05, rope_scaling = {factor = 8.0, high_freq_factor = 4.0, low_freq_factor = 1.0, original_max_position_embeddings = 1024, rope_type = "llama3"}, rope_theta = 500000.0, tie_word_embeddings = false, "x-y" = unit, z = [-1, 2.5, "s", true, []]} {
// CHECK-NEXT: ps.cluster @A throughput 1.0 delay 0.0
// CHECK:      ps.program @s inner_steps 1 tokens_per_step 0 model "m" {
// CHECK-NEXT: ps.cluster @A throughput 1.0 delay 0.0
// CHECK:      }
// CHECK-NEXT: }
// CHECK-NEXT: }

// GENERIC:      "ps.program"() <{sym_name = "p", inner_steps = #builtin.int<2>, tokens_per_step = #builtin.int<100>, model = "m"}> ({
// GENERIC-NEXT:   "ps.cluster"() <{sym_name = "A", throughput = 1.000000e+03 : f64, extra_delay = 0.000000e+00 : f64}> : () -> ()
// GENERIC:        "ps.push"() <{step = #builtin.int<0>, clusters = ["A"], layers = [#builtin.int<0>], slaves = [#builtin.int<0>]}> : () -> ()
// GENERIC:        "ps.commit"() <{phase = "prepare", cluster = "A"}> : () -> ()
// GENERIC:      "ps.program"() <{sym_name = "r", inner_steps = #builtin.int<1>, tokens_per_step = #builtin.int<0>, model = "llama3.2-1b", model_dtype = "bf16", model_overrides = {head_dim = 10 : i64, num_hidden_layers = 3 : i64, rms_norm_eps = 1.000000e-05 : f64, rope_scaling = {factor = 8.000000e+00 : f64, high_freq_factor = 4.000000e+00 : f64, low_freq_factor = 1.000000e+00 : f64, original_max_position_embeddings = 1024 : i64, rope_type = "llama3"}, rope_theta = 5.000000e+05 : f64, tie_word_embeddings = false, "x-y", z = [-1 : i64, 2.500000e+00 : f64, "s", true, []]}}> ({
// GENERIC:      "ps.program"() <{sym_name = "s", inner_steps = #builtin.int<1>, tokens_per_step = #builtin.int<0>, model = "m"}> ({
