// RUN: rm -rf %t && not stagec-opt %s -p 'stg-instantiate{B=2 S=4 V=8}' -t chakra -o %t 2>&1 | filecheck %s
// RUN: rm -rf %t && stagec-opt %s -p 'stg-vocab-parallel-cross-entropy,stg-schedule,stg-instantiate{B=2 S=4 V=8}' -t chakra -o %t | filecheck %s --check-prefix=EMITTED
// RUN: %python -c "import sys; from stagec.runtime.chakra.wire import read_trace; [print(n.name, {a.name: a.value for a in n.attrs}.get('comm_size')) for n in read_trace(sys.argv[1]).nodes]" %t/trace.0.et | filecheck %s --check-prefix=NODES

// The emitter makes no collective of its own: a split-vocab cross-entropy's three
// all-reduces are ops stg-vocab-parallel-cross-entropy writes.

stg.mesh @m [tp = 2]
func.func @loss(%logits: !stg.tensor<[B, S, V/tp], bf16>, %labels: !stg.tensor<[B, S], i64>) {
  %loss = stg.cross_entropy %logits, %labels : !stg.tensor<[B, S, V/tp], bf16>, !stg.tensor<[B, S], i64> -> !stg.tensor<[], f32>
  func.return
}

// CHECK: a cross-entropy over a split vocab: run stg-vocab-parallel-cross-entropy before emitting a trace

// EMITTED: // chakra: @loss ranks 0-1: 7 nodes per rank

// per token 4 bytes of f32: 2 x 4 tokens
// NODES:      vocab_stat.loss_max_local@it0 None
// NODES-NEXT: all_reduce.loss_max@it0 32
// NODES-NEXT: vocab_stat.loss_target_local@it0 None
// NODES-NEXT: all_reduce.loss_target@it0 32
// NODES-NEXT: vocab_stat.loss_sum_exp_local@it0 None
// NODES-NEXT: all_reduce.loss_sum_exp@it0 32
// NODES-NEXT: vocab_cross_entropy.loss@it0 None
