"""Leiden notation in a Greek string -> a list of plain segments.

Epigraphers and papyrologists print damaged texts with the Leiden conventions (Krummrey and
Panciera 1980; the papyrological Leiden system as used by the Duke Databank). This module is
the project's one parser of that notation: the plain-text and JSONL readers (through
:func:`stoicheia.text.encode.encode_text`), the EpiDoc reader (which writes Leiden text from
the XML elements) and the ``restore`` command all go through :func:`parse_leiden`.

API (stable)
------------
``parse_leiden(text: str) -> list[Segment]``
    ``Segment = Text | Lacuna | Editorial | Comment`` (frozen dataclasses below), in reading
    order; the concatenation of their spans ``[start, end)`` covers ``text`` exactly.
    Raises :class:`LeidenError` (a ``ValueError``) naming the 0-based character position.
``has_leiden(text: str) -> bool``
    cheap test: does ``text`` contain a sign this parser interprets?
``REASONS``
    the values of :attr:`Editorial.reason`.

From Leiden text to planes (what ``restore`` and the readers use):
``stoicheia.text.encode.encode_text(text, strict=True) -> Encoded(planes, dropped, leiden)``;
``planes.lacuna`` marks the real-lacuna slots (``alphabet.LACUNA_LOST`` one slot per lost
letter, ``LACUNA_ABOUT`` one per letter of an estimated width, ``LACUNA_UNKNOWN`` one stand-in
slot for an unknown width), whose ``chars`` are ``MASK``; ``stoicheia.text.render.
planes_to_text`` writes them back as ``[...]``, ``[-ca.N-]`` and ``[---]``.

The notation read
-----------------
=====================  =================================================================
``[...]`` ``[. . .]``  a lacuna of known width: one dot per lost letter -> ``Lacuna(3, 3)``;
                       an ellipsis character counts as its dots (``[…]`` = ``[...]``)
``[.5.]`` ``[5]``      a lacuna of 5 lost letters -> ``Lacuna(5, 5)``
``[-ca.5-]``           about 5 (also ``[ca.5]``, ``[.c.5.]``, ``[- ca. 5 -]``) ->
                       ``Lacuna(5, 5, approximate=True)``
``[5±3]``              2 to 8 letters (``+/-`` also accepted) -> ``Lacuna(2, 8)``;
                       ``[.3-6.]`` 3 to 6 letters -> ``Lacuna(3, 6)``
``[---]`` ``[ - - - ]``  unknown width (any run of ``-`` ``–`` ``—``) -> ``Lacuna(0, None)``
``[καὶ]``              letters lost on the stone, supplied by the editor ->
                       ``Editorial("καὶ", "lost")``; supplements and lacunae mix in one
                       bracket: ``[καὶ τοῦ ---]`` -> Editorial + Lacuna
``α(ὐτοῦ)``            expansion of an abbreviation -> Text ``α`` + ``Editorial("ὐτοῦ",
                       "abbreviation")``; a parenthesis without a Greek letter (``(?)``,
                       ``(!)``, ``(sic)``, ``(vac.)``) is an editor's remark -> ``Comment``
``((δραχμὰς))``        the resolution of a symbol (DDbDP: the sign for drachmas written
                       out) -> ``Editorial("δραχμὰς", "abbreviation")``, as EpiDoc's
                       ``<expan><abbr><g/></abbr><ex>`` is read
``⟨καὶ⟩``              letters omitted by the scribe, added by the editor ->
                       ``"omitted"``; also ``〈 〉`` and ASCII ``< >``
``⟦καὶ⟧``              letters erased in antiquity (still read) -> ``"erased"``; also
                       ``〚 〛`` and ``[[ ]]``
``{καὶ}``              letters the scribe wrote in error (surplus) -> ``"surplus"``
``\\π/``                letters the scribe added above the line (DDbDP) -> ``"added"``,
                       kept as text; a ``/`` with no ``\\`` before it is no bracket (a line
                       division, ``Διονύ/σιος``), nor a ``\\`` with no ``/`` after it
``⸢καὶ⸣``              half brackets (also ``⌈ ⌉`` ``⸤ ⸥`` ``⌊ ⌋`` ``˹ ˺``): letters read by an
                       earlier editor or only partly preserved -> ``"partly_lost"``
``α̣``                  dot below (U+0323): a damaged, uncertain letter; the dot is removed
                       and the letter's flag in ``uncertain`` is set (in any segment)
``[ .. ? .. ]``         other projects' lacunae: a ``?`` among dots or dashes, ``[.?]``,
``[.?]`` ``[ca.?]``    ``[ca.?]`` (IAph, DDbDP Leiden+): unknown width ->
                       ``Lacuna(0, None)``; ``[-min.2-]`` (IGCyr) at least 2 ->
``[-min.2-]``          ``Lacuna(2, None)``; ``[-max.5-]`` at most 5 -> ``Lacuna(1, 5)``;
                       ``[-min.2 max.4-]`` 2 to 4 -> ``Lacuna(2, 4)``;
``[+3+]`` ``[+++]``    ``[+3+]`` and one ``+`` per letter (``[+++]``) -> ``Lacuna(3, 3)``;
                       ``[.5]`` ``[.1-3]`` (DDbDP) read as ``[.5.]`` ``[.1-3.]``
``̣`` on no letter      a dot below on a space or at the start (``̣ ̣ ̣``): traces of an
                       illegible letter each -> ``Lacuna(1, 1)`` per dot (merged)
``++`` ``λό+ος``       outside brackets, a run of ``+`` (EDH and others: letters too damaged
                       to read) -> ``Lacuna(2, 2)``, one lost letter per ``+``, when the run
                       is two or more long or touches a letter; a lone ``+`` standing apart
                       (``+ Ἐν ὀνόματι``) is a cross, a symbol, and stays text
``vac.`` ``vacat``     an uninscribed space (``vac. 3`` too) -> ``Comment``
=====================  =================================================================

A combining mark (accent, breathing, diaeresis, iota subscript) written right after an opening
bracket, or right after a lacuna inside ``[ ]``, has no letter before it in the bracket: it
belongs to the letter that follows it there (``ἀνθρώπ[\u0301ου]`` reads ``ἀνθρώπ[όυ]``, never
an accent on the π outside), and with no letter after it in the bracket (``[\u0301]``,
``[...\u0301]``) it is an error.

A ``?`` inside square brackets (``[καὶ?]``) marks the supplement as doubtful: it sets the
uncertain flags of that supplement and is not kept as text. A single ``.`` right after a
letter inside square brackets (``[ἔλαττον.]``) is the full stop of the supplement, not a lost
letter (lost letters stand apart, ``[.]`` ``[αβ . .]``, or in runs, ``[...]``). Outside brackets everything else is
text: a full stop is a full stop, ``...`` is an ellipsis. Brackets do not nest (``[α(ὐτοῦ)]``
is an error: write ``[αὐτοῦ]``); an unclosed or unopened bracket, an empty bracket, a width of
0, ``N±M`` with ``M >= N`` and a width given by a number above :data:`MAX_LACUNA_WIDTH` are
errors (the encoder makes one slot per lost letter: ``[3000000000]`` would ask for gigabytes).

Refused as not Leiden, with a message that says what to write instead: a width that is not a
whole number (``[1.5]``), dots touching punctuation inside ``[ ]`` (``[.,;]``: dots there are
lost letters), a number with a dash on one side only (``[-5]``, ``[5-]``: a minus sign?),
``ca.`` with no number (``[ca.]``, ``[ - ca. - ]``).

A :class:`Lacuna` with ``max_width is None`` has an unknown width; its ``min_width`` is 0
unless the notation states a least width (``[-min.2-]``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = [
    "LeidenError",
    "LacunaTooWideError",
    "Text",
    "Lacuna",
    "Editorial",
    "Comment",
    "Segment",
    "REASONS",
    "MAX_LACUNA_WIDTH",
    "parse_leiden",
    "has_leiden",
]

#: Values of :attr:`Editorial.reason`.
REASONS = ("lost", "abbreviation", "omitted", "erased", "surplus", "partly_lost", "added")

DOT_BELOW = "\u0323"

#: The widest lacuna, in letters, that a number in ``[ ]`` may give (``[.N.]``, ``[-ca.N-]``,
#: ``[N±M]``, ``[.a-b.]``). Editions count lost letters up to a few hundred (the widest in
#: ../shared/corpus is 915); a longer loss is counted in lines and written ``[---]``.
MAX_LACUNA_WIDTH = 10_000


class LeidenError(ValueError):
    """Leiden notation that cannot be read: unbalanced or nested brackets, an empty bracket,
    a lacuna of width 0, a bad ``N±M``.

    ``position`` is the 0-based character offset in the parsed string; ``str(error)`` reads
    ``"Leiden notation at character <position>: <message>"`` followed by the context.
    """

    def __init__(self, text: str, position: int, message: str) -> None:
        self.position = int(position)
        self.message = message
        lo = max(0, position - 15)
        context = text[lo : position + 15]
        super().__init__(f"Leiden notation at character {position}: {message} (near {context!r})")


class LacunaTooWideError(LeidenError):
    """A counted lacuna wider than :data:`MAX_LACUNA_WIDTH` letters; ``width`` is the widest
    reading in letters and ``notation`` the bracket as written."""

    def __init__(self, text: str, position: int, message: str, width: int, notation: str) -> None:
        super().__init__(text, position, message)
        self.width = width
        self.notation = notation


@dataclass(frozen=True)
class Text:
    """A run of text as read on the stone (letters, spaces, punctuation).

    ``text`` is NFC with the dots below removed; ``uncertain`` has one bool per code point
    of ``text`` (True for the code points of a letter written with a dot below).
    ``start``/``end``: the span in the parsed string (0-based, end exclusive).
    """

    text: str
    uncertain: tuple[bool, ...]
    start: int
    end: int


@dataclass(frozen=True)
class Lacuna:
    """Letters lost in the source, whose identity nobody knows.

    ``min_width``/``max_width`` in letters (``max_width is None``: unknown width, then
    ``min_width`` is 0, or the least width the notation states: ``[-min.2-]``); ``approximate`` is True when the editor's count is an estimate
    ("ca."), in which case ``min_width == max_width`` is that estimate.
    """

    min_width: int
    max_width: int | None
    approximate: bool
    start: int
    end: int

    @property
    def known_width(self) -> bool:
        """True for an exact width (``min_width == max_width`` and not approximate)."""
        return self.max_width == self.min_width and not self.approximate


@dataclass(frozen=True)
class Editorial:
    """Letters that an editorial sign marks; ``reason`` is one of :data:`REASONS`.

    ``"lost"``: supplied by the editor in a lacuna (``[ ]``); ``"abbreviation"``: the
    expansion of an abbreviation (``( )``); ``"omitted"``: left out by the scribe, added by
    the editor (``⟨ ⟩``); ``"erased"``: erased in antiquity but read (``⟦ ⟧``);
    ``"surplus"``: written in error by the scribe (``{ }``); ``"partly_lost"``: half brackets.
    ``text``/``uncertain``/``start``/``end`` as in :class:`Text`; the span includes the
    brackets, except for ``"lost"``, whose span is the supplement inside its ``[ ]``.
    """

    text: str
    reason: str
    uncertain: tuple[bool, ...]
    start: int
    end: int


@dataclass(frozen=True)
class Comment:
    """An editor's remark that is not text: ``(?)``, ``(!)``, ``(sic)``, ``vac.``."""

    text: str
    start: int
    end: int


Segment = Text | Lacuna | Editorial | Comment

# opener -> (closer, reason); two-character openers are tried first
_PAIRS: dict[str, tuple[str, str]] = {
    "[[": ("]]", "erased"),
    "((": ("))", "abbreviation"),  # DDbDP: the resolution of a symbol, ((δραχμὰς))
    "\\": ("/", "added"),  # DDbDP: letters the scribe added above the line (a backslash, /)
    "⟦": ("⟧", "erased"),
    "〚": ("〛", "erased"),
    "[": ("]", "lost"),
    "(": (")", "abbreviation"),
    "⟨": ("⟩", "omitted"),
    "〈": ("〉", "omitted"),
    "\u2329": ("\u232a", "omitted"),
    "<": (">", "omitted"),
    "{": ("}", "surplus"),
    "⸢": ("⸣", "partly_lost"),
    "⌈": ("⌉", "partly_lost"),
    "⸤": ("⸥", "partly_lost"),
    "⌊": ("⌋", "partly_lost"),
    "˹": ("˺", "partly_lost"),
}
#: a "/" alone is a line division or a slash, not a closing bracket: only a backslash opens one
_CLOSERS = {closer for closer, _ in _PAIRS.values()} - {"/"}
_SIGNS = frozenset("".join(_PAIRS) + "".join(_CLOSERS) + DOT_BELOW)
_VACAT = re.compile(r"\(?\bvac(?:at|\.)?(?:\s*(?:ca\.?\s*)?\d+)?\)?(?![a-z])", re.I)
_GREEK_LETTER = re.compile("[\u0370-\u03ff\u1f00-\u1fff]")
_DASHES = "-\u2010\u2011\u2012\u2013\u2014\u2015\u2212"
_DASH_CLASS = "\\-\u2010\u2011\u2012\u2013\u2014\u2015\u2212"  # for use inside [...] of a regex
# inside [ ]: a width given by a number ("[.5.]", "[-ca.5-]", "[5±3]", "[.3-6.]")
_WIDTH = re.compile(
    rf"[.{_DASH_CLASS}\s]*(?P<ca>c(?:a)?\.?\s*)?(?P<n>\d+)\s*"
    rf"(?:(?:±|\+/-|\+-)\s*(?P<pm>\d+)|[{_DASH_CLASS}]\s*(?P<hi>\d+))?\s*[.{_DASH_CLASS}]*"
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


#: Outside brackets, a run of "+" is lost letters, one per "+" (EDH and other projects: a
#: letter of which too little is left to read), when it is two or more long or touches a
#: letter ("λό+ος"); a lone "+" standing apart ("+ Ἐν ὀνόματι") is the cross that opens a
#: Christian text, a symbol and no letter.
_PLUS_RUN = re.compile("\\+{2,}|(?<=[^\\W\\d_])\\+|(?<=[\u0300-\u036f])\\+|\\+(?=[^\\W\\d_])")


#: letters added above the line, ``\\π/``: a backslash is that bracket only when a ``/`` closes it
#: within a few words, on the same line, with no other bracket between (Perseus texts keep
#: stray backslashes, Beta Code graves, that open nothing)
_ADDED_ABOVE = re.compile(r"\\[^\\/\[\]\n]{1,40}/")


def has_leiden(text: str) -> bool:
    """True if ``text`` holds any sign :func:`parse_leiden` interprets (brackets of any kind,
    a dot below, ``vac.``, lost-letter ``+``). Text without them parses to one :class:`Text`
    segment."""
    return (
        any(c in _SIGNS for c in text)
        or bool(_VACAT.search(text))
        or ("+" in text and bool(_PLUS_RUN.search(text)))
    )


def _strip_dots(s: str) -> tuple[str, tuple[bool, ...], int]:
    """NFC ``s`` without dots below, the per-code-point uncertain flags, and the number of
    dots below that sat on no letter (illegible traces)."""
    if DOT_BELOW not in s and unicodedata.is_normalized("NFC", s):
        return s, (False,) * len(s), 0
    out: list[str] = []
    flags: list[bool] = []
    orphans = 0
    for cl in re.findall(
        r"[^\u0300-\u036f][\u0300-\u036f]*|[\u0300-\u036f]+", unicodedata.normalize("NFD", s)
    ):
        dotted = DOT_BELOW in cl
        body = cl.replace(DOT_BELOW, "")
        if dotted and (not body or not body[0].isalpha()):
            orphans += cl.count(DOT_BELOW)
            if body.strip():
                body_nfc = unicodedata.normalize("NFC", body)
                out.append(body_nfc)
                flags.extend([False] * len(body_nfc))
            continue
        nfc = unicodedata.normalize("NFC", body)
        out.append(nfc)
        flags.extend([dotted] * len(nfc))
    return "".join(out), tuple(flags), orphans


def _text_segments(text: str, start: int, end: int) -> list[Segment]:
    """Plain text between brackets: Text runs, ``vac.`` comments, illegible-dot lacunae,
    runs of lost-letter ``+`` (:data:`_PLUS_RUN`)."""
    segs: list[Segment] = []
    pos = start
    chunk = text[start:end]
    signs = list(_VACAT.finditer(chunk))
    if "+" in chunk:
        signs = sorted(signs + list(_PLUS_RUN.finditer(chunk)), key=lambda m: m.start())
    for m in signs:
        a, b = start + m.start(), start + m.end()
        if a < pos:  # inside the sign before (cannot happen: "vac." holds no "+")
            continue
        segs.extend(_dotted_text(text, pos, a))
        if m.re is _PLUS_RUN:
            segs.append(Lacuna(b - a, b - a, False, a, b))
        else:
            segs.append(Comment(text[a:b], a, b))
        pos = b
    segs.extend(_dotted_text(text, pos, end))
    return segs


def _dotted_text(text: str, start: int, end: int) -> list[Segment]:
    if start >= end:
        return []
    raw = text[start:end]
    if DOT_BELOW not in raw:
        s, flags, _ = _strip_dots(raw)
        return [Text(s, flags, start, end)]
    # split at dots below that sit on no letter: each is an illegible letter
    segs: list[Segment] = []
    i = start
    run_start = start
    while i < end:
        ch = text[i]
        if ch == DOT_BELOW and (i == start or not _base_is_letter(text, i, start)):
            if run_start < i:
                s, flags, _ = _strip_dots(text[run_start:i])
                segs.append(Text(s, flags, run_start, i))
            j = i
            n = 0
            while j < end and (
                text[j] == DOT_BELOW or (text[j] == " " and DOT_BELOW in text[j + 1 : j + 2])
            ):
                n += text[j] == DOT_BELOW
                j += 1
            if (
                segs
                and isinstance(segs[-1], Text)
                and segs[-1].text.endswith(" ")
                and segs[-1].end == i
            ):
                # the space that carried the first dot is part of the traces
                last = segs.pop()
                if last.text[:-1]:
                    segs.append(Text(last.text[:-1], last.uncertain[:-1], last.start, i - 1))
                segs.append(Lacuna(n, n, False, i - 1, j))
            else:
                segs.append(Lacuna(n, n, False, i, j))
            i = run_start = j
            continue
        i += 1
    if run_start < end:
        s, flags, _ = _strip_dots(text[run_start:end])
        segs.append(Text(s, flags, run_start, end))
    return segs


def _base_is_letter(text: str, i: int, lo: int) -> bool:
    """Is the nearest non-combining character before ``text[i]`` (not before ``lo``) a letter?"""
    j = i - 1
    while j >= lo and unicodedata.combining(text[j]):
        j -= 1
    return j >= lo and text[j].isalpha()


def _square(text: str, start: int, end: int) -> list[Segment]:
    """The content ``text[start:end]`` of one ``[ ]``: supplements and lacunae."""
    segs: list[Segment] = []
    i = start
    sup_start = None

    def flush(upto: int) -> None:
        nonlocal sup_start
        if sup_start is None:
            return
        raw = _marks_onto_next_letter(text, sup_start, upto)
        doubtful = "?" in raw
        s, flags, orphans = _strip_dots(raw.replace("?", ""))
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
            f"{text[i:end]!r} gives no number after 'ca.': write [-ca.N-] for about N lost letters, "
            "or [---] for a lacuna of unknown width",
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
                    f"{text[i : w.end()].strip()!r} has a dash on one side of the number only (a minus sign?); "
                    "write [.N.] for N lost letters, [-ca.N-] for about N, [.a-b.] for a range",
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
                    f"{text[lo:hi]!r}: dots inside [ ] are lost letters, and these touch the punctuation "
                    f"{c!r}; put punctuation outside the bracket, and write lost letters as [...] or [.N.]",
                )


def _marks_onto_next_letter(text: str, a: int, b: int) -> str:
    """``text[a:b]`` with the combining marks at its start moved after the letter that follows
    them (Unicode puts a mark after its letter: marks typed right after an opening bracket
    would otherwise join the letter before the bracket).

    A leading run that holds a dot below is left as it is (:func:`_strip_dots` reports a dot
    on no letter). Raises :class:`LeidenError` at ``a`` when no letter follows the marks.
    """
    raw = text[a:b]
    k = 0
    while k < len(raw) and unicodedata.combining(raw[k]):
        k += 1
    if k == 0 or DOT_BELOW in raw[:k]:
        return raw
    if k < len(raw) and raw[k].isalpha():
        return raw[k] + raw[:k] + raw[k + 1 :]
    names = ", ".join(unicodedata.name(c, f"U+{ord(c):04X}").lower() for c in raw[:k])
    raise LeidenError(
        text,
        a,
        f"a combining mark ({names}) with no letter inside the bracket to sit on; "
        "type it after the letter it belongs to, or remove it",
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
            f"a lacuna of up to {widest} letters is wider than the {MAX_LACUNA_WIDTH:,} letters a counted lacuna may "
            "hold; check the number, or write a loss that long as [---] (unknown width)",
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
                f"width range {n}-{hi} is empty or starts at 0; write [.low-high.] with 1 <= low <= high",
            )
        return Lacuna(n, hi, False, at, m.end())
    if n == 0:
        raise LeidenError(
            text, at, "a lacuna of width 0; drop the bracket or give the number of lost letters"
        )
    return Lacuna(n, n, bool(m.group("ca")), at, m.end())


def parse_leiden(text: str) -> list[Segment]:
    """Parse the Leiden notation in ``text`` (see the module docstring for every sign).

    Returns the segments in reading order (:class:`Text`, :class:`Lacuna`,
    :class:`Editorial`, :class:`Comment`); text outside brackets becomes :class:`Text` runs,
    NFC with dots below removed. An empty string gives ``[]``.

    Raises :class:`LeidenError` (a ``ValueError``) with the 0-based position of the fault:
    a closing bracket that closes nothing or the wrong bracket, an opening bracket inside
    another (brackets do not nest), a bracket left open, an empty bracket, a lacuna of width
    0, ``[N±M]`` with ``M >= N``, a counted width above :data:`MAX_LACUNA_WIDTH`
    (:class:`LacunaTooWideError`), a dot below on no letter inside ``[ ]``, a combining mark
    right after an opening bracket (or a lacuna in ``[ ]``) with no letter after it there.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_leiden expects str, got {type(text).__name__}")
    segs: list[Segment] = []
    n = len(text)
    i = 0
    run = 0  # start of the current plain-text run
    while i < n:
        ch = text[i]
        opener = text[i : i + 2] if text[i : i + 2] in _PAIRS else ch if ch in _PAIRS else None
        if opener == "\\" and _ADDED_ABOVE.match(text, i) is None:
            opener = None  # a stray backslash (a Beta Code grave left over): text, no bracket
        if opener is None:
            if ch in _CLOSERS or (ch == "]" and text[i : i + 2] == "]]"):
                raise LeidenError(
                    text, i, f"{ch!r} closes no bracket; remove it or add the opening bracket"
                )
            i += 1
            continue
        closer, reason = _PAIRS[opener]
        segs.extend(_text_segments(text, run, i))
        body = i + len(opener)
        j = body
        while j < n:
            if text.startswith(closer, j):
                break
            c2 = text[j : j + 2]
            if c2 in _PAIRS or text[j] in _PAIRS:
                inner = c2 if c2 in _PAIRS else text[j]
                raise LeidenError(
                    text,
                    j,
                    f"{inner!r} opens a bracket inside {opener!r} (opened at character {i}); "
                    "Leiden brackets do not nest: close the first one before",
                )
            if text[j] in _CLOSERS and not text.startswith(closer, j):
                raise LeidenError(
                    text,
                    j,
                    f"{text[j]!r} does not close {opener!r} (opened at character {i}); expected {closer!r}",
                )
            j += 1
        if j >= n:
            raise LeidenError(text, i, f"{opener!r} is never closed; add {closer!r}")
        end = j + len(closer)
        if reason == "lost":
            segs.extend(_square(text, body, j))
        else:
            raw = text[body:j]
            s, flags, orphans = _strip_dots(raw)
            if not s.strip() and not orphans:
                raise LeidenError(text, i, f"empty {opener}{closer}; remove it")
            if reason == "abbreviation" and not _GREEK_LETTER.search(s):
                segs.append(Comment(text[i:end], i, end))
            else:
                if orphans:
                    raise LeidenError(text, i, f"a dot below on no letter inside {opener}{closer}")
                moved = _marks_onto_next_letter(text, body, j)
                if moved != raw:
                    s, flags, _ = _strip_dots(moved)
                segs.append(Editorial(s, reason, flags, i, end))
        i = run = end
    segs.extend(_text_segments(text, run, n))
    return segs
