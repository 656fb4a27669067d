"""The element walk of the EpiDoc reader: each element of an edition written as Leiden.

The walk hands the text of the edition to :class:`~stoicheia.sources.epidoc_leiden.LeidenPieces`
with its Leiden kind, and the text goes through :func:`stoicheia.text.encode.encode_text` (the
one Leiden parser, :mod:`stoicheia.text.leiden`), so a ``<gap>`` and a ``[...]`` typed in a
plain text mean the same thing (``<gap>``: :mod:`stoicheia.sources.epidoc_gap`; ``<choice>``:
:mod:`stoicheia.sources.epidoc_choice`):

================================  =========================================================
``<gap>``                         a lacuna: ``[....]`` of known width, ``[-ca.N-]``,
                                  ``[.a-b.]``, ``[-min.a-]``, ``[-max.b-]`` or ``[---]``
                                  (:mod:`.epidoc_gap` says which and what is counted)
``<supplied reason="lost">``      (counted ``supplements``) ``[letters]`` (option
                                  ``supplied_lost="text"``, default:
                                  the editor's letters kept as letters where they stand) or
                                  one lost-letter slot per letter (``"lacuna"``)
``<supplied reason="omitted">``   ``⟨letters⟩`` kept (``subaudible`` too)
``<supplied reason="undefined"    ``⸢letters⸣`` kept (letters read by an earlier editor)
evidence="previouseditor">``
``<supplied reason=               left out (an editor's gloss, not text), counted
"explanation">``
``<surplus>``                     ``{letters}``: left out without a word break; a
                                  ``<supplied>`` or ``<del>`` inside it is surplus too
                                  (``supplied_in_surplus``), a ``<gap>`` inside it no
                                  lacuna to restore (left out, ``gap_in_surplus``)
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
                                  removed, the word goes on (counted ``hyphen_joined``); a
                                  new line of the edition, its ``n`` the printed number
                                  (counted on from the last number when ``n`` is absent:
                                  ``line_number_counted``), see :func:`unit_lines`
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

Brackets and ``+`` typed as characters in the XML text are removed and counted
(:mod:`.epidoc_leiden`). Counts go to ``counts`` like the other readers.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from lxml import etree

from .epidoc_choice import choose
from .epidoc_gap import gap_leiden
from .epidoc_leiden import APOSTROPHE, RAW, LeidenPieces, dot_below, greek_letters
from .epidoc_tei import XML_LANG, glued_to_next_word, is_apostrophe, is_greek_lang, local_name

__all__ = ["EpiDocOptions", "EditionWalker", "unit_leiden", "unit_lines"]

#: elements left out with their content, counted ``excluded:<name>`` (their tail is read):
#: the editor's notes and apparatus, index entries (``<index><term>``), bibliography,
#: pictures, running heads, pointers and the TEI's other annotations that stand in a text
#: but are not its letters (``model.noteLike``, ``model.global.meta``, ``model.milestoneLike``)
_EXCLUDED = frozenset(
    """note noteGrp certainty precision respons desc link linkGrp milestone cb gb pb handShift
    fw figure figDesc graphic media index interp interpGrp span spanGrp alt altGrp join joinGrp
    anchor ptr bibl biblStruct listBibl witDetail head addSpan delSpan damageSpan
    metamark""".split()
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
_GREEK_IN = re.compile("[\u0370-\u03ff\u1f00-\u1fff]")
_LEADING_NUMBER = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class EpiDocOptions:
    """Choices of the EpiDoc reader (see the module docstring).

    ``supplied_lost``: ``"text"`` (keep the editor's letters) or ``"lacuna"`` (a lost-letter
    slot per supplied letter). ``expansions``: ``"expanded"`` or ``"abbreviated"``.
    ``choice``: ``"regularised"`` (``reg``/``corr``) or ``"original"`` (``orig``/``sic``).
    ``orig_case``: the letters of an ``<orig>`` outside ``<choice>`` ``"lower"``-cased (the
    training data: a diplomatic transcription's capitals are not the editor's) or ``"as
    written"`` (:mod:`stoicheia.inference.epidoc`: a gap among capitals is filled in
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


class EditionWalker:
    """Writes the elements of an edition as Leiden pieces into an :class:`LeidenPieces`.

    ``gap_mark``: when set, each ``<gap>`` element is recorded in ``gaps`` (in order) and the
    mark is written just before its lacuna, so a caller can tell the lacunae of ``<gap>`` from
    those the reader makes of other markup (:func:`unit_leiden`)."""

    def __init__(
        self,
        opts: EpiDocOptions,
        counts: Counter,
        gap_mark: str | None = None,
        skip: frozenset = frozenset(),
    ) -> None:
        self.opts = opts
        self.counts = counts
        self.gap_mark = gap_mark
        #: nested text parts read as units of their own (:mod:`.epidoc_units`): a word break
        self.skip = skip
        self.gaps: list[etree._Element] = []
        self._lines = 0  # the <lb/> elements met in the unit
        self._last_number: int | None = None  # the leading number of the last line label

    def line_label(self, lb: etree._Element) -> str:
        """The printed number of the line that ``lb`` begins: its ``n`` (``"5"``, ``"10a"``),
        else counted on from the last numbered line (``4`` then ``5``), else the ``<lb/>``'s
        place in the unit (counted ``line_number_counted``)."""
        self._lines += 1
        label = (lb.get("n") or "").strip()
        if not label:
            self.counts["line_number_counted"] += 1
            label = str(self._last_number + 1 if self._last_number is not None else self._lines)
        lead = _LEADING_NUMBER.match(label)
        self._last_number = int(lead.group()) if lead else None
        return label

    def visit(
        self,
        el: etree._Element,
        em: LeidenPieces,
        kind: str | None,
        lang: str | None,
        in_w: bool,
        tail: bool = True,
    ) -> None:
        """Write ``el`` (and its tail, unless ``tail`` is false) into ``em``; ``kind`` the
        Leiden kind of the text around it, ``lang`` the language in force, ``in_w`` inside a
        ``<w>``."""
        for _ in self._visit(el, em, kind, lang, in_w, tail):
            pass

    def children(
        self, el: etree._Element, em: LeidenPieces, kind: str | None, lang: str | None, in_w: bool
    ) -> None:
        """Write the content of ``el`` (its text and children) into ``em``."""
        for _ in self._children(el, em, kind, lang, in_w):
            pass

    def _children(
        self, el: etree._Element, em: LeidenPieces, kind: str | None, lang: str | None, in_w: bool
    ) -> Iterator[None]:
        """:meth:`children`, pausing after each element (at any depth) so that a caller can
        take the pieces written so far (:func:`unit_stream`)."""
        em.text(el.text, kind, in_w)
        for child in el:
            yield from self._visit(child, em, kind, lang, in_w)
            yield

    def _visit(
        self,
        el: etree._Element,
        em: LeidenPieces,
        kind: str | None,
        lang: str | None,
        in_w: bool,
        tail: bool = True,
    ) -> Iterator[None]:
        """:meth:`visit`, pausing as :meth:`_children` does (the elements that hold text of
        the edition are walked this way; an element whose text is rewritten as a whole, such
        as ``<unclear>`` or ``<orig>``, is written at once)."""
        name = local_name(el)
        if not name:  # comment / processing instruction
            if tail:
                em.text(el.tail, kind, in_w)
            return
        el_lang = el.get(XML_LANG)
        if el in self.skip:
            em.text(" ", None, in_w)
        elif el_lang is not None and not is_greek_lang(el_lang) and is_greek_lang(lang):
            self.counts[f"lang:{el_lang}"] += 1
            em.text(" ", None, in_w)
        elif name in _EXCLUDED:
            self.counts[f"excluded:{name}"] += 1
            if name in _BREAKS:
                em.text(" ", None, in_w)
        elif name == "lb":
            label = self.line_label(el)
            if em.line_end_hyphen() or el.get("break") == "no":
                em.strip_trailing_space()
                em.line(label)
                if tail and el.tail:
                    em.text(el.tail.lstrip(), kind, in_w)
                return
            em.text(" ", None, in_w)
            em.line(label)
        elif name == "gap" and kind == "surplus":
            # lost letters of what the editor deletes: nothing to restore, left out with it
            self.counts["gap_in_surplus"] += 1
        elif name == "gap":
            if self.gap_mark is not None:
                self.gaps.append(el)
                em.raw(self.gap_mark)
            em.raw(gap_leiden(el, self.counts))
        elif name == "g" and is_apostrophe(el):
            # papyri.info's scribal apostrophe (Ἀπολ<g type="apostrophe"/>λωνίου): never a
            # word break inside a word; resolved when the text on both sides is known
            em.pieces.append((APOSTROPHE, kind))
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
                if local_name(child) == "del":
                    self.counts["del_corrected"] += 1
                    em.text(child.tail, kind, in_w)
                else:
                    yield from self._visit(child, em, kind, lang, in_w)
        elif name == "supplied":
            reason = el.get("reason", "")
            if kind == "surplus":
                # letters an editor supplies inside letters he deletes: deleted with them
                self.counts["supplied_in_surplus"] += 1
                yield from self._children(el, em, kind, lang, in_w)
            elif reason == "lost":
                self.counts["supplements"] += 1  # an editor's supplement of lost letters
                if self.opts.supplied_lost == "lacuna":
                    n = greek_letters("".join(el.itertext()))
                    self.counts["supplied_as_lacuna"] += n
                    if n:
                        em.raw("[" + "." * n + "]")
                else:
                    yield from self._children(el, em, "lost", lang, in_w)
            elif reason in ("omitted", "subaudible"):
                yield from self._children(el, em, "omitted", lang, in_w)
            elif reason == "explanation":
                self.counts["supplied_explanation"] += 1
            else:  # undefined (previous editor) and the rest
                self.counts[f"supplied_{reason or 'no_reason'}"] += 1
                yield from self._children(el, em, "partly_lost", lang, in_w)
        elif name == "surplus":
            yield from self._children(el, em, "surplus", lang, in_w)
        elif name == "del":
            if el.get("rend") == "corrected":
                self.counts["del_corrected"] += 1
            else:
                yield from self._children(
                    el, em, "surplus" if kind == "surplus" else "erased", lang, in_w
                )
        elif name == "unclear":
            self._dotted(el, em, kind, lang, in_w)
        elif name == "ref" and not _GREEK_IN.search("".join(el.itertext())):
            # a pointer or a footnote mark ("1", "cf. l. 3"): not text; a <ref> that wraps
            # Greek letters is read as text below
            self.counts["excluded:ref"] += 1
        elif name == "orig":
            sub = LeidenPieces(self.counts)
            self.children(el, sub, kind, lang, in_w)
            self.counts["orig_letters"] += sum(greek_letters(s) for s, k in sub.pieces if k != RAW)
            em.take(sub, str.lower if self.opts.orig_case == "lower" else str)
        else:  # w, name, persName, num, hi, seg, add, c, l, ab, ...: their text
            if name not in _TEXT_ELEMENTS:
                self.counts[f"unknown_element:{name}"] += 1
            if name in _BREAKS:
                em.text(" ", None, in_w)
            yield from self._children(el, em, kind, lang, in_w or name == "w")
            if name in _BREAKS:
                em.text(" ", None, in_w)
        if name == "w" and not in_w and glued_to_next_word(el):
            # <w>a</w><w>b</w>: two words, though no space stands between them
            self.counts["word_break_between_w"] += 1
            em.text(" ", None, in_w)
        if tail:
            em.text(el.tail, kind, in_w)

    def _choice(
        self, el: etree._Element, em: LeidenPieces, kind: str | None, lang: str | None, in_w: bool
    ) -> None:
        """``<choice>``: one reading, as :mod:`stoicheia.sources.epidoc_choice` decides; the
        others counted ``reading_left_out:<name>``, never glued to it."""
        kids = [c for c in el if local_name(c)]
        res = choose(
            [local_name(c) for c in kids], choice=self.opts.choice, expansions=self.opts.expansions
        )
        self.counts["choice"] += 1
        for i in res.left_out:
            self.counts[f"reading_left_out:{local_name(kids[i])}"] += 1
        if res.pick is None:
            self.counts["choice_unreadable"] += 1
            return
        pick = kids[res.pick]
        if res.alternatives:
            # the editor's alternatives for one place: the first, as an uncertain reading
            self.counts["choice_alternatives"] += 1
            if local_name(pick) == "unclear":
                self.visit(pick, em, kind, lang, in_w, tail=False)
            else:
                self._dotted(pick, em, kind, lang, in_w)
        elif local_name(pick) == "orig":
            # the reading as written: its letters as they are (no lower-casing in a choice)
            self.children(pick, em, kind, lang, in_w)
        else:
            self.visit(pick, em, kind, lang, in_w, tail=False)

    def _dotted(
        self, el: etree._Element, em: LeidenPieces, kind: str | None, lang: str | None, in_w: bool
    ) -> None:
        """The content of ``el`` with a dot below on every letter (an uncertain reading)."""
        sub = LeidenPieces(self.counts)
        self.children(el, sub, kind, lang, in_w)
        em.take(sub, dot_below)  # already filtered by sub.text: appended, so the dots stay

    def _app(
        self, el: etree._Element, em: LeidenPieces, kind: str | None, lang: str | None, in_w: bool
    ) -> None:
        """``<app>``: the lemma is the text (else the first reading); the other readings are
        left out, counted ``reading_left_out:<tag>``, never glued to the lemma."""
        kids = [c for c in el if local_name(c)]
        pick = next((c for c in kids if local_name(c) == "lem"), None)
        if pick is None:
            pick = next((c for c in kids if local_name(c) == "rdg"), None)
        self.counts["app"] += 1
        for c in kids:
            if c is not pick:
                self.counts[f"reading_left_out:{local_name(c)}"] += 1
        if pick is not None:
            self.children(pick, em, kind, lang, in_w)

    def _expan(
        self, el: etree._Element, em: LeidenPieces, kind: str | None, lang: str | None, in_w: bool
    ) -> None:
        self.counts["expansions"] += 1
        # <expan> holds elements: whitespace between them is layout, not a word break
        em.text(_content(el.text), kind, in_w)
        for child in el:
            name = local_name(child)
            if name == "ex":
                if self.opts.expansions == "expanded":
                    ex_kind = kind if kind in ("lost", "surplus", "erased") else "abbreviation"
                    self.children(child, em, ex_kind, lang, in_w)
                else:
                    self.counts["expansion_left_out"] += 1
            else:
                self.visit(child, em, kind, lang, in_w, tail=False)
            em.text(_content(child.tail), kind, in_w)


def _content(s: str | None) -> str | None:
    """``s`` unless it is only whitespace (layout between elements)."""
    return s if s and s.strip() else None


def unit_leiden(
    unit: etree._Element,
    lang: str | None,
    opts: EpiDocOptions,
    counts: Counter[str],
    *,
    gap_mark: str | None = None,
    skip: frozenset = frozenset(),
) -> tuple[str, list[etree._Element]]:
    """The Leiden text (NFC) of one text part or edition, as :func:`read_epidoc` writes it.

    ``lang``: the unit's language (:func:`unit_language`); ``counts``: the reader's counts
    are added there. With ``gap_mark`` (a character that cannot occur in the text, such as a
    private-use one), that mark is written just before the lacuna of each ``<gap>`` element and
    the elements are returned in order (:mod:`stoicheia.inference.epidoc` uses this to
    tell them from lacunae made of other markup); without it the list is empty. ``skip``: the
    nested text parts left out of this unit (:class:`~.epidoc_units.EditionUnit`)."""
    walker = EditionWalker(opts, counts, gap_mark, skip)
    em = LeidenPieces(counts)
    walker.children(unit, em, None, lang, False)
    return unicodedata.normalize("NFC", em.leiden()), walker.gaps


def unit_lines(
    unit: etree._Element,
    lang: str | None,
    opts: EpiDocOptions,
    counts: Counter[str],
    skip: frozenset = frozenset(),
) -> tuple[str, tuple[tuple[str | None, str], ...]]:
    """The Leiden text of one text part or edition (as :func:`unit_leiden`) and the same text
    line by line (:meth:`~stoicheia.sources.epidoc_leiden.LeidenPieces.lines`: the printed
    line number of each ``<lb/>`` (:meth:`EditionWalker.line_label`) and its Leiden text, NFC;
    ``None`` labels the text before the first ``<lb/>``; empty when the unit has none);
    ``skip`` as for :func:`unit_leiden`."""
    walker = EditionWalker(opts, counts, skip=skip)
    em = LeidenPieces(counts)
    walker.children(unit, em, None, lang, False)
    lines = tuple((label, unicodedata.normalize("NFC", t)) for label, t in em.lines())
    return unicodedata.normalize("NFC", em.leiden()), lines
