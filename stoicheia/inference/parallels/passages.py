"""The corpus passages that share the longest stretches with a text (``stoicheia parallels``).

What PHI's search gives an epigrapher who types a few words: every record of the index that
carries a long run of the text's letters, best first. Found with matching statistics over the
suffix array: for each letter ``i`` of the text, the longest run from ``i`` that occurs in the
index (``ms[i]``, found by extending ``ms[i-1] - 1``, since a run from ``i - 1`` less its first
letter occurs too: amortised ``O(n)`` suffix-array searches). A run is kept when it is maximal
(not inside the run of the letter before) and at least ``min_letters`` long; its occurrences are
grouped by record. Records are ranked by their longest shared run, then by the letters they
share in all, then by tier. Word division is ignored, a lacuna of the text ends a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stoicheia.inference.parallels.index import ParallelsIndex
from stoicheia.inference.parallels.parallel import passage
from stoicheia.text import alphabet as A

#: occurrences looked at per run (an evenly spaced sample of its suffix-array range beyond this)
MAX_PER_RUN = 500


@dataclass
class SharedRun:
    """A run of the text's letters ``[start, start + length)`` found at index slot ``pos``."""

    start: int
    length: int
    pos: int


@dataclass
class PassageMatch:
    """One record sharing runs with the text: ``record_index`` (row of the index), ``runs``
    (longest first), ``longest`` and ``shared`` (letters of the text covered) letters."""

    record_index: int
    runs: list[SharedRun] = field(default_factory=list)
    longest: int = 0
    shared: int = 0
    tier: int = 0

    def to_json(self, index: ParallelsIndex, margin: int = 30) -> dict:
        """Source, the letters shared, and the passage around the longest run as printed, in the
        five pieces of :meth:`~.search.Parallel.to_json` (the run is the middle piece)."""
        run = self.runs[0]
        src = index.source(run.pos, (run.pos, run.pos + run.length))
        r0, r1 = index.record_span(self.record_index)
        a = max(r0, run.pos - margin)
        b = min(r1, run.pos + run.length + margin)
        pieces = index.printed_parts(
            a, b, [run.pos, run.pos, run.pos + run.length, run.pos + run.length]
        )
        return {
            "tier": src.tier,
            "work": src.work,
            "record": src.record,
            "label": src.label(),
            "line": src.line,
            "url": src.url,
            "longest": self.longest,
            "shared": self.shared,
            "runs": [[r.start, r.length] for r in self.runs],
            "pieces": pieces,
            "passage": passage(pieces, a > r0, b < r1).replace("⸢⸣", ""),
        }


def matching_statistics(index: ParallelsIndex, letters: np.ndarray) -> np.ndarray:
    """Int64 ``(n,)``: for each ``i``, the longest ``k`` with ``letters[i:i+k]`` in the index
    (0 at a lacuna, ``>= 24``; a run never crosses one)."""
    x = np.asarray(letters, dtype=np.int64)
    n = len(x)
    ms = np.zeros(n, dtype=np.int64)
    bad = np.flatnonzero((x < 0) | (x >= A.NUM_LETTERS))
    stop = np.full(n, n, dtype=np.int64)  # the first cut at or after i
    nxt = n
    cuts = set(bad.tolist())
    for i in range(n - 1, -1, -1):
        if i in cuts:
            nxt = i
        stop[i] = nxt
    k = 0
    for i in range(n):
        k = max(k - 1, 0)
        if i in cuts:
            k = 0
            continue
        k = min(k, stop[i] - i)
        while i + k < stop[i] and index.count(x[i : i + k + 1]):
            k += 1
        ms[i] = k
    return ms


def shared_passages(
    index: ParallelsIndex, letters: np.ndarray, *, min_letters: int = 8, top: int = 10
) -> list[PassageMatch]:
    """The ``top`` records sharing the longest runs (module docstring) with ``letters`` (int
    ids, ``>= 24`` a lacuna), best first; ``[]`` when no run reaches ``min_letters``."""
    ms = matching_statistics(index, letters)
    x = np.asarray(letters, dtype=np.int64)
    runs = [
        (i, int(ms[i]))
        for i in range(len(ms))
        if ms[i] >= min_letters and (i == 0 or ms[i - 1] - 1 < ms[i])
    ]
    by_rec: dict[int, PassageMatch] = {}
    for i, k in runs:
        lo, hi = index.find(x[i : i + k])
        if hi - lo > MAX_PER_RUN:
            pick = np.unique(np.linspace(lo, hi - 1, MAX_PER_RUN).round().astype(np.int64))
            pos = np.asarray(index.sa[pick], dtype=np.int64)
        else:
            pos = np.asarray(index.sa[lo:hi], dtype=np.int64)
        for p, r in zip(pos.tolist(), index.record_of(pos).tolist(), strict=True):
            m = by_rec.setdefault(r, PassageMatch(r, tier=int(index.rec_tier[r])))
            if any(run.start == i for run in m.runs):
                continue
            m.runs.append(SharedRun(i, k, p))
    for m in by_rec.values():
        m.runs.sort(key=lambda r: (-r.length, r.start))
        m.longest = m.runs[0].length
        covered = np.zeros(len(x), dtype=bool)
        for r in m.runs:
            covered[r.start : r.start + r.length] = True
        m.shared = int(covered.sum())
    ranked = sorted(by_rec.values(), key=lambda m: (-m.longest, -m.shared, m.tier, m.record_index))
    return ranked[:top]


__all__ = ["MAX_PER_RUN", "PassageMatch", "SharedRun", "matching_statistics", "shared_passages"]
