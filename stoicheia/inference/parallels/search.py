"""Parallels of a gap: corpus passages that carry the gap's context on both sides.

For a gap of width ``w`` (or any width of a range) between the known letters ``L`` before it and
``R`` after it, a parallel is a slot ``p`` of the index (:mod:`.index`) where the ``a`` letters
before ``p`` equal the last ``a`` letters of ``L``, and the ``b`` letters from ``p + w`` equal the
first ``b`` of ``R``; what stands at ``[p, p + w)`` is its fill. Word division is ignored (the index
holds letters only), and a lacuna or an uncertain letter in the context ends the context on that
side (the caller cuts it: :func:`cut_context`).

How they are found, with the suffix array: the longest suffix of ``L`` that occurs anywhere
(binary search over its length, ``O(log |L|)`` suffix-array look-ups), then the occurrences of
ever shorter suffixes (backing off) until ``max_occurrences`` are collected; likewise for the
prefixes of ``R``. Every collected slot is then measured exactly on both sides (``a`` and ``b``,
vectorised comparisons), for every width the gap allows. When a back-off level holds more
occurrences than the budget left, an evenly spaced sample of its suffix-array range is taken:
the range is sorted by the letters that follow, so the sample keeps the proportions of the fills.
No match crosses two records: records (and lacunae inside them) are separated by a symbol no
context contains.

Ranking (what an epigrapher reads first): by the context matched, ``a + b`` letters, then by the
number of independent sources (occurrences in one work count once, and works whose passage is
letter for letter the same around the fill, two copies of one text, count once), then by the
smaller side, then by tier (the order of ``stats.json``).

A distribution over fills (:class:`GapParallels.probs`) in the spirit of Liu et al. 2024,
"Infini-gram: Scaling Unbounded n-gram Language Models to a Trillion Tokens" (arXiv:2401.17377):
there an unbounded n-gram estimate is read off a suffix array with the longest context that
occurs (its "effective n"), and interpolated linearly with a neural model. Here the context is
two-sided (both sides of a gap, as epigraphers search) rather than a left suffix only; the
estimate is not the count at the single longest context but a sum over independent sources of
``exp(TAU * (a + b - M))`` (``M`` the longest two-sided context found), so that a fill carried by
several sources with slightly shorter contexts is not lost to one long coincidence; and the
interpolation weight grows with the evidence (:mod:`.prior`), rather than being one constant per
effective n.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stoicheia.inference.parallels.index import ParallelsIndex
from stoicheia.inference.parallels.parallel import Parallel
from stoicheia.inference.parallels.text_edge import edge_part
from stoicheia.inference.parallels.word_breaks import BREAK_COST, WordBreaks, word_end_widths
from stoicheia.text import alphabet as A

#: context letters looked at on each side (the search is unbounded up to this)
MAX_CONTEXT = 64
#: occurrences collected per side before the back-off stops
MAX_OCCURRENCES = 1000
#: at least this many context letters matched in all (a + b)
MIN_CONTEXT = 5
#: a fill's weight per source: exp(TAU * (a + b - M)), per letter of context
TAU = 0.5
#: occurrences more than this many letters of context below the best are left out (weight e^-6)
PRUNE = 12
#: fills whose parallels are looked up (source, passage) for display
SHOWN_FILLS = 10
#: fills kept per gap, the heaviest (their probabilities are normalised over these)
MAX_FILLS = 300


def cut_context(letters: np.ndarray, side: str, n: int = MAX_CONTEXT) -> np.ndarray:
    """The letters beside a gap that a parallel may match: int ids, ``>= 24`` (MASK, a lacuna)
    ends the context. ``side="left"``: the last ``n`` letters after the last cut; ``"right"``:
    the first ``n`` before the first cut. Returns int64 ``(<= n,)``."""
    x = np.asarray(letters, dtype=np.int64)
    bad = np.flatnonzero((x < 0) | (x >= A.NUM_LETTERS))
    if side == "left":
        if bad.size:
            x = x[bad[-1] + 1 :]
        return x[max(0, len(x) - n) :]
    if bad.size:
        x = x[: bad[0]]
    return x[:n]


@dataclass
class FillParallels:
    """One fill the parallels supply: ``letters`` int64 ``(w,)``, ``context`` the best ``a + b``,
    ``sides`` ``(a, b)`` of that best, ``sources`` independent sources, ``weight`` (module
    docstring), ``prob`` its share of the gap's weights, ``evidence`` sum over its sources of
    ``(a + b) / FULL_CONTEXT`` (see :mod:`.prior`), ``parallels`` best first."""

    letters: np.ndarray
    context: int
    sides: tuple[int, int]
    sources: int
    tier: int
    weight: float = 0.0
    prob: float = 0.0
    evidence: float = 0.0
    parallels: list[Parallel] = field(default_factory=list)
    #: word breaks of its best parallel that disagree with the text's (0: agrees, or not known)
    breaks_disagree: int = 0
    #: the letter its best parallel's word division leaves alone as a word (None: none, or not
    #: judged; ``restore.word_division.lone_in_parallel``): left out of the readings
    lone_letter: int | None = None
    #: of ``weight`` at the edge gain 0, the part of its sources whose own text has an edge
    #: where the fill does (a gap at the stone's edge, :func:`gap_parallels`); ``weight`` is
    #: ``plain_weight + edge_weight * exp(gain)``
    edge_weight: float = 0.0
    plain_weight: float = 0.0
    _group: int = field(default=-1, repr=False)

    def text(self) -> str:
        return A.spell(self.letters)


@dataclass
class GapParallels:
    """The parallels of one gap: ``fills`` ranked (module docstring), ``left``/``right`` the
    context searched (int64 letter ids), ``widths`` searched, ``occurrences`` measured."""

    fills: list[FillParallels]
    left: np.ndarray
    right: np.ndarray
    widths: tuple[int, ...]
    occurrences: int = 0
    #: the index searched (for display)
    index: ParallelsIndex | None = None
    #: the decoder's :class:`~.prior.FillPrior` built from these fills (None: not fused)
    prior: Any = None
    #: the text's word division around the gap, aligned with ``left``/``right``
    #: (:class:`WordBreaks`; None: the text gives none)
    breaks: Any = None
    #: fills left out: a letter alone as a word (``πρὸ [ς δὲ]``, FillParallels.lone_letter)
    lone_words: int = 0
    #: the edge gain the fills' weights are at (:meth:`reweighted`; 0: as searched)
    edge_gain: float = 0.0

    def reweighted(self, edge_gain: float) -> GapParallels:
        """These parallels at ``edge_gain``: :func:`.text_edge.reweighted`."""
        from stoicheia.inference.parallels.text_edge import reweighted

        return reweighted(self, edge_gain)

    def to_json(
        self, index: ParallelsIndex | None = None, top: int = 5, per_fill: int = 3
    ) -> list[dict]:
        """The ``top`` fills, each with its ``per_fill`` best parallels (:meth:`Parallel.to_json`)
        and what they supply, for ``--json``, the page and the API."""
        index = index or self.index
        if index is None:
            return []
        out = []
        for f in self.fills[:top]:
            out.append(
                {
                    "fill": f.text(),
                    "letters_matched": f.context,
                    "sides": list(f.sides),
                    "sources": f.sources,
                    "prob": round(f.prob, 4),
                    "parallels": [p.to_json(index, f.text()) for p in f.parallels[:per_fill]],
                    "lone_letter": f.lone_letter,
                }
            )
        return out


def _longest(index: ParallelsIndex, ctx: np.ndarray, side: str) -> int:
    """The longest ``k`` such that the last (left) / first (right) ``k`` letters of ``ctx``
    occur in the index (0 if none): binary search, as occurrence shrinks with ``k``."""
    lo, hi = 0, len(ctx)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        pat = ctx[len(ctx) - mid :] if side == "left" else ctx[:mid]
        if index.count(pat):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _collect(
    index: ParallelsIndex, ctx: np.ndarray, side: str, budget: int, floor: int
) -> np.ndarray:
    """Int64 slots: for ``left``, where a suffix of ``ctx`` ends; for ``right``, where a prefix of
    ``ctx`` begins; longest contexts first, down to ``floor`` letters, at most ``budget``.

    The slots of a context of ``k`` letters include those of ``k + 1`` (a longer suffix ends
    where its shorter suffix does; a longer prefix starts where its shorter one does), so the
    shortest context whose occurrences fit the budget gives them all; the next shorter one, if
    any, adds an evenly spaced sample of its suffix-array range to fill the budget."""
    top = _longest(index, ctx, side)
    if top < max(floor, 1):
        return np.zeros(0, dtype=np.int64)

    def slots(k: int, lo: int, hi: int, take: int | None = None) -> np.ndarray:
        pick = (
            np.arange(lo, hi)
            if take is None or hi - lo <= take
            else np.unique(np.linspace(lo, hi - 1, take).round().astype(np.int64))
        )
        pos = np.asarray(index.sa[pick], dtype=np.int64)
        return pos + k if side == "left" else pos

    def pattern(k: int) -> np.ndarray:
        return ctx[len(ctx) - k :] if side == "left" else ctx[:k]

    k = top
    lo, hi = index.find(pattern(k))
    if hi - lo > budget:  # even the longest context is common: a sample of it
        return slots(k, lo, hi, budget)
    while k - 1 >= max(floor, 1):
        lo2, hi2 = index.find(pattern(k - 1))
        if hi2 - lo2 > budget:
            got = slots(k, lo, hi)
            extra = np.setdiff1d(slots(k - 1, lo2, hi2, 2 * budget), got)
            if len(extra) > budget - len(got):
                extra = extra[
                    np.linspace(0, len(extra) - 1, budget - len(got)).round().astype(np.int64)
                ]
            return np.concatenate([got, extra])
        k, lo, hi = k - 1, lo2, hi2
    return slots(k, lo, hi)


def _match(text: np.ndarray, at: np.ndarray, ctx: np.ndarray, step: int) -> np.ndarray:
    """Int64 per slot in ``at``: how many letters of ``ctx`` match going from ``at`` by ``step``
    (``+1``: ``text[at + k] == ctx[k]``; ``-1``: ``text[at - 1 - k] == ctx[-1 - k]``). The slots
    still matching are compacted after each letter, so the cost is the letters matched."""
    out = np.zeros(len(at), dtype=np.int64)
    sym = (ctx if step > 0 else ctx[::-1]) + 1
    idx = np.arange(len(at))
    pos = np.asarray(at, dtype=np.int64) if step > 0 else np.asarray(at, dtype=np.int64) - 1
    n = len(text)
    for k in range(len(sym)):
        ok = (pos >= 0) & (pos < n)
        idx, pos = idx[ok], pos[ok]
        if not len(idx):
            break
        same = text[pos] == sym[k]
        idx, pos = idx[same], pos[same]
        if not len(idx):
            break
        out[idx] += 1
        pos = pos + step
    return out


def _run(text: np.ndarray, at: np.ndarray, most: int, step: int) -> np.ndarray:
    """Int64 per slot: letters (no separator) from ``at`` forwards (``step`` 1) or before it
    backwards (``step`` -1), counted up to ``most``."""
    out = np.zeros(len(at), dtype=np.int64)
    idx = np.arange(len(at))
    pos = np.asarray(at, dtype=np.int64) if step > 0 else np.asarray(at, dtype=np.int64) - 1
    n = len(text)
    for _ in range(most):
        ok = (pos >= 0) & (pos < n)
        idx, pos = idx[ok], pos[ok]
        if not len(idx):
            break
        ok = text[pos] > 0
        idx, pos = idx[ok], pos[ok]
        if not len(idx):
            break
        out[idx] += 1
        pos = pos + step
    return out


def _row_keys(rows: np.ndarray) -> np.ndarray:
    """One uint64 per row of a small int matrix, equal for equal rows: a multiplicative hash
    with fixed odd multipliers (wrapping arithmetic; two different rows of the few thousand
    compared collide with probability about 2**-64 per pair)."""
    mult = np.random.default_rng(12345).integers(1, 2**63, size=rows.shape[1], dtype=np.uint64)
    mult |= np.uint64(1)
    with np.errstate(over="ignore"):
        return (rows.astype(np.uint64) * mult[None, :]).sum(axis=1, dtype=np.uint64)


def gap_parallels(
    index: ParallelsIndex,
    left: np.ndarray,
    right: np.ndarray,
    widths: range | tuple[int, ...],
    *,
    max_occurrences: int = MAX_OCCURRENCES,
    min_context: int = MIN_CONTEXT,
    per_fill: int = 5,
    breaks: WordBreaks | None = None,
    to_word_end: bool = False,
    edge_gain: float = 0.0,
) -> GapParallels:
    """The ranked fills of a gap of one of ``widths`` letters (module docstring).

    ``left``/``right``: int letter ids beside the gap (cut at a lacuna here too,
    :func:`cut_context`). ``max_occurrences``: slots collected per side; ``min_context``: letters
    of context matched in all at least; ``per_fill``: parallels kept per fill for display.
    ``breaks``: the word division the text gives around the gap (:class:`WordBreaks`; None:
    not compared). ``to_word_end``: a gap with context on one side only (a stone's edge): each
    occurrence gives one fill, running from the context to the parallel's next word break
    (left context) or from its last word break before the context (right context), of any of
    ``widths`` letters; an occurrence whose word end is not recorded, or too far, gives none.
    ``edge_gain`` (>= 0, natural log; ``fusion.json``'s ``parallels_edge_gain``, fitted on the
    selection half by ``stoicheia benchmark``): with ``to_word_end``, a source whose fill meets
    its own text's edge there (:func:`at_text_edge`: the word before which the text it is cut
    from begins, or after which it ends) weighs ``exp(edge_gain)`` times more: at a stone's
    edge the words that stand at a text's edge in the corpus (the formula that opens an
    epitaph, ``ἐνθάδε κεῖται``; the closing ``χαῖρε``) are likelier than the words that only
    follow the same context inside a text (``καὶ``, ``τοῦ``). The search is made at gain 0 and
    :meth:`GapParallels.reweighted`, so every caller gets the same weights to the bit.
    Returns a :class:`GapParallels` whose ``fills`` may be empty (nothing long enough matched:
    the decoder then backs off to the network and the n-gram).
    """
    left = cut_context(left, "left")
    right = cut_context(right, "right")
    if breaks is not None:
        breaks = breaks.fitted(len(left), len(right))
    widths = tuple(int(w) for w in widths if w >= 1)
    text = index.text
    n = len(text)
    empty = GapParallels([], left, right, widths, index=index)
    if not widths or len(left) + len(right) < min_context or n == 0:
        return empty
    need_l = min(2, len(left))
    need_r = min(2, len(right))
    floor_l = max(1, need_l, min_context - len(right))
    floor_r = max(1, need_r, min_context - len(left))
    ends = (
        _collect(index, left, "left", max_occurrences, floor_l)
        if len(left)
        else np.zeros(0, np.int64)
    )
    starts = (
        _collect(index, right, "right", max_occurrences, floor_r)
        if len(right)
        else np.zeros(0, np.int64)
    )
    top = max(widths)
    # slots after a left match: a is the same for every width; b is measured at p + w
    ends = np.unique(ends)
    a_e = _match(text, ends, left, -1)
    room_e = _run(text, ends, top, +1)  # the letters a fill may take from there
    starts = np.unique(starts)
    b_s = _match(text, starts, right, +1)
    room_s = _run(text, starts, top, -1)
    parts: list[tuple[np.ndarray, ...]] = []
    edge_side = None
    if to_word_end and (len(left) == 0) != (len(right) == 0):
        side = edge_side = "l" if len(left) else "r"
        cand, fixed = (ends, a_e) if side == "l" else (starts, b_s)
        width = word_end_widths(index, cand, top, +1 if side == "l" else -1)
        ok = np.isin(width, widths) & (fixed >= min_context)
        cand, fixed, width = cand[ok], fixed[ok], width[ok]
        if side == "r":
            cand = cand - width
        zero = np.zeros(len(cand), dtype=np.int64)
        parts.append((cand, width, fixed, zero) if side == "l" else (cand, width, zero, fixed))
        widths_loop: tuple[int, ...] = ()
    else:
        widths_loop = widths
    for w in widths_loop:
        for cand, fixed, room, side in ((ends, a_e, room_e, "l"), (starts - w, b_s, room_s, "r")):
            ok = room >= w
            cand, fixed = cand[ok], fixed[ok]
            if not len(cand):
                continue
            if side == "l":
                a, b = fixed, _match(text, cand + w, right, +1)
            else:
                a, b = _match(text, cand, left, -1), fixed
            keep = (a >= need_l) & (b >= need_r) & (a + b >= min_context)
            parts.append((cand[keep], np.full(int(keep.sum()), w), a[keep], b[keep]))
    n_occ = len(ends) + len(starts)
    if not parts or not sum(len(x[0]) for x in parts):
        return GapParallels([], left, right, widths, n_occ, index)
    P, W, A_, B_ = (np.concatenate([x[i] for x in parts]) for i in range(4))
    _, first = np.unique(P * 4096 + W, return_index=True)  # a (slot, width) found from both sides
    P, W, A_, B_ = P[first], W[first], A_[first], B_[first]
    ctx = A_ + B_
    best_ctx = int(ctx.max())
    # a fill PRUNE letters of context below the best weighs exp(-TAU * PRUNE) or less: left out
    keep = ctx >= best_ctx - PRUNE
    P, W, A_, B_, ctx = P[keep], W[keep], A_[keep], B_[keep], ctx[keep]
    # word breaks that disagree with the text's (0 where it gives none): such a parallel runs
    # across a word the gap's context does not have, and ranks below one that agrees
    dis = (
        np.zeros(len(P), np.int64) if breaks is None else breaks.disagreements(index, P, W, A_, B_)
    )
    order = np.lexsort((P, -np.minimum(A_, B_), -ctx, dis > 0))  # best occurrence first
    P, W, A_, B_, ctx, dis = P[order], W[order], A_[order], B_[order], ctx[order], dis[order]
    rec = index.record_of(P)
    work = index.rec_work[rec].astype(np.int64)
    tier = index.rec_tier[rec].astype(np.int64)
    r0 = index.rec_start[rec]
    r1 = index.rec_start[rec + 1] - 1
    # the fill's letters (0 past its width) and the passage around it, as rows to group by
    k = np.arange(top)
    fill_mat = np.where(k[None, :] < W[:, None], text[np.minimum(P[:, None] + k, len(text) - 1)], 0)
    fill_mat = np.concatenate([fill_mat, W[:, None]], axis=1).astype(np.int64)
    _, head, group = np.unique(_row_keys(fill_mat), return_index=True, return_inverse=True)
    kw = np.arange(-20, top + 20)
    at = P[:, None] + kw[None, :]
    inside = (at >= r0[:, None]) & (at < np.minimum(r1, P + W + 20)[:, None])
    win = np.where(inside, text[np.clip(at, 0, len(text) - 1)], 255).astype(np.int64)
    _, win_id = np.unique(_row_keys(win), return_inverse=True)
    # independent sources: the best occurrence per (fill, work), then per (fill, passage)
    _, per_work = np.unique(group * (work.max() + 1) + work, return_index=True)
    per_work = np.sort(per_work)
    _, per_win = np.unique(
        group[per_work] * (win_id.max() + 1) + win_id[per_work], return_index=True
    )
    indep = np.sort(per_work[per_win])
    from stoicheia.inference.parallels.prior import FULL_CONTEXT

    n_fill = int(group.max()) + 1
    weight = np.zeros(n_fill)
    evidence = np.zeros(n_fill)
    sources = np.zeros(n_fill, dtype=np.int64)
    min_tier = np.full(n_fill, 255, dtype=np.int64)
    min_dis = np.full(n_fill, 1 << 30, dtype=np.int64)
    np.minimum.at(min_dis, group[indep], dis[indep])
    term = np.exp(TAU * (ctx[indep] - best_ctx) - BREAK_COST * dis[indep])
    edge = np.zeros(n_fill)
    if edge_side is not None:  # a stone's edge: the part of the sources at their text's edge
        term = edge_part(index, P[indep], W[indep], edge_side, group[indep], term, edge)
    np.add.at(weight, group[indep], term)
    plain = weight.copy()
    weight = weight + edge
    np.add.at(evidence, group[indep], ctx[indep] / FULL_CONTEXT)
    np.add.at(sources, group[indep], 1)
    np.minimum.at(min_tier, group[indep], tier[indep])
    # head: each fill's first row, its best occurrence (rows are sorted best first)
    # the MAX_FILLS heaviest fills (the rest share little of the weight)
    kept = np.argsort(-weight, kind="stable")[:MAX_FILLS]
    total = weight[kept].sum()
    fills: list[FillParallels] = []
    for g_id in sorted(kept.tolist()):
        h = int(head[g_id])
        w = int(W[h])
        fills.append(
            FillParallels(
                letters=fill_mat[h, :w] - 1,
                context=int(ctx[h]),
                sides=(int(A_[h]), int(B_[h])),
                sources=int(sources[g_id]),
                tier=int(min_tier[g_id]),
                weight=float(weight[g_id]),
                prob=float(weight[g_id] / total),
                evidence=float(evidence[g_id]),
                breaks_disagree=int(min_dis[g_id]),
                edge_weight=float(edge[g_id]),
                plain_weight=float(plain[g_id]),
                _group=g_id,
            )
        )
    key = lambda f: (f.breaks_disagree > 0, -f.context, -f.sources, -min(f.sides))  # noqa: E731
    fills.sort(key=lambda f: (*key(f), f.tier, f.letters.tobytes()))
    for f in fills[:SHOWN_FILLS]:  # the sources of the fills a reader is shown
        mine = indep[group[indep] == f._group].tolist()
        mine.sort(key=lambda i: (int(dis[i] > 0), -int(ctx[i]), int(tier[i]), int(P[i])))
        f.parallels = [
            Parallel(
                int(P[i]),
                int(W[i]),
                int(A_[i]),
                int(B_[i]),
                # the lines of the passage matched: left context, fill and right context
                index.source(int(P[i]), (int(P[i] - A_[i]), int(P[i] + W[i] + B_[i]))),
            )
            for i in mine[:per_fill]
        ]
    found = GapParallels(fills, left, right, widths, n_occ, index)
    return found.reweighted(edge_gain) if edge_gain else found


__all__ = [
    "MAX_CONTEXT",
    "MAX_FILLS",
    "MAX_OCCURRENCES",
    "MIN_CONTEXT",
    "PRUNE",
    "SHOWN_FILLS",
    "TAU",
    "BREAK_COST",
    "FillParallels",
    "WordBreaks",
    "GapParallels",
    "Parallel",
    "cut_context",
    "gap_parallels",
]
