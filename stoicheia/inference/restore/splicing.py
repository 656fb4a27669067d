"""A restoration spliced into the input: each gap's notation replaced by its printed fill, the
text equal to the input character for character everywhere else (control characters aside),
and the line of marks under the restored letters.
"""

from __future__ import annotations

import unicodedata

import numpy as np

from stoicheia.inference.restore.gaps import Gap
from stoicheia.inference.restore.rendering import FillPrinter, Restoration, screen_width
from stoicheia.text import alphabet as A
from stoicheia.text.clusters import CONTROLS


def spliced_restoration(
    text: str,
    gaps: list[Gap],
    fill: dict[int, np.ndarray],
    printer: FillPrinter,
    score: float,
    kept: dict[int, str] | None = None,
) -> Restoration:
    """The restoration of ``text`` with every gap filled as in ``fill``, each fill printed by
    ``printer``; ``kept``: gap index -> its text as typed (an editor's supplement scored but
    kept: printed as it is and not marked)."""
    kept = kept or {}
    printed = [kept[gi] if gi in kept else printer(gi, fill[gi]) for gi in range(len(gaps))]
    base = [A.spell(s for s in fill[gi] if 0 <= s < A.NUM_LETTERS) for gi in range(len(gaps))]
    t, m = _spliced(text, gaps, printed, set(kept))
    return Restoration(t, m, score, base, printed)


def _spliced(
    text: str, gaps: list[Gap], printed: list[str], kept: set[int] = frozenset()
) -> tuple[str, str]:  # type: ignore[assignment]
    """``text`` with each gap's notation replaced by its printed fill, and the marks line (no
    mark under the gaps in ``kept``). Control characters are left out, as the encoder does."""
    out, marks = [], []
    pos = 0
    for g, f in sorted(zip(gaps, printed, strict=True), key=lambda t: t[0].start):
        typed = text[pos : g.start].translate(_NO_CONTROLS)
        out.append(typed)
        marks.append(_blank(typed))
        piece = f"[{f}]" if g.bracketed else f
        out.append(piece)
        if g.index in kept:
            marks.append(" " * screen_width(piece))
        elif g.kind == "uncertain":
            sign = "." if f != g.notation else " "
            marks.append(sign * screen_width(piece))
        else:
            marks.append(
                "".join(
                    "^" if ch.isalpha() else " " for ch in piece if not unicodedata.combining(ch)
                )
            )
        pos = g.end
    out.append(text[pos:].translate(_NO_CONTROLS))
    return "".join(out), "".join(marks).rstrip()


def _blank(typed: str) -> str:
    """The marks line under ``typed`` (no mark): a space per character on screen, a tab under a
    tab (a terminal widens both alike, so the marks stay under their letters)."""
    return "".join("\t" if ch == "\t" else " " * screen_width(ch) for ch in typed)


#: :data:`~stoicheia.text.clusters.CONTROLS` removed by ``str.translate``
_NO_CONTROLS = dict.fromkeys(map(ord, CONTROLS))


__all__ = ["spliced_restoration"]
