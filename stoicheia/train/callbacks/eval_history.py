"""Every evaluation of every set, appended to ``evals.jsonl`` in the run folder and printed."""

from __future__ import annotations

import logging
import math
from pathlib import Path

from composer.core import Callback, State
from composer.loggers import Logger
from composer.utils import dist

from stoicheia.train import run_files

log = logging.getLogger(__name__)


class EvalHistory(Callback):
    """At ``EVAL_AFTER_ALL``, appends one line per evaluation set to ``evals.jsonl``:
    ``{"step": batches, "set": label, "metrics": {name: value}, "time": seconds}``, and prints
    one console line per set (with the letter-unigram entropy of the training mix, the
    baseline that ``bits_per_char`` must beat).

    The file survives restarts. After a resume, evaluations between the checkpoint and the
    kill are run again and appear again: the later line for a ``(step, set)`` is the one that
    counts (:func:`read_history`). Decisions are not taken from this file but from the
    plugins' checkpointed state, so a resumed run decides exactly as an uninterrupted one.

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
            run_files.append_jsonl(self.path, rows)
        base = ""
        if self.unigram_bits is not None and math.isfinite(self.unigram_bits):
            base = f"  (letter-unigram entropy of the training mix: {self.unigram_bits:.3f} bits)"
        for i, row in enumerate(rows):
            parts = "  ".join(f"{row['set']}/{k} {v:.4f}" for k, v in row["metrics"].items())
            log.info("[eval] step %6d  %s%s", step, parts, base if i == len(rows) - 1 else "")


def read_history(run_folder: Path) -> list[dict]:
    """The evaluations in ``run_folder/evals.jsonl``, one per ``(step, set)`` (the later line
    wins: a resumed run re-evaluates the steps since its checkpoint), sorted by step. Lines
    that are JSON but no evaluation record (no ``step``, ``set`` or ``metrics`` mapping) are
    left out, and their count logged as a warning."""
    rows: dict[tuple[int, str], dict] = {}
    path = Path(run_folder) / run_files.EVALS
    odd = 0
    for row in run_files.read_jsonl(path):
        try:
            key = (int(row["step"]), str(row["set"]))
            if not isinstance(row["metrics"], dict):
                raise TypeError
        except (KeyError, TypeError, ValueError):
            odd += 1
            continue
        rows[key] = row
    if odd:
        log.warning("%s: %d line(s) are JSON but no evaluation record (step, set, metrics); left out", path, odd)
    return [rows[k] for k in sorted(rows)]
