"""Stall-triggered, symmetric anneal start: earlier than planned when learning stalls, later
when the model is still improving at the planned start."""

from __future__ import annotations

import logging
from typing import Any

from composer.core import Callback, State
from composer.loggers import Logger

from stoicheia.train.callbacks.anneal_control import AnnealControl
from stoicheia.train.decision import from_rank0, metric_mode, read_decision_metric

log = logging.getLogger(__name__)


def is_stalled(values: list[float], window: int, eps: float, mode: str = "min") -> bool:
    """The stall test over the last ``window`` values (oldest first).

    Stalled when the best of the newer half is not better than the best of the older half
    by at least ``eps`` (gain < ``eps``) (in the metric's unit, e.g. bits). Fewer than
    ``window`` values: not stalled (there is not enough evidence).
    """
    if window < 2 or len(values) < window:
        return False
    recent = values[-window:]
    half = window // 2
    older, newer = recent[:half], recent[half:]
    if mode == "min":
        gain = min(older) - min(newer)
    else:
        gain = max(newer) - max(older)
    return not gain >= eps  # a NaN gain (non-finite evaluations) counts as a stall


class AutoAnneal(Callback):
    """Decides the anneal start from the decision metric (``train.decide_on``).

    * At every evaluation (``EVAL_AFTER_ALL``) the value is appended to a window. From
      ``min_anneal_frac`` of the nominal steps on (never inside the warmup), a stall
      (:func:`is_stalled` over the last ``stall_window`` evaluations: the best of the newer
      half is not at least ``stall_eps`` better than the best of the older half) starts the
      anneal at this batch.
    * At the planned start (``nominal_steps - decay_steps``): if the window is full and the
      model still improves, the peak LR is kept ("stable phase extended") until a stall or the
      cap; otherwise (too few evaluations to judge, or stalled) the anneal starts as planned.
    * At the cap ``max_steps - decay_steps`` the anneal starts whatever the curve.

    The decay keeps its planned length (``train.decay_frac`` x ``train.nominal_steps``): the
    run ends at the anneal start + that length. ``callbacks.auto_anneal: false`` keeps the
    planned schedule. Rank 0's value and decision are broadcast, so every
    rank acts at the same batch. The window is checkpointed with the name of its metric; a
    run resumed with another ``decide_on`` starts a new window.

    Args:
        control: the run's :class:`AnnealControl` (injected).
        decide_on: ``SET/METRIC`` (injected from ``train.decide_on``).
        stall_window: evaluations in the stall test (>= 2).
        stall_eps: improvement (metric units, bits for ``bits_per_char``) that counts.
        min_anneal_frac: earliest anneal start, as a fraction of ``train.nominal_steps``.
    """

    def __init__(
        self,
        control: AnnealControl,
        decide_on: str,
        stall_window: int = 8,
        stall_eps: float = 0.002,
        min_anneal_frac: float = 0.35,
    ) -> None:
        if stall_window < 2:
            raise ValueError(f"auto_anneal.stall_window must be >= 2, got {stall_window}")
        if stall_eps < 0:
            raise ValueError(f"auto_anneal.stall_eps must be >= 0, got {stall_eps}")
        if not 0.0 <= min_anneal_frac <= 1.0:
            raise ValueError(
                f"auto_anneal.min_anneal_frac must be in [0, 1], got {min_anneal_frac}"
            )
        self.control = control
        control.auto = True
        self.decide_on = decide_on
        self.mode = metric_mode(decide_on)
        self.stall_window = int(stall_window)
        self.stall_eps = float(stall_eps)
        self.min_anneal_frac = float(min_anneal_frac)
        self.metric = decide_on
        self.window: list[tuple[int, float]] = []
        self.extended = False

    @property
    def earliest(self) -> int:
        """The earliest batch at which a stall may start the anneal: ``min_anneal_frac`` of the
        nominal steps, and never inside the warmup (the LR would still be rising)."""
        return max(
            round(self.min_anneal_frac * self.control.shape.nominal_steps),
            self.control.shape.warmup_steps,
        )

    def _values(self) -> list[float]:
        return [v for _, v in self.window]

    def _evidence(self) -> dict[str, Any]:
        return {
            "decide_on": self.metric,
            "stall_window": self.stall_window,
            "stall_eps": self.stall_eps,
            "evaluations": [[s, v] for s, v in self.window[-self.stall_window :]],
        }

    def fit_start(self, state: State, logger: Logger) -> None:
        if not self.control.decided:
            log.info(
                "[anneal] automatic anneal: decides from %s; stalled when the best of the last %d "
                "evaluations' newer half is less than %g better than the older half's; not before "
                "batch %d; at the planned start %d, a model still improving keeps its peak LR, at "
                "the latest until batch %d",
                self.decide_on,
                self.stall_window,
                self.stall_eps,
                self.earliest,
                self.control.shape.planned_anneal_start,
                self.control.cap,
            )

    def eval_after_all(self, state: State, logger: Logger) -> None:
        value = read_decision_metric(state, self.decide_on)
        step = int(state.timestamp.batch)
        value = from_rank0(value)
        self.window.append((step, value))
        self.window = self.window[-max(self.stall_window, 2) * 4 :]
        if self.control.decided or step < self.earliest:
            return
        stalled = from_rank0(
            is_stalled(self._values(), self.stall_window, self.stall_eps, self.mode)
        )
        if stalled:
            self.control.decide(step, "stall", self._evidence())

    def batch_end(self, state: State, logger: Logger) -> None:
        if self.control.decided:
            return
        step = int(state.timestamp.batch)
        if step >= self.control.cap:
            self.control.decide(step, "cap", self._evidence())
            return
        planned = self.control.shape.planned_anneal_start
        if step >= planned and not self.extended:
            full = len(self.window) >= self.stall_window
            stalled = is_stalled(self._values(), self.stall_window, self.stall_eps, self.mode)
            if full and not stalled:
                self.extended = True
                log.info(
                    "[anneal] step %d: stable phase extended: %s still improves at the planned "
                    "anneal start %d (peak LR kept until it stalls, at the latest until batch %d)",
                    step,
                    self.metric,
                    planned,
                    self.control.cap,
                )
            else:
                why = "stall" if stalled else "planned"
                evidence = self._evidence()
                if not full:
                    evidence["note"] = (
                        f"only {len(self.window)} of the {self.stall_window} evaluations the stall "
                        "test needs"
                    )
                self.control.decide(step, why, evidence)

    def state_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "window": [[s, v] for s, v in self.window],
            "extended": self.extended,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.metric = state.get("metric", self.decide_on)
        self.window = [(int(s), float(v)) for s, v in state.get("window", [])]
        self.extended = bool(state.get("extended", False))
        if self.metric != self.decide_on:
            log.info(
                "[anneal] decision metric changed from %s to %s: the stall window starts again",
                self.metric,
                self.decide_on,
            )
            # the window restarts; an extension already granted stands (a past decision)
            self.metric, self.window = self.decide_on, []
