"""Which editions of an EpiDoc file are read, and the units of text in them.

Shared by the EpiDoc reader (:mod:`stoicheia.sources.epidoc`) and the EpiDoc restorer
(:mod:`stoicheia.inference.epidoc`), so that both read the same text once.

**Editions.** An EpiDoc file may give its text more than once: I.Sicily adds a
``simple-lemmatized`` copy and a ``transliteration``; IIP gives a ``transcription`` (the
editor's text), a ``diplomatic`` copy (the capitals on the stone) and a
``transcription_segmented`` copy (the transcription again, every word in ``<w>``). One text is
read once: the editions without a ``subtype`` or marked ``primary``; when there are none, the
editions of the first subtype of :data:`FALLBACK_SUBTYPES` that the file has (IIP: the
``transcription``; a file with only a diplomatic copy: that copy). Every other edition is
counted ``edition_skipped:<subtype>``.

**Units.** One unit per ``<div type="textpart">`` that holds no other text part; and the text
that stands *beside* nested text parts (a face's own lines above its columns, an ``<ab>`` of
the edition next to its text parts) is a unit of its own, the text of the container without
its text parts, so that no line of the edition is dropped. An edition without text parts is
one unit.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from lxml import etree

from .epidoc_tei import TEI_NS

__all__ = [
    "FALLBACK_SUBTYPES",
    "EditionUnit",
    "edition_units",
    "has_own_text",
    "read_editions",
]

_T = "{" + TEI_NS + "}"
#: the edition subtypes read when a file has no edition without a subtype (or ``primary``), in
#: order of preference: the editor's text first, the diplomatic copy (capitals as on the
#: stone) only when there is nothing else
FALLBACK_SUBTYPES = ("transcription", "edition", "transcription_segmented", "diplomatic")


@dataclass(frozen=True)
class EditionUnit:
    """One unit of an edition read as one record.

    ``element``: the text part (or edition) whose text is read; ``skip``: its nested text
    parts, left out of this unit because each is a unit of its own (empty for a leaf);
    ``cite``: the citation of the unit within the file (``"2"``, ``"A.1"``; ``"1"`` for an
    edition without text parts; ``"edition"`` or the text part's citation for the text beside
    nested text parts); ``edition``: the edition it belongs to; ``diplomatic``: the edition is
    a diplomatic copy (capitals as written on the object)."""

    element: etree._Element
    cite: str
    skip: frozenset
    edition: etree._Element
    diplomatic: bool = False


def read_editions(doc: etree._Element, counts: Counter[str] | None = None) -> list[etree._Element]:
    """The ``<div type="edition">`` elements of ``doc`` that are read (module docstring), in
    document order; the others are counted ``edition_skipped:<subtype>`` in ``counts``."""
    editions = [d for d in doc.iter(_T + "div") if d.get("type") == "edition"]
    subtypes = [(d.get("subtype") or "").strip() for d in editions]
    chosen = {"", "primary"}
    if not any(s in chosen for s in subtypes):
        chosen = next(({s} for s in FALLBACK_SUBTYPES if s in subtypes), set())
    keep = []
    for d, s in zip(editions, subtypes, strict=True):
        if s in chosen:
            keep.append(d)
        elif counts is not None:
            counts[f"edition_skipped:{s}"] += 1
    return keep


def _is_part(d: etree._Element) -> bool:
    return d.tag == _T + "div" and d.get("type") == "textpart"


def edition_units(edition: etree._Element) -> list[EditionUnit]:
    """The units of one edition in document order (module docstring)."""
    diplomatic = (edition.get("subtype") or "").strip() == "diplomatic"
    parts = [d for d in edition.iter(_T + "div") if _is_part(d)]
    if not parts:
        return [EditionUnit(edition, "1", frozenset(), edition, diplomatic)]
    leaves = [d for d in parts if not any(_is_part(c) for c in d.iter(_T + "div") if c is not d)]
    units = []
    for d in [edition, *parts]:
        inner = [c for c in d.iter(_T + "div") if c is not d and _is_part(c)]
        # the parts directly below d (not inside another part of d): left out of d's own text
        direct = frozenset(
            c for c in inner if next(a for a in c.iterancestors() if _is_part(a) or a is d) is d
        )
        if d is edition:
            cite = "edition"
        else:
            # a part without n is numbered by its place among the leaves (the ids the reader
            # has always given), a container by its place among all the parts
            k = leaves.index(d) + 1 if d in leaves else parts.index(d) + 1
            ns = [
                a.get("n") or str(k)
                for a in [*reversed(list(d.iterancestors(_T + "div"))), d]
                if _is_part(a)
            ]
            cite = ".".join(ns)
        units.append(EditionUnit(d, cite, direct, edition, diplomatic))
    return units


def has_own_text(unit: EditionUnit) -> bool:
    """Whether the unit holds text or a ``<gap>`` outside its nested text parts (always True
    for a unit without nested parts): a container whose own content is only the layout
    around its parts is no unit of text."""
    if not unit.skip:
        return True

    def walk(el: etree._Element) -> bool:
        if el.text and el.text.strip():
            return True
        for child in el:
            if child.tail and child.tail.strip():
                return True
            if child in unit.skip or not isinstance(child.tag, str):
                continue
            if child.tag == _T + "gap" or walk(child):
                return True
        return False

    return walk(unit.element)
