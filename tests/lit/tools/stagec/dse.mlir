// `stagec dse` on a tiny Llama (4 query heads, 2 key/value heads, 2 layers) on 4 GPUs,
// batch 4 x 8 tokens, micro-batch 1, no cp: the strategies the sharding rules allow,
// counted by hand -
//   tp in {1, 2, 4} (4 heads; tp divides or is a multiple of the 2 kv heads), pp in {1, 2};
//   (tp, pp) = (1,1): 4 replicas, (1,2) and (2,1): 2, (2,2) and (4,1): 1, (4,2) needs 8 GPUs;
//   replicas > 1: dp, dp zero1, dp zero2, fsdp; each with and without recompute:
//   3 x 4 x 2 + 2 x 1 x 2 = 28.
// RUN: rm -rf %t && mkdir -p %t
// RUN: echo '{"model_type": "llama", "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 24, "vocab_size": 32, "rope_theta": 10000.0, "rms_norm_eps": 1e-5}' > %t/tiny.json
// RUN: stagec dse --model %t/tiny.json --gpus 4 --hbm 80 --batch 4 --seq 8 --micro-batch-sizes 1 --max-cp 1 --plot %t/dse.png --quiet | filecheck %s
// RUN: %python -c "import sys; d = open(sys.argv[1], 'rb').read(8); sys.exit(d != b'\x89PNG\r\n\x1a\n')" %t/dse.png
// RUN: not stagec dse --model %t/tiny.json --gpus 4 --hbm 80 --plot %t/dse.xyz 2>&1 | filecheck %s --check-prefix=PNG
// RUN: not stagec dse --model %t/tiny.json --gpus 4 --hbm 0 2>&1 | filecheck %s --check-prefix=HBM
// RUN: not stagec dse --model %t/tiny.json --gpus 3 --hbm 80 --batch 5 --seq 7 2>&1 | filecheck %s --check-prefix=NONE

// CHECK: {{.*}}tiny.json on 4 GPUs, batch 4 x 8: 28 strategies, 28 simulated, 28 fit 80 GiB, 0 refused by the passes
// CHECK: Pareto front
// CHECK: fastest that fits: {{.*}}: stagec simulate --model {{.*}}tiny.json --batch 4 --seq 8 --tp
// CHECK: plot: {{.*}}dse.png
// PNG: stagec: error: --plot '{{.*}}dse.xyz': the plot is a PNG file; name it FILE.png
// HBM: stagec: error: --hbm 0.0: a positive size in GiB, e.g. 80
// NONE: stagec: error: no strategy of {{.*}}tiny.json fits 3 GPUs with a batch of 5 sequences of 7
