"""Reading a Leiden text for :func:`stoicheia.inference.restore.restore`: its gaps, its working sequence.

The text goes through the project's Leiden parser
(:func:`stoicheia.text.leiden.parse_leiden`) and encoder
(:func:`stoicheia.text.encode.encode_text`). Every lacuna becomes a *gap*:

* ``[...]``, ``[.5.]``: exactly N letters;
* ``[5±3]``, ``[.3-6.]``: between the two bounds; ``[-ca.5-]``: about N, read as
  ``N - m .. N + m`` with ``m = max(1, round(about_margin * N))``;
* ``[---]``: at least 1 and at most ``unknown_width`` letters.

A gap of uncertain width gets its *maximum* width plus 2 slots, all MASK, as the elastic
noise of training makes them (a word of L letters becomes L + 2 + u MASK slots whose targets
are the letters followed by BLANK); the model's BLANK ends the gap. Letters an editor
supplied (``[καὶ]``) are kept as text, or re-predicted as a gap of their width
(``supplements="repredict"``). Letters with a dot below (uncertain readings) stay visible to
the model but are decoded like gap slots, so the model may change them.
"""

from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass
from typing import Any

import numpy as np

from stoicheia.text import alphabet as A
from stoicheia.text.encode import encode_text, text_to_planes
from stoicheia.text.leiden import (
    MAX_LACUNA_WIDTH,
    Editorial,
    Lacuna,
    LacunaTooWideError,
    LeidenError,
    Text,
    parse_leiden,
)


class RestoreError(ValueError):
    """The text cannot be restored as given; the message says what to change."""


class GapTooWideError(RestoreError):
    """A lacuna wider than the model can fill (or than any lacuna the parser reads)."""


@dataclass
class Gap:
    """One stretch the model fills: a lacuna, a re-predicted supplement or an uncertain letter.

    ``notation``: what the input had there; ``min_letters``/``max_letters``: the bounds of its
    width in letters; ``slots``: MASK slots it takes (``max_letters`` for a fixed width, else
    ``max_letters + 2``); ``read``: the letters visible to the model (an uncertain letter's
    reading, an editor's supplement when kept visible), else ``None``.
    """

    notation: str
    kind: str  # "lacuna" | "supplement" | "uncertain"
    min_letters: int
    max_letters: int
    slots: int
    read: str | None = None
    #: what the input says follows the gap: 1/2 a word/sentence break (a space or a stop
    #: after the bracket), 0 the next letter of the same word
    end_boundary: int = A.BOUNDARY_INTERNAL

    @property
    def fixed_width(self) -> bool:
        return self.min_letters == self.max_letters and self.slots == self.max_letters



@functools.lru_cache(maxsize=4096)
def _letters_in(ch: str) -> int:
    """Letter slots the encoder gives one code point (0 or 1)."""
    return len(text_to_planes(ch)[0])


def _letter_flags(segments: list[Any]) -> tuple[list[bool], list[bool], list[int]]:
    """Per letter slot of the encoded text (not lacuna slots), in reading order: uncertain
    (dot below), supplied by an editor in ``[ ]``, and the index of its supplement (-1)."""
    uncertain: list[bool] = []
    supplied: list[bool] = []
    group: list[int] = []
    k = 0
    for seg in segments:
        if isinstance(seg, Text) or (isinstance(seg, Editorial) and seg.reason != "surplus"):
            is_sup = isinstance(seg, Editorial) and seg.reason == "lost"
            for ch, unc in zip(seg.text, seg.uncertain, strict=True):
                for _ in range(_letters_in(unicodedata.normalize("NFC", ch))):
                    uncertain.append(bool(unc))
                    supplied.append(is_sup)
                    group.append(k if is_sup else -1)
            if is_sup:
                k += 1
    return uncertain, supplied, group


def _gap_bounds(seg: Lacuna, unknown_width: int, about_margin: float) -> tuple[int, int]:
    if seg.max_width is None:
        return 1, unknown_width
    if seg.approximate:
        m = max(1, round(about_margin * seg.max_width))
        return max(1, seg.max_width - m), seg.max_width + m
    return seg.min_width, seg.max_width


@dataclass
class Item:
    """One element of the working sequence: a known letter (planes values) or a gap index."""

    gap: int | None
    values: tuple[int, int, int, int, int] | None = None  # chars, boundary, dia, cap, punct


def check_options(*, unknown_width: int = 20, about_margin: float = 0.25, window: int | None = None) -> None:
    """Raise :class:`RestoreError` for an option out of range: ``unknown_width`` outside
    ``1..MAX_LACUNA_WIDTH`` letters, ``about_margin`` not a number in ``[0, 1]``, a negative
    ``window``."""
    if not isinstance(unknown_width, int) or not 1 <= unknown_width <= MAX_LACUNA_WIDTH:
        raise RestoreError(
            f"unknown_width={unknown_width!r}: a lacuna of unknown width holds 1 to {MAX_LACUNA_WIDTH:,} letters; "
            "give a whole number in that range (default 20)"
        )
    if not isinstance(about_margin, (int, float)) or not 0 <= about_margin <= 1:  # also refuses nan
        raise RestoreError(
            f"about_margin={about_margin!r}: [-ca.N-] is read as N ± max(1, round(margin × N)) letters; "
            "give a fraction from 0 to 1 (default 0.25)"
        )
    if window is not None and (not isinstance(window, int) or window < 0):
        raise RestoreError(f"window={window!r}: give the slots the model sees at once (>= 1), or 0 to refuse windowing")


def _gap_too_wide(seg: Lacuna, notation: str, lo: int, hi: int, slots: int, limit: int, why: str) -> GapTooWideError:
    """The error for a lacuna ``seg`` read as ``lo..hi`` letters in ``slots`` slots, more than
    ``limit`` slots (``why``: where the limit comes from)."""
    if seg.known_width:
        return GapTooWideError(
            f"the lacuna {notation!r} holds {hi:,} letters, more than the model can fill: at most {limit:,} letters "
            f"at once ({why}); restore a narrower lacuna"
        )
    if seg.max_width is None:
        fix = f"give --unknown-width {max(1, limit - 2)} or less"
    elif seg.approximate:
        fix = "give a smaller --about-margin or a narrower lacuna"
    else:
        fix = "give a narrower lacuna"
    return GapTooWideError(
        f"the lacuna {notation!r} may hold up to {hi:,} letters ({slots:,} slots with the 2 that BLANK may end), more "
        f"than the model can fill: at most {limit:,} slots at once ({why}); {fix}"
    )


def parse_input(
    text: str,
    *,
    supplements: str = "keep",
    unknown_width: int = 20,
    about_margin: float = 0.25,
    max_slots: int | None = None,
    limit_why: str = "",
) -> tuple[list[Item], list[Gap]]:
    """The working sequence of ``text`` and its gaps (module docstring). Raises
    :class:`RestoreError` for notation the Leiden parser rejects (with the position; a
    counted width above :data:`~stoicheia.text.leiden.MAX_LACUNA_WIDTH` among them), an option
    out of range (:func:`check_options`), a text without Greek letters, nothing to restore,
    or a gap of more than ``max_slots`` slots (``limit_why`` says where that limit comes
    from); the widths are checked before any slot is made."""
    if supplements not in ("keep", "repredict"):
        raise RestoreError(f"supplements={supplements!r}: use 'keep' or 'repredict'")
    check_options(unknown_width=unknown_width, about_margin=about_margin)
    try:
        segments = parse_leiden(text)
    except LacunaTooWideError as err:
        limit = (
            f"more than the model can fill: at most {max_slots:,} letters at once ({limit_why})" if max_slots is not None
            else f"more than the {MAX_LACUNA_WIDTH:,} letters a counted lacuna may hold"
        )
        raise GapTooWideError(f"the lacuna {err.notation!r} holds up to {err.width:,} letters, {limit}; restore a narrower lacuna") from None
    except LeidenError as err:
        raise RestoreError(f"{err}; fix the brackets (see 'Restoring a text' in the README)") from None
    if max_slots is not None:
        for seg in segments:
            if isinstance(seg, Lacuna):
                lo, hi = _gap_bounds(seg, unknown_width, about_margin)
                slots = hi if (lo == hi and not seg.approximate and seg.max_width is not None) else hi + 2
                if slots > max_slots:
                    notation = text[max(0, seg.start - 1) : seg.end + 1].strip()
                    raise _gap_too_wide(seg, notation, lo, hi, slots, max_slots, limit_why)
    try:
        enc = encode_text(text, strict=True)
    except LeidenError as err:
        raise RestoreError(f"{err}; fix the brackets (see 'Restoring a text' in the README)") from None
    p = enc.planes
    letters = np.flatnonzero(p.lacuna == 0)
    if letters.size == 0:
        raise RestoreError(f"no Greek letter in {text!r}: give Greek text (Unicode, accented or not) with its lacunae")
    uncertain, supplied, group = _letter_flags(segments)
    if len(uncertain) != letters.size:
        raise RestoreError(
            f"internal: {letters.size} letters encoded but {len(uncertain)} read from the Leiden segments of {text!r}"
        )
    lacunae = [s for s in segments if isinstance(s, Lacuna)]
    items: list[Item] = []
    gaps: list[Gap] = []
    li = 0  # letter index
    gi = 0  # lacuna index
    i = 0
    n = len(p)
    sup_gap: dict[int, int] = {}
    while i < n:
        if p.lacuna[i] > 0:
            seg = lacunae[gi]
            gi += 1
            width = 1 if seg.max_width is None else seg.max_width
            lo, hi = _gap_bounds(seg, unknown_width, about_margin)
            slots = hi if (lo == hi and not seg.approximate and seg.max_width is not None) else hi + 2
            last = int(p.boundary[i + width - 1])
            end_b = last if last in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE) or i + width == n else A.BOUNDARY_INTERNAL
            gaps.append(Gap(text[max(0, seg.start - 1) : seg.end + 1], "lacuna", lo, hi, slots, end_boundary=end_b))
            items.append(Item(len(gaps) - 1))
            i += width
            continue
        vals = (int(p.chars[i]), int(p.boundary[i]), int(p.dia[i]), int(p.cap[i]), int(p.punct[i]))
        if supplied[li] and supplements == "repredict":
            g = group[li]
            if g not in sup_gap:
                seg = [s for s in segments if isinstance(s, Editorial) and s.reason == "lost"][g]
                w = sum(1 for x in group if x == g)
                last = int(p.boundary[letters[li + w - 1]])
                gaps.append(Gap(f"[{seg.text}]", "supplement", w, w, w, read=seg.text, end_boundary=last))
                sup_gap[g] = len(gaps) - 1
                items.append(Item(len(gaps) - 1))
        elif uncertain[li]:
            gaps.append(Gap(A.LETTERS[vals[0]] + "\u0323", "uncertain", 1, 1, 1, read=A.LETTERS[vals[0]]))
            items.append(Item(len(gaps) - 1, vals))
        else:
            items.append(Item(None, vals))
        li += 1
        i += 1
    return items, gaps


__all__ = ["Gap", "GapTooWideError", "Item", "RestoreError", "check_options", "parse_input"]
