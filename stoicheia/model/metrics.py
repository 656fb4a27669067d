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

from stoicheia.model.config import EVAL_METRIC_NAMES
from stoicheia.text.alphabet import BOUNDARY_INTERNAL, IGNORE_INDEX, NUM_DIA, NUM_PUNCT


def _check(logits: Tensor, target: Tensor, name: str) -> None:
    if logits.dim() != target.dim() + 1 or logits.shape[:-1] != target.shape:
        raise ValueError(
            f"{name}: logits {tuple(logits.shape)} do not match target {tuple(target.shape)} "
            "(expected (..., C) vs (...))"
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
        """Add one batch: ``logits`` ``(B, T, 3)``, ``target`` ``(B, T)`` int64 in
        {0, 1, 2, -100}."""
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
    """Per-slot accuracy of the 48-way diacritics head over slots with ``tgt_dia != -100``."""

    head, target_key = "dia", "tgt_dia"


class PunctAccuracy(_MaskedAccuracy):
    """Per-slot accuracy of the 6-way punctuation head over slots with ``tgt_punct != -100``."""

    head, target_key = "punct", "tgt_punct"


class _MacroAccuracy(Metric):
    """Accuracy averaged over the classes that occur as targets (balanced accuracy).

    Per class ``c``: ``recall_c = correct_c / count_c`` over slots whose target is ``c``; the
    value is the mean of ``recall_c`` over the classes with ``count_c > 0`` (classes never seen
    as targets are left out, not counted as 0). Per-slot accuracy is dominated by the common
    "no mark" class (most letters carry no accent or punctuation); this one weighs a rare
    class as much as a common one. ``nan`` before any supervised slot. Higher is better.
    States are per-class sums (``dist_reduce_fx="sum"``), exact over ranks.
    """

    head = target_key = ""
    num_classes = 0
    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        zeros = torch.zeros(self.num_classes, dtype=torch.long)
        self.add_state("correct", default=zeros.clone(), dist_reduce_fx="sum")
        self.add_state("count", default=zeros.clone(), dist_reduce_fx="sum")

    def update(self, logits: Tensor, target: Tensor) -> None:
        """Add one batch: ``logits`` ``(B, T, C)``, ``target`` ``(B, T)`` int64 in ``[0, C)``
        or -100."""
        _check(logits, target, type(self).__name__)
        keep = target != IGNORE_INDEX
        tgt = target[keep]
        hit = logits.detach().argmax(dim=-1)[keep] == tgt
        self.count += torch.bincount(tgt, minlength=self.num_classes)[: self.num_classes]
        self.correct += torch.bincount(tgt[hit], minlength=self.num_classes)[: self.num_classes]

    def compute(self) -> Tensor:
        """Macro-averaged accuracy in [0, 1] (float32 scalar)."""
        seen = self.count > 0
        if not bool(seen.any()):
            return torch.tensor(math.nan, device=self.count.device)
        return (self.correct[seen].float() / self.count[seen].float()).mean()


class DiaMacroAccuracy(_MacroAccuracy):
    """Diacritics accuracy macro-averaged over the 48 classes (see :class:`_MacroAccuracy`)."""

    head, target_key, num_classes = "dia", "tgt_dia", NUM_DIA


class PunctMacroAccuracy(_MacroAccuracy):
    """Punctuation accuracy macro-averaged over the 6 classes (see :class:`_MacroAccuracy`)."""

    head, target_key, num_classes = "punct", "tgt_punct", NUM_PUNCT


#: The held-out metrics, by name, in the order they are reported. Lower is better only for
#: ``bits_per_char``.
EVAL_METRICS: dict[str, type[Metric]] = {
    "bits_per_char": BitsPerChar,
    "boundary_f1": BoundaryF1,
    "dia_acc": DiaAccuracy,
    "dia_macro_acc": DiaMacroAccuracy,
    "punct_acc": PunctAccuracy,
    "punct_macro_acc": PunctMacroAccuracy,
}
assert tuple(EVAL_METRICS) == EVAL_METRIC_NAMES, (
    "stoicheia.model.config.EVAL_METRIC_NAMES lists these names"
)


def eval_metrics() -> dict[str, Metric]:
    """Fresh instances of :data:`EVAL_METRICS`: what the training evaluators and
    ``stoicheia evaluate`` both compute on the reference-noised held-out batches."""
    return {name: cls() for name, cls in EVAL_METRICS.items()}


def update_metric(metric: Metric, outputs: dict[str, Tensor], batch: dict[str, Tensor]) -> None:
    """Feed ``metric`` the logits of the head it names (``outputs[metric.head]``, ``(B, T, C)``)
    and its target (``batch[metric.target_key]``, ``(B, T)``). Raises ``TypeError`` for a metric
    that names no head."""
    head, key = getattr(metric, "head", None), getattr(metric, "target_key", None)
    if not head or not key:
        raise TypeError(
            f"{type(metric).__name__} is not a stoicheia metric (it names no head / target_key)"
        )
    metric.update(outputs[head], batch[key])
