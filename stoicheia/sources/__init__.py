"""Source readers: real corpus files -> :class:`SourceRecord` s of NFC Unicode Greek.

=========  ==========================  ==========================================
suffix     reader                      records
=========  ==========================  ==========================================
``.xml``   :func:`read_tei`            Perseus TEI P4 (Beta Code; one per division) or
                                      EpiDoc / TEI P5 (one per inscription or text part)
``.conllu`` :func:`read_conllu`        UD treebank; one per document
``.txt``   :func:`read_plaintext`      UTF-8 Greek; one per paragraph
``.jsonl`` :func:`read_jsonl`          one per line (``{"id", "text"}``)
=========  ==========================  ==========================================

Every reader takes ``(path, root=None, *, counts=None)``: ids are ``<path relative to
root>#<citation>`` (``root=None``: the file name), and ``counts`` (a
``collections.Counter``) receives what was read and what was dropped, by reason. Every
reader raises :class:`SourceError` (file, line, what is wrong, the fix) for input it
cannot read faithfully; none skips anything silently.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from .conllu import read_conllu
from .epidoc import read_epidoc
from .epidoc_walk import EpiDocOptions
from .jsonl import read_jsonl
from .perseus import read_perseus
from .plain import normalise_text, read_plaintext
from .record import SourceError, SourceRecord
from .tei import read_tei

__all__ = [
    "SourceRecord",
    "SourceError",
    "READERS",
    "read_perseus",
    "read_epidoc",
    "read_tei",
    "EpiDocOptions",
    "read_conllu",
    "read_plaintext",
    "read_jsonl",
    "read_source",
    "iter_source_files",
    "normalise_text",
]

_NOT_SOURCE = re.compile(r"(?i)(licen[cs]e|readme|copying|notice)([-_.]|$)")

Reader = Callable[..., Iterator[SourceRecord]]

#: File suffix -> reader.
READERS: dict[str, Reader] = {
    ".xml": read_tei,
    ".conllu": read_conllu,
    ".txt": read_plaintext,
    ".jsonl": read_jsonl,
}


def read_source(
    path: Path,
    root: Path | None = None,
    *,
    counts: Counter[str] | None = None,
    epidoc: EpiDocOptions | None = None,
    chunks: bool = False,
) -> Iterator[SourceRecord]:
    """Read one file with the reader for its suffix (see :data:`READERS`); ``epidoc``: the
    options of the EpiDoc reader (default :class:`EpiDocOptions`); ``chunks``: a ``.txt``
    paragraph, a CoNLL-U document, a JSON Lines text or an EpiDoc edition too long to hold
    whole comes in chunks (:meth:`SourceRecord.stream`, :func:`read_plaintext`,
    :func:`read_conllu`, :func:`read_jsonl`, :func:`read_epidoc`).

    Raises :class:`SourceError` for an unknown suffix (before reading anything) and
    whatever the reader raises.
    """
    path = Path(path)
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise SourceError(
            path,
            0,
            f"unknown source file type {path.suffix or '(no suffix)'!r}",
            f"give a file ending in one of {', '.join(sorted(READERS))}",
        )
    if reader is read_tei:
        return read_tei(path, root, counts=counts, epidoc=epidoc, chunks=chunks)
    if reader in (read_plaintext, read_conllu, read_jsonl):
        return reader(path, root, counts=counts, chunks=chunks)
    return reader(path, root, counts=counts)


def iter_source_files(paths: list[Path], *, skipped: list[Path] | None = None) -> list[Path]:
    """Expand ``paths`` to the source files to read, sorted by path, without duplicates.

    A file is taken as given (an unknown suffix is reported by :func:`read_source`). A
    directory is searched recursively for files with a suffix in :data:`READERS`; its other
    files, hidden entries and licence/readme files (``LICENSE-perseus-treebank.txt`` is not
    Greek text although it ends in ``.txt``) and links whose target does not exist are not
    read and, if ``skipped`` is a list, are appended to it so that the caller can report them (a
    directory without source files gives no path: the caller decides whether that is an
    error). Raises :class:`SourceError` for a path that does not exist or a file name that is
    not valid UTF-8.
    """
    found: set[Path] = set()
    for p in map(Path, paths):
        if p.is_file():
            found.add(p)
        elif p.is_dir():
            for f in sorted(p.rglob("*")):
                if not f.is_file():
                    if f.is_symlink() and skipped is not None:
                        skipped.append(f)  # a dangling link: listed, never silently passed over
                    continue
                rel_parts = f.relative_to(p).parts
                if (
                    f.suffix.lower() in READERS
                    and not _NOT_SOURCE.match(f.name)
                    and not any(x.startswith(".") for x in rel_parts)
                ):
                    found.add(f)
                elif skipped is not None:
                    skipped.append(f)
        else:
            raise SourceError(p, 0, "no such file or directory", "check the path")
    for f in found:  # record ids and shard indexes are UTF-8: a name that is not fails here, named
        try:
            f.as_posix().encode("utf-8")
        except UnicodeEncodeError:
            raise SourceError(
                Path(ascii(f.as_posix())[1:-1]),
                0,
                "the file name is not valid UTF-8",
                "rename the file (record ids are made from file names)",
            ) from None
    return sorted(found, key=lambda f: f.as_posix())
