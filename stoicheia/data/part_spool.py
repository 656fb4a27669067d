"""The parts (MDS samples) of a source file on their way from the reader process to the shard
writer, held in memory only a few at a time: beyond :data:`CHUNK_PARTS` parts per file, the
reader writes them to a spool file on disk in chunks of at most that many, and the writer reads
them back one chunk at a time (:class:`SpooledParts`).

Without it a reader process held every part of a file until the file was done (and the writer
a second copy): a 30 MB paragraph took 7 MB of memory per MB of text
(benchmarks/convert_memory.py). The spool lives in the conversion's partial output folder and
goes with it; the samples, and so the shards, are the same either way.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

#: Parts a reader process holds in memory per source file before it writes them to the spool
#: (each part at most ``--max-record-letters`` letters, about 6 bytes a letter): its memory for
#: parts is bounded by ``2 * CHUNK_PARTS * max_record_letters`` slots whatever the file.
CHUNK_PARTS = 64


@dataclass
class SpooledParts:
    """The parts of one record written to ``path`` as pickled chunks (lists of part dicts) at
    byte ``offsets``; ``count`` parts in all. Iterating reads one chunk at a time."""

    path: str
    offsets: list[int] = field(default_factory=list)
    count: int = 0

    def __iter__(self) -> Iterator[dict]:
        with open(self.path, "rb") as f:
            for off in self.offsets:
                f.seek(off)
                yield from pickle.load(f)

    def __len__(self) -> int:
        return self.count


class PartSpool:
    """One reader's spool for one source file: :meth:`take` turns a record's parts (an iterable
    made lazily, one part at a time) into a list (few parts) or :class:`SpooledParts`, so that
    at most ``2 * chunk`` parts of the file are in memory at once; :attr:`peak` is the most that
    were (for tests and the benchmark). The file ``folder/spool-PID-N`` is made on first need."""

    def __init__(self, folder: Path | None, chunk: int | None = None):
        self.folder = folder
        self.chunk = CHUNK_PARTS if chunk is None else chunk
        self.inline = 0  # parts of this file kept in memory (in lists)
        self.peak = 0
        self._file = None
        self.path: str | None = None

    def _write(self, parts: list[dict], into: SpooledParts) -> None:
        if self._file is None:
            assert self.folder is not None
            self.folder.mkdir(parents=True, exist_ok=True)
            n = 0
            while (self.folder / f"spool-{os.getpid()}-{n}").exists():
                n += 1
            self.path = str(self.folder / f"spool-{os.getpid()}-{n}")
            self._file = open(self.path, "wb")
        into.offsets.append(self._file.tell())
        pickle.dump(parts, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        into.count += len(parts)

    def take(self, parts: Iterable[dict]) -> list[dict] | SpooledParts:
        """The parts of one record, in order: a list while the file's parts held so far fit in
        :attr:`chunk` (or no spool folder was given), else spooled in chunks."""
        buf: list[dict] = []
        spooled: SpooledParts | None = None
        for part in parts:
            buf.append(part)
            self.peak = max(self.peak, self.inline + len(buf))
            # once a record is spooled, its chunks are full ones
            full = len(buf) >= self.chunk or (
                spooled is None and self.inline + len(buf) > self.chunk
            )
            if self.folder is not None and full:
                if spooled is None:
                    spooled = SpooledParts(path="")
                self._write(buf, spooled)
                buf = []
        if spooled is None:
            self.inline += len(buf)
            return buf
        if buf:
            self._write(buf, spooled)
        spooled.path = self.path or ""
        return spooled

    def drop(self, parts: list[dict] | SpooledParts) -> None:
        """Forget the parts of a record that is not kept after all (its filter is decided once
        all its parts are made): a list no longer counts as held; spooled chunks stay unread
        in the spool file, which goes with the conversion's partial folder."""
        if isinstance(parts, list):
            self.inline -= len(parts)

    def close(self) -> None:
        """Flush the spool file (the writer reads it after the reader returns)."""
        if self._file is not None:
            self._file.close()
            self._file = None
