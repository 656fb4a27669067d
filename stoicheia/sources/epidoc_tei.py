"""TEI P5 names the EpiDoc modules share: the namespace, an element's local name, the
language of an edition or text part (``xml:lang``, else the header's ``<textLang mainLang>``),
and two questions the element walk asks of an element (a ``<w>`` glued to the next word, a
scribal apostrophe).

Used by the EpiDoc reader (:mod:`stoicheia.sources.epidoc`), its element walk
(:mod:`stoicheia.sources.epidoc_walk`) and the EpiDoc restorer, so that all of them read the
same units in the same languages.
"""

from __future__ import annotations

from lxml import etree

__all__ = [
    "TEI_NS",
    "XML_LANG",
    "glued_to_next_word",
    "is_apostrophe",
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
    """Whether an ``xml:lang`` value is Greek in Greek script, read as a BCP 47 tag (RFC 5646,
    any case, surrounding spaces ignored): the language ``grc``, ``el`` or ``gr``, with no
    script subtag or the script ``Grek``, and any region, variant, extension or private-use
    subtags (``grc-GR``, ``el-polyton``, ``grc-x-doric``, ``grc-Grek-x-cretan``). ``grc-Latn``
    (a transliteration), ``xly-Grek`` (another language in Greek letters) and ``None`` (no
    language) are not."""
    if lang is None:
        return False
    tags = lang.strip().lower().replace("_", "-").split("-")
    if tags[0] not in ("grc", "el", "gr"):
        return False
    # the script subtag, when present, is the first 4-letter subtag before any singleton
    # (a one-letter subtag such as "x" starts an extension or the private use)
    for sub in tags[1:]:
        if len(sub) == 1:
            break
        if len(sub) == 4 and sub.isalpha():
            return sub == "grek"
    return True


def unit_language(unit: etree._Element, default: str | None) -> str | None:
    """The language of a text part or edition: its own ``xml:lang``, else the nearest
    ancestor's (below ``<TEI>``), else ``default`` (the header's ``<textLang mainLang>``)."""
    if unit.get(XML_LANG):
        return unit.get(XML_LANG)
    for a in unit.iterancestors():
        if a.get(XML_LANG) is not None and local_name(a) not in ("TEI",):
            return a.get(XML_LANG)
    return default


_PART_GOES_ON = frozenset({"I", "M"})


def glued_to_next_word(el: etree._Element) -> bool:
    """A ``<w>`` followed at once (no text between) by another ``<w>`` that is not the rest of
    the same word (``part="I"``/``"M"`` followed by ``"M"``/``"F"``)."""
    if el.tail:
        return False
    nxt = el.getnext()
    while nxt is not None and not isinstance(nxt.tag, str) and not nxt.tail:
        nxt = nxt.getnext()  # a comment between the two
    if nxt is None or not isinstance(nxt.tag, str) or local_name(nxt) != "w":
        return False
    return not (el.get("part") in _PART_GOES_ON and nxt.get("part") in ("M", "F"))


def is_apostrophe(el: etree._Element) -> bool:
    """``<g type="apostrophe"/>`` (papyri.info) or ``<g ref="#apostrophe"/>``."""
    return (el.get("type") or "").strip().lower() == "apostrophe" or (
        el.get("ref") or ""
    ).strip().lower().lstrip("#") == "apostrophe"
