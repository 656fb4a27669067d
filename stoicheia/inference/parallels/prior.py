"""The parallels as an expert of the gap search: letter-by-letter probabilities from the fills.

The beam search (:mod:`stoicheia.inference.restore.gap_search`) walks a gap's slots left to
right. The parallels' fills (:mod:`.search`) form a prefix tree: after the letters ``h`` of a
hypothesis, the parallels say the next symbol ``x`` (a letter, or the end of the fill) with

    p_par(x | h) = c(h x) / c(h)

where ``c(h)`` sums the weights of the fills that begin with ``h`` (and ``c(h end)`` the weight of
the fill equal to ``h``). The search interpolates it linearly with the step the network and the
n-gram give (as Liu et al. 2024, "Infini-gram", §5, interpolate their unbounded n-gram with a
neural model)::

    P(x | h) = (1 - lam(h)) * P_base(x | h) + lam(h) * p_par(x | h)
    lam(h)   = v * E(h) / (E(h) + 1)

with ``v`` the parallels weight in [0, 1] and ``E(h)`` the evidence of the fills under ``h``: per
independent source ``(a + b) / FULL_CONTEXT``, ``a + b`` the letters of context it matches. So
one source with 16 letters of context moves a step half of ``v`` towards its fill, one with 48
letters or three with 16 three quarters of it (the longer the context, the surer the parallel,
as Infini-gram trusts a larger effective n more), and a hypothesis that leaves every fill
(``c(h) = 0``) is the network and the n-gram alone (``lam = 0``): the back-off. With ``v = 0``
or no fill the search is today's to the bit (its arithmetic is not touched: the mixing is
applied only where ``lam > 0``).
"""

from __future__ import annotations

import numpy as np

from stoicheia.text import alphabet as A

#: letters of two-sided context that count as one unit of evidence
FULL_CONTEXT = 16.0


class FillPrior:
    """The prefix tree of a gap's fills, with interpolation weight ``weight`` (``v``).

    ``fills``: :class:`~.search.FillParallels` (their ``letters``, ``weight`` and ``evidence``).
    Lookups: :meth:`step` for hypotheses of equal length. Raises ``ValueError`` for a weight
    outside [0, 1].
    """

    def __init__(self, fills: list, weight: float) -> None:
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"parallels weight {weight} must be in [0, 1] (0: no parallels)")
        self.weight = float(weight)
        # prefix bytes -> (counts of the 24 letters and of the end, evidence)
        self._tree: dict[bytes, tuple[np.ndarray, float]] = {}
        counts: dict[bytes, np.ndarray] = {}
        evidence: dict[bytes, float] = {}
        for f in fills:
            letters = np.asarray(f.letters, dtype=np.uint8)
            raw = letters.tobytes()
            for j in range(len(raw) + 1):
                key = raw[:j]
                c = counts.get(key)
                if c is None:
                    c = counts[key] = np.zeros(A.NUM_LETTERS + 1)
                c[letters[j] if j < len(raw) else A.NUM_LETTERS] += f.weight
                evidence[key] = evidence.get(key, 0.0) + f.evidence
        self._tree = {k: (c, evidence[k]) for k, c in counts.items()}

    def __bool__(self) -> bool:
        return self.weight > 0 and bool(self._tree)

    def step(self, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For hypotheses ``seqs`` int64 ``(B, j)``: ``lam`` float ``(B,)`` and ``p`` float
        ``(B, 25)``, the parallels' probabilities of the 24 letters and (last column) of the end."""
        B = len(seqs)
        lam = np.zeros(B)
        p = np.zeros((B, A.NUM_LETTERS + 1))
        for i in range(B):
            hit = self._tree.get(np.asarray(seqs[i], dtype=np.uint8).tobytes())
            if hit is None:
                continue
            counts, ev = hit
            total = counts.sum()
            if total <= 0:
                continue
            lam[i] = self.weight * ev / (ev + 1.0)
            p[i] = counts / total
        return lam, p


def mix(base: np.ndarray, lam: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``log((1 - lam) * exp(base) + lam * p)`` where ``lam > 0``, ``base`` untouched elsewhere.

    ``base``: float ``(B, K)`` natural-log step scores; ``lam``: ``(B,)``; ``p``: ``(B, K)``."""
    on = lam > 0
    if not on.any():
        return base
    out = np.array(base, dtype=np.float64, copy=True)
    lb = lam[on][:, None]
    with np.errstate(divide="ignore"):
        out[on] = np.log((1.0 - lb) * np.exp(base[on]) + lb * p[on])
    return out


__all__ = ["FULL_CONTEXT", "FillPrior", "mix"]
