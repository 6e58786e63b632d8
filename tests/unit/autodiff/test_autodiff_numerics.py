"""stg-autodiff's training step, run by the reference interpreter, against torch.autograd
and torch.optim on an equivalent PyTorch model (float64).

The model: tied embeddings, a stack of L residual SwiGLU-free MLP layers
(h + down(silu(up(h)))), the tied head and token cross-entropy.
"""

from __future__ import annotations

import copy

import pytest
import torch
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.runtime.interpreter import Interpreter, StateStore

B, S, H, F, V, L = 2, 5, 6, 10, 11, 3
SIZES = {"B": B, "S": S, "H": H, "F": F, "V": V, "L": L}

FORWARD = """
func.func @forward() -> !stg.tensor<[], f64> {
  %ids = stg.input "input_ids" : !stg.tensor<[B, S], i64>
  %labels = stg.input "labels" : !stg.tensor<[B, S], i64>
  %emb = stg.param "embed" : !stg.tensor<[V, H], f64>
  %x = stg.embedding %emb, %ids : !stg.tensor<[V, H], f64>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f64>
  %h = stg.repeat L carry(%hin = %x : !stg.tensor<[B, S, H], f64>) {
    %w = stg.param "layers.up" : !stg.tensor<[F, H], f64>
    %w2 = stg.param "layers.down" : !stg.tensor<[H, F], f64>
    %u = stg.einsum "bsh,fh->bsf" %hin, %w : !stg.tensor<[B, S, H], f64>, !stg.tensor<[F, H], f64> -> !stg.tensor<[B, S, F], f64>
    %a = stg.elementwise silu %u : !stg.tensor<[B, S, F], f64> -> !stg.tensor<[B, S, F], f64>
    %d = stg.einsum "bsf,hf->bsh" %a, %w2 : !stg.tensor<[B, S, F], f64>, !stg.tensor<[H, F], f64> -> !stg.tensor<[B, S, H], f64>
    %r = stg.elementwise add %hin, %d : !stg.tensor<[B, S, H], f64>, !stg.tensor<[B, S, H], f64> -> !stg.tensor<[B, S, H], f64>
    stg.yield %r : !stg.tensor<[B, S, H], f64>
  }
  %logits = stg.einsum "bsh,vh->bsv" %h, %emb : !stg.tensor<[B, S, H], f64>, !stg.tensor<[V, H], f64> -> !stg.tensor<[B, S, V], f64>
  %loss = stg.cross_entropy %logits, %labels : !stg.tensor<[B, S, V], f64>, !stg.tensor<[B, S], i64> -> !stg.tensor<[], f64>
  func.return %loss : !stg.tensor<[], f64>
}
"""


def train_step(**options):
    module = Parser(make_context(), FORWARD).parse_module()
    StgAutodiff(**options).apply(make_context(), module)
    module.verify()
    return module


def initial_state(seed: int = 0) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    params = {
        "embed": torch.randn(V, H, generator=g, dtype=torch.float64),
        "layers.up": torch.randn(L, F, H, generator=g, dtype=torch.float64) / H**0.5,
        "layers.down": torch.randn(L, H, F, generator=g, dtype=torch.float64) / F**0.5,
    }
    inputs = {
        "input_ids": torch.randint(0, V, (B, S), generator=g),
        "labels": torch.randint(0, V, (B, S), generator=g),
    }
    return params, inputs


def torch_loss(params, inputs):
    h = params["embed"][inputs["input_ids"]]
    for i in range(L):
        h = h + torch.nn.functional.silu(h @ params["layers.up"][i].T) @ params["layers.down"][i].T
    logits = h @ params["embed"].T
    return torch.nn.functional.cross_entropy(logits.reshape(-1, V), inputs["labels"].reshape(-1))


def reference_grads(params, inputs):
    leaves = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    loss = torch_loss(leaves, inputs)
    loss.backward()
    return loss.detach(), {k: v.grad for k, v in leaves.items()}


def run(module, params, inputs, states=None):
    store = StateStore(params=copy.deepcopy(params), states=dict(states or {}), inputs=dict(inputs))
    (loss,) = Interpreter(module, bindings=SIZES).run("train_step", store)
    return loss, store


def test_loss_and_every_gradient_match_torch_autograd():
    params, inputs = initial_state()
    loss, store = run(train_step(optimizer="none"), params, inputs)
    want_loss, want = reference_grads(params, inputs)
    torch.testing.assert_close(loss, want_loss, rtol=1e-12, atol=0)
    for name, grad in want.items():
        torch.testing.assert_close(store.states[("grad", name)], grad, rtol=1e-10, atol=1e-12)


def test_adamw_step_matches_torch_optim():
    params, inputs = initial_state(1)
    options = dict(lr=1e-2, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.1)
    _, store = run(train_step(optimizer="adamw", **options), params, inputs)

    leaves = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    optim = torch.optim.AdamW(
        leaves.values(), lr=1e-2, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1
    )
    torch_loss(leaves, inputs).backward()
    optim.step()
    for name, leaf in leaves.items():
        torch.testing.assert_close(store.params[name], leaf.detach(), rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(store.states[("exp_avg", name)], optim.state[leaf]["exp_avg"], rtol=1e-10, atol=1e-14)


def test_sgd_with_momentum_over_two_steps_matches_torch_optim():
    params, inputs = initial_state(2)
    module = train_step(optimizer="sgd", lr=0.05, momentum=0.9, weight_decay=0.01)
    store = StateStore(params=copy.deepcopy(params), states={}, inputs=dict(inputs))
    interpreter = Interpreter(module, bindings=SIZES)
    for _ in range(2):
        interpreter.run("train_step", store)

    leaves = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    optim = torch.optim.SGD(leaves.values(), lr=0.05, momentum=0.9, weight_decay=0.01)
    for _ in range(2):
        optim.zero_grad()
        torch_loss(leaves, inputs).backward()
        optim.step()
    for name, leaf in leaves.items():
        torch.testing.assert_close(store.params[name], leaf.detach(), rtol=1e-10, atol=1e-12)


def test_recompute_gives_bit_identical_gradients():
    params, inputs = initial_state(3)
    _, plain = run(train_step(optimizer="none"), params, inputs)
    _, again = run(train_step(optimizer="none", recompute=True), params, inputs)
    for name in params:
        assert torch.equal(plain.states[("grad", name)], again.states[("grad", name)]), name


@pytest.mark.parametrize("micro_batches", [2])
def test_micro_batches_accumulate_the_full_batch_gradient(micro_batches):
    """M micro-batches of B sequences give the gradient of one batch of M*B: the mean
    over all tokens is the mean of the micro-batch means."""
    params, _ = initial_state(4)
    g = torch.Generator().manual_seed(5)
    full = {
        "input_ids": torch.randint(0, V, (micro_batches * B, S), generator=g),
        "labels": torch.randint(0, V, (micro_batches * B, S), generator=g),
    }
    stacked = {k: v.reshape(micro_batches, B, S) for k, v in full.items()}
    loss, store = run(train_step(optimizer="none", micro_batches=micro_batches), params, stacked)
    want_loss, want = reference_grads(params, full)
    torch.testing.assert_close(loss, want_loss, rtol=1e-12, atol=0)
    for name, grad in want.items():
        torch.testing.assert_close(store.states[("grad", name)], grad, rtol=1e-10, atol=1e-12)
