"""Search over the letters of a lacuna, given per-slot log-probabilities."""

from __future__ import annotations

import numpy as np


def kbest_independent(logp: np.ndarray, k: int) -> list[tuple[np.ndarray, float]]:
    """The ``k`` highest-scoring sequences when the slots are scored independently.

    ``logp``: float ``(L, V)`` log-probabilities of ``V`` symbols at each of ``L`` slots. A
    sequence ``s`` scores ``sum_i logp[i, s_i]``. Beam search keeping the ``k`` best prefixes is
    exact here: the ``k`` best sequences of length ``i + 1`` all extend one of the ``k`` best of
    length ``i`` (a prefix outside the top ``k`` has ``k`` better prefixes, each of which, with
    the same continuation, makes a better sequence). Returns ``[(ids int64 (L,), score), ...]``,
    at most ``k``, distinct, sorted by decreasing score (ties: lower ids first).
    """
    logp = np.asarray(logp, dtype=np.float64)
    if logp.ndim != 2:
        raise ValueError(f"kbest_independent: logp must be (L, V), got shape {logp.shape}")
    if k < 1:
        raise ValueError(f"kbest_independent: k must be >= 1, got {k}")
    L, V = logp.shape
    seqs = np.zeros((1, 0), dtype=np.int64)
    scores = np.zeros(1)
    for i in range(L):
        cand = scores[:, None] + logp[i][None, :]
        best = np.argsort(-cand, axis=None, kind="stable")[:k]
        rows, sym = np.divmod(best, V)
        seqs = np.concatenate([seqs[rows], sym[:, None]], axis=1)
        scores = cand.reshape(-1)[best]
    return [(seqs[j], float(scores[j])) for j in range(len(scores))]
