"""The walk over a Perseus TEI P4 tree: what counts as text and where words end.

:class:`Walker` visits the elements of a parsed Perseus file (see
:mod:`stoicheia.sources.perseus_entities`) and collects, per numbered division, the Beta Code
pieces that are Greek text: the elements excluded with their content (:data:`EXCLUDED`), the
ones that are word boundaries (:data:`BLOCK`, :data:`BOUNDARY_MILESTONES`), one reading of an
``app`` or ``choice``, and untagged Latin left out, each counted. The rules and the counts are
those of :mod:`stoicheia.sources.perseus` (its module docstring, "What counts as text");
The pieces go to each context's ``pieces`` (a list, or what the reader gives: the spool of
:mod:`stoicheia.sources.perseus_spool`, which also cuts the text outside every division at the
chapter markers).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from lxml import etree

from .betacode import strip_latin_spans
from .perseus_entities import EntityTable

__all__ = [
    "BLOCK",
    "BOUNDARY_MILESTONES",
    "CITE",
    "CITE_MILESTONES",
    "CITED_DIVISIONS",
    "EXCLUDED",
    "SPLIT_MILESTONE",
    "Context",
    "Walker",
]

_DIV = re.compile(r"div\d?$")
_MARKUP_DEBRIS = re.compile(r"(?:milestone|pb|lb|note|gap)(?:\s+[\w.:-]+=\"[^\"]*\")*\s*/?>")
_QUOTES = frozenset({"quote", "q", "cit"})
_CAPWORD = re.compile(r"(?<![\w*)(/\\=+|])[A-Z][a-z]{2,}\b")
_ACCENT = re.compile(r"[/\\=]")


#: Elements dropped with their content (tails kept); see the module docstring.
EXCLUDED = frozenset(
    {
        "teiHeader",
        "note",
        "NOTE",
        "bibl",
        "listBibl",
        "speaker",
        "stage",
        "head",
        "label",
        "figure",
        "gloss",
        "docAuthor",
        "castList",
        "gap",
        "milestone",
        "pb",
        "lb",
    }
)
#: Elements that are word boundaries (a space before and after). Measured on the corpus:
#: where one of these touches letters on both sides, the words are separate (``xw/rhn<note>
#: me/xri``, ``*)odusseu\\s<quote>o(/ntina``, Pausanias' ``ou)k<pb/>e)ti/ma``); inline ones
#: (``add``, ``del``, ``supplied``, ``term``, ``num``, ``figure`` and comments) touch the
#: middle of a word (``tri/gw<figure/>non``, ``trihrar<supplied>xw=n</supplied>``).
BLOCK = frozenset(
    {
        "p",
        "l",
        "lg",
        "sp",
        "item",
        "list",
        "row",
        "cell",
        "table",
        "argument",
        "opener",
        "closer",
        "salute",
        "signed",
        "ab",
        "front",
        "back",
        "body",
        "group",
        "text",
        "trailer",
        "byline",
        "dateline",
        "epigraph",
        "quote",
        "q",
        "cit",
        "title",
        # excluded elements that still separate what is around them
        "note",
        "NOTE",
        "speaker",
        "stage",
        "head",
        "label",
        "docAuthor",
        "castList",
        "bibl",
        "listBibl",
        "gap",
        "pb",
    }
)
#: ``milestone`` units that are word boundaries (paragraphs; Bekker lines in the Eudemian
#: Ethics and Pausanias' pages sit between words without spaces). Other units (section,
#: Stephanus page...) are not: they sometimes fall inside a word (``prosoi<milestone/>
#: kodomh=sai``, Josephus).
BOUNDARY_MILESTONES = frozenset({"para", "line", "page", "mss", "chapter"})
#: Text outside every division (Plutarch's Lives have no ``div``) is split into one record
#: per ``<milestone unit="chapter" n=...>``; the text before the first one keeps ``body``.
SPLIT_MILESTONE = "chapter"
#: ``milestone`` units that are the finest citation of prose (Josephus' and Herodotus'
#: sections, Plato's Stephanus sections ``2a``, the verses of the New Testament): each starts
#: a citation line of its record (``SourceRecord.lines``). Not ``Whiston section`` (another
#: numbering of Josephus) nor pages, paragraphs or cards.
CITE_MILESTONES = frozenset({"section", "verse"})
#: Division types that are part of a citation (``Iliad 1.5``: book 1); others, a play's
#: episodes, choral odes and strophes, are structure: its lines are cited by their number alone
#: and run on through them. A division without a type counts.
CITED_DIVISIONS = frozenset(
    {"book", "chapter", "section", "letter", "speech", "oration", "poem", "hymn", "life", "essay"}
)
#: The marker of a citation point in a division's Beta Code: ``\x03<n>\x04`` (the verse
#: line's or section's number as the TEI gives it, or as counted for an unnumbered ``<l>``)
CITE = re.compile("\x03([^\x04]*)\x04")
_GREEK_LANGS = frozenset({"greek", "grc", "gr", "el"})
#: Elements that hold alternative readings, of which one is read (see :func:`_reading`).
_ONE_READING = frozenset({"app", "choice"})
#: The reading chosen, by preference: the lemma of an apparatus (else its first reading),
#: the correction, the regularisation, the expansion.
_READING_ORDER = ("lem", "corr", "reg", "expan", "rdg", "sic", "orig", "abbr")
#: Lost letters written as '!' in Beta Code inside square brackets ('[!!!]')


def _reading(el: etree._Element) -> etree._Element | None:
    """The child of an ``app``/``choice`` that is read (``None`` if it has no element)."""
    kids = [c for c in el if isinstance(c.tag, str)]
    for name in _READING_ORDER:
        for c in kids:
            if c.tag == name:
                return c
    return kids[0] if kids else None


_LANG_ATTRS = ("lang", "{http://www.w3.org/XML/1998/namespace}lang")


def _is_greek(el: etree._Element) -> bool:
    for attr in _LANG_ATTRS:
        lang = el.get(attr)
        if lang is not None and lang.strip().lower() not in _GREEK_LANGS:
            return False
    return True


class Context:
    """The record being assembled for one division: its citation parts ``cite``, the source
    ``line`` where it starts, its document ``order`` and its Beta Code ``pieces``."""

    __slots__ = ("chapter", "cite", "line", "order", "pieces", "refs", "verse")

    def __init__(
        self,
        cite: list[str],
        line: int,
        order: int,
        refs: list[str] | None = None,
        verse: list[int] | None = None,
        pieces=None,
    ) -> None:
        self.cite = cite
        self.line = line
        self.order = order
        #: the Beta Code pieces, appended in order (a list, or anything with ``append``)
        self.pieces = pieces if pieces is not None else []
        #: the divisions a classicist cites (books, a file's works; not a play's episodes)
        self.refs = refs if refs is not None else []
        #: the number of the last <l> (an unnumbered one: +1), shared with the divisions that
        #: are not cited (a play's lines run on through its episodes and choral odes)
        self.verse = verse if verse is not None else [0]
        self.chapter = ""  # the last chapter milestone in the division (Herodotus 1.1.0)

    def cite_point(self, n: str) -> None:
        """Mark a citation point (module :data:`CITE`) at the end of the pieces so far."""
        n = re.sub(r"[\s\x01-\x04]+", "", n)
        if n:
            self.pieces.append(f"\x03{'|'.join([*self.refs, n])}\x04")

    def verse_line(self, n: str | None) -> None:
        """Mark the start of a verse line ``<l n=...>``: its ``n`` as printed (``"5"``,
        ``"10a"``), or, where the TEI numbers only every fifth line, the line after the last
        one counted."""
        n = (n or "").strip()
        digits = re.match(r"\d+", n)
        if digits:
            self.verse[0] = int(digits.group())
        else:
            self.verse[0] += 1
            n = str(self.verse[0])
        self.cite_point(n)


class Walker:
    """Collects the Greek text of a Perseus tree into :class:`Context` records.

    ``table``: the file's entities (literal ``&amp;name;`` references are read with it);
    ``counts``: what is dropped, by key; ``multi_text``: the file holds several ``<text>``
    (each is then a division); ``top``: the context of text outside every division;
    ``chapter_cites``: the file numbers no section nor verse (:data:`CITE_MILESTONES`), so a
    ``<milestone unit="chapter">`` inside a division is its finest citation and starts a
    citation line (Athenaeus: book, then chapter: ``Deipnosophists 10.2``); ``pieces(line)``:
    where a new division starting at source ``line`` keeps its pieces (default: a list).
    :meth:`visit` the root with ``top``; the divisions found are in ``contexts``.
    """

    def __init__(
        self,
        table: EntityTable,
        counts: Counter[str],
        multi_text: bool,
        top: Context,
        chapter_cites: bool = False,
        pieces: Callable[[int], object] | None = None,
    ) -> None:
        self.top = top
        self.chapter_cites = chapter_cites
        self.pieces = pieces
        self.table = table
        self.counts = counts
        self.multi_text = multi_text
        self.contexts: list[Context] = []
        # literal entity references left by '&amp;name;' escapes, known names only
        self.literal_entity = re.compile(
            r"&("
            + "|".join(re.escape(n) for n in sorted(table.char, key=len, reverse=True))
            + r");"
        )

    def chunk(self, s: str | None, ctx: Context) -> None:
        if not s:
            return
        if "&" in s:
            s = self.literal_entity.sub(lambda m: self.table.char[m.group(1)], s)
            s = strip_latin_spans(s, self.counts)
        if "/>" in s or '="' in s:
            # a tag that lost its '<' (nt_gk.xml: 'proshu/cmilestone n="16" unit="verse"/>anto')
            s, n = _MARKUP_DEBRIS.subn("", s)
            self.counts["markup_debris"] += n
        caps = _CAPWORD.findall(s)
        if caps:
            # Perseus Beta Code writes Greek capitals as '*a', or (Hippocrates, Aretaeus) the
            # whole word in capitals; a capitalised ASCII word is Latin or English. A text
            # node with two of them and no Greek accent is untagged Latin (the Gellius
            # testimonium in Elegy/1_gk.xml): dropped. Isolated ones (an editor's siglum
            # "Ambr." left untagged) are only counted.
            if len(caps) >= 2 and not _ACCENT.search(s):
                self.counts["latin_chunk"] += 1
                self.counts["latin_chunk_chars"] += len(s)
                ctx.pieces.append(" ")
                return
            self.counts["latin_looking_token"] += len(caps)
        ctx.pieces.append(s)

    def _untagged_latin(self, el: etree._Element) -> bool:
        """A quotation in Latin without a ``lang`` (Elegy/1: Ausonius' ``<quote><add>de
        lascivia paginae suae</add>: nam quid Anniani...``): no Greek accent in its whole
        text and at least two capitalised ASCII words (see :meth:`chunk`)."""
        text = "".join(el.itertext())
        return len(_CAPWORD.findall(text)) >= 2 and not _ACCENT.search(text)

    def new_context(self, el: etree._Element, parent: Context, key: str) -> Context:
        cited = el.tag == "text" or (el.get("type") or "book").strip().lower() in CITED_DIVISIONS
        line = el.sourceline or parent.line
        ctx = Context(
            parent.cite + [key],
            line,
            len(self.contexts),
            parent.refs + [key] if cited else parent.refs,
            None if cited else parent.verse,
            self.pieces(line) if self.pieces is not None else None,
        )
        self.contexts.append(ctx)
        return ctx

    def visit(self, el: etree._Element, ctx: Context, key: str = "") -> None:
        tag = el.tag
        if not isinstance(tag, str):  # comment or processing instruction: only its tail
            self.chunk(el.tail, ctx)
            return
        if tag in EXCLUDED or not _is_greek(el):
            if tag == "lb":
                ctx.pieces.append("" if el.get("break") == "no" else " ")
            elif tag == "milestone":
                unit = (el.get("unit") or "").strip().lower()
                if unit in BOUNDARY_MILESTONES:
                    ctx.pieces.append(" ")
                if unit in CITE_MILESTONES and el.get("n"):
                    n = (el.get("n") or "").strip()
                    ctx.cite_point(f"{ctx.chapter}.{n}" if ctx.chapter else n)
                elif unit == SPLIT_MILESTONE:  # Herodotus 1.1.0, Plutarch's Antony 67.1
                    ctx.chapter = (el.get("n") or "").strip()
                    if self.chapter_cites and ctx is not self.top and ctx.chapter:
                        ctx.cite_point(ctx.chapter)
                if unit == SPLIT_MILESTONE and ctx is self.top:
                    n = re.sub(r"\s+", "_", (el.get("n") or "").strip())
                    ctx.pieces.append(f"\x01{n}\x02{el.sourceline or ctx.line}\x01 ")
            else:
                self.counts[f"excluded:{tag}" if tag in EXCLUDED else f"lang:{el.get('lang')}"] += 1
                if tag in BLOCK or tag not in EXCLUDED:
                    ctx.pieces.append(" ")
            self.chunk(el.tail, ctx)
            return
        if tag in _ONE_READING:
            # One reading of an apparatus or a choice, never both glued into one word.
            pick = _reading(el)
            self.counts[f"reading_left_out:{tag}"] += sum(
                1 for c in el if isinstance(c.tag, str) and c is not pick
            )
            if pick is not None:
                tail, pick.tail = pick.tail, None  # whitespace between the readings
                try:
                    self.visit(pick, ctx)
                finally:
                    pick.tail = tail
            self.chunk(el.tail, ctx)
            return
        if tag in _QUOTES and self._untagged_latin(el):
            self.counts["latin_quote"] += 1
            ctx.pieces.append(" ")
            self.chunk(el.tail, ctx)
            return
        inner = ctx
        if _DIV.match(tag) or (
            tag == "text" and self.multi_text and key and el.find("group") is None
        ):
            inner = self.new_context(el, ctx, key)
        block = tag in BLOCK or inner is not ctx
        if block:
            inner.pieces.append(" ")
        if tag == "l":
            inner.verse_line(el.get("n"))
        self.chunk(el.text, inner)
        position = 0
        for child in el:
            child_key = ""
            if isinstance(child.tag, str) and (_DIV.match(child.tag) or child.tag == "text"):
                position += 1
                n = (child.get("n") or "").strip()
                child_key = re.sub(r"\s+", "_", n) if n else str(position)
            self.visit(child, inner, child_key)
        if block:
            inner.pieces.append(" ")
        if block:
            ctx.pieces.append(" ")
        self.chunk(el.tail, ctx)
