"""A metric log any script can read: one JSON object per step in a ``.jsonl`` file."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import torch
from composer.core import State
from composer.loggers import Logger, LoggerDestination

from stoicheia.publish import write_failure
from stoicheia.train import run_files


class JSONLLogger(LoggerDestination):
    """Appends one JSON object per step (``{"step": ..., name: value, ...}``) to
    ``metrics_file`` (``train.metrics_file``, injected).

    Only rank 0 writes. Values logged for the same step are merged into one line, written
    when a later step arrives, at the step's ``BATCH_CHECKPOINT`` or at close; the file is
    flushed every line so a killed run keeps everything but the step in flight.

    Step ``s`` is the line of the batch that brings the run to ``s`` batches. Composer logs
    what it measures during a batch (``time/*`` at its start, ``loss/train/*``) with the count
    before the batch (``s - 1``), our callbacks at ``BATCH_END`` with the count after it
    (``s``): values logged inside a batch with its starting count go to the line of ``s``, so
    each step has one line (not a ``time/*`` line beside the loss line). A row of Composer's
    ``time/*`` counters alone (logged at an epoch's start and at the end of fit, after the
    step's line) repeats the step and is not written.
    """

    def __init__(self, metrics_file: str | Path) -> None:
        self.path = Path(metrics_file)
        self._step: int | None = None
        self._row: dict[str, Any] = {}
        self._fh = None
        self._batch_from: int | None = (
            None  # the batch count at BATCH_START of the batch in progress
        )

    def _open(self):
        from composer.utils import dist

        if self._fh is None and dist.get_global_rank() == 0:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            cut = False
            if self.path.exists() and self.path.stat().st_size > 0:
                with open(self.path, "rb") as fh:
                    fh.seek(-1, 2)
                    cut = fh.read(1) != b"\n"
            self._fh = open(self.path, "a", encoding="utf-8")
            if cut:  # a kill cut the last line: end it, so the next row is not glued to it
                self._fh.write("\n")
        return self._fh

    def log_metrics(self, metrics: dict[str, Any], step: int | None = None) -> None:
        if step is not None and step == self._batch_from:
            step += 1  # measured during the batch in progress: the line of the step it completes
        if step != self._step:
            self._flush()
            self._step = step
        for k, v in metrics.items():
            if isinstance(v, torch.Tensor):
                v = v.item() if v.numel() == 1 else v.tolist()
            self._row[k] = v

    def _flush(self) -> None:
        if self._row and all(k.startswith("time/") for k in self._row):
            # Composer's time counters alone (at an epoch's start, at the end of fit): they
            # repeat the step and would make a second line for a step already written
            self._row = {}
            return
        if self._row and self._open() is not None:
            try:
                self._fh.write(
                    json.dumps(
                        {"step": self._step, "time": time.time(), **self._row}, default=float
                    )
                    + "\n"
                )
                self._fh.flush()
            except OSError as err:
                self._dropped(err)
        self._row = {}

    def _dropped(self, err: OSError) -> None:
        """A line the disk refused (full, size limit): counted and warned about once; the file
        is reopened for the next line (a cut line is ended then). Other errors are raised."""
        failure = write_failure(err, self.path)
        if failure is None:
            raise err
        fh, self._fh = self._fh, None
        with contextlib.suppress(OSError):
            fh.close()
        run_files.drop_log_lines(failure, 1)

    def batch_start(self, state: State, logger: Logger) -> None:
        self._batch_from = int(state.timestamp.batch)

    def batch_end(self, state: State, logger: Logger) -> None:
        self._batch_from = None

    def batch_checkpoint(self, state: State, logger: Logger) -> None:
        # a job killed after this checkpoint resumes at the next step: write this one now
        self._flush()

    def close(self, state: State, logger: Logger) -> None:
        self._flush()
        if self._fh is not None:
            self._fh.close()
            self._fh = None
