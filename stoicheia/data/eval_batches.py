"""Fixed evaluation batches: reference-noise batches for the training evaluators and
``stoicheia evaluate``, and masked-word batches for the word-restoration evaluation.

Unlike the training loader (:mod:`stoicheia.data.loader`), these are built once, in full,
from a list of records (:class:`stoicheia.text.planes.Planes`), with the noise seeded per
record: the same records and seed give the same batches, so the figures of different
checkpoints compare. In training, a DistributedSampler deals the batches out to the ranks
(:func:`pad_eval_batches` evens their count).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from stoicheia.data.packing import collate_rows, pack_rows
from stoicheia.data.sample_planes import split_at_words
from stoicheia.noise import Noised, mask_spans, reference_noise
from stoicheia.text.alphabet import IGNORE_INDEX

__all__ = [
    "build_eval_batches",
    "pad_eval_batches",
    "MaskedWord",
    "choose_masked_words",
    "build_word_batches",
    "record_key",
]


def record_key(record_id: str) -> int:
    """A record's own noise key: the first 8 bytes of BLAKE2b of its id, as an unsigned int.

    Seeding a record's noise with ``(seed, record_key(id))`` instead of its position in a
    list makes the noise of a record, and so the figures of any group of records, the same
    whichever other records are evaluated beside it. Stable across runs, machines and
    Python's hash seed.
    """
    return int.from_bytes(hashlib.blake2b(record_id.encode("utf-8"), digest_size=8).digest(), "big")


def build_eval_batches(
    records: list[Any],
    seq_len: int,
    rows: int,
    t: float,
    seed: int,
    min_fragment: int = 16,
    keys: list[int] | None = None,
    pad_last: bool = False,
) -> list[dict[str, torch.Tensor]]:
    """Fixed evaluation batches: every record noised with the reference noise (iid masking
    at rate ``t``, all channels UNKNOWN; record k seeded by ``(seed, keys[k])``, ``keys``
    defaulting to ``0, 1, ...``), then packed. The training evaluators and ``stoicheia
    evaluate`` both build their batches here.

    ``records`` are :class:`stoicheia.text.planes.Planes`; pieces longer than 80% of
    ``seq_len`` are split at word starts. Returns a list of collated batches, each
    ``(rows, seq_len)`` but the last, which may hold fewer rows unless ``pad_last``: then it is
    filled up with all-padding rows (``seg_id`` 0, targets IGNORE_INDEX, weight 0: no metric
    counts them), so every batch has one shape and a compiled model (``dynamic=False``) runs
    the last one without compiling another graph (what training does).
    """
    pieces: list[Noised] = []
    for k, planes in enumerate(records):
        rng = np.random.default_rng([seed, k if keys is None else keys[k]])
        for part in split_at_words(planes, max(1, int(seq_len * 0.8))):
            pieces.append(reference_noise(part, rng, t=t))
    batches, rows_acc = [], []
    for row, _ in pack_rows(pieces, seq_len, min_fragment):
        rows_acc.append(row)
        if len(rows_acc) == rows:
            batches.append(collate_rows(rows_acc, seq_len))
            rows_acc = []
    if rows_acc:
        if pad_last:
            rows_acc += [[] for _ in range(rows - len(rows_acc))]
        batches.append(collate_rows(rows_acc, seq_len))
    return batches


def pad_eval_batches(
    batches: list[dict[str, torch.Tensor]], world: int
) -> list[dict[str, torch.Tensor]]:
    """``batches`` plus all-padding batches (``seg_id`` 0, every target IGNORE_INDEX, weight 0:
    nothing scored) until the count divides by ``world``, so that a DistributedSampler gives
    every rank the same number of evaluation batches and evaluates none twice (it would
    otherwise repeat batches to even out the ranks)."""
    out = list(batches)
    while len(out) % world:
        pad = {k: v.clone() for k, v in batches[-1].items()}
        pad["seg_id"].zero_()
        for k in pad:
            if k.startswith("tgt_"):
                pad[k].fill_(IGNORE_INDEX)
        pad["weight"].zero_()
        out.append(pad)
    return out


@dataclass
class MaskedWord:
    """One whole word masked for the word-restoration evaluation: record ``record`` (index in
    the list given), batch ``batch``, row ``row``, letters ``[start, end)`` of that row."""

    record: int
    batch: int
    row: int
    start: int
    end: int


def choose_masked_words(
    planes: Any, rng: np.random.Generator, rate: float, min_len: int = 2, gap: int = 8
) -> list[tuple[int, int]]:
    """Whole words to mask in one record: each word of at least ``min_len`` letters is taken
    with probability ``rate``, in text order, unless it starts fewer than ``gap`` letters after
    the end of the last word taken (so every masked word has at least ``gap`` known letters
    on its left within the record, and a letter n-gram of order <= ``gap + 1`` sees only true
    letters). A word touching a real lacuna of the source (``planes.lacuna > 0``) is never
    taken: its letters are not all known. Returns ``[(start, end), ...]`` letter spans."""
    lac = getattr(planes, "lacuna", None)
    lost = np.flatnonzero(lac > 0) if lac is not None else np.zeros(0, np.int64)
    starts = [int(x) for x in planes.word_starts()]
    bounds = [*starts, len(planes)]
    draws = rng.random(len(starts))
    out: list[tuple[int, int]] = []
    last_end = -gap
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=False)):
        if (
            lost.size
            and np.searchsorted(lost, a) < lost.size
            and lost[np.searchsorted(lost, a)] < b
        ):
            continue
        if b - a >= min_len and draws[i] < rate and a - last_end >= gap:
            out.append((a, b))
            last_end = b
    return out


def build_word_batches(
    records: list[Any],
    seq_len: int,
    rows: int,
    rate: float,
    seed: int,
    gap: int = 8,
    keys: list[int] | None = None,
) -> tuple[list[dict[str, torch.Tensor]], list[MaskedWord]]:
    """Batches for the masked-word restoration evaluation: in each record (cut into parts of
    at most ``seq_len`` letters at word starts) whole words chosen by
    :func:`choose_masked_words` (record k seeded by ``(seed, keys[k])``, ``keys`` defaulting
    to ``0, 1, ...``; see :func:`record_key`) become known-width lacunae
    (:func:`stoicheia.noise.mask_spans`: MASK slots, every aux channel UNKNOWN). One part per
    row (no packing, so a word's slots are found by row and offset); parts are sorted by length
    and each batch is only as wide as its longest part.

    Returns the collated batches (``(rows, T_batch)`` tensors, see
    :func:`~stoicheia.data.packing.collate_rows`) and every masked word's place.
    """
    parts: list[tuple[int, Any, list[tuple[int, int]]]] = []
    for k, planes in enumerate(records):
        rng = np.random.default_rng([seed, k if keys is None else keys[k]])
        spans = choose_masked_words(planes, rng, rate, gap=gap)
        offset = 0
        for part in split_at_words(planes, seq_len):
            end = offset + len(part)
            inside = [(a - offset, b - offset) for a, b in spans if offset <= a and b <= end]
            if inside:
                parts.append((k, part, inside))
            offset = end
    parts.sort(key=lambda x: len(x[1]))
    batches: list[dict[str, torch.Tensor]] = []
    words: list[MaskedWord] = []
    for b0 in range(0, len(parts), rows):
        chunk = parts[b0 : b0 + rows]
        noised = [[mask_spans(part, spans)] for _, part, spans in chunk]
        batches.append(collate_rows(noised, max(len(n[0]) for n in noised)))
        for r, (k, _, spans) in enumerate(chunk):
            words.extend(MaskedWord(k, len(batches) - 1, r, a, b) for a, b in spans)
    return batches, words
