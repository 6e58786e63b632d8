// RUN: not stagec-opt %s -p 'stg-schedule,stg-prefetch' 2>&1 | filecheck %s

// P_mem needs numbers: a symbolic size must be bound (stg-instantiate, or a profile's
// schedule.bindings).

stg.mesh @m [fsdp = 2]
func.func @f(%x: !stg.tensor<[B, 64], bf16>) {
  %w1 = stg.param "w1" : !stg.tensor<[64/fsdp, 64], bf16>
  %g1 = stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %a = stg.einsum "bh,hf->bf" %x, %g1 : !stg.tensor<[B, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[B, 64], bf16>
  func.return
}

// CHECK: stg-prefetch needs every size bound (a local dim of [B, 64]: cannot evaluate B: unbound symbol B; bind it (the bindings take B, S and mesh axis sizes)): run stg-instantiate{B=.. S=..} first, or give a profile (its schedule.bindings bind them)
