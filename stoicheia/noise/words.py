"""Word structure and the small samplers the patterns share."""

from __future__ import annotations

import numpy as np

from stoicheia.text.alphabet import BOUNDARY_SENTENCE, BOUNDARY_UNKNOWN, BOUNDARY_WORD

#: Pseudo-word lengths for records without word division: uniform in [min, max].
PSEUDO_WORD_MIN = 2
PSEUDO_WORD_MAX = 8


def word_starts(boundary: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Bool ``(n,)``: True at the first letter of every word (always at letter 0)."""
    n = boundary.shape[0]
    ws = np.empty(n, dtype=bool)
    ws[0] = True
    if boundary[0] == BOUNDARY_UNKNOWN and (boundary == BOUNDARY_UNKNOWN).all():
        # No word division recorded: pseudo-words of 2..8 letters (see module docstring).
        lens = PSEUDO_WORD_MIN + uniform_int(
            rng, PSEUDO_WORD_MAX - PSEUDO_WORD_MIN + 1, n // PSEUDO_WORD_MIN + 1
        )
        cs = np.cumsum(lens)
        ws[1:] = False
        ws[cs[cs < n]] = True
        return ws
    # a word starts after a letter with boundary 1 or 2 <=> boundary - 1 in {0, 1}, where the
    # uint8 subtraction wraps 0 - 1 to 255
    np.less_equal(
        boundary[:-1] - np.uint8(BOUNDARY_WORD), BOUNDARY_SENTENCE - BOUNDARY_WORD, out=ws[1:]
    )
    return ws


def word_spans(ws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start index and length of every word, two int64 ``(n_words,)`` arrays."""
    starts = np.flatnonzero(ws)
    lens = np.empty_like(starts)
    np.subtract(starts[1:], starts[:-1], out=lens[:-1])
    lens[-1] = ws.shape[0] - starts[-1]
    return starts, lens


def stochastic_count(sizes: np.ndarray, k: int, rng: np.random.Generator) -> int:
    """How many leading items of ``sizes`` to take so that the expected total is ``k``.

    Items are taken while the running total stays below ``k``; the item that reaches ``k``
    is taken with probability ``(k - total_before) / size``, so ``E[total] = k`` whenever
    ``k <= sizes.sum()`` (else every item is taken).
    """
    if k <= 0 or sizes.size == 0:
        return 0
    cs = np.cumsum(sizes)
    j = int(cs.searchsorted(k))
    if j >= sizes.size:
        return int(sizes.size)
    before = int(cs[j - 1]) if j > 0 else 0
    if rng.random() * int(sizes[j]) < k - before:
        return j + 1
    return j


def runs_mask(n: int, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Bool ``(n,)``, True on every ``[starts[i], starts[i] + lengths[i])``.

    The runs must not overlap, and the starts (resp. the ends) must be distinct.
    """
    if starts.size <= 16:
        # a few slice assignments beat the ~5 numpy calls of the difference array below
        mask = np.zeros(n, dtype=bool)
        for s, length in zip(starts.tolist(), lengths.tolist(), strict=True):
            mask[s : s + length] = True
        return mask
    d = np.zeros(n + 1, dtype=np.int8)
    d[starts] = 1
    d[starts + lengths] -= 1  # an end that is another run's start gives 0: the run goes on
    return d[:n].cumsum() > 0


def uniform_int(rng: np.random.Generator, high: int | np.ndarray, size: int) -> np.ndarray:
    """``size`` uniform integers in ``0..high-1`` (``high`` scalar or ``(size,)``), int64.

    ``floor(U * high)`` with ``U ~ U[0, 1)``: uniform up to float rounding (~2**-53), and a
    few microseconds cheaper per call than ``Generator.integers``, which matters at one call
    per record.
    """
    return (rng.random(size) * high).astype(np.int64)


def target_count(t: float, n: int, rng: np.random.Generator) -> int:
    """How many of ``n`` letters to corrupt at rate ``t``: ``floor(t * n + u)``, ``u ~ U[0, 1)``
    (stochastic rounding, so ``E[K] = t * n`` exactly, also for short records), at most ``n``."""
    return min(n, int(t * n + rng.random()))
