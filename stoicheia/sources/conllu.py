"""Reader for Universal Dependencies CoNLL-U treebanks (``shared/corpus/ud/*.conllu``).

The sentence text is the ``# text =`` comment (UD requires it; a sentence without one raises
:class:`SourceError` naming its line, rather than being rebuilt from tokens, which would
guess the spacing). Sentences are grouped into documents that reflect real works:

* ``# newdoc id = ...`` starts a document where the file has them (the Perseus treebank:
  ``tlg0003.tlg001.perseus-grc1.1.tb.xml`` = Thucydides book 1); its ``work`` is the
  ``tlgNNNN.tlgNNN`` part (author.work), so all books of one work go to the same split.
* otherwise (PROIEL) each run of consecutive sentences with the same ``# source =`` is a
  document (``Histories, Book 1, chapter 10``; ``The Greek New Testament, Matthew 5``); its
  ``work`` drops the trailing book/chapter numbers (``Histories``, ``The Greek New
  Testament, Matthew``).

One record per document: sentences joined by a space, id ``<file>#<document>`` (the document
name with runs of characters other than letters, digits, ``.``, ``-`` replaced by ``_``; a
repeated name gets ``~2``...). ``source`` is ``"ud:<treebank>"`` from the file name
(``grc_proiel-ud-dev.conllu`` -> ``ud:grc_proiel``). The PROIEL treebank records no
punctuation: ``known = {"punct": False}``; its sentence ends are therefore not in the text.
The Perseus treebank writes elision as a combining comma above on the consonant (``δ̓``):
:func:`stoicheia.sources.plain.normalise_text` turns it into U+2019 like every other source.

``counts`` (optional ``Counter``) receives ``records``, ``sentences``, ``chars`` and
``elision_mark`` (U+0313 elisions rewritten).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import conllu as conllu_lib

from .plain import STREAM_PARAGRAPH_CHARS, iter_utf8_lines, normalise_text
from .record import SourceError, SourceRecord, relative_name, unique_citation

__all__ = ["read_conllu", "NO_PUNCT_TREEBANKS"]

#: Treebanks whose text carries no punctuation (the PROIEL annotation drops it).
NO_PUNCT_TREEBANKS = frozenset({"grc_proiel"})

_SLUG = re.compile(r"[^\w.\-]+")
_TREEBANK = re.compile(r"^([a-z]{2,3}_[A-Za-z0-9]+)-ud-")
_TLG_WORK = re.compile(r"^(tlg\d+\.tlg\d+)\.")
_TRAILING_NUMBERS = re.compile(r"(?:,?\s*(?:book|chapter)?\s*\d+)+\s*$", re.I)


def _slug(name: str) -> str:
    return _SLUG.sub("_", name).strip("_") or "doc"


def _treebank(path: Path) -> str:
    m = _TREEBANK.match(path.name)
    return m.group(1) if m else path.stem


def read_conllu(
    path: Path,
    root: Path | None = None,
    *,
    counts: Counter[str] | None = None,
    chunks: bool = False,
) -> Iterator[SourceRecord]:
    """Yield one record per document of a CoNLL-U file (see the module docstring).

    ``path``: the ``.conllu`` file; ``root``: the directory ids are relative to (``None``: the
    file name). The file is read a line at a time and each document is yielded when the next
    one begins: memory holds one document, never the file. ``chunks=True`` (``stoicheia
    convert``): a document longer than :data:`~stoicheia.sources.plain.STREAM_PARAGRAPH_CHARS`
    characters comes as a record read in chunks (:attr:`SourceRecord.chunked`, its ``text``
    empty; the chunks are its sentences, read from the file as the caller reads them), so that
    memory is bounded whatever the documents; the same records, text and counts. Raises
    :class:`SourceError` (file, line, fix) for bytes that are not UTF-8, a token line that is
    not 10 tab-separated columns, a sentence without ``# text``, an empty ``# text``, or a
    block the ``conllu`` package cannot parse, when the reading reaches it (the documents
    before it have been yielded; ``stoicheia convert`` then drops the whole file).
    """
    path = Path(path)
    file = str(path)
    counts = counts if counts is not None else Counter()
    rel = relative_name(path, root)
    treebank = _treebank(path)
    known = MappingProxyType({"punct": False} if treebank in NO_PUNCT_TREEBANKS else {})
    sentences = _PushBack(_sentences(path, file, counts))
    seen: Counter[str] = Counter()
    for name, work, line, text in sentences:  # the first sentence of a document
        # a document resumed after another one is normal in UD: not counted as a duplicate
        key = unique_citation(_slug(name), seen, None)
        held, size = [text], len(text)
        for sentence in sentences:
            if sentence[0] != name:
                sentences.push(sentence)
                break
            held.append(sentence[3])
            size += 1 + len(sentence[3])
            if chunks and size > STREAM_PARAGRAPH_CHARS:
                break
        record = SourceRecord(
            id=f"{rel}#{key}",
            text="",
            source=f"ud:{treebank}",
            work=f"{rel}#{_slug(work)}",
            file=file,
            line=line,
            known=known,
        )
        if not chunks or size <= STREAM_PARAGRAPH_CHARS:
            text = " ".join(held)
            counts["records"] += 1
            counts["chars"] += len(text)
            yield replace(record, text=text)
            continue
        # a long document: its sentences are read from the file as the caller reads them
        chunked = _document_chunks(name, held, sentences, counts)
        yield replace(record, chunked=lambda chunked=chunked: chunked)
        for _ in chunked:  # whatever the caller did not read
            pass


class _PushBack:
    """An iterator with one item given back (the first sentence of the next document)."""

    def __init__(self, items: Iterator[tuple[str, str, int, str]]) -> None:
        self.items = items
        self.back: list[tuple[str, str, int, str]] = []

    def __iter__(self) -> _PushBack:
        return self

    def __next__(self) -> tuple[str, str, int, str]:
        return self.back.pop() if self.back else next(self.items)

    def push(self, item: tuple[str, str, int, str]) -> None:
        self.back.append(item)


def _document_chunks(
    name: str, held: list[str], sentences: _PushBack, counts: Counter[str]
) -> Iterator[str]:
    """The text of a long document in chunks (its sentences, each after the first with the
    space that joins them): ``held`` read so far, then ``sentences`` while they are the
    document's (``name``). Its ``records`` and ``chars`` go to ``counts`` at its end."""
    n = 0
    for k, text in enumerate(held):
        chunk = text if k == 0 else " " + text
        n += len(chunk)
        yield chunk
    held.clear()
    for sentence in sentences:
        if sentence[0] != name:
            sentences.push(sentence)
            break
        chunk = " " + sentence[3]
        n += len(chunk)
        yield chunk
    counts["records"] += 1
    counts["chars"] += n


def _sentences(path: Path, file: str, counts: Counter[str]) -> Iterator[tuple[str, str, int, str]]:
    """``(document name, work, first line, text)`` of each sentence of the file in order, the
    text normalised (:func:`normalise_text`), read a line at a time; counted ``sentences``."""
    current_newdoc: str | None = None
    for start, block in _blocks(iter_utf8_lines(path)):
        _check_columns(file, start, block)
        try:
            sentence = conllu_lib.parse("".join(block))
        except Exception as e:  # conllu raises ParseException and plain ValueErrors
            raise SourceError(
                file,
                start,
                f"CoNLL-U block cannot be parsed ({e})",
                "make every token line 10 tab-separated columns",
            ) from None
        if not sentence:
            continue
        meta = sentence[0].metadata
        text = meta.get("text")
        if text is None:
            raise SourceError(
                file,
                start,
                "sentence has no '# text =' comment",
                "add '# text = <sentence>' (UD requires it); the reader does not rebuild "
                "text from tokens",
            )
        text = normalise_text(text, counts)
        if not text:
            raise SourceError(file, start, "empty '# text ='", "give the sentence text")
        if "newdoc id" in meta:
            current_newdoc = meta["newdoc id"].strip()
        if current_newdoc is not None:
            m = _TLG_WORK.match(current_newdoc)
            name, work = current_newdoc, (m.group(1) if m else current_newdoc)
        elif meta.get("source"):
            name = meta["source"].strip()
            work = _TRAILING_NUMBERS.sub("", name) or name
        else:
            name, work = "doc", "doc"
        counts["sentences"] += 1
        yield name, work, start, text


def _check_columns(file: str, start: int, block: list[str]) -> None:
    """Refuse a token line that is not 10 tab-separated columns (CoNLL-X, a word/tag list
    or a spreadsheet saved as ``.conllu``): the ``conllu`` package reads 2 to 9 columns
    without complaint, and the ``# text`` beside them would be taken as a UD sentence."""
    for k, line in enumerate(block):
        if line.startswith("#"):
            continue
        n = len(line.rstrip("\r\n").split("\t"))
        if n != 10:
            raise SourceError(
                file,
                start + k,
                f"token line has {n} tab-separated column{'s' if n != 1 else ''}, CoNLL-U has 10",
                "give a CoNLL-U file (10 columns per token line, "
                "see universaldependencies.org/format.html), or the text as .txt",
            )


def _blocks(lines: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    """Sentence blocks (separated by blank lines) with their 1-based first line."""
    block: list[str] = []
    start = 0
    for i, line in enumerate(lines, 1):
        if line.strip():
            if not block:
                start = i
            block.append(line if line.endswith("\n") else line + "\n")
        elif block:
            yield start, block
            block = []
    if block:
        yield start, block
