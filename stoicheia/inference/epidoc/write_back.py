"""Write a restored EpiDoc file back: the restorations in place of their ``<gap>`` elements,
the model declared in the header, every other byte as it was.

Each restored ``<gap>`` element (with anything inside it, such as a ``<desc>``) is
replaced, at its byte offsets, by::

    <supplied reason="lost" cert="low" resp="#stoicheia" xml:id="stoicheia-1">τοῦ</supplied>
    <certainty target="#stoicheia-1" locus="value" degree="0.62" resp="#stoicheia"/>
    <certainty target="#stoicheia-1" locus="value" assertedValue="τῶν" degree="0.21"
        resp="#stoicheia"/>

(one line in the file; the last entry is wrapped here only). The ``<supplied>`` keeps the
gap's attributes that say what the element is and where it stands (``xml:id``, so links into
the edition still resolve, and the pointers above use it; ``n``, a word number; ``xml:lang``,
``rend``, ...), written as the file had them; those that describe the loss (``reason``,
``agent``, ``quantity``, ``unit``, ``extent``, ``precision``, ``atLeast``/``atMost``, ...) or
the editor's judgement of it (``resp``, ``cert``, ``evidence``) go
(:data:`GAP_ONLY_ATTRIBUTES`), except the statement of a loss of unknown or approximate extent
(:data:`LOSS_STATEMENT`), which stays. After it come the best reading's ``<certainty>`` and one per
alternative (``@assertedValue``), with ``@degree`` its probability. ``<certainty>`` rather than
``<app type="alternative">``: the running text of the edition stays one reading (the
``<supplied>`` stands where the ``<gap>`` stood, in the same parent), so every reader that
builds the edition's text (the EpiDoc stylesheets, this project's reader, which leaves
``<certainty>`` out) reads the best restoration once, where ``<lem>``/``<rdg>`` would put every
alternative into the text of a reader that does not know ``<app>``; and ``@degree`` is TEI's
attribute for a probability, where ``@cert`` is a category. Two header entries declare the
model: a ``<respStmt>`` in ``<titleStmt>`` whose ``<name xml:id="stoicheia">`` the ``@resp``
attributes point to, and a ``<change who="#stoicheia">`` in ``<revisionDesc>`` naming the
checkpoint, its step and the number of lacunae restored. Every other byte of the file is
left as it was (no re-serialisation), and the result is parsed again before it is returned.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from lxml import etree

from stoicheia.inference.epidoc.byte_spans import ElementSpan
from stoicheia.inference.epidoc.edition import TEI, parse_xml
from stoicheia.inference.epidoc.outcomes import EpiDocRestoreError, Readings
from stoicheia.inference.epidoc.plan import EpiDocPlan
from stoicheia.inference.model_identity import model_identity

__all__ = ["GAP_ONLY_ATTRIBUTES", "LOSS_STATEMENT", "RESP_ID", "write_restorations"]

_XML_ID = "{http://www.w3.org/XML/1998/namespace}id"
RESP_ID = "stoicheia"


def _prefix(span: ElementSpan) -> str:
    name = span.name.decode("utf-8")
    return name[: name.index(":") + 1] if ":" in name else ""


def _fmt_prob(p: float) -> str:
    return f"{min(max(p, 0.0), 1.0):.4f}"


#: attributes of a ``<gap>`` that describe the loss (TEI ``gap``'s own ``@reason``/``@agent``,
#: ``att.dimensions``/``att.ranging``: the extent of what is lost) or the editor's judgement of
#: it (``att.global.responsibility``'s ``@resp``/``@cert``, ``att.editLike``'s ``@evidence``/
#: ``@instant``): they do not carry over to the ``<supplied>`` that replaces the gap, which has
#: its own (``reason="lost"``, the model's ``resp`` and ``cert``). Every other attribute (its
#: identity and place: ``xml:id``, ``n``, ``xml:lang``, ``rend``, ``corresp``, ...) is kept.
GAP_ONLY_ATTRIBUTES = frozenset(
    {
        "reason",
        "agent",
        "quantity",
        "unit",
        "extent",
        "precision",
        "scope",
        "atLeast",
        "atMost",
        "min",
        "max",
        "confidence",
        "resp",
        "cert",
        "evidence",
        "instant",
    }
)

_ATTRIBUTE = re.compile(rb"""([^\s=/>]+)\s*=\s*("[^"]*"|'[^']*')""")


#: the editor's statement of a loss whose extent is not known exactly (TEI att.dimensions,
#: which ``<supplied>`` shares with ``<gap>``): kept on the ``<supplied>`` when the gap says
#: its extent is unknown or approximate (``extent``, ``precision``, a range), so the edition
#: still records what the editor knew of the loss beside the model's reading
LOSS_STATEMENT = frozenset(
    {"quantity", "unit", "extent", "precision", "atLeast", "atMost", "min", "max", "scope"}
)
_UNSURE = frozenset({"extent", "precision", "atLeast", "atMost", "min", "max"})


def _kept_attributes(data: bytes, span: ElementSpan) -> list[tuple[str, bytes]]:
    """``[(name, bytes as written)]``: the attributes of the ``<gap>`` at ``span`` that the
    ``<supplied>`` replacing it keeps (:data:`GAP_ONLY_ATTRIBUTES`; those of
    :data:`LOSS_STATEMENT` too when the gap's extent is unknown or approximate), in their
    order, each written as in the file (quotes and character references untouched)."""
    tag = data[span.start : span.tag_end]
    tag = tag[1 + len(span.name) :]  # the attributes after '<name'
    found = [(m.group(1).decode("utf-8"), m.group(0)) for m in _ATTRIBUTE.finditer(tag)]
    unsure = any(name in _UNSURE for name, _ in found)
    return [
        (name, raw)
        for name, raw in found
        # a prefixed one (xml:id, xml:lang) is never dropped
        if name not in GAP_ONLY_ATTRIBUTES or (unsure and name in LOSS_STATEMENT)
    ]


def _supplied_xml(
    pre: str,
    xid: str,
    resp: str,
    fill: str,
    prob: float,
    alts: list[tuple[str, float]],
    kept: list[tuple[str, bytes]] = (),  # type: ignore[assignment]
    sources: list[str] = (),  # type: ignore[assignment]
) -> str:
    """The ``<supplied>`` and its ``<certainty>`` entries for one restored gap (module
    docstring). ``kept``: the gap's attributes it keeps (:func:`_kept_attributes`); when they
    hold the gap's ``xml:id``, ``xid`` must be its value (the one the pointers use), and the
    ``xml:id`` is written as the gap had it. ``sources``: the corpus parallels that carry the
    reading (their labels): the ``<supplied>`` says ``evidence="parallel"`` and the reading's
    ``<certainty>`` names them in a ``<desc>``."""
    own = "" if any(n == "xml:id" for n, _ in kept) else f' xml:id="{xid}"'
    more = "".join(" " + raw.decode("utf-8") for _, raw in kept)
    evidence = ' evidence="parallel"' if sources else ""
    target = quoteattr(f"#{xid}")
    head = (
        f'<{pre}certainty target={target} locus="value" degree="{_fmt_prob(prob)}" resp="#{resp}"'
    )
    named = escape("parallels: " + "; ".join(sources))
    out = [
        f'<{pre}supplied reason="lost" cert="low" resp="#{resp}"{evidence}{own}{more}>'
        f"{escape(fill)}</{pre}supplied>",
        f"{head}><{pre}desc>{named}</{pre}desc></{pre}certainty>" if sources else f"{head}/>",
    ]
    for f, p in alts:
        out.append(
            f'<{pre}certainty target={target} locus="value" assertedValue={quoteattr(f)} '
            f'degree="{_fmt_prob(p)}" resp="#{resp}"/>'
        )
    return "".join(out)


def _proposals_xml(pre: str, resp: str, fill: str, prob: float, alts: list) -> str:
    """The readings of a gap left below the confidence floor, written right after its
    ``<gap>`` (which stays as it was, byte for byte): one ``<certainty>`` per reading, pointing
    at the gap by ``@match`` (the nearest ``<gap>`` before it), ``@assertedValue`` the reading and
    ``@degree`` its probability."""
    return "".join(
        f'<{pre}certainty match="{_PROPOSAL_MATCH}" locus="value" '
        f'assertedValue={quoteattr(f)} degree="{_fmt_prob(p)}" resp="#{resp}"/>'
        for f, p in [(fill, prob), *alts]
    )


_PROPOSAL_MATCH = "preceding-sibling::*[local-name()='gap'][1]"


def _earlier_proposals_end(gap: etree._Element, spans: dict[Any, ElementSpan], end: int) -> int:
    """The byte after the proposals an earlier run wrote right after ``gap`` (its
    ``<certainty match=...>`` entries, ``resp="#stoicheia..."``: the file is a restored one fed
    again), else ``end`` (the gap's end). A gap restored or proposed again takes them along:
    left, they would double the new proposals, or point at another ``<gap>`` (``@match`` is the
    nearest before them) once this one is a ``<supplied>``."""
    prev = gap
    for sib in gap.itersiblings():
        if (prev.tail or "").strip() or not isinstance(sib.tag, str):
            break
        if not (
            etree.QName(sib).localname == "certainty"
            and sib.get("match") == _PROPOSAL_MATCH
            and (sib.get("resp") or "").startswith(f"#{RESP_ID}")
        ):
            break
        end, prev = spans[sib].end, sib
    return end


def _append_child(
    data: bytes, spans: dict[Any, ElementSpan], parent: etree._Element, entry: str
) -> tuple[int, int, bytes]:
    """An edit ``(start, end, bytes)`` adding ``entry`` as the last child of ``parent``, indented
    like its last child (or one step in from the parent)."""
    ps = spans[parent]
    kids = [c for c in parent if isinstance(c.tag, str)]
    if ps.tag_end == ps.end and data[ps.tag_end - 2 : ps.tag_end] == b"/>":  # <listChange/>
        name = ps.name.decode("utf-8")
        head = data[ps.start : ps.tag_end - 2].rstrip()
        return ps.start, ps.end, head + f">{entry}</{name}>".encode()
    if kids:
        last = spans[kids[-1]]
        prev_end = spans[kids[-2]].end if len(kids) > 1 else ps.tag_end
        before = data[prev_end : last.start]
        nl = before.rfind(b"\n")
        nl -= 1 if nl > 0 and before[nl - 1 : nl] == b"\r" else 0  # keep a CRLF file CRLF
        indent = before[nl:] if nl >= 0 and not before.strip() else b""
        # after the spaces and tabs that end the last child's line (its tail up to the line
        # break): they stay where they are, the entry goes on a line of its own after them
        at = last.end
        while data[at : at + 1] in (b" ", b"\t"):
            at += 1
        return at, at, indent + entry.encode()
    close = data.rfind(b"</", ps.tag_end, ps.end)
    return close, close, entry.encode()


def _unique_id(base: str, taken: set[str]) -> str:
    k, out = 1, base
    while out in taken:
        k += 1
        out = f"{base}-{k}"
    taken.add(out)
    return out


def _header_edits(
    doc: etree._Element,
    data: bytes,
    spans: dict[Any, ElementSpan],
    name: str,
    resp: str,
    model: Any,
    restored: int,
    top_k: int,
    when: str,
    proposed: int = 0,
    floor: str = "0",
) -> list[tuple[int, int, bytes]]:
    header = doc.find(f"{TEI}teiHeader")
    title = header.find(f"{TEI}fileDesc/{TEI}titleStmt") if header is not None else None
    if header is None or title is None:
        raise EpiDocRestoreError(
            f"{name}: no <teiHeader>/<fileDesc>/<titleStmt>: not an EpiDoc file; give EpiDoc files"
        )
    pre = _prefix(spans[title])
    # the model by run name, step and a hash of its weights, not by a path on this machine
    model_id = escape(model_identity(model))
    resp_entry = (
        f'<{pre}respStmt><{pre}name xml:id="{resp}">Stoicheia ({model_id})</{pre}name>'
        f"<{pre}resp>machine restoration of lacunae: each supplement it wrote is marked "
        f'resp="#{resp}" and cert="low", with its probability in certainty/@degree and its '
        'alternatives in certainty/@assertedValue; evidence="parallel" where passages of the '
        "corpus carry the reading, named in certainty/desc; a gap whose readings fall below the "
        f"confidence floor stays, its proposals in certainty/@assertedValue</{pre}resp>"
        f"</{pre}respStmt>"
    )
    one = proposed == 1
    left = (
        f"{proposed} {'lacuna' if one else 'lacunae'} left as {'a gap' if one else 'gaps'}, "
        f"{'its' if one else 'their'} readings below the confidence floor {floor} proposed in "
        "certainty/@assertedValue"
        if proposed
        else ""
    )
    said = (
        [f"top {top_k} restorations, alternatives in certainty/@assertedValue"] if restored else []
    )
    said += [left] if left else []
    change = (
        f'<{pre}change when="{when}" who="#{resp}">Stoicheia restored {restored} '
        f"{'lacuna' if restored == 1 else 'lacunae'} of the Greek edition (model: {model_id}; "
        f"{'; '.join(said)})"
        f"</{pre}change>"
    )
    edits = [_append_child(data, spans, title, resp_entry)]
    rev = header.find(f"{TEI}revisionDesc")
    if rev is None:
        edits.append(
            _append_child(
                data,
                spans,
                header,
                f"<{pre}revisionDesc><{pre}listChange>{change}</{pre}listChange></{pre}revisionDesc>",
            )
        )
    else:
        lists = rev.findall(f"{TEI}listChange")
        edits.append(_append_child(data, spans, lists[-1] if lists else rev, change))
    return edits


def write_restorations(
    plan: EpiDocPlan,
    fills: dict[int, Readings],
    model: Any,
    top_k: int,
    when: str | None = None,
    *,
    proposals: dict[int, Readings] | None = None,
    sources: dict[int, list[str]] | None = None,
    floor: str = "0",
) -> bytes:
    """The restored file's bytes: ``plan.data`` with each gap of ``fills`` (by the index of its
    :class:`~.outcomes.GapOutcome`; at least one) replaced by its ``<supplied>`` and
    ``<certainty>`` entries, and the model (``model``, a
    :class:`~stoicheia.inference.loading.LoadedModel`, named by
    :func:`~stoicheia.inference.model_identity.model_identity`) declared in the header with the
    number of lacunae restored, ``top_k`` and the date ``when`` (default today, UTC,
    ``YYYY-MM-DD``). ``proposals``: gaps left below the confidence ``floor``, by the same
    index: their ``<gap>`` stays and their readings follow it (:func:`_proposals_xml`), and the
    header's ``<change>`` names ``floor`` as said (``0.35``, or ``0.35 (0.5 for gaps of unknown
    extent)``);
    ``sources``: the parallels that carry a written reading (``evidence="parallel"``). Every
    other byte is the input's. Raises
    :class:`~.outcomes.EpiDocRestoreError` for a file without a ``<titleStmt>``, and (an
    internal fault, to report) for overlapping edits or a result that does not parse."""
    name, data, doc, spans = plan.source, plan.data, plan.doc, plan.spans
    taken = {v for v in (e.get(_XML_ID) for e in doc.iter() if isinstance(e.tag, str)) if v}
    resp = _unique_id(RESP_ID, taken)
    edits: list[tuple[int, int, bytes]] = []
    at_byte = {sp.start: el for el, sp in spans.items()}
    for o in plan.gaps:
        if o.index in fills:
            f, p, alts = fills[o.index]
            span = plan.gap_spans[o.index]
            pre = _prefix(span)
            kept = _kept_attributes(data, span)  # the gap's xml:id, n, ...: links stay valid
            own = at_byte[o.start].get(_XML_ID) if any(n == "xml:id" for n, _ in kept) else None
            xid = own or _unique_id(f"{resp}-{o.index + 1}", taken)
            named = (sources or {}).get(o.index, [])
            xml = _supplied_xml(pre, xid, resp, f, p, alts, kept, named)
            end = _earlier_proposals_end(at_byte[o.start], spans, o.end)
            edits.append((o.start, end, xml.encode("utf-8")))
        elif proposals and o.index in proposals:
            f, p, alts = proposals[o.index]
            xml = _proposals_xml(_prefix(plan.gap_spans[o.index]), resp, f, p, alts)
            end = _earlier_proposals_end(at_byte[o.start], spans, o.end)
            edits.append((o.end, end, xml.encode("utf-8")))
    when = when or _dt.datetime.now(_dt.timezone.utc).date().isoformat()
    edits += _header_edits(
        doc,
        data,
        spans,
        name,
        resp,
        model,
        len(fills),
        top_k,
        when,
        len(proposals or {}),
        floor,
    )
    edits.sort(key=lambda e: (e[0], e[1]))
    out, at = [], 0
    for s, e, b in edits:
        if s < at:
            raise EpiDocRestoreError(
                f"{name}: internal: overlapping edits at byte {s}; report this file"
            )
        out += [data[at:s], b]
        at = e
    out.append(data[at:])
    new = b"".join(out)
    try:
        parse_xml(new, name)
    except EpiDocRestoreError as err:
        raise EpiDocRestoreError(
            f"internal: the restored file does not parse ({err}); report this file"
        ) from None
    return new
