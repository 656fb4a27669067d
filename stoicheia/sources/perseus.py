"""Reader for the Perseus Greek TEI P4 files (Beta Code), see ``shared/corpus/README.md``.

**Records.** One record per innermost numbered division that holds text: each ``div``,
``div0``..``div7`` collects the text that lies in it but outside its child divisions (so a
book with a preface and chapters gives one record for the preface and one per chapter).
Files with several ``<text>`` elements (``<group>``) put the text's ``n`` first. The id is
``<path relative to root>#<text n>.<div1 n>.<div2 n>...``, e.g. ``Homer/hom.il_gk.xml#1``
(Iliad, book 1: the Iliad's books are not subdivided and card milestones are not used; records
may be long, the lead cuts them at word boundaries later); a division without ``n`` takes its
1-based position among its sibling divisions. Text outside every division is cut at
``<milestone unit="chapter" n=.../>`` (Plutarch's Lives have no ``div``: ``plut.ant_gk.xml#67``
is Antony chapter 67); what has no chapter either (short Lucian pieces) has citation ``body``.
A repeated id gets ``~2``, ``~3``... in document order. Records come in document order of
their division's start; ``line`` is that start. ``work`` is the relative path, except that
the Loeb and Teubner editions of one Plutarch work (``plut.081_loeb_gk.xml``,
``plut.081_teubner_gk.xml``) share ``Plutarch/plut.081_gk.xml``, so the held-out split never
trains on one edition and tests on the other.

**What counts as text.** Only the Greek inside ``<text>``. Excluded with their content
(their *tail* text still belongs to the enclosing line or paragraph): the ``teiHeader``,
``note``/``NOTE`` (editorial notes, mostly English), ``bibl``/``listBibl`` (references),
``speaker`` and ``stage`` (speaker names, stage directions: the editor's labels, not lines),
``head`` (titles), ``label`` (the Anthology's lemmata such as ``εἰς τὸν αὐτόν`` and list
numbers: Greek, but paratext repeated hundreds of times rather than poems), ``figure``,
``gloss`` (English), ``docAuthor``, ``castList``, ``gap`` (a word boundary: a lacuna is never
read as joined text), ``milestone``/``pb`` (empty; see below), ``lb`` (a word boundary,
except ``break="no"``), comments, any element whose ``lang`` is not Greek (``foreign``/``p``/
``quote`` in Latin or English), and quotations in Latin that carry no ``lang`` (no Greek
accent and two capitalised ASCII words: the Latin testimonia of the Elegy volumes). Kept: ``num`` (Greek numerals and Euclid's point labels such
as ``ΑΒ`` are Greek text in the manuscripts), ``add``/``del``/``supplied``/``sic`` (their
text, without adding brackets); of ``<app>`` (``<lem>``/``<rdg>``) and ``<choice>``
(``<sic>``/``<corr>``, ``<orig>``/``<reg>``, ``<abbr>``/``<expan>``) one reading only (lemma,
correction, regularisation, expansion; the others counted ``reading_left_out:<tag>``), ``title`` (Greek document titles such as ``ΨΗΦΙΣΜΑ`` inside
the speeches), ``argument`` (Diodorus' Greek book summaries), ``opener``/``salute``,
``quote``/``q``/``cit`` (quotations are Greek text), ``hi``, ``term``, tables and lists.
Word boundaries (decided by measuring where each element touches letters on both sides, see
:data:`BLOCK`): block elements (``p``, ``l``, ``sp``, ``quote``, ``q``, ``title``...), the
excluded ``note``, ``head``, ``speaker``, ``label``, ``bibl``, ``gap``, ``pb``, and milestones of
the units in :data:`BOUNDARY_MILESTONES`; not ``add``/``del``/``supplied``/``term``/``num``,
``figure``, comments, or section/page milestones, which fall inside words, so
``<term>o(mo</term>ke/leuqon`` stays one word and ``word<note>..</note> next`` keeps its
words apart and whole. A Beta Code hyphen at the end of a source line followed by a letter on
the next line is a hyphenated word and is joined (``gramma-\\ntistou=`` -> ``γραμματιστοῦ``).

**Entities.** The files use SGML entities of a DTD that is not shipped. Each reference
``&name;`` in the raw file is replaced by one private-use character before parsing (lxml,
``recover=False``, no DTD, no network); the Beta Code is converted; then the placeholder is
expanded from :data:`ENTITIES` (or the file's own ``<!ENTITY name "value">`` declarations,
or else the standard ISO/HTML sets of :mod:`html.entities`: ``&hellip;`` ``&amacr;``
``&times;`` ``&acute;``...), so ``&lpar;`` becomes ``(`` and never a rough breathing. Header entities (``&responsibility;``,
``&fund.NEH;``...) expand to nothing. ``&dot;`` marks a word hyphenated across a line break
in one Plutarch file and joins the word. References escaped as ``&amp;ldquo;`` in some
Plutarch files are entity references too. An unknown entity raises :class:`SourceError`
naming the file and line; malformed XML raises :class:`SourceError` with lxml's message.

**Counts.** ``counts`` (optional ``collections.Counter``) receives ``records``, ``chars``,
``excluded:<tag>`` (elements dropped with their content), ``lang:<value>`` (non-Greek
elements dropped), ``latin_span``, ``latin_chars``, ``latin_unterminated``,
``beta_symbol_code``, ``beta_format_code``, ``digit``, ``stray_char``, ``repaired_*`` (see
:mod:`stoicheia.sources.betacode`), ``latin_quote`` / ``latin_chunk`` / ``latin_chunk_chars``
(untagged Latin dropped), ``lost_letter_mark`` (``[!!!]``: each ``!`` inside square
brackets is a lost letter, written ``[...]`` for the Leiden reading), ``latin_looking_token`` (capitalised ASCII words left in the Beta
Code: a leak measure), ``markup_debris``, ``hyphen_joined``, ``numeral_sign_from_acute`` (a Beta Code acute left on a consonant, ``lb/`` = λβʹ, written as the numeral sign U+02B9), ``empty_division`` (divisions
with no Greek text, e.g. only a ``head``) and ``duplicate_id``.
"""

from __future__ import annotations

import html.entities
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType

from lxml import etree

from .betacode import beta_to_unicode, strip_latin_spans
from .record import SourceError, SourceRecord, read_utf8, relative_name, unique_citation

__all__ = ["ENTITIES", "read_perseus"]

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
_HYPHEN = re.compile(r"(?<=[A-Za-z=/\\|)(+])-[ \t]*\n\s*(?=[A-Za-z*])")
_DIV = re.compile(r"div\d?$")
_MARKUP_DEBRIS = re.compile(r"(?:milestone|pb|lb|note|gap)(?:\s+[\w.:-]+=\"[^\"]*\")*\s*/?>")
_QUOTES = frozenset({"quote", "q", "cit"})
_CAPWORD = re.compile(r"(?<![\w*)(/\\=+|])[A-Z][a-z]{2,}\b")
_ACCENT = re.compile(r"[/\\=]")
_EDITION = re.compile(r"_(loeb|teubner)(_gk\.xml)$")

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
_SPLIT = re.compile("\x01([^\x02]*)\x02(\\d+)\x01")
_GREEK_LANGS = frozenset({"greek", "grc", "gr", "el"})
#: Elements that hold alternative readings, of which one is read (see :func:`_reading`).
_ONE_READING = frozenset({"app", "choice"})
#: The reading chosen, by preference: the lemma of an apparatus (else its first reading),
#: the correction, the regularisation, the expansion.
_READING_ORDER = ("lem", "corr", "reg", "expan", "rdg", "sic", "orig", "abbr")
#: Lost letters written as '!' in Beta Code inside square brackets ('[!!!]')
_LOST_MARKS = re.compile(r"\[[^\[\]]*!+[^\[\]]*\]")
#: '/' left after a Greek consonant by the Beta Code conversion: the numeral sign
_STRAY_ACUTE = re.compile("(?<=[βγδζθκλμνξπρσςτφχψΒΓΔΖΘΚΛΜΝΞΠΡΣΤΦΧΨ])/")


def _reading(el: etree._Element) -> etree._Element | None:
    """The child of an ``app``/``choice`` that is read (``None`` if it has no element)."""
    kids = [c for c in el if isinstance(c.tag, str)]
    for name in _READING_ORDER:
        for c in kids:
            if c.tag == name:
                return c
    return kids[0] if kids else None


_LANG_ATTRS = ("lang", "{http://www.w3.org/XML/1998/namespace}lang")


class _Table:
    """Entity name <-> private-use placeholder, for one file."""

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


def _replace_entities(raw: str, table: _Table, file: str) -> str:
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
                "ENTITIES in stoicheia/sources/perseus.py, or declare it in the file's "
                "DOCTYPE internal subset",
            )
        if name in _JOINERS:
            return "\x00J"  # removed with the following whitespace below
        return table.char[name]

    out = _ENTITY_REF.sub(sub, raw)
    if "\x00J" in out:
        out = re.sub(r"\x00J\s*", "", out)
    return out


def _work_id(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    return _EDITION.sub(r"\2", rel) if name.startswith("plut.") else rel


def _is_greek(el: etree._Element) -> bool:
    for attr in _LANG_ATTRS:
        lang = el.get(attr)
        if lang is not None and lang.strip().lower() not in _GREEK_LANGS:
            return False
    return True


class _Context:
    """The record being assembled for one division."""

    __slots__ = ("cite", "line", "order", "pieces")

    def __init__(self, cite: list[str], line: int, order: int) -> None:
        self.cite = cite
        self.line = line
        self.order = order
        self.pieces: list[str] = []


class _Walker:
    def __init__(
        self, table: _Table, counts: Counter[str], multi_text: bool, top: _Context
    ) -> None:
        self.top = top
        self.table = table
        self.counts = counts
        self.multi_text = multi_text
        self.contexts: list[_Context] = []
        # literal entity references left by '&amp;name;' escapes, known names only
        self.literal_entity = re.compile(
            r"&("
            + "|".join(re.escape(n) for n in sorted(table.char, key=len, reverse=True))
            + r");"
        )

    def chunk(self, s: str | None, ctx: _Context) -> None:
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

    def new_context(self, el: etree._Element, parent: _Context, key: str) -> _Context:
        ctx = _Context(parent.cite + [key], el.sourceline or parent.line, len(self.contexts))
        self.contexts.append(ctx)
        return ctx

    def visit(self, el: etree._Element, ctx: _Context, key: str = "") -> None:
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


def read_perseus(
    path: Path, root: Path | None = None, *, counts: Counter[str] | None = None
) -> Iterator[SourceRecord]:
    """Yield the records of one Perseus TEI file (Beta Code) as NFC Unicode Greek.

    ``path``: the ``.xml`` file; ``root``: the corpus directory the ids are relative to
    (``None``: the file name). ``counts``: optional counter of what was dropped (keys in the
    module docstring). Raises :class:`SourceError` on undecodable bytes, an unknown entity or
    malformed XML (file, line and fix in the message). Records whose division holds no Greek
    are not yielded (counted as ``empty_division``).
    """
    path = Path(path)
    file = str(path)
    counts = counts if counts is not None else Counter()
    rel = relative_name(path, root)
    raw = read_utf8(path)
    table = _Table(_declared_entities(raw))
    root_el = _parse(_replace_entities(raw, table, file), file)
    if root_el.tag != "TEI.2":
        # A TEI P5 file (namespaced <TEI>) is Unicode, not Beta Code: never read it here.
        raise SourceError(
            file,
            root_el.sourceline or 1,
            f"root element is {root_el.tag}, not the TEI P4 <TEI.2> of Perseus",
            "read .xml files with stoicheia.sources.read_tei (or `stoicheia convert`), which "
            "sends TEI P5 / EpiDoc files to read_epidoc",
        )
    content_texts = [t for t in root_el.iter("text") if t.find(".//text") is None]
    first = content_texts[0] if content_texts else root_el
    top = _Context([], first.sourceline or 1, -1)
    walker = _Walker(table, counts, multi_text=len(content_texts) > 1, top=top)
    walker.visit(root_el, top)
    contexts = [top, *walker.contexts]

    segments = [
        (ctx, *seg) for ctx in sorted(contexts, key=lambda c: c.order) for seg in _segments(ctx)
    ]
    _check_beta_code([beta for *_, beta in segments], segments[0][2] if segments else 1, file)
    seen: Counter[str] = Counter()
    work = _work_id(rel)
    for ctx, cite, line, beta in segments:
        beta = _HYPHEN.sub(lambda m: _count(counts, "hyphen_joined"), beta)
        text = beta_to_unicode(beta, table.expand, counts)
        if "/" in text:
            # an acute that Beta Code could not put on a consonant ("<add>lb/</add>" in
            # Dionysius) is the numeral sign of a numeral letter (λβʹ), never a letter
            # division inside a word
            text, k = _STRAY_ACUTE.subn("\u02b9", text)  # U+0374 in NFC
            counts["numeral_sign_from_acute"] += k
        if "!" in text and "[" in text:
            text = _LOST_MARKS.sub(lambda m: _lost_marks(m, counts), text)
        if not text:
            if ctx is not top:
                counts["empty_division"] += 1
            continue
        cite = unique_citation(cite, seen, counts)
        counts["records"] += 1
        counts["chars"] += len(text)
        yield SourceRecord(
            id=f"{rel}#{cite}",
            text=text,
            source="perseus",
            work=work,
            file=file,
            line=line,
            known=MappingProxyType({}),
        )


#: A Beta Code word: ASCII letters with the Beta Code signs; one "accented" carries an acute,
#: grave or circumflex. Polytonic Greek accents nearly every word (at least 63% of the words
#: of every Perseus file here); English or Latin in a P4 file without ``lang`` almost none.
_ASCII_WORD = re.compile(r"[A-Za-z*()/\\=+|']*[A-Za-z][A-Za-z*()/\\=+|']*")
_ACCENTED = re.compile(r"[/\\=]")
MIN_ACCENTED_WORDS, MIN_WORDS_CHECKED = 0.2, 30


def _check_beta_code(betas: list[str], line: int, file: str) -> None:
    """Refuse a TEI P4 file whose text is not Beta Code Greek: an English (or Latin)
    translation without a ``lang`` attribute would otherwise be converted letter by letter
    into Greek-looking nonsense and trained on. Taken as not Greek: at least
    :data:`MIN_WORDS_CHECKED` ASCII words of which fewer than :data:`MIN_ACCENTED_WORDS`
    carry a Beta Code accent. Raises :class:`SourceError` naming the file and the fix."""
    words = accented = 0
    for beta in betas:
        for w in _ASCII_WORD.findall(beta):
            words += 1
            accented += bool(_ACCENTED.search(w))
    if words >= MIN_WORDS_CHECKED and accented < MIN_ACCENTED_WORDS * words:
        raise SourceError(
            file,
            line,
            f"the text is not Beta Code Greek: {accented} of {words} words carry a Greek accent "
            f"(Greek texts: most of them; this reads as English or Latin without a lang attribute)",
            'give the Greek (_gk) file, or mark the language (<text lang="en">) so that it is left out',
        )


def _segments(ctx: _Context) -> Iterator[tuple[str, int, str]]:
    """(citation, line, Beta Code) of a context, split at chapter markers (top level only)."""
    joined = "".join(ctx.pieces)
    cite = ".".join(ctx.cite) or "body"
    if "\x01" not in joined:
        yield cite, ctx.line, joined
        return
    parts = _SPLIT.split(joined)  # [text, n, line, text, n, line, text, ...]
    yield cite, ctx.line, parts[0]
    for i in range(1, len(parts), 3):
        yield parts[i] or str(i // 3 + 1), int(parts[i + 1]), parts[i + 2]


def _lost_marks(m: re.Match[str], counts: Counter[str]) -> str:
    """``[!!!]``: each '!' inside square brackets is a lost letter, written as a Leiden dot."""
    counts["lost_letter_mark"] += m.group().count("!")
    return m.group().replace("!", ".")


def _count(counts: Counter[str], key: str) -> str:
    counts[key] += 1
    return ""
