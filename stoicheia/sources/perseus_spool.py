"""The Beta Code the Perseus walk collects, held until its records are read: in memory up to
:data:`HOLD_BETA_CHARS`, the rest in an unnamed temporary file.

The records of a Perseus file come in the order of their division's start, the text outside
every division first, and the file is refused before its first record if its text is not Beta
Code Greek (:func:`stoicheia.sources.perseus._check_beta_code`): both need the whole walk done
before the first record. The walk's Beta Code (about a byte a letter) was held for that as
lists of strings; :class:`BetaSpool` holds it up to a bound and writes the rest to disk as
UTF-8, so that beyond the parsed tree (which is freed once the walk ends) the memory of a file
with a huge division does not grow with it. Each division's text (:class:`DivisionText`) is
cut into :class:`Segment` s at the chapter markers the walk writes into the text outside every
division (``\\x01<n>\\x02<line>\\x01``: one record each); a segment is read back as chunks of
``str``, as often as asked (:meth:`Segment.chunks`).
"""

from __future__ import annotations

import codecs
import re
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

__all__ = ["HOLD_BETA_CHARS", "BetaSpool", "DivisionText", "Segment"]

#: characters of Beta Code (plus :data:`_PIECE_COST` a piece) held in memory, all divisions
#: together, before what is held is written to the spool file
HOLD_BETA_CHARS = 1 << 22
#: what a piece held in a list costs beyond its characters (the ``str`` and the list slot),
#: in the same unit
_PIECE_COST = 64
#: characters read back at a time (bytes of the spool file, or pieces held joined)
READ_CHARS = 1 << 16
_SPLIT = re.compile("\x01([^\x02]*)\x02(\\d+)\x01")


class Segment:
    """One record's Beta Code: ``cite`` (the chapter's ``n``, ``None`` for a division's own
    text before any chapter marker; ``""`` for a marker without ``n``), ``line`` (1-based,
    where it starts), ``chars`` (its length in characters) and ``cites`` (the citation points,
    :data:`stoicheia.sources.perseus_walk.CITE`, in it)."""

    __slots__ = ("chars", "cite", "cites", "held", "line", "runs", "spool")

    def __init__(self, spool: BetaSpool, cite: str | None, line: int) -> None:
        self.spool = spool
        self.cite = cite
        self.line = line
        self.chars = 0
        self.cites = 0
        self.held: list[str] = []  # pieces in memory, after the runs
        self.runs: list[tuple[int, int]] = []  # (offset, bytes) in the spool file, in order

    def chunks(self) -> Iterator[str]:
        """The segment's Beta Code as chunks of at most about :data:`READ_CHARS` characters
        (none empty), read one after the other in order: the runs from the spool file, then
        what is held. Each call reads it afresh."""
        for offset, size in self.runs:
            decoder = codecs.getincrementaldecoder("utf-8")()
            done = 0
            while done < size:
                n = min(READ_CHARS, size - done)
                text = decoder.decode(self.spool.read(offset + done, n), final=done + n == size)
                done += n
                if text:
                    yield text
        batch: list[str] = []
        n = 0
        for piece in self.held:
            batch.append(piece)
            n += len(piece)
            if n >= READ_CHARS:
                yield "".join(batch)
                batch, n = [], 0
        if n:
            yield "".join(batch)

    def read(self) -> str:
        """The whole Beta Code (a segment short enough to hold)."""
        return "".join(self.chunks())

    def release(self) -> None:
        """Forget what is held (the record is read)."""
        self.spool.held -= sum(len(p) + _PIECE_COST for p in self.held)
        self.held = []
        self.runs = []


class DivisionText:
    """The Beta Code of one division (or of the text outside every division) as the walk
    appends it (:meth:`append`, the interface of the list it replaces), cut into
    :attr:`segments` at chapter markers. ``cite`` and ``line`` are the first segment's."""

    __slots__ = ("segments", "spool")

    def __init__(self, spool: BetaSpool, line: int) -> None:
        self.spool = spool
        self.segments = [Segment(spool, None, line)]

    def append(self, piece: str) -> None:
        """Add one piece of the walk: text, a citation point ``\\x03<n>\\x04`` (counted in
        :attr:`Segment.cites`), or a chapter marker followed by text (a new segment)."""
        if piece[:1] == "\x01":
            m = _SPLIT.match(piece)
            if m is not None:
                self.segments.append(Segment(self.spool, m.group(1), int(m.group(2))))
                piece = piece[m.end() :]
                if not piece:
                    return
        seg = self.segments[-1]
        if piece[:1] == "\x03":
            seg.cites += 1
        seg.chars += len(piece)
        seg.held.append(piece)
        self.spool.held += len(piece) + _PIECE_COST
        if self.spool.held > HOLD_BETA_CHARS:
            self.spool.spill()


class BetaSpool:
    """Where the walk's Beta Code waits for its records (module docstring): :meth:`text`
    makes one division's :class:`DivisionText`; past :data:`HOLD_BETA_CHARS` held, every
    segment's held pieces are written to an unnamed temporary file (deleted when closed:
    :meth:`close`, or use the spool as a context manager). Raises ``OSError`` if the
    temporary file cannot be written (a full disk)."""

    def __init__(self) -> None:
        self.held = 0
        self.file: BinaryIO | None = None
        self.texts: list[DivisionText] = []

    def __enter__(self) -> BetaSpool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def text(self, line: int) -> DivisionText:
        """A new division's text, starting at source line ``line``."""
        t = DivisionText(self, line)
        self.texts.append(t)
        return t

    def spill(self) -> None:
        """Write every held piece to the spool file (each segment's as one run)."""
        if self.file is None:
            self.file = tempfile.TemporaryFile(prefix="stoicheia-perseus-")
        f = self.file
        f.seek(0, 2)
        for t in self.texts:
            for seg in t.segments:
                if not seg.held:
                    continue
                start = f.tell()
                for k in range(0, len(seg.held), 1024):
                    f.write("".join(seg.held[k : k + 1024]).encode("utf-8"))
                seg.runs.append((start, f.tell() - start))
                seg.held = []
        self.held = 0

    def read(self, offset: int, size: int) -> bytes:
        """``size`` bytes of the spool file from ``offset``."""
        assert self.file is not None
        self.file.seek(offset)
        return self.file.read(size)

    def close(self) -> None:
        """Delete the spool file (if one was written)."""
        if self.file is not None:
            self.file.close()
            self.file = None
