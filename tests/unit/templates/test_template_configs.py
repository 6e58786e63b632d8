"""Named configs build verified modules with the published parameter counts;
config.json loading and its errors; the module's conventions (docs/training-ir.md)."""

from __future__ import annotations

import json

import pytest
from tests.unit.templates.tiny_configs import TINY
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, StringAttr

from stagec.dialects import stg
from stagec.frontends.templates import NAMED_CONFIGS, ConfigError, build_model, load_config
from stagec.passes.analysis.params import parameter_count, parameter_sizes

# Published parameter counts; the template must be within 1%.
PUBLISHED = {
    # Meta's Llama 3 model card (github.com/meta-llama/llama3 MODEL_CARD.md): "8B",
    # HF meta-llama/Meta-Llama-3-8B safetensors metadata: 8,030,261,248 parameters.
    "llama3-8b": 8.03e9,
    # HF meta-llama/Meta-Llama-3-70B safetensors metadata: 70,553,706,496 ("70B").
    "llama3-70b": 70.6e9,
    # Meta's Llama 3.2 model card: 1.23B parameters (HF safetensors: 1,235,814,400).
    "llama3.2-1b": 1.24e9,
    # Brown et al. 2020, Table 2.1: GPT-3 175B.
    "gpt3-175b": 175.0e9,
    # Mistral AI, "Mixtral of Experts" (Jiang et al. 2024), §2: 47B total parameters;
    # HF mistralai/Mixtral-8x7B-v0.1 safetensors metadata: 46,702,792,704.
    "mixtral-8x7b": 46.7e9,
    # Dai et al. 2024, "DeepSeekMoE", Table 1 / §5: DeepSeekMoE 16B has 16.4B parameters.
    "deepseek-moe-16b": 16.4e9,
    # DeepSeek-AI 2024, "DeepSeek-V2", §1 and the DeepSeek-V2-Lite model card: 15.7B total.
    "deepseek-v2-lite": 15.7e9,
    # DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", abstract: 671B total parameters
    # (37B activated per token); DeepSeek-R1 shares the architecture (its config.json).
    "deepseek-r1": 671e9,
    # Gu & Dao 2023, "Mamba", Table 3 / state-spaces/mamba-130m: 130M (129.1M with conv1d).
    "mamba-130m": 130e6,
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_count_matches_published(name):
    count = parameter_count(build_model(name))
    assert abs(count - PUBLISHED[name]) <= 0.01 * PUBLISHED[name], f"{name}: {count:,}"


def test_parameter_counts_are_exact_for_hf_checkpoints():
    """The templates name every tensor of the HF checkpoints (safetensors metadata)."""
    assert parameter_count(build_model("llama3-8b")) == 8_030_261_248
    assert parameter_count(build_model("llama3-70b")) == 70_553_706_496
    assert parameter_count(build_model("llama3.2-1b")) == 1_235_814_400
    assert parameter_count(build_model("mixtral-8x7b")) == 46_702_792_704
    # mamba-130m-hf has 129,135,360; the template leaves out conv1d's 24 * 1536 * (4 + 1)
    assert parameter_count(build_model("mamba-130m")) == 129_135_360 - 24 * 1536 * 5


@pytest.mark.parametrize("name", list(NAMED_CONFIGS))
@pytest.mark.parametrize("dtype", ["bf16", "f64"])
def test_named_config_builds_verified_forward(name, dtype):
    module = build_model(name, dtype)
    module.verify()
    assert module.attributes["stg.model"] == StringAttr(name)
    bound = module.attributes["stg.config"].data
    assert all(isinstance(v, IntegerAttr) for v in bound.values())
    (forward,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    assert forward.sym_name.data == "forward" and not forward.function_type.inputs.data
    (loss_type,) = forward.function_type.outputs.data
    assert loss_type.rank == 0 and str(loss_type.element_type) == ("f64" if dtype == "f64" else "f32")
    inputs = {op.tensor_name.data for op in module.walk() if isinstance(op, stg.InputOp)}
    assert {"input_ids", "labels"} <= inputs
    # every symbol a parameter uses is bound by stg.config
    for size in parameter_sizes(module).values():
        assert size.symbols <= set(bound), size
    # layers are stg.repeat bodies, never copies: one repeat per stack, counts L (and L2)
    repeats = [op.count_expr for op in module.walk() if isinstance(op, stg.RepeatOp)]
    assert [str(r) for r in repeats] == (["L", "L2"] if "L2" in bound else ["L"])


def test_deepseek_r1_count_derived():
    """DeepSeek-V3/R1 by hand: untied embedding and head, 61 MLA layers, 3 dense FFNs,
    58 MoE layers of 256 experts, one shared expert and the router, the final norm.
    The template leaves out V3's e_score_correction_bias (256 per MoE layer) and the
    multi-token-prediction module (not part of the 671B)."""
    h, v, layers, dense, moe = 7168, 129280, 61, 3, 58
    # q_a [1536, H], q_a_layernorm, q_b [128*(128+64), 1536], kv_a [512+64, H],
    # kv_a_layernorm, kv_b [128*(128+128), 512], o [H, 128*128], two RMSNorms
    attention = h * 1536 + 1536 + 1536 * 128 * 192 + h * 576 + 512 + 512 * 128 * 256 + 128 * 128 * h + 2 * h
    expert = 3 * h * 2048
    ffn_moe = 256 * h + 256 * expert + expert  # router, routed, shared
    expected = 2 * v * h + layers * attention + dense * 3 * h * 18432 + moe * ffn_moe + h
    assert parameter_count(build_model("deepseek-r1")) == expected == 671_026_404_352


def test_deepseek_v3_builds_with_the_v2_template_and_exact_capacity():
    config = load_config("deepseek-r1", n_routed_experts=288, capacity_factor="18/7")
    assert (config.model_type, config.family, config.num_local_experts) == ("deepseek_v3", "deepseek_v2", 288)
    module = build_model(config)
    (dispatch,) = [op for op in module.walk() if isinstance(op, stg.MoeDispatchOp)]
    # C = 18/7 * top-8 * B * S / E
    assert str(dispatch.result.type.shape[1]) == "144*B*S/(7*E)"
    assert dispatch.top_k.value.data == 8
    with pytest.raises(ConfigError, match="'capacity_factor' must be a positive number or fraction"):
        load_config("deepseek-r1", capacity_factor="-1/2")
    with pytest.raises(ConfigError, match="'capacity_factor' must be a positive number or fraction"):
        load_config("deepseek-r1", capacity_factor="lots")


def test_config_symbols():
    bound = {k: v.value.data for k, v in build_model("deepseek-v2-lite").attributes["stg.config"].data.items()}
    assert bound == {"H": 2048, "L": 1, "L2": 26, "V": 102400, "N": 16, "F": 10944, "E": 64, "FE": 1408,
                     "FS": 2816, "KVR": 512, "DN": 128, "DR": 64, "DV": 128}
    bound = {k: v.value.data for k, v in build_model("llama3-70b").attributes["stg.config"].data.items()}
    assert bound == {"H": 8192, "L": 80, "V": 128256, "N": 64, "KV": 8, "D": 128, "F": 28672}


def test_capacity_is_symbolic():
    module = build_model(load_config("mixtral-8x7b", capacity_factor=1.25))
    (dispatch,) = [op for op in module.walk() if isinstance(op, stg.MoeDispatchOp)]
    assert str(dispatch.result.type.shape[1]) == "5*B*S/(2*E)"
    assert dispatch.top_k.value.data == 2


def test_tied_embedding_counts_once():
    module = build_model("llama3.2-1b")
    reads = [op for op in module.walk() if isinstance(op, stg.ParamOp) and op.tensor_name.data == "model.embed_tokens.weight"]
    assert len(reads) == 2
    untied = build_model(load_config("llama3.2-1b", tie_word_embeddings=False))
    assert parameter_count(untied) - parameter_count(module) == 128256 * 2048


def test_gpt3_5b_count_derived():
    """NeMo calls it 5B; Megatron's GPT: 12*H^2 + 13*H per layer, token and position
    tables (the head is tied), the final LayerNorm."""
    h, layers, vocab, positions = 4096, 24, 51200, 2048
    expected = layers * (12 * h * h + 13 * h) + vocab * h + positions * h + 2 * h
    assert parameter_count(build_model("gpt3-5b")) == expected == 5_051_228_160


def test_bindings_override_config():
    module = build_model("llama3-8b")
    one, two = parameter_count(module, {"L": 1}), parameter_count(module, {"L": 2})
    per_layer = 4096 * (4096 + 2 * 1024 + 4096) + 3 * 4096 * 14336 + 2 * 4096
    assert two - one == per_layer
    assert parameter_count(module) == one + 31 * per_layer


# -- loading ------------------------------------------------------------------------------


def test_load_config_json(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY["llama"], "_name_or_path": "tiny-llama"}))
    config = load_config(str(path))
    assert (config.name, config.family, config.hidden_size, config.head_dim) == ("tiny-llama", "llama", 16, 4)
    assert config.num_key_value_heads == 2 and config.tie_word_embeddings is False
    assert load_config(tmp_path).hidden_size == 16  # a checkpoint folder holding config.json
    module = build_model(str(path), "f32")
    module.verify()


def test_gpt2_keys_and_defaults(tmp_path):
    path = tmp_path / "gpt2.json"
    path.write_text(json.dumps({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
                                "n_positions": 1024, "vocab_size": 50257, "n_inner": None}))
    config = load_config(path)
    assert config.name == "gpt2" and config.intermediate_size == 4 * 768 and config.tie_word_embeddings
    # GPT-2 small: 124,439,808 parameters (HF openai-community/gpt2)
    assert parameter_count(build_model(config)) == 124_439_808


def test_mamba_keys():
    config = load_config({"model_type": "mamba", "d_model": 64, "n_layer": 2, "vocab_size": 10, "d_state": 8})
    assert (config.intermediate_size, config.time_step_rank, config.state_size) == (128, 4, 8)


def test_unknown_name_lists_named_configs():
    with pytest.raises(ConfigError, match=r"unknown model 'llama9'.*llama3-8b.*mamba-130m"):
        load_config("llama9")


def test_missing_file():
    with pytest.raises(ConfigError, match="no such config file: nowhere/config.json"):
        load_config("nowhere/config.json")


def test_missing_key_names_key_and_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in TINY["llama"].items() if k != "intermediate_size"}))
    with pytest.raises(ConfigError, match=rf"^{path}: missing required key 'intermediate_size'"):
        load_config(str(path))
    path.write_text(json.dumps({k: v for k, v in TINY["gpt"].items() if k != "n_embd"}))
    with pytest.raises(ConfigError, match=r"missing required key 'hidden_size' or 'n_embd' or 'd_model'"):
        load_config(str(path))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"model_type": "bert"}, "model_type 'bert' has no template; supported: deepseek"),
        ({"num_key_value_heads": 3}, r"num_attention_heads \(4\) must be a positive multiple of num_key_value_heads \(3\)"),
        ({"hidden_size": "16"}, "'hidden_size' must be a non-negative integer, not '16'"),
        ({"rms_norm_eps": -1}, "'rms_norm_eps' must be a positive number"),
        ({"head_dim": 5}, r"head_dim \(5\) must be even"),
        ({"hidden_size": 18}, "hidden_size 18 is not divisible by num_attention_heads 4; give 'head_dim'"),
    ],
)
def test_bad_values(tmp_path, change, message):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY["llama"], **change}))
    with pytest.raises(ConfigError, match=message):
        load_config(str(path))


def test_bad_moe_and_json(tmp_path):
    with pytest.raises(ConfigError, match=r"num_experts_per_tok \(5\) must be between 1 and the number of experts \(4\)"):
        load_config({**TINY["mixtral"], "num_experts_per_tok": 5})
    with pytest.raises(ConfigError, match=r"first_k_dense_replace \(3\) leaves no MoE layer"):
        load_config({**TINY["deepseek-moe"], "first_k_dense_replace": 3})
    path = tmp_path / "config.json"
    path.write_text("{oops")
    with pytest.raises(ConfigError, match=r"config.json:1:2: not valid JSON"):
        load_config(str(path))
    path.write_text("[1]")
    with pytest.raises(ConfigError, match="holds a JSON object, not list"):
        load_config(str(path))


def test_bad_dtype():
    with pytest.raises(ConfigError, match="unsupported dtype 'f8'; use one of bf16, f16, f32, f64"):
        build_model("llama3-8b", "f8")


@pytest.mark.parametrize("value", ["false", 0])
def test_tie_word_embeddings_is_a_boolean(value):
    # bool("false") is True: a quoted "false" in a ps CONFIG's overrides planned a tied head
    with pytest.raises(ConfigError, match=rf"'tie_word_embeddings' must be true or false, not {value!r}"):
        load_config("llama3.2-1b", tie_word_embeddings=value)
