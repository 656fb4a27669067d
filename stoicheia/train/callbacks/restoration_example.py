"""Print one restored held-out word at every evaluation: a lacuna of known width, filled in.

The word is the longest word (at least 4 letters) among the first 40 words of the first
held-out record that has one. Its letters become MASK slots, every channel of the record
is UNKNOWN (as in the reference evaluation), and the model's most likely letter per slot
is shown next to the truth.
"""

from __future__ import annotations

import logging

import numpy as np
import torch
from composer.core import Callback, State
from composer.loggers import Logger
from composer.utils import dist

from stoicheia.data.packing import collate_rows
from stoicheia.noise import Noised
from stoicheia.text.alphabet import (
    BOUNDARY_UNKNOWN,
    DIA_UNKNOWN,
    IGNORE_INDEX,
    LETTERS,
    MASK,
    NUM_LETTERS,
    PUNCT_UNKNOWN,
)
from stoicheia.text.planes import Planes
from stoicheia.text.render import planes_to_text

log = logging.getLogger(__name__)


def pick_word(records: list[Planes], max_letters: int, min_len: int = 4) -> tuple[int, int, int] | None:
    """``(record index, start, end)`` of the example word (letters ``[start, end)``), or None.

    A word with a real-lacuna slot is never picked: its truth is unknown.
    """
    for r, planes in enumerate(records):
        n = min(len(planes), max_letters)
        starts = [int(s) for s in planes.word_starts() if s < n]
        bounds = [*starts, n]
        best = None
        for a, b in list(zip(bounds[:-1], bounds[1:], strict=False))[:40]:
            if planes.lacuna[a:b].any():
                continue
            if b - a >= min_len and (best is None or b - a > best[1] - best[0]):
                best = (a, b)
        if best:
            return r, best[0], best[1]
    return None


def masked_example(planes: Planes, start: int, end: int) -> Noised:
    """A :class:`Noised` of ``planes`` with letters ``[start, end)`` masked, channels UNKNOWN."""
    n = len(planes)
    chars = planes.chars.copy()
    chars[start:end] = MASK
    tgt = np.full(n, IGNORE_INDEX, dtype=np.int16)
    tgt[start:end] = planes.chars[start:end]
    ignore = np.full(n, IGNORE_INDEX, dtype=np.int16)
    weight = np.zeros(n, dtype=np.float32)
    weight[start:end] = 1.0
    word_start = np.zeros(n, dtype=bool)
    word_start[planes.word_starts()] = True
    return Noised(
        chars=chars,
        boundary=np.full(n, BOUNDARY_UNKNOWN, dtype=np.uint8),
        dia=np.full(n, DIA_UNKNOWN, dtype=np.uint8),
        punct=np.full(n, PUNCT_UNKNOWN, dtype=np.uint8),
        tgt_chars=tgt,
        tgt_boundary=ignore.copy(),
        tgt_dia=ignore.copy(),
        tgt_cap=ignore.copy(),
        tgt_punct=ignore.copy(),
        weight=weight,
        word_start=word_start,
        t=(end - start) / n,
        pattern="example",
    )


class RestorationExample(Callback):
    """After every evaluation (``EVAL_AFTER_ALL``), print the context around one masked held-out word, the truth and
    the model's restoration (argmax over the 24 letters per slot)."""

    def __init__(self, eval_records: list[Planes], context: int = 120, max_letters: int = 400) -> None:
        records = eval_records
        self.context = context
        picked = pick_word(records, max_letters)
        self.example = None
        if picked is not None:
            r, a, b = picked
            planes = records[r][: min(len(records[r]), max_letters)]
            self.example = (planes, a, b)

    def restore(self, model: torch.nn.Module, device: torch.device) -> tuple[str, str, str]:
        """``(context with the lacuna shown as [....], true word, restored word)``."""
        assert self.example is not None
        planes, a, b = self.example
        noised = masked_example(planes, a, b)
        batch = collate_rows([[noised]], len(noised))
        batch = {k: v.to(device) for k, v in batch.items()}
        was_training = model.training
        model.eval()
        with torch.no_grad():
            logits = model(batch)["char"][0, a:b, :NUM_LETTERS].float()
        model.train(was_training)
        guess = logits.argmax(-1).cpu().numpy()
        restored = "".join(LETTERS[i] for i in guess)
        truth = "".join(LETTERS[i] for i in planes.chars[a:b])
        left = planes_to_text(planes[max(0, a - self.context) : a]) if a > 0 else ""
        right = planes_to_text(planes[b : b + self.context // 2]) if b < len(planes) else ""
        shown = f"…{left[-self.context:]} [{'.' * (b - a)}] {right}…"
        return shown, truth, restored

    def eval_after_all(self, state: State, logger: Logger) -> None:
        if self.example is None:
            return
        if dist.get_global_rank() != 0:
            return
        model = state.model.module if hasattr(state.model, "module") else state.model
        device = next(model.parameters()).device
        shown, truth, restored = self.restore(model, device)
        hits = sum(x == y for x, y in zip(truth, restored, strict=False))
        log.info("[restore] %s\n[restore] truth %s  model %s  (%d/%d letters)", shown, truth, restored, hits, len(truth))
        logger.log_metrics({"eval/example_letters_correct": hits / len(truth)})
