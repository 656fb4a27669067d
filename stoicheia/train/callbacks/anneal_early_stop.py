"""Stop the anneal when it stops paying: no new best of the decision metric for
``patience`` evaluations, from the middle of the decay window on."""

from __future__ import annotations

import logging
from typing import Any

from composer.core import Callback, State
from composer.loggers import Logger

from stoicheia.train.callbacks.anneal_control import AnnealControl
from stoicheia.train.decision import from_rank0, improves, metric_mode, read_decision_metric

log = logging.getLogger(__name__)


class AnnealEarlyStop(Callback):
    """Like Composer's ``EarlyStopper``, but checkpointed, and active only in the second half
    of the decay window.

    At each evaluation it counts the evaluations since the decision metric last reached a
    new best (over the whole run). Once the batch is at or past ``anneal_start + decay/2``
    and that count reaches ``patience``, the run ends (:meth:`AnnealControl.finish` with
    reason ``early_stop``): ``final.pt`` is written and ``best.pt`` is the model to use.

    Args:
        control, decide_on: injected.
        patience: evaluations without a new best before stopping; 0 disables the early
            stop.
        min_delta: improvement (metric units) that counts as a new best.
    """

    def __init__(
        self, control: AnnealControl, decide_on: str, patience: int = 3, min_delta: float = 0.0
    ) -> None:
        if patience < 0:
            raise ValueError(
                f"anneal_early_stop.patience must be >= 0 (0 disables), got {patience}"
            )
        self.control = control
        self.decide_on = decide_on
        self.mode = metric_mode(decide_on)
        self.patience = int(patience)
        if not min_delta >= 0:
            raise ValueError(f"anneal_early_stop.min_delta must be >= 0, got {min_delta}")
        self.min_delta = float(min_delta)
        self.metric = decide_on
        self.best: float | None = None
        self.since_best = 0

    def eval_after_all(self, state: State, logger: Logger) -> None:
        value = from_rank0(read_decision_metric(state, self.decide_on))
        if improves(value, self.best, self.mode, self.min_delta):
            self.best, self.since_best = value, 0
        else:
            self.since_best += 1
        if self.patience == 0 or not self.control.decided or self.control.complete:
            return
        step = int(state.timestamp.batch)
        middle = self.control.effective_start + self.control.shape.decay_steps // 2
        if step >= middle and self.since_best >= self.patience:
            log.info(
                "[anneal] step %d: early stop: %s has not improved on %.4f for %d evaluations in "
                "the second half of the decay; best.pt is the model to use",
                step,
                self.metric,
                self.best if self.best is not None else float("nan"),
                self.since_best,
            )
            self.control.finish(state, "early_stop")

    def state_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "best": self.best, "since_best": self.since_best}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.metric = state.get("metric", self.decide_on)
        self.best = state.get("best")
        self.since_best = int(state.get("since_best", 0))
        if self.metric != self.decide_on:
            log.info(
                "[anneal] decision metric changed from %s to %s: the early-stop count starts again",
                self.metric,
                self.decide_on,
            )
            self.metric, self.best, self.since_best = self.decide_on, None, 0
