"""The data loader: each step's global batch, the same on every rank (each rank reads
its block of it, as its stg.input types say).

Tokens come from a seeded generator (`synthetic`) or a token file (a `.npy` array of
integer token ids, read through a memory map): step t's sequences are consecutive
windows of S + 1 tokens, the labels the ids shifted left by one. The batch has the
shapes the program's stg.input ops give it: `input_ids` and `labels` [B, S], or
[M, B, S] with micro-batches (B is every replica's micro-batch together); GPT's
`position_ids` and the rotary `rope.angles` are derived (frontends/templates).

Batches are made on the host (seeded, so the same on every rank and device);
RankProgram.step moves them to the rank's device.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from stagec.frontends.templates import rope_angles


class DataError(ValueError):
    """A token file that cannot feed the job (missing, not integers, too short)."""


class Batches:
    """`batch(step)`: the global inputs of a training step (module doc)."""

    def __init__(self, config, shapes: Mapping[str, tuple[int, ...]], *, seed: int = 0, tokens: str | None = None):
        self.config, self.shapes, self.seed = config, dict(shapes), seed
        if "input_ids" not in self.shapes:
            raise DataError("the program reads no input_ids")
        *lead, self.seq = self.shapes["input_ids"]
        self.lead = tuple(lead)
        self.sequences = int(np.prod(lead))
        self.tokens = None
        if tokens is not None:
            try:
                self.tokens = np.load(tokens, mmap_mode="r")
            except (OSError, ValueError) as error:
                raise DataError(f"--data {tokens}: cannot read a .npy token array: {error}") from None
            if self.tokens.ndim != 1 or not np.issubdtype(self.tokens.dtype, np.integer):
                raise DataError(f"--data {tokens}: a 1-D integer array of token ids is needed, not "
                                f"{self.tokens.ndim}-D {self.tokens.dtype}")
            if len(self.tokens) < self.seq + 1:
                raise DataError(f"--data {tokens}: {len(self.tokens)} tokens, fewer than one sequence of {self.seq + 1}")
            if int(self.tokens.max()) >= config.vocab_size or int(self.tokens.min()) < 0:
                raise DataError(f"--data {tokens}: token ids must lie in [0, {config.vocab_size}) (the model's vocab)")

    def _ids(self, step: int) -> torch.Tensor:
        """[sequences, S + 1] token ids of the step."""
        n, width = self.sequences, self.seq + 1
        if self.tokens is None:
            generator = torch.Generator().manual_seed(self.seed * 1_000_003 + step)
            return torch.randint(self.config.vocab_size, (n, width), generator=generator, device="cpu")
        windows = (len(self.tokens) - 1) // self.seq
        rows = [(step * n + i) % windows for i in range(n)]
        return torch.from_numpy(np.stack([np.asarray(self.tokens[r * self.seq: r * self.seq + width], dtype=np.int64)
                                          for r in rows]))

    def batch(self, step: int) -> dict[str, torch.Tensor]:
        ids = self._ids(step)
        shape = (*self.lead, self.seq)
        out = {"input_ids": ids[:, :-1].reshape(shape).contiguous(), "labels": ids[:, 1:].reshape(shape).contiguous()}
        if "position_ids" in self.shapes:
            out["position_ids"] = torch.arange(self.seq, device="cpu").expand(shape).contiguous()
        if "rope.angles" in self.shapes:
            out["rope.angles"] = rope_angles(self.seq, self.config.rotary_dim, self.config.rope_theta)
        return out
