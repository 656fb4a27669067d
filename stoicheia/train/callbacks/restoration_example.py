"""Print one restored held-out word at every evaluation: a lacuna of known width, filled in.

The word is the longest word (at least 4 letters) among the first 40 words of the first
held-out record that has one. Its letters become MASK slots, every channel of the record
is UNKNOWN (as in the reference evaluation), and the model's restoration, decoded as
``stoicheia restore`` decodes (:mod:`stoicheia.inference.restore`), is shown next to the truth.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from composer.core import Callback, State
from composer.core.precision import get_precision_context
from composer.loggers import Logger
from composer.utils import dist

from stoicheia.data.packing import INPUT_PAD
from stoicheia.inference.restore import restore_planes
from stoicheia.text.alphabet import LETTERS
from stoicheia.text.planes import Planes
from stoicheia.text.render import planes_to_text

log = logging.getLogger(__name__)


def pick_word(
    records: list[Planes], max_letters: int, min_len: int = 4
) -> tuple[int, int, int] | None:
    """``(record index, start, end)`` of the example word (letters ``[start, end)``), or None.

    A word with a real-lacuna slot is never picked: its truth is unknown.
    """
    for r, planes in enumerate(records):
        n = min(len(planes), max_letters)
        lost = (
            np.flatnonzero(planes.lacuna[:n] > 0)
            if planes.lacuna is not None
            else np.zeros(0, np.int64)
        )
        starts = [int(s) for s in planes.word_starts() if s < n]
        bounds = [*starts, n]
        best = None
        for a, b in list(zip(bounds[:-1], bounds[1:], strict=False))[:40]:
            if lost.size and ((lost >= a) & (lost < b)).any():
                continue
            if b - a >= min_len and (best is None or b - a > best[1] - best[0]):
                best = (a, b)
        if best:
            return r, best[0], best[1]
    return None


def pad_to_shape(batch: dict[str, torch.Tensor], shape: tuple[int, int]) -> dict[str, torch.Tensor]:
    """``batch`` (``(B, T)`` int tensors ``chars``, optional ``boundary``/``dia``/``punct``/
    ``seg_id``/``pos``) grown to ``shape = (rows, T')`` with padding slots (PAD / UNKNOWN ids,
    ``seg_id`` 0, ``pos`` 0): no document attends to them, so the logits of the given slots are
    unchanged. A batch that does not fit (more rows or slots) is returned as it is."""
    B, T = batch["chars"].shape
    rows, width = shape
    if B > rows or T > width or (B, T) == (rows, width):
        return batch
    full = dict(batch)
    if "seg_id" not in full:
        full["seg_id"] = (batch["chars"] != INPUT_PAD["chars"]).to(torch.int32)
    if "pos" not in full:
        full["pos"] = torch.arange(T).expand(B, T)
    out = {}
    for k, v in full.items():
        grown = torch.full((rows, width), INPUT_PAD.get(k, 0), dtype=v.dtype, device=v.device)
        grown[:B, :T] = v
        out[k] = grown
    return out


class RestorationExample(Callback):
    """After every evaluation (``EVAL_AFTER_ALL``), print the context around one masked
    held-out word, the truth and the model's restoration, decoded as ``stoicheia restore``
    decodes a lacuna of known width (:func:`stoicheia.inference.restore.restore_planes`: one
    forward pass and the search over the gap's slots).

    The forward runs as the evaluation's does: in eval mode, without gradients, under the
    run's precision context (Composer's ``get_precision_context``: bf16 autocast on a GPU) and
    padded to the evaluation batches' shape, so a compiled trunk reuses the evaluation graph.
    Outside the precision context it would run in fp32, and Dynamo (which guards on the
    autocast state) would compile the whole trunk a second time, on rank 0 alone, while the
    other ranks wait.

    Args:
        eval_records: the held-out records of the first evaluation set (injected).
        context: letters of the record shown before the word.
        max_letters: letters at the start of each record searched for the word.
    """

    def __init__(
        self, eval_records: list[Planes], context: int = 120, max_letters: int = 400
    ) -> None:
        records = eval_records
        self.context = context
        picked = pick_word(records, max_letters)
        self.example = None
        self.shape: tuple[int, int] | None = None  # (rows, T) of the evaluation batches
        if picked is not None:
            r, a, b = picked
            planes = records[r][: min(len(records[r]), max_letters)]
            self.example = (planes, a, b)

    def restore(
        self,
        model: torch.nn.Module,
        device: torch.device,
        precision: Callable[[], Any] | None = None,
    ) -> tuple[str, str, str]:
        """``(context with the lacuna shown as [....], true word, restored word)``.
        ``precision``: a context-manager factory the forward runs in (the run's precision)."""
        assert self.example is not None
        planes, a, b = self.example
        was_training = model.training
        model.eval()
        context = precision() if precision is not None else contextlib.nullcontext()
        try:
            with torch.no_grad(), context:
                (restored,) = restore_planes(
                    lambda batch: self._forward(model, batch, device),
                    planes,
                    [(a, b)],
                )
        finally:
            model.train(was_training)
        truth = "".join(LETTERS[i] for i in planes.chars[a:b])
        left = planes_to_text(planes[max(0, a - self.context) : a]) if a > 0 else ""
        right = planes_to_text(planes[b : b + self.context // 2]) if b < len(planes) else ""
        shown = f"…{left[-self.context :]} [{'.' * (b - a)}] {right}…"
        return shown, truth, restored

    def _forward(
        self, model: torch.nn.Module, batch: dict[str, torch.Tensor], device: torch.device
    ) -> dict[str, torch.Tensor]:
        """``model(batch)`` with the batch padded to the evaluation batches' shape
        (:func:`pad_to_shape`), so a compiled model reuses the evaluation's graph instead of
        compiling one for this single short row; the logits are cut back to the batch."""
        B, T = batch["chars"].shape
        padded = pad_to_shape(batch, self.shape) if self.shape is not None else batch
        out = model({k: v.to(device) for k, v in padded.items()})
        return {k: v[:B, :T] for k, v in out.items()}

    def eval_batch_start(self, state: State, logger: Logger) -> None:
        self.shape = tuple(state.batch["seg_id"].shape)  # type: ignore[assignment]

    def eval_after_all(self, state: State, logger: Logger) -> None:
        if self.example is None:
            return
        if dist.get_global_rank() != 0:
            return
        model = state.model.module if hasattr(state.model, "module") else state.model
        device = next(model.parameters()).device
        shown, truth, restored = self.restore(
            model,
            device,
            lambda: get_precision_context(state.precision, state.precision_config),
        )
        hits = sum(x == y for x, y in zip(truth, restored, strict=False))
        log.info(
            "[restore] %s\n[restore] truth %s  model %s  (%d/%d letters)",
            shown,
            truth,
            restored,
            hits,
            len(truth),
        )
        logger.log_metrics({"eval/example_letters_correct": hits / len(truth)})
