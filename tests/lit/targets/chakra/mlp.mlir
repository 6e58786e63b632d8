// stage.md Table III's Megatron MLP on two tp ranks through `stagec-opt -t chakra`:
// three compute nodes and the tp all-reduce of the partial [B, H] bf16 output.
// RUN: rm -rf %t && stagec-opt %s -p 'stg-instantiate{B=4 H=8}' -t 'chakra{prefix=mlp}' -o %t | filecheck %s
// RUN: %python -c "import sys; from stagec.runtime.chakra.wire import read_trace; [print(n.id, n.type, list(n.data_deps), list(n.ctrl_deps), {a.name: a.value for a in n.attrs}) for n in read_trace(sys.argv[1]).nodes]" %t/mlp.1.et | filecheck %s --check-prefix=NODES
// RUN: cat %t/comm_group.json | filecheck %s --check-prefix=GROUPS
// RUN: stagec check-trace %t | filecheck %s --check-prefix=CHECKED
// RUN: not stagec-opt %s -t chakra -o %t.unbound 2>&1 | filecheck %s --check-prefix=UNBOUND

// CHECK: // chakra: @mlp ranks 0-1: 4 nodes per rank
// CHECK: // chakra: 2 traces and comm_group.json (1 groups)

// einsum [4, 8] x [8, 16]: 2*4*8*16 FLOPs; 64 + 256 + 128 bytes
// NODES:      0 4 [] [] {'num_ops': 1024, 'tensor_size': 448}
// NODES-NEXT: 1 4 [0] [] {'num_ops':
// NODES-NEXT: 2 4 [1] [] {'num_ops': 1024,
// the partial [4, 8] bf16 = 64 bytes, all-reduced (comm_type 0) in group "1"
// NODES-NEXT: 3 7 [2] [] {'comm_type': 0, 'comm_size': 64, 'pg_name': '1'}

// GROUPS: {"1": [0, 1]}

// CHECKED-NOT: error

// UNBOUND: error: target 'chakra' failed: a local dim of [B, H]: cannot evaluate B: unbound symbol B; bind it (the bindings take B, S and mesh axis sizes)

stg.mesh @m [tp = 2]
func.func @mlp() {
  %x = stg.input "x" : !stg.tensor<[B, H], bf16>
  %w1 = stg.param "w1" : !stg.tensor<[H, 4*H/tp], bf16>
  %w2 = stg.param "w2" : !stg.tensor<[4*H/tp, H], bf16>
  %h = stg.einsum "bh,hf->bf" %x, %w1 : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, 4*H/tp], bf16> -> !stg.tensor<[B, 4*H/tp], bf16>
  %a = stg.elementwise gelu %h : !stg.tensor<[B, 4*H/tp], bf16> -> !stg.tensor<[B, 4*H/tp], bf16>
  %y = stg.einsum "bf,fh->bh" %a, %w2 : !stg.tensor<[B, 4*H/tp], bf16>, !stg.tensor<[4*H/tp, H], bf16> -> !stg.tensor<[B, H] @tp, bf16>
  %z = stg.all_reduce %y on @m [tp] : !stg.tensor<[B, H] @tp, bf16> -> !stg.tensor<[B, H], bf16>
  func.return
}
