// RUN: not stagec-opt %s -p 'stg-schedule,stg-prefetch{profile="%t.missing.json"}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: echo '{"version": 2, "hardware": "h100-sxm", "ops": []}' > %t.noschedule.json
// RUN: not stagec-opt %s -p 'stg-schedule,stg-prefetch{profile="%t.noschedule.json"}' 2>&1 | filecheck %s --check-prefix=NOSCHEDULE
// RUN: echo '{"version": 2, "hardware": "h100-sxm", "ops": [], "schedule": {"function": "f", "bindings": {}, "positions": [{"position": 0, "op": "stg.param", "micros": 0, "mem_before_bytes": 0}]}}' > %t.short.json
// RUN: not stagec-opt %s -p 'stg-schedule,stg-prefetch{profile="%t.short.json"}' 2>&1 | filecheck %s --check-prefix=SHORT
// RUN: echo '{"version": 2, "hardware": "h100-sxm", "ops": [], "schedule": {"function": "f", "bindings": {}, "positions": [{"position": 0, "op": "stg.param", "micros": 0}]}}' > %t.key.json
// RUN: not stagec-opt %s -p 'stg-schedule,stg-prefetch{profile="%t.key.json"}' 2>&1 | filecheck %s --check-prefix=KEY

// A profile that cannot drive the pass: missing, without a schedule, of another
// program (4 positions here: param, all_gather, wait, einsum), or lacking a key.

stg.mesh @m [fsdp = 2]
func.func @f(%x: !stg.tensor<[8, 64], bf16>) {
  %w1 = stg.param "w1" : !stg.tensor<[64/fsdp, 64], bf16>
  %g1 = stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %a = stg.einsum "bh,hf->bf" %x, %g1 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  func.return
}

// MISSING: missing.json: no such profile file
// NOSCHEDULE: noschedule.json: the profile has no 'schedule' (per-position memory): a DeepCompile pass needs a version 2 profile of the program it runs on
// SHORT: short.json: its schedule has 1 positions, the program 4: profile the program the pass runs on
// KEY: key.json: schedule.positions[0] lacks the key 'mem_before_bytes' (required: position, op, micros, mem_before_bytes)
