"""The parallels in a restoration: each gap's context, its parallels, and their prior.

:func:`gap_parallels_for` is what the decoder (:func:`~.decoding.decode_gaps`) and the benchmark
call for one gap: it reads the letters beside the gap from the working sequence (the fills of
the gaps decoded before it count; a gap not yet decoded, a lacuna or an uncertain letter ends
the context on that side), searches the index of ``fusion.parallels``
(:func:`stoicheia.inference.parallels.gap_parallels`) and, when ``fusion.parallels_weight > 0``,
builds the :class:`~stoicheia.inference.parallels.FillPrior` that
:func:`~.gap_search.search_gap` takes as ``prior``.
"""

from __future__ import annotations

import numpy as np

from stoicheia.inference.parallels.prior import FillPrior
from stoicheia.inference.parallels.search import (
    MAX_CONTEXT,
    GapParallels,
    WordBreaks,
    gap_parallels,
)
from stoicheia.inference.restore.gap_search import Fusion
from stoicheia.inference.restore.gaps import Gap, Item
from stoicheia.inference.restore.word_division import lone_in_parallel
from stoicheia.text import alphabet as A


def parallel_context(
    items: list[Item], gaps: list[Gap], fill: dict[int, np.ndarray], g: int, n: int = MAX_CONTEXT
) -> tuple[np.ndarray, np.ndarray]:
    """Int64 letter ids: at most ``n`` before gap ``g`` and ``n`` after it, each cut at the
    nearest open gap, lacuna or uncertain letter (MASK there). The fills in ``fill`` (gap index
    -> symbols, BLANK slots dropped) count as letters."""
    at = next(i for i, it in enumerate(items) if it.gap == g)

    def side(seq: list[Item]) -> list[int]:
        out: list[int] = []
        for it in seq:
            if it.gap is None:
                out.append(int(it.values[0]))  # type: ignore[index]
            elif it.gap in fill:
                letters = [int(s) for s in fill[it.gap] if 0 <= s < A.NUM_LETTERS]
                out.extend(letters if seq is not before_items else letters[::-1])
            else:
                out.append(A.MASK)  # an open gap or an uncertain letter: the context ends
                break
            if len(out) >= n:
                break
        return out

    before_items = items[:at][::-1]
    left = side(before_items)[::-1]
    right = side(items[at + 1 :])
    return np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)


def word_breaks(
    items: list[Item], gaps: list[Gap], fill: dict[int, np.ndarray], g: int, n: int = MAX_CONTEXT
) -> WordBreaks | None:
    """The word division the text gives around gap ``g`` (:class:`WordBreaks`), aligned slot
    for slot with :func:`parallel_context`'s letters (the same ``fill``); ``None`` for a text
    without a typed word break (scriptio continua, or ``--respace``: its breaks are the model's
    to predict). Inside another gap's fill the breaks are unknown, after it the text's."""
    known = [it.values[1] for it in items if it.gap is None and it.values is not None]
    if A.BOUNDARY_WORD not in known[:-1]:
        return None
    at = next(i for i, it in enumerate(items) if it.gap == g)

    def side(seq: list[Item], rev: bool) -> list[int]:
        out: list[int] = []
        for it in seq:
            if it.gap is None:
                out.append(int(it.values[1]))  # type: ignore[index]
            elif it.gap in fill:
                m = sum(1 for s in fill[it.gap] if 0 <= s < A.NUM_LETTERS)
                run = [A.BOUNDARY_UNKNOWN] * max(m - 1, 0) + [gaps[it.gap].end_boundary] * (m > 0)
                out.extend(run[::-1] if rev else run)
            else:
                out.append(A.BOUNDARY_UNKNOWN)  # the context ends here (MASK)
                break
            if len(out) >= n:
                break
        return out

    left = side(items[:at][::-1], True)[::-1]
    right = side(items[at + 1 :], False)
    return WordBreaks(
        np.asarray(left, dtype=np.int64), int(gaps[g].end_boundary), np.asarray(right, np.int64)
    )


def gap_parallels_for(
    fusion: Fusion | None,
    items: list[Item],
    gaps: list[Gap],
    fill: dict[int, np.ndarray],
    g: int,
    prior: bool = True,
) -> GapParallels | None:
    """The parallels of gap ``g`` (``None`` when ``fusion`` has no index), with ``.prior`` set
    when the parallels are fused letter by letter (``prior``, ``fusion.parallels_weight > 0``
    and some fill was found) and ``.breaks`` the text's word division around the gap
    (:func:`word_breaks`, aligned with the context searched; None: the text gives none).

    A gap with text on one side only (``gap.one_sided``: a stone's edge) is searched with that
    side's context alone, each parallel giving one fill that runs to its word's end, a
    parallel whose own text has an edge there weighing ``exp(fusion.edge_gain)`` times more."""
    if fusion is None or fusion.parallels is None:
        return None
    gap = gaps[g]
    left, right = parallel_context(items, gaps, fill, g)
    breaks = word_breaks(items, gaps, fill, g)
    if breaks is not None and (len(breaks.left) != len(left) or len(breaks.right) != len(right)):
        breaks = None  # another gap's fill of another width beside it: not aligned
    if gap.one_sided == "left":  # a stone's edge after it: the letters beyond are not adjacent
        right = right[:0]
    elif gap.one_sided == "right":
        left = left[:0]
    found = gap_parallels(
        fusion.parallels,
        left,
        right,
        range(max(gap.min_letters, 1), gap.max_letters + 1),
        breaks=breaks,
        to_word_end=gap.one_sided is not None,
        edge_gain=getattr(fusion, "edge_gain", 0.0),
    )
    found.breaks = breaks.fitted(len(found.left), len(found.right)) if breaks else None
    # a fill printed with its source's word division must not leave a letter alone as a word
    # (πρὸ [...] and πρὸς δὲ: πρὸ [ς δὲ]): marked here, left out by the decoders, counted
    for f in found.fills:
        f.lone_letter = lone_in_parallel(fusion.parallels, found, f)
    found.lone_words = sum(f.lone_letter is not None for f in found.fills)
    if prior and fusion.parallels_weight > 0 and found.fills:
        found.prior = FillPrior(found.fills, fusion.parallels_weight)
    return found


__all__ = ["gap_parallels_for", "parallel_context", "word_breaks"]
