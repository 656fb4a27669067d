"""Fitting the whole readings' ranker (:mod:`stoicheia.inference.restore.reading_ranker`) on the
selection half of the inscription dev set.

Each gap of the selection half gives its :class:`~stoicheia.inference.restore.whole_readings.
ReadingCase` at the chosen weights and the place of the truth among its candidates (or "none of
them"). The coefficients maximise the conditional logit's log-likelihood of those choices less
an L2 penalty ``(l2 / 2) |θ|²`` (McFadden 1974; the penalty keeps a feature that never varies
at 0 and the fit finite where the data separate). The objective is concave, so Newton's method
(the gradient and Hessian summed over gaps, a step halved until the objective rises) reaches
its maximum in a few steps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from stoicheia.inference.restore.reading_ranker import (
    FEATURES,
    NULL_FEATURES,
    candidate_features,
    null_features,
)

#: the L2 penalty of the fit (per coefficient, natural-log units)
L2 = 1.0
#: Newton steps at most, and the change in the objective at which the fit stops
MAX_STEPS = 50
TOLERANCE = 1e-7


def choice_rows(case, m: np.ndarray, truth: int | None) -> tuple[np.ndarray, int]:
    """One gap as the fit reads it: float64 ``(n + 1, d)``, the ``n`` candidates' features
    then "none of them" (the candidate block and the null block side by side, ``d =
    len(FEATURES) + len(NULL_FEATURES)``), and the row chosen (``truth``, the truth's
    candidate index, or ``n`` where no candidate is the truth)."""
    x = candidate_features(case, m)
    n, dc = x.shape
    rows = np.zeros((n + 1, dc + len(NULL_FEATURES)), dtype=np.float64)
    rows[:n, :dc] = x
    rows[n, dc:] = null_features(case, m)
    return rows, (n if truth is None else int(truth))


def _objective(theta, gaps, l2):
    value, grad = -0.5 * l2 * theta @ theta, -l2 * theta
    hess = -l2 * np.eye(len(theta))
    for rows, chosen in gaps:
        s = rows @ theta
        top = s.max()
        e = np.exp(s - top)
        p = e / e.sum()
        value += s[chosen] - top - np.log(e.sum())
        mean = p @ rows
        grad += rows[chosen] - mean
        hess -= (rows * p[:, None]).T @ rows - np.outer(mean, mean)
    return value, grad, hess


def fit_ranker(
    gaps: Sequence[tuple[np.ndarray, int]], l2: float = L2
) -> tuple[dict[str, float], dict]:
    """The ranker's coefficients ``{feature: float}`` fitted on ``gaps`` (:func:`choice_rows`
    of each), and a summary ``{"gaps", "truth_among", "log_likelihood", "steps"}``. Raises
    ``ValueError`` for no gap."""
    if not gaps:
        raise ValueError("fit_ranker: no gap to fit the ranker on")
    d = len(FEATURES) + len(NULL_FEATURES)
    theta = np.zeros(d)
    value, grad, hess = _objective(theta, gaps, l2)
    steps = 0
    while steps < MAX_STEPS:
        steps += 1
        step = np.linalg.solve(hess, -grad)
        t = 1.0
        while True:
            new = theta + t * step
            nv, ng, nh = _objective(new, gaps, l2)
            if nv >= value or t < 1e-6:
                break
            t /= 2
        done = abs(nv - value) < TOLERANCE * max(1.0, abs(value))
        theta, value, grad, hess = new, nv, ng, nh
        if done:
            break
    coef = dict(zip((*FEATURES, *NULL_FEATURES), map(float, theta), strict=True))
    among = sum(1 for rows, chosen in gaps if chosen < len(rows) - 1)
    return coef, {
        "gaps": len(gaps),
        "truth_among": among,
        "log_likelihood": float(value + 0.5 * l2 * theta @ theta),
        "steps": steps,
    }


def truth_index(case, truth: str) -> int | None:
    """The index of the candidate of ``case`` whose letters spell ``truth`` (base letters, as
    the benchmark compares them), or None."""
    from stoicheia.text import alphabet as A

    for i, a in enumerate(case.letters):
        if A.spell(a) == truth:
            return i
    return None


def top1_share(cases: Iterable[tuple[np.ndarray, int | None]]) -> float:
    """The share of ``(probabilities, truth index)`` pairs whose best candidate is the truth
    (ties: the first, as :meth:`~stoicheia.inference.restore.whole_readings.ReadingCase.order`
    breaks them)."""
    hits = total = 0
    for p, t in cases:
        total += 1
        hits += bool(len(p)) and t is not None and int(np.argmax(p)) == t
    return hits / total if total else 0.0


__all__ = ["L2", "choice_rows", "fit_ranker", "top1_share", "truth_index"]
