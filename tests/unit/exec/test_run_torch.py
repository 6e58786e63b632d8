"""`stagec run --frontend torch`: the program the torch frontend imports, trained on
real ranks from the torch module's own initial parameters (built after
torch.manual_seed(--seed); frontends/torch/parameters.py names them as the program
does, runtime/exec/weights.py shards them).

Parity: per-step losses of `-n 1` and of a parallel run equal those of the same
module trained in one process by torch.optim.AdamW (stg-autodiff's adamw: betas 0.9,
0.95, eps 1e-8, no decay), built independently here under the same seed, on the same
batches (windows of the +1 token file, run_testing.parity_tokens): 1e-5 relative, the
issue's bound. Both runs take B = 2 sequences per step (-n 1 --micro-batch 2, and
fsdp 2 / dp 2 x micro-batch 1), so one reference serves both.

- transformers' LlamaForCausalLM of the tiny Llama config (the default frontend);
- a user factory (torch_factories.py) whose module draws every weight from
  N(0, 0.5): its first loss is far from ln V, where a run from the template's
  N(0, 0.02) would start.

Bad input (a factory that raises, a module parameter the forward never uses, a
--weights file that lacks a tensor or holds one in another shape, options that do not
apply) is one line and exit status 2, before any rank starts.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from stagec.frontends.templates import load_config
from stagec.runtime.exec import Batches
from stagec.tools.stagec_cli import main
from tests.unit.exec.run_testing import (LR, PARITY_SEQ, PARITY_TOLERANCE, config_file, max_relative_error,
                                         parity_tokens, stagec_run)
from tests.unit.exec.torch_factories import STD, make_model
from tests.unit.templates.tiny_configs import TINY

STEPS, BATCH = 5, 2
FACTORY = "tests.unit.exec.torch_factories"


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("torch-run")
    return tmp, config_file(tmp), parity_tokens(tmp)


def _torch_losses(loss_of, parameters, config: str, tokens: str) -> list[float]:
    """Per-step losses of `loss_of(ids, labels)` trained by AdamW over `parameters` on
    the run's batches (runtime/exec/data.py: the same windows of the token file)."""
    batches = Batches(load_config(config), {"input_ids": (BATCH, PARITY_SEQ)}, tokens=tokens)
    optimizer = torch.optim.AdamW(parameters, lr=LR, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
    losses = []
    for step in range(STEPS):
        data = batches.batch(step)
        optimizer.zero_grad()
        loss = loss_of(data["input_ids"], data["labels"])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _runs_match(job, expected: list[float], *options: str, parallel: tuple[str, ...]) -> list[float]:
    """`stagec run -n 1 --micro-batch 2` and `stagec run PARALLEL` both equal
    `expected`; returns the first run's losses."""
    tmp, config, tokens = job
    common = ("--model", config, "--frontend", "torch", *options, "--seq", str(PARITY_SEQ),
              "--steps", str(STEPS), "--data", tokens)
    one = stagec_run("-n", "1", "--micro-batch", str(BATCH), *common, tmp_path=tmp)
    many = stagec_run(*parallel, *common, tmp_path=tmp)
    for got, ranks in ((one, "-n 1"), (many, " ".join(parallel))):
        assert got["bindings"]["B"] == BATCH
        error = max_relative_error(got["losses"], expected)
        assert error <= PARITY_TOLERANCE, (ranks, error, got["losses"], expected)
        print(f"max relative error {error:.2e}: {ranks} {' '.join(options)}")
    return one["losses"]


def test_transformers_llama_runs_match_torch(job):
    transformers = pytest.importorskip("transformers")
    _, config, tokens = job
    torch.manual_seed(0)  # what `stagec run --seed 0` does before building the module
    lm = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        **{k: v for k, v in TINY["llama"].items() if k != "model_type"})).float()

    def loss_of(ids, labels):  # labels are already shifted (data.py); no mask: whole causal sequences
        logits = lm(input_ids=ids).logits
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))

    expected = _torch_losses(loss_of, lm.parameters(), config, tokens)
    assert expected[-1] < expected[0] - 0.1, expected  # it learns: a wrong update shows
    _runs_match(job, expected, parallel=("-n", "2", "--fsdp", "2"))


def test_factory_module_runs_match_torch_from_its_own_initialisation(job):
    _, config, tokens = job
    torch.manual_seed(0)
    model = make_model(load_config(config))
    first_batch = Batches(load_config(config), {"input_ids": (BATCH, PARITY_SEQ)}, tokens=tokens).batch(0)
    with torch.no_grad():
        own_first = model(first_batch["input_ids"], first_batch["labels"]).item()
    # The template's initialisation, N(0, 0.02) weights and zero biases, makes the head's
    # logits about 1e-3 (0.02 x sqrt(H = 16) x |x| with |x| ~ 1), so a run from it would
    # start at ln 32 = 3.466 give or take 1e-3. This module's N(0, STD = 0.5) weights
    # start far from there:
    assert STD == 0.5 and abs(own_first - math.log(32)) > 1.0, own_first
    expected = _torch_losses(lambda ids, labels: model(ids, labels), model.parameters(), config, tokens)
    assert expected[0] == own_first and expected[-1] < expected[0] - 0.1, expected
    losses = _runs_match(job, expected, "--torch-factory", f"{FACTORY}:make_model", parallel=("-n", "2", "--dp", "2"))
    # the first step's loss is the module's own forward on the first batch
    assert abs(losses[0] - own_first) <= 1e-6 * own_first, (losses[0], own_first)


def _refused(tmp_path, capsys, *options: str) -> str:
    code = main(["run", "-n", "1", "--model", config_file(tmp_path), "--seq", "8", "--steps", "1", "--quiet",
                 *options])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


def test_factory_that_raises_is_refused(tmp_path, capsys):
    # torch_factories.raising: `raise ValueError(f"no model of width {config.hidden_size} here")`, H = 16
    err = _refused(tmp_path, capsys, "--frontend", "torch", "--torch-factory", f"{FACTORY}:raising")
    assert err.startswith(f"stagec: error: FACTORY '{FACTORY}:raising' raised ValueError: no model of width 16 here ("), err
    import inspect

    from tests.unit.exec import torch_factories

    line = inspect.getsourcelines(torch_factories.raising)[1] + 1  # the raise: the line after the def
    assert err.endswith(f"{torch_factories.__file__}:{line})"), err


def test_module_parameter_that_the_program_lacks_is_refused(tmp_path, capsys):
    # the module's `spare` Linear(4, 4, bias=False) is never called, so the import has no parameter for it
    assert _refused(tmp_path, capsys, "--frontend", "torch", "--torch-factory", f"{FACTORY}:with_unused_parameter") == (
        "stagec: error: --frontend torch: the module's parameter spare.weight [4, 4] is not in the imported "
        "program: its forward(input_ids, labels) does not use it, so the run would not train it (remove it, or "
        "use it in the forward)")


def test_weights_file_of_another_module_is_refused(tmp_path, capsys):
    from safetensors.torch import save_file

    state = {k: v.contiguous() for k, v in make_model(load_config(config_file(tmp_path))).state_dict().items()}
    options = ("--frontend", "torch", "--torch-factory", f"{FACTORY}:make_model", "--weights")
    without = {k: v for k, v in state.items() if k != "blocks.1.weight"}
    save_file(without, str(tmp_path / "without.safetensors"))
    # blocks.1 is Linear(H, H): [16, 16]
    assert _refused(tmp_path, capsys, *options, str(tmp_path / "without.safetensors")) == (
        f"stagec: error: --weights {tmp_path / 'without.safetensors'}: no tensor blocks.1.weight "
        "(the module's parameter, [16, 16])")
    wrong = dict(state, **{"head.weight": torch.zeros(16, 16)})  # the head is [V, H] = [32, 16]
    save_file(wrong, str(tmp_path / "wrong.safetensors"))
    assert _refused(tmp_path, capsys, *options, str(tmp_path / "wrong.safetensors")) == (
        f"stagec: error: --weights {tmp_path / 'wrong.safetensors'}: head.weight is [16, 16], but the module's "
        "head.weight is [32, 16]")
    extra = dict(state, **{"norm.weight": torch.ones(16)})
    save_file(extra, str(tmp_path / "extra.safetensors"))
    assert _refused(tmp_path, capsys, *options, str(tmp_path / "extra.safetensors")) == (
        f"stagec: error: --weights {tmp_path / 'extra.safetensors'}: the tensor norm.weight is no parameter or "
        "buffer of the module")


def test_options_that_do_not_apply_to_the_torch_frontend_are_refused(tmp_path, capsys):
    assert _refused(tmp_path, capsys, "--frontend", "torch", "--init-std", "0.1") == (
        "stagec: error: --init-std 0.1 sets the template's initialisation; --frontend torch starts from the "
        "module's own (seeded by --seed): drop --init-std")
    assert _refused(tmp_path, capsys, "--torch-factory", f"{FACTORY}:make_model") == (
        f"stagec: error: --torch-factory {FACTORY}:make_model builds the model through the torch frontend: "
        "give --frontend torch too")
