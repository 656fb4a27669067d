"""Scores of the restoration benchmark: CER, top-k exact match, width, calibration.

All on base letters (:func:`stoicheia.inference.benchmark.protocols.base_letters`), as Ithaca
(Assael et al., Nature 2022) scores:

* **CER** of the top-1 fill: the summed Levenshtein distances between top-1 fill and truth,
  over the summed truth letters (a micro average: a 10-letter gap weighs ten times a 1-letter
  one). An empty answer (no candidate) counts the whole truth as errors.
* **top-k** exact match (k = 1, 5, 20): the share of gaps whose truth is among the ``k`` best
  distinct candidates.
* **length right** (gaps of unknown width): the share of gaps whose top-1 fill has the
  truth's number of letters.
* **ECE**, the expected calibration error of the top-1 probability (Guo et al. 2017, "On
  Calibration of Modern Neural Networks", eq. 3): gaps binned by their top-1 probability into
  10 equal bins of [0, 1] (the last one closed); ``ECE = sum_b n_b / N * |acc_b - conf_b|``
  with ``acc_b`` the share of exact top-1 answers in bin ``b`` and ``conf_b`` their mean
  probability.

Every figure is also given by truth length, in bands that partition the gaps (:func:`band_of`):
1-3, 4-6 and 7-10 letters (a longer truth, which no protocol makes today, would get a band
``11+`` of its own, so that the bands always add up to the whole).

The edit distance is rapidfuzz's (``rapidfuzz.distance.Levenshtein``, a C++ implementation of
the Wagner-Fischer/Hyyrö bit-parallel algorithms): the same integers as the textbook dynamic
programme, without a Python loop per letter pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz.distance import Levenshtein

TOP_KS = (1, 5, 20)
LENGTH_BINS = ((1, 3), (4, 6), (7, 10))
ECE_BINS = 10


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions, each 1) between ``a`` and
    ``b``, in edit operations (an int >= 0): ``rapidfuzz.distance.Levenshtein.distance``."""
    return int(Levenshtein.distance(a, b))


def band_of(letters: int) -> str:
    """The length band (``"1-3"``, ``"4-6"``, ``"7-10"``, of :data:`LENGTH_BINS`) of a truth of
    ``letters`` letters; ``"11+"`` above the last band. Raises ``ValueError`` below 1."""
    if letters < 1:
        raise ValueError(f"band_of: a truth of {letters} letters; a gap holds at least 1")
    for lo, hi in LENGTH_BINS:
        if lo <= letters <= hi:
            return f"{lo}-{hi}"
    return f"{LENGTH_BINS[-1][1] + 1}+"


@dataclass(frozen=True)
class GapScore:
    """One gap's result: ``truth`` letters, the ``candidates`` (base letters, best first,
    distinct), ``prob`` (the decoder's probability of the first, in [0, 1]), ``known_width``."""

    truth: str
    candidates: tuple[str, ...]
    prob: float
    known_width: bool

    @property
    def top1(self) -> str:
        return self.candidates[0] if self.candidates else ""

    @property
    def distance(self) -> int:
        """Edit distance of the top-1 fill to the truth."""
        return edit_distance(self.top1, self.truth)

    @property
    def rank(self) -> int | None:
        """1-based rank of the truth among the candidates, ``None`` if absent."""
        try:
            return self.candidates.index(self.truth) + 1
        except ValueError:
            return None

    def to_json(self) -> dict:
        return {
            "truth": self.truth,
            "top1": self.top1,
            "rank": self.rank,
            "prob": self.prob,
            "candidates": list(self.candidates),
        }


def calibration(probs: Sequence[float], correct: Sequence[bool], bins: int = ECE_BINS) -> dict:
    """Expected calibration error (module docstring) and the reliability table.

    ``probs``: the top-1 probabilities in [0, 1]; ``correct``: whether each top-1 is exact.
    Returns ``{"ece": float (nan for no gap), "bins": [{"lo", "hi", "n", "confidence",
    "accuracy"}, ...]}`` (confidence and accuracy ``None`` for an empty bin). Raises
    ``ValueError`` for sequences of unequal length or a probability outside [0, 1].
    """
    p = np.asarray(probs, dtype=np.float64)
    c = np.asarray(correct, dtype=np.float64)
    if p.shape != c.shape:
        raise ValueError(f"calibration: {p.size} probabilities but {c.size} outcomes")
    if p.size and (np.isnan(p).any() or p.min() < 0 or p.max() > 1):
        raise ValueError("calibration: probabilities must lie in [0, 1]")
    idx = np.minimum((p * bins).astype(np.int64), bins - 1)  # p = 1 goes to the last bin
    table, ece = [], 0.0
    for b in range(bins):
        m = idx == b
        n = int(m.sum())
        conf = float(p[m].mean()) if n else None
        acc = float(c[m].mean()) if n else None
        if n:
            ece += n / p.size * abs(acc - conf)
        table.append(
            {"lo": b / bins, "hi": (b + 1) / bins, "n": n, "confidence": conf, "accuracy": acc}
        )
    return {"ece": ece if p.size else float("nan"), "bins": table}


def pooled_figures(
    truth_letters: np.ndarray,
    distances: np.ndarray,
    ranks: np.ndarray,
    weights: np.ndarray | None = None,
    ks: Sequence[int] = TOP_KS,
    top1_letters: np.ndarray | None = None,
) -> dict[str, float | np.ndarray]:
    """CER and top-k exact match (module docstring) pooled over gaps, each gap counted
    ``weights`` times: the one definition of these figures, for the benchmark's own and for the
    resamples of :mod:`~stoicheia.inference.benchmark.bootstrap`.

    Per gap, shape ``(n,)``: ``truth_letters`` (int, letters of the truth), ``distances`` (int,
    edit distance of the top-1 fill to the truth), ``ranks`` (int, 1-based rank of the truth
    among the candidates, 0 where it is absent). ``weights``: how many times each gap counts,
    ``(n,)`` or ``(B, n)`` for ``B`` resamples (None: once each). Returns ``{"cer",
    "top1", ...}`` (one per ``ks``): floats, or arrays of shape ``(B,)`` for 2-d weights; CER
    is the micro average (summed distances over summed truth letters, never a mean of ratios),
    top-k a share in [0, 1]. ``top1_letters`` (int ``(n,)``, letters of each top-1 fill; gaps
    of unknown width) adds ``length_right``: the share of gaps whose top-1 has the truth's
    number of letters. Raises ``ValueError`` for arrays of unequal length or no letter at
    all."""
    letters = np.asarray(truth_letters, dtype=np.float64)
    dist = np.asarray(distances, dtype=np.float64)
    rank = np.asarray(ranks, dtype=np.int64)
    if not letters.shape == dist.shape == rank.shape or letters.ndim != 1:
        raise ValueError(
            f"pooled_figures: per-gap arrays of shapes {letters.shape}, {dist.shape}, {rank.shape}"
        )
    w = np.ones_like(letters) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape[-1:] != letters.shape:
        raise ValueError(f"pooled_figures: weights of shape {w.shape} for {letters.size} gaps")
    total = w @ letters
    if np.any(total <= 0):
        raise ValueError("pooled_figures: no truth letter to score")
    out: dict[str, float | np.ndarray] = {"cer": (w @ dist) / total}
    n = w.sum(axis=-1)
    for k in ks:
        out[f"top{k}"] = (w @ ((rank >= 1) & (rank <= k)).astype(np.float64)) / n
    if top1_letters is not None:
        top1 = np.asarray(top1_letters, dtype=np.float64)
        if top1.shape != letters.shape:
            raise ValueError(f"pooled_figures: top1_letters of shape {top1.shape}")
        out["length_right"] = (w @ (top1 == letters).astype(np.float64)) / n
    if weights is None or w.ndim == 1:
        out = {key: float(v) for key, v in out.items()}
    return out


def _figures(
    letters: np.ndarray, dist: np.ndarray, ranks: np.ndarray, top1_len: np.ndarray, known: bool
) -> dict:
    n = int(letters.size)
    out: dict = {"gaps": n, "truth_letters": int(letters.sum())}
    if not n:
        return out
    out.update(pooled_figures(letters, dist, ranks, top1_letters=None if known else top1_len))
    return out


def summarise_arrays(
    truth_letters: np.ndarray,
    distances: np.ndarray,
    ranks: np.ndarray,
    probs: np.ndarray,
    top1_letters: np.ndarray,
    known_width: bool,
) -> dict:
    """The figures of one decoder on a set of gaps from per-gap arrays, all of shape ``(n,)``:
    ``truth_letters`` (int), ``distances`` (int, edit distance of the top-1 to the truth),
    ``ranks`` (int, 1-based rank of the truth, 0 where absent), ``probs`` (float, top-1
    probability in [0, 1]), ``top1_letters`` (int, letters of the top-1). ``known_width``:
    False adds ``length_right``. Returns what :func:`summarise` returns; ``by_length`` holds
    the bands that have a gap besides the three of :data:`LENGTH_BINS` (so the bands' gaps add
    up to ``gaps``). Raises ``ValueError`` for arrays of unequal length."""
    letters = np.asarray(truth_letters, dtype=np.int64)
    dist = np.asarray(distances, dtype=np.int64)
    rank = np.asarray(ranks, dtype=np.int64)
    prob = np.asarray(probs, dtype=np.float64)
    top1 = np.asarray(top1_letters, dtype=np.int64)
    if not letters.shape == dist.shape == rank.shape == prob.shape == top1.shape:
        raise ValueError("summarise_arrays: per-gap arrays of unequal shapes")
    out = _figures(letters, dist, rank, top1, known_width)
    cal = calibration(prob, rank == 1)
    out["ece"] = cal["ece"]
    out["reliability"] = cal["bins"]
    bands = np.array([band_of(int(x)) for x in letters], dtype=object)
    names = [f"{lo}-{hi}" for lo, hi in LENGTH_BINS]
    names += sorted({str(b) for b in bands} - set(names))
    out["by_length"] = {
        b: _figures(letters[m], dist[m], rank[m], top1[m], known_width)
        for b in names
        for m in [bands == b]
    }
    return out


def summarise(scores: Sequence[GapScore]) -> dict:
    """The figures of one decoder on one protocol: ``{"gaps", "truth_letters", "cer", "top1",
    "top5", "top20", ["length_right"], "ece", "reliability": [bins], "by_length": {"1-3":
    {...}, "4-6": {...}, "7-10": {...}}}`` (module docstring). Shares are fractions in [0, 1];
    ``length_right`` only when some gap's width was not given."""
    return summarise_arrays(
        np.array([len(s.truth) for s in scores], dtype=np.int64),
        np.array([s.distance for s in scores], dtype=np.int64),
        np.array([s.rank or 0 for s in scores], dtype=np.int64),
        np.array([s.prob for s in scores], dtype=np.float64),
        np.array([len(s.top1) for s in scores], dtype=np.int64),
        all(s.known_width for s in scores),
    )


def summarise_rows(rows: Sequence[dict], decoder: str, known_width: bool) -> dict:
    """:func:`summarise` of ``decoder`` on a subset of a protocol's per-gap ``examples`` (each
    with ``truth`` and, under the decoder's name, ``top1``, ``rank`` (None: absent) and
    ``prob``): the same figures as the benchmark's own on those gaps. Raises ``KeyError``
    naming nothing more than the missing key for an incomplete row."""
    return summarise_arrays(
        np.array([len(r["truth"]) for r in rows], dtype=np.int64),
        np.array([edit_distance(r[decoder]["top1"], r["truth"]) for r in rows], dtype=np.int64),
        np.array([int(r[decoder]["rank"] or 0) for r in rows], dtype=np.int64),
        np.array([float(r[decoder]["prob"]) for r in rows], dtype=np.float64),
        np.array([len(r[decoder]["top1"]) for r in rows], dtype=np.int64),
        known_width,
    )


__all__ = [
    "ECE_BINS",
    "LENGTH_BINS",
    "TOP_KS",
    "GapScore",
    "band_of",
    "calibration",
    "edit_distance",
    "pooled_figures",
    "summarise",
    "summarise_arrays",
    "summarise_rows",
]
