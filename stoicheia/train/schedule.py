"""WSD (warmup-stable-decay) learning-rate schedule as a Composer scheduler.

Shape (Hägele et al. 2024, "Scaling Laws and Compute-Optimal Training Beyond Fixed Training
Durations"; Hu et al. 2024, MiniCPM): linear warmup over ``warmup_frac`` of the nominal
steps, a flat peak, then a cosine decay to ``final_lr_frac`` of the peak over
``decay_frac`` of the nominal steps, starting at the anneal start.

The anneal start is not a scheduler attribute (those are not checkpointed): it lives in
:class:`stoicheia.train.callbacks.anneal_control.AnnealControl`, a callback whose
``state_dict`` Composer saves, so a plugin that moves it (the stall-triggered
:class:`~stoicheia.train.callbacks.auto_anneal.AutoAnneal`) survives a resume. Without such a
plugin the anneal starts as planned at ``nominal_steps * (1 - decay_frac)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from composer.core import State


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


class WSDScheduler:
    """Composer scheduler (``state -> multiplier``) of ``shape`` with the anneal start that
    ``anneal_start()`` gives now (in batches): the run passes
    ``lambda: control.effective_start`` of its
    :class:`~stoicheia.train.callbacks.anneal_control.AnnealControl`, whose checkpointed state
    holds it. Note Composer applies it one batch late (batch b uses f(b-1))."""

    def __init__(self, shape: WSDShape, anneal_start: Callable[[], int]) -> None:
        self.shape = shape
        self.anneal_start = anneal_start

    def __call__(self, state: State, ssr: float = 1.0) -> float:
        step = int(state.timestamp.batch)
        return self.shape.multiplier(step, self.anneal_start())
