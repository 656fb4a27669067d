"""The whole readings' ranker: a conditional logit over a gap's candidates, fitted on the
selection half of the inscription dev set.

The mixture of :mod:`.whole_readings` weighs a gap's candidates with four numbers (``Λ``'s
``λ_max`` and ``E_half``, the unattested penalty, the judge); measured on held-back supplements,
the truth is among the candidates far more often than first, and one weight per kind of
evidence cannot sort them (issue 31). The ranker scores each candidate ``i`` by a linear
function of what is known of it, and adds one more alternative, *none of them* (``∅``), whose
score depends on the gap::

    s_i = w · x_i,      s_∅ = v · z,      P(i) = exp(s_i) / (exp(s_∅) + Σ_j exp(s_j))

the conditional logit of McFadden (1974, "Conditional logit analysis of qualitative choice
behavior"), the choice being the editor's reading among the candidates or none of them. So
``P(i)`` estimates the chance that candidate ``i`` is the reading, also on gaps where no
candidate is (the floors of ``restore --epidoc`` read it as such). The weights ``w, v`` are
fitted by maximum likelihood with an L2 penalty (:func:`~stoicheia.inference.benchmark.
ranker_fit.fit_ranker`) on the selection half only and stored in ``fusion.json`` beside the
mixture's weights; without them the mixture ranks as before.

The features of a candidate (:data:`FEATURES`, :func:`candidate_features`); logs are natural,
probabilities floored at :data:`FLOOR`:

* ``mixture``: log of its probability under the mixture at the chosen weights;
* ``base``: log ``P_base`` (the network and n-gram's search, or its score of a parallel's fill);
* ``parallels``: log ``P_par``, the fill's share of the parallels' weights (:data:`FLOOR` when
  none carries it); ``from_parallels`` 1 where a parallel carries it; ``from_search`` 1 where
  the search found it in its own beam;
* ``unattested`` 1 where it leaves every word it touches unattested; ``judge`` the network's
  score of the whole fill less the best candidate's (0 without a judge);
* ``context``: letters of context its best parallel matches, over 16; ``two_sided`` 1 where
  it matches on both sides; ``sources`` log of 1 + its independent sources; ``edge`` the
  share of its weight from sources that end where the fill does (a stone's edge);
  ``breaks_disagree`` 1 where its best parallel's word breaks disagree with the text's;
* ``letters``: its length over 10, and ``short`` 1 for one or two letters (the search's
  product of letter probabilities favours short fills where the width is not given; on a
  gap of known width every candidate has the same length, and these weigh nothing);
* ``rank``: log of 1 + its place in the mixture's order (0 first).

The gap's features for ``∅`` (:data:`NULL_FEATURES`): ``none`` 1, ``none_top`` the log of the
best mixture probability, ``none_evidence`` log of 1 + the gap's parallels' evidence.

Three kinds of gap (:data:`KINDS`, :func:`reading_kind`) have coefficients of their own, as
what decides between candidates differs: ``known`` (the width given), ``unknown`` (the width
not given, text on both sides) and ``edge`` (the width not given, text on one side only: a
stone's edge). A kind without coefficients keeps the mixture's order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: the candidate features, in the order of the coefficients (module docstring)
FEATURES = (
    "mixture",
    "base",
    "parallels",
    "from_parallels",
    "from_search",
    "unattested",
    "judge",
    "context",
    "two_sided",
    "sources",
    "edge",
    "breaks_disagree",
    "letters",
    "short",
    "rank",
)
#: the features of the alternative "none of them" (module docstring)
NULL_FEATURES = ("none", "none_top", "none_evidence")
#: the kinds of gap with a ranker of their own (module docstring)
KINDS = ("known", "unknown", "edge")
#: probabilities below this are taken as this before the log
FLOOR = 1e-9
#: the judge's score relative to the best candidate's, clipped below (natural log)
JUDGE_CLIP = -30.0


def candidate_features(case: Any, m: np.ndarray) -> np.ndarray:
    """Float64 ``(n, len(FEATURES))``: the features of each of the ``n`` candidates of
    ``case`` (a :class:`~.whole_readings.ReadingCase`), ``m`` float ``(n,)`` their mixture
    probabilities (:meth:`~.whole_readings.ReadingCase.mixture` at the chosen weights)."""
    n = len(case.letters)
    x = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if n == 0:
        return x
    col = {name: i for i, name in enumerate(FEATURES)}
    m = np.asarray(m, dtype=np.float64)
    x[:, col["mixture"]] = np.log(np.maximum(m, FLOOR))
    x[:, col["base"]] = np.log(np.maximum(case.p_base, FLOOR))
    x[:, col["parallels"]] = np.log(np.maximum(case.p_par, FLOOR))
    x[:, col["from_parallels"]] = case.p_par > 0
    x[:, col["from_search"]] = [s is not None for s in case.steps]
    x[:, col["unattested"]] = case.unattested
    if case.judge is not None:
        j = np.asarray(case.judge, dtype=np.float64)
        top = np.max(j[np.isfinite(j)]) if np.isfinite(j).any() else 0.0
        x[:, col["judge"]] = np.maximum(np.nan_to_num(j - top, neginf=JUDGE_CLIP), JUDGE_CLIP)
    for i, f in enumerate(case.sources):
        if f is None:
            continue
        a, b = f.sides
        x[i, col["context"]] = (a + b) / 16.0
        x[i, col["two_sided"]] = float(a > 0 and b > 0)
        x[i, col["sources"]] = math.log1p(f.sources)
        x[i, col["edge"]] = f.edge_weight / f.weight if f.weight > 0 else 0.0
        x[i, col["breaks_disagree"]] = float(f.breaks_disagree > 0)
    lens = np.array([len(a) for a in case.letters], dtype=np.float64)
    x[:, col["letters"]] = lens / 10.0
    x[:, col["short"]] = lens <= 2
    rank = np.empty(n, dtype=np.float64)
    rank[np.argsort(-m, kind="stable")] = np.arange(n)
    x[:, col["rank"]] = np.log1p(rank)
    return x


def null_features(case: Any, m: np.ndarray) -> np.ndarray:
    """Float64 ``(len(NULL_FEATURES),)``: the gap's features for "none of them"."""
    top = float(np.max(m)) if len(m) else 0.0
    return np.array([1.0, math.log(max(top, FLOOR)), math.log1p(max(case.evidence, 0.0))])


def check_coefficients(coef: dict) -> dict[str, float]:
    """``coef`` (``fusion.json``'s ``readings.ranker``) as ``{feature: float}`` with every
    feature of :data:`FEATURES` and :data:`NULL_FEATURES`. Raises ``ValueError`` naming the
    missing or unknown features, or a coefficient that is not a finite number."""
    if not isinstance(coef, dict):
        raise ValueError(f"readings ranker {coef!r}: give {{feature: coefficient}}")
    names = set(FEATURES) | set(NULL_FEATURES)
    unknown, missing = sorted(set(coef) - names), sorted(names - set(coef))
    if unknown or missing:
        raise ValueError(
            f"readings ranker: unknown feature(s) {unknown}, missing {missing}; it was written "
            "by another version: write fusion.json again (stoicheia benchmark --save-fusion)"
        )
    out = {}
    for k, v in coef.items():
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"readings ranker {k}: {v!r} is not a finite number")
        out[k] = float(v)
    return out


def reading_kind(fixed: bool, found: Any) -> str:
    """The kind (:data:`KINDS`) of a gap whose width is given (``fixed``) or not, ``found`` its
    parallels (a :class:`~stoicheia.inference.parallels.GapParallels`, whose context is empty
    on the side the text lacks; None: taken as two-sided)."""
    if fixed:
        return "known"
    if found is not None and (len(found.left) == 0 or len(found.right) == 0):
        return "edge"
    return "unknown"


def check_ranker(ranker: dict) -> dict[str, dict[str, float]]:
    """``ranker`` (``fusion.json``'s ``readings.ranker``) as ``{kind: {feature: float}}``, kinds
    of :data:`KINDS` (each checked by :func:`check_coefficients`; a kind left out keeps the
    mixture). Raises ``ValueError`` naming an unknown kind or a bad coefficient."""
    if not isinstance(ranker, dict):
        raise ValueError(f"readings ranker {ranker!r}: give {{kind: {{feature: coefficient}}}}")
    bad = sorted(set(ranker) - set(KINDS))
    if bad:
        raise ValueError(
            f"readings ranker: unknown kind(s) of gap {bad} (the kinds: {', '.join(KINDS)}); "
            "write fusion.json again (stoicheia benchmark --save-fusion)"
        )
    return {kind: check_coefficients(coef) for kind, coef in ranker.items()}


def logits(coef: dict[str, float], x: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, float]:
    """The scores ``s_i`` (float64 ``(n,)``) of candidates of features ``x`` and ``s_∅`` of the
    gap's features ``z`` under ``coef`` (module docstring)."""
    w = np.array([coef[k] for k in FEATURES])
    v = np.array([coef[k] for k in NULL_FEATURES])
    return x @ w, float(z @ v)


def ranked_probabilities(
    ranker: dict[str, dict[str, float]], case: Any, m: np.ndarray
) -> np.ndarray:
    """Float64 ``(n,)``: ``P(i)`` of each candidate of ``case`` under the coefficients of its
    kind in ``ranker`` (``{kind: {feature: float}}``), ``m`` the mixture's probabilities
    (module docstring); they sum to less than 1, the rest being "none of them". ``m`` itself
    where ``ranker`` has no coefficients for the case's kind."""
    coef = ranker.get(getattr(case, "kind", "known"))
    if coef is None:
        return np.asarray(m, dtype=np.float64)
    if len(case.letters) == 0:
        return np.zeros(0, dtype=np.float64)
    s, s0 = logits(coef, candidate_features(case, m), null_features(case, m))
    top = max(float(s.max()), s0)
    e = np.exp(s - top)
    return e / (e.sum() + math.exp(s0 - top))


__all__ = [
    "FEATURES",
    "FLOOR",
    "KINDS",
    "NULL_FEATURES",
    "candidate_features",
    "check_coefficients",
    "check_ranker",
    "logits",
    "null_features",
    "ranked_probabilities",
    "reading_kind",
]
