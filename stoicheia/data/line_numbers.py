"""The edition's line numbers as letter-slot offsets of a record, and the MDS column that
carries them.

An EpiDoc record knows its lines (:attr:`stoicheia.sources.record.SourceRecord.lines`: the
printed number of each ``<lb n="..."/>`` and the Leiden text of the line); a Perseus record its
citation lines (the canonical reference of each verse line or section, ``AJ 14.195``). The
shards hold letter slots, not text, so each line's text is encoded the way the whole record is
(:func:`stoicheia.text.encode.encode_text`) and its slots are laid against the record's: where
the letters of the lines read one after the other equal the record's (the rule), the line
starts are their running sums; where they differ (encoding in context can differ by a slot:
a letter read in a word that runs across the line end), the lines' letters are aligned with
the record's by the edit operations of ``rapidfuzz`` (Levenshtein opcodes) and each line starts
where its first letter landed (counted ``line_numbers_realigned``).

The MDS column :data:`LINES_COLUMN` (``str``) holds, for each sample (one record or one part
of a long record), the lines that begin in it as JSON ``[[slot, "label"], ...]``: ``slot`` is
the offset in the sample's planes, ``label`` the printed line number. ``"[]"`` for a record
without line numbers; shards written before the column existed have no such column, which
:func:`decode_lines` reads as ``None`` (line unknown).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
from rapidfuzz.distance import Levenshtein

from stoicheia.text.encode import encode_text

__all__ = ["LINES_COLUMN", "decode_lines", "encode_lines", "line_starts", "lines_of_parts"]

#: the MDS column of the line starts (``str``: JSON)
LINES_COLUMN = "lines"


def line_starts(
    chars: np.ndarray,
    lines: Sequence[tuple[str | None, str]],
    known: Mapping[str, bool] | None = None,
    counts: Counter[str] | None = None,
) -> list[tuple[int, str]]:
    """Where each numbered line of a record begins: ``[(slot, label), ...]`` ascending.

    ``chars``: the record's ``chars`` plane (uint8 ``(n,)``, letter ids and MASK at lacuna
    slots) as encoded from its whole text; ``lines``: the record's ``(label, Leiden text)``
    pairs (a ``None`` label: text before the first line, whose slots count but which starts
    no numbered line); ``known`` as for :func:`encode_text`. A line with no slot (an empty
    line) gives way to the next line that starts at the same slot. ``counts`` receives
    ``line_numbers`` (lines kept) and ``line_numbers_realigned`` (records whose lines'
    letters differed from the record's and were aligned, see the module docstring).
    Returns ``[]`` when ``lines`` is empty.
    """
    if not lines:
        return []
    chars = np.asarray(chars, dtype=np.uint8)
    per_line = [encode_text(text, known).planes.chars for _, text in lines]
    sizes = np.array([len(c) for c in per_line], dtype=np.int64)
    begins = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    joined = np.concatenate(per_line) if per_line else np.zeros(0, np.uint8)
    if len(joined) == len(chars) and np.array_equal(joined, chars):
        at = begins
    else:
        at = _aligned(joined, chars, begins)
        if counts is not None:
            counts["line_numbers_realigned"] += 1
    out: list[tuple[int, str]] = []
    for (label, _), slot in zip(lines, at.tolist(), strict=True):
        if label is None or slot >= len(chars):
            continue
        if out and out[-1][0] == slot:
            out.pop()  # the line before had no slot of its own
        out.append((int(slot), label))
    if counts is not None:
        counts["line_numbers"] += len(out)
    return out


def _aligned(joined: np.ndarray, chars: np.ndarray, begins: np.ndarray) -> np.ndarray:
    """``begins`` (offsets in ``joined``) moved to ``chars`` by Levenshtein opcodes."""
    ops = Levenshtein.opcodes(joined.tolist(), chars.tolist())
    out = np.empty(len(begins), dtype=np.int64)
    for k, i in enumerate(begins.tolist()):
        out[k] = len(chars)
        for op in ops:
            if op.src_start <= i < op.src_end:
                span = op.dest_end - op.dest_start
                out[k] = op.dest_start + (min(i - op.src_start, span - 1) if span else 0)
                break
    return out


def lines_of_parts(
    starts: Sequence[tuple[int, str]], part_lengths: Sequence[int]
) -> list[list[tuple[int, str]]]:
    """The line starts of a record cut into parts of ``part_lengths`` slots (as the shards
    store a long record): per part, the lines that begin in it, offsets from the part's start."""
    out: list[list[tuple[int, str]]] = []
    begin = 0
    for n in part_lengths:
        out.append([(s - begin, label) for s, label in starts if begin <= s < begin + n])
        begin += n
    return out


def encode_lines(starts: Sequence[tuple[int, str]]) -> str:
    """The :data:`LINES_COLUMN` value of one sample (JSON)."""
    return json.dumps([[int(s), str(label)] for s, label in starts], ensure_ascii=False)


def decode_lines(sample: Mapping) -> list[tuple[int, str]] | None:
    """The line starts of one MDS sample (``[(slot, label), ...]``), or ``None`` for shards
    written without the column (line unknown). Raises ``ValueError`` naming the column for a
    value that is not the JSON :func:`encode_lines` writes."""
    raw = sample.get(LINES_COLUMN)
    if raw is None:
        return None
    try:
        rows = json.loads(raw)
        return [(int(s), str(label)) for s, label in rows]
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"MDS column {LINES_COLUMN!r} holds {str(raw)[:60]!r}, not [[slot, label], ...] "
            f"({err}); convert the corpus again"
        ) from None
