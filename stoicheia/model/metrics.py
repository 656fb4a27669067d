"""Evaluation metrics over supervised slots (target != -100), as torchmetrics ``Metric``s.

Every metric takes ``update(logits, target)`` with ``logits`` ``(B, T, C)`` (any float dtype)
and ``target`` ``(B, T)`` int64 (``-100`` = not supervised: padding, unmasked letters, planes the
source did not record). Slots with ``target == -100`` are dropped and never counted. States are
sums with ``dist_reduce_fx="sum"``, so the values are exact over all ranks.

Each class names the model output (``head``) and batch target (``target_key``) it reads, which
:meth:`stoicheia.model.composer_model.StoicheiaModel.update_metric` uses.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor
from torchmetrics import Metric

from stoicheia.text.alphabet import BOUNDARY_INTERNAL, IGNORE_INDEX


def _check(logits: Tensor, target: Tensor, name: str) -> None:
    if logits.dim() != target.dim() + 1 or logits.shape[:-1] != target.shape:
        raise ValueError(
            f"{name}: logits {tuple(logits.shape)} do not match target {tuple(target.shape)} (expected (..., C) vs (...))"
        )


class BitsPerChar(Metric):
    """Mean char cross-entropy in bits per supervised slot, *unweighted* (no MDLM 1/t).

    ``bits = sum_i CE_i / ln 2 / n``, CE the natural-log cross-entropy of the 27-way char head
    over slots with ``tgt_chars != -100`` (masked letters and BLANK slots). Lower is better;
    ``log2(24) = 4.585`` is a uniform guess over letters. ``nan`` before any supervised slot.
    """

    head, target_key = "char", "tgt_chars"
    is_differentiable = False
    higher_is_better = False
    full_state_update = False

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.add_state("nats", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, logits: Tensor, target: Tensor) -> None:
        """Add one batch: ``logits`` ``(B, T, C)``, ``target`` ``(B, T)`` int64."""
        _check(logits, target, "BitsPerChar")
        logits, target = logits.detach().reshape(-1, logits.shape[-1]).float(), target.reshape(-1)
        self.nats += F.cross_entropy(
            logits, target, ignore_index=IGNORE_INDEX, reduction="sum"
        ).double()
        self.count += (target != IGNORE_INDEX).sum()

    def compute(self) -> Tensor:
        """Bits per supervised char (float64 scalar)."""
        if self.count == 0:
            return torch.tensor(math.nan, dtype=torch.float64, device=self.nats.device)
        return self.nats / self.count / math.log(2)


class BoundaryF1(Metric):
    """F1 of "word- or sentence-final" (class 1 or 2) vs "word-internal" (class 0).

    The prediction of a slot is the argmax of its 3 boundary logits, positive if that is 1 or 2;
    the target is positive if it is 1 or 2. Over slots with ``tgt_boundary != -100``:
    ``F1 = 2 TP / (2 TP + FP + FN)``; ``0`` when that denominator is 0 (torchmetrics'
    ``zero_division=0`` convention). Higher is better.
    """

    head, target_key = "boundary", "tgt_boundary"
    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        for name in ("tp", "fp", "fn"):
            self.add_state(name, default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, logits: Tensor, target: Tensor) -> None:
        """Add one batch: ``logits`` ``(B, T, 3)``, ``target`` ``(B, T)`` int64 in {0, 1, 2, -100}."""
        _check(logits, target, "BoundaryF1")
        keep = target != IGNORE_INDEX
        pred_pos = logits.detach().argmax(dim=-1)[keep] != BOUNDARY_INTERNAL
        true_pos = target[keep] != BOUNDARY_INTERNAL
        self.tp += (pred_pos & true_pos).sum()
        self.fp += (pred_pos & ~true_pos).sum()
        self.fn += (~pred_pos & true_pos).sum()

    def compute(self) -> Tensor:
        """F1 in [0, 1] (float32 scalar)."""
        denom = 2 * self.tp + self.fp + self.fn
        if denom == 0:
            return torch.tensor(0.0, device=self.tp.device)
        return (2 * self.tp).float() / denom.float()


class _MaskedAccuracy(Metric):
    """Argmax accuracy over slots whose target is not -100; ``nan`` before any such slot."""

    head = target_key = ""
    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.add_state("correct", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("count", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, logits: Tensor, target: Tensor) -> None:
        """Add one batch: ``logits`` ``(B, T, C)``, ``target`` ``(B, T)`` int64."""
        _check(logits, target, type(self).__name__)
        keep = target != IGNORE_INDEX
        self.correct += (logits.detach().argmax(dim=-1)[keep] == target[keep]).sum()
        self.count += keep.sum()

    def compute(self) -> Tensor:
        """Accuracy in [0, 1] (float32 scalar)."""
        if self.count == 0:
            return torch.tensor(math.nan, device=self.correct.device)
        return self.correct.float() / self.count.float()


class DiaAccuracy(_MaskedAccuracy):
    """Accuracy of the 48-way diacritics head over slots with ``tgt_dia != -100``."""

    head, target_key = "dia", "tgt_dia"


class PunctAccuracy(_MaskedAccuracy):
    """Accuracy of the 6-way punctuation head over slots with ``tgt_punct != -100``."""

    head, target_key = "punct", "tgt_punct"
