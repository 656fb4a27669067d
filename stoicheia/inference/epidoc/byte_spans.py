"""Locate every element of an EpiDoc file in its original bytes.

A scanner over the bytes gives every element's byte span (start tag to end tag), matched to
lxml's elements in document order (names checked), so a ``<gap>`` found with lxml is known by
its bytes and the restored file can be written by edits at located offsets, every other byte
left as it was (an XML library's parse-and-reserialise round trip is not byte-identical:
attribute order and quoting, character references, empty-element spelling and the XML
declaration can all change).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lxml import etree

# One token of XML markup in the original bytes; text between tokens holds no '<'.
_TOKEN = re.compile(
    rb"""<!--.*?-->
    | <!\[CDATA\[.*?\]\]>
    | <\?.*?\?>
    | <!DOCTYPE(?:[^\[>"']|"[^"]*"|'[^']*'|\[(?:"[^"]*"|'[^']*'|<!--.*?-->|[^\]"'])*\])*>
    | </(?P<end>[^\s>]+)\s*>
    | <(?P<start>[^\s/>!?]+)(?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*\s*(?P<empty>/?)>""",
    re.S | re.X,
)


@dataclass
class ElementSpan:
    """Where one element stands in the original bytes (offsets into the file, in bytes)."""

    name: bytes  # the tag as written (with its prefix)
    start: int  # '<' of the start tag
    tag_end: int  # after the start tag's '>'
    end: int  # after the end tag (== tag_end for an empty element)


def _element_spans(data: bytes) -> list[ElementSpan]:
    """Byte spans of every element of ``data``, in document order (start tags)."""
    spans: list[ElementSpan] = []
    stack: list[ElementSpan] = []
    for m in _TOKEN.finditer(data):
        if m.group("start"):
            s = ElementSpan(m.group("start"), m.start(), m.end(), m.end())
            spans.append(s)
            if not m.group("empty"):
                stack.append(s)
        elif m.group("end"):
            if not stack or stack[-1].name != m.group("end"):
                raise ValueError(
                    f"end tag </{m.group('end').decode(errors='replace')}> at byte {m.start()} "
                    "does not match"
                )
            stack.pop().end = m.end()
    if stack:
        raise ValueError(f"<{stack[-1].name.decode(errors='replace')}> is never closed")
    return spans


def _locate(doc: etree._Element, data: bytes) -> dict[Any, ElementSpan]:
    """Map each lxml element of ``doc`` to its byte span in ``data``; raises ``ValueError``
    when the scan and lxml disagree (a construct the scanner does not know, e.g. an element
    brought in by an entity)."""
    elements = [e for e in doc.iter() if isinstance(e.tag, str)]
    spans = _element_spans(data)
    if len(elements) != len(spans):
        raise ValueError(
            f"{len(spans)} start tags in the bytes but {len(elements)} elements parsed"
        )
    for e, s in zip(elements, spans, strict=True):
        raw = s.name.split(b":")[-1].decode("utf-8", "replace")
        if raw != etree.QName(e).localname:
            raise ValueError(
                f"element <{etree.QName(e).localname}> parsed where the bytes have <{raw}> "
                f"(byte {s.start})"
            )
    return dict(zip(elements, spans, strict=True))
