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
from stoicheia.inference.parallels.search import MAX_CONTEXT, GapParallels, gap_parallels
from stoicheia.inference.restore.gap_search import Fusion
from stoicheia.inference.restore.gaps import Gap, Item
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


def gap_parallels_for(
    fusion: Fusion | None,
    items: list[Item],
    gaps: list[Gap],
    fill: dict[int, np.ndarray],
    g: int,
) -> GapParallels | None:
    """The parallels of gap ``g`` (``None`` when ``fusion`` has no index), with ``.prior`` set
    when the parallels are fused (``fusion.parallels_weight > 0`` and some fill was found)."""
    if fusion is None or fusion.parallels is None:
        return None
    gap = gaps[g]
    left, right = parallel_context(items, gaps, fill, g)
    found = gap_parallels(
        fusion.parallels, left, right, range(max(gap.min_letters, 1), gap.max_letters + 1)
    )
    if fusion.parallels_weight > 0 and found.fills:
        found.prior = FillPrior(found.fills, fusion.parallels_weight)
    return found


__all__ = ["gap_parallels_for", "parallel_context"]
