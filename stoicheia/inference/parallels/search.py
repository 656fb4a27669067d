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

from stoicheia.inference.parallels.index import ParallelsIndex, Source
from stoicheia.text import alphabet as A

#: context letters looked at on each side (the search is unbounded up to this)
MAX_CONTEXT = 64
#: occurrences collected per side before the back-off stops
MAX_OCCURRENCES = 3000
#: at least this many context letters matched in all (a + b)
MIN_CONTEXT = 5
#: a fill's weight per source: exp(TAU * (a + b - M)), per letter of context
TAU = 0.5


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
class Parallel:
    """One passage that supplies a fill: ``pos`` the slot of the fill's first letter, ``width``
    letters, ``left``/``right`` the context letters matched on each side, ``source``."""

    pos: int
    width: int
    left: int
    right: int
    source: Source

    def to_json(self, index: ParallelsIndex, fill: str, margin: int = 25) -> dict:
        """The parallel for ``--json`` and the page: the source, what it ``supplies``, and the
        passage as printed in five ``pieces``: text before, left context matched, the fill,
        right context matched, text after (:meth:`passage` joins them with marks)."""
        r0, r1 = index.record_span(self.source.record_index)
        a = max(r0, self.pos - self.left - margin)
        b = min(r1, self.pos + self.width + self.right + margin)
        q = self.pos + self.width
        pieces = index.printed_parts(a, b, [self.pos - self.left, self.pos, q, q + self.right])
        return {
            "tier": self.source.tier,
            "work": self.source.work,
            "record": self.source.record,
            "label": self.source.label(),
            "url": self.source.url,
            "record_index": self.source.record_index,
            "at": [self.pos - self.left - r0, q + self.right - r0],
            "letters_matched": [self.left, self.right],
            "supplies": pieces[2].strip() or fill,
            "pieces": pieces,
            "passage": passage(pieces, a > r0, b < r1),
        }


def passage(pieces: list[str], cut_before: bool, cut_after: bool) -> str:
    """The five pieces of :meth:`Parallel.to_json` as one line: the matched context between
    ``⟪ ⟫``, the fill between ``⸢ ⸣``, ``…`` where the record goes on."""
    before, ml, fill, mr, after = pieces
    s = before + (f"⟪{ml.rstrip()}⟫" + (" " if ml.endswith(" ") else "") if ml else "")
    s += f"⸢{fill.rstrip()}⸣" + (" " if fill.endswith(" ") else "")
    s += (f"⟪{mr.rstrip()}⟫" + (" " if mr.endswith(" ") else "") if mr else "") + after
    return ("… " if cut_before else "") + s.strip() + (" …" if cut_after else "")


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

    def text(self) -> str:
        return "".join(A.LETTERS[int(i)] for i in self.letters)


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
    ``ctx`` begins; longest contexts first, down to ``floor`` letters, at most ``budget``."""
    top = _longest(index, ctx, side)
    got: list[np.ndarray] = []
    seen = np.zeros(0, dtype=np.int64)
    n = 0
    for k in range(top, max(floor, 1) - 1, -1):
        pat = ctx[len(ctx) - k :] if side == "left" else ctx[:k]
        lo, hi = index.find(pat)
        left_over = budget - n
        if hi - lo > 4 * left_over:  # a short, common context: an even sample of its range
            pick = np.unique(np.linspace(lo, hi - 1, 2 * left_over).round().astype(np.int64))
            pos = np.asarray(index.sa[pick], dtype=np.int64)
        else:
            pos = np.asarray(index.sa[lo:hi], dtype=np.int64)
        if side == "left":
            pos = pos + k
        new = np.setdiff1d(pos, seen, assume_unique=False)
        if not len(new):
            continue
        if n + len(new) > budget:
            take = budget - n
            if take <= 0:
                break
            new = new[np.linspace(0, len(new) - 1, take).round().astype(np.int64)]
        got.append(new)
        seen = np.union1d(seen, new)
        n += len(new)
        if n >= budget:
            break
    return np.concatenate(got) if got else np.zeros(0, dtype=np.int64)


def _match_back(text: np.ndarray, end: np.ndarray, ctx: np.ndarray) -> np.ndarray:
    """Int64 per slot in ``end``: how many letters before it equal the last letters of ``ctx``."""
    out = np.zeros(len(end), dtype=np.int64)
    alive = np.ones(len(end), dtype=bool)
    sym = ctx[::-1] + 1
    for k in range(len(ctx)):
        at = end - 1 - k
        ok = alive & (at >= 0)
        vals = np.zeros(len(end), dtype=np.int64)
        vals[ok] = text[at[ok]]
        alive = ok & (vals == sym[k])
        out += alive
        if not alive.any():
            break
    return out


def _match_fwd(text: np.ndarray, start: np.ndarray, ctx: np.ndarray) -> np.ndarray:
    """Int64 per slot in ``start``: how many letters from it equal the first letters of ``ctx``."""
    out = np.zeros(len(start), dtype=np.int64)
    alive = np.ones(len(start), dtype=bool)
    n = len(text)
    for k in range(len(ctx)):
        at = start + k
        ok = alive & (at < n)
        vals = np.zeros(len(start), dtype=np.int64)
        vals[ok] = text[at[ok]]
        alive = ok & (vals == ctx[k] + 1)
        out += alive
        if not alive.any():
            break
    return out


def gap_parallels(
    index: ParallelsIndex,
    left: np.ndarray,
    right: np.ndarray,
    widths: range | tuple[int, ...],
    *,
    max_occurrences: int = MAX_OCCURRENCES,
    min_context: int = MIN_CONTEXT,
    per_fill: int = 5,
) -> GapParallels:
    """The ranked fills of a gap of one of ``widths`` letters (module docstring).

    ``left``/``right``: int letter ids beside the gap (cut at a lacuna here too,
    :func:`cut_context`). ``max_occurrences``: slots collected per side; ``min_context``: letters
    of context matched in all at least; ``per_fill``: parallels kept per fill for display.
    Returns a :class:`GapParallels` whose ``fills`` may be empty (nothing long enough matched:
    the decoder then backs off to the network and the n-gram).
    """
    left = cut_context(left, "left")
    right = cut_context(right, "right")
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
    rows = []  # (fill start, width, a, b)
    for w in widths:
        cand = np.unique(np.concatenate([ends, starts - w]))
        cand = cand[(cand >= 0) & (cand + w <= n)]
        if not len(cand):
            continue
        # the fill must be letters of one record: no separator inside
        inside = np.ones(len(cand), dtype=bool)
        for k in range(w):
            inside &= text[cand + k] > 0
        cand = cand[inside]
        if not len(cand):
            continue
        a = _match_back(text, cand, left)
        b = _match_fwd(text, cand + w, right)
        keep = (a >= need_l) & (b >= need_r) & (a + b >= min_context)
        for p, x, y in zip(cand[keep].tolist(), a[keep].tolist(), b[keep].tolist(), strict=True):
            rows.append((p, w, x, y))
    if not rows:
        return GapParallels([], left, right, widths, len(ends) + len(starts), index)
    best_ctx = max(x + y for _, _, x, y in rows)
    rec = index.record_of(np.array([r[0] for r in rows]))
    by_fill: dict[bytes, list[tuple[int, int, int, int, int]]] = {}
    for (p, w, x, y), r in zip(rows, rec.tolist(), strict=True):
        by_fill.setdefault(bytes(text[p : p + w]), []).append((p, w, x, y, r))
    from stoicheia.inference.parallels.prior import FULL_CONTEXT

    fills: list[FillParallels] = []
    for key, occ in by_fill.items():
        occ.sort(key=lambda o: (-(o[2] + o[3]), -min(o[2], o[3]), o[0]))
        # independent sources: one per work, and works with the same passage around the fill once
        per_work: dict[int, tuple] = {}
        for o in occ:
            per_work.setdefault(int(index.rec_work[o[4]]), o)
        windows: dict[bytes, tuple] = {}
        for o in per_work.values():
            p, w = o[0], o[1]
            r0, r1 = index.record_span(o[4])
            win = bytes(text[max(r0, p - 20) : min(r1, p + w + 20)])
            windows.setdefault(win, o)
        indep = list(windows.values())
        weight = float(sum(np.exp(TAU * (o[2] + o[3] - best_ctx)) for o in indep))
        evidence = float(sum((o[2] + o[3]) / FULL_CONTEXT for o in indep))
        head = occ[0]
        tier = min(int(index.rec_tier[o[4]]) for o in indep)
        shown = sorted(indep, key=lambda o: (-(o[2] + o[3]), int(index.rec_tier[o[4]]), o[0]))
        fills.append(
            FillParallels(
                letters=np.frombuffer(key, dtype=np.uint8).astype(np.int64) - 1,
                context=head[2] + head[3],
                sides=(head[2], head[3]),
                sources=len(indep),
                tier=tier,
                weight=weight,
                evidence=evidence,
                parallels=[
                    Parallel(o[0], o[1], o[2], o[3], index.source(o[0])) for o in shown[:per_fill]
                ],
            )
        )
    total = sum(f.weight for f in fills)
    for f in fills:
        f.prob = f.weight / total
    fills.sort(key=lambda f: (-f.context, -f.sources, -min(f.sides), f.tier, f.text()))
    return GapParallels(fills, left, right, widths, len(ends) + len(starts), index)


__all__ = [
    "MAX_CONTEXT",
    "MAX_OCCURRENCES",
    "MIN_CONTEXT",
    "TAU",
    "FillParallels",
    "GapParallels",
    "Parallel",
    "cut_context",
    "gap_parallels",
]
