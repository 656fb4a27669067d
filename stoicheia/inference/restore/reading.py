"""Reading a Leiden text for :func:`stoicheia.inference.restore.restore`: its gaps, its working sequence.

The text goes through the project's Leiden parser
(:func:`stoicheia.text.leiden.parse_leiden`) and encoder
(:func:`stoicheia.text.encode.encode_text`). Every lacuna becomes a *gap*:

* ``[...]``, ``[.5.]``: exactly N letters;
* ``[5±3]``, ``[.3-6.]``: between the two bounds; ``[-ca.5-]``: about N, read as
  ``N - m .. N + m`` with ``m = max(1, round(about_margin * N))``;
* ``[---]``: at least 1 and at most ``unknown_width`` letters; ``[-min.N-]``: at least N and
  at most ``max(N, unknown_width)``; ``[-max.N-]`` 1 to N, ``[-min.A max.B-]`` A to B;
* ``++`` (a run of ``+`` outside brackets): one lost letter per ``+``, filled like the traces
  of a dot below on no letter (dotted letters in place of the signs).

A gap of uncertain width gets its *maximum* width plus 2 slots, all MASK, as the elastic
noise of training makes them (a word of L letters becomes L + 2 + u MASK slots whose targets
are the letters followed by BLANK); the model's BLANK ends the gap. Letters an editor
supplied (``[καὶ]``) are kept as text, or re-predicted as a gap of their width
(``supplements="repredict"``). Letters with a dot below (uncertain readings) stay visible to
the model but are decoded like gap slots, so the model may change them.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stoicheia.text import alphabet as A
from stoicheia.text.encode import encode_text, text_to_planes
from stoicheia.text.leiden import parse_leiden
from stoicheia.text.leiden_segments import (
    DOT_BELOW,
    MAX_LACUNA_WIDTH,
    Editorial,
    Lacuna,
    LacunaTooWideError,
    LeidenError,
    Text,
)
from stoicheia.text.lookalikes import fold_lookalikes
from stoicheia.text.orthography import DIPHTHONGS

_GREEK = re.compile("[\u0370-\u03ff\u1f00-\u1fff]")


class RestoreError(ValueError):
    """The text cannot be restored as given; the message says what to change."""


class GapTooWideError(RestoreError):
    """A lacuna wider than the model can fill (or than any lacuna the parser reads)."""


def _sig(p: float) -> float:
    """``p`` to 7 significant digits (so that ``log(prob)`` still matches ``logprob`` for a
    small probability, which a fixed number of decimals would round to 0)."""
    return float(f"{p:.7g}")


@dataclass
class Alternative:
    """One fill of one gap among the model's own top-k for that gap (the other gaps held at the
    best restoration): ``fill`` as printed (without brackets), ``logprob`` its natural-log
    probability under the decoding (the sum over its slots, :mod:`.decoding`), ``prob``
    ``exp(logprob)``; ``letters`` its base letters."""

    fill: str
    prob: float
    logprob: float
    letters: str = ""


@dataclass
class EditorScore:
    """The editor's supplement scored by the model (``--score-supplements``): ``reading`` the
    editor's letters as typed, ``prob`` their probability under the decoding with the other gaps
    at the best restoration, ``rank`` 1-based among the model's alternatives of the same width
    (``k + 1`` when below all ``k`` of them and not among them)."""

    reading: str
    prob: float
    rank: int


@dataclass
class Gap:
    """One stretch the model fills: a lacuna, a re-predicted supplement or an uncertain letter.

    Read from the input: ``notation`` what the input had there, as typed (``input[start:end]``;
    the whole bracket ``[ - - - ]`` when the bracket holds only this gap, else the gap's part of
    it, e.g. ``---`` in ``[καὶ ---]``); ``bracketed``: the notation holds its ``[ ]`` (the fill is
    printed in brackets); ``min_letters``/``max_letters``: the bounds of its width in letters;
    ``slots``: MASK slots it takes (``max_letters`` for a fixed width, else ``max_letters + 2``);
    ``read``: the letters visible to the model (an uncertain letter's reading, an editor's
    supplement), else ``None``; ``read_values``: for a supplement, the planes' values
    ``(chars, boundary, dia, cap, punct)`` of each of its letters as printed.

    Filled by :func:`stoicheia.inference.restore.restore`: ``fill`` the best fill as printed,
    ``letter_probs`` one probability per letter of it, ``alternatives`` the gap's own top-k
    (distinct, best first), ``width_probs`` ``{width: probability}`` summing to 1 for a gap of
    uncertain width (else ``None``), ``editor`` the supplement's score (else ``None``).
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
    #: the punctuation typed right after the gap (UNKNOWN: left to the model, ``--respace``)
    end_punct: int = A.PUNCT_NONE
    start: int = 0
    end: int = 0
    bracketed: bool = False
    index: int = 0
    fill: str = ""
    letter_probs: list[float] = field(default_factory=list)
    alternatives: list[Alternative] = field(default_factory=list)
    width_probs: dict[int, float] | None = None
    editor: EditorScore | None = None
    read_values: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    #: set by restore: the Greek letters nearest the gap, on both sides, are all capitals
    #: (a capital stretch of a mixed text: its fills print in capitals); None: the text's style
    capitals: bool | None = None
    #: set by restore for a supplement scored but kept as printed: the model sees its letters
    #: and their marks wherever another gap is decoded or rendered
    held: bool = False
    #: bool ``(24,)``: the letters Greek allows as the gap's last letter where the text around
    #: it decides (:func:`letter_rules`); None: any. Only for a gap of known width
    last_letters: np.ndarray | None = None
    #: bool ``(24,)``: for a gap of uncertain width that is a whole word, the letters a fill
    #: of one letter may be (vowels: :func:`letter_rules`); None: any
    one_letter: np.ndarray | None = None
    #: set by restore when a parallels index is open: the gap's parallels
    #: (:class:`stoicheia.inference.parallels.GapParallels`); None: no index
    parallels: Any = None

    @property
    def fixed_width(self) -> bool:
        return self.min_letters == self.max_letters and self.slots == self.max_letters

    @property
    def traces(self) -> bool:
        """Dots below on no letter (``̣ ̣ ̣``) or lost-letter ``+`` signs (``++``): illegible
        traces, filled as dotted letters."""
        return (
            self.kind == "lacuna"
            and not self.bracketed
            and (DOT_BELOW in self.notation or "+" in self.notation)
        )

    def to_json(self) -> dict[str, Any]:
        """The gap as in the restore JSON contract (docs/restoring.md)."""
        return {
            "index": self.index,
            "kind": self.kind,
            "notation": self.notation,
            "start": self.start,
            "end": self.end,
            "min_letters": self.min_letters,
            "max_letters": self.max_letters,
            "fill": self.fill,
            "letter_probs": [_sig(p) for p in self.letter_probs],
            "alternatives": [
                {"fill": a.fill, "prob": _sig(a.prob), "logprob": round(a.logprob, 6)}
                for a in self.alternatives
            ],
            "width_probs": None
            if self.width_probs is None
            else {str(w): _sig(p) for w, p in sorted(self.width_probs.items())},
            "editor": None
            if self.editor is None
            else {
                "reading": self.editor.reading,
                "prob": _sig(self.editor.prob),
                "rank": self.editor.rank,
            },
        } | ({} if self.parallels is None else {"parallels": self.parallels.to_json()})


@dataclass(frozen=True)
class InputStyle:
    """How the input is written, for printing fills in its style: ``capitals`` (no lower-case
    Greek letter: fills in capitals without marks), ``accented`` (some Greek letter bears an
    accent, breathing, diaeresis or iota subscript: else fills without marks), ``spaced`` (words
    divided by spaces: else fills without spaces, as scriptio continua)."""

    capitals: bool
    accented: bool
    spaced: bool


def input_style(text: str) -> InputStyle:
    """The :class:`InputStyle` of ``text`` (Leiden notation; the brackets' insides count too)."""
    nfd = unicodedata.normalize("NFD", text)
    lower = upper = accented = False
    greek_base = False
    for ch in nfd:
        if unicodedata.combining(ch):
            accented |= greek_base and ch != DOT_BELOW
            continue
        greek_base = bool(_GREEK.match(ch)) and ch.isalpha()
        lower |= greek_base and ch.islower()
        upper |= greek_base and ch.isupper()
    return InputStyle(upper and not lower, accented, bool(re.search(r"\S\s+\S", text.strip())))


#: Greek letters read on each side of a gap to decide whether it sits in a capital stretch
NEAR_LETTERS = 8


def _nearest_word(chars: Any, near: int) -> list[str]:
    """The Greek letters of the nearest word in ``chars`` (read away from a gap): up to the
    first space after a letter, across brackets and signs, at most ``near``."""
    got: list[str] = []
    for ch in chars:
        if ch.isspace() and got:
            break
        if ch.isalpha() and _GREEK.match(ch):
            got.append(ch)
            if len(got) == near:
                break
    return got


def near_capitals(text: str, start: int, end: int, near: int = NEAR_LETTERS) -> bool | None:
    """Whether the Greek letters of the words nearest ``text[start:end]`` on each side (at
    most ``near`` each, across brackets and signs) are all capitals: a gap in a capital stretch
    of a mixed text (a heading, a name in diplomatic capitals). A gap inside a word follows
    that word's letters alone (the ones on the sides the gap touches). ``None`` when no Greek
    letter is near."""
    # a gap inside a word (no space between it and the letters on a side) follows that word:
    # ΚΑΤΑ[.......] | Φαβία, Φαχθοβάρ [..]ΑΧ
    inside = _word_part(reversed(text[:start]), near) + _word_part(text[end:], near)
    # a lone letter (an abbreviation, a numeral: ἀνδρῶν Λ [---]) says nothing of the stretch
    seen = inside or [
        ch
        for word in (_nearest_word(reversed(text[:start]), near), _nearest_word(text[end:], near))
        if len(word) > 1
        for ch in word
    ]
    if not seen:
        return None
    return all(ch.isupper() for ch in seen)


def _word_part(chars: Any, near: int) -> list[str]:
    """The Greek letters (at most ``near``) of ``chars`` before the first space: the rest of the
    word a gap sits in, read away from it."""
    got: list[str] = []
    for ch in chars:
        if ch.isspace() or len(got) == near:
            break
        if ch.isalpha() and _GREEK.match(ch):
            got.append(ch)
    return got


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
    if seg.max_width is None:  # [---]: 1 or more; [-min.N-]: N or more
        lo = max(1, seg.min_width)
        return lo, max(unknown_width, lo)
    if seg.approximate:
        m = max(1, round(about_margin * seg.max_width))
        return max(1, seg.max_width - m), seg.max_width + m
    return seg.min_width, seg.max_width


@dataclass
class Item:
    """One element of the working sequence: a known letter (planes values) or a gap index."""

    gap: int | None
    values: tuple[int, int, int, int, int] | None = None  # chars, boundary, dia, cap, punct


def respace_items(
    items: list[Item], gaps: list[Gap], style: InputStyle
) -> tuple[list[Item], list[str]]:
    """``items`` as ``--respace`` reads them: every known letter's word division UNKNOWN (the
    model predicts it), its accents and breathings UNKNOWN too unless the input bears marks
    (``style.accented``), its punctuation UNKNOWN unless the input has some (then the
    punctuation typed after a gap is kept too; else each gap's ``end_punct`` becomes UNKNOWN);
    what the input gives is kept. Returns the items and what the model predicts, e.g. ``["word division",
    "accents"]``."""
    has_punct = any(
        it.values is not None and it.values[4] not in (A.PUNCT_NONE, A.PUNCT_UNKNOWN)
        for it in items
    ) or any(g.end_punct not in (A.PUNCT_NONE, A.PUNCT_UNKNOWN) for g in gaps)
    if not has_punct:
        for g in gaps:  # the model's punctuation after a gap too
            g.end_punct = A.PUNCT_UNKNOWN
    keep_marks = style.accented
    out = []
    for it in items:
        if it.values is None:
            out.append(it)
            continue
        c, _, d, cap, pu = it.values
        d = d if keep_marks else A.DIA_UNKNOWN
        pu = pu if has_punct else A.PUNCT_UNKNOWN
        out.append(Item(it.gap, (c, A.BOUNDARY_UNKNOWN, d, cap, pu)))
    predicted = ["word division"] + ([] if keep_marks else ["accents"])
    return out, predicted + ([] if has_punct else ["punctuation"])


def check_options(
    *, unknown_width: int = 20, about_margin: float = 0.25, window: int | None = None
) -> None:
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
        raise RestoreError(
            f"window={window!r}: give the slots the model sees at once (>= 1), or 0 to refuse windowing"
        )


def _gap_too_wide(
    seg: Lacuna, notation: str, lo: int, hi: int, slots: int, limit: int, why: str
) -> GapTooWideError:
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


_CLUSTER = re.compile("[^\u0300-\u036f][\u0300-\u036f]*|[\u0300-\u036f]+")


def _square_brackets(text: str) -> list[tuple[int, int]]:
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


def _notation_span(
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


def _letter_spans(text: str, segments: list[Any]) -> list[tuple[int, int]]:
    """Per letter slot, in the order of :func:`_letter_flags`, the span of ``text`` that wrote
    it: the letter with its combining marks (dot below included)."""
    spans: list[tuple[int, int]] = []
    for seg in segments:
        if isinstance(seg, Text) or (isinstance(seg, Editorial) and seg.reason != "surplus"):
            for m in _CLUSTER.finditer(text, seg.start, seg.end):
                cl = m.group().replace(DOT_BELOW, "")
                n = (
                    _letters_in(unicodedata.normalize("NFC", cl))
                    if cl and not unicodedata.combining(cl[0])
                    else 0
                )
                spans.extend([(m.start(), m.end())] * n)
    return spans


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
            f"more than the model can fill: at most {max_slots:,} letters at once ({limit_why})"
            if max_slots is not None
            else f"more than the {MAX_LACUNA_WIDTH:,} letters a counted lacuna may hold"
        )
        raise GapTooWideError(
            f"the lacuna {err.notation!r} holds up to {err.width:,} letters, {limit}; restore a narrower lacuna"
        ) from None
    except LeidenError as err:
        raise RestoreError(
            f"{err}; fix the brackets (see 'Restoring a text' in the README)"
        ) from None
    if max_slots is not None:
        for seg in segments:
            if isinstance(seg, Lacuna):
                lo, hi = _gap_bounds(seg, unknown_width, about_margin)
                slots = (
                    hi
                    if (lo == hi and not seg.approximate and seg.max_width is not None)
                    else hi + 2
                )
                if slots > max_slots:
                    a, b, _ = _notation_span(text, _square_brackets(text), seg.start, seg.end)
                    raise _gap_too_wide(seg, text[a:b], lo, hi, slots, max_slots, limit_why)
    try:
        enc = encode_text(text, strict=True)
    except LeidenError as err:
        raise RestoreError(
            f"{err}; fix the brackets (see 'Restoring a text' in the README)"
        ) from None
    p = enc.planes
    letters = np.flatnonzero(p.lacuna == 0)
    if letters.size == 0:
        raise RestoreError(
            f"no Greek letter in {text!r}: give Greek text (Unicode, accented or not) with its lacunae"
        )
    # the letters are counted character by character: a look-alike the encoder reads as Greek
    # in its word (the Latin o of ἐνπέραμo) is counted as that Greek letter
    folded = fold_lookalikes(text)
    if folded != text:
        segments_f = parse_leiden(folded)
        uncertain, supplied, group = _letter_flags(segments_f)
    else:
        segments_f = segments
        uncertain, supplied, group = _letter_flags(segments)
    if len(uncertain) != letters.size:
        raise RestoreError(
            f"internal: {letters.size} letters encoded but {len(uncertain)} read from the Leiden segments of {text!r}"
        )
    spans = _letter_spans(folded, segments_f)
    if len(spans) != letters.size:
        raise RestoreError(
            f"internal: {letters.size} letters encoded but {len(spans)} found in the characters of {text!r}"
        )
    brackets = _square_brackets(text)
    lacunae = [s for s in segments if isinstance(s, Lacuna)]
    lost = [s for s in segments if isinstance(s, Editorial) and s.reason == "lost"]
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
            slots = (
                hi if (lo == hi and not seg.approximate and seg.max_width is not None) else hi + 2
            )
            last = int(p.boundary[i + width - 1])
            end_b = (
                last
                if last in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE) or i + width == n
                else A.BOUNDARY_INTERNAL
            )
            a, b, br = _notation_span(text, brackets, seg.start, seg.end)
            gaps.append(
                Gap(
                    text[a:b],
                    "lacuna",
                    lo,
                    hi,
                    slots,
                    end_boundary=end_b,
                    end_punct=int(p.punct[i + width - 1]),
                    start=a,
                    end=b,
                    bracketed=br,
                )
            )
            items.append(Item(len(gaps) - 1))
            i += width
            continue
        vals = (int(p.chars[i]), int(p.boundary[i]), int(p.dia[i]), int(p.cap[i]), int(p.punct[i]))
        if supplied[li] and supplements == "repredict":
            g = group[li]
            if g not in sup_gap:
                seg = lost[g]
                w = sum(1 for x in group if x == g)
                last = int(p.boundary[letters[li + w - 1]])
                a, b, br = _notation_span(text, brackets, seg.start, seg.end)
                gaps.append(
                    Gap(
                        text[a:b],
                        "supplement",
                        w,
                        w,
                        w,
                        read=seg.text,
                        end_boundary=last,
                        end_punct=int(p.punct[letters[li + w - 1]]),
                        start=a,
                        end=b,
                        bracketed=br,
                    )
                )
                sup_gap[g] = len(gaps) - 1
                items.append(Item(len(gaps) - 1))
            gaps[sup_gap[g]].read_values.append(vals)
        elif uncertain[li]:
            a, b = spans[li]
            gaps.append(
                Gap(text[a:b], "uncertain", 1, 1, 1, read=A.LETTERS[vals[0]], start=a, end=b)
            )
            items.append(Item(len(gaps) - 1, vals))
        else:
            items.append(Item(None, vals))
        li += 1
        i += 1
    for k, g in enumerate(gaps):
        g.index = k
    letter_rules(text, items, gaps)
    return items, gaps


#: the elision mark as scholars type it (right single quotation mark, apostrophe, modifier
#: letter apostrophe, Greek koronis/psili)
ELISION = frozenset("’'ʼ᾽᾿")
_VOWEL_IDS = np.array([c in "αεηιουω" for c in A.LETTERS])
#: (first vowel, second vowel) of the diphthongs, whose second vowel takes the breathing
_DIPHTHONG_FIRST = {
    A.LETTERS.index(second): np.array([f + second in DIPHTHONGS for f in A.LETTERS])
    for second in "ιυ"
}


def _whole_word(text: str, items: list[Item], pos: int, g: Gap) -> bool:
    """Whether gap ``g`` (item ``pos``) stands between word breaks, no elision mark after it."""
    prev = items[pos - 1] if pos > 0 else None
    starts = prev is None or (
        prev.gap is None
        and prev.values is not None
        and prev.values[1] in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE)
    )
    ends = g.end_boundary in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE)
    return starts and ends and text[g.end : g.end + 1] not in ELISION


def letter_rules(text: str, items: list[Item], gaps: list[Gap]) -> None:
    """Set each gap of known width's ``last_letters`` (and ``end_boundary``) where the letters
    typed around it decide what Greek allows (in place):

    * before an elision mark (``δ’``, ``[..]’``) the last letter is a consonant: elision drops
      a vowel;
    * right before a letter of the same word that bears a breathing, the gap ends a word
      (``[...]ἐν``: its ``end_boundary`` becomes a word break), unless that letter is the ι or
      υ of a diphthong (``[.]ἱ``, ``ε̣ὐχὴν``): then the last letter is the diphthong's first
      vowel;
    * a word of one letter (a gap of one letter between word breaks, no elision mark after it)
      is a vowel (ὁ, ἡ, ἤ, ὦ); for a gap of uncertain width between word breaks, a fill of one
      letter (its ``one_letter``).
    """
    for pos, it in enumerate(items):
        if it.gap is None:
            continue
        g = gaps[it.gap]
        if not g.fixed_width:
            if g.min_letters <= 1 and _whole_word(text, items, pos, g):
                g.one_letter = _VOWEL_IDS  # ([---] alone was filled [ς])
            continue
        allowed = np.ones(A.NUM_LETTERS, bool)
        elided = text[g.end : g.end + 1] in ELISION
        if elided:
            allowed &= ~_VOWEL_IDS
        nxt = items[pos + 1] if pos + 1 < len(items) else None
        if (
            g.end_boundary == A.BOUNDARY_INTERNAL
            and nxt is not None
            and nxt.gap is None
            and nxt.values is not None
            and nxt.values[2] < A.NUM_DIA
            and A.dia_fields(nxt.values[2])[1] > 0
        ):
            if nxt.values[0] in _DIPHTHONG_FIRST:
                allowed &= _DIPHTHONG_FIRST[nxt.values[0]]
            else:
                g.end_boundary = A.BOUNDARY_WORD
        if g.max_letters == 1 and _whole_word(text, items, pos, g):
            allowed &= _VOWEL_IDS
        if not allowed.all() and allowed.any():
            g.last_letters = allowed


__all__ = [
    "Alternative",
    "EditorScore",
    "Gap",
    "GapTooWideError",
    "InputStyle",
    "Item",
    "RestoreError",
    "check_options",
    "input_style",
    "near_capitals",
    "parse_input",
]
