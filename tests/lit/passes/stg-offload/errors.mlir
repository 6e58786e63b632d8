// RUN: not stagec-opt %s -p 'stg-schedule,stg-offload{memory-limit=4500 profile="%S/Inputs/rise-and-fall.json"}' 2>&1 | filecheck %s --check-prefix=STEP
// RUN: not stagec-opt %s -p 'stg-schedule,stg-offload{mode=later profile="%S/Inputs/rise-and-fall.json"}' 2>&1 | filecheck %s --check-prefix=MODE
// RUN: not stagec-opt %s -p 'stg-offload' 2>&1 | filecheck %s --check-prefix=UNSCHEDULED

// What offloading refuses, with the profile of sync-point.mlir (P_mem 5000 in the
// optimizer step): the optimizer step updates its states on the device, so a limit
// under its 5000 bytes cannot be met by offloading (STEP); an unknown mode; and a
// program that is not in the scheduled form.

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

// STEP: stg-offload: the optimizer step needs 5000 bytes with its states on the device, over the memory limit 4500: the states it updates cannot stay on the host
// MODE: stg-offload: mode must be one of selective, all-sync, not 'later'
// UNSCHEDULED: stg-offload adds copies to the scheduled form: run stg-schedule first (a function is not stg.scheduled)
