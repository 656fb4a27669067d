"""Console output of a training job: once per job, through ``logging``.

Every module logs to its own module logger (``logging.getLogger(__name__)``, as Composer
does). :func:`configure_console` gives the ``stoicheia`` logger one handler that prints the
message text to the current ``sys.stdout``: INFO and above on global rank 0, only ERROR on the
other ranks, so a line appears once per job, not once per process.
"""

from __future__ import annotations

import logging
import sys


class _StdoutHandler(logging.StreamHandler):
    """A stream handler that writes to whatever ``sys.stdout`` is at emit time (so output
    redirected or captured after start-up still receives it)."""

    def __init__(self) -> None:
        super().__init__(sys.stdout)

    @property  # type: ignore[override]
    def stream(self):
        return sys.stdout

    @stream.setter
    def stream(self, value) -> None:  # StreamHandler.__init__ assigns it
        pass


def configure_console(global_rank: int) -> None:
    """Route the ``stoicheia`` loggers to stdout: INFO on rank 0, ERROR elsewhere. Idempotent."""
    logger = logging.getLogger("stoicheia")
    for h in list(logger.handlers):
        if isinstance(h, _StdoutHandler):
            logger.removeHandler(h)
    handler = _StdoutHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if global_rank == 0 else logging.ERROR)
    logger.propagate = False


def eval_lines(
    step: int, sets: dict[str, dict[str, float]], unigram_bits: float | None = None
) -> list[str]:
    """The console lines of one evaluation at batch ``step``: one per set (``holdout``,
    ``dev``), ``set/metric value`` pairs, the last line followed by the letter-unigram entropy
    of the training mix (:func:`stoicheia.data.corpus_stats.mixture_unigram_entropy`, in bits: the
    baseline ``bits_per_char`` must beat) when known. The training console and ``stoicheia
    evaluate`` print the same lines."""
    import math

    base = ""
    if unigram_bits is not None and math.isfinite(unigram_bits):
        base = f"  (letter-unigram entropy of the training mix: {unigram_bits:.3f} bits)"
    lines = []
    for i, (label, metrics) in enumerate(sets.items()):
        parts = "  ".join(f"{label}/{k} {v:.4f}" for k, v in metrics.items())
        lines.append(f"[eval] step {step:6d}  {parts}{base if i == len(sets) - 1 else ''}")
    return lines
