"""Keep the model of the best evaluation: ``best.pt`` (replaced atomically) and ``best.json``."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from composer.core import Callback, State
from composer.loggers import Logger
from composer.utils import dist

from stoicheia.train import run_files
from stoicheia.train.decision import from_rank0, improves, metric_mode, read_decision_metric

log = logging.getLogger(__name__)


class BestCheckpoint(Callback):
    """After each evaluation whose decision metric is the best so far, save the full training
    state as ``best.pt`` (replaced atomically) in the run folder (uploaded too when
    ``save_folder`` is an object store) and describe it in ``best.json`` (step, metric, value).

    The best value and step are checkpointed with the metric's name; a run resumed with
    another ``decide_on`` starts a new best. The file is written at ``BATCH_CHECKPOINT`` of
    the evaluation's batch (after the evaluation, with the data position of that batch).

    Args:
        decide_on, run_folder, save_folder: injected (``train.decide_on``, the local run
            folder, ``train.save_folder``).
        min_delta: improvement (metric units) needed to count as a new best.
    """

    def __init__(
        self, decide_on: str, run_folder: Path, save_folder: str, min_delta: float = 0.0
    ) -> None:
        self.decide_on = decide_on
        self.mode = metric_mode(decide_on)
        self.run_folder = Path(run_folder)
        self.save_folder = save_folder
        if not min_delta >= 0:
            raise ValueError(f"best_checkpoint.min_delta must be >= 0, got {min_delta}")
        self.min_delta = float(min_delta)
        self.metric = decide_on
        self.best_value: float | None = None
        self.best_step: int | None = None
        self._pending = False

    def eval_after_all(self, state: State, logger: Logger) -> None:
        value = from_rank0(read_decision_metric(state, self.decide_on))
        if improves(value, self.best_value, self.mode, self.min_delta):
            self.best_value, self.best_step = value, int(state.timestamp.batch)
            self._pending = True
        logger.log_metrics(
            {"best/value": self.best_value if self.best_value is not None else float("nan")}
        )

    def batch_checkpoint(self, state: State, logger: Logger) -> None:
        if not self._pending:
            return
        self._pending = False
        path = run_files.save_named_checkpoint(
            state, logger, self.run_folder, self.save_folder, "best"
        )
        if dist.get_global_rank() == 0:
            self._write_marker(path.name)
            log.info(
                "[best] step %d: new best %s %.4f, saved %s",
                self.best_step,
                self.metric,
                self.best_value,
                path,
            )

    def fit_start(self, state: State, logger: Logger) -> None:
        # best.json is a copy of this state for people and tools: put it back if it is gone
        if (
            self.best_step is None
            or dist.get_global_rank() != 0
            or not (self.run_folder / "best.pt").exists()
        ):
            return
        try:
            ok = run_files.read_json(self.run_folder, run_files.BEST) is not None
        except ValueError:
            ok = False
        if not ok:
            self._write_marker("best.pt")
            log.warning(
                "[best] rewrote %s from the checkpointed state (step %d)",
                self.run_folder / run_files.BEST,
                self.best_step,
            )

    def _write_marker(self, file: str) -> None:
        run_files.write_best(
            self.run_folder,
            step=self.best_step,
            metric=self.metric,
            value=self.best_value,
            file=file,
        )

    def state_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "best_value": self.best_value, "best_step": self.best_step}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.metric = state.get("metric", self.decide_on)
        self.best_value = state.get("best_value")
        self.best_step = state.get("best_step")
        if self.metric != self.decide_on:
            log.info(
                "[best] decision metric changed from %s to %s: the best starts again",
                self.metric,
                self.decide_on,
            )
            self.metric, self.best_value, self.best_step = self.decide_on, None, None
