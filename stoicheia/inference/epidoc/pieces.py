"""Cut the Leiden text of a long EpiDoc edition into pieces the model sees at once.

:func:`stoicheia.inference.epidoc.restore.restore_epidoc` restores one stretch of an edition
(a text part, or the text between lost lines) with one call of the decoder. The decoder
windows a long text itself, but some of its work is done over the whole text it is given
(rendering each restoration and each gap's alternatives runs the model over every letter), so
a call costs the number of gaps times the length of the text: an edition of millions of
letters (a 20 MB file) never finished. :func:`pieces` cuts a stretch longer than the window
into pieces of at most ``budget`` letter slots, each restored by its own call, so the work
grows linearly with the file.

Where a piece ends. Only at a space outside every Leiden bracket (a word break), or, in a
stretch without one (scriptio continua), before a letter outside the brackets; the cut is
the one, among those that leave the piece at least half the budget, farthest (in slots) from
any lacuna, so a lacuna keeps as much of its context as the window allows; ties go to the
longer piece. A stretch of at most ``budget`` slots is one piece (the common case: an
inscription), so nothing changes for it.
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_left, bisect_right

__all__ = ["pieces", "slot_offsets"]

# opener -> closer of the Leiden brackets (stoicheia.text.leiden._PAIRS: they do not nest)
_PAIRS = {
    "[[": "]]",
    "⟦": "⟧",
    "〚": "〛",
    "[": "]",
    "(": ")",
    "⟨": "⟩",
    "〈": "〉",
    "\u2329": "\u232a",
    "<": ">",
    "{": "}",
    "⸢": "⸣",
    "⌈": "⌉",
    "⸤": "⸥",
    "⌊": "⌋",
    "˹": "˺",
}


def _is_greek_letter(ch: str) -> bool:
    return ("\u0370" <= ch <= "\u03ff" or "\u1f00" <= ch <= "\u1fff") and unicodedata.category(
        ch
    ).startswith("L")


def slot_offsets(text: str, lacunae: dict[int, tuple[int, int]]) -> tuple[list[int], list[bool]]:
    """``(cum, outside)`` for ``text`` (Leiden, well formed): ``cum[i]`` the letter slots
    before character ``i`` (``len(text) + 1`` entries; a Greek letter takes one slot, the
    lacuna that starts at ``i`` takes its slots there, its other characters none),
    ``outside[i]`` True when character ``i`` stands outside every bracket.

    ``lacunae``: ``{start: (end, slots)}``, the spans of the lacunae (their notation inside
    the brackets, as :class:`~stoicheia.text.leiden_segments.Lacuna` gives them) and their slots.
    Linear in ``len(text)``."""
    n = len(text)
    cum = [0] * (n + 1)
    outside = [False] * n
    closer: str | None = None
    i = 0
    while i < n:
        add = 0
        if i in lacunae:
            end, slots = lacunae[i]
            for k in range(i, end):
                cum[k + 1] = cum[k] + (slots if k == i else 0)
            i = end
            continue
        ch = text[i]
        if closer is None:
            opener = text[i : i + 2] if text[i : i + 2] in _PAIRS else ch if ch in _PAIRS else None
            if opener is not None:
                closer = _PAIRS[opener]
                for k in range(i, i + len(opener)):
                    cum[k + 1] = cum[k]
                i += len(opener)
                continue
            outside[i] = True
        elif text.startswith(closer, i):
            for k in range(i, i + len(closer)):
                cum[k + 1] = cum[k]
            i += len(closer)
            closer = None
            continue
        if _is_greek_letter(ch):
            add = 1
        cum[i + 1] = cum[i] + add
        i += 1
    return cum, outside


def pieces(
    text: str, lo: int, hi: int, lacunae: dict[int, tuple[int, int]], budget: int
) -> list[tuple[int, int]]:
    """``[(start, end), ...]``: ``text[lo:hi]`` cut into consecutive pieces of at most
    ``budget`` letter slots each where it can be (module docstring); the pieces cover
    ``[lo, hi)`` without overlap. ``lacunae`` as in :func:`slot_offsets` (indices into
    ``text``). A piece can only be longer than ``budget`` where no cut is allowed within it
    (one long word with a lacuna wider than the rest of the budget, say); the decoder then
    windows it. Linear in ``hi - lo``."""
    if budget < 1:
        raise ValueError(f"budget={budget}: give the slots the model sees at once (>= 1)")
    part = text[lo:hi]
    local = {s - lo: (e - lo, n) for s, (e, n) in lacunae.items() if lo <= s and e <= hi}
    cum, outside = slot_offsets(part, local)
    if cum[-1] <= budget:
        return [(lo, hi)]
    # where each lacuna's slots begin and end, to measure a cut's distance from the nearest
    starts = sorted(cum[s] for s in local)
    ends = sorted(cum[e] for e, _ in local.values())
    spaces = [i for i, c in enumerate(part) if outside[i] and c.isspace()]
    letters = [
        i
        for i, c in enumerate(part)
        if outside[i] and _is_greek_letter(c) and i > 0 and not part[i - 1].isspace()
    ]

    def distance(i: int) -> int:
        x = cum[i]
        before = ends[bisect_right(ends, x) - 1] if bisect_right(ends, x) else None
        after = starts[bisect_left(starts, x)] if bisect_left(starts, x) < len(starts) else None
        gaps = [
            d
            for d in (
                (x - before) if before is not None else None,
                (after - x) if after is not None else None,
            )
            if d is not None
        ]
        return min(gaps) if gaps else 1 << 30

    out: list[tuple[int, int]] = []
    a = 0
    ks = [0, 0]  # first candidate of each list not yet behind a
    while cum[-1] - cum[a] > budget:
        best = None
        for which, cands in enumerate((spaces, letters)):
            k = ks[which]
            while k < len(cands) and cands[k] <= a:
                k += 1
            ks[which] = k
            inside = []
            while k < len(cands) and cum[cands[k]] - cum[a] <= budget:
                inside.append(cands[k])
                k += 1
            if inside:
                floor = cum[a] + budget // 2
                pool = [i for i in inside if cum[i] >= floor]
                # no cut in the second half: the last one (the piece is as long as it can be)
                best = max(pool, key=lambda i: (distance(i), i)) if pool else inside[-1]
                break
        if best is None:  # no cut within the budget: the first one after it
            later = [c[ks[w]] for w, c in enumerate((spaces, letters)) if ks[w] < len(c)]
            if not later:
                break
            best = min(later)
        out.append((lo + a, lo + best))
        a = best
    out.append((lo + a, hi))
    return out
