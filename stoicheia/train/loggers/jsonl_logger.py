"""A metric log any script can read: one JSON object per step in a ``.jsonl`` file."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import torch
from composer.core import State
from composer.loggers import Logger, LoggerDestination


class JSONLLogger(LoggerDestination):
    """Appends one JSON object per step (``{"step": ..., name: value, ...}``) to ``path``.

    Only rank 0 writes. Values logged for the same step are merged into one line, written
    when a later step arrives or at close; the file is flushed every line so a killed run
    keeps everything but the step in flight.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._step: int | None = None
        self._row: dict[str, Any] = {}
        self._fh = None

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
        if step != self._step:
            self._flush()
            self._step = step
        for k, v in metrics.items():
            if isinstance(v, torch.Tensor):
                v = v.item() if v.numel() == 1 else v.tolist()
            self._row[k] = v

    def _flush(self) -> None:
        if self._row and self._open() is not None:
            self._fh.write(json.dumps({"step": self._step, "time": time.time(), **self._row}, default=float) + "\n")
            self._fh.flush()
        self._row = {}

    def batch_checkpoint(self, state: State, logger: Logger) -> None:
        # a job killed after this checkpoint resumes at the next step: write this one now
        self._flush()

    def close(self, state: State, logger: Logger) -> None:
        self._flush()
        if self._fh is not None:
            self._fh.close()
            self._fh = None
