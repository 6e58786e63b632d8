"""A PyTorch model for `stagec import` and `--torch-factory`: the README's TinyLM.

`stagec import examples.tiny_lm:make_model` (run from the repository root) builds it on
the meta device and imports it into stg; `make_model(config)` sizes it from `--model`'s
config. Any module works the same way: forward(input_ids, labels) returns the loss."""

from __future__ import annotations

import torch.nn as nn
import torch.nn.functional as F


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 100, hidden: int = 64, layers: int = 4):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers))
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids, labels):
        x = self.embed(input_ids)
        for layer in self.layers:
            x = x + F.silu(layer(x))
        logits = self.head(x)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1))


def make_model(config=None) -> TinyLM:
    """TinyLM at its own sizes, or at the vocabulary, width and depth of `config` (the
    ModelConfig of `--model NAME|config.json`)."""
    if config is None:
        return TinyLM()
    return TinyLM(vocab=config.vocab_size, hidden=config.hidden_size, layers=config.num_hidden_layers)
