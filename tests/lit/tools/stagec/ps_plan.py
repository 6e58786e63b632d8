# stagec ps plan: the ps program of Inputs/ps_small.yaml, its summary, its traces, and
# bad input as one line with exit 2. Derived by hand (runtime/ps/placement.py):
#
# PS cluster: p = [1000, 500 / (1 + 0.5) = 333.33] tokens/s; B = [[1.25e9, 1.25e8],
# [1.25e8, 1.25e9]] bytes/s (10 and 1 Gbps). B_0^T p = 1.25e9*1000 + 1.25e8*333.33 =
# 1.292e12, B_1^T p = 1.25e8*1000 + 1.25e9*333.33 = 5.417e11: cluster A.
# Layers (f32): embed and head 256*64*4 = 65536 B; a decoder layer
# (64*64 + 2*64*32 + 64*64 + 3*64*128 + 2*64) * 4 = 36992 * 4 = 147968 B; norm 256 B.
# LPT on 2 slaves: layers.0 -> 0, layers.1 -> 1, embed -> 0 (tie), head -> 1, norm -> 0
# (tie at 213504 B): slave 0 holds 3 layers, so T = max(L = 5, k * m = 2 * 3) = 6.
# Cyclic order by slave: embed, layers.0, norm, layers.1, head, (spare); A starts at slot
# 0, B at slot 3.
#
# RUN: rm -rf %t && mkdir -p %t
# RUN: stagec ps plan %S/Inputs/ps_small.yaml -o %t/plan.mlir 2> %t/summary.txt
# RUN: filecheck %s --input-file %t/plan.mlir
# RUN: filecheck %s --input-file %t/summary.txt --check-prefix=SUMMARY
# RUN: stagec-opt %t/plan.mlir | filecheck %s
#
# The traces of one round: 2 clusters, 2 slaves, the master; they pass check-trace and
# simulate on the links file: each cluster to each of the 3 PSs and back (2 * 3 * 2) and
# the master to each slave and back (2 * 2): 16 links, at 1 Gbps (B) and 10 Gbps (A, inside A).
# RUN: stagec ps plan %S/Inputs/ps_small.yaml --trace %t/traces > /dev/null 2> %t/trace.txt
# RUN: filecheck %s --input-file %t/trace.txt --check-prefix=TRACE
# RUN: stagec check-trace %t/traces | filecheck %s --check-prefix=CHECKED
# RUN: stagec simulate %t/traces | filecheck %s --check-prefix=SIM
#
# Bad input: one line naming the file and the key, exit 2.
# RUN: sed 's/slaves: 2/slaves: 0/' %S/Inputs/ps_small.yaml > %t/bad.yaml
# RUN: not stagec ps plan %t/bad.yaml 2>&1 | filecheck %s --check-prefix=BAD
# RUN: not stagec ps plan %t/missing.yaml 2>&1 | filecheck %s --check-prefix=MISSING
# RUN: sed 's/- \[10Gbps, 1Gbps\]/- [10Gbps]/' %S/Inputs/ps_small.yaml > %t/square.yaml
# RUN: not stagec ps plan %t/square.yaml 2>&1 | filecheck %s --check-prefix=SQUARE
# RUN: stagec ps plan --help | filecheck %s --check-prefix=HELP
#
# More slaves than layers: LPT gives the 5 layers one slave each, by bytes (layers.0,
# layers.1, embed, head, norm -> slaves 0-4), and the sixth holds none, which is said.
# RUN: sed 's/slaves: 2/slaves: 6/' %S/Inputs/ps_small.yaml > %t/six.yaml
# RUN: stagec ps plan %t/six.yaml 2>&1 > /dev/null | filecheck %s --check-prefix=SIX

# The program names its model as the CONFIG does, overrides included (keys sorted), so
# that `stagec ps run plan.mlir` rebuilds that model from the program alone.
# CHECK:      ps.program @dips inner_steps 4 tokens_per_step 1000 model "llama3.2-1b" overrides {head_dim = 16, hidden_size = 64, intermediate_size = 128, num_attention_heads = 4, num_hidden_layers = 2, num_key_value_heads = 2, tie_word_embeddings = false, vocab_size = 256} {
# CHECK-NEXT:   ps.cluster @A throughput 1000.0 delay 0.0
# CHECK-NEXT:   ps.cluster @B throughput 500.0 delay 0.5
# CHECK-NEXT:   ps.bandwidth {{\[\[}}1250000000.0, 125000000.0], [125000000.0, 1250000000.0]]
# CHECK-NEXT:   ps.master on @A
# CHECK-NEXT:   ps.slaves 2 on @A
# CHECK-NEXT:   ps.layer "model.embed_tokens" bytes 65536 slave 0
# CHECK-NEXT:   ps.layer "model.layers.0" bytes 147968 slave 0
# CHECK-NEXT:   ps.layer "model.layers.1" bytes 147968 slave 1
# CHECK-NEXT:   ps.layer "model.norm" bytes 256 slave 0
# CHECK-NEXT:   ps.layer "lm_head" bytes 65536 slave 1
# CHECK-NEXT:   ps.outer_nesterov lr 0.7 momentum 0.9
# CHECK-NEXT:   ps.penalty alpha 0.02 beta 3.0 clip 1.0 enabled true
# CHECK-NEXT:   ps.heartbeat interval 1.0 missed 3
# CHECK-NEXT:   ps.snapshot every 1 keep 2
# CHECK-NEXT:   ps.round {
# CHECK-NEXT:     ps.push_request @A
# CHECK-NEXT:     ps.push_request @B
# CHECK-NEXT:     ps.push step 0 [@A layer 0 -> slave 0, @B layer 2 -> slave 1]
# CHECK-NEXT:     ps.push step 1 [@A layer 1 -> slave 0, @B layer 4 -> slave 1]
# CHECK-NEXT:     ps.push step 2 [@A layer 3 -> slave 0]
# CHECK-NEXT:     ps.push step 3 [@A layer 2 -> slave 1, @B layer 0 -> slave 0]
# CHECK-NEXT:     ps.push step 4 [@A layer 4 -> slave 1, @B layer 1 -> slave 0]
# CHECK-NEXT:     ps.commit prepare @A
# CHECK-NEXT:     ps.commit commit @A
# CHECK-NEXT:     ps.window_open grace 0.5
# CHECK-NEXT:     ps.push step 5 [@B layer 3 -> slave 0]
# CHECK-NEXT:     ps.commit prepare @B
# CHECK-NEXT:     ps.commit commit @B
# CHECK-NEXT:     ps.window_close
# CHECK-NEXT:     ps.update
# CHECK-NEXT:     ps.pull_notice @A
# CHECK-NEXT:     ps.pull_notice @B
# CHECK-NEXT:     ps.pull step 0 [@A layer 0 from slave 0, @B layer 2 from slave 1]
# CHECK-NEXT:     ps.pull step 1 [@A layer 1 from slave 0, @B layer 4 from slave 1]
# CHECK-NEXT:     ps.pull step 2 [@A layer 3 from slave 0]
# CHECK-NEXT:     ps.pull step 3 [@A layer 2 from slave 1, @B layer 0 from slave 0]
# CHECK-NEXT:     ps.pull step 4 [@A layer 4 from slave 1, @B layer 1 from slave 0]
# CHECK-NEXT:     ps.pull step 5 [@B layer 3 from slave 0]
# CHECK-NEXT:   }
# CHECK-NEXT: }

# SUMMARY:      PS cluster: A (B_i^T p, bytes/s x tokens/s: A 1.292e+12, B 5.417e+11)
# SUMMARY-NEXT: 5 layers, 417.25 KiB on 2 slaves (LPT by bytes):
# SUMMARY-NEXT:   slave 0: 3 layers, 208.75 KiB: model.embed_tokens, model.layers.0, model.norm
# SUMMARY-NEXT:   slave 1: 2 layers, 208.50 KiB: model.layers.1, lm_head
# SUMMARY-NEXT: push schedule: 6 steps (fewest possible: max(L = 5, k x max layers per slave = 2 x 3) = 6)

# SIX:      5 layers, 417.25 KiB on 6 slaves (LPT by bytes):
# SIX:        slave 5: 0 layers, 0 B
# SIX-NEXT:   (1 of 6 slaves hold no layer: a slave serves whole layers and the model has 5; `slaves: 5` does the same)

# TRACE: traces: 5 ranks (2 clusters, 2 slaves, master), {{[0-9]+}} nodes in {{.*}}traces; time them with `stagec simulate
# CHECKED: dips.*.et in {{.*}}traces: 5 ranks, no defects
# SIM: 5 ranks; {{[0-9]+}} simulated (identical ranks once); network: 16 point-to-point links among 5 ranks (dips.links.json): 125 MB/s, 1250 MB/s
# SIM: iteration time:

# BAD: stagec: error: {{.*}}bad.yaml: key 'slaves': 0 is less than 1; give an integer >= 1
# MISSING: stagec: error: {{.*}}missing.yaml: cannot read: No such file or directory
# SQUARE: stagec: error: {{.*}}square.yaml: key 'bandwidth[0]': 1 entries for 2 clusters; give a row of 2 rates
# HELP: usage: stagec ps plan [-h] [-o OUT.mlir]

# A ps program is an input too: the printed plan prints back the same, and an edited
# one is verified (one line, exit 2).
# RUN: stagec ps plan %t/plan.mlir 2> /dev/null | diff - %t/plan.mlir
# RUN: sed 's/ps.layer "lm_head" bytes 65536 slave 1/ps.layer "lm_head" bytes 65536 slave 7/' %t/plan.mlir > %t/edited.mlir
# RUN: not stagec ps plan %t/edited.mlir 2>&1 | filecheck %s --check-prefix=EDITED
# EDITED: stagec: error: {{.*}}edited.mlir:2:3: 'ps.program' op 'ps.layer' "lm_head" is owned by slave 7, but ps.slaves declares 2 (slaves 0..1)

# An op's own mistake names its line and column, as stagec-opt does.
# RUN: sed 's/throughput \([0-9.e+]*\) delay/throughput -1.0 delay/' %t/plan.mlir > %t/negative.mlir
# RUN: not stagec ps plan %t/negative.mlir 2>&1 | filecheck %s --check-prefix=NEGATIVE
# NEGATIVE: stagec: error: {{.*}}negative.mlir:3:5: 'ps.cluster' op 'ps.cluster' @{{.*}} has throughput -1.0; give a finite number of tokens/s > 0
