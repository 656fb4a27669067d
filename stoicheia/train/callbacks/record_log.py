"""``record_log``: which records each step trained on, one JSON line per record and rank.

For data provenance (which texts a checkpoint has seen) and to audit a resume: after an
elastic resume every record of a stream epoch should appear once over all ranks and jobs.
Each rank appends to ``RUN_FOLDER/records-rank{R}.jsonl``::

    {"step": 12, "phase": 0, "epoch": 0, "record": "tlg0020.tlg001#3", "rank": 1}

``step`` is the optimizer step (1-based, as in checkpoint names ``ep0-ba12``) in which the
record's first letters were trained; a record is written once, when its first slot has been
packed into a trained batch. Lines of steps after the last checkpoint are written again by
the resumed job (retrained steps): keep, per step, the lines of the newest job.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from composer.core import Callback, State
from composer.loggers import Logger
from composer.utils import dist

from stoicheia.data.loader import PackedLoader

log = logging.getLogger(__name__)


class RecordLog(Callback):
    """Append the records each step started to ``records-rank{R}.jsonl`` in the run folder.

    Args:
        loader: the run's training loader (injected).
        run_folder: local run folder (injected).
    """

    def __init__(self, loader: PackedLoader, run_folder: str | Path) -> None:
        self.loader = loader
        self.run_folder = Path(run_folder)
        self._last: tuple[int, int, int, int] | None = (
            None  # (phase, epoch, record_batch, item) written last
        )
        self._file = None

    def fit_start(self, state: State, logger: Logger) -> None:
        self.run_folder.mkdir(parents=True, exist_ok=True)
        self._file = open(
            self.run_folder / f"records-rank{dist.get_global_rank()}.jsonl", "a", encoding="utf-8"
        )  # noqa: SIM115
        # Records a resumed job inherits (taken before its checkpoint) were written by the job
        # that took them.
        self._last = None
        pos = self.loader.position
        for epoch, rb, item, _key in self.loader.taken:
            if (epoch, rb, item) < pos.record() or (
                (epoch, rb, item) == pos.record() and pos.in_record()
            ):
                self._last = (pos.phase, epoch, rb, item)

    def batch_end(self, state: State, logger: Logger) -> None:
        if self._file is None:
            return
        pos = self.loader.position
        step = int(state.timestamp.batch)
        for epoch, rb, item, key in self.loader.taken:
            where = (pos.phase, epoch, rb, item)
            if self._last is not None and where <= self._last:
                continue
            started = (epoch, rb, item) < pos.record() or (
                (epoch, rb, item) == pos.record() and pos.in_record()
            )
            if not started:
                break
            self._file.write(
                json.dumps(
                    {
                        "step": step,
                        "phase": pos.phase,
                        "epoch": epoch,
                        "record": key,
                        "rank": dist.get_global_rank(),
                    }
                )
                + "\n"
            )
            self._last = where
        self._file.flush()

    def fit_end(self, state: State, logger: Logger) -> None:
        self.close(state, logger)

    def close(self, state: State, logger: Logger) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
