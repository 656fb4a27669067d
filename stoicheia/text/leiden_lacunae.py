"""The inside of a square bracket in Leiden notation: supplements and lacunae.

:func:`read_square` reads the content of one ``[ ]`` (the bracket of letters lost on the
stone) into :class:`~stoicheia.text.leiden_segments.Editorial` supplements and
:class:`~stoicheia.text.leiden_segments.Lacuna` segments: widths given by dots (``[...]``),
by a number (``[.5.]``, ``[-ca.5-]``, ``[5±3]``, ``[.3-6.]``), unknown widths (``[---]``), and
the lacuna notations of other epigraphic and papyrological projects (``[ .. ? .. ]``,
``[-min.2-]``, ``[+3+]``). The signs are listed in :mod:`stoicheia.text.leiden`, which finds
the brackets and hands each square one here; notation that is not Leiden is refused with a
:class:`~stoicheia.text.leiden_segments.LeidenError` that says what to write instead.
"""

from __future__ import annotations

import re
import unicodedata

from stoicheia.text.leiden_segments import (
    MAX_LACUNA_WIDTH,
    Editorial,
    Lacuna,
    LacunaTooWideError,
    LeidenError,
    Segment,
    marks_onto_next_letter,
    strip_dots,
)

__all__ = ["read_square"]

_DASHES = "-\u2010\u2011\u2012\u2013\u2014\u2015\u2212"
_DASH_CLASS = "\\-\u2010\u2011\u2012\u2013\u2014\u2015\u2212"  # for use inside [...] of a regex
# inside [ ]: a width given by a number ("[.5.]", "[-ca.5-]", "[5±3]", "[.3-6.]"), padded with
# dots or dashes on either side ("[- - ca. 12 - -]": one lacuna; a padding spaced
# before the number may be spaced after it, an unspaced one not: "[.3. - - -]" is two); the
# number may name its unit ("[- - - c. 10 litt. - - -]", "[ca. 3 letters]")
_WIDTH = re.compile(
    rf"(?=(?P<spaced>[.{_DASH_CLASS}\s]*?[.{_DASH_CLASS}]\s+[.{_DASH_CLASS}])?)"
    rf"[.{_DASH_CLASS}\s]*(?P<ca>c(?:a)?\.?\s*)?(?P<n>\d+)\s*"
    rf"(?:(?:±|\+/-|\+-)\s*(?P<pm>\d+)|[{_DASH_CLASS}]\s*(?P<hi>\d+))?"
    r"(?:\s*(?:litt?\.|(?:litt?|letters?)\b))?"  # "[ca. 3 litt.]": the unit, in Latin or English
    rf"(?(spaced)(?:\s*[.{_DASH_CLASS}])*|\s*[.{_DASH_CLASS}]*)"
)
_DOTS = re.compile("[.\u2025\u2026](?:\\s*[.\u2025\u2026])*")
_DASH_RUN = re.compile(rf"[{_DASH_CLASS}](?:\s*[{_DASH_CLASS}])*")
_DECOR = rf"[.{_DASH_CLASS}\s]*"  # the dots, dashes and spaces that pad a width in [ ]
# Lacuna notations of other epigraphic and papyrological projects (see the module docstring):
# "[ .. ? .. ]", "[.?]", "[ca.?]", "[-?-]" (IAph, DDbDP Leiden+): lost letters, number unknown
_FOREIGN_UNKNOWN = re.compile(
    rf"(?=[.{_DASH_CLASS}c])(?:[.{_DASH_CLASS}\s]*(?:ca?\.?\s*)?)\?{_DECOR}"
)
# "[-min.2-]", "[- max. 5 -]" (IGCyr, IAph): at least / at most N letters; both, a range:
# "[-min.2 max.4-]"
_FOREIGN_MINMAX = re.compile(
    rf"{_DECOR}(?P<mm>min|max)\.?\s*(?P<n>\d+)"
    rf"(?:[\s,;{_DASH_CLASS}]*(?P<mm2>min|max)\.?\s*(?P<n2>\d+))?{_DECOR}"
)
# "[+3+]" (N letters), "[+++]" (one lost letter per '+'), as EDH-style projects print them
_FOREIGN_PLUS = re.compile(r"\+\s*(?P<n>\d+)\s*\+|\+(?:\s*\+)*")
# "[ca.]" / "[c.]" with no number after it
_CA_NO_NUMBER = re.compile(rf"{_DECOR}ca?\.?\s*")
# a number in [ ] with a decimal point or comma ("[1.5]"): not a count of letters
_DECIMAL = re.compile(r"\d+[.,]\d")


def read_square(text: str, start: int, end: int) -> list[Segment]:
    """The content ``text[start:end]`` of one ``[ ]``: supplements and lacunae."""
    segs: list[Segment] = []
    i = start
    sup_start = None

    def flush(upto: int) -> None:
        nonlocal sup_start
        if sup_start is None:
            return
        raw = marks_onto_next_letter(text, sup_start, upto)
        doubtful = "?" in raw
        s, flags, orphans = strip_dots(raw.replace("?", ""))
        if orphans:
            raise LeidenError(
                text,
                sup_start,
                "a dot below on no letter inside [ ]; write the lost letters as dots: [...]",
            )
        if s.strip():
            if doubtful:
                flags = tuple(not c.isspace() for c in s)
            segs.append(Editorial(s, "lost", flags, sup_start, upto))
        elif s and segs:
            # spaces between two lacunae/supplements inside one bracket: a word break
            segs.append(Editorial(s, "lost", flags, sup_start, upto))
        sup_start = None

    while i < end:
        ch = text[i]
        if ch in ".c+m" + _DASHES or ch.isspace() or ch.isdigit():
            foreign = _foreign_lacuna(text, i, end, sup_start is None)
            if foreign is not None:
                flush(i)
                segs.append(foreign)
                i = foreign.end
                continue
        if ch.isdigit() or ch in "c." + _DASHES or ch.isspace():
            m = _WIDTH.match(text, i, end)
            if m is not None and (not ch.isspace() or sup_start is None):
                flush(i)
                segs.append(_width_lacuna(text, m, i))
                i = m.end()
                continue
        if ch == "." and i > start and _ends_a_word(text, i, start) and text[i + 1 : i + 2] != ".":
            # a full stop that ends a supplied word ("[ἔλαττον.]"), not a lost letter:
            # lost letters stand apart from letters ("[.]", "ἐπ[ὶ . .]") or in runs ("[...]")
            if sup_start is None:
                sup_start = i
            i += 1
            continue
        if ch in ".\u2025\u2026":
            # an ellipsis character in [ ] is the dots a word processor made of "..." ("[…]")
            m = _DOTS.match(text, i, end)
            _dots_next_to_punctuation(text, i, m.end(), start, end)
            flush(i)
            n = sum(1 for c in unicodedata.normalize("NFKD", m.group()) if c == ".")
            segs.append(Lacuna(n, n, False, i, m.end()))
            i = m.end()
            continue
        if ch in _DASHES:
            m = _DASH_RUN.match(text, i, end)
            flush(i)
            segs.append(Lacuna(0, None, False, i, m.end()))
            i = m.end()
            continue
        if sup_start is None:
            sup_start = i
        i += 1
    flush(end)
    # drop pure-space editorial pieces at the edges ("[ - - - ]")
    while segs and isinstance(segs[0], Editorial) and not segs[0].text.strip():
        segs.pop(0)
    while segs and isinstance(segs[-1], Editorial) and not segs[-1].text.strip():
        segs.pop()
    if not segs:
        raise LeidenError(text, start - 1, "empty [ ]; write [---] for a lacuna of unknown width")
    return segs


def _foreign_lacuna(text: str, i: int, end: int, at_edge: bool) -> Lacuna | None:
    """A lacuna written in another project's notation at ``text[i:]`` inside ``[ ]`` (``end``:
    the closing bracket), or ``None``. Refuses notation that is not Leiden.

    ``at_edge``: no supplement is open (a width may start with spaces only then).
    Raises :class:`LeidenError` for ``[ca.]`` with no number, a decimal width (``[1.5]``)
    and a width with a dash on one side only (``[-5]``, ``[5-]``: a minus sign, not Leiden).
    """
    ch = text[i]
    if ch.isspace() and not at_edge:
        return None
    m = _FOREIGN_UNKNOWN.match(text, i, end)
    if m is not None and m.end() > i and (m.end() == end or text[m.end()].isalpha()):
        return Lacuna(0, None, False, i, m.end())
    m = _FOREIGN_MINMAX.match(text, i, end)
    if m is not None:
        return _min_max_lacuna(text, m, i)
    m = _FOREIGN_PLUS.match(text, i, end)
    if m is not None:
        n = int(m.group("n")) if m.group("n") else m.group().count("+")
        if n == 0 or n > MAX_LACUNA_WIDTH:
            raise LeidenError(
                text,
                i,
                f"{m.group()!r}: a lacuna of {n} letters; give a number from 1 to "
                f"{MAX_LACUNA_WIDTH:,}, or write [---] for an unknown width",
            )
        return Lacuna(n, n, False, i, m.end())
    m = _CA_NO_NUMBER.match(text, i, end)
    if m is not None and "c" in m.group() and (m.end() == end or text[m.end()] in "." + _DASHES):
        raise LeidenError(
            text,
            i,
            f"{text[i:end]!r} gives no number after 'ca.': "
            "write [-ca.N-] for about N lost letters, or [---] for a lacuna of unknown width",
        )
    m = _DECIMAL.match(text, i, end) if ch.isdigit() else None
    if m is not None:
        raise LeidenError(
            text,
            i,
            f"a width of {text[i : m.end() + 8].split(']')[0]!r} letters is not a whole number; "
            "give the number of lost letters ([.5.]) or a range ([.4-6.])",
        )
    if ch in _DASHES or ch.isdigit():
        w = _WIDTH.match(text, i, end)
        if w is not None:
            body = w.group()
            lead = body[: body.index(w.group("n"))]
            tail = text[
                (
                    w.end("hi") if w.group("hi") else w.end("pm") if w.group("pm") else w.end("n")
                ) : w.end()
            ]
            dash_before = any(c in _DASHES for c in lead)
            dash_after = any(c in _DASHES for c in tail)
            if dash_before != dash_after:
                raise LeidenError(
                    text,
                    i,
                    f"{text[i : w.end()].strip()!r} has a dash on one side of the number only "
                    "(a minus sign?); write [.N.] for N lost letters, [-ca.N-] for about N, "
                    "[.a-b.] for a range",
                )
    return None


def _min_max_lacuna(text: str, m: re.Match, i: int) -> Lacuna:
    """The lacuna of ``[-min.N-]`` (at least N, open-ended), ``[-max.N-]`` (1 to N) or
    ``[-min.A max.B-]`` (A to B) matched by ``m`` at ``i``; raises :class:`LeidenError` for a
    number 0 or above :data:`MAX_LACUNA_WIDTH`, two bounds of one kind, or A > B."""
    bounds = {m.group("mm"): int(m.group("n"))}
    if m.group("mm2"):
        if m.group("mm2") in bounds:
            raise LeidenError(
                text,
                i,
                f"{m.group().strip()!r} gives {m.group('mm2')}. twice; write [-min.A max.B-]",
            )
        bounds[m.group("mm2")] = int(m.group("n2"))
    for n in bounds.values():
        if n == 0:
            raise LeidenError(
                text, i, "a lacuna of at least/at most 0 letters; give a number above 0"
            )
        if n > MAX_LACUNA_WIDTH:
            raise LeidenError(
                text,
                i,
                f"a lacuna of {n} letters is wider than the {MAX_LACUNA_WIDTH:,} letters a counted "
                "lacuna may hold; write [---] for a loss that long",
            )
    lo, hi = bounds.get("min", 1), bounds.get("max")
    if hi is not None and lo > hi:
        raise LeidenError(
            text, i, f"{m.group().strip()!r}: at least {lo} but at most {hi} letters; swap them"
        )
    return Lacuna(lo, hi, False, i, m.end())  # hi None: at least lo, open-ended


def _dots_next_to_punctuation(text: str, a: int, b: int, lo: int, hi: int) -> None:
    """Dots in ``[ ]`` are lost letters; dots touching punctuation (``[.,;]``) are no Leiden."""
    for k in (a - 1, b):
        if lo <= k < hi:
            c = text[k]
            if unicodedata.category(c)[0] in "PS" and c not in _DASHES and c not in ".?":
                raise LeidenError(
                    text,
                    a,
                    f"{text[lo:hi]!r}: dots inside [ ] are lost letters, and these touch the "
                    f"punctuation {c!r}; put punctuation outside the bracket, and write lost "
                    "letters as [...] or [.N.]",
                )


def _ends_a_word(text: str, i: int, lo: int) -> bool:
    """Does a word end right before ``text[i]`` (a letter or mark, or a letter and its elision
    mark: ``[α’.]`` is a numeral or an elided word and its full stop)?"""
    if _is_letterish(text[i - 1]):
        return True
    return text[i - 1] in "’'ʼ" and i - 2 >= lo and _is_letterish(text[i - 2])


def _is_letterish(ch: str) -> bool:
    return ch.isalpha() or unicodedata.combining(ch) > 0


def _width_lacuna(text: str, m: re.Match, at: int) -> Lacuna:
    n = int(m.group("n"))
    widest = max(n + int(m.group("pm") or 0), int(m.group("hi") or 0))
    if widest > MAX_LACUNA_WIDTH:
        opened = text.rfind("[", 0, at + 1)
        closed = text.find("]", at)
        notation = text[max(0, opened) : closed + 1 if closed >= 0 else m.end()]
        raise LacunaTooWideError(
            text,
            at,
            f"a lacuna of up to {widest} letters is wider than the {MAX_LACUNA_WIDTH:,} letters "
            "a counted lacuna may hold; check the number, or write a loss that long as [---] "
            "(unknown width)",
            widest,
            notation,
        )
    if m.group("pm") is not None:
        pm = int(m.group("pm"))
        if pm >= n:
            raise LeidenError(
                text, at, f"[{n}±{pm}] allows a width of 0 or less; need ± less than {n}"
            )
        return Lacuna(n - pm, n + pm, False, at, m.end())
    if m.group("hi") is not None:
        hi = int(m.group("hi"))
        if n == 0 or hi < n:
            raise LeidenError(
                text,
                at,
                f"width range {n}-{hi} is empty or starts at 0; "
                "write [.low-high.] with 1 <= low <= high",
            )
        return Lacuna(n, hi, False, at, m.end())
    if n == 0:
        raise LeidenError(
            text, at, "a lacuna of width 0; drop the bracket or give the number of lost letters"
        )
    return Lacuna(n, n, bool(m.group("ca")), at, m.end())
