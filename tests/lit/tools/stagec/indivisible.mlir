// Sizes that do not divide: `stagec trace` rejects them as `stagec stats` does - one
// line naming the dim, exit status 2, and no trace written (issue 17, class 6).
// RUN: rm -rf %t.cp && not stagec trace --model llama3.2-1b --cp 3 --seq 1000 --quiet --out %t.cp 2>&1 | filecheck %s --check-prefix=CP
// RUN: not ls %t.cp
// RUN: not stagec stats --model llama3.2-1b --cp 3 --seq 1000 2>&1 | filecheck %s --check-prefix=CP
// RUN: rm -rf %t.sp && not stagec trace --model llama3.2-1b --tp 2 --sp --seq 999 --quiet --out %t.sp 2>&1 | filecheck %s --check-prefix=SP
// RUN: not ls %t.sp
// RUN: not stagec stats --model llama3.2-1b --tp 2 --sp --seq 999 2>&1 | filecheck %s --check-prefix=SP
// RUN: rm -rf %t.pp && not stagec trace --model llama3.2-1b --cp 2 --pp 2 --batch 4 --seq 1001 --quiet --out %t.pp 2>&1 | filecheck %s --check-prefix=PP
// RUN: not ls %t.pp
// RUN: not stagec stats --model llama3.2-1b --cp 2 --pp 2 --batch 4 --seq 1001 2>&1 | filecheck %s --check-prefix=PP
// RUN: %python -c "import subprocess, sys; sys.exit(subprocess.run(['stagec', 'trace', '--model', 'llama3.2-1b', '--cp', '3', '--seq', '1000', '--quiet', '--out', sys.argv[1]]).returncode != 2)" %t.rc

// The message is in the options' words, checked before the program is built (review:
// with tp a multiple of the key/value heads it named stg-shard's factors tp_kv x tp_q,
// and otherwise a local dim [B, S/cp] the user never wrote).
// RUN: not stagec trace --model llama3.2-1b --tp 16 --sp --seq 1000 --quiet --out %t.kv 2>&1 | filecheck %s --check-prefix=KV
// RUN: not stagec stats --model llama3.2-1b --tp 16 --sp --seq 1000 2>&1 | filecheck %s --check-prefix=KV
// RUN: not stagec stats --model llama3.2-1b --tp 2 --sp --cp 2 --seq 1002 2>&1 | filecheck %s --check-prefix=BOTH

// CP: stagec: error: --seq 1000 is not a multiple of --cp 3: each sequence is cut into 3 equal parts, one per rank; give a --seq that 3 divides (e.g. 1002)
// CP-NOT: Traceback
// SP: stagec: error: --seq 999 is not a multiple of --tp 2 (--sp): each sequence is cut into 2 equal parts, one per rank; give a --seq that 2 divides (e.g. 1000)
// PP: stagec: error: --seq 1001 is not a multiple of --cp 2: each sequence is cut into 2 equal parts, one per rank; give a --seq that 2 divides (e.g. 1002)
// KV: stagec: error: --seq 1000 is not a multiple of --tp 16 (--sp): each sequence is cut into 16 equal parts, one per rank; give a --seq that 16 divides (e.g. 1008)
// KV-NOT: tp_kv
// BOTH: stagec: error: --seq 1002 is not a multiple of --cp 2 x --tp 2 (--sp) = 4: each sequence is cut into 4 equal parts, one per rank; give a --seq that 4 divides (e.g. 1004)
