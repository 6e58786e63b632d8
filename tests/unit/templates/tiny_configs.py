"""Tiny HF-style configs, one per template path, for numerics and lit tests:
H=16, 2-3 layers, 4 heads, V=32. The MoE ones route B*S = 12 tokens to 4 experts
at capacity_factor 1.0, so C = 6 and some (token, expert) pairs are dropped."""

from __future__ import annotations

_ROPE = {"rope_theta": 10000.0, "rms_norm_eps": 1e-5, "vocab_size": 32, "hidden_size": 16}
_MOE = {"num_local_experts": 4, "num_experts_per_tok": 2, "capacity_factor": 1.0}

TINY: dict[str, dict] = {
    "gpt": {"model_type": "gpt2", "n_embd": 16, "n_layer": 2, "n_head": 4, "n_inner": 24,
            "n_positions": 8, "vocab_size": 32, "layer_norm_epsilon": 1e-5},
    "gpt-untied": {"model_type": "gpt2", "n_embd": 16, "n_layer": 2, "n_head": 4,
                   "n_positions": 8, "vocab_size": 32, "tie_word_embeddings": False},
    "llama": {"model_type": "llama", **_ROPE, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 24},
    "llama-tied": {"model_type": "llama", **_ROPE, "num_hidden_layers": 2, "num_attention_heads": 4,
                   "num_key_value_heads": 1, "head_dim": 8, "intermediate_size": 24,
                   "tie_word_embeddings": True},
    "mixtral": {"model_type": "mixtral", **_ROPE, **_MOE, "num_hidden_layers": 2,
                "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 12},
    "deepseek-moe": {"model_type": "deepseek", **_ROPE, **_MOE, "num_hidden_layers": 3,
                     "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 24,
                     "moe_intermediate_size": 8, "n_shared_experts": 2, "first_k_dense_replace": 1,
                     "norm_topk_prob": False},
    "deepseek-moe-all": {"model_type": "deepseek", **_ROPE, **_MOE, "num_hidden_layers": 2,
                         "num_attention_heads": 4, "intermediate_size": 24, "moe_intermediate_size": 8,
                         "n_shared_experts": 1, "norm_topk_prob": True, "capacity_factor": 1.5},
    "mla": {"model_type": "deepseek_v2", **_ROPE, **_MOE, "num_hidden_layers": 3,
            "num_attention_heads": 4, "intermediate_size": 24, "moe_intermediate_size": 8,
            "n_shared_experts": 2, "first_k_dense_replace": 1, "norm_topk_prob": False,
            "q_lora_rank": None, "kv_lora_rank": 8, "qk_nope_head_dim": 4, "qk_rope_head_dim": 4,
            "v_head_dim": 6},
    "mla-qlora": {"model_type": "deepseek_v2", **_ROPE, **_MOE, "num_hidden_layers": 2,
                  "num_attention_heads": 4, "intermediate_size": 24, "moe_intermediate_size": 8,
                  "n_shared_experts": 1, "first_k_dense_replace": 1, "norm_topk_prob": True,
                  "routed_scaling_factor": 1.5, "q_lora_rank": 12, "kv_lora_rank": 8,
                  "qk_nope_head_dim": 6, "qk_rope_head_dim": 4, "v_head_dim": 4},
    "mamba": {"model_type": "mamba", "hidden_size": 16, "num_hidden_layers": 2, "state_size": 4,
              "expand": 2, "time_step_rank": 3, "vocab_size": 32, "layer_norm_epsilon": 1e-5},
}
