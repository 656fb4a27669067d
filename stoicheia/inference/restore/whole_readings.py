"""Whole readings: a gap's fills compete as whole strings, the parallels' and the search's.

The candidates of a gap are the fills of the beam search of the network and the n-gram
(:func:`~.gap_search.search_gap`, without the parallels) and the distinct fills the parallels
carry (:mod:`stoicheia.inference.parallels.search`: each fill once, its sources merged). Each
is scored as a whole string by a fill-level mixture::

    P(fill) = (1 - Λ) P_base(fill) + Λ P_par(fill),     Λ = λ_max E / (E + E_half)

``P_base`` the probability the search gives the fill (for a parallel's fill outside its beam,
the search's score of that fill, :func:`~.gap_search.score_fill`, on the same scale),
``P_par`` the fill's share of the parallels' weights (each source ``exp(τ (a + b − M))``,
divided by ``exp(BREAK_COST)`` per word break that disagrees with the text's), and ``E`` the
gap's evidence: per independent source ``(a + b) / 16``, the letters of context it matches on
each side. So a reading the parallels agree on is weighed once, as a whole, and not letter by
letter (where each of its letters had to beat the letters the network prefers: the "Limits" of
docs/parallels.md); with no parallel ``Λ = 0`` and the search's order stands.

Words. Where the text gives word division, a fill that leaves every word it touches
unattested in the corpus (the index's word list, :mod:`stoicheia.data.word_hashes`) is
multiplied by ``exp(-unattested)`` (then the candidates' mass is rescaled to what it was):
penalised, not forbidden. A parallels' fill prints with its source's word division; where that
division, between the text's breaks, leaves a restored letter alone as a word Greek does not
write (``πρὸ [...]`` and ``πρὸς δὲ``: ``πρὸ [ς δὲ]``,
:func:`~.word_division.lone_in_parallel`), the parallel disagrees with the text and its fill
is left out, counted (``lone_words``).

The words a fill touches are the stretches of ``left part + fill + right part`` (the parts of
the words the gap cuts, from the text's word breaks) that contain a letter of the fill and
start and end where a word may (the text's breaks, or inside the fill); at least two letters.

The network as a judge. The network, which reads the gap's whole two-sided context, scores
each candidate as a whole: ``J(fill)``, the natural log of the probability the network alone
gives the fill with all its letters hidden together (:func:`judge_scores`: the gap's slots all
MASK, the fill's letters then the end of the gap, BLANK, where its width is not given; the
same forward pass the search reads, so no pass is added, and a proper distribution over fills
of every width the gap takes, so fills of different lengths compare). The mixture's
probabilities are then tilted by it::

    P'(fill) ∝ P(fill) exp(β J(fill)),      rescaled to the candidates' mass before

``β`` (``judge``, >= 0) fitted with the others; ``β = 0`` is the mixture above to the bit
(tested), a large ``β`` ranks by the network alone. ``P_base`` already holds the network's
letters, at weight ``1 − w`` beside the n-gram's ``w`` letter by letter; ``β`` weighs the
network's view of the whole fill again, for the parallels' fills too. The letters hidden one
at a time (the pseudo-log-likelihood) would cost a forward pass per letter of every candidate
(about 300 rows of 512 slots per gap, where the search takes one): docs/parallels.md gives
the figures.

The ranker. The mixture's order can then be replaced by a conditional logit over the
candidates fitted on many features of each (:mod:`.reading_ranker`), whose probabilities also
say how often none of the candidates is the reading.

The weights ``λ_max``, ``E_half``, ``unattested`` and ``judge`` (:class:`ReadingWeights`) and
the ranker are fitted on the selection half of the inscription dev set by ``stoicheia benchmark``
(:func:`stoicheia.inference.benchmark.parallels.readings_family`) and stored in
``fusion.json``; the defaults here are used without it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from stoicheia.inference.restore.gap_search import Candidate
from stoicheia.text import alphabet as A

#: parallels' fills taken as candidates, the heaviest
PARALLEL_CANDIDATES = 32


@dataclass(frozen=True)
class ReadingWeights:
    """The weights of the whole-reading mixture (module docstring): ``lam_max`` in [0, 1],
    ``half`` (> 0, units of evidence: independent sources times letters of context / 16) where
    Λ reaches half of ``lam_max``, ``unattested`` (>= 0, natural log) the penalty of a fill
    whose words the corpus never attests; ``judge`` (>= 0) the network's weight as a judge of
    whole fills (``β``, module docstring; 0: not used, what ``fusion.json`` written before it
    means); ``chosen_on`` what they were fitted on; ``ranker`` the coefficients of the ranker
    fitted at these weights (:mod:`.reading_ranker`; None: the mixture's order stands). Raises
    ``ValueError`` for a weight out of range or a ranker of other features."""

    lam_max: float = 0.8
    half: float = 0.5
    unattested: float = 1.0
    chosen_on: str = ""
    judge: float = 0.0
    #: the ranker's coefficients per kind of gap (:mod:`.reading_ranker`; None: the mixture)
    ranker: dict[str, dict[str, float]] | None = None

    def __post_init__(self) -> None:
        if self.ranker is not None:
            from stoicheia.inference.restore.reading_ranker import check_ranker

            object.__setattr__(self, "ranker", check_ranker(self.ranker))
        if not 0.0 <= self.lam_max <= 1.0:
            raise ValueError(f"readings lam_max {self.lam_max!r} must be in [0, 1]")
        if not self.half > 0:
            raise ValueError(f"readings half {self.half!r} must be > 0 (evidence units)")
        if not self.unattested >= 0:
            raise ValueError(f"readings unattested {self.unattested!r} must be >= 0")
        if not (self.judge >= 0 and math.isfinite(self.judge)):
            raise ValueError(f"readings judge {self.judge!r} must be a number >= 0")

    def lam(self, evidence: float) -> float:
        """Λ for a gap of ``evidence`` (module docstring)."""
        return self.lam_max * evidence / (evidence + self.half) if evidence > 0 else 0.0

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict | None) -> ReadingWeights | None:
        """From ``fusion.json``'s ``readings`` (None: none stored). Raises ``ValueError`` for
        unknown keys or weights out of range."""
        if data is None:
            return None
        if not isinstance(data, dict):
            raise ValueError(f"readings {data!r}: give {{lam_max, half, unattested, judge}}")
        return cls(**data)


@dataclass
class ReadingCase:
    """One gap's candidates with what the mixture needs, made once (:func:`reading_case`) and
    ranked for any weights (:meth:`ranked`; the benchmark's fit ranks it at every point of its
    grid). Per candidate, arrays ``(n,)``: ``p_base``, ``p_par``, ``unattested`` (bool);
    ``letters`` int64 arrays; ``sources`` the parallels' fill (or None); ``evidence`` the
    gap's; ``steps`` the search's steps of its own candidates (None for the others);
    ``judge`` float ``(n,)`` the network's natural-log score of each fill (:func:`judge_scores`;
    None: no judge, the weight ``judge`` then has no effect); ``lone_words`` the parallels'
    fills left out because their word division leaves a letter alone (module docstring)."""

    letters: list[np.ndarray]
    p_base: np.ndarray
    p_par: np.ndarray
    unattested: np.ndarray
    evidence: float
    sources: list[Any] = field(default_factory=list)
    steps: list[Any] = field(default_factory=list)
    judge: np.ndarray | None = None
    #: the parallels' fills left out: printed as their source divides them, a restored letter
    #: would stand alone as a word Greek does not write (``FillParallels.lone_letter``)
    lone_words: int = 0
    #: the kind of gap, whose ranker ranks it (:func:`~.reading_ranker.reading_kind`)
    kind: str = "known"

    def mixture(self, weights: ReadingWeights) -> np.ndarray:
        """Float ``(n,)``: each candidate's probability under ``weights`` (module docstring);
        with a ranker (``weights.ranker``), its probabilities of the mixture's candidates."""
        lam = weights.lam(self.evidence) if self.p_par.sum() > 0 else 0.0
        m = (1.0 - lam) * self.p_base + lam * self.p_par
        if weights.unattested > 0 and self.unattested.any():
            pen = m * np.exp(-weights.unattested * self.unattested)
            total = pen.sum()
            m = pen * (m.sum() / total) if total > 0 else m
        if weights.judge > 0 and self.judge is not None and len(m):
            # exp(β (J − max J)): the same order as exp(β J), without overflow; a fill the
            # network cannot give (J = −inf) keeps nothing
            j = np.asarray(self.judge, dtype=np.float64)
            top = np.max(j[np.isfinite(j)]) if np.isfinite(j).any() else 0.0
            tilted = m * np.exp(weights.judge * (j - top))
            total = tilted.sum()
            m = tilted * (m.sum() / total) if total > 0 else m
        if weights.ranker is not None and len(m):
            from stoicheia.inference.restore.reading_ranker import ranked_probabilities

            m = ranked_probabilities(weights.ranker, self, m)
        return m

    def order(self, weights: ReadingWeights) -> np.ndarray:
        """Int64 candidate indices, best first (ties: the search's own candidates first, in its
        order, then the parallels' in theirs)."""
        return np.argsort(-self.mixture(weights), kind="stable")

    def ranked(self, weights: ReadingWeights, k: int) -> list[Candidate]:
        """The ``k`` best candidates under ``weights``, best first, as :class:`Candidate`
        (``prob`` the mixture, ``letter_probs`` the summed probability of the candidates with
        the same letter at the same place, ``source`` the parallels' fill where it is one)."""
        m = np.minimum(self.mixture(weights), 1.0)
        order = np.argsort(-m, kind="stable")
        width = max((len(a) for a in self.letters), default=0)
        table = np.full((len(self.letters), width), -1, dtype=np.int64)
        for i, a in enumerate(self.letters):
            table[i, : len(a)] = a
        out = []
        for i in order[:k]:
            a = self.letters[i]
            marginal = np.array([m[table[:, j] == a[j]].sum() for j in range(len(a))])
            c = Candidate(
                a,
                float(math.log(max(m[i], 1e-300))),
                float(m[i]),
                self.steps[i],
                np.minimum(marginal, 1.0),
            )
            c.source = self.sources[i]
            out.append(c)
        return out


def _word_parts(found: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The letters of the words the gap cuts, before it and after it (int64), from the text's
    word breaks (``found.breaks``); None where the text does not say where they begin or
    end."""
    breaks = getattr(found, "breaks", None)
    if breaks is None:
        return None
    brk = (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE)
    left, lb = np.asarray(found.left), np.asarray(breaks.left)
    i = len(left)
    while i > 0 and lb[i - 1] not in brk:
        if lb[i - 1] != A.BOUNDARY_INTERNAL:
            return None
        i -= 1
    right, rb = np.asarray(found.right), np.asarray(breaks.right)
    if breaks.end in brk:
        j = 0
    elif breaks.end != A.BOUNDARY_INTERNAL:
        return None
    else:
        j = 0
        while j < len(right):
            if rb[j] in brk:
                j += 1
                break
            if rb[j] != A.BOUNDARY_INTERNAL:
                return None
            j += 1
    return left[i:], right[:j]


def unattested_flags(index: Any, found: Any, fills: list[np.ndarray]) -> np.ndarray:
    """Bool per fill of ``fills``: it leaves every word it touches unattested (module
    docstring). All False where the text gives no word division or there is no index."""
    from stoicheia.data.word_hashes import MAX_WORD, stretch_hashes

    out = np.zeros(len(fills), dtype=bool)
    parts = _word_parts(found) if index is not None and found is not None else None
    if parts is None:
        return out
    lp, rp = parts
    for k, f in enumerate(fills):
        f = np.asarray(f, dtype=np.int64)
        joined = np.concatenate([lp, f, rp]).astype(np.int64)
        s0, s1, end = len(lp), len(lp) + len(f), len(joined)
        starts = np.array(sorted({0, *range(s0, s1)}))
        stops = np.array(sorted({*range(s0 + 1, s1 + 1), end}))
        i, j = np.meshgrid(starts, stops, indexing="ij")
        ok = (j - i >= 2) & (j - i <= MAX_WORD) & (i < s1) & (j > s0)
        if not ok.any():
            continue
        hashes = stretch_hashes(joined, i[ok], j[ok])
        out[k] = not index.attested(hashes).any()
    return out


def judge_scores(logp: np.ndarray, shape: Any, fills: list[np.ndarray]) -> np.ndarray:
    """The network's score of whole fills, all of a gap's candidates at once (module
    docstring): float64 ``(n,)``, per fill of ``fills`` (int64 letter ids, any lengths the gap
    takes) the natural log of the probability the network alone gives it from ``logp`` (float
    ``(slots, >= 26)``, the gap's forward pass with all its slots MASK,
    :func:`~.decoding.gap_logp`): per letter its log-probability renormalised over the 24
    letters, and where the width is not given (``shape``, a :class:`~.gap_search.GapShape`,
    not ``fixed``) the width chain of :func:`~.decoding.width_chain`: ``log(1 − b_j)`` at each
    slot ``min_letters <= j < max_letters`` the fill goes on through and ``log b_n`` at its
    end ``n < max_letters``, ``b_j`` the BLANK share of slot ``j``. Equal to
    :func:`~.gap_search.score_fill` without n-gram and parallels, fill by fill (tested);
    ``-inf`` for a letter ``logp`` forbids. Raises ``ValueError`` for a fill of a width the
    gap cannot take."""
    n = len(fills)
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    lens = np.array([len(f) for f in fills], dtype=np.int64)
    bad = (lens < shape.min_letters) | (lens > shape.max_letters)
    if bad.any():
        raise ValueError(
            f"judge_scores: a fill of {int(lens[bad][0])} letters in a gap of "
            f"{shape.min_letters}-{shape.max_letters}"
        )
    L = A.NUM_LETTERS
    rows = np.asarray(logp, dtype=np.float64)
    width = max(int(lens.max()), 1)
    # letters: log-softmax over the 24 letters of each slot, read at each fill's letters
    lm = rows[:width, :L] - np.logaddexp.reduce(rows[:width, :L], axis=1, keepdims=True)
    table = np.zeros((n, width), dtype=np.int64)
    for i, f in enumerate(fills):
        table[i, : len(f)] = f
    cols = np.arange(width)
    inside = cols[None, :] < lens[:, None]
    steps = np.where(inside, lm[cols[None, :], table], 0.0)
    stop = np.zeros(n)
    if not shape.fixed:
        # the width chain: log(1 − b_j) where the fill goes on, log b_n where it ends
        ends = np.full(len(rows) + 1, -np.inf)
        goes = np.zeros(len(rows) + 1)
        for j in range(shape.min_letters, min(shape.max_letters, len(rows))):
            allowed = np.concatenate([rows[j, :L], rows[j, A.BLANK : A.BLANK + 1]])
            ends[j] = rows[j, A.BLANK] - np.logaddexp.reduce(allowed)
            goes[j] = np.log1p(-min(np.exp(ends[j]), 1.0 - 1e-12))
        steps = steps + np.where(inside, goes[:width][None, :], 0.0)
        stop = np.where(lens < shape.max_letters, ends[np.minimum(lens, len(rows))], 0.0)
    # running sums, read at each fill's end: the same additions in the same order whatever
    # the other fills' lengths, so a batch gives each fill the score it gets alone (tested)
    run = np.concatenate([np.zeros((n, 1)), np.cumsum(steps, axis=1)], axis=1)
    out = run[np.arange(n), lens] + stop
    return out


def reading_case(
    base: list[Candidate],
    found: Any,
    *,
    score: Callable[[np.ndarray], float],
    allowed: Callable[[np.ndarray], bool],
    index: Any = None,
    most: int = PARALLEL_CANDIDATES,
    judge: Callable[[list[np.ndarray]], np.ndarray] | None = None,
    kind: str = "known",
) -> ReadingCase:
    """The :class:`ReadingCase` of a gap: ``base`` the search's candidates (best first, with
    their ``prob`` and ``score``); ``found`` its :class:`~stoicheia.inference.parallels.
    GapParallels` (None: none); ``score(letters)`` the search's score of any fill (natural
    log, ``-inf`` where the letter rules forbid it); ``allowed(letters)`` whether the gap
    takes the fill (its width, a one-letter word); ``index`` the parallels index (its word
    list); ``judge(fills)`` the network's scores of all the candidates at once, float ``(n,)``
    (:func:`judge_scores`; None: no judge); ``kind`` the gap's
    (:func:`~.reading_ranker.reading_kind`). The parallels' ``most`` heaviest fills join the
    candidates."""
    shift = 0.0
    if base and 0 < base[0].prob < 1:
        shift = math.log(base[0].prob) - base[0].score
    elif base and base[0].prob >= 1:
        shift = -base[0].score
    letters: list[np.ndarray] = []
    p_base: list[float] = []
    p_par: list[float] = []
    sources: list[Any] = []
    steps: list[Any] = []
    at: dict[bytes, int] = {}
    for c in base:
        key = np.asarray(c.letters, dtype=np.int64).tobytes()
        if key in at:
            continue
        at[key] = len(letters)
        letters.append(np.asarray(c.letters, dtype=np.int64))
        p_base.append(float(c.prob))
        p_par.append(0.0)
        sources.append(None)
        steps.append(c.steps)
    fills = list(found.fills) if found is not None else []
    # a parallel that disagrees with the text so (a lone letter) is no evidence either
    evidence = float(sum(f.evidence for f in fills if getattr(f, "lone_letter", None) is None))
    lone = 0
    for f in sorted(fills, key=lambda f: -f.prob)[:most]:
        if getattr(f, "lone_letter", None) is not None:
            # printed as its source divides it, a letter stands alone (πρὸ [ς δὲ]): the
            # parallel disagrees with the text's word division; neither a candidate nor support
            lone += 1
            continue
        a = np.asarray(f.letters, dtype=np.int64)
        key = a.tobytes()
        if key in at:
            p_par[at[key]] += float(f.prob)
            sources[at[key]] = f
            continue
        if not allowed(a):
            continue
        s = score(a)
        if not np.isfinite(s):  # the letter rules forbid it (καὶ [.] ἔδωκε: no [ς])
            continue
        at[key] = len(letters)
        letters.append(a)
        p_base.append(min(1.0, math.exp(s + shift)))
        p_par.append(float(f.prob))
        sources.append(f)
        steps.append(None)
    flags = unattested_flags(index, found, letters)
    return ReadingCase(
        letters,
        np.asarray(p_base, dtype=np.float64),
        np.asarray(p_par, dtype=np.float64),
        flags,
        evidence,
        sources,
        steps,
        None if judge is None else np.asarray(judge(letters), dtype=np.float64),
        lone,
        kind,
    )


__all__ = [
    "PARALLEL_CANDIDATES",
    "ReadingCase",
    "ReadingWeights",
    "judge_scores",
    "reading_case",
    "unattested_flags",
]
