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

// CP: stagec: error: a local dim of [B, S/cp]: S/cp is not an integer for S=1000, cp=3 (1000/3)
// CP-NOT: Traceback
// SP: stagec: error: a local dim of [B, S/tp, H]: S/tp is not an integer for S=999, tp=2 (999/2)
// PP: stagec: error: a local dim of {{.*}}S/cp]: S/cp is not an integer for S=1001, cp=2 (1001/2)
