// `stagec run` refuses a job that cannot run before any rank starts: one line, exit
// status 2, no traceback (issue 18 item 3).
// RUN: not stagec run -n 3 --model llama3.2-1b --dp 4 --steps 1 2>&1 | filecheck %s --check-prefix=MESH
// RUN: not stagec run -n 2 --model llama3.2-1b --dp 2 --prefetch 2>&1 | filecheck %s --check-prefix=PREFETCH
// RUN: not stagec run -n 1 --model no-such-model 2>&1 | filecheck %s --check-prefix=MODEL
// RUN: not stagec run -n 1 --model llama3.2-1b --resume 2>&1 | filecheck %s --check-prefix=RESUME
// RUN: not stagec run -n 2 --model llama3.2-1b --tp 2 --sp --seq 999 2>&1 | filecheck %s --check-prefix=SP
// RUN: %python -c "import subprocess, sys; sys.exit(subprocess.run(['stagec', 'run', '-n', '3', '--model', 'llama3.2-1b', '--dp', '4']).returncode != 2)"

// MESH: stagec: error: -n 3: the strategy's mesh (dp 4) has 4 rank(s); give -n 4 or axes whose product is 3
// MESH-NOT: Traceback
// PREFETCH: stagec: error: --prefetch moves FSDP's all-gathers earlier: give --fsdp N with N > 1
// MODEL: stagec: error: --model no-such-model: {{.*}}
// RESUME: stagec: error: --resume needs --checkpoint DIR (the checkpoint to start from)
// SP: stagec: error: --seq 999 is not a multiple of --tp 2 (--sp): each sequence is cut into 2 equal parts, one per rank; give a --seq that 2 divides (e.g. 1000)
