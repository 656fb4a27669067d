"""Rendering a restoration of :func:`stoicheia.inference.restore.restore`: finishing and console lines.

Finishing. One more pass over the finished letters (BLANK slots removed) gives the restored
letters their word division, accents and breathings, capitals and punctuation from the
model's auxiliary heads; with ``respace=True`` every letter's channels are hidden from the
model and all of them come from the heads (for scriptio continua in capitals).
"""

from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from stoicheia.inference.restore.decoding import forward
from stoicheia.inference.restore.reading import Gap, Item
from stoicheia.text import alphabet as A
from stoicheia.text.planes import Planes
from stoicheia.text.render import planes_to_text

if TYPE_CHECKING:
    from stoicheia.inference.restore import RestoreResult


@dataclass
class Restoration:
    """One restoration of the whole text.

    ``text``: the text with the restored letters in square brackets (Leiden for letters
    supplied by the editor) and changed uncertain letters marked with a dot below;
    ``marks``: a line as wide as ``text`` on screen with ``^`` under every restored letter;
    ``logprob``: natural-log score (module docstring); ``fills``: the letters of each gap, in
    order (``""`` never: a gap has at least one letter).
    """

    text: str
    marks: str
    logprob: float
    fills: list[str]


@functools.lru_cache(maxsize=8192)
def _render_letter(c: int, b: int, d: int, cap: int, pu: int) -> str:
    last_b = b if b in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE) else A.BOUNDARY_INTERNAL
    one = Planes(*(np.array([v], np.uint8) for v in (c, last_b, d, cap, pu)))
    s = planes_to_text(one)
    return s + (" " if b in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE) else "")


def _width(s: str) -> int:
    return sum(1 for ch in s if not unicodedata.combining(ch))


def finish(model: Any, items: list[Item], gaps: list[Gap], fill: dict[int, np.ndarray], respace: bool, score: float) -> Restoration:
    """Render one full assignment with the auxiliary heads (module docstring, Finishing)."""
    letters: list[tuple[int, bool, bool, tuple | None]] = []  # char, restored, changed, input values
    gap_ends: dict[int, int] = {}  # letter index -> the boundary the input gives it (last letter of a gap)
    for it in items:
        if it.gap is None:
            letters.append((it.values[0], False, False, it.values))  # type: ignore[index]
            continue
        g = gaps[it.gap]
        for sym in fill[it.gap]:
            if 0 <= sym < A.NUM_LETTERS:
                if g.kind == "uncertain":
                    letters.append((int(sym), False, int(sym) != it.values[0], it.values))  # type: ignore[index]
                else:
                    letters.append((int(sym), True, False, None))
        if g.kind != "uncertain" and letters and letters[-1][1]:
            gap_ends[len(letters) - 1] = g.end_boundary
    chars = np.array([c for c, _, _, _ in letters], dtype=np.int64)
    hidden = [respace or v is None for _, _, _, v in letters]
    seq = {
        "chars": chars[None, :],
        "boundary": np.array([A.BOUNDARY_UNKNOWN if h else v[1] for h, (_, _, _, v) in zip(hidden, letters, strict=True)])[None, :],
        "dia": np.array([A.DIA_UNKNOWN if h else v[2] for h, (_, _, _, v) in zip(hidden, letters, strict=True)])[None, :],
        "punct": np.array([A.PUNCT_UNKNOWN if h else v[4] for h, (_, _, _, v) in zip(hidden, letters, strict=True)])[None, :],
    }
    out = forward(model, [seq])
    pieces, marks = [], []
    n = len(letters)
    for i, (c, restored, changed, v) in enumerate(letters):
        if hidden[i]:
            b = int(out["boundary"][0, i].argmax())
            if i in gap_ends and not respace:
                b = gap_ends[i]  # the input says whether a word break follows the bracket
            d = int(out["dia"][0, i].argmax())
            cap = int(out["cap"][0, i].argmax())
            pu = int(out["punct"][0, i].argmax())
        else:
            b, d, cap, pu = v[1], v[2], v[3], v[4]  # type: ignore[index]
            cap = cap if cap != A.CAP_UNKNOWN else int(out["cap"][0, i].argmax())
        if i == n - 1 and b == A.BOUNDARY_UNKNOWN:
            b = A.BOUNDARY_INTERNAL
        s = _render_letter(c, b, d, cap, pu)
        core, tail = s.rstrip(" "), s[len(s.rstrip(" ")) :]
        if changed:
            core = unicodedata.normalize("NFC", core[0] + "\u0323" + core[1:]) if core else core
        opens = restored and (i == 0 or not letters[i - 1][1])
        closes = restored and (i == n - 1 or not letters[i + 1][1])
        # the bracket closes before the punctuation and the space that follow the letter
        letter_part = core
        punct_part = ""
        if closes and letter_part and not unicodedata.category(letter_part[-1]).startswith("L") and not unicodedata.combining(letter_part[-1]):
            letter_part, punct_part = letter_part[:-1], letter_part[-1]
        piece = ("[" if opens else "") + letter_part + ("]" if closes else "") + punct_part + tail
        pieces.append(piece)
        w = _width(letter_part)
        marks.append((" " if opens else "") + ("^" if restored else ("." if changed else " ")) * w + (" " if closes else "") + " " * _width(punct_part + tail))
    fills = []
    for gi, g in enumerate(gaps):
        if g.kind == "uncertain":
            continue
        fills.append("".join(A.LETTERS[int(s)] for s in fill[gi] if 0 <= s < A.NUM_LETTERS))
    return Restoration("".join(pieces).rstrip(), "".join(marks).rstrip(), score, fills)


def format_result(result: RestoreResult) -> list[str]:
    """Lines for the console: the input, then each restoration with its log-probability and a
    line of ``^`` under the restored letters."""
    lines = [f"input     {result.input}"]
    for g in result.gaps:
        if g.kind == "lacuna" and not g.fixed_width:
            lines.append(f"  lacuna {g.notation.strip()}: {g.min_letters} to {g.max_letters} letters ({g.slots} slots, BLANK ends it)")
    for i, r in enumerate(result.restorations, 1):
        head = f"#{i} {r.logprob:8.3f}"
        lines.append(f"{head}  {r.text}")
        if r.marks.strip():
            lines.append(" " * (len(head) + 2) + r.marks)
    lines += [f"({n})" for n in result.notes]
    lines.append("log-probabilities in nats (natural log) of the restored letters; ^ restored, . changed reading")
    return lines


__all__ = ["Restoration", "finish", "format_result"]
