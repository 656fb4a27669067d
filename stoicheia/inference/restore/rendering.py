"""Rendering a restoration of :func:`stoicheia.inference.restore.restore`: finishing and console lines.

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
from typing import TYPE_CHECKING, Any

import numpy as np

from stoicheia.inference.restore.decoding import forward
from stoicheia.inference.restore.reading import Gap, InputStyle, Item, input_style
from stoicheia.inference.restore.word_division import no_lone_consonants
from stoicheia.text import alphabet as A
from stoicheia.text.clusters import CONTROLS
from stoicheia.text.leiden_segments import DOT_BELOW
from stoicheia.text.orthography import DIPHTHONGS, choose_marks
from stoicheia.text.planes import Planes
from stoicheia.text.render import planes_to_text

if TYPE_CHECKING:
    from stoicheia.inference.restore import RestoreResult


@dataclass
class Restoration:
    """One restoration of the whole text.

    ``text``: the input with each gap's notation replaced by its fill (``[fill]`` where the
    notation held its brackets), equal to the input character for character everywhere else
    (control characters aside: left out, as the encoder leaves them out);
    with ``respace`` the text rebuilt from the planes with the heads' word division, accents
    and punctuation, restored letters in square brackets. ``marks``: a line as wide as ``text``
    on screen with ``^`` under every restored letter and ``.`` under a changed uncertain
    reading; ``logprob``: natural-log score (:mod:`.decoding`); ``fills``: the base letters of
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


def _width(s: str) -> int:
    return sum(1 for ch in s if not unicodedata.combining(ch))


def styled(s: str, style: InputStyle | None) -> str:
    """``s`` (rendered Greek) in the input's ``style``: marks only where the input has them
    (a dot below is kept), capitals in a capital text, no spaces in scriptio continua."""
    if style is None:
        return s
    if style.capitals or not style.accented:
        s = "".join(
            ch
            for ch in unicodedata.normalize("NFD", s)
            if not unicodedata.combining(ch) or ch == DOT_BELOW
        )
    if style.capitals:
        s = s.upper()
    if not style.spaced:
        s = s.replace(" ", "")
    return unicodedata.normalize("NFC", s)


@dataclass
class _Letter:
    char: int
    gap: int | None  # the gap the letter fills, None for a letter of the input
    changed: bool  # an uncertain reading the model changed
    values: tuple | None  # the input's planes values (None: a restored letter)


def held_reading(g: Gap, fill: np.ndarray) -> bool:
    """Whether ``fill`` (int symbols) is the editor's reading of the held supplement ``g``:
    only then do its letters print with the editor's marks (another fill of the same width,
    one of the gap's alternatives, is a restoration like any other)."""
    letters = [int(s) for s in fill if 0 <= s < A.NUM_LETTERS]
    return letters == [v[0] for v in g.read_values]


def _letters(items: list[Item], gaps: list[Gap], fill: dict[int, np.ndarray]) -> list[_Letter]:
    out: list[_Letter] = []
    for it in items:
        if it.gap is None:
            out.append(_Letter(it.values[0], None, False, it.values))  # type: ignore[index]
            continue
        g = gaps[it.gap]
        for j, sym in enumerate(fill[it.gap]):
            if 0 <= sym < A.NUM_LETTERS:
                if g.held and held_reading(g, fill[it.gap]):
                    # a supplement kept as printed: its letters with their marks
                    out.append(_Letter(int(sym), it.gap, False, g.read_values[j]))
                elif g.kind == "uncertain":
                    out.append(_Letter(int(sym), it.gap, int(sym) != it.values[0], it.values))  # type: ignore[index]
                else:
                    out.append(_Letter(int(sym), it.gap, False, None))
    return out


def _head_rows(letters: list[_Letter], respace: bool) -> dict[str, np.ndarray]:
    """Model inputs ``(1, n)`` of ``letters``: a restored letter's channels UNKNOWN, a known
    letter's as it holds them (with ``respace``, :func:`respace_items` made the predicted ones
    UNKNOWN; a held supplement's word division is hidden here)."""
    vals = [x.values for x in letters]
    hidden = [v is None for v in vals]
    return {
        "chars": np.array([x.char for x in letters], dtype=np.int64)[None, :],
        "boundary": np.array(
            [
                A.BOUNDARY_UNKNOWN if h or respace else v[1]
                for h, v in zip(hidden, vals, strict=True)
            ],
            dtype=np.int64,
        )[None, :],
        "dia": np.array(
            [A.DIA_UNKNOWN if h else v[2] for h, v in zip(hidden, vals, strict=True)],
            dtype=np.int64,
        )[None, :],
        "punct": np.array(
            [A.PUNCT_UNKNOWN if h else v[4] for h, v in zip(hidden, vals, strict=True)],
            dtype=np.int64,
        )[None, :],
    }


def _channels(
    letters: list[_Letter],
    gaps: list[Gap],
    out: dict[str, np.ndarray],
    r: int,
    respace: bool,
    text_end: bool = True,
) -> list[tuple[int, int, int, int, int]]:
    """Per letter ``(char, boundary, dia, cap, punct)``: the input's values for its letters, the
    heads' argmax for restored ones (the boundary after a gap's last letter as the input says;
    the marks the best of those Greek writes there, :func:`choose_marks`; no punctuation
    inside a word)."""
    n = len(letters)
    res = []
    free = []  # the break after letter i is the head's choice (word_division may undo it)
    for i, x in enumerate(letters):
        v = x.values
        head = respace or v is None
        if head:
            b = int(out["boundary"][r, i].argmax())
            last_of_gap = (
                x.gap is not None and v is None and (i == n - 1 or letters[i + 1].gap != x.gap)
            )
            if last_of_gap and not respace:
                b = gaps[
                    x.gap
                ].end_boundary  # the input says whether a word break follows the bracket
                head = False
            cap = int(out["cap"][r, i].argmax())
            # the input's marks and punctuation where it gives them (respace_items; after a gap,
            # the punctuation typed after its bracket), else the heads'; the marks are chosen
            # below, once every boundary is known
            d = -1 if v is None or v[2] == A.DIA_UNKNOWN else v[2]
            given = v[4] if v is not None else A.PUNCT_UNKNOWN
            if last_of_gap:
                given = gaps[x.gap].end_punct  # type: ignore[index]
            if given != A.PUNCT_UNKNOWN:
                pu = given
                if pu != A.PUNCT_NONE and b == A.BOUNDARY_INTERNAL:
                    b = A.BOUNDARY_WORD  # the input's punctuation ends a word
                head = head and pu == A.PUNCT_NONE
            else:
                pu = int(out["punct"][r, i].argmax())
                if b == A.BOUNDARY_INTERNAL:
                    pu = A.PUNCT_NONE  # punctuation ends a word: none inside one
        else:
            b, d, cap, pu = v[1], v[2], v[3], v[4]
            cap = cap if cap != A.CAP_UNKNOWN else int(out["cap"][r, i].argmax())
            if x.changed:
                d = -1  # a changed reading: marks for its new letter, not the typed ones
        if i == n - 1 and b == A.BOUNDARY_UNKNOWN:
            b = A.BOUNDARY_INTERNAL
        if i == n - 1 and text_end:
            b = A.BOUNDARY_SENTENCE  # the text ends here (no grave on its last word)
        res.append((x.char, b, d, cap, pu))
        free.append(head and i < n - 1)
    if respace:
        before = [c[1] for c in res]
        _typed_breathings_start_words(letters, res)
        free = [f and c[1] == b0 for f, c, b0 in zip(free, res, before, strict=True)]
    # no restored letter left alone as a word Greek does not write ([ς π]: word_division)
    no_lone_consonants(res, [x.values is None for x in letters], free, out["boundary"][r, :n])
    planes = np.array(res, dtype=np.int64).reshape(-1, 5)
    if (planes[:, 2] < 0).any():
        dia = choose_marks(
            planes[:, 0], planes[:, 1], planes[:, 4], planes[:, 2], out["dia"][r, :n, : A.NUM_DIA]
        )
        res = [(c, b, int(d), cap, pu) for (c, b, _, cap, pu), d in zip(res, dia, strict=True)]
    return res


def _typed_breathings_start_words(letters: list[_Letter], res: list[tuple]) -> None:
    """With ``respace``: a typed breathing starts a word (``δι’ ὅτι`` must not become
    ``διὅτι``): the letter before the word ends one (in place on ``res``)."""
    for i, x in enumerate(letters):
        v = x.values
        if i == 0 or v is None or v[2] >= A.NUM_DIA or not A.dia_fields(v[2])[1]:
            continue
        start = i
        if i >= 2 and A.LETTERS[res[i - 1][0]] + A.LETTERS[x.char] in DIPHTHONGS:
            start = i - 1  # αἰ: the word starts at the diphthong's first vowel
        if start > 0 and res[start - 1][1] == A.BOUNDARY_INTERNAL:
            c, _, d, cap, pu = res[start - 1]
            res[start - 1] = (c, A.BOUNDARY_WORD, d, cap, pu)


def _printed_fill(
    g: Gap, rows: list[tuple[_Letter, tuple[int, int, int, int, int]]], style: InputStyle | None
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
    per = [_letters(items, gaps, {**base, gi: f}) for f in fills]
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
        out = forward(model, [_head_rows(crops[k], respace) for k in ks])
        for r, k in enumerate(ks):
            chans = _channels(crops[k], gaps, out, r, respace, text_end=ends[k])
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
    base = [
        "".join(A.LETTERS[int(s)] for s in fill[gi] if 0 <= s < A.NUM_LETTERS)
        for gi in range(len(gaps))
    ]
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
        marks.append(" " * _width(typed))
        piece = f"[{f}]" if g.bracketed else f
        out.append(piece)
        if g.index in kept:
            marks.append(" " * _width(piece))
        elif g.kind == "uncertain":
            sign = "." if f != g.notation else " "
            marks.append(sign * _width(piece))
        else:
            marks.append(
                "".join(
                    "^" if ch.isalpha() else " " for ch in piece if not unicodedata.combining(ch)
                )
            )
        pos = g.end
    out.append(text[pos:].translate(_NO_CONTROLS))
    return "".join(out), "".join(marks).rstrip()


#: :data:`~stoicheia.text.clusters.CONTROLS` removed by ``str.translate``
_NO_CONTROLS = dict.fromkeys(map(ord, CONTROLS))


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
    per = [_letters(items, gaps, f) for f in fills]
    outs: list[tuple[dict[str, np.ndarray], int]] = [None] * len(fills)  # type: ignore[list-item]
    by_len: dict[int, list[int]] = {}
    for k, letters in enumerate(per):
        by_len.setdefault(len(letters), []).append(k)
    for ks in by_len.values():
        out = forward(model, [_head_rows(per[k], respace) for k in ks])
        for r, k in enumerate(ks):
            outs[k] = (out, r)
    result = []
    for k, letters in enumerate(per):
        out, r = outs[k]
        chans = _channels(letters, gaps, out, r, respace)
        by_gap: dict[int, list] = {}
        for x, ch in zip(letters, chans, strict=True):
            if x.gap is not None:
                by_gap.setdefault(x.gap, []).append((x, ch))
        printed = [
            kept[gi] if kept and gi in kept else _printed_fill(g, by_gap[gi], style)
            for gi, g in enumerate(gaps)
        ]
        base = [
            "".join(A.LETTERS[int(s)] for s in fills[k][gi] if 0 <= s < A.NUM_LETTERS)
            for gi in range(len(gaps))
        ]
        t, m = _rebuilt(letters, chans)
        result.append(Restoration(t, m, scores[k], base, printed))
    return result


def _rebuilt(
    letters: list[_Letter], chans: list[tuple[int, int, int, int, int]]
) -> tuple[str, str]:
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
        w = _width(letter_part)
        marks.append(
            (" " if opens else "")
            + ("^" if restored else ("." if x.changed else " ")) * w
            + (" " if closes else "")
            + " " * _width(punct_part + tail)
        )
    return "".join(pieces).rstrip(), "".join(marks).rstrip()


def _pct(p: float) -> str:
    return f"{100 * p:.0f}%" if p >= 0.005 else "<1%"


def _under(head: str, text: str, marks: str) -> list[str]:
    """``text`` after ``head``, each of its lines (a text typed line by line) indented under the
    first and followed by its part of ``marks`` (one mark per character on screen, the line
    break counting one), if that part marks anything."""
    pad = " " * len(head)
    out, pos = [], 0
    for k, line in enumerate(text.split("\n")):
        w = _width(line)
        out.append((pad if k else head) + line)
        if marks[pos : pos + w].strip():
            out.append(pad + marks[pos : pos + w].rstrip())
        pos += w + 1
    return out


def format_result(result: RestoreResult) -> list[str]:
    """Lines for the console: the input, each restoration with its log-probability and a line
    of ``^`` under the restored letters, then per gap: its notation as typed, the probability
    of each width (uncertain width), the editor's reading scored, the gap's own alternatives
    and the probability of each letter of the best fill."""
    lines = _under("input     ", result.input, "")
    for i, r in enumerate(result.restorations, 1):
        lines += _under(f"#{i} {r.logprob:8.3f}  ", r.text, r.marks)
    best = result.restorations[0] if result.restorations else None
    upper_text = input_style(result.input).capitals and not result.respace
    if result.gaps:
        lines.append("gaps (each with the others as in #1):")
    for g in result.gaps:
        head = f"  {g.index + 1}. {g.kind} {g.notation}"
        if not g.fixed_width:
            head += f": {g.min_letters} to {g.max_letters} letters"
        if g.width_probs:
            # a width no kept fill has (probability 0) is not listed: '<1%' would say it has some
            top = sorted(((w, p) for w, p in g.width_probs.items() if p > 0), key=lambda t: -t[1])[
                :4
            ]
            head += "; width " + ", ".join(f"{w} {_pct(p)}" for w, p in top)
        lines.append(head)
        if g.editor is not None:
            lines.append(
                f"     editor's reading {g.editor.reading}: {_pct(g.editor.prob)}, rank {g.editor.rank} among the model's readings of its width"
            )
        if g.alternatives:
            lines.append(
                "     alternatives: "
                + "  ".join(f"{a.fill} {_pct(a.prob)}" for a in g.alternatives)
            )
        if best is not None and g.letter_probs:
            letters = best.fills[g.index]
            upper = upper_text if g.capitals is None else g.capitals  # None with respace
            if upper:  # the letters as the text shows them
                letters = letters.upper()
            lines.append(
                "     letters: "
                + " ".join(f"{c} {_pct(p)}" for c, p in zip(letters, g.letter_probs, strict=False))
            )
        if g.parallels is not None:
            from stoicheia.inference.parallels.display import parallel_lines

            lines += parallel_lines(g.parallels)
    lines += [f"({n})" for n in result.notes]
    lines.append(
        "^ restored letter, . changed reading; #k's figure: the natural log of the restoration's probability "
        "(0 = certain); percentages: probabilities"
    )
    return lines


__all__ = [
    "RENDER_CONTEXT",
    "FillPrinter",
    "Restoration",
    "finish",
    "format_result",
    "render_fills",
    "spliced_restoration",
]
