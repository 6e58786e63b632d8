// RUN: stagec-opt %s -p 'stg-schedule,stg-offload{memory-limit=6500 profile="%S/Inputs/rise-and-fall.json"}' | filecheck %s
// RUN: stagec-opt %s -p 'stg-schedule,stg-offload{memory-limit=6500 mode=all-sync profile="%S/Inputs/rise-and-fall.json"}' | filecheck %s --check-prefix=SYNC

// deepcompile.md Algorithm 2 and §4.4's reload policy, from a hand-made profile
// (Inputs/rise-and-fall.json): P_mem (optimizer states included, as stagec's memory
// analysis counts them) rises through the forward and falls through the backward -
//   forward f1..f4: 5000 6000 7000 8000, backward b1..b4: 8000 7000 6000 5000,
//   optimizer: 5000
// and three fragments of 1000 bytes: exp_avg of w, exp_avg_sq of w, exp_avg of u.
// M = 6500, M_peak = 8000.
//
// Offload (first loop): 8000 - 0 > 6500 -> exp_avg w; 8000 - 1000 = 7000 > 6500 ->
// exp_avg_sq w; 8000 - 2000 = 6000 <= 6500: exp_avg of u stays. Both are issued at the
// forward's start on the copy stream.
// Synchronize (second loop): f1 5000 and f2 6000 are under M; f3 7000 - 0 > 6500: exp_avg
// w is waited for (freed) right before f3 (7000 - 1000 = 6000); f4 8000 - 1000 = 7000
// > 6500: exp_avg_sq w right before f4 (8000 - 2000 = 6000).
// Reload: from b1 on, with 2000 bytes on the host: before b1 reloading one would need
// max(b1..b4) 8000 - 1000 = 7000 > 6500; before b2 7000 - 1000 = 6000 <= 6500: exp_avg
// w comes back there, but both would be 7000; before b3 6000 - 0: exp_avg_sq w. Both
// are waited for (and assigned back to their states) at the backward's end.
//
// mode=all-sync (§5.4's "offload all + sync"): all three offloaded and waited for at
// the forward's start, reloaded and waited for right before the optimizer step.

stg.mesh @m [fsdp = 2]
func.func @step(%x: !stg.tensor<[8, 64], f32>) {
  %a1, %a2, %a3, %a4 = stg.phase forward {
    %f1 = stg.elementwise silu %x : !stg.tensor<[8, 64], f32> -> !stg.tensor<[8, 64], f32>
    %f2 = stg.elementwise silu %f1 : !stg.tensor<[8, 64], f32> -> !stg.tensor<[8, 64], f32>
    %f3 = stg.elementwise silu %f2 : !stg.tensor<[8, 64], f32> -> !stg.tensor<[8, 64], f32>
    %f4 = stg.elementwise silu %f3 : !stg.tensor<[8, 64], f32> -> !stg.tensor<[8, 64], f32>
    stg.yield %f1, %f2, %f3, %f4 : !stg.tensor<[8, 64], f32>, !stg.tensor<[8, 64], f32>, !stg.tensor<[8, 64], f32>, !stg.tensor<[8, 64], f32>
  }
  %g = stg.phase backward {
    %b1 = stg.elementwise mul %a4, %a3 : !stg.tensor<[8, 64], f32>, !stg.tensor<[8, 64], f32> -> !stg.tensor<[8, 64], f32>
    %b2 = stg.elementwise mul %b1, %a2 : !stg.tensor<[8, 64], f32>, !stg.tensor<[8, 64], f32> -> !stg.tensor<[8, 64], f32>
    %b3 = stg.elementwise mul %b2, %a1 : !stg.tensor<[8, 64], f32>, !stg.tensor<[8, 64], f32> -> !stg.tensor<[8, 64], f32>
    %b4 = stg.elementwise neg %b3 : !stg.tensor<[8, 64], f32> -> !stg.tensor<[8, 64], f32>
    stg.yield %b4 : !stg.tensor<[8, 64], f32>
  }
  stg.phase optimizer {
    %m = stg.optimizer_state "exp_avg" of "w" : !stg.tensor<[8/fsdp, 64], f32>
    %v = stg.optimizer_state "exp_avg_sq" of "w" : !stg.tensor<[8/fsdp, 64], f32>
    %n = stg.optimizer_state "exp_avg" of "u" : !stg.tensor<[8/fsdp, 64], f32>
    %m2 = stg.elementwise add %m, %v : !stg.tensor<[8/fsdp, 64], f32>, !stg.tensor<[8/fsdp, 64], f32> -> !stg.tensor<[8/fsdp, 64], f32>
    stg.assign %m2 to "exp_avg" of "w" : !stg.tensor<[8/fsdp, 64], f32>
    %n2 = stg.elementwise add %n, %v : !stg.tensor<[8/fsdp, 64], f32>, !stg.tensor<[8/fsdp, 64], f32> -> !stg.tensor<[8/fsdp, 64], f32>
    stg.assign %n2 to "exp_avg" of "u" : !stg.tensor<[8/fsdp, 64], f32>
    stg.yield
  }
  func.return
}

// CHECK-LABEL: func.func @step
// CHECK-NEXT:    %a1, %a2, %a3, %a4, %m_host, %v_host = stg.phase forward {
// CHECK-NEXT:      %m = stg.optimizer_state "exp_avg" of "w"
// CHECK-NEXT:      %m_off = stg.offload %m async stream "copy"
// CHECK-NEXT:      %v = stg.optimizer_state "exp_avg_sq" of "w"
// CHECK-NEXT:      %v_off = stg.offload %v async stream "copy"
// CHECK-NEXT:      %f1 = stg.elementwise silu
// CHECK-NEXT:      %f2 = stg.elementwise silu
// CHECK-NEXT:      %[[M:.*]] = stg.wait %m_off
// CHECK-NEXT:      %f3 = stg.elementwise silu
// CHECK-NEXT:      %[[V:.*]] = stg.wait %v_off
// CHECK-NEXT:      %f4 = stg.elementwise silu
// CHECK-NEXT:      stg.yield %f1, %f2, %f3, %f4, %[[M]], %[[V]] :
// CHECK-NEXT:    }
// CHECK-NEXT:    %g = stg.phase backward {
// CHECK-NEXT:      %b1 = stg.elementwise mul
// CHECK-NEXT:      %m_back = stg.reload %m_host async stream "copy"
// CHECK-NEXT:      %b2 = stg.elementwise mul
// CHECK-NEXT:      %v_back = stg.reload %v_host async stream "copy"
// CHECK-NEXT:      %b3 = stg.elementwise mul
// CHECK-NEXT:      %b4 = stg.elementwise neg
// CHECK-NEXT:      %[[MB:.*]] = stg.wait %m_back
// CHECK-NEXT:      stg.assign %[[MB]] to "exp_avg" of "w"
// CHECK-NEXT:      %[[VB:.*]] = stg.wait %v_back
// CHECK-NEXT:      stg.assign %[[VB]] to "exp_avg_sq" of "w"
// CHECK-NEXT:      stg.yield %b4
// CHECK-NEXT:    }
// CHECK-NEXT:    stg.phase optimizer {
// CHECK-NOT:       stg.offload
// CHECK-NOT:       stg.reload

// SYNC-LABEL: func.func @step
// SYNC-NEXT:    %a1, %a2, %a3, %a4, %m_host, %v_host, %n_host = stg.phase forward {
// SYNC-NEXT:      %m = stg.optimizer_state "exp_avg" of "w"
// SYNC-NEXT:      %m_off = stg.offload %m async stream "copy"
// SYNC-NEXT:      %v = stg.optimizer_state "exp_avg_sq" of "w"
// SYNC-NEXT:      %v_off = stg.offload %v async stream "copy"
// SYNC-NEXT:      %n = stg.optimizer_state "exp_avg" of "u"
// SYNC-NEXT:      %n_off = stg.offload %n async stream "copy"
// SYNC-NEXT:      stg.wait %m_off
// SYNC-NEXT:      stg.wait %v_off
// SYNC-NEXT:      stg.wait %n_off
// SYNC-NEXT:      %f1 = stg.elementwise silu
// SYNC:        stg.phase optimizer {
// SYNC-NEXT:      %m_back = stg.reload %m_host async stream "copy"
// SYNC-NEXT:      %v_back = stg.reload %v_host async stream "copy"
// SYNC-NEXT:      %n_back = stg.reload %n_host async stream "copy"
// SYNC-NEXT:      stg.wait %m_back
// SYNC-NEXT:      stg.assign {{.*}} to "exp_avg" of "w"
// SYNC-NEXT:      stg.wait %v_back
// SYNC-NEXT:      stg.assign {{.*}} to "exp_avg_sq" of "w"
// SYNC-NEXT:      stg.wait %n_back
// SYNC-NEXT:      stg.assign {{.*}} to "exp_avg" of "u"
// SYNC-NEXT:      %m_1 = stg.optimizer_state "exp_avg" of "w"
