"""Model templates: GPT, Llama, MoE (Mixtral, DeepSeek-MoE), MLA and Mamba as stg IR (docs/training-ir.md)."""
