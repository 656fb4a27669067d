"""The ``.xml`` reader: TEI P4 (Perseus, Beta Code) or TEI P5 (EpiDoc, Unicode), by root.

A Perseus file has a ``<TEI.2>`` root and no namespace; an EpiDoc / TEI P5 file has a
``<TEI xmlns="http://www.tei-c.org/ns/1.0">`` root. The root element is found without
parsing (after the XML declaration, comments and the DOCTYPE), so a P5 file is never read as
Beta Code and a P4 file keeps its entity handling.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from .epidoc import read_epidoc
from .epidoc_walk import EpiDocOptions
from .perseus import read_perseus
from .record import SourceError, SourceRecord, read_utf8

__all__ = ["read_tei", "xml_root_name"]

_PROLOG = re.compile(
    r"""\s*(?:<\?.*?\?>|<!--.*?-->|<!DOCTYPE(?:[^\[>"']|"[^"]*"|'[^']*'|\[(?:"[^"]*"|'[^']*'|<!--.*?-->|[^\]"'])*\])*>|\s+)*""",
    re.S,
)
_START = re.compile(r"<([A-Za-z_][\w.:-]*)([^>]*)>")


def xml_root_name(raw: str) -> tuple[str, str | None]:
    """``(root element name, default namespace or None)`` of an XML document's text.

    Raises ``ValueError`` if no start tag follows the prolog.
    """
    m = _START.match(raw, _PROLOG.match(raw).end())
    if m is None:
        raise ValueError("no root element")
    ns = re.search(r'\sxmlns\s*=\s*"([^"]*)"', m.group(2))
    return m.group(1), ns.group(1) if ns else None


def read_tei(
    path: Path,
    root: Path | None = None,
    *,
    counts: Counter[str] | None = None,
    epidoc: EpiDocOptions | None = None,
    chunks: bool = False,
) -> Iterator[SourceRecord]:
    """Read a ``.xml`` file with :func:`read_perseus` (``<TEI.2>``) or :func:`read_epidoc`
    (``<TEI>`` in the TEI namespace; ``epidoc`` its options, ``chunks`` whether a long
    unit may come as a streamed record).

    Raises :class:`SourceError` naming the file for any other root (the fix says which
    formats are read) and whatever the chosen reader raises.
    """
    path = Path(path)
    raw = read_utf8(path)
    try:
        name, ns = xml_root_name(raw.lstrip("\ufeff"))
    except ValueError:
        raise SourceError(path, 0, "no XML root element found", "give a TEI XML file") from None
    if name == "TEI.2":
        return read_perseus(path, root, counts=counts, chunks=chunks)
    if name == "TEI" and ns == "http://www.tei-c.org/ns/1.0":
        return read_epidoc(path, root, counts=counts, options=epidoc, chunks=chunks)
    raise SourceError(
        path,
        1,
        f"root element <{name}>{' in namespace ' + ns if ns else ''} is neither TEI P4 "
        '<TEI.2> (Perseus) nor TEI P5 <TEI xmlns="http://www.tei-c.org/ns/1.0"> (EpiDoc)',
        "give a Perseus TEI P4 or an EpiDoc / TEI P5 file, or convert the text to .txt/.jsonl",
    )
