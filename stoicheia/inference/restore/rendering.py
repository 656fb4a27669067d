"""Rendering a restoration of :func:`stoicheia.inference.restore.restore`: its fills printed
with the auxiliary heads, and the whole text rebuilt with ``respace``.

Finishing. One more pass over the finished letters (BLANK slots removed) gives the restored
letters their word division, accents and breathings, capitals and punctuation from the
model's auxiliary heads; with ``respace=True`` every letter's channels are hidden from the
model and all of them come from the heads (for scriptio continua in capitals).

A gap's fills are rendered in a window of :data:`RENDER_CONTEXT` letters on each side of the
gap (:class:`FillPrinter`), one forward pass for all the fills of a gap: the heads' choice for
a letter depends on its word and its neighbours, and a local block sees ``char_window // 2``
slots on each side (64 in the demo model), so the window changes nearly nothing, and the
work no longer grows with the text's length times the number of alternatives. The whole
text goes through the model only with ``respace``, where every letter is rendered.
"""

from __future__ import annotations

import dataclasses
import functools
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stoicheia.inference.restore.channels import Letter, head_rows, letter_channels, letters_of
from stoicheia.inference.restore.decoding import forward
from stoicheia.inference.restore.gaps import Gap, Item
from stoicheia.inference.restore.input_style import InputStyle, styled
from stoicheia.text import alphabet as A
from stoicheia.text.leiden_segments import DOT_BELOW
from stoicheia.text.planes import Planes
from stoicheia.text.render import planes_to_text


@dataclass
class Restoration:
    """One restoration of the whole text.

    ``text``: the input with each gap's notation replaced by its fill (``[fill]`` where the
    gap is ``bracketed``: :class:`~.gaps.Gap`), equal to the input character for character
    everywhere else (control characters aside: left out, as the encoder leaves them out);
    with ``respace`` the text rebuilt from the planes with the heads' word division, accents
    and punctuation, restored letters in square brackets. ``marks``: a line as wide as ``text``
    on screen with ``^`` under every restored letter and ``.`` under a changed uncertain
    reading; ``logprob``: natural-log score (:mod:`.decoding`), the editor's supplements kept as
    printed (``--score-supplements``) counted at their scores; ``fills``: the base letters of
    each gap (lower case, no marks), in the order of the gaps (``""`` never: a gap has at least
    one letter); ``printed``: each gap's fill as printed in ``text`` (without the brackets).
    """

    text: str
    marks: str
    logprob: float
    fills: list[str]
    printed: list[str] = field(default_factory=list)


@functools.lru_cache(maxsize=8192)
def _render_letter(c: int, b: int, d: int, cap: int, pu: int) -> str:
    last_b = b if b in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE) else A.BOUNDARY_INTERNAL
    one = Planes(*(np.array([v], np.uint8) for v in (c, last_b, d, cap, pu)))
    s = planes_to_text(one)
    return s + (" " if b in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE) else "")


def screen_width(s: str) -> int:
    """Characters ``s`` takes on screen (combining marks take none)."""
    return sum(1 for ch in s if not unicodedata.combining(ch))


def _printed_fill(
    g: Gap, rows: list[tuple[Letter, tuple[int, int, int, int, int]]], style: InputStyle | None
) -> str:
    """Gap ``g``'s fill as printed in the input's style (without brackets), in capitals when
    the gap sits in a capital stretch (``g.capitals``), else in lowercase."""
    if style is not None and g.capitals is not None and g.capitals != style.capitals:
        style = dataclasses.replace(style, capitals=g.capitals)
    if g.kind == "uncertain":
        x, (c, b, d, cap, _) = rows[0]
        if not x.changed:
            return g.notation  # the reading kept, as typed
        upper = any(ch.isupper() for ch in g.notation)
        letter = _render_letter(c, A.BOUNDARY_INTERNAL, d, 1 if upper else 0, 0)
        return styled(unicodedata.normalize("NFC", letter + DOT_BELOW), style)
    parts = []
    for k, (_, (c, b, d, cap, pu)) in enumerate(rows):
        last = k == len(rows) - 1
        s = _render_letter(c, b, d, cap, 0 if last else pu)
        if last:
            s = s.rstrip(" ")  # what follows the gap is the input's
        if g.traces:
            s = s[0] + DOT_BELOW + s[1:]
        parts.append(s)
    return styled(unicodedata.normalize("NFC", "".join(parts)), style)


def parallel_printed(index: Any, source: Any, g: Gap, style: InputStyle | None) -> str | None:
    """The fill of gap ``g`` as its best parallel prints it (``source``: the parallels'
    :class:`~stoicheia.inference.parallels.search.FillParallels`): its capitals, accents and
    word spaces (``[Ἀ]λεξάνδρου``, not ``[ἀ]λεξάνδρου``), in the input's ``style`` (no marks
    where the input has none, capitals in a capital text); ``None`` when it has no parallel
    to print from, or the gap is of traces (dotted letters)."""
    if index is None or not getattr(source, "parallels", None) or g.traces:
        return None
    par = source.parallels[0]
    planes = index.planes(par.pos, par.pos + par.width)
    # the fill's last letter ends where the gap does: the text after it says the rest
    planes.boundary[-1] = A.BOUNDARY_INTERNAL
    planes.punct[-1] = A.PUNCT_NONE
    text = unicodedata.normalize("NFC", planes_to_text(planes)).strip()
    if source.letters[-1] == A.LETTERS.index("σ") and g.end_boundary in (
        A.BOUNDARY_WORD,
        A.BOUNDARY_SENTENCE,
    ):  # a final sigma where the gap ends a word
        text = text[:-1] + ("Σ" if text[-1] == "Σ" else "ς")
    if style is not None and g.capitals is not None and g.capitals != style.capitals:
        style = dataclasses.replace(style, capitals=g.capitals)
    return styled(text, style)


#: letters of context on each side of a gap when its fills are rendered (module docstring)
RENDER_CONTEXT = 64


def render_fills(
    model: Any,
    items: list[Item],
    gaps: list[Gap],
    base: dict[int, np.ndarray],
    gi: int,
    fills: list[np.ndarray],
    respace: bool,
    style: InputStyle | None,
    context: int = RENDER_CONTEXT,
) -> list[str]:
    """Gap ``gi``'s ``fills`` (int symbol arrays, one per fill, BLANK slots allowed) as printed
    in the input's ``style`` (without brackets), the other gaps filled as in ``base``; each
    fill is rendered with the heads in a window of ``context`` letters on each side of the gap
    (module docstring). The windows are padded on the left to one length where the text
    allows, so that the fills of a gap share one forward pass."""
    per = [letters_of(items, gaps, {**base, gi: f}) for f in fills]
    spans = []
    for letters in per:
        idx = [i for i, x in enumerate(letters) if x.gap == gi]
        spans.append((idx[0], idx[-1] + 1) if idx else (0, 0))
    widest = max(b - a for a, b in spans)
    crops, ends = [], []  # ends[k]: crop k ends where the text does
    for letters, (a, b) in zip(per, spans, strict=True):
        lo = max(0, a - context - (widest - (b - a)))
        crops.append(letters[lo : min(len(letters), b + context)])
        ends.append(b + context >= len(letters))
    by_len: dict[int, list[int]] = {}
    for k, crop in enumerate(crops):
        by_len.setdefault(len(crop), []).append(k)
    printed: list[str] = [""] * len(fills)
    for ks in by_len.values():
        out = forward(model, [head_rows(crops[k], respace) for k in ks])
        for r, k in enumerate(ks):
            chans = letter_channels(crops[k], gaps, out, r, respace, text_end=ends[k])
            rows = [(x, ch) for x, ch in zip(crops[k], chans, strict=True) if x.gap == gi]
            printed[k] = _printed_fill(gaps[gi], rows, style)
    return printed


class FillPrinter:
    """Each gap's fills as printed (:func:`render_fills`), rendered once per gap and fill and
    remembered, so that the restorations and the gaps' alternatives print a fill alike.
    ``base``: every gap's fill in restoration #1, the context of the others."""

    def __init__(
        self,
        model: Any,
        items: list[Item],
        gaps: list[Gap],
        base: dict[int, np.ndarray],
        respace: bool,
        style: InputStyle | None,
    ) -> None:
        self.model, self.items, self.gaps, self.base = model, items, gaps, base
        self.respace, self.style = respace, style
        self.done: dict[tuple[int, bytes], str] = {}

    @staticmethod
    def _key(gi: int, fill: np.ndarray) -> tuple[int, bytes]:
        return gi, np.asarray(fill, dtype=np.int64).tobytes()

    def render(self, gi: int, fills: list[np.ndarray]) -> None:
        """Render those of gap ``gi``'s ``fills`` not rendered yet (one forward pass)."""
        todo, seen = [], set()
        for f in fills:
            key = self._key(gi, f)
            if key not in self.done and key not in seen:
                seen.add(key)
                todo.append(f)
        if todo:
            got = render_fills(
                self.model, self.items, self.gaps, self.base, gi, todo, self.respace, self.style
            )
            for f, p in zip(todo, got, strict=True):
                self.done[self._key(gi, f)] = p

    def remember(self, gi: int, fill: np.ndarray, printed: str) -> None:
        """Take ``printed`` as gap ``gi``'s ``fill`` (rendered elsewhere: ``respace``)."""
        self.done[self._key(gi, fill)] = printed

    def __call__(self, gi: int, fill: np.ndarray) -> str:
        """Gap ``gi``'s ``fill`` as printed (rendered now if it was not)."""
        key = self._key(gi, fill)
        if key not in self.done:
            self.render(gi, [fill])
        return self.done[key]


def finish(
    model: Any,
    items: list[Item],
    gaps: list[Gap],
    fills: list[dict[int, np.ndarray]],
    respace: bool,
    scores: list[float],
    *,
    style: InputStyle | None = None,
    kept: dict[int, str] | None = None,
) -> list[Restoration]:
    """Render full assignments ``fills`` (one per restoration, scored ``scores``) with the
    auxiliary heads (module docstring, Finishing) and rebuild each whole text from the planes
    (``--respace``; without it, :func:`spliced_restoration` puts the fills into the input); one
    forward pass per group of equal length. ``style``: an :class:`InputStyle` for the printed
    fills (restore gives ``None`` with ``respace``: they print as the rebuilt text);
    ``kept``: gap index -> its text as typed, printed as it is and not marked as restored (an
    editor's supplement scored but kept)."""
    per = [letters_of(items, gaps, f) for f in fills]
    outs: list[tuple[dict[str, np.ndarray], int]] = [None] * len(fills)  # type: ignore[list-item]
    by_len: dict[int, list[int]] = {}
    for k, letters in enumerate(per):
        by_len.setdefault(len(letters), []).append(k)
    for ks in by_len.values():
        out = forward(model, [head_rows(per[k], respace) for k in ks])
        for r, k in enumerate(ks):
            outs[k] = (out, r)
    result = []
    for k, letters in enumerate(per):
        out, r = outs[k]
        chans = letter_channels(letters, gaps, out, r, respace)
        by_gap: dict[int, list] = {}
        for x, ch in zip(letters, chans, strict=True):
            if x.gap is not None:
                by_gap.setdefault(x.gap, []).append((x, ch))
        printed = [
            kept[gi] if kept and gi in kept else _printed_fill(g, by_gap[gi], style)
            for gi, g in enumerate(gaps)
        ]
        base = [
            A.spell(s for s in fills[k][gi] if 0 <= s < A.NUM_LETTERS) for gi in range(len(gaps))
        ]
        t, m = _rebuilt(letters, chans)
        result.append(Restoration(t, m, scores[k], base, printed))
    return result


def _rebuilt(letters: list[Letter], chans: list[tuple[int, int, int, int, int]]) -> tuple[str, str]:
    """The text rebuilt from the planes (``respace``), restored letters in brackets."""
    pieces, marks = [], []
    n = len(letters)
    for i, (x, (c, b, d, cap, pu)) in enumerate(zip(letters, chans, strict=True)):
        restored = x.values is None
        s = _render_letter(c, b, d, cap, pu)
        core, tail = s.rstrip(" "), s[len(s.rstrip(" ")) :]
        if x.changed:
            core = unicodedata.normalize("NFC", core[0] + DOT_BELOW + core[1:]) if core else core
        opens = restored and (i == 0 or letters[i - 1].values is not None)
        closes = restored and (i == n - 1 or letters[i + 1].values is not None)
        # the bracket closes before the punctuation and the space that follow the letter
        letter_part = core
        punct_part = ""
        if (
            closes
            and letter_part
            and not unicodedata.category(letter_part[-1]).startswith("L")
            and not unicodedata.combining(letter_part[-1])
        ):
            letter_part, punct_part = letter_part[:-1], letter_part[-1]
        pieces.append(
            ("[" if opens else "") + letter_part + ("]" if closes else "") + punct_part + tail
        )
        w = screen_width(letter_part)
        marks.append(
            (" " if opens else "")
            + ("^" if restored else ("." if x.changed else " ")) * w
            + (" " if closes else "")
            + " " * screen_width(punct_part + tail)
        )
    return "".join(pieces).rstrip(), "".join(marks).rstrip()


__all__ = [
    "RENDER_CONTEXT",
    "parallel_printed",
    "FillPrinter",
    "Restoration",
    "finish",
    "render_fills",
    "screen_width",
]
