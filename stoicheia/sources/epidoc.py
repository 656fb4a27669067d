"""Reader for EpiDoc / TEI P5 files (I.Sicily; the same elements as papyri.info's DDbDP and
First1KGreek), see ``shared/corpus/README.md``: the file and record level.

**Records.** The Greek of the edition division only, each text read once: the editions
without a ``subtype`` or marked ``primary``, else IIP's ``transcription`` (its
``diplomatic`` and ``transcription_segmented`` copies repeat it), as
:mod:`stoicheia.sources.epidoc_units` decides (the editions left out are counted
``edition_skipped:<subtype>``); the header, apparatus, translation, commentary and
bibliography divisions are never read. One record per ``<div type="textpart">`` that holds
Greek (id ``<file>#<n>``, nested parts joined with ``.``), one for the text standing beside
nested text parts (id of the container, ``<file>#edition`` for the edition's own; counted
``text_beside_textparts``), else one per edition (id ``<file>#1``). ``work`` is the file (one
inscription); the language is the nearest ``xml:lang`` (a BCP 47 tag: ``grc``, ``el`` and
their subtags ``grc-GR``, ``el-polyton``, ``grc-x-doric`` in Greek script are Greek; others,
such as ``la``, ``xly-Grek`` or ``grc-Latn``, are left out and counted ``lang:<value>``), and
when no ancestor has one, ``<textLang mainLang>`` of the header.

The elements of each unit are written as Leiden by the element walk
(:mod:`stoicheia.sources.epidoc_walk`, whose docstring lists every element and what it
becomes); each record carries its lines (``<lb n="..."/>``: the printed line numbers and the
text of each line, :attr:`SourceRecord.lines`); counts go to ``counts`` like the other
readers (``records``, ``chars``, and the kinds the walk counts). Each record carries what the
header says about the inscription (:attr:`SourceRecord.meta`: corpus, citation, web page,
place, date, object; :mod:`stoicheia.sources.epidoc_meta`).
"""

from __future__ import annotations

import codecs
import itertools
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType

from lxml import etree

from . import plain
from .epidoc_meta import inscription_meta
from .epidoc_stream import UnitStream
from .epidoc_tei import TEI_NS, is_greek_lang, is_tei_p5, unit_language
from .epidoc_units import EditionUnit, edition_units, has_own_text, read_editions
from .epidoc_walk import EpiDocOptions, unit_lines
from .record import SourceError, SourceRecord, read_utf8, relative_name, unique_citation
from .xml_entities import XmlReadError, parse_tei

__all__ = ["read_epidoc"]

_T = "{" + TEI_NS + "}"


def _parse(path: Path, counts: Counter[str]) -> etree._Element:
    """The parsed file, its internal entities expanded (counted ``entity_expanded``), its
    external ones never read (:mod:`stoicheia.sources.xml_entities`)."""
    data = Path(path).read_bytes()
    _check_utf8(path, data)  # a piece at a time: the file is not also held as a str
    if data.startswith(b"<?xml"):
        m = re.match(rb"<\?xml[^>]*\?>", data)
        if m is not None and m.group() != _DECLARATION:  # else the same bytes, not a copy
            data = _DECLARATION + data[m.end() :]
    try:
        parsed = parse_tei(data)
    except XmlReadError as e:
        raise SourceError(path, e.line, e.message, e.fix) from None
    if parsed.entities_expanded:
        counts["entity_expanded"] += parsed.entities_expanded
    return parsed.root


#: the XML declaration the parser is given (the bytes were checked to be UTF-8)
_DECLARATION = b'<?xml version="1.0" encoding="UTF-8"?>'


def _check_utf8(path: Path, data: bytes) -> None:
    """Raise :class:`SourceError` naming the line if ``data`` is not UTF-8, decoding a megabyte
    at a time."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        for start in range(0, len(data), 1 << 20):
            decoder.decode(view[start : start + (1 << 20)])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        read_utf8(path)  # the SourceError with the line
        raise


def read_epidoc(
    path: Path,
    root: Path | None = None,
    *,
    counts: Counter[str] | None = None,
    options: EpiDocOptions | None = None,
    tree: etree._Element | None = None,
    chunks: bool = False,
) -> Iterator[SourceRecord]:
    """Yield the Greek records of one EpiDoc (TEI P5) file, as Leiden-annotated NFC text.

    ``path``/``root``/``counts`` as for every reader; ``options`` the Leiden choices
    (:class:`EpiDocOptions`); ``tree`` an already parsed root (the ``.xml`` dispatcher passes
    it). ``source`` is ``"epidoc"``. ``chunks=True`` (``stoicheia convert``): a unit whose
    text nodes hold more than :data:`~stoicheia.sources.plain.STREAM_PARAGRAPH_CHARS`
    characters comes as a streamed record (:attr:`SourceRecord.streamed`: its text and lines
    read from the tree as the caller reads them, :mod:`stoicheia.sources.epidoc_stream`), so
    that beyond the tree memory is bounded by the record limit and the edition's longest
    line; the same records, text, lines and counts. Raises :class:`SourceError` for
    undecodable bytes,
    malformed XML, a root that is not a TEI P5 ``<TEI>``, or a file with no
    ``<div type="edition">`` (the only division read).
    """
    path = Path(path)
    counts = counts if counts is not None else Counter()
    opts = options or EpiDocOptions()
    rel = relative_name(path, root)
    doc = tree if tree is not None else _parse(path, counts)
    if not is_tei_p5(doc):
        raise SourceError(
            path,
            doc.sourceline or 0,
            f"root element is <{doc.tag}>, not a TEI P5 <TEI>",
            "give an EpiDoc / TEI P5 file (namespace http://www.tei-c.org/ns/1.0)",
        )
    main = doc.find(f".//{_T}textLang")
    default_lang = main.get("mainLang") if main is not None else None
    editions = [d for d in doc.iter(_T + "div") if d.get("type") == "edition"]
    if not editions:
        # EpiDoc keeps the text in the edition division only; a TEI P5 file without one is
        # another kind of TEI (or an EpiDoc file that lost it), not a file without Greek
        body = doc.find(f"{_T}text/{_T}body")
        raise SourceError(
            path,
            (body if body is not None else doc).sourceline or 0,
            'TEI P5 file without a <div type="edition">: the EpiDoc reader reads the text of the '
            "edition division only, and this file has none",
            'wrap the text of <body> in <div type="edition" xml:lang="grc"> (EpiDoc), or give the '
            "text as .txt/.jsonl",
        )
    meta = MappingProxyType(inscription_meta(doc, path))
    seen: Counter[str] = Counter()
    for unit in (u for ed in read_editions(doc, counts) for u in edition_units(ed)):
        if not has_own_text(unit):
            continue
        lang = unit_language(unit.element, default_lang)
        if not is_greek_lang(lang):
            counts[f"lang:{lang}"] += 1
            continue
        if chunks and _text_size(unit.element) > plain.STREAM_PARAGRAPH_CHARS:
            yield from _streamed_record(unit, lang, opts, counts, seen, rel, path, meta)
            continue
        text, lines = unit_lines(unit.element, lang, opts, counts, unit.skip)
        if not text:
            counts["empty_division"] += 1
            continue
        if unit.skip:
            counts["text_beside_textparts"] += 1
        if unit.diplomatic:
            # the only copy is diplomatic: capitals as on the stone, not the editor's (as for
            # an <orig> outside <choice>)
            counts["edition_read:diplomatic"] += 1
            if opts.orig_case == "lower":
                text = text.lower()
                lines = tuple((label, t.lower()) for label, t in lines)
        cite = unique_citation(unit.cite, seen, counts)
        counts["records"] += 1
        counts["chars"] += len(text)
        yield _record(unit, cite, rel, path, meta, text=text, lines=lines)


def _record(
    unit: EditionUnit,
    cite: str,
    rel: str,
    path: Path,
    meta: MappingProxyType,
    text: str = "",
    lines: tuple[tuple[str | None, str], ...] = (),
    streamed=None,
) -> SourceRecord:
    """The record of ``unit`` under the citation ``cite``: its ``text`` and ``lines`` read
    whole, or (``text`` empty) ``streamed`` (:attr:`SourceRecord.streamed`)."""
    return SourceRecord(
        id=f"{rel}#{cite}",
        text=text,
        source="epidoc",
        work=rel,
        file=str(path),
        line=unit.element.sourceline or 0,
        known=MappingProxyType({}),
        lines=lines,
        meta=meta,
        streamed=streamed,
    )


def _text_size(el: etree._Element) -> int:
    """The characters of the text nodes under ``el`` (a bound of its Leiden text's size
    up to the brackets and lacunae), counted a node at a time."""
    return sum(len(t) for t in el.itertext())


def _streamed_record(
    unit: EditionUnit,
    lang: str | None,
    opts: EpiDocOptions,
    counts: Counter[str],
    seen: Counter[str],
    rel: str,
    path: Path,
    meta: MappingProxyType,
) -> Iterator[SourceRecord]:
    """The record of a long unit as :func:`read_epidoc` makes it from
    :func:`~stoicheia.sources.epidoc_walk.unit_lines`, its text and lines walked as they are
    read (:class:`~stoicheia.sources.epidoc_stream.UnitStream`); every count made once, when a
    walk ends, in the order of the whole path. Yields nothing (counted ``empty_division``) for a
    unit without text."""
    lower = unit.diplomatic and opts.orig_case == "lower"
    record_counts: Counter[str] = Counter()  # made when the record is read, counted at its end
    ended: list[tuple[Counter, int]] = []  # the first walk to end: its counts and characters
    ready = False  # the record's own counts are made

    def settle() -> None:
        """The counts, once the first walk has ended and the record's own are made."""
        nonlocal ready
        if ended and ready:
            ready = False
            walk_counts, chars = ended[0]
            counts.update(walk_counts)
            counts.update(record_counts)
            counts["records"] += 1
            counts["chars"] += chars

    def on_end(walk_counts: Counter, chars: int) -> None:
        if not ended:  # a second walk (the caller read the record twice): counted once
            ended.append((walk_counts, chars))
            settle()

    def walk() -> UnitStream:
        return UnitStream(unit.element, lang, opts, unit.skip, lower, on_end)

    first = walk()
    text = first.text()
    head = next(text, None)
    if head is None:  # the whole unit walked: no text
        counts.update(ended[0][0])
        counts["empty_division"] += 1
        return
    if unit.skip:
        record_counts["text_beside_textparts"] += 1
    if unit.diplomatic:
        record_counts["edition_read:diplomatic"] += 1
    cite = unique_citation(unit.cite, seen, record_counts)
    ready = True
    settle()  # now if the walk has ended already (a unit of few pieces)
    calls = 0

    def streamed() -> tuple[Iterator[str], Iterator[tuple[str | None, str]]]:
        nonlocal calls
        calls += 1
        if calls == 1:
            return itertools.chain((head,), text), first.lines()
        again = walk()
        return again.text(), again.lines()

    yield _record(unit, cite, rel, path, meta, streamed=streamed)
    first.drain()  # whatever the caller did not read (its counts are made at the walk's end)
