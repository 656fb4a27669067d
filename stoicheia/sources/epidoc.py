"""Reader for EpiDoc / TEI P5 files (I.Sicily; the same elements as papyri.info's DDbDP and
First1KGreek), see ``shared/corpus/README.md``.

**Records.** The Greek of the edition division only: ``<div type="edition">`` whose
``subtype`` is absent or ``primary`` (the ``simple-lemmatized`` and ``transliteration``
editions repeat the text and are counted ``edition_skipped:<subtype>``); the header,
apparatus, translation, commentary and bibliography divisions are never read. One record per
``<div type="textpart">`` that holds Greek (id ``<file>#<n>``, nested parts joined with
``.``), else one per edition (id ``<file>#1``). ``work`` is the file (one inscription); the
language is the nearest ``xml:lang`` (``grc`` and ``grc-*`` in Greek script are Greek; others,
such as ``la``, ``xly-Grek`` or ``grc-Latn``, are left out and counted ``lang:<value>``), and
when no ancestor has one, ``<textLang mainLang>`` of the header.

**Leiden semantics.** The reader writes each element as Leiden notation and the text goes
through :func:`stoicheia.text.encode.encode_text` (the one Leiden parser,
:mod:`stoicheia.text.leiden`), so a ``<gap>`` and a ``[...]`` typed in a plain text mean the
same thing:

================================  =========================================================
``<gap unit="character"           ``[....]`` one lost letter per dot: a real lacuna of known
quantity="N"/>``                  width (``reason="illegible"`` too: the letters are unknown)
``precision="low"`` (+ N)         ``[-ca.N-]``: about N; ``atLeast``/``atMost`` ``[.a-b.]``;
                                  ``atLeast`` alone ``[-min.a-]``, ``atMost`` alone
                                  ``[-max.b-]``
``extent="unknown"``              ``[---]``: unknown width (also a unit such as ``cm``:
                                  counted ``gap_unit:<unit>``)
no readable width                 ``[---]``, an unknown width, counted by what was wrong:
                                  ``gap_quantity_unreadable`` (``quantity`` not a whole
                                  number > 0: ``"lots"``, ``"0"``, ``"3.5"``),
                                  ``gap_range_unreadable`` (``atLeast``/``atMost`` not a
                                  pair of whole numbers 0 < low <= high),
                                  ``gap_width_unstated`` (no width attribute and no
                                  ``extent``), ``gap_extent:<value>`` (a misspelt ``extent``)
wider than ``MAX_GAP_LETTERS``    ``[---]``, counted ``gap_too_wide`` (a typo or a whole
(10,000)                          column: too long to count; the Leiden parser's limit)
``unit="line"``                   ``[---]`` between word breaks: a lost line has unknown
                                  width (counted ``gap_lines``)
``<supplied reason="lost">``      ``[letters]`` (option ``supplied_lost="text"``, default:
                                  the editor's letters kept as letters where they stand) or
                                  one lost-letter slot per letter (``"lacuna"``)
``<supplied reason="omitted">``   ``⟨letters⟩`` kept (``subaudible`` too)
``<supplied reason="undefined"    ``⸢letters⸣`` kept (letters read by an earlier editor)
evidence="previouseditor">``
``<supplied reason=               left out (an editor's gloss, not text), counted
"explanation">``
``<surplus>``                     ``{letters}``: left out without a word break
``<del>``                         ``⟦letters⟧`` kept for ``rend="erasure"``; inside
                                  ``<subst>`` (``rend="corrected"``) left out
``<unclear>``                     letters with a dot below: kept, counted uncertain
``<expan>/<abbr>/<ex>``           ``abbr(ex)`` (option ``expansions="expanded"``, default)
                                  or ``abbr`` alone (``"abbreviated"``); ``<am>`` (the
                                  abbreviation mark) is never a letter
``<choice>``                      one reading: ``<reg>`` (or ``<orig>`` with option
                                  ``choice="original"``), ``<corr>`` (or ``<sic>``),
                                  ``<expan>`` (or ``<abbr>``); of an editor's alternatives
                                  (``<unclear>``/``<unclear>``, ``<seg>``/``<seg>``) the
                                  first, its letters uncertain (dot below); never both: the
                                  others counted ``reading_left_out:<tag>``
                                  (:mod:`stoicheia.sources.epidoc_choice`)
``<lb/>`` / ``<lb break="no"/>``  a word break / nothing (the word goes on; the layout
                                  whitespace around it is ignored); a hyphen typed before an
                                  ``<lb/>`` after a letter (``χρη-<lb/>στέ``) divides a word:
                                  removed, the word goes on (counted ``hyphen_joined``)
``<g>``                           no letter; a word break, except inside a ``<w>``
``<g type="apostrophe"/>``        papyri.info's scribal apostrophe (also ``ref="#apostrophe"``):
                                  between two letters (``Ἀπολ<g type="apostrophe"/>λωνίου``)
                                  no letter and no word break (``apostrophe_in_word``);
                                  elsewhere the apostrophe U+2019 (elision after a letter)
``<app>``                         the ``<lem>`` (else the first ``<rdg>``); the other readings
                                  left out, counted ``reading_left_out:<tag>``
``<supplied reason="lost">``      dashes typed as the supplement (``— —``, a legacy I.Sicily
with dashes                       encoding): ``[---]``, a lacuna of unknown width (counted
                                  ``supplied_dashes_lacuna``)
``<space>``                       a word break (an uninscribed space)
``<num>``, ``<w>``, ``<name>``,   their text (the elements of ``_TEXT_ELEMENTS``: also
``<persName>``, ...               ``<placeName>``, ``<roleName>``, ``<hi>``, ``<seg>``,
                                  ``<add>``, ``<c>``, ``<l>``, ``<lg>``, ``<measure>``, ...)
any other element                 its text is kept (an inline element of the edition wraps
                                  letters of the text far more often than not, and a letter
                                  dropped is lost for good), counted
                                  ``unknown_element:<name>`` so a new kind of markup shows
                                  in ``stats.json`` (``reader_counts``)
``<orig>`` outside ``<choice>``   its letters, lower-cased (a diplomatic transcription in
                                  capitals: the capitals are not the editor's; option
                                  ``orig_case="as written"`` keeps them, for the EpiDoc
                                  restorer, which fills a capital stretch in capitals)
``<note>``, ``<certainty>``,      left out with their content, counted ``excluded:<tag>``,
``<index>`` (with its ``<term>``  never glued into a word (``_EXCLUDED``: also ``<desc>``,
entries), ``<bibl>``,             ``<link>``, ``<milestone>``, ``<cb>``, ``<pb>``,
``<figure>``, ``<fw>``, ...       ``<head>``, ``<ptr>``, ``<interp>``, ``<span>``, ...)
``<ref>``                         left out (``excluded:ref``) when it holds no Greek letter
                                  (a footnote mark, a pointer); else its text
``&name;`` declared in the        expanded (counted ``entity_expanded``); an external
DOCTYPE                           (``SYSTEM``/``PUBLIC``) or undeclared entity is never read
                                  and the file is refused (:mod:`.xml_entities`)
================================  =========================================================

Brackets typed as characters in the XML text would be read as Leiden; they are removed and
counted ``literal_bracket`` (``\\`` too, the opening sign of ``\\ /``), and ``+`` (a run of
them is a lacuna in Leiden) ``literal_plus``. Counts go to ``counts`` like the other readers (``records``,
``chars``, and the kinds above).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from lxml import etree

from .epidoc_choice import choose
from .record import SourceError, SourceRecord, read_utf8, relative_name, unique_citation
from .xml_entities import XmlReadError, parse_tei

__all__ = [
    "TEI_NS",
    "EpiDocOptions",
    "read_epidoc",
    "is_tei_p5",
    "is_greek_lang",
    "unit_language",
    "unit_leiden",
]

TEI_NS = "http://www.tei-c.org/ns/1.0"
_T = "{" + TEI_NS + "}"
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_BRACKET_CHARS = re.compile("[\\[\\](){}<>⟨⟩⟦⟧〈〉〚〛⸢⸣⌈⌉⸤⸥⌊⌋˹˺\u0323\\\\]")
#: "+" typed in the XML text: Leiden would read a run of them as lost letters (EpiDoc writes a
#: loss as <gap>, a cross as <g>); removed and counted ``literal_plus``
_PLUS = re.compile("\\+")
_WS = re.compile(r"\s+")
#: The widest gap written as counted letters: stoicheia.text.leiden_segments.MAX_LACUNA_WIDTH (not
#: imported: sources sit upstream of text).
MAX_GAP_LETTERS = 10_000
#: Leiden brackets by kind (see stoicheia.text.leiden)
_BRACKETS = {
    "lost": ("[", "]"),
    "omitted": ("⟨", "⟩"),
    "erased": ("⟦", "⟧"),
    "surplus": ("{", "}"),
    "partly_lost": ("⸢", "⸣"),
    "abbreviation": ("(", ")"),
}
#: elements left out with their content, counted ``excluded:<name>`` (their tail is read):
#: the editor's notes and apparatus, index entries (``<index><term>``), bibliography,
#: pictures, running heads, pointers and the TEI's other annotations that stand in a text
#: but are not its letters (``model.noteLike``, ``model.global.meta``, ``model.milestoneLike``)
_EXCLUDED = frozenset(
    """note noteGrp certainty precision respons desc link linkGrp milestone cb gb pb handShift
    fw figure figDesc graphic media index interp interpGrp span spanGrp alt altGrp join joinGrp
    anchor ptr bibl biblStruct listBibl witDetail head addSpan delSpan damageSpan metamark""".split()
)
#: elements that break words where they stand
_BREAKS = frozenset({"milestone", "cb", "gb", "pb", "head", "ab", "l", "lg", "p", "div"})
#: elements whose content is text of the edition, read as it stands (the other elements the
#: walker does not handle by name are read the same way but counted ``unknown_element:<name>``)
_TEXT_ELEMENTS = frozenset(
    {
        "w",
        "name",
        "persName",
        "placeName",
        "roleName",
        "orgName",
        "geogName",
        "rs",
        "num",
        "measure",
        "hi",
        "seg",
        "add",
        "c",
        "l",
        "lg",
        "ab",
        "p",
        "div",
        "foreign",
        "abbr",
        "ex",
        "reg",
        "corr",
        "sic",
        "ref",
    }
)
_WHOLE = re.compile(r"[0-9]+")
_GREEK_IN = re.compile("[\u0370-\u03ff\u1f00-\u1fff]")
_SPECIAL_IN_SQUARE = re.compile("([.\\d\\-\u2010-\u2015\u2212]+)")
#: dashes typed inside <supplied reason="lost"> ("— —", a legacy I.Sicily encoding of a
#: lacuna of unknown width): spaces between the dashes belong to the run
_DASHES_IN_SQUARE = re.compile("([\\-\u2010-\u2015\u2212](?:\\s*[\\-\u2010-\u2015\u2212])*)")
_GAP = "\x00"  # marks a piece that is Leiden already (a lacuna)
#: hyphens that divide a word at a line end (before an <lb/>)
_HYPHENS = frozenset("-\u00ad\u2010\u2011=\u2e17\u2e40")
#: stand-in for <g type="apostrophe"/>, resolved by _Emitter.leiden once both sides are known
_APOSTROPHE = "\ue0f1"
#: characters skipped when looking for the letter beside an apostrophe: Leiden brackets
#: and the dot below
_SKIP = frozenset("[](){}<>⟨⟩⟦⟧〈〉〚〛⸢⸣⌈⌉⸤⸥⌊⌋˹˺\u0323")


@dataclass(frozen=True)
class EpiDocOptions:
    """Choices of the EpiDoc reader (see the module docstring).

    ``supplied_lost``: ``"text"`` (keep the editor's letters) or ``"lacuna"`` (a lost-letter
    slot per supplied letter). ``expansions``: ``"expanded"`` or ``"abbreviated"``.
    ``choice``: ``"regularised"`` (``reg``/``corr``) or ``"original"`` (``orig``/``sic``).
    ``orig_case``: the letters of an ``<orig>`` outside ``<choice>`` ``"lower"``-cased (the
    training data: a diplomatic transcription's capitals are not the editor's) or ``"as
    written"`` (:mod:`stoicheia.inference.epidoc_restore`: a gap among capitals is filled in
    capitals, as ``restore`` does for the same Leiden text). Raises ``ValueError`` for another
    value.
    """

    supplied_lost: str = "text"
    expansions: str = "expanded"
    choice: str = "regularised"
    orig_case: str = "lower"

    def __post_init__(self) -> None:
        for name, allowed in (
            ("supplied_lost", ("text", "lacuna")),
            ("expansions", ("expanded", "abbreviated")),
            ("choice", ("regularised", "original")),
            ("orig_case", ("lower", "as written")),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"EpiDocOptions.{name} = {getattr(self, name)!r}; choose one of {allowed}"
                )


def is_tei_p5(root: etree._Element) -> bool:
    """True for a TEI P5 document (a ``<TEI>`` root in the TEI namespace)."""
    return isinstance(root.tag, str) and root.tag == _T + "TEI"


def _local(el: etree._Element) -> str:
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


@dataclass
class _Emitter:
    """Collects ``(text, kind)`` pieces; :meth:`leiden` joins them into Leiden text."""

    opts: EpiDocOptions
    counts: Counter
    pieces: list[tuple[str, str | None]] = field(default_factory=list)

    def text(self, s: str | None, kind: str | None, in_w: bool) -> None:
        if not s:
            return
        if "+" in s:
            s, k = _PLUS.subn("", s)
            self.counts["literal_plus"] += k
        if _BRACKET_CHARS.search(s):
            s, k = _BRACKET_CHARS.subn("", s)
            self.counts["literal_bracket"] += k
        self.pieces.append((s, kind))

    def raw(self, s: str) -> None:
        self.pieces.append((s, _GAP))

    def strip_trailing_space(self) -> None:
        """Drop layout whitespace before ``<lb break="no"/>`` (the word goes on)."""
        while self.pieces:
            s, kind = self.pieces[-1]
            if kind == _GAP:
                return
            t = s.rstrip()
            if t:
                self.pieces[-1] = (t, kind)
                return
            self.pieces.pop()

    def line_end_hyphen(self) -> bool:
        """At a ``<lb/>``: if the text before it ends in a letter and a hyphen (``χρη-``, a
        word divided at the line end in the legacy way), remove the hyphen and the layout
        whitespace and return True (the word goes on across the line, like ``break="no"``)."""
        k = len(self.pieces) - 1
        while k >= 0 and self.pieces[k][1] != _GAP and not self.pieces[k][0].strip():
            k -= 1
        if k < 0 or self.pieces[k][1] == _GAP:
            return False
        s, kind = self.pieces[k]
        t = s.rstrip()
        if not t or t[-1] not in _HYPHENS:
            return False
        before = t[:-1] or (
            self.pieces[k - 1][0] if k > 0 and self.pieces[k - 1][1] != _GAP else ""
        )
        if not before or not (before[-1].isalpha() or unicodedata.combining(before[-1])):
            return False
        del self.pieces[k + 1 :]
        if t[:-1]:
            self.pieces[k] = (t[:-1], kind)
        else:
            del self.pieces[k]
        self.counts["hyphen_joined"] += 1
        return True

    @staticmethod
    def _bracket(body: str, kind: str) -> str:
        if not body.strip():
            return body
        lead = body[: len(body) - len(body.lstrip())]
        trail = body[len(body.rstrip()) :]
        o, c = _BRACKETS[kind]
        return lead + o + _WS.sub(" ", body.strip()) + c + trail

    def leiden(self) -> str:
        out: list[str] = []
        i = 0
        p = self.pieces
        while i < len(p):
            s, kind = p[i]
            if kind is None or kind == _GAP:
                out.append(s)
                i += 1
                continue
            j = i
            buf = []
            while j < len(p) and p[j][1] == kind:
                buf.append(p[j][0])
                j += 1
            body = "".join(buf)
            if kind == "lost":
                # dashes typed as the supplement ("— —") are a lacuna of unknown width
                for piece in _DASHES_IN_SQUARE.split(body):
                    if _DASHES_IN_SQUARE.fullmatch(piece):
                        self.counts["supplied_dashes_lacuna"] += 1
                        out.append("[---]")
                        continue
                    # '.' and digits inside [ ] are Leiden widths: punctuation that the
                    # editor supplied goes outside the brackets ("[. ὅσον]" -> ". [ὅσον]")
                    for part in _SPECIAL_IN_SQUARE.split(piece):
                        out.append(
                            self._bracket(part, kind)
                            if part and not _SPECIAL_IN_SQUARE.fullmatch(part)
                            else part
                        )
            else:
                out.append(self._bracket(body, kind))
            i = j
        text = "".join(out)
        if _APOSTROPHE in text:
            text = self._apostrophes(text)
        return _WS.sub(" ", text).strip()

    def _apostrophes(self, text: str) -> str:
        """Resolve the ``<g type="apostrophe"/>`` stand-ins: inside a word (a letter on both
        sides, Leiden brackets between allowed) the scribe's apostrophe between two letters
        (``Ἀπολ’λωνίου``) is no word break and no letter: removed (counted
        ``apostrophe_in_word``); elsewhere it is the apostrophe U+2019 (elision after a letter)."""
        out = []
        for k, c in enumerate(text):
            if c != _APOSTROPHE:
                out.append(c)
                continue
            a = k - 1
            while a >= 0 and (text[a] in _SKIP or text[a] == _APOSTROPHE):
                a -= 1
            b = k + 1
            while b < len(text) and (text[b] in _SKIP or text[b] == _APOSTROPHE):
                b += 1
            before = a >= 0 and (text[a].isalpha() or unicodedata.combining(text[a]) > 0)
            after = b < len(text) and text[b].isalpha()
            if before and after:
                self.counts["apostrophe_in_word"] += 1
            else:
                self.counts["apostrophe"] += 1
                out.append("\u2019")
        return "".join(out)


class _Walker:
    """Writes the elements of an edition as Leiden pieces into an :class:`_Emitter`.

    ``gap_mark``: when set, each ``<gap>`` element is recorded in ``gaps`` (in order) and the
    mark is written just before its lacuna, so a caller can tell the lacunae of ``<gap>`` from
    those the reader makes of other markup (:func:`unit_leiden`)."""

    def __init__(self, opts: EpiDocOptions, counts: Counter, gap_mark: str | None = None) -> None:
        self.opts = opts
        self.counts = counts
        self.gap_mark = gap_mark
        self.gaps: list[etree._Element] = []

    def visit(
        self,
        el: etree._Element,
        em: _Emitter,
        kind: str | None,
        lang: str | None,
        in_w: bool,
        tail: bool = True,
    ) -> None:
        name = _local(el)
        if not name:  # comment / processing instruction
            if tail:
                em.text(el.tail, kind, in_w)
            return
        el_lang = el.get(_XML_LANG)
        if el_lang is not None and not is_greek_lang(el_lang) and is_greek_lang(lang):
            self.counts[f"lang:{el_lang}"] += 1
            em.text(" ", None, in_w)
        elif name in _EXCLUDED:
            self.counts[f"excluded:{name}"] += 1
            if name in _BREAKS:
                em.text(" ", None, in_w)
        elif name == "lb":
            if em.line_end_hyphen() or el.get("break") == "no":
                em.strip_trailing_space()
                if tail and el.tail:
                    em.text(el.tail.lstrip(), kind, in_w)
                return
            em.text(" ", None, in_w)
        elif name == "gap":
            self._gap(el, em)
        elif name == "g" and _is_apostrophe(el):
            # papyri.info's scribal apostrophe (Ἀπολ<g type="apostrophe"/>λωνίου): never a
            # word break inside a word; resolved when the text on both sides is known
            em.pieces.append((_APOSTROPHE, kind))
        elif name == "g":
            self.counts["symbol"] += 1
            if not in_w:
                em.text(" ", None, in_w)
        elif name == "app":
            self._app(el, em, kind, lang, in_w)
        elif name == "space":
            self.counts["space"] += 1
            em.text(" ", None, in_w)
        elif name == "choice":
            self._choice(el, em, kind, lang, in_w)
        elif name == "expan":
            self._expan(el, em, kind, lang, in_w)
        elif name == "am":
            self.counts["abbreviation_mark"] += 1
        elif name == "subst":
            for child in el:
                if _local(child) == "del":
                    self.counts["del_corrected"] += 1
                    em.text(child.tail, kind, in_w)
                else:
                    self.visit(child, em, kind, lang, in_w)
        elif name == "supplied":
            reason = el.get("reason", "")
            if reason == "lost":
                if self.opts.supplied_lost == "lacuna":
                    n = _letters("".join(el.itertext()))
                    self.counts["supplied_as_lacuna"] += n
                    if n:
                        em.raw("[" + "." * n + "]")
                else:
                    self._children(el, em, "lost", lang, in_w)
            elif reason in ("omitted", "subaudible"):
                self._children(el, em, "omitted", lang, in_w)
            elif reason == "explanation":
                self.counts["supplied_explanation"] += 1
            else:  # undefined (previous editor) and the rest
                self.counts[f"supplied_{reason or 'no_reason'}"] += 1
                self._children(el, em, "partly_lost", lang, in_w)
        elif name == "surplus":
            self._children(el, em, "surplus", lang, in_w)
        elif name == "del":
            if el.get("rend") == "corrected":
                self.counts["del_corrected"] += 1
            else:
                self._children(el, em, "erased", lang, in_w)
        elif name == "unclear":
            self._dotted(el, em, kind, lang, in_w)
        elif name == "ref" and not _GREEK_IN.search("".join(el.itertext())):
            # a pointer or a footnote mark ("1", "cf. l. 3"): not text; a <ref> that wraps
            # Greek letters is read as text below
            self.counts["excluded:ref"] += 1
        elif name == "orig":
            sub = _Emitter(self.opts, self.counts)
            self._children(el, sub, kind, lang, in_w)
            self.counts["orig_letters"] += sum(_letters(s) for s, k in sub.pieces if k != _GAP)
            for s, k in sub.pieces:
                if k == _GAP:
                    em.raw(s)
                else:
                    em.pieces.append((s.lower() if self.opts.orig_case == "lower" else s, k))
        else:  # w, name, persName, num, hi, seg, add, c, l, ab, ...: their text
            if name not in _TEXT_ELEMENTS:
                self.counts[f"unknown_element:{name}"] += 1
            if name in _BREAKS:
                em.text(" ", None, in_w)
            self._children(el, em, kind, lang, in_w or name == "w")
            if name in _BREAKS:
                em.text(" ", None, in_w)
        if tail:
            em.text(el.tail, kind, in_w)

    def _children(
        self, el: etree._Element, em: _Emitter, kind: str | None, lang: str | None, in_w: bool
    ) -> None:
        em.text(el.text, kind, in_w)
        for child in el:
            self.visit(child, em, kind, lang, in_w)

    def _gap(self, el: etree._Element, em: _Emitter) -> None:
        if self.gap_mark is not None:
            self.gaps.append(el)
            em.raw(self.gap_mark)
        unit = (el.get("unit") or "character").strip().rstrip(">")
        self.counts["gaps"] += 1
        if unit == "line":
            self.counts["gap_lines"] += 1
            em.raw(" [---] ")
            return
        if unit != "character":
            self.counts[f"gap_unit:{unit}"] += 1
            em.raw("[---]")
            return
        extent, qty = el.get("extent"), el.get("quantity")
        if qty is None and extent and extent.strip().isdigit():  # extent="7": a count misplaced
            qty = extent
        lo, hi = el.get("atLeast"), el.get("atMost")
        n = _whole(qty)
        a, b = _whole(lo), _whole(hi)
        if max(n or 0, b or 0) > MAX_GAP_LETTERS:  # a typo or a whole column: too long to count
            self.counts["gap_too_wide"] += 1
            em.raw("[---]")
            return
        if n:
            if el.get("precision") in ("low", "medium"):
                em.raw(f"[-ca.{n}-]")
            else:
                em.raw("[" + "." * n + "]")
            return
        if a and b and a <= b:
            em.raw(f"[.{a}-{b}.]")
            return
        if a and hi is None:  # atLeast alone: at least a letters, open-ended
            em.raw(f"[-min.{a}-]")
            return
        if b and lo is None:  # atMost alone: 1 to b letters
            em.raw(f"[-max.{b}-]")
            return
        # no readable width: a lacuna of unknown width, counted by what was wrong with it
        if qty is not None:
            self.counts["gap_quantity_unreadable"] += 1
        if lo is not None or hi is not None:
            self.counts["gap_range_unreadable"] += 1
        if qty is None and lo is None and hi is None and extent != "unknown":
            self.counts["gap_width_unstated" if extent is None else f"gap_extent:{extent}"] += 1
        em.raw("[---]")

    def _choice(
        self, el: etree._Element, em: _Emitter, kind: str | None, lang: str | None, in_w: bool
    ) -> None:
        """``<choice>``: one reading, as :mod:`stoicheia.sources.epidoc_choice` decides; the
        others counted ``reading_left_out:<name>``, never glued to it."""
        kids = [c for c in el if _local(c)]
        res = choose(
            [_local(c) for c in kids], choice=self.opts.choice, expansions=self.opts.expansions
        )
        self.counts["choice"] += 1
        for i in res.left_out:
            self.counts[f"reading_left_out:{_local(kids[i])}"] += 1
        if res.pick is None:
            self.counts["choice_unreadable"] += 1
            return
        pick = kids[res.pick]
        if res.alternatives:
            # the editor's alternatives for one place: the first, as an uncertain reading
            self.counts["choice_alternatives"] += 1
            if _local(pick) == "unclear":
                self.visit(pick, em, kind, lang, in_w, tail=False)
            else:
                self._dotted(pick, em, kind, lang, in_w)
        elif _local(pick) == "orig":
            # the reading as written: its letters as they are (no lower-casing in a choice)
            self._children(pick, em, kind, lang, in_w)
        else:
            self.visit(pick, em, kind, lang, in_w, tail=False)

    def _dotted(
        self, el: etree._Element, em: _Emitter, kind: str | None, lang: str | None, in_w: bool
    ) -> None:
        """The content of ``el`` with a dot below on every letter (an uncertain reading)."""
        sub = _Emitter(self.opts, self.counts)
        self._children(el, sub, kind, lang, in_w)
        for s, k in sub.pieces:
            if k == _GAP:
                em.raw(s)
            else:  # already filtered by sub.text: append, so the dots stay
                em.pieces.append((_dot_below(s), k))

    def _app(
        self, el: etree._Element, em: _Emitter, kind: str | None, lang: str | None, in_w: bool
    ) -> None:
        """``<app>``: the lemma is the text (else the first reading); the other readings are
        left out, counted ``reading_left_out:<tag>``, never glued to the lemma."""
        kids = [c for c in el if _local(c)]
        pick = next((c for c in kids if _local(c) == "lem"), None)
        if pick is None:
            pick = next((c for c in kids if _local(c) == "rdg"), None)
        self.counts["app"] += 1
        for c in kids:
            if c is not pick:
                self.counts[f"reading_left_out:{_local(c)}"] += 1
        if pick is not None:
            self._children(pick, em, kind, lang, in_w)

    def _expan(
        self, el: etree._Element, em: _Emitter, kind: str | None, lang: str | None, in_w: bool
    ) -> None:
        self.counts["expansions"] += 1
        # <expan> holds elements: whitespace between them is layout, not a word break
        em.text(_content(el.text), kind, in_w)
        for child in el:
            name = _local(child)
            if name == "ex":
                if self.opts.expansions == "expanded":
                    ex_kind = kind if kind in ("lost", "surplus", "erased") else "abbreviation"
                    self._children(child, em, ex_kind, lang, in_w)
                else:
                    self.counts["expansion_left_out"] += 1
            else:
                self.visit(child, em, kind, lang, in_w, tail=False)
            em.text(_content(child.tail), kind, in_w)


def _is_apostrophe(el: etree._Element) -> bool:
    """``<g type="apostrophe"/>`` (papyri.info) or ``<g ref="#apostrophe"/>``."""
    return (el.get("type") or "").strip().lower() == "apostrophe" or (
        el.get("ref") or ""
    ).strip().lower().lstrip("#") == "apostrophe"


def _content(s: str | None) -> str | None:
    """``s`` unless it is only whitespace (layout between elements)."""
    return s if s and s.strip() else None


def _whole(s: str | None) -> int | None:
    """``s`` as a whole number > 0 (surrounding spaces allowed), else ``None``."""
    if s is None or not _WHOLE.fullmatch(s.strip()):
        return None
    return int(s) or None


def _letters(s: str) -> int:
    return sum(
        1 for c in unicodedata.normalize("NFD", s) if "\u0370" <= c <= "\u03ff" and c.isalpha()
    )


def _dot_below(s: str) -> str:
    """Put a dot below (U+0323) on every letter of ``s`` (Leiden for an uncertain letter)."""
    out = []
    for c in unicodedata.normalize("NFC", s):
        out.append(c + "\u0323" if c.isalpha() else c)
    return "".join(out)


def _parse(path: Path, counts: Counter[str]) -> etree._Element:
    """The parsed file, its internal entities expanded (counted ``entity_expanded``), its
    external ones never read (:mod:`stoicheia.sources.xml_entities`)."""
    raw = read_utf8(path)
    data = raw.encode("utf-8")
    if raw.startswith("<?xml"):
        data = re.sub(rb"^<\?xml[^>]*\?>", b'<?xml version="1.0" encoding="UTF-8"?>', data)
    try:
        parsed = parse_tei(data)
    except XmlReadError as e:
        raise SourceError(path, e.line, e.message, e.fix) from None
    if parsed.entities_expanded:
        counts["entity_expanded"] += parsed.entities_expanded
    return parsed.root


def unit_language(unit: etree._Element, default: str | None) -> str | None:
    """The language of a text part or edition: its own ``xml:lang``, else the nearest
    ancestor's (below ``<TEI>``), else ``default`` (the header's ``<textLang mainLang>``)."""
    if unit.get(_XML_LANG):
        return unit.get(_XML_LANG)
    for a in unit.iterancestors():
        if a.get(_XML_LANG) is not None and _local(a) not in ("TEI",):
            return a.get(_XML_LANG)
    return default


def unit_leiden(
    unit: etree._Element,
    lang: str | None,
    opts: EpiDocOptions,
    counts: Counter[str],
    *,
    gap_mark: str | None = None,
) -> tuple[str, list[etree._Element]]:
    """The Leiden text (NFC) of one text part or edition, as :func:`read_epidoc` writes it.

    ``lang``: the unit's language (:func:`unit_language`); ``counts``: the reader's counts
    are added there. With ``gap_mark`` (a character that cannot occur in the text, such as a
    private-use one), that mark is written just before the lacuna of each ``<gap>`` element and
    the elements are returned in order (:mod:`stoicheia.inference.epidoc_restore` uses this to
    tell them from lacunae made of other markup); without it the list is empty."""
    walker = _Walker(opts, counts, gap_mark)
    em = _Emitter(opts, counts)
    walker._children(unit, em, None, lang, False)
    return unicodedata.normalize("NFC", em.leiden()), walker.gaps


def read_epidoc(
    path: Path,
    root: Path | None = None,
    *,
    counts: Counter[str] | None = None,
    options: EpiDocOptions | None = None,
    tree: etree._Element | None = None,
) -> Iterator[SourceRecord]:
    """Yield the Greek records of one EpiDoc (TEI P5) file, as Leiden-annotated NFC text.

    ``path``/``root``/``counts`` as for every reader; ``options`` the Leiden choices
    (:class:`EpiDocOptions`); ``tree`` an already parsed root (the ``.xml`` dispatcher passes
    it). ``source`` is ``"epidoc"``. Raises :class:`SourceError` for undecodable bytes,
    malformed XML, a root that is not a TEI P5 ``<TEI>``, or a file with no
    ``<div type="edition">`` (the only division read).
    """
    path = Path(path)
    counts = counts if counts is not None else Counter()
    opts = options or EpiDocOptions()
    rel = relative_name(path, root)
    doc = tree if tree is not None else _parse(path, counts)
    if not is_tei_p5(doc):
        raise SourceError(
            path,
            doc.sourceline or 0,
            f"root element is <{doc.tag}>, not a TEI P5 <TEI>",
            "give an EpiDoc / TEI P5 file (namespace http://www.tei-c.org/ns/1.0)",
        )
    main = doc.find(f".//{_T}textLang")
    default_lang = main.get("mainLang") if main is not None else None
    editions = [d for d in doc.iter(_T + "div") if d.get("type") == "edition"]
    if not editions:
        # EpiDoc keeps the text in the edition division only; a TEI P5 file without one is
        # another kind of TEI (or an EpiDoc file that lost it), not a file without Greek
        body = doc.find(f"{_T}text/{_T}body")
        raise SourceError(
            path,
            (body if body is not None else doc).sourceline or 0,
            'TEI P5 file without a <div type="edition">: the EpiDoc reader reads the text of the '
            "edition division only, and this file has none",
            'wrap the text of <body> in <div type="edition" xml:lang="grc"> (EpiDoc), or give the '
            "text as .txt/.jsonl",
        )
    seen: Counter[str] = Counter()
    for ed in editions:
        sub = ed.get("subtype")
        if sub not in (None, "primary"):
            counts[f"edition_skipped:{sub}"] += 1
            continue
        parts = [
            d
            for d in ed.iter(_T + "div")
            if d.get("type") == "textpart" and d.find(f"{_T}div[@type='textpart']") is None
        ]
        units = parts or [ed]
        for k, unit in enumerate(units, 1):
            lang = unit_language(unit, default_lang)
            if not is_greek_lang(lang):
                counts[f"lang:{lang}"] += 1
                continue
            text, _ = unit_leiden(unit, lang, opts, counts)
            if not text:
                counts["empty_division"] += 1
                continue
            if unit is ed:
                cite = "1"
            else:
                ns = [
                    d.get("n") or str(k)
                    for d in [*reversed(list(unit.iterancestors(_T + "div"))), unit]
                    if d.get("type") == "textpart"
                ]
                cite = ".".join(ns)
            cite = unique_citation(cite, seen, counts)
            counts["records"] += 1
            counts["chars"] += len(text)
            yield SourceRecord(
                id=f"{rel}#{cite}",
                text=text,
                source="epidoc",
                work=rel,
                file=str(path),
                line=unit.sourceline or 0,
                known=MappingProxyType({}),
            )
