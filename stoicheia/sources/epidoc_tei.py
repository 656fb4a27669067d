"""TEI P5 names the EpiDoc modules share: the namespace, an element's local name, and the
language of an edition or text part (``xml:lang``, else the header's ``<textLang mainLang>``).

Used by the EpiDoc reader (:mod:`stoicheia.sources.epidoc`), its element walk
(:mod:`stoicheia.sources.epidoc_walk`) and the EpiDoc restorer, so that all of them read the
same units in the same languages.
"""

from __future__ import annotations

from lxml import etree

__all__ = [
    "TEI_NS",
    "XML_LANG",
    "is_greek_lang",
    "is_tei_p5",
    "local_name",
    "unit_language",
]

TEI_NS = "http://www.tei-c.org/ns/1.0"
_T = "{" + TEI_NS + "}"
#: the ``xml:lang`` attribute in lxml's Clark notation
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


def is_tei_p5(root: etree._Element) -> bool:
    """True for a TEI P5 document (a ``<TEI>`` root in the TEI namespace)."""
    return isinstance(root.tag, str) and root.tag == _T + "TEI"


def local_name(el: etree._Element) -> str:
    """The element's name without the TEI namespace (``""`` for a comment or a processing
    instruction, whose ``tag`` is not a string)."""
    tag = el.tag
    if not isinstance(tag, str):
        return ""
    return tag[len(_T) :] if tag.startswith(_T) else tag


def is_greek_lang(lang: str | None) -> bool:
    """Whether an ``xml:lang`` value is Greek in Greek script (``grc``, ``grc-Grek``, ``el``,
    ``gr``, any case); ``None`` (no language) is not."""
    if lang is None:
        return False
    lang = lang.strip().lower()
    return lang == "grc" or lang == "grc-grek" or lang == "el" or lang == "gr"


def unit_language(unit: etree._Element, default: str | None) -> str | None:
    """The language of a text part or edition: its own ``xml:lang``, else the nearest
    ancestor's (below ``<TEI>``), else ``default`` (the header's ``<textLang mainLang>``)."""
    if unit.get(XML_LANG):
        return unit.get(XML_LANG)
    for a in unit.iterancestors():
        if a.get(XML_LANG) is not None and local_name(a) not in ("TEI",):
            return a.get(XML_LANG)
    return default
