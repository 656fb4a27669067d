"""Restore the lacunae of an EpiDoc file: :func:`restore_epidoc` (``stoicheia restore --epidoc``).

Documentation for users: ``docs/restoring-epidoc.md``.

**Reading.** The Greek edition is read by the EpiDoc reader of the training data
(:mod:`stoicheia.sources.epidoc`: the same editions, text parts, languages and Leiden
semantics), which writes each ``<gap>`` as a Leiden lacuna. The reader's walker is wrapped so
that it records every ``<gap>`` element it writes, in order; the k-th lacuna of the Leiden text
(:func:`stoicheia.text.leiden.parse_leiden`) is then the k-th ``<gap>`` (checked: the counts
must agree, else the file is refused). A scanner over the original bytes gives every
element's byte span (start tag to end tag), matched to lxml's elements in document order
(names checked), so a ``<gap>`` found with lxml is known by its bytes.

**Which gaps are filled.** A ``<gap reason="lost" unit="character">`` with a readable width
(``quantity``, ``atLeast``/``atMost``, ``precision="low"``, ``extent="unknown"``), not wider than
the model's window. Left as they are, and counted by reason:

* ``lines``: ``unit="line"`` (or another unit than characters): whole lines lost. The text
  is cut there: the letters on either side are not neighbours, so the parts on either side
  are restored separately;
* ``too wide``: more slots than the model's window (cut there too);
* ``illegible``: ``reason`` other than ``lost`` (traces of letters, not a loss), and
  ``width unreadable`` (a broken ``quantity``/``atLeast``/``atMost``): these stay lacunae in
  the text the model sees (it fills them as context) but are not written.

A gap the decoder refuses (the part it stands in has no Greek letter, say) is counted
``refused`` with the decoder's message. The letters with a dot below (``<unclear>``) are given
to the model as read: an EpiDoc restoration fills lacunae and never changes a reading.

**Decoding.** :func:`stoicheia.inference.restore.restore`, the decoder of the text form, on
the Leiden text of each part (the whole edition, or the stretches between lost lines); a part
longer than the model's window is cut at word breaks into pieces of at most the window,
restored one by one (:mod:`stoicheia.inference.epidoc_restore_pieces`: the work grows
linearly with the file, where one call over a whole long edition grew with its square).

**Writing.** Each restored ``<gap>`` element (with anything inside it, such as a ``<desc>``) is
replaced, at its byte offsets, by::

    <supplied reason="lost" cert="low" resp="#stoicheia" xml:id="stoicheia-1">τοῦ</supplied>
    <certainty target="#stoicheia-1" locus="value" degree="0.62" resp="#stoicheia"/>
    <certainty target="#stoicheia-1" locus="value" assertedValue="τῶν" degree="0.21" resp="#stoicheia"/>

(one line in the file). The ``<supplied>`` keeps the gap's attributes that say what the
element is and where it stands (``xml:id``, so links into the edition still resolve, and the
pointers above use it; ``n``, a word number; ``xml:lang``, ``rend``, ...), written as the file
had them; those that describe the loss (``reason``, ``agent``, ``quantity``, ``unit``,
``extent``, ``precision``, ``atLeast``/``atMost``, ...) or the editor's judgement of it
(``resp``, ``cert``, ``evidence``) go (:data:`GAP_ONLY_ATTRIBUTES`). After it come the best
reading's ``<certainty>`` and one per
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
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from lxml import etree

from stoicheia.inference.epidoc_restore_pieces import pieces
from stoicheia.inference.model_identity import model_identity
from stoicheia.sources.epidoc_gap import MAX_GAP_LETTERS
from stoicheia.sources.epidoc_tei import is_greek_lang, is_tei_p5, unit_language
from stoicheia.sources.epidoc_walk import EpiDocOptions, unit_leiden
from stoicheia.sources.xml_entities import XmlReadError, markup_entities, parse_tei
from stoicheia.text.leiden import Lacuna, LeidenError, parse_leiden

__all__ = [
    "EpiDocPlan",
    "EpiDocRestoreError",
    "EpiDocResult",
    "GapOutcome",
    "Piece",
    "gap_readings",
    "plan_epidoc",
    "restore_epidoc",
]

_T = "{http://www.tei-c.org/ns/1.0}"
_XML_ID = "{http://www.w3.org/XML/1998/namespace}id"
RESP_ID = "stoicheia"
_MARK = "\ue000"  # a private-use character put before the lacuna of each <gap>
_WS = re.compile(r"\s+")

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


class EpiDocRestoreError(ValueError):
    """A file that cannot be restored as it is (not UTF-8, malformed XML, not EpiDoc, no Greek
    edition); the message names the file and the fix."""


@dataclass
class GapOutcome:
    """What became of one ``<gap>`` of the Greek edition.

    ``index``: its order among the gaps the reader met (0-based); ``line``: its line in the
    file; ``start``/``end``: byte offsets of the element in the original file (end exclusive);
    ``notation``: its Leiden form (``[---]``, ``[.5.]``, ``[-ca.5-]``, ``[.3-6.]``);
    ``status``: ``"restored"``, ``"left"`` or ``"refused"``; ``reason``: why it was left or
    refused (``""`` when restored); ``fill``: the letters written (as printed by the model:
    accents, word breaks); ``prob``: its probability among the top-k restorations;
    ``alternatives``: the other readings, ``[(letters, probability)]``, most probable first.
    """

    index: int
    line: int
    start: int
    end: int
    notation: str
    status: str
    reason: str = ""
    fill: str | None = None
    prob: float | None = None
    alternatives: list[tuple[str, float]] = field(default_factory=list)


@dataclass
class EpiDocResult:
    """What :func:`restore_epidoc` returns: ``xml`` the restored file (bytes, UTF-8, equal to the
    input outside the edited spans), ``gaps`` one :class:`GapOutcome` per ``<gap>`` of the Greek
    edition, in document order; ``source`` the file (or ``"<xml>"``)."""

    source: str
    xml: bytes
    gaps: list[GapOutcome]

    def count(self, status: str) -> int:
        """Gaps of one status (``"restored"``, ``"left"``, ``"refused"``)."""
        return sum(1 for g in self.gaps if g.status == status)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``source``, ``gaps`` (the fields of :class:`GapOutcome`; alternatives
        as ``{"fill", "prob"}``) and the counts; the XML itself is left out."""
        return {
            "source": self.source,
            "restored": self.count("restored"),
            "left": self.count("left"),
            "refused": self.count("refused"),
            "gaps": [
                {
                    **{k: v for k, v in vars(g).items() if k != "alternatives"},
                    "alternatives": [{"fill": f, "prob": p} for f, p in g.alternatives],
                }
                for g in self.gaps
            ],
        }


# --- locating elements in the original bytes ------------------------------------------------


@dataclass
class _Span:
    name: bytes  # the tag as written (with its prefix)
    start: int  # '<' of the start tag
    tag_end: int  # after the start tag's '>'
    end: int  # after the end tag (== tag_end for an empty element)


def _element_spans(data: bytes) -> list[_Span]:
    """Byte spans of every element of ``data``, in document order (start tags)."""
    spans: list[_Span] = []
    stack: list[_Span] = []
    for m in _TOKEN.finditer(data):
        if m.group("start"):
            s = _Span(m.group("start"), m.start(), m.end(), m.end())
            spans.append(s)
            if not m.group("empty"):
                stack.append(s)
        elif m.group("end"):
            if not stack or stack[-1].name != m.group("end"):
                raise ValueError(
                    f"end tag </{m.group('end').decode(errors='replace')}> at byte {m.start()} does not match"
                )
            stack.pop().end = m.end()
    if stack:
        raise ValueError(f"<{stack[-1].name.decode(errors='replace')}> is never closed")
    return spans


def _locate(doc: etree._Element, data: bytes) -> dict[Any, _Span]:
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
                f"element <{etree.QName(e).localname}> parsed where the bytes have <{raw}> (byte {s.start})"
            )
    return dict(zip(elements, spans, strict=True))


# --- reading the Greek edition ----------------------------------------------------------------


@dataclass
class _Unit:
    """One Greek unit of the edition (a text part, or the edition): its Leiden text, its
    lacunae and the ``<gap>`` element of each (``None`` for a lacuna the reader wrote for other
    markup: it stays a lacuna of the text the model sees, and is not written)."""

    text: str
    lacunae: list[Lacuna]
    elements: list[etree._Element | None]  # None: a lacuna the reader made of other markup


def _greek_units(doc: etree._Element, name: str) -> list[_Unit]:
    """The Greek units of the edition as :func:`stoicheia.sources.epidoc.read_epidoc` reads
    them (the same selection of editions, text parts and languages)."""
    if not is_tei_p5(doc):
        raise EpiDocRestoreError(
            f"{name}: the root element is <{etree.QName(doc).localname}>, not a TEI P5 <TEI>: "
            "give EpiDoc files (TEI P5, namespace http://www.tei-c.org/ns/1.0)"
        )
    main = doc.find(f".//{_T}textLang")
    default_lang = main.get("mainLang") if main is not None else None
    editions = [
        d
        for d in doc.iter(_T + "div")
        if d.get("type") == "edition" and d.get("subtype") in (None, "primary")
    ]
    if not editions:
        raise EpiDocRestoreError(
            f'{name}: no <div type="edition"> (primary): an EpiDoc file keeps its text there; '
            "give an EpiDoc edition"
        )
    # an <orig>'s capitals as written: a gap among them is filled in capitals, as restore does
    # for the same Leiden text (the training reader lower-cases them)
    opts, counts = EpiDocOptions(orig_case="as written"), Counter()
    units: list[_Unit] = []
    langs: list[str] = []
    for ed in editions:
        parts = [
            d
            for d in ed.iter(_T + "div")
            if d.get("type") == "textpart" and d.find(f"{_T}div[@type='textpart']") is None
        ]
        for unit in parts or [ed]:
            lang = unit_language(unit, default_lang)
            if not is_greek_lang(lang):
                langs.append(str(lang))
                continue
            # the mark tells the lacuna of each <gap> from one the reader makes of other markup
            marked, gaps = unit_leiden(unit, lang, opts, counts, gap_mark=_MARK)
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
            units.append(_Unit(text, lacunae, [next(owners) if f else None for f in from_gap]))
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


# --- decoding --------------------------------------------------------------------------------


def gap_readings(result: Any, j: int) -> list[tuple[str, float]]:
    """Readings of gap ``j`` of a :class:`~stoicheia.inference.restore.RestoreResult`, the one to
    write first: ``[(letters as printed, probability)]``.

    The adapter between the decoder's result and the EpiDoc writer, kept in one place: the
    gap's fill in the best restoration (``Gap.fill``, with the accents, breathings and word
    breaks the model printed), then its other alternatives (``Gap.alternatives``), each with the
    probability the decoder gives it (the one ``restore`` prints and the page shows). The first
    alternative is the fill itself (one search decides both); its probability is the fill's.
    """
    g = result.gaps[j]
    alts = list(g.alternatives)
    first = alts[0].prob if alts else 1.0
    rest = [(a.fill, float(a.prob)) for a in alts[1:] if a.fill != g.fill]
    return [(g.fill, float(first)), *rest]


def _restore_piece(
    loaded: Any,
    piece: Piece,
    outcomes: list[GapOutcome],
    fills: dict[int, tuple[str, float, list[tuple[str, float]]]],
    restore: Any,
    restore_error: type,
    **options: Any,
) -> None:
    """Decode one :class:`Piece` and record what became of each of its gaps to fill in
    ``outcomes`` (the reason of a refusal, or the readings) and ``fills``."""
    try:
        result = restore(loaded, piece.text, **options)
    except restore_error as err:
        for i in piece.fill:
            outcomes[i].reason = str(err)
        return
    lac_gaps = [j for j, g in enumerate(result.gaps) if g.kind == "lacuna"]
    if len(lac_gaps) != len(piece.lacunae) or len(lac_gaps) != len(result.gaps):
        for i in piece.fill:
            outcomes[
                i
            ].reason = f"internal: {len(result.gaps)} gaps decoded for {len(piece.lacunae)} lacunae"
        return
    for j, i in enumerate(piece.lacunae):
        if i is None or i not in piece.fill:
            continue
        readings = gap_readings(result, j)
        o = outcomes[i]
        o.status, o.reason = "restored", ""
        o.fill, o.prob = readings[0]
        o.alternatives = readings[1:]
        fills[o.index] = (readings[0][0], readings[0][1], readings[1:])


def _strip_dots(s: str) -> str:
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", s).replace("\u0323", ""))


@dataclass
class _Plan:
    kind: str  # "fill" | "context" | "cut"
    reason: str = ""
    slots: int = 0  # slots the decoder gives it (0 for a cut)


def _plan(
    el: etree._Element | None,
    lac: Lacuna,
    notation: str,
    parse_input: Any,
    opts: dict[str, Any],
    max_slots: int,
) -> _Plan:
    """What to do with one lacuna (module docstring): ``fill`` it, keep it as ``context`` (a
    lacuna the model sees but whose letters are not written), or ``cut`` the text there."""
    from stoicheia.inference.restore import GapTooWideError, RestoreError

    unit = (
        "character" if el is None else (el.get("unit") or "character").strip().rstrip(">")
    )  # as the reader reads it
    if unit != "character":
        return _Plan("cut", "lines" if unit == "line" else f"unit {unit}")
    try:
        _, parsed = parse_input(
            "α" + notation,
            unknown_width=opts["unknown_width"],
            about_margin=opts["about_margin"],
            max_slots=max_slots,
            limit_why="the model's window",
        )
    except GapTooWideError:
        return _Plan("cut", "too wide")
    except RestoreError:
        return _Plan("cut", "width unreadable")
    slots = sum(g.slots for g in parsed)
    if el is None:
        return _Plan("context", slots=slots)
    qty = (el.get("quantity") or "").strip()
    if qty.isdigit() and int(qty) > MAX_GAP_LETTERS:  # the reader writes it as [---]
        return _Plan("cut", "too wide")
    if (el.get("reason") or "").strip() != "lost":
        return _Plan("context", (el.get("reason") or "").strip() or "no reason", slots)
    if (
        lac.max_width is None
        and lac.min_width == 0  # [-min.N-] (atLeast alone) has a readable least width
        and (el.get("extent") or "").strip() != "unknown"
    ):
        return _Plan("context", "width unreadable", slots)
    return _Plan("fill", slots=slots)


# --- writing ------------------------------------------------------------------------------------


def _prefix(span: _Span) -> str:
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


def _kept_attributes(data: bytes, span: _Span) -> list[tuple[str, bytes]]:
    """``[(name, bytes as written)]``: the attributes of the ``<gap>`` at ``span`` that the
    ``<supplied>`` replacing it keeps (:data:`GAP_ONLY_ATTRIBUTES`), in their order, each
    written as in the file (quotes and character references untouched)."""
    tag = data[span.start : span.tag_end]
    tag = tag[1 + len(span.name) :]  # the attributes after '<name'
    out = []
    for m in _ATTRIBUTE.finditer(tag):
        name = m.group(1).decode("utf-8")
        if name not in GAP_ONLY_ATTRIBUTES:  # a prefixed one (xml:id, xml:lang) is never dropped
            out.append((name, m.group(0)))
    return out


def _supplied_xml(
    pre: str,
    xid: str,
    resp: str,
    fill: str,
    prob: float,
    alts: list[tuple[str, float]],
    kept: list[tuple[str, bytes]] = (),  # type: ignore[assignment]
) -> str:
    """The ``<supplied>`` and its ``<certainty>`` entries for one restored gap (module
    docstring). ``kept``: the gap's attributes it keeps (:func:`_kept_attributes`); when they
    hold the gap's ``xml:id``, ``xid`` must be its value (the one the pointers use), and the
    ``xml:id`` is written as the gap had it."""
    own = "" if any(n == "xml:id" for n, _ in kept) else f' xml:id="{xid}"'
    more = "".join(" " + raw.decode("utf-8") for _, raw in kept)
    target = quoteattr(f"#{xid}")
    out = [
        f'<{pre}supplied reason="lost" cert="low" resp="#{resp}"{own}{more}>{escape(fill)}</{pre}supplied>',
        f'<{pre}certainty target={target} locus="value" degree="{_fmt_prob(prob)}" resp="#{resp}"/>',
    ]
    for f, p in alts:
        out.append(
            f'<{pre}certainty target={target} locus="value" assertedValue={quoteattr(f)} degree="{_fmt_prob(p)}" resp="#{resp}"/>'
        )
    return "".join(out)


def _append_child(
    data: bytes, spans: dict[Any, _Span], parent: etree._Element, entry: str
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
    spans: dict[Any, _Span],
    name: str,
    resp: str,
    model: Any,
    restored: int,
    top_k: int,
    when: str,
) -> list[tuple[int, int, bytes]]:
    header = doc.find(f"{_T}teiHeader")
    title = header.find(f"{_T}fileDesc/{_T}titleStmt") if header is not None else None
    if header is None or title is None:
        raise EpiDocRestoreError(
            f"{name}: no <teiHeader>/<fileDesc>/<titleStmt>: not an EpiDoc file; give EpiDoc files"
        )
    pre = _prefix(spans[title])
    # the model by run name, step and a hash of its weights, not by a path on this machine
    model_id = escape(model_identity(model))
    resp_entry = (
        f'<{pre}respStmt><{pre}name xml:id="{resp}">Stoicheia ({model_id})</{pre}name>'
        f"<{pre}resp>machine restoration of lacunae (the model of {model_id}; the hash is "
        f"the SHA-256 of its weights, stoicheia.inference.model_identity): the supplements marked "
        f'resp="#{resp}", their probabilities in certainty/@degree</{pre}resp></{pre}respStmt>'
    )
    change = (
        f'<{pre}change when="{when}" who="#{resp}">Stoicheia restored {restored} '
        f"{'lacuna' if restored == 1 else 'lacunae'} of the Greek edition (model of {model_id}; "
        f"top {top_k} restorations, alternatives in certainty/@assertedValue)</{pre}change>"
    )
    edits = [_append_child(data, spans, title, resp_entry)]
    rev = header.find(f"{_T}revisionDesc")
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
        lists = rev.findall(f"{_T}listChange")
        edits.append(_append_child(data, spans, lists[-1] if lists else rev, change))
    return edits


# --- the whole file ---------------------------------------------------------------------------


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


def _parse(data: bytes, name: str) -> etree._Element:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise EpiDocRestoreError(
            f"{name}:{line}: bytes are not UTF-8 ({e.reason}); re-save the file as UTF-8"
        ) from None
    try:  # internal entities expanded, external ones never read (no file, no network)
        return parse_tei(data).root
    except XmlReadError as e:
        msg = e.message
        if msg.startswith("malformed XML: "):
            msg = f"malformed XML ({msg[len('malformed XML: ') :]})"
        raise EpiDocRestoreError(f"{name}:{e.line}: {msg}; {e.fix}") from None


@dataclass
class Piece:
    """One call of the decoder: ``text`` (Leiden, dots below removed), and for each of its
    lacunae in order the index of its :class:`GapOutcome` (``None`` for a lacuna the reader
    made of other markup); ``fill``: the outcomes among them to fill."""

    text: str
    lacunae: list[int | None]
    fill: list[int]


@dataclass
class EpiDocPlan:
    """What :func:`restore_epidoc` will do with a file, decided before any model runs
    (:func:`plan_epidoc`): ``gaps`` one :class:`GapOutcome` per ``<gap>`` (``"left"`` with its
    reason, or ``"refused"`` until a piece restores it), ``pieces`` the decoder's calls, in
    order; ``to_fill`` the gaps to fill. ``data``/``doc``/``spans``/``gap_spans``: the bytes,
    the parsed tree, every element's byte span and each gap's."""

    source: str
    data: bytes
    doc: Any
    spans: dict[Any, _Span]
    gaps: list[GapOutcome]
    gap_spans: dict[int, _Span]
    pieces: list[Piece]

    @property
    def to_fill(self) -> int:
        """Gaps the pieces are to fill."""
        return sum(len(p.fill) for p in self.pieces)


def plan_epidoc(
    path_or_xml: str | bytes | Path,
    *,
    window: int = 512,
    unknown_width: int = 20,
    about_margin: float = 0.25,
) -> EpiDocPlan:
    """Read an EpiDoc file and plan its restoration (module docstring): each gap's fate, and
    the pieces of the Greek edition the decoder is given, each at most ``window`` slots where
    a word break allows (:mod:`~stoicheia.inference.epidoc_restore_pieces`). No model runs.
    Linear in the size of the file. ``path_or_xml``, ``unknown_width``, ``about_margin``: as
    for :func:`restore_epidoc`; ``window``: the slots the model sees at once.

    Raises :class:`EpiDocRestoreError` as :func:`restore_epidoc` does (a file it refuses)."""
    return _plan_edition(
        _read_edition(path_or_xml),
        window=window,
        unknown_width=unknown_width,
        about_margin=about_margin,
    )


def _read_edition(
    path_or_xml: str | bytes | Path,
) -> tuple[str, bytes, Any, list[_Unit], dict[Any, _Span]]:
    """``(name, bytes, tree, Greek units, element spans)`` of a file; raises
    :class:`EpiDocRestoreError` for a file that cannot be restored."""
    name, data = _read(path_or_xml)
    doc = _parse(data, name)
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
    return name, data, doc, units, spans


def _plan_edition(
    read: tuple[str, bytes, Any, list[_Unit], dict[Any, _Span]],
    *,
    window: int,
    unknown_width: int,
    about_margin: float,
) -> EpiDocPlan:
    from stoicheia.inference.restore import parse_input

    name, data, doc, units, spans = read
    opts = {"unknown_width": unknown_width, "about_margin": about_margin}
    outcomes: list[GapOutcome] = []
    gap_spans: dict[int, _Span] = {}
    out: list[Piece] = []
    for unit in units:
        plans: list[_Plan] = []
        owner: list[int | None] = []  # lacuna of the unit -> its outcome
        for el, lac in zip(unit.elements, unit.lacunae, strict=True):
            notation = unit.text[lac.start - 1 : lac.end + 1]
            plan = _plan(el, lac, notation, parse_input, opts, window)
            plans.append(plan)
            if el is None:
                owner.append(None)
                continue
            sp = spans[el]
            owner.append(len(outcomes))
            gap_spans[len(outcomes)] = sp
            outcomes.append(
                GapOutcome(
                    len(outcomes),
                    el.sourceline or 0,
                    sp.start,
                    sp.end,
                    notation.strip(),
                    "left" if plan.kind != "fill" else "refused",
                    plan.reason,
                )
            )
        # the parts between the cuts, each with its lacunae (indices into this unit)
        parts: list[tuple[int, int, list[int]]] = []
        a, members = 0, []
        for k, (lac, plan) in enumerate(zip(unit.lacunae, plans, strict=True)):
            if plan.kind == "cut":
                parts.append((a, lac.start - 1, members))
                a, members = lac.end + 1, []
            else:
                members.append(k)
        parts.append((a, len(unit.text), members))
        for lo, hi, members in parts:
            if not any(plans[k].kind == "fill" for k in members):
                continue
            # a part longer than the window is restored piece by piece (epidoc_restore_pieces)
            lacs = {unit.lacunae[k].start: (unit.lacunae[k].end, plans[k].slots) for k in members}
            at = 0  # members are in text order: the first one not yet in a piece
            for a, b in pieces(unit.text, lo, hi, lacs, window):
                inside = []
                while at < len(members) and unit.lacunae[members[at]].start < b:
                    inside.append(members[at])
                    at += 1
                fill = [owner[k] for k in inside if plans[k].kind == "fill"]
                if fill:
                    out.append(
                        Piece(_strip_dots(unit.text[a:b]).strip(), [owner[k] for k in inside], fill)
                    )  # type: ignore[misc]
    return EpiDocPlan(name, data, doc, spans, outcomes, gap_spans, out)


def restore_epidoc(
    model: Any,
    path_or_xml: str | bytes | Path,
    *,
    top_k: int = 5,
    beam: int | None = None,
    unknown_width: int = 20,
    about_margin: float = 0.25,
    window: int | None = None,
    when: str | None = None,
    config: Any = None,
    device: str = "auto",
    progress: Callable[[int, int], None] | None = None,
    on_step: Callable[[], None] | None = None,
) -> EpiDocResult:
    """Fill the lacunae of the Greek edition of one EpiDoc file (module docstring).

    ``model``: a :class:`~stoicheia.inference.loading.LoadedModel` or a path for
    :func:`~stoicheia.inference.loading.load_model` (``config``/``device`` passed on).
    ``path_or_xml``: a file path, or the XML itself (``bytes``, or a ``str`` starting with
    ``<``). ``top_k``, ``beam``, ``unknown_width`` (letters of an ``extent="unknown"`` gap at
    most), ``about_margin`` and ``window`` (slots) are those of
    :func:`~stoicheia.inference.restore.restore`. ``when``: the date of the ``<change>``
    (default today, UTC, ``YYYY-MM-DD``). ``progress``: called as ``progress(done, total)``
    with the gaps to fill (``total``) and those decided so far, once before decoding and
    after each piece (a large file reports as it goes). ``on_step``: called after every
    forward pass of the decoder (the server's cancel check: an exception raised there stops
    the restoration and is raised to the caller).

    Returns an :class:`EpiDocResult`: the restored bytes (the input bytes unchanged when no
    gap was restored) and the outcome of every gap. Raises :class:`EpiDocRestoreError` (a
    ``ValueError``) for a file that is not UTF-8, malformed XML, not TEI P5, without a primary
    edition, without Greek, or without a ``<titleStmt>``; and
    :class:`~stoicheia.inference.restore.RestoreError` for an option out of range.
    """
    from stoicheia.inference.loading import LoadedModel, load_model
    from stoicheia.inference.restore import RestoreError, check_options, restore

    check_options(unknown_width=unknown_width, about_margin=about_margin, window=window)
    if top_k < 1 or (beam is not None and beam < top_k):
        raise RestoreError(f"top_k={top_k}, beam={beam}: give top_k >= 1 and beam >= top_k")
    read = _read_edition(path_or_xml)  # a file it refuses is said before a model is loaded
    loaded = (
        model if isinstance(model, LoadedModel) else load_model(model, config=config, device=device)
    )
    trained = int((loaded.config.get("data") or {}).get("seq_len") or 512)
    plan = _plan_edition(
        read, window=window or trained, unknown_width=unknown_width, about_margin=about_margin
    )
    name, data, doc, spans, outcomes = plan.source, plan.data, plan.doc, plan.spans, plan.gaps
    fills: dict[int, tuple[str, float, list[tuple[str, float]]]] = {}  # outcome index -> reading
    done = 0
    if progress is not None and plan.to_fill:
        progress(0, plan.to_fill)
    for piece in plan.pieces:
        _restore_piece(
            loaded,
            piece,
            outcomes,
            fills,
            restore,
            RestoreError,
            top_k=top_k,
            beam=beam,
            unknown_width=unknown_width,
            about_margin=about_margin,
            window=window,
            progress=(lambda done, total: on_step()) if on_step is not None else None,
        )
        done += len(piece.fill)
        if progress is not None:
            progress(done, plan.to_fill)
    if not fills:
        return EpiDocResult(name, data, outcomes)

    taken = {v for v in (e.get(_XML_ID) for e in doc.iter() if isinstance(e.tag, str)) if v}
    resp = _unique_id(RESP_ID, taken)
    edits: list[tuple[int, int, bytes]] = []
    at_byte = {sp.start: el for el, sp in spans.items()}
    for o in outcomes:
        if o.index in fills:
            f, p, alts = fills[o.index]
            span = plan.gap_spans[o.index]
            pre = _prefix(span)
            kept = _kept_attributes(data, span)  # the gap's xml:id, n, ...: links stay valid
            own = at_byte[o.start].get(_XML_ID) if any(n == "xml:id" for n, _ in kept) else None
            xid = own or _unique_id(f"{resp}-{o.index + 1}", taken)
            edits.append(
                (o.start, o.end, _supplied_xml(pre, xid, resp, f, p, alts, kept).encode("utf-8"))
            )
    when = when or _dt.datetime.now(_dt.timezone.utc).date().isoformat()
    edits += _header_edits(doc, data, spans, name, resp, loaded, len(fills), top_k, when)
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
        _parse(new, name)
    except EpiDocRestoreError as err:
        raise EpiDocRestoreError(
            f"internal: the restored file does not parse ({err}); report this file"
        ) from None
    return EpiDocResult(name, new, outcomes)
