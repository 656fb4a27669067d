"""Parsing an EpiDoc / TEI P5 file with the entities its DOCTYPE declares.

Editors declare entities in the internal subset of the DOCTYPE and use them in the edition
(``<!DOCTYPE TEI [<!ENTITY kai "καὶ">]>`` ... ``&kai;``). lxml kept each reference as an
entity node, which every reader of the text skipped: the word vanished, uncounted.
:func:`parse_tei` expands the *internal* entities (lxml's ``resolve_entities="internal"``:
a literal value declared in the file, entities inside entities too) and never reads an
*external* one (``SYSTEM``/``PUBLIC``: no file is opened and no network is touched; an
external DTD is not loaded either). A file that uses an entity it cannot expand is refused
with one line naming the entity and the fix:

* ``external``: declared ``SYSTEM``/``PUBLIC`` (its text lies in another file or on the
  network, which a reader of corpora must not open);
* ``undeclared``: not declared in the file (an external DTD would declare it, and it is not
  read);
* an expansion past libxml2's amplification limit (an "entity bomb": a few lines that expand
  to gigabytes) is refused the same way.

Used by :func:`stoicheia.sources.epidoc.read_epidoc` (convert) and by the EpiDoc restorer,
whose output keeps every reference as written: it edits the original bytes at located
offsets, so only the parsed tree sees the expansions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree

__all__ = ["XmlReadError", "ParsedXml", "parse_tei", "markup_entities"]

_UNDEFINED = re.compile(r"Entity '([^']+)' not defined")
_NAME = r"[A-Za-z_:][\w.:\-]*"
_DOCTYPE = re.compile(
    r"<!DOCTYPE(?:[^\[>\"']|\"[^\"]*\"|'[^']*')*(?:\[(?P<subset>(?:\"[^\"]*\"|'[^']*'|<!--.*?-->|[^\]\"'])*)\])?\s*>",
    re.S,
)
_EXTERNAL = re.compile(
    rf"<!ENTITY\s+(?P<name>{_NAME})\s+(?P<kind>SYSTEM|PUBLIC)\s+(?P<ids>(?:\"[^\"]*\"|'[^']*'|\s)+)",
    re.S,
)


class XmlReadError(ValueError):
    """A file the XML parser refuses: ``line`` (1-based, 0 when unknown), ``message`` (what is
    wrong) and ``fix`` (what to do), for the caller to put into its own one-line error."""

    def __init__(self, line: int, message: str, fix: str) -> None:
        super().__init__(f"line {line}: {message}; {fix}")
        self.line = line
        self.message = message
        self.fix = fix


@dataclass(frozen=True)
class ParsedXml:
    """The root of a parsed file and ``entities_expanded``: the references to internal
    entities in its text (counted in the bytes, outside the DOCTYPE; references inside an
    entity's value are not counted)."""

    root: etree._Element
    entities_expanded: int


def _parser() -> etree.XMLParser:
    # resolve_entities="internal": expand what the file declares, never an external entity;
    # load_dtd=False, no_network=True: no DTD is fetched, from disk or the network
    return etree.XMLParser(
        recover=False,
        resolve_entities="internal",
        load_dtd=False,
        no_network=True,
        huge_tree=True,
        # xml:id values are not looked up: a duplicate one (IIP's segmented copies repeat a
        # word's id) is a slip of the file's validity, not of its text
        collect_ids=False,
    )


def _doctype(data: bytes) -> tuple[str, int]:
    """The internal subset of ``data``'s DOCTYPE (``""`` if none) and the offset after it."""
    head = data[: 1 << 20].decode("utf-8", "replace")
    m = _DOCTYPE.search(head)
    if m is None:
        return "", 0
    return m.group("subset") or "", len(head[: m.end()].encode("utf-8"))


def parse_tei(data: bytes) -> ParsedXml:
    """Parse the UTF-8 bytes of an XML file, expanding its internal entities (module
    docstring). Raises :class:`XmlReadError` for malformed XML (lxml's message), a reference
    to an external or undeclared entity, or an expansion past libxml2's amplification limit.
    """
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as e:
        line = e.lineno or (e.position[0] if e.position else 0)
        raise _explain(data, e.msg or str(e), line) from None
    subset, after = _doctype(data)
    n = 0
    if subset:
        dtd = root.getroottree().docinfo.internalDTD
        names = [ent.name for ent in (dtd.iterentities() if dtd is not None else []) if ent.content]
        if names:
            ref = re.compile(rb"&(" + b"|".join(re.escape(x.encode()) for x in names) + rb");")
            n = len(ref.findall(data, after))
    return ParsedXml(root, n)


def markup_entities(root: etree._Element) -> list[str]:
    """Names of the internal entities of ``root``'s document whose value holds markup (an
    element: ``<!ENTITY x "<hi>ab</hi>">``)."""
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is None:
        return []
    return [e.name for e in dtd.iterentities() if e.content and "<" in e.content]


#: libxml2's words for a tag left open, which on the file's last line mean it was cut short
_CUT_AT_END = ("expected '>'", "Couldn't find end of", "EndTag: '</' not found", "Unescaped '<'")


def _explain(data: bytes, msg: str, line: int) -> XmlReadError:
    conflict = re.search(rb"^(<{7}|={7}|>{7})(?: |$)", data, re.M)
    if conflict is not None:
        at = data.count(b"\n", 0, conflict.start()) + 1
        return XmlReadError(
            at,
            "the file holds unresolved merge-conflict markers (<<<<<<<, =======, >>>>>>> from "
            "git): two versions of the text are mixed in it",
            "resolve the conflict (keep one version, delete the marker lines) and save again",
        )
    head = data.removeprefix(b"\xef\xbb\xbf").lstrip()
    if head and not head.startswith(b"<"):  # a text file named .xml: no markup at all
        first = head.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
        shown = first if len(first) <= 40 else first[:40] + "…"
        return XmlReadError(
            data[: len(data) - len(head)].count(b"\n") + 1,
            f"not XML: it starts with plain text ({shown!r}), not with a tag",
            "give the XML file itself (a text file named .xml is not one)",
        )
    if "amplification" in msg:
        return XmlReadError(
            line,
            "its entities expand past the parser's limit (an entity that repeats other "
            "entities, nested: an entity bomb)",
            "write the text of the entities out, or check where the file came from",
        )
    m = _UNDEFINED.search(msg)
    ends = data.rstrip().count(b"\n") + 1  # the last line that holds anything
    at_end = line >= ends and any(k in msg for k in _CUT_AT_END)
    if m is None and ("Premature end of data" in msg or at_end):  # the data ended in a tag
        return XmlReadError(
            line,
            "malformed XML: it ends before its elements are closed, as a file cut short "
            f"does; {msg}",
            "copy or download it again whole, or close its elements",
        )
    if m is None:
        return XmlReadError(line, f"malformed XML: {msg}", "repair the markup at that line")
    name = m.group(1)
    subset, _ = _doctype(data)
    for d in _EXTERNAL.finditer(subset):
        if d.group("name") == name:
            ids = " ".join(d.group("ids").split())
            return XmlReadError(
                line,
                f"the entity &{name}; is external ({d.group('kind')} {ids}): its text is "
                "never read (no file is opened and no network is used)",
                f'declare its text in the DOCTYPE (<!ENTITY {name} "...">) or write the text '
                f"in place of &{name};",
            )
    return XmlReadError(
        line,
        f"the entity &{name}; is not declared in the file's DOCTYPE (an external DTD is "
        "never read)",
        f'declare it in the DOCTYPE\'s internal subset (<!ENTITY {name} "...">) or write its '
        f"text in place of &{name};",
    )
