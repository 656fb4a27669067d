"""Every evaluation of every set, appended to ``evals.jsonl`` in the run folder and printed."""

from __future__ import annotations

import logging
from pathlib import Path

from composer.core import Callback, State
from composer.loggers import Logger
from composer.utils import dist

from stoicheia.publish import WriteError
from stoicheia.train import run_files
from stoicheia.train.console import eval_lines
from stoicheia.train.run_files import read_history  # noqa: F401  (its home before; kept importable)

log = logging.getLogger(__name__)


class EvalHistory(Callback):
    """At ``EVAL_AFTER_ALL``, appends one line per evaluation set to ``evals.jsonl``:
    ``{"step": batches, "set": label, "metrics": {name: value}, "time": seconds}``, and prints
    one console line per set (with the letter-unigram entropy of the training mix, the
    baseline that ``bits_per_char`` must beat).

    The file survives restarts. After a resume, evaluations between the checkpoint and the
    kill are run again and appear again: the later line for a ``(step, set)`` is the one that
    counts (:func:`~stoicheia.train.run_files.read_history`). Decisions are not taken from this
    file but from the plugins' checkpointed state, so a resumed run decides exactly as an
    uninterrupted one.

    Args:
        run_folder: where ``evals.jsonl`` goes (``None``: print only).
        unigram_bits: letter-unigram entropy of the training mix in bits, or ``None``.
    """

    def __init__(self, run_folder: Path | None = None, unigram_bits: float | None = None) -> None:
        self.path = Path(run_folder) / run_files.EVALS if run_folder is not None else None
        self.unigram_bits = unigram_bits

    def eval_after_all(self, state: State, logger: Logger) -> None:
        step = int(state.timestamp.batch)
        rows = []
        for label, metrics in state.eval_metrics.items():
            values = {name: float(metric.compute()) for name, metric in metrics.items()}
            rows.append({"step": step, "set": label, "metrics": values, "time": run_files.now()})
        if dist.get_global_rank() != 0:
            return
        if self.path is not None:
            try:
                run_files.append_jsonl(self.path, rows)
            except WriteError as err:  # a full disk: counted; the next checkpoint save stops
                run_files.drop_log_lines(err, len(rows))
        for line in eval_lines(
            step, {row["set"]: row["metrics"] for row in rows}, self.unigram_bits
        ):
            log.info(line)
