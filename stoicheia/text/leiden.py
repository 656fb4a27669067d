"""Leiden notation in a Greek string -> a list of plain segments.

Epigraphers and papyrologists print damaged texts with the Leiden conventions (Krummrey and
Panciera 1980; the papyrological Leiden system as used by the Duke Databank). This module is
the project's one parser of that notation: the plain-text and JSONL readers (through
:func:`stoicheia.text.encode.encode_text`), the EpiDoc reader (which writes Leiden text from
the XML elements) and the ``restore`` command all go through :func:`parse_leiden`.

API (stable)
------------
``parse_leiden(text: str) -> list[Segment]``
    ``Segment = Text | Lacuna | Editorial | Comment`` (frozen dataclasses of
    :mod:`stoicheia.text.leiden_segments`), in reading order; the concatenation of their
    spans ``[start, end)`` covers ``text`` exactly. Raises ``LeidenError`` (a ``ValueError``,
    also in :mod:`stoicheia.text.leiden_segments`) naming the 0-based character position.
``parse_leiden_lenient(text: str, counts: Counter) -> list[Segment]``
    the readers' parse: notation that cannot be read is repaired and counted, not refused.
``has_leiden(text: str) -> bool``
    cheap test: does ``text`` contain a sign this parser interprets?

The inside of a square bracket (supplements and every lacuna notation) is read by
:mod:`stoicheia.text.leiden_lacunae`; this module finds the brackets and reads the signs
outside them.

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
                       ``〚 〛`` and ``[[ ]]``; a dot inside (``⟦...⟧``, ``⟦αβ..γ⟧``) is an
                       erased letter that cannot be read: ``Lacuna`` of one letter per dot,
                       as inside ``[ ]``
``{καὶ}``              letters the scribe wrote in error (surplus) -> ``"surplus"``
``\\π/``                letters the scribe added above the line (DDbDP) -> ``"added"``,
                       kept as text; a ``/`` with no ``\\`` before it is no bracket (a line
                       division, ``Διονύ/σιος``), nor a ``\\`` with no ``/`` after it
``⸢καὶ⸣``              half brackets (also ``⌈ ⌉`` ``⸤ ⸥`` ``⌊ ⌋`` ``˹ ˺``): letters read by an
                       earlier editor or only partly preserved -> ``"partly_lost"``; dots
                       inside (``⸢..ν⸣``) are lost letters, as in ``⟦ ⟧``
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
``vac.`` ``vacat``     an uninscribed space (``vac. 3`` too; also in square brackets,
                       ``[vac.]``, ``[vacat]``, ``[vac. 3]``: no lost letter) -> ``Comment``
=====================  =================================================================

A combining mark (accent, breathing, diaeresis, iota subscript) written right after an opening
bracket, or right after a lacuna inside ``[ ]``, has no letter before it in the bracket: it
belongs to the letter that follows it there (``ἀνθρώπ[\u0301ου]`` reads ``ἀνθρώπ[όυ]``, never
an accent on the π outside), and with no letter after it in the bracket (``[\u0301]``,
``[...\u0301]``) it is an error.

A ``?`` inside square brackets (``[καὶ?]``) marks the supplement as doubtful: it sets the
uncertain flags of that supplement and is not kept as text. A single ``.`` right after a
letter inside square brackets (``[ἔλαττον.]``) is the full stop of the supplement, not a lost
letter (lost letters stand apart, ``[.]`` ``[αβ . .]``, or in runs, ``[...]``). Outside
brackets everything else is text: a full stop is a full stop, ``...`` is an ellipsis.
Brackets do not nest (``[α(ὐτοῦ)]`` is an error: write ``[αὐτοῦ]``); an unclosed or unopened
bracket, an empty bracket, a width of 0, ``N±M`` with ``M >= N`` and a width given by a
number above :data:`~stoicheia.text.leiden_segments.MAX_LACUNA_WIDTH` are errors (the
encoder makes one slot per lost letter: ``[3000000000]`` would ask for gigabytes).

Refused as not Leiden, with a message that says what to write instead: a width that is not a
whole number (``[1.5]``), dots touching punctuation inside ``[ ]`` (``[.,;]``: dots there are
lost letters), a number with a dash on one side only (``[-5]``, ``[5-]``: a minus sign?),
``ca.`` with no number (``[ca.]``, ``[ - ca. - ]``).

A :class:`Lacuna` with ``max_width is None`` has an unknown width; its ``min_width`` is 0
unless the notation states a least width (``[-min.2-]``).
"""

from __future__ import annotations

import collections
import re
import unicodedata

from stoicheia.text.leiden_lacunae import read_square
from stoicheia.text.leiden_segments import (
    DOT_BELOW,
    Comment,
    Editorial,
    Lacuna,
    LacunaTooWideError,
    LeidenError,
    Segment,
    Text,
    marks_onto_next_letter,
    strip_dots,
)

__all__ = ["has_leiden", "parse_leiden", "parse_leiden_lenient"]

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
#: the whole content of a [ ] that notes an uninscribed space ([vac.], [vacat], [vac. ca. 3])
_VACAT_ALONE = re.compile(r"\s*vac(?:at|\.)?(?:\s*(?:ca\.?\s*)?\d+)?\s*", re.I)
#: lost letters inside ⟦ ⟧ or ⸢ ⸣: a run of dots, spaced or not ("...", ". . .": 3 letters)
_DOTS = re.compile(r"\.(?:[ \t]*\.)*")
_GREEK_LETTER = re.compile("[\u0370-\u03ff\u1f00-\u1fff]")
_BRACKET_SIGNS = re.compile("[\\[\\](){}<>⟨⟩⟦⟧〈〉〚〛\u2329\u232a⸢⸣⌈⌉⸤⸥⌊⌋˹˺]")

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
        s, flags, _ = strip_dots(raw)
        return [Text(s, flags, start, end)]
    # split at dots below that sit on no letter: each is an illegible letter
    segs: list[Segment] = []
    i = start
    run_start = start
    while i < end:
        ch = text[i]
        if ch == DOT_BELOW and (i == start or not _base_is_letter(text, i, start)):
            if run_start < i:
                s, flags, _ = strip_dots(text[run_start:i])
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
        s, flags, _ = strip_dots(text[run_start:end])
        segs.append(Text(s, flags, run_start, end))
    return segs


def _with_illegible_dots(
    text: str, opening: int, body: int, closing: int, end: int, reason: str
) -> list[Segment]:
    """The content of a ``⟦ ⟧`` or ``⸢ ⸣`` that holds dots: each ``.`` is a letter that cannot be
    read (erased past reading, or lost), as inside ``[ ]``: a run of them (spaced or not, ``...``
    ``. . .``) is a lacuna of that many letters; the
    letters between the dots keep the bracket's reason. The first piece's span starts at the
    opening bracket and the last one's ends after the closing bracket."""
    segs: list[Segment] = []
    pos = body
    runs = list(_DOTS.finditer(text, body, closing))
    for m in runs:
        if pos < m.start():
            segs.append(_editorial(text, pos, m.start(), reason, opening if pos == body else pos))
        a = opening if m.start() == body else m.start()
        b = end if m.end() == closing else m.end()
        n = m.group().count(".")
        segs.append(Lacuna(n, n, False, a, b))
        pos = m.end()
    if pos < closing:
        segs.append(_editorial(text, pos, closing, reason, pos, end))
    return [s for s in segs if s is not None]


def _editorial(
    text: str, a: int, b: int, reason: str, start: int, end: int | None = None
) -> Segment | None:
    """Letters ``text[a:b]`` of one bracket as an :class:`Editorial` (``None`` if only spaces,
    a :class:`Text` word break)."""
    s, flags, orphans = strip_dots(marks_onto_next_letter(text, a, b))
    if orphans:
        raise LeidenError(text, a, "a dot below on no letter inside a bracket")
    if not s.strip():
        return Text(" ", (False,), start, end if end is not None else b) if s else None
    return Editorial(s, reason, flags, start, end if end is not None else b)


def _base_is_letter(text: str, i: int, lo: int) -> bool:
    """Is the nearest non-combining character before ``text[i]`` (not before ``lo``) a letter?"""
    j = i - 1
    while j >= lo and unicodedata.combining(text[j]):
        j -= 1
    return j >= lo and text[j].isalpha()


def parse_leiden(text: str) -> list[Segment]:
    """Parse the Leiden notation in ``text`` (see the module docstring for every sign).

    Returns the segments in reading order (:class:`Text`, :class:`Lacuna`,
    :class:`Editorial`, :class:`Comment`); text outside brackets becomes :class:`Text` runs,
    NFC with dots below removed. An empty string gives ``[]``.

    Raises :class:`LeidenError` (a ``ValueError``) with the 0-based position of the fault:
    a closing bracket that closes nothing or the wrong bracket, an opening bracket inside
    another (brackets do not nest), a bracket left open, an empty bracket, a lacuna of width
    0, ``[N±M]`` with ``M >= N``, a counted width above
    :data:`~stoicheia.text.leiden_segments.MAX_LACUNA_WIDTH` (:class:`LacunaTooWideError`), a
    dot below on no letter inside ``[ ]``, a combining mark right after an opening bracket (or
    a lacuna in ``[ ]``) with no letter after it there.
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
                    f"{text[j]!r} does not close {opener!r} (opened at character {i}); "
                    f"expected {closer!r}",
                )
            j += 1
        if j >= n:
            raise LeidenError(text, i, f"{opener!r} is never closed; add {closer!r}")
        end = j + len(closer)
        if reason == "lost" and _VACAT_ALONE.fullmatch(text, body, j):
            # [vac.], [vacat], [vac. 3]: an uninscribed space the editor notes, no lost letter
            segs.append(Comment(text[i:end], i, end))
        elif reason == "lost":
            segs.extend(read_square(text, body, j))
        elif reason in ("erased", "partly_lost") and "." in text[body:j]:
            segs.extend(_with_illegible_dots(text, i, body, j, end, reason))
        else:
            raw = text[body:j]
            s, flags, orphans = strip_dots(raw)
            if not s.strip() and not orphans:
                raise LeidenError(text, i, f"empty {opener}{closer}; remove it")
            if reason == "abbreviation" and not _GREEK_LETTER.search(s):
                segs.append(Comment(text[i:end], i, end))
            else:
                if orphans:
                    raise LeidenError(text, i, f"a dot below on no letter inside {opener}{closer}")
                moved = marks_onto_next_letter(text, body, j)
                if moved != raw:
                    s, flags, _ = strip_dots(moved)
                segs.append(Editorial(s, reason, flags, i, end))
        i = run = end
    segs.extend(_text_segments(text, run, n))
    return segs


def parse_leiden_lenient(text: str, counts: collections.Counter) -> list[Segment]:
    """:func:`parse_leiden` for the readers of corpora: notation that cannot be read is
    repaired rather than refused, each repair counted in ``counts``.

    A counted lacuna above :data:`~stoicheia.text.leiden_segments.MAX_LACUNA_WIDTH` letters (a
    typo or a whole column) is read as ``[---]`` (unknown width; the bracket's other contents
    go with it), counted
    ``lacuna_too_wide``; any other fault drops the bracket sign or the combining mark at the
    error's position (or, if the fault is elsewhere, every bracket sign of the text), counted
    ``leiden_repaired``, and the text is parsed again. Never raises :class:`LeidenError`.
    """
    for _ in range(len(text) + 1):
        try:
            return parse_leiden(text)
        except LacunaTooWideError as err:
            # a loss too long to count (a typo or a whole column): kept as a loss of unknown
            # width, never joined across; the bracket's other contents go with it
            at = text.rfind(err.notation, 0, err.position + len(err.notation))
            if at < 0:
                at = text.rfind("[", 0, err.position + 1)
                end = text.find("]", err.position)
                err.notation = text[max(0, at) : end + 1 if end >= 0 else len(text)]
                at = max(0, at)
            counts["lacuna_too_wide"] += 1
            text = text[:at] + "[---]" + text[at + len(err.notation) :]
        except LeidenError as err:
            counts["leiden_repaired"] += 1
            p = err.position
            if 0 <= p < len(text) and (
                _BRACKET_SIGNS.match(text, p) or unicodedata.combining(text[p])
            ):
                # the bracket sign at fault, or a combining mark that has no letter to sit on
                text = text[:p] + text[p + 1 :]
            else:
                text = _BRACKET_SIGNS.sub("", text)
    return parse_leiden(_BRACKET_SIGNS.sub("", text))  # unreachable in practice
