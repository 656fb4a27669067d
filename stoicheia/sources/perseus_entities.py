"""The SGML entities of the Perseus TEI P4 files, and the parse of such a file.

The files use SGML entities of a DTD that is not shipped. Each reference
``&name;`` in the raw file is replaced by one private-use character before parsing (lxml,
``recover=False``, no DTD, no network); the Beta Code is converted; then the placeholder is
expanded from :data:`ENTITIES` (or the file's own ``<!ENTITY name "value">`` declarations,
or else the standard ISO/HTML sets of :mod:`html.entities`: ``&hellip;`` ``&amacr;``
``&times;`` ``&acute;``...), so ``&lpar;`` becomes ``(`` and never a rough breathing. Header
entities (``&responsibility;``, ``&fund.NEH;``...) expand to nothing. ``&dot;`` marks a word
hyphenated across a line break in one Plutarch file and joins the word. References escaped as
``&amp;ldquo;`` in some Plutarch files are entity references too. An unknown entity raises
:class:`SourceError` naming the file and line; malformed XML raises :class:`SourceError` with
lxml's message.

:func:`parse_perseus_xml` does the replacement and the parse and returns the tree with the
file's :class:`EntityTable`, whose ``expand`` map
:func:`stoicheia.sources.betacode.beta_to_unicode` applies after the Beta Code is converted.
"""

from __future__ import annotations

import html.entities
import re

from lxml import etree

from .record import SourceError

__all__ = ["ENTITIES", "EntityTable", "parse_perseus_xml"]

_HEADER = ""  # header-only entities expand to nothing

#: Built-in expansions of the SGML entities used in the Perseus files (ISO 8879 public
#: entity sets and Perseus' own). ``""`` for header boilerplate and for print marks that
#: the files themselves declare empty (``nt_gk.xml``, ``hist_gk.xml``).
ENTITIES: dict[str, str] = {
    # punctuation and editorial signs (ISOnum / ISOpub / ISOtech)
    "mdash": "\u2014",
    "dash": "\u2010",
    "ldquo": "\u201c",
    "rdquo": "\u201d",
    "lsquo": "\u2018",
    "rsquo": "\u2019",
    "lsqb": "[",
    "rsqb": "]",
    "lpar": "(",
    "rpar": ")",
    "ldsqb": "\u27e6",
    "rdsqb": "\u27e7",
    "lang": "\u27e8",
    "rang": "\u27e9",
    "dagger": "\u2020",
    "Dagger": "\u2021",
    "ast": "*",
    "verbar": "|",
    "colon": ":",  # a real colon, written as an entity because Beta Code ':' is the raised dot
    "quest": "?",  # the Latin/editorial question mark (used in Latin quotations and as 'dubious')
    "num": "\u0374",  # '#' in a Beta Code context: the Greek numeral sign (d&num; = δʹ)
    "stigma": "\u03db",
    "x1000": "\u0375",  # ϛ; lower numeral sign (thousands)
    "macr": "\u00af",
    "breve": "\u02d8",  # metrical signs in lacunae (Aeschylus)
    "dot": "",  # line-end hyphenation mark (joins the word, see _JOINERS)
    # print marks the files declare empty in their internal DTD subset
    "ulcrop": "",
    "urcrop": "",
    "top": "",
    "lpress": "",
    "rpress": "",
    "open": "",
    "close": "",
    # Latin letters with diacritics (only inside English/Latin notes, which are excluded)
    "euml": "\u00eb",
    "uuml": "\u00fc",
    "ouml": "\u00f6",
    "eacute": "\u00e9",
    "iuml": "\u00ef",
    "acirc": "\u00e2",
    # long vowels named as letters in Greek text (Athenaeus: "τὸ ῑ", "εἰς ῡξ")
    "imacr": "\u1fd1",
    "umacr": "\u1fe1",
    "omacr": "\u03bf\u0304",
    # header boilerplate
    "Perseus.publish": _HEADER,
    "responsibility": _HEADER,
    "fund.NEH": _HEADER,
    "fund.Google": _HEADER,
    "fund.AnnCPB": _HEADER,
    "fund.Tufts": _HEADER,
    "fund.NSF": _HEADER,
    "prose.grk.encode": _HEADER,
    "TLG.canon": _HEADER,
    "Perseus.class": _HEADER,
    "Perseus.DE": _HEADER,
}

_JOINERS = frozenset({"dot"})  # entity + following whitespace vanish: the word continues
_XML_PREDEFINED = frozenset({"lt", "gt", "amp", "quot", "apos"})
_PUA_BASE = 0xE000
_PUA_MAX = 0xF0  # betacode.py uses U+E0F0.. for its own markers

_ENTITY_REF = re.compile(r"&([A-Za-z_][\w.\-]*);")
_ENTITY_DECL = re.compile(r"<!ENTITY\s+([A-Za-z_][\w.\-]*)\s+(?:\"([^\"]*)\"|'([^']*)')\s*>")
_DOCTYPE_END = re.compile(r"\]\s*>")


class EntityTable:
    """Entity name <-> private-use placeholder, for one file.

    ``values`` maps a name to its expansion, ``char`` a name to its placeholder (one
    private-use character from U+E000), ``expand`` a placeholder's code point to the
    expansion (a ``str.translate`` table). Raises ``ValueError`` past 240 entities (the
    placeholders stop below :mod:`stoicheia.sources.betacode`'s own markers at U+E0F0).
    """

    def __init__(self, declared: dict[str, str]) -> None:
        self.values = dict(ENTITIES)
        self.values.update(declared)
        if len(self.values) > _PUA_MAX:
            raise ValueError(f"{len(self.values)} entities exceed the placeholder range")
        self.char = {name: chr(_PUA_BASE + i) for i, name in enumerate(sorted(self.values))}
        self.expand = {ord(c): self.values[name] for name, c in self.char.items()}

    def add_standard(self, name: str) -> bool:
        """Add ``name`` from the ISO/HTML entity sets (Python's :mod:`html.entities`, which
        holds the HTML5 list: every ISO 8879 entity of the public sets such as ``hellip``,
        ``amacr``, ``times``, ``acute``). False if it is not a standard entity."""
        value = html.entities.html5.get(name + ";")
        if value is None:
            return False
        if len(self.char) >= _PUA_MAX:
            raise ValueError(f"more than {_PUA_MAX} distinct entities in one file")
        self.values[name] = value
        c = chr(_PUA_BASE + len(self.char))
        while c in self.expand:  # placeholders are dense from _PUA_BASE; stay past them
            c = chr(ord(c) + 1)
        self.char[name] = c
        self.expand[ord(c)] = value
        return True


def _line_of(raw: str, offset: int) -> int:
    return raw.count("\n", 0, offset) + 1


def _declared_entities(raw: str) -> dict[str, str]:
    """General entities declared with a literal value in the DOCTYPE internal subset."""
    start = raw.find("<!DOCTYPE")
    if start < 0:
        return {}
    end = _DOCTYPE_END.search(raw, start)
    subset = raw[start : end.end() if end else start]
    return {
        m.group(1): m.group(2) if m.group(2) is not None else m.group(3)
        for m in _ENTITY_DECL.finditer(subset)
    }


def _replace_entities(raw: str, table: EntityTable, file: str) -> str:
    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in _XML_PREDEFINED:
            return m.group(0)
        if name not in table.char and not table.add_standard(name):
            raise SourceError(
                file,
                _line_of(raw, m.start()),
                f"unknown SGML entity &{name}; (not in the ISO/HTML entity sets either)",
                "add it with its Unicode expansion ('' if it is header boilerplate) to "
                "ENTITIES in stoicheia/sources/perseus_entities.py, or declare it in the file's "
                "DOCTYPE internal subset",
            )
        if name in _JOINERS:
            return "\x00J"  # removed with the following whitespace below
        return table.char[name]

    out = _ENTITY_REF.sub(sub, raw)
    if "\x00J" in out:
        out = re.sub(r"\x00J\s*", "", out)
    return out


def _parse(raw: str, file: str) -> etree._Element:
    parser = etree.XMLParser(
        recover=False,
        resolve_entities=False,
        load_dtd=False,
        no_network=True,
        huge_tree=True,
        remove_comments=False,
    )
    data = raw.encode("utf-8")
    if raw.startswith("<?xml"):  # the declaration may name another encoding: we re-encoded
        data = re.sub(rb"^<\?xml[^>]*\?>", b'<?xml version="1.0" encoding="UTF-8"?>', data)
    try:
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError as e:
        line = e.lineno or (e.position[0] if e.position else 0)
        raise SourceError(
            file,
            line,
            f"malformed XML: {e.msg}",
            "repair the markup at that line (unclosed or misnested tag, stray '<' or '&'); "
            "the reader does not guess, because lxml's recover mode silently deletes text",
        ) from None


def parse_perseus_xml(raw: str, file: str) -> tuple[etree._Element, EntityTable]:
    """Parse the text ``raw`` of the Perseus file ``file`` (for messages): every entity
    reference replaced by its placeholder (:class:`EntityTable`: :data:`ENTITIES`, the file's
    DOCTYPE declarations, the ISO/HTML sets), then lxml with no DTD and no network.

    Returns ``(root element, table)``. Raises :class:`~stoicheia.sources.record.SourceError`
    naming the file and line for an unknown entity or malformed XML.
    """
    table = EntityTable(_declared_entities(raw))
    return _parse(_replace_entities(raw, table, file), file), table
