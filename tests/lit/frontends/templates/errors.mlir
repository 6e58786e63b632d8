// A bad --model is one line on stderr and exit code 2, never a traceback.
// RUN: not stagec ir --model llama9 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not stagec ir --model %S/Inputs/missing.json 2>&1 | filecheck %s --check-prefix=NOFILE
// RUN: not stagec ir --model %S/Inputs/no-layers.json 2>&1 | filecheck %s --check-prefix=KEY
// RUN: not stagec ir --model %S/Inputs/bad-heads.json 2>&1 | filecheck %s --check-prefix=HEADS

// UNKNOWN:      stagec: error: unknown model 'llama9'; built-in: llama-mlp; named configs: gpt3-5b, gpt3-175b, llama3-8b, llama3-70b, llama3.2-1b, mixtral-8x7b, deepseek-moe-16b, deepseek-v2-lite, deepseek-r1, mamba-130m; or a config.json path
// UNKNOWN-NOT:  Traceback

// NOFILE:       stagec: error: no such config file: {{.*}}Inputs/missing.json

// KEY:          stagec: error: {{.*}}Inputs/no-layers.json: missing required key 'num_hidden_layers' or 'n_layer' (model_type 'llama')

// HEADS:        stagec: error: {{.*}}Inputs/bad-heads.json: num_attention_heads (4) must be a positive multiple of num_key_value_heads (3)
