"""One reading of a Leiden text for :func:`stoicheia.inference.restore.restore`: its gaps, its
working sequence, its encoding, made once (:func:`read_input`) and handed on.

The text goes once through the project's Leiden parser
(:func:`stoicheia.text.leiden.parse_leiden`) and once through its encoder
(:func:`stoicheia.text.encode.encode_text`, which reads the notation with the same parser inside
it: an encoder taking the parse would save that, in :mod:`stoicheia.text`); the look-alike folding
(:func:`stoicheia.text.lookalikes.fold_lookalikes`: one character for one) only says which typed
characters make each letter slot. The :class:`Reading` holds what decoding, fusion, rendering
and the notes need. Every lacuna becomes a *gap*:

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
from dataclasses import dataclass
from typing import Any

import numpy as np

from stoicheia.inference.restore.foreign_input import no_greek_letter, refuse_foreign_input
from stoicheia.inference.restore.gap_widths import (
    SPLIT_FIX,
    check_options,
    check_widths,
    dots_in_brackets,
    gap_bounds,
    gap_slots,
    notation_span,
    square_brackets,
)
from stoicheia.inference.restore.gaps import Gap, GapTooWideError, Item, RestoreError
from stoicheia.inference.restore.input_style import InputStyle, input_style
from stoicheia.inference.restore.letter_rules import letter_rules
from stoicheia.text import alphabet as A
from stoicheia.text.encode import Encoded, encode_text, text_to_planes
from stoicheia.text.leiden import parse_leiden
from stoicheia.text.leiden_segments import (
    DOT_BELOW,
    MAX_LACUNA_WIDTH,
    Comment,
    Editorial,
    Lacuna,
    LacunaTooWideError,
    LeidenError,
    Text,
)
from stoicheia.text.lookalikes import fold_lookalikes


@dataclass
class Reading:
    """One reading of a Leiden text (:func:`read_input`), handed on to decoding, fusion,
    rendering and the notes.

    ``text``: the input as typed; ``segments``: its Leiden parse
    (:func:`~stoicheia.text.leiden.parse_leiden`); ``encoded``: its encoding
    (:class:`~stoicheia.text.encode.Encoded`: the six planes, ``dropped`` and ``leiden``
    counters); ``items``: the working sequence (a known letter's planes values, or a gap);
    ``gaps``: in input order; ``style``: how the input is written (:class:`InputStyle`);
    ``supplements``, ``unknown_width``, ``about_margin``: the options it was read with
    (``supplements="repredict"`` when the supplements are scored).
    """

    text: str
    segments: list[Any]
    encoded: Encoded
    items: list[Item]
    gaps: list[Gap]
    style: InputStyle
    supplements: str = "keep"
    unknown_width: int = 20
    about_margin: float = 0.25
    #: set by restore, which fills the gaps: a reading restores once
    used: bool = False

    @property
    def slots(self) -> int:
        """Slots of the working sequence: one per known letter, ``gap.slots`` per gap."""
        return sum(self.gaps[it.gap].slots if it.gap is not None else 1 for it in self.items)

    def check_widths(self, max_slots: int, limit_why: str) -> None:
        """Raise :class:`GapTooWideError` for a lacuna of more than ``max_slots`` slots
        (``limit_why``: where that limit comes from)."""
        check_widths(
            self.text,
            self.segments,
            unknown_width=self.unknown_width,
            about_margin=self.about_margin,
            max_slots=max_slots,
            limit_why=limit_why,
        )


@functools.lru_cache(maxsize=4096)
def _letters_in(ch: str) -> int:
    """Letter slots the encoder gives one code point (0 or 1)."""
    return len(text_to_planes(ch)[0])


_CLUSTER = re.compile("[^\u0300-\u036f][\u0300-\u036f]*|[\u0300-\u036f]+")


def _letter_slots(
    folded: str, segments: list[Any]
) -> tuple[list[tuple[int, int]], list[bool], list[int]]:
    """Per letter slot of the encoded text (not lacuna slots), in reading order: the span of
    the text that wrote it (the letter with its combining marks, dot below included), whether it is
    uncertain (a dot below, or a doubtful supplement ``[καὶ?]``), and the index of the editor's
    supplement ``[ ]`` it belongs to (-1: none). ``folded``: the text with its look-alikes
    folded (:func:`~stoicheia.text.lookalikes.fold_lookalikes`, same offsets), so that a
    look-alike the encoder reads as Greek in its word (the Latin o of ἐνπέραμo) counts as that
    letter."""
    spans: list[tuple[int, int]] = []
    uncertain: list[bool] = []
    group: list[int] = []
    k = 0
    for seg in segments:
        if isinstance(seg, Text) or (isinstance(seg, Editorial) and seg.reason != "surplus"):
            is_sup = isinstance(seg, Editorial) and seg.reason == "lost"
            # a doubtful supplement ([καὶ?]): the parser made every letter of it uncertain
            doubtful = is_sup and "?" in folded[seg.start : seg.end] and all(seg.uncertain)
            for m in _CLUSTER.finditer(folded, seg.start, seg.end):
                cl = m.group().replace(DOT_BELOW, "")
                n = (
                    _letters_in(unicodedata.normalize("NFC", cl))
                    if cl and not unicodedata.combining(cl[0])
                    else 0
                )
                spans.extend([(m.start(), m.end())] * n)
                uncertain.extend([doubtful or DOT_BELOW in m.group()] * n)
                group.extend([k if is_sup else -1] * n)
            if is_sup:
                k += 1
    return spans, uncertain, group


def _parse(
    text: str, unknown_width: int, about_margin: float, max_slots: int | None, limit_why: str
) -> list[Any]:
    """The Leiden parse of ``text``, its lacunae checked against ``max_slots`` (if given)."""
    try:
        segments = parse_leiden(text)
    except LacunaTooWideError as err:
        limit = (
            f"more than the model can fill: at most {max_slots:,} letters at once ({limit_why})"
            if max_slots is not None
            else f"more than the {MAX_LACUNA_WIDTH:,} letters a counted lacuna may hold"
        )
        raise GapTooWideError(
            f"the lacuna {err.notation!r} holds up to {err.width:,} letters, {limit}; {SPLIT_FIX}"
        ) from None
    except LeidenError as err:
        raise RestoreError(
            f"{err}; fix the brackets (the notation: docs/restore-notation.md)"
        ) from None
    if max_slots is not None:
        check_widths(
            text,
            segments,
            unknown_width=unknown_width,
            about_margin=about_margin,
            max_slots=max_slots,
            limit_why=limit_why,
        )
    return segments


def read_input(
    text: str,
    *,
    supplements: str = "keep",
    unknown_width: int = 20,
    about_margin: float = 0.25,
    max_slots: int | None = None,
    limit_why: str = "",
) -> Reading:
    """The :class:`Reading` of ``text`` (module docstring): one Leiden parse, one encoding.

    Raises :class:`RestoreError` for notation the Leiden parser rejects (with the position; a
    counted width above :data:`~stoicheia.text.leiden_segments.MAX_LACUNA_WIDTH` among them),
    an option out of range (:func:`check_options`), XML markup or Beta Code (named as such, with
    the fix: :mod:`~stoicheia.inference.restore.foreign_input`), a text without Greek letters,
    letters of other scripts mixed with Greek ones past aligning them, or a gap of
    more than ``max_slots`` slots (``limit_why`` says where that limit comes from); the widths
    are checked before any slot is made."""
    if supplements not in ("keep", "repredict"):
        raise RestoreError(f"supplements={supplements!r}: use 'keep' or 'repredict'")
    check_options(unknown_width=unknown_width, about_margin=about_margin)
    refuse_foreign_input(text)
    segments = _parse(text, unknown_width, about_margin, max_slots, limit_why)
    try:
        enc = encode_text(text, strict=True)
    except LeidenError as err:
        raise RestoreError(
            f"{err}; fix the brackets (the notation: docs/restore-notation.md)"
        ) from None
    items, gaps = _working_sequence(text, segments, enc, supplements, unknown_width, about_margin)
    return Reading(
        text,
        segments,
        enc,
        items,
        gaps,
        input_style(text),
        supplements,
        unknown_width,
        about_margin,
    )


#: bracket signs of an editorial segment, which the encoder does not see (ἔδωκ[E]: the E
#: touches the κ), and the ? of a doubtful supplement
_EDITORIAL_SIGNS = frozenset("[](){}<>⟨⟩⟦⟧〈〉〚〛\u2329\u232a⸢⸣⌈⌉⸤⸥⌊⌋˹˺\\/?")
#: a letter of another script that the encoder may read as Greek (Latin, Cyrillic, Coptic),
#: or the καί ligature
_OTHER_SCRIPT = re.compile("[A-Za-z\u0400-\u04ff\u2c80-\u2cff\u03d7\u03cf]")


def _folded(text: str, segments: list[Any]) -> str:
    """``text`` with its look-alikes folded (:func:`fold_lookalikes`, same offsets) as the
    encoder sees them: the letters of the segments without their bracket signs, a lacuna as no
    letter, a remark as a space, a surplus ``{ }`` not at all, the ligature ϗ as a Greek
    letter (so ``ΚΑ[I]``, ``ἔδωκ<E>``, ``ϗT`` fold their Latin look-alike as the encoder
    reads it)."""
    view: list[str] = []
    where: list[int] = []
    for seg in segments:
        if isinstance(seg, Text) or (isinstance(seg, Editorial) and seg.reason != "surplus"):
            for i in range(seg.start, seg.end):
                if isinstance(seg, Editorial) and text[i] in _EDITORIAL_SIGNS:
                    continue
                view.append("κ" if text[i] in "\u03d7\u03cf" else text[i])
                where.append(i)
        elif not isinstance(seg, Editorial):  # a lacuna (no letter) or a remark (a space)
            view.append(" " if isinstance(seg, Comment) else "\x00")
            where.append(-1)
    raw = "".join(view)
    out = list(text)
    for i, before, after in zip(where, raw, fold_lookalikes(raw), strict=True):
        if i >= 0 and after != before:
            out[i] = after
    return "".join(out)


def _working_sequence(
    text: str,
    segments: list[Any],
    enc: Encoded,
    supplements: str,
    unknown_width: int,
    about_margin: float,
) -> tuple[list[Item], list[Gap]]:
    """The items and gaps of ``text`` from its parse ``segments`` and encoding ``enc``."""
    p = enc.planes
    letters = np.flatnonzero(p.lacuna == 0)
    if letters.size == 0:
        raise no_greek_letter(text, lacunae=bool(p.lacuna.any()))
    spans, uncertain, group = _letter_slots(_folded(text, segments), segments)
    if len(spans) != letters.size:
        others = sorted({c for c in text if _OTHER_SCRIPT.match(c)})
        raise RestoreError(
            f"{text!r} mixes letters of other scripts with Greek ones"
            + (f" ({' '.join(others)})" if others else "")
            + f", which restore cannot align ({letters.size} letters read as Greek, "
            f"{len(spans)} typed in Greek); type every letter of the text in Greek script"
        )
    brackets = square_brackets(text)
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
            lo, hi = gap_bounds(seg, unknown_width, about_margin)
            last = int(p.boundary[i + width - 1])
            end_b = (
                last
                if last in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE) or i + width == n
                else A.BOUNDARY_INTERNAL
            )
            a, b, br = notation_span(text, brackets, seg.start, seg.end)
            if not br:  # the dots of a ⟦...⟧ or ⸢..υλῇ⸣: the fill in [ ] inside them
                a, b, br = dots_in_brackets(text, a, b)
            gaps.append(
                Gap(
                    text[a:b],
                    "lacuna",
                    lo,
                    hi,
                    gap_slots(seg, lo, hi),
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
        if group[li] >= 0 and supplements == "repredict":
            g = group[li]
            if g not in sup_gap:
                seg = lost[g]
                w = sum(1 for x in group if x == g)
                last = int(p.boundary[letters[li + w - 1]])
                a, b, br = notation_span(text, brackets, seg.start, seg.end)
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
    _stone_edges(text, items, gaps)
    return items, gaps


def _stone_edges(text: str, items: list[Item], gaps: list[Gap]) -> None:
    """Set ``one_sided`` on each lacuna of unknown extent (``[---]``, ``[-min.N-]``) that has
    known letters on one side only: at the start or end of the text, or of a typed line, or
    beside another lacuna (in place)."""
    for pos, it in enumerate(items):
        g = gaps[it.gap] if it.gap is not None else None
        if g is None or g.kind != "lacuna" or g.fixed_width or "-" not in g.notation:
            continue
        before = items[pos - 1] if pos > 0 else None
        after = items[pos + 1] if pos + 1 < len(items) else None
        no_left = (
            before is None
            or (before.gap is not None and gaps[before.gap].kind == "lacuna")
            or "\n" in text[: g.start].rstrip(" \t")[-1:]
        )
        no_right = (
            after is None
            or (after.gap is not None and gaps[after.gap].kind == "lacuna")
            or "\n" in text[g.end :].lstrip(" \t")[:1]
        )
        if no_left != no_right:
            g.one_sided = "right" if no_left else "left"


def check_something_to_restore(reading: Reading, respace: bool, score_supplements: bool) -> None:
    """Raise :class:`RestoreError` for a text with no gap, unless ``respace`` (which predicts
    word division, accents and punctuation)."""
    if reading.gaps or respace:
        return
    erased = re.search(r"(\[\[|⟦|〚)[\s.\-–—…]+(\]\]|⟧|〛)", reading.text)
    kept = not score_supplements and any(
        isinstance(s, Editorial) and s.reason == "lost" for s in reading.segments
    )
    raise RestoreError(
        f"nothing to restore in {reading.text!r}: no lacuna ([...], [.5.], [5±3], [---]), "
        "no uncertain letter (dot below)"
        + (", no editor's supplement [καὶ] to score" if score_supplements else "")
        + (
            f" ({erased.group(0)} is an erasure, kept as printed: restore fills lacunae in "
            "single brackets [...])"
            if erased
            else ""
        )
        + ("; its editor's supplements are kept as read: --score-supplements scores them" * kept)
        + "; use --respace to predict word division, accents and punctuation, or --accents "
        "for the accents alone"
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
    """The working sequence of ``text`` and its gaps: :func:`read_input`'s ``items`` and
    ``gaps`` (its errors)."""
    reading = read_input(
        text,
        supplements=supplements,
        unknown_width=unknown_width,
        about_margin=about_margin,
        max_slots=max_slots,
        limit_why=limit_why,
    )
    return reading.items, reading.gaps


def respace_items(
    items: list[Item], gaps: list[Gap], style: InputStyle, keep_division: bool = False
) -> tuple[list[Item], list[str]]:
    """``items`` as ``--respace`` reads them: every known letter's word division UNKNOWN (the
    model predicts it), its accents and breathings UNKNOWN too unless the input bears marks
    (``style.accented``), its punctuation UNKNOWN unless the input has some (then the
    punctuation typed after a gap is kept too; else each gap's ``end_punct`` becomes UNKNOWN);
    what the input gives is kept. With ``keep_division`` (``--accents``), only the accents and
    breathings are predicted: the input's word division (and whether a word ends after each
    gap) and its punctuation are kept as typed. Returns the items and what the model predicts,
    e.g. ``["word division", "accents"]``; the gaps' ``end_boundary`` (and ``end_punct``) are
    set to UNKNOWN in place where the model is to predict them."""
    keep_marks = style.accented
    has_punct = keep_division or (
        any(
            it.values is not None and it.values[4] not in (A.PUNCT_NONE, A.PUNCT_UNKNOWN)
            for it in items
        )
        or any(g.end_punct not in (A.PUNCT_NONE, A.PUNCT_UNKNOWN) for g in gaps)
    )
    for g in gaps:
        if not has_punct:
            g.end_punct = A.PUNCT_UNKNOWN  # the model's punctuation after a gap too
        if not keep_division:
            g.end_boundary = A.BOUNDARY_UNKNOWN  # and whether a word ends after it
    out = []
    for it in items:
        if it.values is None:
            out.append(it)
            continue
        c, b, d, cap, pu = it.values
        b = b if keep_division else A.BOUNDARY_UNKNOWN
        d = d if keep_marks else A.DIA_UNKNOWN
        pu = pu if has_punct else A.PUNCT_UNKNOWN
        out.append(Item(it.gap, (c, b, d, cap, pu)))
    predicted = ([] if keep_division else ["word division"]) + ([] if keep_marks else ["accents"])
    return out, predicted + ([] if has_punct else ["punctuation"])


__all__ = ["Reading", "check_something_to_restore", "parse_input", "read_input", "respace_items"]
