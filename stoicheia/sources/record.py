"""The record type every reader yields, and the error every reader raises."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

__all__ = ["SourceRecord", "SourceError", "relative_name", "unique_citation"]


@dataclass(frozen=True)
class SourceRecord:
    """One unit of running Greek text from a source file.

    Attributes:
        id: stable, unique within its file: ``"<path relative to root>#<citation>"``,
            e.g. ``"Homer/hom.il_gk.xml#1"`` (Iliad book 1).
        text: NFC Unicode Greek with punctuation, words separated by single spaces, no
            leading/trailing space. Never empty.
        source: ``"perseus"``, ``"ud:grc_perseus"``, ``"ud:grc_proiel"``, ``"plain"`` or
            ``"jsonl"``.
        work: id of the whole work the record belongs to (a relative path, possibly with
            ``#document``); the held-out split sends whole works, never parts of one.
        file: path of the source file as given to the reader (for error messages).
        line: 1-based line in ``file`` where the record starts.
        known: the planes this source records, as ``{plane: False}`` for the planes it does
            *not* record (e.g. ``{"punct": False}`` for PROIEL); planes absent are known.
        lines: the edition's lines, for a source that prints line numbers (EpiDoc's
            ``<lb n="5"/>``): ``(label, text)`` per line in order, ``label`` the printed
            number (``"5"``, ``"10a"``; ``None`` for text before the first line break) and
            ``text`` the line's Leiden text (its brackets closed within the line), so that the
            lines read one after the other hold the letters of ``text``. A Perseus record
            gives its citation lines the same way, each labelled with its canonical reference
            (``"AJ 14.195"``, ``"Iliad 1.5"``: :mod:`stoicheia.sources.perseus`). Empty for a
            source without line numbers.
        meta: what the source says about the work the record belongs to, for citing it
            (EpiDoc: :func:`stoicheia.sources.epidoc_meta.inscription_meta`: ``corpus``,
            ``citation`` such as ``"IOSPE I² 10"``, ``url``, ``place``, ``findspot``,
            ``not_before``/``not_after`` in years (negative: BC), ``object_type``; each key
            only when the file gives it). Empty for the other sources.
        chunked: ``None``, or (only for a caller that asks for chunks: ``read_source(...,
            chunks=True)``, as ``stoicheia convert`` does) the text of a ``.txt`` paragraph
            or a CoNLL-U document too long to hold whole
            (:data:`stoicheia.sources.plain.STREAM_PARAGRAPH_CHARS`), read from its file in
            chunks: ``text`` is then ``""``; read it with :meth:`chunks`, once, before
            the reader goes on to the next record.
        streamed: ``None``, or (EpiDoc, for a caller that asks for chunks) the text in
            chunks *and* its lines as they are read, from one walk of the edition
            (:class:`stoicheia.sources.epidoc_stream.UnitStream`): ``text`` is ``""`` and
            ``lines`` empty; read them with :meth:`stream` before the reader goes on (a
            second call walks the edition again).
    """

    id: str
    text: str
    source: str
    work: str
    file: str
    line: int
    known: Mapping[str, bool] = field(default_factory=lambda: MappingProxyType({}))
    lines: tuple[tuple[str | None, str], ...] = ()
    meta: Mapping[str, str | int] = field(default_factory=lambda: MappingProxyType({}))
    chunked: Callable[[], Iterator[str]] | None = field(default=None, compare=False, repr=False)
    streamed: Callable[[], tuple[Iterator[str], Iterator[tuple[str | None, str]]]] | None = field(
        default=None, compare=False, repr=False
    )

    def chunks(self) -> Iterator[str]:
        """The text as chunks of ``str`` that read one after the other make the record's text:
        ``text`` itself, or for a record read in chunks (``chunked``) the chunks as they are
        read from the file (once only; the reader's counts of the record, ``records`` and
        ``chars`` included, are made when the last chunk has been read)."""
        if self.streamed is not None:
            return self.streamed()[0]
        return self.chunked() if self.chunked is not None else iter((self.text,))

    def stream(self) -> tuple[str | Iterator[str], Iterable[tuple[str | None, str]]]:
        """``(text, lines)`` as a caller that reads chunks takes them: ``text`` the ``str``,
        or its chunks (:attr:`chunked`, :attr:`streamed`); ``lines`` :attr:`lines`, or for a
        streamed record its lines as the walk gives them (read the two together: what one has
        not read waits)."""
        if self.streamed is not None:
            return self.streamed()
        if self.chunked is not None:
            return self.chunked(), self.lines
        return self.text, self.lines


class SourceError(Exception):
    """A source file cannot be read as it is.

    ``str(error)`` reads ``"<file>:<line>: <message>. Fix: <fix>"`` so that a user can open
    the file at the line and act. ``line`` is 1-based (0 when the whole file is at fault).
    """

    def __init__(self, file: str | Path, line: int, message: str, fix: str) -> None:
        self.file = str(file)
        self.line = int(line)
        self.message = message
        self.fix = fix
        super().__init__(f"{self.file}:{self.line}: {message}. Fix: {fix}")


def relative_name(path: Path, root: Path | None) -> str:
    """``path`` relative to ``root`` as a POSIX string (the id prefix of its records).

    With ``root=None`` the file name alone is used. Raises :class:`SourceError` if ``path``
    is not inside ``root``.
    """
    if root is None:
        return path.name
    try:
        return path.resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        raise SourceError(
            path,
            0,
            f"file is not inside the corpus root {root}",
            "pass the directory that contains the file as root (ids are relative to it)",
        ) from None


def read_utf8(path: Path, encoding: str = "utf-8") -> str:
    """The text of ``path`` decoded as ``encoding`` (``utf-8`` or ``utf-8-sig``).

    Raises :class:`SourceError` naming the line of the first byte that is not valid UTF-8.
    """
    data = Path(path).read_bytes()
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise SourceError(
            str(path), line, f"bytes are not UTF-8 ({e.reason})", "re-save the file as UTF-8"
        ) from None


def unique_citation(cite: str, seen: Counter[str], counts: Counter[str] | None) -> str:
    """``cite`` made unique within one file: the second record with the same citation gets
    ``"<cite>~2"``, the third ``"<cite>~3"``, ... (each counted ``duplicate_id`` in ``counts``
    unless it is ``None``: a reader for which a repeated citation is normal passes ``None``).

    ``seen`` counts the citations given so far in the file (updated here); a reader keeps one
    per file so that record ids stay unique and stable (the same file gives the same ids).
    """
    seen[cite] += 1
    if seen[cite] > 1:
        if counts is not None:
            counts["duplicate_id"] += 1
        return f"{cite}~{seen[cite]}"
    return cite
