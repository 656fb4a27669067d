"""A gap's width: its bounds in letters as the options read the notation, the options' ranges
(:func:`check_options`), and the error for a lacuna wider than the model can fill.
"""

from __future__ import annotations

from typing import Any

from stoicheia.inference.restore.gaps import GapTooWideError, RestoreError
from stoicheia.text.leiden_segments import MAX_LACUNA_WIDTH, Lacuna


def gap_bounds(seg: Lacuna, unknown_width: int, about_margin: float) -> tuple[int, int]:
    """The bounds ``(min, max)`` in letters of the lacuna ``seg`` (module docstring of
    :mod:`~stoicheia.inference.restore.reading`)."""
    if seg.max_width is None:  # [---]: 1 or more; [-min.N-]: N or more
        lo = max(1, seg.min_width)
        return lo, max(unknown_width, lo)
    if seg.approximate:
        m = max(1, round(about_margin * seg.max_width))
        return max(1, seg.max_width - m), seg.max_width + m
    return seg.min_width, seg.max_width


def check_options(
    *, unknown_width: int = 20, about_margin: float = 0.25, window: int | None = None
) -> None:
    """Raise :class:`RestoreError` for an option out of range: ``unknown_width`` outside
    ``1..MAX_LACUNA_WIDTH`` letters, ``about_margin`` not a number in ``[0, 1]``, a negative
    ``window``."""
    if not isinstance(unknown_width, int) or not 1 <= unknown_width <= MAX_LACUNA_WIDTH:
        raise RestoreError(
            f"unknown_width={unknown_width!r}: a lacuna of unknown width holds 1 to "
            f"{MAX_LACUNA_WIDTH:,} letters; "
            "give a whole number in that range (default 20)"
        )
    if not isinstance(about_margin, (int, float)) or not 0 <= about_margin <= 1:  # also refuses nan
        raise RestoreError(
            f"about_margin={about_margin!r}: [-ca.N-] is read as "
            "N ± max(1, round(margin × N)) letters; "
            "give a fraction from 0 to 1 (default 0.25)"
        )
    if window is not None and (not isinstance(window, int) or window < 0):
        raise RestoreError(
            f"window={window!r}: give the slots the model sees at once (>= 1), "
            "or 0 to refuse windowing"
        )


#: the fix for a lacuna longer than the model can fill: its width is the stone's, not a choice
SPLIT_FIX = "restore the text on each side of it on its own (a loss this long is not filled whole)"


def gap_too_wide(
    seg: Lacuna, notation: str, lo: int, hi: int, slots: int, limit: int, why: str
) -> GapTooWideError:
    """The error for a lacuna ``seg`` read as ``lo..hi`` letters in ``slots`` slots, more than
    ``limit`` slots (``why``: where the limit comes from)."""
    if seg.known_width:
        return GapTooWideError(
            f"the lacuna {notation!r} holds {hi:,} letters, more than the model can fill: "
            f"at most {limit:,} letters "
            f"at once ({why}); {SPLIT_FIX}"
        )
    if seg.max_width is None:
        fix = f"give --unknown-width {max(1, limit - 2)} or less"
    elif seg.approximate and seg.max_width + 2 <= limit:
        fix = f"give a smaller --about-margin, or {SPLIT_FIX}"
    else:  # even read as exactly its width it does not fit: a margin cannot help
        fix = f"{SPLIT_FIX[:-1]}: at most {max(1, limit - 2):,} letters are)"
    return GapTooWideError(
        f"the lacuna {notation!r} may hold up to {hi:,} letters "
        f"({slots:,} slots: its letters and 2 where it may end), more "
        f"than the model can fill: at most {limit:,} slots at once ({why}); {fix}"
    )


def gap_slots(seg: Lacuna, lo: int, hi: int) -> int:
    """MASK slots a lacuna read as ``lo..hi`` letters takes: ``hi`` for a counted width, else
    ``hi + 2`` (2 slots where the gap may end: BLANK)."""
    return hi if (lo == hi and not seg.approximate and seg.max_width is not None) else hi + 2


def square_brackets(text: str) -> list[tuple[int, int]]:
    """``(open, close)`` offsets of every ``[ ]`` of ``text`` (not the erasure ``[[ ]]``);
    Leiden brackets do not nest (:func:`~stoicheia.text.leiden.parse_leiden` has checked)."""
    out = []
    i = 0
    while i < len(text):
        if text.startswith("[[", i):
            j = text.find("]]", i + 2)
            i = len(text) if j < 0 else j + 2
        elif text[i] == "[":
            j = text.find("]", i + 1)
            if j < 0:
                break
            out.append((i, j))
            i = j + 1
        else:
            i += 1
    return out


def notation_span(
    text: str, brackets: list[tuple[int, int]], a: int, b: int
) -> tuple[int, int, bool]:
    """The span of a gap whose own part of ``text`` is ``[a, b)``: the whole bracket when the
    bracket holds nothing else (``[ - - - ]``), else the part without its edge spaces; and
    whether the span holds the brackets."""
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    for o, c in brackets:
        if o < a and b <= c:
            if not text[o + 1 : a].strip() and not text[b:c].strip():
                return o, c + 1, True
            break
    return a, b, False


#: the brackets whose dots are lost letters (``⟦...⟧``, ``⸢..υλῇ⸣``), kept around a fill
_DOTTED_OPENERS = ("[[", "⟦", "〚", "⸢", "⌈", "⸤", "⌊", "˹")
_DOTTED_CLOSERS = ("]]", "⟧", "〛", "⸣", "⌉", "⸥", "⌋", "˺")


def dots_in_brackets(text: str, a: int, b: int) -> tuple[int, int, bool]:
    """For a lacuna of dots inside an erasure or half brackets (``⟦...⟧``, ``⟦βο..ῇ⟧``,
    ``⸢..υλῇ⸣``; its span ``[a, b)`` of ``text`` may run from the opening bracket or to the
    closing one): the span of its dots alone and True, its fill to be printed ``[fill]`` inside
    the brackets, which stay (``⟦[ντε]⟧``, ``⸢[βο]υλῇ⸣``: letters restored where the stone's
    are lost, never printed as read). Any other span: ``(a, b, False)``."""
    i, j = a, b
    for o in _DOTTED_OPENERS:
        if text.startswith(o, i, j):
            i += len(o)
            break
    for c in _DOTTED_CLOSERS:
        if j - len(c) >= i and text.startswith(c, j - len(c)):
            j -= len(c)
            break
    while i < j and text[i].isspace():
        i += 1
    while j > i and text[j - 1].isspace():
        j -= 1
    if _inside_dotted(text, i, j):
        return i, j, True
    return a, b, False


def _inside_dotted(text: str, a: int, b: int) -> bool:
    """Is ``text[a:b]`` a run of dots (spaced or not) between an open ``⟦``/``⸢``-like bracket
    and its close?"""
    if a >= b or text[a:b].replace(" ", "").replace("\t", "").strip(".") != "":
        return False
    before = text[:a]
    opened = max(before.rfind(o) for o in _DOTTED_OPENERS)
    closed = max(before.rfind(c) for c in _DOTTED_CLOSERS)
    return opened > closed


def check_widths(
    text: str,
    segments: list[Any],
    *,
    unknown_width: int,
    about_margin: float,
    max_slots: int,
    limit_why: str,
) -> None:
    """Raise :class:`GapTooWideError` for the first lacuna of ``segments`` (the Leiden parse of
    ``text``) that takes more than ``max_slots`` slots (``limit_why``: where that limit comes
    from)."""
    for seg in segments:
        if isinstance(seg, Lacuna):
            lo, hi = gap_bounds(seg, unknown_width, about_margin)
            slots = gap_slots(seg, lo, hi)
            if slots > max_slots:
                a, b, _ = notation_span(text, square_brackets(text), seg.start, seg.end)
                raise gap_too_wide(seg, text[a:b], lo, hi, slots, max_slots, limit_why)


__all__ = [
    "check_options",
    "check_widths",
    "dots_in_brackets",
    "gap_bounds",
    "gap_slots",
    "SPLIT_FIX",
    "gap_too_wide",
    "notation_span",
    "square_brackets",
]
