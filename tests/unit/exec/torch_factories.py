"""Model factories for `stagec run --frontend torch --torch-factory` tests
(tests/unit/exec/test_run_torch.py), named as `tests.unit.exec.torch_factories:NAME`.

`make_model` builds a small residual MLP language model that initialises itself
unlike the templates: every weight and bias N(0, 0.5), where the runtime's template
initialisation draws N(0, 0.02) (runtime/exec/weights.py). A run that silently
started from the template's weights would begin near the loss of all-zero logits,
ln V, instead of this module's own first loss. The others are bad inputs."""

from __future__ import annotations

import torch.nn as nn
import torch.nn.functional as F

STD = 0.5


class ResidualLM(nn.Module):
    """Token embedding, `layers` blocks x + silu(W x + b), a linear head; forward
    (input_ids, labels) returns the mean token cross-entropy."""

    def __init__(self, vocab: int, hidden: int, layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers))
        self.head = nn.Linear(hidden, vocab, bias=False)
        for p in self.parameters():
            nn.init.normal_(p, std=STD)

    def forward(self, input_ids, labels):
        x = self.embed(input_ids)
        for block in self.blocks:
            x = x + F.silu(block(x))
        logits = self.head(x)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1))


def make_model(config) -> ResidualLM:
    return ResidualLM(config.vocab_size, config.hidden_size, config.num_hidden_layers)


def raising(config):
    raise ValueError(f"no model of width {config.hidden_size} here")


class _Unused(ResidualLM):
    def __init__(self, *args):
        super().__init__(*args)
        self.spare = nn.Linear(4, 4, bias=False)  # never called by forward


def with_unused_parameter(config) -> ResidualLM:
    return _Unused(config.vocab_size, config.hidden_size, config.num_hidden_layers)
