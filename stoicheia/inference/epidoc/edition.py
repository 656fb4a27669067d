"""Read an EpiDoc file for restoration: its bytes, its tree and its Greek edition.

The Greek edition is read by the EpiDoc reader of the training data
(:mod:`stoicheia.sources.epidoc`: the same editions, text parts, languages and Leiden
semantics), which writes each ``<gap>`` as a Leiden lacuna. The reader's walker is wrapped so
that it records every ``<gap>`` element it writes, in order; the k-th lacuna of the Leiden text
(:func:`stoicheia.text.leiden.parse_leiden`) is then the k-th ``<gap>`` (checked: the counts
must agree, else the file is refused). Every element is then located in the original bytes
(:mod:`.byte_spans`). A file that cannot be restored as it is raises
:class:`~.outcomes.EpiDocRestoreError` with one line naming the file and the fix.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lxml import etree

from stoicheia.inference.epidoc.byte_spans import ElementSpan, _locate
from stoicheia.inference.epidoc.outcomes import EpiDocRestoreError
from stoicheia.sources.epidoc_tei import is_greek_lang, is_tei_p5, unit_language
from stoicheia.sources.epidoc_units import edition_units, has_own_text, read_editions
from stoicheia.sources.epidoc_walk import EpiDocOptions, unit_leiden
from stoicheia.sources.xml_entities import XmlReadError, markup_entities, parse_tei
from stoicheia.text.leiden import parse_leiden
from stoicheia.text.leiden_segments import Lacuna, LeidenError

TEI = "{http://www.tei-c.org/ns/1.0}"
_MARK = "\ue000"  # a private-use character put before the lacuna of each <gap>
_WS = re.compile(r"\s+")


@dataclass
class GreekUnit:
    """One Greek unit of the edition (a text part, or the edition): its Leiden text, its
    lacunae and the ``<gap>`` element of each (``None`` for a lacuna the reader wrote for other
    markup: it stays a lacuna of the text the model sees, and is not written)."""

    text: str
    lacunae: list[Lacuna]
    elements: list[etree._Element | None]  # None: a lacuna the reader made of other markup


def _greek_units(doc: etree._Element, name: str) -> list[GreekUnit]:
    """The Greek units of the edition as :func:`stoicheia.sources.epidoc.read_epidoc` reads
    them (the same selection of editions, text parts and languages)."""
    if not is_tei_p5(doc):
        raise EpiDocRestoreError(
            f"{name}: the root element is <{etree.QName(doc).localname}>, not a TEI P5 <TEI>: "
            "give EpiDoc files (TEI P5, namespace http://www.tei-c.org/ns/1.0)"
        )
    main = doc.find(f".//{TEI}textLang")
    default_lang = main.get("mainLang") if main is not None else None
    editions = read_editions(doc)
    if not editions:
        raise EpiDocRestoreError(
            f'{name}: no <div type="edition"> (primary, or a transcription): an EpiDoc file '
            "keeps its text there; give an EpiDoc edition"
        )
    # an <orig>'s capitals as written: a gap among them is filled in capitals, as restore does
    # for the same Leiden text (the training reader lower-cases them)
    opts, counts = EpiDocOptions(orig_case="as written"), Counter()
    units: list[GreekUnit] = []
    langs: list[str] = []
    for ed in editions:
        for part in edition_units(ed):
            if not has_own_text(part):
                continue
            unit = part.element
            lang = unit_language(unit, default_lang)
            if not is_greek_lang(lang):
                langs.append(str(lang))
                continue
            # the mark tells the lacuna of each <gap> from one the reader makes of other markup
            marked, gaps = unit_leiden(unit, lang, opts, counts, gap_mark=_MARK, skip=part.skip)
            text = _WS.sub(" ", marked.replace(_MARK, "")).strip()
            try:
                lac_marked = [s for s in parse_leiden(marked) if isinstance(s, Lacuna)]
                lacunae = [s for s in parse_leiden(text) if isinstance(s, Lacuna)]
            except LeidenError as err:
                raise EpiDocRestoreError(
                    f"{name}:{unit.sourceline}: the edition's Leiden text cannot be read ({err}); "
                    "check the markup of the edition there"
                ) from None
            from_gap = [_after_mark(marked, s.start - 1) for s in lac_marked]
            if len(lacunae) != len(lac_marked) or sum(from_gap) != len(gaps):
                raise EpiDocRestoreError(
                    f"{name}:{unit.sourceline}: {len(gaps)} <gap> elements but {sum(from_gap)} "
                    "of their lacunae found in the edition's Leiden text; report this file"
                )
            owners = iter(gaps)
            units.append(GreekUnit(text, lacunae, [next(owners) if f else None for f in from_gap]))
    if not units:
        raise EpiDocRestoreError(
            f"{name}: no Greek edition (the edition is in {', '.join(sorted(set(langs)))}): "
            'only Greek (xml:lang="grc") is restored'
        )
    return units


def _after_mark(marked: str, i: int) -> bool:
    """True when ``marked[:i]``, trailing whitespace aside, ends with :data:`_MARK` (looked up
    backwards from ``i``: slicing the text for every lacuna made reading an edition quadratic)."""
    j = i - 1
    while j >= 0 and marked[j].isspace():
        j -= 1
    return j >= 0 and marked[j] == _MARK


def _read(path_or_xml: str | bytes | Path) -> tuple[str, bytes]:
    if isinstance(path_or_xml, bytes):
        return "<xml>", path_or_xml
    if isinstance(path_or_xml, str) and path_or_xml.lstrip("\ufeff \t\r\n").startswith("<"):
        return "<xml>", path_or_xml.encode("utf-8")
    path = Path(path_or_xml)
    try:
        return str(path), path.read_bytes()
    except OSError as err:
        raise EpiDocRestoreError(
            f"{path}: cannot read it ({err.strerror}); give an EpiDoc file"
        ) from None


#: the DOCTYPE or root element of a TEI P4 file (Perseus's texts)
_TEI_P4 = re.compile(rb"<!DOCTYPE\s+TEI\.2\b|<TEI\.2[\s>]")


def parse_xml(data: bytes, name: str) -> etree._Element:
    """The root of the file's tree (internal entities expanded, external ones never read);
    raises :class:`~.outcomes.EpiDocRestoreError` naming ``name`` (and the line) for a file that
    is empty or blank (said as such, not as lxml's "Document is empty"), bytes that are not UTF-8
    or not well-formed XML."""
    if not data.removeprefix(b"\xef\xbb\xbf").strip():
        what = (
            "empty file (0 bytes)"
            if not data
            else f"blank file ({len(data):,} bytes, only whitespace)"
        )
        raise EpiDocRestoreError(
            f"{name}: {what}: nothing to restore; give the EpiDoc file itself (a failed copy or "
            "save leaves one empty)"
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise EpiDocRestoreError(
            f"{name}:{line}: bytes are not UTF-8 ({e.reason}); re-save the file as UTF-8"
        ) from None
    if _TEI_P4.search(data[:4096]):
        # Perseus's files: their entities (&PersProse;) live in a DTD never read, so the parse
        # error would send the user to edit a corpus file that convert reads as it is
        raise EpiDocRestoreError(
            f"{name}: a TEI P4 file (<TEI.2>, as Perseus's), not an EpiDoc edition (TEI P5): "
            "restore --epidoc restores EpiDoc files; TEI P4 texts are training text for "
            "`stoicheia convert`, and a passage of one can be restored as a TEXT"
        )
    try:  # internal entities expanded, external ones never read (no file, no network)
        return parse_tei(data).root
    except XmlReadError as e:
        msg = e.message
        if msg.startswith("malformed XML: "):
            msg = f"malformed XML ({msg[len('malformed XML: ') :]})"
        raise EpiDocRestoreError(f"{name}:{e.line}: {msg}; {e.fix}") from None


@dataclass
class Edition:
    """A file read for restoration: ``name`` (its path, or ``"<xml>"``), ``data`` its bytes,
    ``doc`` the parsed tree, ``units`` its Greek units in order, ``spans`` every element's byte
    span."""

    name: str
    data: bytes
    doc: Any
    units: list[GreekUnit]
    spans: dict[Any, ElementSpan]


def read_edition(path_or_xml: str | bytes | Path) -> Edition:
    """Read a file (a path, or the XML as ``bytes`` or a ``str`` starting with ``<``) and its
    Greek edition; raises :class:`EpiDocRestoreError` for a file that cannot be restored."""
    name, data = _read(path_or_xml)
    doc = parse_xml(data, name)
    units = _greek_units(doc, name)
    try:
        spans = _locate(doc, data)
    except ValueError as err:
        marked = markup_entities(doc)
        if marked:
            raise EpiDocRestoreError(
                f"{name}: the entit{'y' if len(marked) == 1 else 'ies'} "
                f"{', '.join('&' + m + ';' for m in marked)} hold{'s' if len(marked) == 1 else ''} "
                "markup, whose elements have no place in the file's bytes to write around; write "
                "the markup in place of the references"
            ) from None
        raise EpiDocRestoreError(
            f"{name}: the elements cannot be located in the bytes ({err}); report this file"
        ) from None
    return Edition(name, data, doc, units, spans)
