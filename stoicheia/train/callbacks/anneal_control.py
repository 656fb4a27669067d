"""The anneal start and the end of the run, checkpointed: the core the other plugins steer.

:class:`AnnealControl` is always part of a run. Other plugins move the anneal start
(:class:`~stoicheia.train.callbacks.auto_anneal.AutoAnneal`) or end the run early
(:class:`~stoicheia.train.callbacks.anneal_early_stop.AnnealEarlyStop`) through its
:meth:`~AnnealControl.decide` and :meth:`~AnnealControl.finish`; the WSD scheduler reads
:attr:`~AnnealControl.effective_start`. Its state is in ``state_dict`` because Composer does not
checkpoint scheduler attributes, nor that a run was stopped.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from composer.core import Callback, State
from composer.loggers import Logger
from composer.utils import dist

from stoicheia.train import run_files
from stoicheia.train.schedule import WSDShape

log = logging.getLogger(__name__)


class AnnealControl(Callback):
    """Holds the anneal start (batches) and whether the run is complete.

    Before a decision the schedule assumes the planned start
    (``nominal_steps - decay_steps``); with automatic annealing (:attr:`auto`, set by
    ``AutoAnneal``) it keeps the peak LR until the decision, at the latest at the cap
    ``max_steps - decay_steps``. Without automatic annealing the anneal starts as planned.
    The decay keeps its length: the run ends at ``anneal_start + decay_steps`` batches, or
    earlier through :meth:`finish`.

    At the end of the run (``FIT_END`` of a complete run) it writes ``final.pt`` and
    ``complete.json`` into the run folder (see :mod:`stoicheia.train.run_files`).

    Args:
        shape: the WSD schedule in batches.
        max_steps: hard maximum of batches (``train.max_steps``).
        run_folder: local run folder for the marker files (``None``: write none, for tests).
        save_folder: ``train.save_folder`` (local path or object-store URI) for ``final.pt``.
    """

    def __init__(
        self,
        shape: WSDShape,
        max_steps: int,
        run_folder: Path | None = None,
        save_folder: str | None = None,
    ) -> None:
        self.shape = shape
        self.max_steps = int(max_steps)
        self.run_folder = Path(run_folder) if run_folder is not None else None
        self.save_folder = (
            save_folder if save_folder is not None else (str(run_folder) if run_folder else "")
        )
        self.auto = False
        self.anneal_start: int | None = None
        self.reason: str | None = None
        self.complete = False
        self.end_reason: str | None = None
        self.end_step: int | None = None

    # --- the schedule ------------------------------------------------------------------
    @property
    def cap(self) -> int:
        """Latest anneal start: ``max_steps - decay_steps``."""
        return self.max_steps - self.shape.decay_steps

    @property
    def decided(self) -> bool:
        """True once the anneal start is fixed."""
        return self.anneal_start is not None

    @property
    def effective_start(self) -> int:
        """The anneal start the schedule uses now (batches)."""
        if self.anneal_start is not None:
            return self.anneal_start
        return self.cap if self.auto else self.shape.planned_anneal_start

    @property
    def anneal_end(self) -> int:
        """The batch at which the decay ends and the run stops."""
        return self.effective_start + self.shape.decay_steps

    def start_anneal_at(self, step: int) -> None:
        """Set the anneal start to batch ``step`` without a marker (tests, tools)."""
        self.anneal_start = int(step)

    def decide(self, step: int, reason: str, evidence: dict[str, Any] | None = None) -> None:
        """Start the anneal at batch ``step`` (reason ``stall``, ``cap`` or ``planned``): logs
        it and, on rank 0, writes ``anneal.json``. Every rank must call it with the same
        arguments (callers take rank 0's decision)."""
        self.anneal_start = int(step)
        self.reason = reason
        planned = self.shape.planned_anneal_start
        if step == planned:
            when = "at the planned start"
        else:
            when = (
                f"{planned - step} batches before"
                if step < planned
                else f"{step - planned} batches after"
            ) + f" the planned start {planned}"
        log.info(
            "[anneal] step %d: anneal starts (%s, %s); the decay runs %d batches, the run ends at "
            "batch %d",
            step,
            reason,
            when,
            self.shape.decay_steps,
            self.anneal_end,
        )
        if self.run_folder is not None and dist.get_global_rank() == 0:
            self._write_marker(evidence=evidence)

    def finish(self, state: State, reason: str) -> None:
        """Mark the run complete (``anneal_done`` or ``early_stop``) and stop training after
        this batch; the completion is checkpointed."""
        if self.complete:
            return
        self.complete = True
        self.end_reason = reason
        self.end_step = int(state.timestamp.batch)
        state.stop_training()

    # --- events ------------------------------------------------------------------------
    def fit_start(self, state: State, logger: Logger) -> None:
        # a run already complete never gets here: stoicheia.train.run.already_complete decides it
        step = int(state.timestamp.batch)
        shape = self.shape
        if not self.decided and not self.auto and step > shape.planned_anneal_start:
            # resumed past the planned start without a decision (automatic annealing was
            # switched off mid-run): anneal from here, not from a batch already trained
            self.decide(step, "planned")
        log.info(
            "[run] step %d: schedule: warmup %d, planned anneal start %d, decay %d batches, %s, "
            "max_steps %d",
            step,
            shape.warmup_steps,
            shape.planned_anneal_start,
            shape.decay_steps,
            f"latest anneal start (cap) {self.cap}" if self.auto else "automatic anneal off",
            self.max_steps,
        )
        if self.decided:
            log.info(
                "[run] step %d: the anneal started at batch %d (%s); it ends at batch %d",
                step,
                self.anneal_start,
                self.reason,
                self.anneal_end,
            )
            if (
                self.run_folder is not None
                and dist.get_global_rank() == 0
                and run_files.read_json(self.run_folder, run_files.ANNEAL) is None
            ):
                # a new run started from another run's checkpoint (e.g. pre_anneal.pt): record
                # the decision it inherited, with this run's decay length and end
                self._write_marker(inherited=True)

    def _write_marker(
        self, evidence: dict[str, Any] | None = None, inherited: bool = False
    ) -> None:
        """``anneal.json`` of the decision taken (rank 0 only)."""
        assert self.run_folder is not None and self.anneal_start is not None
        run_files.write_anneal(
            self.run_folder,
            step=self.anneal_start,
            reason=self.reason,
            planned_start=self.shape.planned_anneal_start,
            cap=self.cap,
            decay_steps=self.shape.decay_steps,
            end=self.anneal_end,
            evidence=evidence,
            inherited=inherited,
        )

    def check_fits(self) -> None:
        """Raise ``ValueError`` if a decided anneal would end after ``max_steps`` (the run would
        stop in the middle of its decay)."""
        if self.decided and not self.complete and self.anneal_end > self.max_steps:
            raise ValueError(
                f"the anneal started at batch {self.anneal_start} and its decay of "
                f"{self.shape.decay_steps} batches ends at batch {self.anneal_end}, after "
                f"train.max_steps={self.max_steps}: raise train.max_steps to at least "
                f"{self.anneal_end} (or shorten train.decay_frac)"
            )

    def batch_end(self, state: State, logger: Logger) -> None:
        step = int(state.timestamp.batch)
        if not self.decided and not self.auto and step >= self.shape.planned_anneal_start:
            # step > planned only when a run resumed past it without a decision (automatic
            # annealing switched off mid-run): anneal from now, not from a batch already trained
            self.decide(step, "planned")
        if self.decided and step >= self.anneal_end:
            self.finish(state, "anneal_done")
        logger.log_metrics(
            {"schedule/anneal_started": float(self.decided and step >= self.effective_start)}
        )

    def fit_end(self, state: State, logger: Logger) -> None:
        if self.complete:
            self.write_completion(state, logger)

    def write_completion(self, state: State, logger: Logger) -> None:
        """Write ``final.pt`` and ``complete.json`` (collective: every rank calls it)."""
        if self.run_folder is None:
            return
        final = run_files.save_named_checkpoint(
            state, logger, self.run_folder, self.save_folder, "final"
        )
        if dist.get_global_rank() != 0:
            return
        try:
            best = run_files.read_json(self.run_folder, run_files.BEST)
        except ValueError as err:
            log.warning("[run] %s", err)
            best = None
        run_files.write_complete(
            self.run_folder,
            step=int(state.timestamp.batch),
            reason=self.end_reason,
            anneal_start=self.anneal_start,
            anneal_reason=self.reason,
            final=final.name,
            best=best,
        )
        what = (
            "early stop: the decision metric stopped improving during the anneal"
            if self.end_reason == "early_stop"
            else "the anneal is done"
        )
        best_txt = (
            f"best.pt (step {best['step']}, {best['metric']} {best['value']:.4f})"
            if best
            else "final.pt"
        )
        log.info(
            "[run] step %d: run complete (%s); use %s; final state in %s",
            int(state.timestamp.batch),
            what,
            best_txt,
            final,
        )

    def state_dict(self) -> dict[str, Any]:
        return {
            "anneal_start": self.anneal_start,
            "reason": self.reason,
            "complete": self.complete,
            "end_reason": self.end_reason,
            "end_step": self.end_step,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.anneal_start = state.get("anneal_start")
        self.reason = state.get("reason")
        self.complete = bool(state.get("complete", False))
        self.end_reason = state.get("end_reason")
        self.end_step = state.get("end_step")
