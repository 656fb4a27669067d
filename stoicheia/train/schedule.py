"""WSD (warmup-stable-decay) learning-rate schedule as a Composer scheduler.

Shape (Hägele et al. 2024, "Scaling Laws and Compute-Optimal Training Beyond Fixed Training
Durations"; Hu et al. 2024, MiniCPM): linear warmup over ``warmup_frac`` of the nominal
steps, a flat peak, then a cosine decay to ``final_lr_frac`` of the peak over
``decay_frac`` of the nominal steps, starting at the anneal start.

The anneal start is not a scheduler attribute (those are not checkpointed): it lives in
:class:`AnnealControl`, a callback whose ``state_dict`` Composer saves, so a plugin that moves
it (e.g. a stall-triggered anneal) survives a resume. Without such a move, the anneal starts
as planned at ``nominal_steps * (1 - decay_frac)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from composer.core import Callback, State
from composer.loggers import Logger


@dataclass
class WSDShape:
    """The schedule in batches (optimizer steps)."""

    nominal_steps: int
    warmup_frac: float = 0.04
    decay_frac: float = 0.20
    final_lr_frac: float = 0.02

    @property
    def warmup_steps(self) -> int:
        return max(1, round(self.nominal_steps * self.warmup_frac))

    @property
    def decay_steps(self) -> int:
        return max(1, round(self.nominal_steps * self.decay_frac))

    @property
    def planned_anneal_start(self) -> int:
        return self.nominal_steps - self.decay_steps

    def multiplier(self, step: int, anneal_start: int | None = None) -> float:
        """LR multiplier (of the peak) at optimizer step ``step`` (0-based)."""
        start = self.planned_anneal_start if anneal_start is None else anneal_start
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        if step < start:
            return 1.0
        progress = min(1.0, (step - start) / self.decay_steps)
        floor = self.final_lr_frac
        return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


class AnnealControl(Callback):
    """Holds the anneal start (checkpointed) and ends the run when the anneal is over.

    ``anneal_start`` (batches) is ``None`` until a plugin moves it; :meth:`start_anneal_at`
    moves it. When the decay has run its course (``anneal_start + decay_steps`` batches), the
    run is marked complete in this callback's state and stopped, so that an autoresumed job
    does not train on (Composer's ``stop_training`` alone is not persisted).
    """

    def __init__(self, shape: WSDShape) -> None:
        self.shape = shape
        self.anneal_start: int | None = None
        self.complete = False

    @property
    def effective_start(self) -> int:
        return self.shape.planned_anneal_start if self.anneal_start is None else self.anneal_start

    @property
    def anneal_end(self) -> int:
        return self.effective_start + self.shape.decay_steps

    def start_anneal_at(self, step: int) -> None:
        """Move the anneal start to optimizer step ``step`` (only earlier or later than now)."""
        self.anneal_start = int(step)

    def fit_start(self, state: State, logger: Logger) -> None:
        if self.complete or int(state.timestamp.batch) >= self.anneal_end:
            print(f"[stoicheia] run already complete at batch {int(state.timestamp.batch)} (anneal ended at {self.anneal_end}); nothing to do")
            self.complete = True
            state.stop_training()

    def batch_end(self, state: State, logger: Logger) -> None:
        if int(state.timestamp.batch) >= self.anneal_end and not self.complete:
            self.complete = True
            logger.log_metrics({"schedule/complete": 1})
            state.stop_training()

    def state_dict(self) -> dict[str, Any]:
        return {"anneal_start": self.anneal_start, "complete": self.complete}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.anneal_start = state.get("anneal_start")
        self.complete = bool(state.get("complete", False))


class WSDScheduler:
    """Composer scheduler (``state -> multiplier``) reading the anneal start from an
    :class:`AnnealControl`. Note Composer applies it one batch late (batch b uses f(b-1))."""

    def __init__(self, control: AnnealControl) -> None:
        self.control = control

    def __call__(self, state: State, ssr: float = 1.0) -> float:
        step = int(state.timestamp.batch)
        return self.control.shape.multiplier(step, self.control.effective_start)
