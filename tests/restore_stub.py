"""The deterministic stand-in network the restore tests decode with (test_restore_output,
test_restore_reading, test_parallels): no training, the same answer on every machine, so the
decoder's behaviour, not a model's skill, is what they check."""

from __future__ import annotations

from typing import Any

import torch

from stoicheia.inference.loading import LoadedModel
from stoicheia.text import alphabet as A

#: the acute accent alone (no breathing, iota or diaeresis), the stub's mark with ``marks``
ACUTE = next(d for d in range(A.NUM_DIA) if A.dia_fields(d) == (1, 0, 0, 0))


class StubNetwork:
    """Logits ``(B, T, V)`` float32 per head for a batch of ``(B, T)`` int64 inputs: at slot
    ``t`` the letter ``7t mod 24`` (logit 4), then ``7t + 3 mod 24`` (3), BLANK at every fifth
    slot (4.5), no word break and no punctuation; with ``marks``, also an acute accent, a word
    break every fourth slot and a comma every sixth, so that fills carry accents, spaces and
    punctuation that the input's style must then decide about."""

    def __init__(self, marks: bool = False) -> None:
        self.marks = marks

    def __call__(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        chars = batch["chars"]
        B, T = chars.shape
        t = torch.arange(T)
        out = {
            h: torch.zeros(B, T, n)
            for h, n in (("char", 27), ("boundary", 3), ("dia", 48), ("cap", 2), ("punct", 6))
        }
        out["char"][:, t, (t * 7) % A.NUM_LETTERS] = 4.0
        out["char"][:, t, ((t * 7) + 3) % A.NUM_LETTERS] = 3.0
        out["char"][:, :, A.BLANK] = torch.where(t % 5 == 0, 4.5, 0.0)
        out["boundary"][:, :, 0] = 1.0
        out["punct"][:, :, 0] = 1.0
        if self.marks:
            out["dia"][:, :, ACUTE] = 3.0
            out["boundary"][:, :, 1] = torch.where(t % 4 == 0, 3.0, 0.0)
            out["punct"][:, :, 1] = torch.where(t % 6 == 0, 3.0, 0.0)
        return out


class Loaded(LoadedModel):
    """A :class:`~stoicheia.inference.loading.LoadedModel` whose ``encoder`` is any callable
    stand-in network (batch dict in, logits dict out), called as it is."""

    def __call__(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return self.encoder(batch)


def stub_model(marks: bool = False, source: str = "stub", **data: Any) -> LoadedModel:
    """A :class:`~stoicheia.inference.loading.LoadedModel` around :class:`StubNetwork`, its run
    configuration ``{"data": {"seq_len": 512, **data}}`` (``shard_root=...``: where restore looks
    for a parallels index), loaded from ``source``."""
    return Loaded(StubNetwork(marks), {"data": {"seq_len": 512, **data}}, source, "checkpoint")
