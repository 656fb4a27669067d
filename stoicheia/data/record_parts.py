"""A record's text to the parts that ``stoicheia convert`` writes as MDS samples (each at most
``--max-record-letters`` letters, cut at word starts, with the edition's line starts), made
piece by piece so that memory is bounded by the record limit and the encoder's piece
(:data:`stoicheia.text.filter.ENCODE_PIECE_CHARS`), not by the paragraph.

The whole-record path (:func:`stoicheia.text.filter.normalise_record`, then
:func:`stoicheia.data.sample_planes.split_at_words`, :func:`stoicheia.data.line_numbers.line_starts`
and :func:`~stoicheia.data.line_numbers.lines_of_parts`) built the planes of the whole
paragraph, joined them, and cut afterwards: a 30 MB paragraph peaked at hundreds of MB above
the imports (benchmarks/convert_memory.py). :func:`record_parts` gives the same parts:

* a text of at most ``ENCODE_PIECE_CHARS`` characters (every normal record) goes the
  whole-record path, unchanged;
* a longer one is encoded piece by piece (:func:`stoicheia.text.filter.encode_pieces`: the
  pieces the whole-record path joined), and a part is cut as soon as more than
  ``max_letters`` letters wait, at the last word start within the limit, exactly where
  ``split_at_words`` cuts (its choice depends on the letters up to the limit only);
* its line starts are the running sums of its lines' letters, checked against the record's
  letters part by part (the rule of ``line_starts``); where they differ, the realignment needs
  the whole record, so :class:`LinesMisaligned` is raised and the caller takes the
  whole-record path for that record (:func:`record_parts` with ``whole=True``).

Whether the record is kept (:func:`stoicheia.text.filter.normalise_record`'s filter: Greek
letters at all, a Greek share of at least ``min_greek``) is known only once its last piece is
read: the parts are made first (the caller spools them, :mod:`stoicheia.data.part_spool`) and
:attr:`RecordParts.reject_reason` says afterwards whether to drop them.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from stoicheia.data.line_numbers import line_starts, lines_of_parts
from stoicheia.data.sample_planes import split_at_words
from stoicheia.text import alphabet as A
from stoicheia.text import filter as text_filter
from stoicheia.text.encode import encode_text
from stoicheia.text.filter import (
    NON_GREEK_KINDS,
    encode_pieces,
    greek_fraction,
    normalise_record,
)
from stoicheia.text.planes import Planes

__all__ = ["LinesMisaligned", "RecordParts", "record_parts"]

Part = tuple[Planes, list[tuple[int, str]]]


class LinesMisaligned(Exception):
    """A long record's lines do not hold the letters of the record one after the other: their
    starts must be realigned over the whole record (:func:`record_parts` with ``whole=True``)."""


@dataclass
class RecordParts:
    """The parts of one record (iterate once: ``(planes, line starts)`` per part, ``planes`` at
    most ``max_letters`` uint8 slots of each plane, shape ``(n,)``, line starts ``[(slot,
    label), ...]`` with slots counted from the part's start) and, once iterated to the end,
    what :func:`stoicheia.text.filter.normalise_record` says of it: ``dropped`` and ``leiden``
    (its counts), ``reject_reason`` (``None``: kept; ``"empty"`` or ``"not_greek"``: drop
    the parts), ``n_words`` (the record's words, as ``Planes.word_starts`` counts them) and
    ``line_counts`` (``line_numbers``, ``line_numbers_realigned``, as ``line_starts`` counts
    them; only for a kept record). Iterating raises :class:`LinesMisaligned` (long records
    only, before any count is final)."""

    parts: Iterator[Part]
    dropped: Counter = field(default_factory=Counter)
    leiden: Counter = field(default_factory=Counter)
    reject_reason: str | None = None
    n_words: int = 0
    line_counts: Counter = field(default_factory=Counter)

    def __iter__(self) -> Iterator[Part]:
        return self.parts


def record_parts(
    text: str | Iterable[str],
    known: Mapping[str, bool] | None,
    lines: Sequence[tuple[str | None, str]] | Iterable[tuple[str | None, str]],
    *,
    min_greek: float,
    max_letters: int,
    whole: bool = False,
) -> RecordParts:
    """The parts of a record's ``text`` (module docstring): encoded with its Leiden notation,
    filtered (``min_greek`` a fraction in ``[0, 1]``), cut into parts of at most
    ``max_letters`` letters at word starts, each with the starts of the ``lines`` (the
    record's ``(label, Leiden text)``, :attr:`stoicheia.sources.record.SourceRecord.lines`)
    that begin in it. ``text`` is a ``str``, or its chunks read one after the other as they
    come (:meth:`stoicheia.sources.record.SourceRecord.stream`: read once only), and then
    ``lines`` may be an iterable read as the parts need them (a streamed EpiDoc record's,
    fed by the same walk; read to its end to know whether the record has lines at all).
    ``whole=True`` (or a ``str`` of at most :data:`~stoicheia.text.filter.ENCODE_PIECE_CHARS`
    characters): the whole-record path; else piece by piece, the same parts. Raises
    ``ValueError`` for ``min_greek`` outside ``[0, 1]`` or ``max_letters < 1``."""
    if not 0.0 <= min_greek <= 1.0:
        raise ValueError(f"min_greek must be a fraction in [0, 1], got {min_greek}")
    if max_letters < 1:
        raise ValueError(f"max_letters must be >= 1, got {max_letters}")
    out = RecordParts(parts=iter(()))
    if not isinstance(text, str):  # read in chunks (a long paragraph, document or edition)
        if whole:
            text, lines = "".join(text), tuple(lines)
        else:
            out.parts = _streamed(out, text, known, lines, min_greek, max_letters)
            return out
    if whole or len(text) <= text_filter.ENCODE_PIECE_CHARS:
        out.parts = _whole(out, text, known, lines, min_greek, max_letters)
    else:
        out.parts = _streamed(out, text, known, lines, min_greek, max_letters)
    return out


def _whole(
    out: RecordParts,
    text: str,
    known: Mapping[str, bool] | None,
    lines: Sequence[tuple[str | None, str]],
    min_greek: float,
    max_letters: int,
) -> Iterator[Part]:
    norm = normalise_record(text, known=known, min_greek=min_greek)
    out.dropped, out.leiden, out.reject_reason = norm.dropped, norm.leiden, norm.reject_reason
    if norm.planes is None:
        return
    cut = split_at_words(norm.planes, max_letters)
    starts = line_starts(norm.planes.chars, lines, known, out.line_counts)
    out.n_words = len(norm.planes.word_starts())
    yield from zip(cut, lines_of_parts(starts, [len(p) for p in cut]), strict=True)


def _streamed(
    out: RecordParts,
    text: str | Iterable[str],
    known: Mapping[str, bool] | None,
    lines: Iterable[tuple[str | None, str]],
    min_greek: float,
    max_letters: int,
) -> Iterator[Part]:
    dropped: Counter = Counter()
    leiden: Counter = Counter()
    cursor = _LineCursor.of(lines, known)
    waiting: list[Planes] = []  # letters read and not yet in a part
    n_waiting = 0
    n = n_letters = word_ends = 0
    last_boundary = None
    for enc in encode_pieces(text, known):
        p = enc.planes
        dropped.update(enc.dropped)
        leiden.update(enc.leiden)
        if not len(p):
            continue
        n += len(p)
        n_letters += p.n_letters()
        b = p.boundary
        word_ends += int(np.count_nonzero((b == A.BOUNDARY_WORD) | (b == A.BOUNDARY_SENTENCE)))
        last_boundary = int(b[-1])
        waiting.append(p)
        n_waiting += len(p)
        if n_waiting > max_letters:
            ready, rest = _cut(Planes.concat(waiting), max_letters)
            waiting, n_waiting = [rest], len(rest)
            for part in ready:
                yield part, cursor.take(part) if cursor else []
    if waiting and n_waiting:
        last = Planes.concat(waiting)
        yield last, cursor.take(last) if cursor else []
    if cursor is not None:
        cursor.finish()
    out.dropped, out.leiden = dropped, leiden
    # normalise_record's filter, on the counts of the whole record
    if n_letters == 0:
        non_greek = any(dropped.get(k, 0) for k in NON_GREEK_KINDS)
        out.reject_reason = "not_greek" if non_greek else "empty"
    elif greek_fraction(dropped, n_letters) < min_greek:
        out.reject_reason = "not_greek"
    else:
        # Planes.word_starts: slot 0 and each slot after a word or sentence end, the last
        # slot's own end not counted
        ends_before_last = word_ends - (last_boundary in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE))
        out.n_words = 1 + ends_before_last if n else 0
        if cursor is not None:
            out.line_counts["line_numbers"] += cursor.kept


def _cut(planes: Planes, max_letters: int) -> tuple[list[Planes], Planes]:
    """The parts :func:`split_at_words` cuts from the front of ``planes`` while more than
    ``max_letters`` letters remain, and the rest (at most ``max_letters``, copied)."""
    parts = split_at_words(planes, max_letters)
    rest = parts.pop()  # the last part is what remains (``planes`` itself when short)
    return parts, Planes(*(getattr(rest, k).copy() for k in A.PLANES))


class _LineCursor:
    """The line starts of a long record, part by part: the running sums of the lines' letters
    (each line encoded alone, as :func:`stoicheia.data.line_numbers.line_starts` does),
    compared with the record's letters as the parts come, the lines read from their iterable
    as the parts need them. Raises :class:`LinesMisaligned` at the first difference."""

    @classmethod
    def of(
        cls, lines: Iterable[tuple[str | None, str]], known: Mapping[str, bool] | None
    ) -> _LineCursor | None:
        """The cursor of ``lines``, or ``None`` for a record without lines (an iterable is
        read up to its first line to know)."""
        if isinstance(lines, Sequence):
            return cls(iter(lines), known) if lines else None
        it = iter(lines)
        first = next(it, None)
        return None if first is None else cls(itertools.chain((first,), it), known)

    def __init__(
        self, lines: Iterator[tuple[str | None, str]], known: Mapping[str, bool] | None
    ) -> None:
        self.lines, self.known = lines, known
        self.end = 0  # slots of the lines encoded so far (where line k begins)
        self.base = 0  # slots of the record's parts taken so far
        self.pending: list[np.ndarray] = []  # the lines' letters from self.base on
        self.kept = 0  # line starts given out (counted line_numbers)

    def take(self, part: Planes) -> list[tuple[int, str]]:
        """The line starts in ``part`` (the record's next part), from its first slot."""
        stop = self.base + len(part)
        starts: list[tuple[int, str]] = []
        while self.end < stop and (line := next(self.lines, None)) is not None:
            label, text = line
            chars = encode_text(text, self.known).planes.chars
            if label is not None:
                if starts and starts[-1][0] == self.end - self.base:
                    starts.pop()  # the line before had no slot of its own
                starts.append((self.end - self.base, label))
            self.pending.append(chars)
            self.end += len(chars)
        joined = np.concatenate(self.pending) if self.pending else np.zeros(0, np.uint8)
        if len(joined) < len(part) or not np.array_equal(joined[: len(part)], part.chars):
            raise LinesMisaligned
        self.pending = [joined[len(part) :].copy()]
        self.base = stop
        self.kept += len(starts)
        return starts

    def finish(self) -> None:
        """After the last part: the lines left must hold no letter (``line_starts`` compares
        the whole lengths)."""
        left = sum(len(c) for c in self.pending)
        for _, text in self.lines:
            left += len(encode_text(text, self.known).planes.chars)
        if left:
            raise LinesMisaligned
