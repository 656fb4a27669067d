"""Skip optimizer updates with a non-finite gradient; abort a run that keeps producing them."""

from __future__ import annotations

import logging
import math
from typing import Any

import torch
from composer.core import Algorithm, Event, State
from composer.loggers import Logger

log = logging.getLogger(__name__)


class TrainingDiverged(RuntimeError):
    """Raised after ``max_consec_skips`` consecutive non-finite gradients: the run stops
    without saving the diverged state (the last checkpoint stays the newest)."""


class GradientGuard(Algorithm):
    """Clip the global L2 gradient norm to ``clip_norm``; skip non-finite updates.

    Runs at ``AFTER_TRAIN_BATCH``, i.e. after backward of every micro-batch and after the
    DDP all-reduce, so every rank sees the same norm and takes the same decision. A skipped
    update sets every ``p.grad = None``: AdamW then leaves those parameters and their moments
    untouched (no weight decay either); the schedule and the batch counter still advance.
    After ``max_consec_skips`` consecutive skips it raises :class:`TrainingDiverged` before
    the batch ends, so no checkpoint of the diverged state is written; the recipe then exits
    with status 3 and writes ``diverged.json``.

    The number of skipped updates is kept in ``state_dict``; ``TrainingMonitor`` logs it
    (``train/skipped_updates``) with the norm (``train/grad_norm``).

    Args:
        clip_norm: maximum global gradient norm (``train.clip_norm``, injected); ``None`` or
            0 disables clipping.
        max_consec_skips: consecutive non-finite updates tolerated (0: never abort).
    """

    def __init__(self, clip_norm: float | None = 1.0, max_consec_skips: int = 25) -> None:
        if max_consec_skips < 0:
            raise ValueError(
                f"gradient_guard.max_consec_skips must be >= 0, got {max_consec_skips}"
            )
        self.clip_norm = clip_norm
        self.max_consec_skips = int(max_consec_skips)
        self.last_norm: float = float("nan")
        self.skipped = 0
        self.consecutive = 0

    def match(self, event: Event, state: State) -> bool:
        return event == Event.AFTER_TRAIN_BATCH

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        params = [p for p in state.model.parameters() if p.grad is not None]
        if not params:
            return
        norm = torch.linalg.vector_norm(
            torch.stack([torch.linalg.vector_norm(p.grad.detach().float()) for p in params])
        )
        self.last_norm = float(norm)
        step = int(state.timestamp.batch)
        if not math.isfinite(self.last_norm):
            for p in state.model.parameters():
                p.grad = None
            self.skipped += 1
            self.consecutive += 1
            log.warning(
                "[guard] batch %d: non-finite gradient norm, update skipped (%d in a row, %d in all)",
                step,
                self.consecutive,
                self.skipped,
            )
            if self.max_consec_skips and self.consecutive >= self.max_consec_skips:
                raise TrainingDiverged(
                    f"{self.consecutive} consecutive non-finite gradients up to batch {step}: the run diverged. "
                    "No checkpoint of this state was written; lower train.lr (or raise train.warmup_frac) and "
                    "run the same command again to resume from the last good checkpoint"
                )
            return
        self.consecutive = 0
        if self.clip_norm is not None and self.clip_norm > 0:
            scale = self.clip_norm / (self.last_norm + 1e-6)
            if scale < 1.0:
                for p in params:
                    p.grad.detach().mul_(scale)

    def state_dict(self) -> dict[str, Any]:
        return {"skipped": self.skipped, "consecutive": self.consecutive}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.skipped = int(state.get("skipped", 0))
        self.consecutive = int(state.get("consecutive", 0))
