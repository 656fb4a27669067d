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
accent and two capitalised ASCII words: the Latin testimonia of the Elegy volumes). Kept:
``num`` (Greek numerals and Euclid's point labels such as ``ΑΒ`` are Greek text in the
manuscripts), ``add``/``del``/``supplied``/``sic`` (their text, without adding brackets); of
``<app>`` (``<lem>``/``<rdg>``) and ``<choice>`` (``<sic>``/``<corr>``, ``<orig>``/``<reg>``,
``<abbr>``/``<expan>``) one reading only (lemma, correction, regularisation, expansion; the
others counted ``reading_left_out:<tag>``), ``title`` (Greek document titles such as
``ΨΗΦΙΣΜΑ`` inside the speeches), ``argument`` (Diodorus' Greek book summaries),
``opener``/``salute``, ``quote``/``q``/``cit`` (quotations are Greek text), ``hi``, ``term``,
tables and lists.
Word boundaries (decided by measuring where each element touches letters on both sides, see
:data:`BLOCK`): block elements (``p``, ``l``, ``sp``, ``quote``, ``q``, ``title``...), the
excluded ``note``, ``head``, ``speaker``, ``label``, ``bibl``, ``gap``, ``pb``, and milestones of
the units in :data:`BOUNDARY_MILESTONES`; not ``add``/``del``/``supplied``/``term``/``num``,
``figure``, comments, or section/page milestones, which fall inside words, so
``<term>o(mo</term>ke/leuqon`` stays one word and ``word<note>..</note> next`` keeps its
words apart and whole. A Beta Code hyphen at the end of a source line followed by a letter on
the next line is a hyphenated word and is joined (``gramma-\\ntistou=`` -> ``γραμματιστοῦ``).

**Citation lines.** Each record carries ``lines`` (:attr:`SourceRecord.lines`): its text cut
where the TEI's own numbering starts a citation unit (a verse line ``<l>``, numbered or counted
on; a ``<milestone unit="section">`` or ``"verse"``), each labelled with its canonical reference
(:func:`reference`: ``AJ 14.195``, ``Iliad 1.5``, ``Euthyph. 2a``, ``Ant. 100``), under the work's
short title from the header (:func:`work_title`); the walk's rules are
:mod:`stoicheia.sources.perseus_walk`'s (``CITE_MILESTONES``, ``CITED_DIVISIONS``). Text
before the first citation point has no label. The lines are converted piece by piece; read
one after the other they hold the record's letters (the shards lay them on its slots).

**Entities.** The files use SGML entities of a DTD that is not shipped: they are read as
:mod:`stoicheia.sources.perseus_entities` says (an unknown entity raises
:class:`SourceError` naming the file and line; malformed XML raises :class:`SourceError` with
lxml's message). The walk over the tree is :mod:`stoicheia.sources.perseus_walk`.

**Long divisions.** The walk's Beta Code waits for the records in a spool
(:mod:`stoicheia.sources.perseus_spool`: in memory up to a few MB, the rest in a temporary
file), and the parsed tree is freed once the walk is done. For ``stoicheia convert``
(``chunks=True``) a record of more than a million characters comes as a streamed record, its
text converted a piece at a time and its citation lines made one at a time as they are read
(:mod:`stoicheia.sources.perseus_text`): the same records, text, lines and counts, and memory
bounded by the record limit and the longest citation line, whatever the division.

**Counts.** ``counts`` (optional ``collections.Counter``) receives ``records``, ``chars``,
``excluded:<tag>`` (elements dropped with their content), ``lang:<value>`` (non-Greek
elements dropped), ``latin_span``, ``latin_chars``, ``latin_unterminated``,
``beta_symbol_code``, ``beta_format_code``, ``digit``, ``stray_char``, ``repaired_*`` (see
:mod:`stoicheia.sources.betacode`), ``latin_quote`` / ``latin_chunk`` / ``latin_chunk_chars``
(untagged Latin dropped), ``lost_letter_mark`` (``[!!!]``: each ``!`` inside square
brackets is a lost letter, written ``[...]`` for the Leiden reading), ``latin_looking_token``
(capitalised ASCII words left in the Beta Code: a leak measure), ``markup_debris``,
``hyphen_joined``, ``citation_lines`` (labelled lines kept), ``numeral_sign_from_acute`` (a
Beta Code acute left on a consonant, ``lb/`` = λβʹ, written as the numeral sign U+02B9),
``empty_division`` (divisions with no Greek text, e.g. only a ``head``) and ``duplicate_id``.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import MappingProxyType

from . import plain
from .perseus_entities import parse_perseus_xml
from .perseus_spool import BetaSpool, Segment
from .perseus_text import PIECE_CHARS, cite_parts, unicode_chunks, unicode_text
from .perseus_walk import CITE, CITE_MILESTONES, Context, Walker
from .record import SourceError, SourceRecord, read_utf8, relative_name, unique_citation

__all__ = ["read_perseus"]

_EDITION = re.compile(r"_(loeb|teubner)(_gk\.xml)$")


def _work_id(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    return _EDITION.sub(r"\2", rel) if name.startswith("plut.") else rel


def read_perseus(
    path: Path,
    root: Path | None = None,
    *,
    counts: Counter[str] | None = None,
    chunks: bool = False,
) -> Iterator[SourceRecord]:
    """Yield the records of one Perseus TEI file (Beta Code) as NFC Unicode Greek.

    ``path``: the ``.xml`` file; ``root``: the corpus directory the ids are relative to
    (``None``: the file name). ``counts``: optional counter of what was dropped (keys in the
    module docstring). ``chunks=True`` (``stoicheia convert``): a record whose Beta Code holds
    more than :data:`~stoicheia.sources.plain.STREAM_PARAGRAPH_CHARS` characters comes as a
    streamed record (:attr:`SourceRecord.streamed`: its text converted and its citation lines
    made a piece at a time as the caller reads them, :func:`_streamed_record`): the same
    records, text, lines and counts. The walk's Beta Code waits for the records in a
    :class:`~stoicheia.sources.perseus_spool.BetaSpool` (beyond a few MB, in a temporary
    file) and the parsed tree is freed once the walk ends, so that beyond the tree, memory is
    bounded by the record limit and the longest citation line. Raises :class:`SourceError`
    on undecodable bytes, an unknown entity, malformed XML or text that is not Beta Code Greek
    (file, line and fix in the message), before the first record. Records whose division holds
    no Greek are not yielded (counted as ``empty_division``).
    """
    path = Path(path)
    file = str(path)
    counts = counts if counts is not None else Counter()
    rel = relative_name(path, root)
    root_el, table = parse_perseus_xml(read_utf8(path), file)  # the file's text not kept
    if root_el.tag != "TEI.2":
        # A TEI P5 file (namespaced <TEI>) is Unicode, not Beta Code: never read it here.
        raise SourceError(
            file,
            root_el.sourceline or 1,
            f"root element is {root_el.tag}, not the TEI P4 <TEI.2> of Perseus",
            "read .xml files with stoicheia.sources.read_tei (or `stoicheia convert`), which "
            "sends TEI P5 / EpiDoc files to read_epidoc",
        )
    with BetaSpool() as spool:
        content_texts = [t for t in root_el.iter("text") if t.find(".//text") is None]
        first = content_texts[0] if content_texts else root_el
        top_line = first.sourceline or 1
        top = Context([], top_line, -1, pieces=spool.text(top_line))
        # a file that numbers no section nor verse cites its chapters (Athenaeus' books)
        numbered = any(
            (m.get("unit") or "").strip().lower() in CITE_MILESTONES and m.get("n")
            for m in root_el.iter("milestone")
        )
        walker = Walker(
            table,
            counts,
            multi_text=len(content_texts) > 1,
            top=top,
            chapter_cites=not numbered,
            pieces=spool.text,
        )
        walker.visit(root_el, top)
        title = None if len(content_texts) > 1 else work_title(root_el)
        del root_el, content_texts, first  # the tree is freed: the records need only the spool
        contexts = sorted([top, *walker.contexts], key=lambda c: c.order)
        segments = [(ctx, seg) for ctx in contexts for seg in ctx.pieces.segments]
        _check_beta_code((seg.chunks() for _, seg in segments), top_line, file)
        seen: Counter[str] = Counter()
        work = _work_id(rel)
        for ctx in contexts:
            for j, seg in enumerate(ctx.pieces.segments):
                # a division's own text, then (outside every division) one per chapter
                cite = (".".join(ctx.cite) or "body") if j == 0 else (seg.cite or str(j))
                # the record's own reference (its cited divisions: Aeschines' speech and
                # section, Athenaeus' book, a Life's chapter) labels its text before the first
                # citation point, or all of it when the TEI numbers nothing finer, so that
                # every letter has a reference
                head = _division_reference(ctx, cite, top, title)
                if not chunks or seg.chars <= plain.STREAM_PARAGRAPH_CHARS:
                    made = _record(seg, ctx is top, title, head, table.expand, counts)
                    if made is None:
                        continue
                    text, lines = made
                    cite = unique_citation(cite, seen, counts)
                    counts["records"] += 1
                    counts["chars"] += len(text)
                    streamed = None
                else:
                    streamed = _Streamed(seg, ctx is top, title, head, table.expand, counts)
                    if not streamed.start():
                        seg.release()
                        continue
                    text, lines = "", ()
                    cite = unique_citation(cite, seen, streamed.record_counts)
                    streamed.made = True
                    streamed.settle()  # now if the text was read to its end already
                yield SourceRecord(
                    id=f"{rel}#{cite}",
                    text=text,
                    source="perseus",
                    work=work,
                    file=file,
                    line=seg.line,
                    known=MappingProxyType({}),
                    lines=lines,
                    streamed=streamed,
                )
                if streamed is not None:
                    streamed.drain()  # whatever the caller did not read: its counts made
                seg.release()  # a record's Beta Code freed once it is read


def _record(
    seg: Segment, top: bool, title: str | None, head: str | None, expand, counts: Counter[str]
) -> tuple[str, tuple[tuple[str | None, str], ...]] | None:
    """The text and citation lines of a segment read whole, its counts made (``None`` for a
    segment without Greek text: counted ``empty_division`` unless ``top``); ``head``: the
    label of its text before the first citation point (:func:`_division_reference`)."""
    beta = seg.read()
    seg.release()
    parts = CITE.split(beta)  # [text, n, text, n, text...]: the citation points
    del beta
    text = unicode_text("".join(parts[0::2]), expand, counts)
    if not text:
        if not top:
            counts["empty_division"] += 1
        return None
    lines: tuple[tuple[str | None, str], ...] = ()
    if len(parts) > 1:
        scratch: Counter[str] = Counter()  # the record's text counted what is dropped
        lines = tuple(
            (
                head if i == 0 else reference(title, parts[i - 1]),
                unicode_text(parts[i], expand, scratch),
            )
            for i in range(0, len(parts), 2)
        )
        counts["citation_lines"] += len(lines) - 1
    elif head is not None:
        lines = ((head, text),)
    return text, lines


def _division_reference(ctx: Context, cite: str, top: Context, title: str | None) -> str | None:
    """The canonical reference of a record as a whole (:func:`reference`): its cited divisions
    (``Speeches 2.114``: speech 2, section 114), a division named for its work first (``VM 1``),
    or, for text outside every division cut at chapters, its chapter (``Ant. 67``); for text
    the TEI does not number (``body``, a short piece of Lucian) the work's title; ``None`` for a
    division of structure only (a play's episode: its lines are cited by their own numbers)."""
    if ctx is top:
        return reference(title, cite) if cite != "body" else title  # unnumbered: the title
    refs = list(ctx.refs)
    if ctx.cite and not ctx.cite[0][:1].isdigit() and refs[:1] != ctx.cite[:1]:
        refs.insert(0, ctx.cite[0])  # a division named for its work (Hippocrates' VM): its name
    return reference(title, "|".join(refs)) if refs else None


class _Streamed:
    """A long segment's record read as the caller reads it (:attr:`SourceRecord.streamed`):
    its text converted a piece at a time (:func:`~stoicheia.sources.perseus_text.
    unicode_chunks`) and its citation lines made one at a time, each from its own reading
    of the segment's Beta Code in the spool. The counts are those :func:`_record` makes, in
    its order, made once, when the first reading of the text ends: the conversion's, then
    ``citation_lines``, the record's own (:attr:`record_counts`: ``duplicate_id``),
    ``records`` and ``chars``."""

    def __init__(
        self,
        seg: Segment,
        top: bool,
        title: str | None,
        head: str | None,
        expand,
        counts: Counter[str],
    ) -> None:
        self.seg, self.top, self.title, self.expand, self.counts = seg, top, title, expand, counts
        self.head_label = head
        self.record_counts: Counter[str] = Counter()
        self.ended: Counter[str] | None = None  # the first reading's conversion counts
        self.chars = 0  # and its characters
        self.made = False  # the record's own counts are made
        self.counted = False
        self.first: Iterator[str] = iter(())
        self.head: str | None = None
        self.calls = 0

    def _text(self) -> Iterator[str]:
        """One reading of the text; the first to end gives its counts and characters."""
        conv: Counter[str] = Counter()
        chars = 0
        beta = (t for t, _ in cite_parts(self.seg.chunks()) if t is not None)
        for chunk in unicode_chunks(beta, self.expand, conv):
            chars += len(chunk)
            yield chunk
        if self.ended is None:
            self.ended, self.chars = conv, chars
            self.settle()

    def start(self) -> bool:
        """Read up to the first text: ``False`` (its counts made) if the segment has none."""
        self.first = self._text()
        self.head = next(self.first, None)
        if self.head is None:
            self.counts.update(self.ended or Counter())
            if not self.top:
                self.counts["empty_division"] += 1
            return False
        return True

    def settle(self) -> None:
        """Make the counts, once the first reading has ended and the record's own are made."""
        if self.counted or self.ended is None or not self.made:
            return
        self.counted = True
        self.counts.update(self.ended)
        if self.seg.cites:
            self.counts["citation_lines"] += self.seg.cites
        self.counts.update(self.record_counts)
        self.counts["records"] += 1
        self.counts["chars"] += self.chars

    def __call__(self) -> tuple[Iterator[str], Iterator[tuple[str | None, str]]]:
        self.calls += 1
        if self.calls == 1:
            return itertools.chain((self.head,), self.first), self._lines()
        return self._text(), self._lines()

    def _lines(self) -> Iterator[tuple[str | None, str]]:
        """The citation lines, each converted whole (with a throwaway counter: the text
        counted what is dropped); the first labelled with the record's own reference; without
        a citation point, the whole text is its one line (if it has that reference)."""
        scratch: Counter[str] = Counter()
        if not self.seg.cites:
            if self.head_label is not None:
                beta = (t for t, _ in cite_parts(self.seg.chunks()) if t is not None)
                yield self.head_label, "".join(unicode_chunks(beta, self.expand, scratch))
            return
        label: str | None = self.head_label
        held: list[str] = []
        for text, n in itertools.chain(cite_parts(self.seg.chunks()), ((None, None),)):
            if text is not None:
                held.append(text)
                continue
            beta = "".join(held)
            held = []
            if len(beta) <= PIECE_CHARS:
                line = unicode_text(beta, self.expand, scratch)
            else:
                line = "".join(unicode_chunks((beta,), self.expand, scratch))
            del beta
            yield label, line
            if n is not None:
                label = reference(self.title, n)

    def drain(self) -> None:
        """Read the first reading of the text to its end (its counts), if the caller did not."""
        for _ in self.first:
            pass


#: what a header title carries that a reference does not: "The Deipnosophists, Book 10" (the
#: book is the reference's first number), "Greek Anthology, Volume I", "On the Natural
#: Faculties." (a final stop)
_BOOK_IN_TITLE = re.compile(r"^The\s+|,\s*(Book|Volume)\s+\w+$|\.$")
_MACHINE_READABLE = re.compile(r"\s*(\(Greek\))?\.?\s*Machine readable text\.?\s*$", re.I)


def work_title(root_el) -> str | None:
    """The work's short title from the TEI header, as a classicist cites it: the ``n`` of
    ``<title type="work" n="AJ">`` (Josephus' *Antiquitates Judaicae*: ``AJ``; Sophocles'
    *Antigone*: ``Ant.``), else the first ``<title>`` of the ``titleStmt`` less Perseus'
    ``(Greek). Machine readable text`` (``Iliad``, ``Theogony``); ``None`` without one."""
    stmt = root_el.find("teiHeader/fileDesc/titleStmt")
    if stmt is None:
        return None
    for t in stmt.iter("title"):
        if (t.get("type") or "") == "work" and (t.get("n") or "").strip():
            return (t.get("n") or "").strip()
    first = stmt.find("title")
    if first is None:
        return None
    name = _MACHINE_READABLE.sub("", " ".join("".join(first.itertext()).split()))
    # "The Deipnosophists, Book 10": the book is the reference's first number, not the title's
    name = _BOOK_IN_TITLE.sub("", name)
    return name or None


def reference(title: str | None, n: str) -> str:
    """A citation line's canonical reference from the work's short title (:func:`work_title`)
    and ``n``, the numbers of the cited divisions and of the line or section joined by ``|``
    as the walk marks them: ``AJ 14.195`` (``14|195``: book 14, section 195), ``Iliad 1.5``,
    ``Ant. 100`` (a play's lines: its episodes are not cited). A division named rather than
    numbered names the work itself and takes the title's place: ``Th. 1`` (Hesiod's
    Theogony), ``Euthyph. 2a`` (Plato's first tetralogy, then the Stephanus section)."""
    parts = [p for p in n.split("|") if p]
    named = parts and not parts[0][:1].isdigit() and len(parts) > 1
    head = f"{parts[0]} " if named else (f"{title} " if title else "")
    return head + ".".join(parts[1:] if named else parts)


#: A Beta Code word: ASCII letters with the Beta Code signs; one "accented" carries an acute,
#: grave or circumflex. Polytonic Greek accents nearly every word (at least 63% of the words
#: of every Perseus file here); English or Latin in a P4 file without ``lang`` almost none.
_ASCII_WORD = re.compile(r"[A-Za-z*()/\\=+|']*[A-Za-z][A-Za-z*()/\\=+|']*")
_ACCENTED = re.compile(r"[/\\=]")
#: the characters of a Beta Code word at the end of a text (``_ASCII_WORD``'s class)
_WORD_TAIL = re.compile(r"[A-Za-z*()/\\=+|']*\Z")
MIN_ACCENTED_WORDS, MIN_WORDS_CHECKED = 0.2, 30


def _check_beta_code(betas: Iterable[Iterable[str]], line: int, file: str) -> None:
    """Refuse a TEI P4 file whose text is not Beta Code Greek: an English (or Latin)
    translation without a ``lang`` attribute would otherwise be converted letter by letter
    into Greek-looking nonsense and trained on. Taken as not Greek: at least
    :data:`MIN_WORDS_CHECKED` ASCII words of which fewer than :data:`MIN_ACCENTED_WORDS`
    carry a Beta Code accent. ``betas``: each record's Beta Code as chunks (a word cut across
    two chunks is counted once). Raises :class:`SourceError` naming the file and the fix."""
    words = accented = 0
    for chunks in betas:
        carry = ""
        for chunk in itertools.chain(chunks, ("\n",)):  # the end of a record ends its word
            s = carry + chunk if carry else chunk
            end = _WORD_TAIL.search(s)  # a word that may go on in the next chunk waits
            carry = s[end.start() :]
            for w in _ASCII_WORD.findall(s, 0, end.start()):
                words += 1
                accented += bool(_ACCENTED.search(w))
    if words >= MIN_WORDS_CHECKED and accented < MIN_ACCENTED_WORDS * words:
        raise SourceError(
            file,
            line,
            f"the text is not Beta Code Greek: {accented} of {words} words carry a Greek accent "
            "(Greek texts: most of them; this reads as English or Latin without a lang "
            "attribute)",
            'give the Greek (_gk) file, or mark the language (<text lang="en">) so that it is '
            "left out",
        )
