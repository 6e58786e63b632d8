"""Mamba (stage.md Table II: State Space Model), its selective SSM as Table X writes it.

Each layer, on n = norm(x) (RMSNorm):

    x_in, z  = split(in_proj(n))                  [B, S, DI] each
    u        = silu(x_in)
    dt, Bc, Cc = split(x_proj(u))                 [B, S, R], [B, S, DS], [B, S, DS]
    dt       = softplus(dt_proj(dt) + dt_proj.bias)            [B, S, DI]
    A        = -exp(A_log)                        [DI, DS]
    dA       = exp(einsum(bsd,dn->bsdn)(dt, A))
    deltaB   = einsum(bsdn,bsd->bsdn)(einsum(bsn,bsd->bsdn)(Bc, dt), u)
    h        = ssm_scan(dA, deltaB) over S        h[s] = dA[s] * h[s-1] + deltaB[s]
    y        = einsum(bsdn,bsn->bsd)(h, Cc) + u * D
    out      = x + out_proj(y * silu(z))

then norm_f and the LM head tied to the embedding (`backbone.embeddings.weight`).
Names are HF's MambaForCausalLM's without the layer index.

Left out, as in Table X: Mamba's short causal depthwise conv1d (conv_kernel 4) before
the SiLU on x_in; the template equals Mamba with an identity conv kernel and no conv
bias. The parameter count lacks conv1d's DI*(conv_kernel+1) per layer (0.14% of
mamba-130m).
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from stagec.dialects import stg
from stagec.dialects.stg import ElementwiseKind as EW
from stagec.frontends.templates.blocks import Builder, named
from stagec.frontends.templates.config import ConfigError, ModelConfig

__all__ = ["build_mamba"]


def mamba_mixer(b: Builder, x: SSAValue, p: str) -> SSAValue:
    x_in, z = b.split(b.linear(x, f"{p}.in_proj.weight", "2*DI", "H", hint="xz"), 2, ["DI", "DI"], ["x_in", "z"])
    u = named(b.ew(EW.SILU, x_in), "u")
    dt, bc, cc = b.split(b.linear(u, f"{p}.x_proj.weight", "R+2*DS", "DI", hint="dt_bc"), 2, ["R", "DS", "DS"],
                         ["dt_low", "Bc", "Cc"])
    dt = b.linear(dt, f"{p}.dt_proj.weight", "DI", "R", bias=f"{p}.dt_proj.bias", hint="dt_lin")
    dt = named(b.ew(EW.SOFTPLUS, dt), "dt")
    a = named(b.ew(EW.NEG, b.ew(EW.EXP, b.param(f"{p}.A_log", "DI", "DS"))), "A")
    state = ("B", "S", "DI", "DS")
    da = named(b.ew(EW.EXP, b.einsum("bsd,dn->bsdn", [dt, a], *state)), "dA")
    db = named(b.einsum("bsn,bsd->bsdn", [bc, dt], *state), "dB")
    delta_b = named(b.einsum("bsdn,bsd->bsdn", [db, u], *state), "deltaB")
    h = named(stg.SsmScanOp(da, delta_b, 1).result, "hs")
    y = b.einsum("bsdn,bsn->bsd", [h, cc], "B", "S", "DI")
    y = named(b.ew(EW.ADD, y, b.ew(EW.MUL, u, b.param(f"{p}.D", "DI"))), "y")
    y = b.ew(EW.MUL, y, b.ew(EW.SILU, z))
    return b.linear(y, f"{p}.out_proj.weight", "H", "DI")


def build_mamba(config: ModelConfig, dtype: str = "bf16", phase: str = "train") -> ModuleOp:
    if phase != "train":
        # a Mamba step carries its SSM and conv states, not a KV cache: not modelled yet
        raise ConfigError(f"{config.name}: {phase} steps of Mamba (state-space) models are not modelled; "
                          "inference phases cover the attention templates (gpt, llama, mixtral, deepseek)")
    b = Builder(config, dtype)
    c = config
    b.bind(H=c.hidden_size, DI=c.intermediate_size, DS=c.state_size, R=c.time_step_rank,
           V=c.vocab_size, L=c.num_hidden_layers)
    eps = c.layer_norm_epsilon

    def layer(x: SSAValue) -> SSAValue:
        p = "backbone.layers"
        return b.ew(EW.ADD, x, mamba_mixer(b, b.rms_norm(x, f"{p}.norm", eps), f"{p}.mixer"))

    def forward() -> SSAValue:
        ids, labels = b.tokens()
        x = b.embedding(b.param("backbone.embeddings.weight", "V", "H"), ids)
        x = b.rms_norm(b.repeat("L", x, layer), "backbone.norm_f", eps)
        head = "backbone.embeddings.weight" if c.tie_word_embeddings else "lm_head.weight"
        return b.lm_loss(x, b.param(head, "V", "H"), labels)

    return b.forward_module(forward)
