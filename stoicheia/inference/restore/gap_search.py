"""One gap's candidates from one forward pass, optionally fused with a letter n-gram.

The encoder sees the gap with all its slots MASK (the gaps before it filled with their best
fill, the gaps after it still MASK) and gives, in one forward pass, log-probabilities
``m[j, s]`` for every slot ``j`` and symbol ``s``. A beam search then walks the gap's slots left
to right. At slot ``j`` of a hypothesis whose letters so far are ``h``:

* the gap may end here (uncertain width, ``j >= min_letters``): BLANK with the model's
  probability renormalised over the symbols allowed there, ``b_j = p_m(BLANK) / (p_m(BLANK) +
  sum_l p_m(l))``; at ``j = max_letters`` the gap ends with probability 1;
* a letter ``l`` with probability ``(1 - b_j) * q_j(l | h)``, where ``q_j`` is the normalised
  product of experts (log-linear interpolation, the form of shallow fusion in Gulcehre et al.
  2015, "On Using Monolingual Corpora in Neural Machine Translation", §4.1, renormalised per
  slot)::

      q_j(l | h) ∝ p_m(l at j) ** (1 - w) * p_n(l | last n-1 letters of left context + h) ** w

  with ``w`` the n-gram's weight in [0, 1] (``0``: the model alone, whose slots are then
  independent given the context; ``1``: the n-gram's letters with the model's width).

When the gap ends, the n-gram also scores the letters after it (its first ``n - 1`` known letters,
cut at the next lacuna) given the fill, weighted by ``w``, so the fill must lead into the text that
follows. A candidate's score, which ranks the candidates, is the sum of the natural logs of its
letters' ``q_j``, of its width steps (``b_j`` where it ends, ``1 - b_j`` where it goes on) weighted
by ``1 - w``, and of that n-gram term: every term of the model weighted ``1 - w`` and every term of
the n-gram ``w`` (weighting the width too gets the length of a ``[---]`` right more often on the dev
set: 24.4 % against 21.8 % of 119 gaps at w = 0.7). A candidate's probability is the product of its
steps (``q_j`` and the width's ``b_j``, ``1 - b_j`` unweighted), ``path``, when the n-gram is not
fused (the steps define a proper distribution over fills); fused, it is ``exp(score) * P / S``,
``P`` the summed ``path`` and ``S`` the summed ``exp(score)`` of the candidates the search kept
(``pool``, at least 64): their ranking, with the probability mass of their paths.

Why one forward pass per gap and not one per letter: the slots' model terms do not change
along the beam, so the whole search is numpy arithmetic on a ``(slots, symbols)`` table; the
n-gram carries the dependence between neighbouring letters. On the I.Sicily dev set this
decodes as well as re-running the encoder after each fixed letter, at a fraction of the cost
(``docs/measuring-restoration.md`` has the figures).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from stoicheia.inference.ngram import BOS, LetterNgram
from stoicheia.inference.restore.cancel import check_cancelled
from stoicheia.text import alphabet as A

BLANK = A.BLANK
#: candidates kept by the search at least (the probabilities are normalised over them)
POOL = 64


@dataclass
class GapShape:
    """The width of a gap in letters: ``min_letters``..``max_letters``; ``fixed``: a known width;
    ``one_letter``: bool ``(24,)`` the letters a fill of exactly one letter may be (a gap that is
    a whole word: a vowel, :func:`stoicheia.inference.restore.letter_rules.letter_rules`), None:
    any."""

    min_letters: int
    max_letters: int
    fixed: bool
    one_letter: np.ndarray | None = None


@dataclass
class Candidate:
    """One fill of a gap: ``letters`` int64 ``(n,)`` letter ids (0..23), ``score`` the natural-log
    score of the search (module docstring), ``prob`` its probability (module docstring),
    ``steps`` float ``(n,)`` the probability of each letter's step ``(1 - b_j) q_j(l | h)``;
    ``letter_probs`` float ``(n,)`` per letter the summed probability of the kept candidates
    that have this letter at this place (at least ``prob``; what an interface shades by);
    ``source``: the parallels' fill (:class:`~stoicheia.inference.parallels.search.
    FillParallels`) when the parallels carry this fill (whole readings), else None."""

    letters: np.ndarray
    score: float
    prob: float = 0.0
    steps: np.ndarray | None = None
    letter_probs: np.ndarray | None = None
    source: Any = None

    def text(self) -> str:
        return A.spell(self.letters)


def _scaled(x: Any, a: float) -> Any:
    """``a * x`` (an array or a float) with ``-inf`` kept ``-inf`` at ``a == 0``: a letter the
    rules forbid (``-inf`` in the forward pass) stays forbidden when the network weighs 0 (n-gram
    weight 1), where ``0 * -inf`` would be NaN."""
    if a != 0.0:
        return a * x
    return (
        np.where(np.isneginf(x), -np.inf, 0.0)
        if isinstance(x, np.ndarray)
        else (-np.inf if x == -np.inf else 0.0)
    )


def _log_norm(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` minus their log-sum-exp (``-inf`` entries stay ``-inf``)."""
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return x - (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))


class Fusion:
    """The experts beside the network: ``ngram`` and its weight ``weight`` in [0, 1] (``None``
    ngram or weight 0: no n-gram), and the parallels: ``parallels`` a
    :class:`~stoicheia.inference.parallels.ParallelsIndex` (or ``None``) and ``parallels_weight``
    in [0, 1] (:mod:`stoicheia.inference.parallels.prior`; 0: the parallels are found and shown
    but the search is today's). Raises ``ValueError`` for a weight outside [0, 1]."""

    def __init__(
        self,
        ngram: LetterNgram | None,
        weight: float,
        parallels: Any = None,
        parallels_weight: float = 0.0,
    ) -> None:
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"n-gram weight {weight} must be in [0, 1] (0: the model alone)")
        if not 0.0 <= parallels_weight <= 1.0:
            raise ValueError(
                f"parallels weight {parallels_weight} must be in [0, 1] (0: not fused)"
            )
        self.ngram = ngram if weight > 0 else None
        self.weight = float(weight) if self.ngram is not None else 0.0
        self.parallels = parallels
        self.parallels_weight = float(parallels_weight) if parallels is not None else 0.0
        #: where the n-gram and its weight came from, for the result's notes
        self.source = "given"
        self.parallels_source = "given"
        #: the weights of whole readings (:mod:`.whole_readings`): the parallels' fills and the
        #: search's compete as whole strings; None: the parallels mixed in letter by letter at
        #: ``parallels_weight`` (the fused3 of the benchmark)
        self.readings: Any = None
        #: at a stone's edge, the weight of a parallel whose own text has an edge there, as a
        #: natural log (:func:`~stoicheia.inference.parallels.search.gap_parallels`;
        #: ``fusion.json``'s ``parallels_edge_gain``; 0: weighed like the others)
        self.edge_gain = 0.0
        #: the decoder restore uses with this fusion (:mod:`.decoders`), when none is asked for
        self.decoder = "fused"

    @property
    def fused(self) -> bool:
        """True when the search is not the model alone (an n-gram, or parallels at weight > 0)."""
        return self.ngram is not None or self.parallels_weight > 0

    @property
    def history(self) -> int:
        return self.ngram.order - 1 if self.ngram is not None else 0

    def letter_logp(self, hist: np.ndarray) -> np.ndarray:
        """Float ``(B, 24)`` natural-log n-gram probabilities after histories ``(B, n-1)``."""
        assert self.ngram is not None
        return self.ngram.log_probs(hist)

    def tail_logp(self, hist: np.ndarray, right: np.ndarray) -> np.ndarray:
        """Float ``(B,)``: log-probability of the letters ``right`` after each history."""
        out = np.zeros(len(hist))
        if self.ngram is None or not len(right):
            return out
        h = hist.copy()
        for r in right:
            out += self.letter_logp(h)[:, int(r)]
            h = np.concatenate([h[:, 1:], np.full((len(h), 1), int(r))], axis=1)
        return out


def context(letters: np.ndarray, n1: int, side: str) -> np.ndarray:
    """The n-gram's view of the known text beside a gap: ``letters`` int ids (``>= 24`` for a
    lacuna's MASK, which cuts the context). ``side="left"``: the last ``n1`` letters after the
    last cut, :data:`BOS`-padded in front (int64 ``(n1,)``); ``side="right"``: the first ``n1``
    letters before the first cut (at most ``n1``)."""
    letters = np.asarray(letters, dtype=np.int64)
    if side == "left":
        cut = np.flatnonzero(letters >= A.NUM_LETTERS)
        if cut.size:
            letters = letters[cut[-1] + 1 :]
        # max(0, ...): with fewer than n1 letters, a negative start would keep only the last few
        tail = letters[max(0, len(letters) - n1) :] if n1 else letters[:0]
        return np.concatenate([np.full(n1 - len(tail), BOS, dtype=np.int64), tail])
    cut = np.flatnonzero(letters >= A.NUM_LETTERS)
    if cut.size:
        letters = letters[: cut[0]]
    return letters[:n1]


def search_gap(
    logp: np.ndarray,
    shape: GapShape,
    k: int,
    fusion: Fusion | None = None,
    left: np.ndarray | None = None,
    right: np.ndarray | None = None,
    pool: int = POOL,
    prior: Any = None,
) -> list[Candidate]:
    """The ``k`` best fills of one gap (module docstring), best first, distinct.

    ``prior``: the parallels' fills as a third expert
    (:class:`~stoicheia.inference.parallels.prior.FillPrior`): each step's probability is
    interpolated with theirs where they have the hypothesis's letters (``None`` or an empty
    prior: the search as without it, to the bit).

    ``logp``: float ``(slots, >= 26)`` the model's natural-log probabilities at the gap's slots
    (letters 0..23, BLANK at :data:`BLANK`); ``left``/``right``: letter ids beside the gap for
    the n-gram (:func:`context`); ``pool``: hypotheses kept per slot (at least ``k``, 64).
    Raises ``ValueError`` when ``logp`` has fewer rows than ``max_letters``."""
    fusion = fusion or Fusion(None, 0.0)
    w = fusion.weight
    n1 = fusion.history
    prior = prior if prior else None
    if prior is not None:
        from stoicheia.inference.parallels.prior import mix
    if logp.shape[0] < shape.max_letters:
        raise ValueError(
            f"search_gap: {logp.shape[0]} slots of log-probabilities for a gap of up to "
            f"{shape.max_letters} letters"
        )
    pool = max(pool, k)
    left = np.zeros(0, dtype=np.int64) if left is None else np.asarray(left, dtype=np.int64)
    right = np.zeros(0, dtype=np.int64) if right is None else np.asarray(right, dtype=np.int64)
    L = A.NUM_LETTERS
    seqs = np.zeros((1, 0), dtype=np.int64)
    steps = np.zeros((1, 0))
    scores = np.zeros(1)  # the search's score: ranks the hypotheses
    paths = np.zeros(
        1
    )  # the log-probability of the steps, the width's untempered (a proper distribution)
    # context() again: a left side shorter than the history is BOS-padded, a lacuna cuts it
    hist = context(left, n1, "left")[None, :] if n1 else np.zeros((1, 0), dtype=np.int64)
    done: list[tuple[np.ndarray, float, float, np.ndarray]] = []  # letters, score, path, steps

    def close(idx: np.ndarray, extra: np.ndarray, extra_path: np.ndarray) -> None:
        # the n-gram's term is <= 0: a hypothesis that cannot beat the pool's worst kept so far is
        # not scored (the pool's contents are the same)
        if len(done) >= pool:
            floor = sorted((d[1] for d in done), reverse=True)[pool - 1]
            keep = scores[idx] + extra > floor
            idx, extra, extra_path = idx[keep], extra[keep], extra_path[keep]
        if not len(idx):
            return
        tail = fusion.tail_logp(hist[idx], right[:n1]) * w if n1 else np.zeros(len(idx))
        for i, e, ep, t in zip(idx, extra, extra_path, tail, strict=True):
            done.append(
                (seqs[i].copy(), float(scores[i] + e + t), float(paths[i] + ep), steps[i].copy())
            )

    for j in range(shape.max_letters):
        check_cancelled()  # a cancelled restoration stops at the next slot (restore.cancel)
        row = np.asarray(logp[j], dtype=np.float64)
        lb = -np.inf
        if not shape.fixed and j >= shape.min_letters:
            allowed = np.concatenate([row[:L], row[BLANK : BLANK + 1]])
            lb = float(row[BLANK] - np.logaddexp.reduce(allowed))
            idx = np.arange(len(seqs))
            if j == 1 and shape.one_letter is not None:  # a one-letter word is a vowel
                idx = idx[shape.one_letter[seqs[:, 0]]]
            end_score = np.full(len(idx), _scaled(lb, 1.0 - w))
            end_path = np.full(len(idx), lb)
            if prior is not None and len(idx):
                lam, pp = prior.step(seqs[idx])
                end_score = mix(end_score[:, None], lam, pp[:, L:])[:, 0]
                end_path = mix(end_path[:, None], lam, pp[:, L:])[:, 0]
            close(idx, end_score, end_path)
        lm = _log_norm(row[None, :L])[0]
        if fusion.ngram is not None:
            lq = _log_norm(_scaled(lm[None, :], 1.0 - w) + w * fusion.letter_logp(hist))
        else:
            lq = np.broadcast_to(lm, (len(seqs), L))
        go_on = float(np.log1p(-min(np.exp(lb), 1.0 - 1e-12))) if np.isfinite(lb) else 0.0
        if prior is None:  # today's arithmetic, untouched
            cand = scores[:, None] + lq + (1.0 - w) * go_on
            best = np.argsort(-cand, axis=None, kind="stable")[:pool]
            rows, sym = np.divmod(best, L)
            seqs = np.concatenate([seqs[rows], sym[:, None]], axis=1)
            steps = np.concatenate([steps[rows], np.exp(lq[rows, sym] + go_on)[:, None]], axis=1)
            paths = paths[rows] + lq[rows, sym] + go_on
        else:  # each step interpolated with the parallels' (parallels.prior)
            lam, pp = prior.step(seqs)
            step = mix(np.asarray(lq + (1.0 - w) * go_on, dtype=np.float64), lam, pp[:, :L])
            step_path = mix(np.asarray(lq + go_on, dtype=np.float64), lam, pp[:, :L])
            cand = scores[:, None] + step
            best = np.argsort(-cand, axis=None, kind="stable")[:pool]
            rows, sym = np.divmod(best, L)
            seqs = np.concatenate([seqs[rows], sym[:, None]], axis=1)
            steps = np.concatenate([steps[rows], np.exp(step_path[rows, sym])[:, None]], axis=1)
            paths = paths[rows] + step_path[rows, sym]
        scores = cand.reshape(-1)[best]
        if n1:
            hist = np.concatenate([hist[rows][:, 1:], sym[:, None]], axis=1)
    # the gap's widest fill (or its only width)
    close(np.arange(len(seqs)), np.zeros(len(seqs)), np.zeros(len(seqs)))
    done.sort(key=lambda d: -d[1])
    kept = done[:pool]
    # log of (summed path probability / summed exp(score)) of the kept: 0 when not fused
    shift = float(
        np.logaddexp.reduce(np.array([p for _, _, p, _ in kept]))
        - np.logaddexp.reduce(np.array([s for _, s, _, _ in kept]))
    )
    probs = np.minimum(1.0, np.exp(np.array([s for _, s, _, _ in kept]) + shift))
    width = max(len(a) for a, _, _, _ in kept)
    table = np.full((len(kept), width), -1, dtype=np.int64)  # the kept fills, letter by place
    for i, (a, _, _, _) in enumerate(kept):
        table[i, : len(a)] = a
    out = []
    for i, (a, s, _, st) in enumerate(kept[:k]):
        marginal = np.array([probs[table[:, j] == a[j]].sum() for j in range(len(a))])
        out.append(Candidate(a, s, float(probs[i]), st, np.minimum(marginal, 1.0)))
    return out


def score_fill(
    logp: np.ndarray,
    shape: GapShape,
    letters: np.ndarray,
    fusion: Fusion | None = None,
    left: np.ndarray | None = None,
    right: np.ndarray | None = None,
    prior: Any = None,
) -> float:
    """The search's score (module docstring) of one given fill ``letters`` (int ids), e.g. an
    editor's supplement; ``prior`` as for :func:`search_gap`. Raises ``ValueError`` for a fill
    whose length the gap cannot take."""
    letters = np.asarray(letters, dtype=np.int64)
    n = len(letters)
    if not shape.min_letters <= n <= shape.max_letters:
        raise ValueError(
            f"score_fill: a fill of {n} letters in a gap of {shape.min_letters}-{shape.max_letters}"
        )
    fusion = fusion or Fusion(None, 0.0)
    w, n1 = fusion.weight, fusion.history
    left = np.zeros(0, dtype=np.int64) if left is None else np.asarray(left, dtype=np.int64)
    right = np.zeros(0, dtype=np.int64) if right is None else np.asarray(right, dtype=np.int64)
    hist = context(left, n1, "left")[None, :] if n1 else np.zeros((1, 0), dtype=np.int64)
    L = A.NUM_LETTERS
    score = 0.0
    for j in range(n + 1):
        row = np.asarray(logp[j], dtype=np.float64) if j < len(logp) else None
        lb = -np.inf
        if row is not None and not shape.fixed and shape.min_letters <= j < shape.max_letters:
            lb = float(
                row[BLANK] - np.logaddexp.reduce(np.concatenate([row[:L], row[BLANK : BLANK + 1]]))
            )
        if j == n:
            end = (1.0 - w) * lb if np.isfinite(lb) else 0.0
            if prior and np.isfinite(lb):
                from stoicheia.inference.parallels.prior import mix

                lam, pp = prior.step(letters[None, :n])
                end = float(mix(np.array([[end]]), lam, pp[:, L:])[0, 0])
            score += end
            break
        lm = _log_norm(row[None, :L])[0]  # type: ignore[index]
        lq = (
            _log_norm(_scaled(lm[None, :], 1.0 - w) + w * fusion.letter_logp(hist))[0]
            if fusion.ngram is not None
            else lm
        )
        if np.isfinite(lb):
            lq = lq + (1.0 - w) * np.log1p(-min(np.exp(lb), 1.0 - 1e-12))
        if prior:
            from stoicheia.inference.parallels.prior import mix

            lam, pp = prior.step(letters[None, :j])
            lq = mix(np.asarray(lq, dtype=np.float64)[None, :], lam, pp[:, :L])[0]
        score += float(lq[letters[j]])
        if n1:
            hist = np.concatenate([hist[:, 1:], letters[j : j + 1][None, :]], axis=1)
    if n1:
        score += w * float(fusion.tail_logp(hist, right[:n1])[0])
    return score


__all__ = [
    "BLANK",
    "POOL",
    "Candidate",
    "Fusion",
    "GapShape",
    "context",
    "score_fill",
    "search_gap",
]
