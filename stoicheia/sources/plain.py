"""Reader for Unicode Greek in plain text (``.txt``) files, and the line reading and text
normalisation the JSON Lines reader (:mod:`stoicheia.sources.jsonl`) shares.

Both readers expect text that is already Unicode Greek (any normalisation form). Every reader in
this package passes its text through :func:`normalise_text`: NFC, whitespace runs (newlines
included) become one space, and a combining comma above (U+0313) left on a consonant after
NFC -- the elision mark of the Perseus treebank and of many Unicode editions (``δ̓``) --
becomes U+2019, the elision mark the Beta Code reader writes. Nothing else is changed:
punctuation and editorial brackets are kept.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType

from .record import SourceRecord, read_utf8, relative_name

__all__ = [
    "STREAM_PARAGRAPH_CHARS",
    "normalise_text",
    "read_plaintext",
    "read_utf8_lines",
    "iter_utf8_lines",
    "LineTooLong",
]

#: A paragraph of a ``.txt`` file longer than this (characters as read) is given in chunks
#: to a caller that asks for them (``read_plaintext(..., chunks=True)``: ``stoicheia
#: convert``), so that a paragraph of any length is never held whole: 2 MB of Greek.
STREAM_PARAGRAPH_CHARS = 1 << 20
#: bytes read from a ``.txt`` file at a time when reading in chunks
_READ_BYTES = 1 << 20
#: characters of raw paragraph text normalised at a time when reading in chunks
_NORMALISE_CHARS = 1 << 16
#: the hyphens of a word divided at a line end (:data:`_LINE_END_HYPHEN`)
_HYPHENS = "-\u00ad\u2010\u2011=\u2e17\u2e40"
#: where a paragraph read in chunks may be cut: a whitespace run after neither whitespace nor
#: a hyphen (no match of the normalisation crosses it, and NFC composes nothing across it)
_CUT = re.compile("(?<=[^\\s" + re.escape(_HYPHENS) + "])\\s")

_WS = re.compile(r"\s+")
_CONSONANT_PSILI = re.compile(r"(?<=[βγδζθκλμνξπρσςτφχψΒΓΔΖΘΚΛΜΝΞΠΡΣΤΦΧΨ])\u0313")


#: A word divided at a line end: a letter (its marks, a closing Leiden bracket, the ``/`` of
#: ``\ /`` or a lost-letter ``+``), a hyphen
#: (``-``, soft hyphen U+00AD, U+2010, U+2011, the double hyphen ``=`` U+2E17 U+2E40 of
#: papyrological editions), the line end, then a letter, an opening bracket (``\`` too) or a
#: lost-letter ``+`` on the next line.
_LINE_END_HYPHEN = re.compile(
    "(?<=[^\\W\\d_]|[\u0300-\u036f\\])⟩〉⟧〛}⸣⌉⸥⌋˺>/+])"
    "[\\-\u00ad\u2010\u2011=\u2e17\u2e40][ \t]*(?:\r\n|[\n\r\u2028\u2029\u0085])\\s*"
    "(?=[^\\W\\d_]|[\\[(⟨〈⟦〚{⸢⌈⸤⌊˹<\\\\+])"
)


def normalise_text(text: str, counts: Counter[str] | None = None) -> str:
    """NFC, single spaces, stripped; U+0313 on a consonant -> U+2019 (counted ``elision_mark``).

    A hyphen at a line end between two letters (``πο-⏎τῷ``; also U+00AD, U+2010, U+2011,
    ``=``, U+2E17, U+2E40) is removed with the line end: one word (counted ``hyphen_joined``).
    """
    text = unicodedata.normalize("NFC", text)
    if "\n" in text or "\r" in text or "\u2028" in text or "\u2029" in text or "\u0085" in text:
        text, n = _LINE_END_HYPHEN.subn("", text)
        if n and counts is not None:
            counts["hyphen_joined"] += n
    if "\u0313" in text:
        text, n = _CONSONANT_PSILI.subn("\u2019", text)
        if counts is not None:
            counts["elision_mark"] += n
    return _WS.sub(" ", text).strip()


#: Line ends: ``\\n``, ``\\r\\n`` and a lone ``\\r``, and nothing else. ``str.splitlines`` also
#: splits at U+2028, U+2029, U+0085 and other controls, which JSON allows raw inside a string:
#: a JSON Lines record holding one would be cut in two and rejected as invalid JSON.
_LINE_END = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


def read_utf8_lines(path: Path) -> list[str]:
    """The lines of ``path`` (with their line end), decoded as UTF-8 (a BOM is dropped).

    Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` only (see :data:`_LINE_END`): U+2028,
    U+0085 and the like inside a line are characters of that line (whitespace to
    :func:`normalise_text`). Raises :class:`SourceError` naming the first line that is not
    valid UTF-8.
    """
    text = read_utf8(Path(path), "utf-8-sig")
    lines = _LINE_END.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


class LineTooLong(Exception):
    """A line longer than the ``max_chars`` given to :func:`iter_utf8_lines`: its 1-based
    ``number``, and the ``chars`` (characters) and ``size`` (bytes of UTF-8) of the whole line,
    read to its end without holding it."""

    def __init__(self, number: int, chars: int, size: int) -> None:
        super().__init__(f"line {number}: {chars} characters")
        self.number, self.chars, self.size = number, chars, size


def iter_utf8_lines(path: Path, max_chars: int | None = None) -> Iterator[str]:
    """The lines of ``path`` as :func:`read_utf8_lines` gives them (the same strings), read
    from the file :data:`_READ_BYTES` at a time: one line held at a time, never the file.
    Raises :class:`SourceError` naming the first line that is not valid UTF-8, when the
    reading reaches it (the lines before it have been given), and :class:`LineTooLong` for a
    line of more than ``max_chars`` characters (``None``: any length), which is then read to
    its end but not held: memory stays bounded by ``max_chars``."""
    held: list[str] = []
    n = number = 0  # characters held; lines read before the one held
    too_long = None  # (characters, bytes) of the line too long, so far
    for piece, ends in _line_pieces(Path(path)):
        if too_long is not None:
            too_long = (too_long[0] + len(piece), too_long[1] + len(piece.encode("utf-8")))
        else:
            held.append(piece)
            n += len(piece)
            if max_chars is not None and n > max_chars:
                too_long = (n, sum(len(p.encode("utf-8")) for p in held))
                held, n = [], 0
        if ends:
            number += 1
            if too_long is not None:
                raise LineTooLong(number, *too_long)
            line = "".join(held)
            held, n = [], 0
            if line:
                yield line


def read_plaintext(
    path: Path,
    root: Path | None = None,
    *,
    counts: Counter[str] | None = None,
    chunks: bool = False,
) -> Iterator[SourceRecord]:
    """Yield one record per paragraph of a UTF-8 text file.

    Paragraphs are separated by one or more blank (whitespace-only) lines; the lines of a
    paragraph are joined by spaces. Id ``<file>#<n>`` with ``n`` the 1-based paragraph
    number, ``line`` its first line, ``work`` the file, ``source`` ``"plain"``, all planes
    known. Raises :class:`SourceError` if the file is not UTF-8.

    ``chunks=True``: the file is read a piece at a time, and a paragraph longer than
    :data:`STREAM_PARAGRAPH_CHARS` comes as a record read in chunks
    (:attr:`SourceRecord.chunked`; its ``text`` empty): the same records, text and counts,
    and memory bounded whatever the paragraphs.
    """
    path = Path(path)
    counts = counts if counts is not None else Counter()
    rel = relative_name(path, root)
    if chunks:
        yield from _read_plaintext_chunked(path, rel, counts)
        return
    para: list[str] = []
    start = 0
    number = 0

    def flush() -> Iterator[SourceRecord]:
        nonlocal number
        text = normalise_text(" ".join(para), counts)
        if text:
            number += 1
            counts["records"] += 1
            counts["chars"] += len(text)
            yield _paragraph_record(rel, number, text, path, start)

    for i, line in enumerate(read_utf8_lines(path), 1):
        if line.strip():
            if not para:
                start = i
            para.append(line)
        elif para:
            yield from flush()
            para = []
    if para:
        yield from flush()


def _paragraph_record(rel: str, number: int, text: str, path: Path, start: int) -> SourceRecord:
    """The record of a plain text's paragraph ``number`` (1-based) starting at line ``start``."""
    return SourceRecord(
        id=f"{rel}#{number}",
        text=text,
        source="plain",
        work=rel,
        file=str(path),
        line=start,
        known=MappingProxyType({}),
    )


def _line_pieces(path: Path) -> Iterator[tuple[str, bool]]:
    """The lines of ``path`` as :func:`read_utf8_lines` splits them, read :data:`_READ_BYTES`
    at a time: ``(piece, ends_line)``, a line given in one piece or more (a line longer than
    what is read at a time), the last piece of each line with ``ends_line`` true."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    held, open_line = "", False
    with open(path, "rb") as f:
        while True:
            data = f.read(_READ_BYTES)
            try:
                text = held + decoder.decode(data, final=not data)
            except UnicodeDecodeError:
                read_utf8(path, "utf-8-sig")  # raises the SourceError naming the line
                raise
            held = ""
            if data and text.endswith("\r"):  # perhaps the first half of \r\n
                text, held = text[:-1], "\r"
            *whole, rest = _LINE_END.split(text)
            for line in whole:
                yield line, True
            if rest:
                yield rest, False
            open_line = bool(rest) or (open_line and not whole)
            if not data:
                break
    if open_line:
        yield "", True


def _paragraph_events(path: Path) -> Iterator[tuple[str, int | str]]:
    """The paragraphs of ``path`` as :func:`read_plaintext` finds them, as events:
    ``("start", first line)``, ``("text", s)`` (the paragraph's lines joined by spaces, in
    pieces), ``("end", 0)``."""
    number = 0  # lines read
    in_para = has_text = False
    held: list[str] = []  # pieces of the current line, whitespace so far
    for piece, ends in _line_pieces(path):
        if has_text:
            yield "text", piece
        elif piece.strip():
            has_text = True
            if in_para:
                yield "text", " "
            else:
                in_para = True
                yield "start", number + 1
            for h in held:
                yield "text", h
            held = []
            yield "text", piece
        else:
            held.append(piece)
        if ends:
            number += 1
            if not has_text:  # a blank line
                held = []
                if in_para:
                    in_para = False
                    yield "end", 0
            has_text = False
    if in_para:
        yield "end", 0


def _normalised_chunks(raw: Iterator[str], counts: Counter[str]) -> Iterator[str]:
    """:func:`normalise_text` of the text that ``raw`` holds in pieces, given in chunks that
    read one after the other are the whole's: each chunk of about :data:`_NORMALISE_CHARS`
    characters is cut before a whitespace run that follows neither whitespace nor a hyphen,
    where NFC, the joining of words hyphenated at a line end, the elision mark and the
    collapse of whitespace work alike on the parts and on the whole. ``counts`` as for
    :func:`normalise_text`."""
    hyphens = frozenset(_HYPHENS)
    buf, first = "", True

    def normalise(s: str) -> str:
        s = unicodedata.normalize("NFC", s)
        if "\n" in s or "\r" in s or "\u2028" in s or "\u2029" in s or "\u0085" in s:
            s, n = _LINE_END_HYPHEN.subn("", s)
            if n:
                counts["hyphen_joined"] += n
        if "\u0313" in s:
            s, n = _CONSONANT_PSILI.subn("\u2019", s)
            counts["elision_mark"] += n
        return _WS.sub(" ", s)

    def cut(s: str) -> int:
        """The last place to cut before :data:`_NORMALISE_CHARS`, else the first after it,
        else 0 (none yet)."""
        for p in range(min(len(s), _NORMALISE_CHARS) - 1, 0, -1):
            if s[p].isspace() and not s[p - 1].isspace() and s[p - 1] not in hyphens:
                return p
        m = _CUT.search(s, _NORMALISE_CHARS)
        return m.start() if m else 0

    for piece in raw:
        buf += piece
        while len(buf) >= _NORMALISE_CHARS and (p := cut(buf)):
            out = normalise(buf[:p])
            buf = buf[p:]
            if first:
                out, first = out.lstrip(), not out.strip()
            if out:
                yield out
    out = normalise(buf).rstrip()
    if first:
        out = out.lstrip()
    if out:
        yield out


def _read_plaintext_chunked(path: Path, rel: str, counts: Counter[str]) -> Iterator[SourceRecord]:
    """:func:`read_plaintext` with ``chunks=True``."""
    events = _paragraph_events(path)
    number = 0
    for kind, value in events:
        if kind != "start":
            continue
        start, raw, size = int(value), [], 0
        for kind, value in events:
            if kind == "end":
                break
            raw.append(str(value))
            size += len(value)
            if size > STREAM_PARAGRAPH_CHARS:
                break
        if size <= STREAM_PARAGRAPH_CHARS:
            text = normalise_text("".join(raw), counts)
            if text:
                number += 1
                counts["records"] += 1
                counts["chars"] += len(text)
                yield _paragraph_record(rel, number, text, path, start)
            continue
        # a long paragraph: its chunks are read from the file as the caller reads them
        number += 1
        chunked = _paragraph_chunks(raw, events, counts)
        yield SourceRecord(
            id=f"{rel}#{number}",
            text="",
            source="plain",
            work=rel,
            file=str(path),
            line=start,
            known=MappingProxyType({}),
            chunked=lambda chunked=chunked: chunked,
        )
        for _ in chunked:  # whatever the caller did not read
            pass


def _paragraph_chunks(
    raw: list[str], events: Iterator[tuple[str, int | str]], counts: Counter[str]
) -> Iterator[str]:
    """The normalised chunks of a long paragraph: ``raw`` read so far, then ``events`` up to
    the paragraph's end. Its counts go to ``counts`` at the end, in the order
    :func:`read_plaintext` makes them for a paragraph read whole."""

    def rest() -> Iterator[str]:
        yield from raw
        raw.clear()
        for kind, value in events:
            if kind == "end":
                return
            yield str(value)

    return _counted_chunks(rest(), counts)


def _counted_chunks(raw: Iterator[str], counts: Counter[str]) -> Iterator[str]:
    """:func:`_normalised_chunks` of one record's text in pieces, its counts going to
    ``counts`` at its end in the order :func:`normalise_text` makes them, then ``records``
    and ``chars``."""
    mine: Counter[str] = Counter()
    n = 0
    for chunk in _normalised_chunks(raw, mine):
        n += len(chunk)
        yield chunk
    for key in ("hyphen_joined", "elision_mark"):
        if key in mine:
            counts[key] += mine[key]
    counts["records"] += 1
    counts["chars"] += n
