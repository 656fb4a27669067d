"""Greedy packing of noised records into rows of ``seq_len`` slots with per-document ``seg_id``.

A row holds several documents (noised record pieces) one after another; ``seg_id`` numbers
them 1, 2, ... within the row and is 0 on padding, and ``pos`` restarts at 0 at each document
start, so attention (masked by ``seg_id``) and RoPE (driven by ``pos``) never cross a document.

When the next piece does not fit the space left in a row, it is split at the last word start
that fits (never inside a word) and its rest opens the next row, so rows stay nearly full and
every letter is trained on. Fragments shorter than ``min_fragment`` slots are not started: the
row is closed and padded instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from stoicheia.noise import Noised
from stoicheia.text.alphabet import BOUNDARY_UNKNOWN, DIA_UNKNOWN, IGNORE_INDEX, PAD, PUNCT_UNKNOWN

#: Input planes and their padding ids; target planes are padded with IGNORE_INDEX.
INPUT_PAD = {"chars": PAD, "boundary": BOUNDARY_UNKNOWN, "dia": DIA_UNKNOWN, "punct": PUNCT_UNKNOWN}
TARGETS = ("tgt_chars", "tgt_boundary", "tgt_dia", "tgt_cap", "tgt_punct")


@dataclass(frozen=True)
class Cursor:
    """Where packing stands in a sequence of pieces: piece ``piece``, slot ``offset`` in it."""

    piece: int = 0
    offset: int = 0


def split_point(piece: Noised, space: int) -> int:
    """Largest word start ``p`` with ``0 < p <= space`` in ``piece`` (0 if none).

    ``piece[:p]`` then fits into ``space`` slots and ends at a word edge of the original text.
    """
    starts = np.flatnonzero(piece.word_start[1 : space + 1]) + 1
    return int(starts[-1]) if len(starts) else 0


def pack_rows(
    pieces: Iterable[Noised], seq_len: int, min_fragment: int = 16
) -> Iterator[tuple[list[Noised], Cursor]]:
    """Greedily fill rows of ``seq_len`` slots with ``pieces`` in order.

    Yields ``(fragments, cursor)`` for each full row, where ``cursor`` is the position of the
    first slot not yet packed (the piece index counts the pieces of ``pieces``). A trailing,
    partly filled row is yielded last. Every piece must be at most ``seq_len`` slots long
    (:func:`stoicheia.noise.noise_record` guarantees it via ``max_len``); raises ``ValueError``
    otherwise.
    """
    row: list[Noised] = []
    fill = 0
    for index, piece in enumerate(pieces):
        if len(piece) > seq_len:
            raise ValueError(f"noised piece of {len(piece)} slots exceeds seq_len {seq_len}")
        offset = 0
        while offset < len(piece):
            rest = piece[offset:] if offset else piece
            space = seq_len - fill
            if len(rest) <= space:
                row.append(rest)
                fill += len(rest)
                offset = len(piece)
            else:
                cut = split_point(rest, space) if space >= min_fragment else 0
                if cut >= min_fragment:
                    row.append(rest[:cut])
                    offset += cut
                yield row, Cursor(index, offset)
                row, fill = [], 0
            if fill == seq_len:
                yield (
                    row,
                    Cursor(index + (offset == len(piece)), 0 if offset == len(piece) else offset),
                )
                row, fill = [], 0
    if row:
        yield row, Cursor(-1, 0)


def collate_rows(
    rows: list[list[Noised]], seq_len: int, pin: bool = False
) -> dict[str, torch.Tensor]:
    """Stack packed rows into a batch of tensors, each of shape ``(len(rows), seq_len)``.

    Keys: inputs ``chars``, ``boundary``, ``dia``, ``punct`` (int64, padded with PAD/UNKNOWN);
    ``seg_id`` (int32, 0 = padding, documents 1..k); ``pos`` (int32, slot index within its
    document); targets ``tgt_*`` (int64, IGNORE_INDEX where unsupervised or padding);
    ``weight`` (float32 char-loss weight, 0 on padding).

    ``pin``: allocate the tensors in page-locked (pinned) host memory, filled in place, so that
    the copy to the GPU (Composer's ``non_blocking=True``) runs asynchronously instead of
    through a staging copy that blocks the host; needs CUDA.
    """
    b = len(rows)

    def full(value: float, dtype: torch.dtype) -> np.ndarray:
        t = torch.full((b, seq_len), value, dtype=dtype, pin_memory=pin)
        tensors.append(t)
        return t.numpy()  # a view: filled in place

    tensors: list[torch.Tensor] = []
    out = {name: full(pad, torch.int64) for name, pad in INPUT_PAD.items()}
    out.update({name: full(IGNORE_INDEX, torch.int64) for name in TARGETS})
    out["weight"] = full(0, torch.float32)
    out["seg_id"] = full(0, torch.int32)
    out["pos"] = full(0, torch.int32)
    for r, fragments in enumerate(rows):
        start = 0
        for doc, frag in enumerate(fragments, start=1):
            end = start + len(frag)
            for name in (*INPUT_PAD, *TARGETS, "weight"):
                out[name][r, start:end] = getattr(frag, name)
            out["seg_id"][r, start:end] = doc
            out["pos"][r, start:end] = np.arange(len(frag), dtype=np.int32)
            start = end
    return dict(zip(out, tensors, strict=True))


def row_fill(batch: dict[str, torch.Tensor]) -> float:
    """Share of non-padding slots in a collated batch (0..1)."""
    return float((batch["seg_id"] != 0).float().mean())


#: Marks the end of a stream epoch in the loader's record and piece iterators.
EPOCH_END = object()


class PieceQueue:
    """The state of the packing loop of one stream epoch: the piece fetched ahead (one
    lookahead, so the end of the epoch is seen before a batch is started), and, per piece
    number as :func:`~stoicheia.data.packing.pack_rows` counts them, where it comes from
    ``(epoch, record_batch, item, piece)``, the slot offset it starts at and its length."""

    def __init__(self, pieces: Iterator) -> None:
        self.pieces = pieces
        self.ahead: list = []  # one piece (or EPOCH_END) fetched but not yet packed
        self.positions: dict[int, tuple[tuple[int, int, int, int], int, int]] = {}

    def peek(self):
        """The next piece (or ``EPOCH_END``) without taking it."""
        if not self.ahead:
            self.ahead.append(next(self.pieces))
        return self.ahead[0]

    def numbered(self) -> Iterator[Noised]:
        """The pieces up to the end of the epoch, numbered from 0 (one packer per epoch)."""
        k = 0
        while self.peek() is not EPOCH_END:
            piece, where, base = self.ahead.pop()
            self.positions[k] = (where, base, len(piece))
            k += 1
            yield piece

    def pending(self, cursor) -> bool:
        """True if the packer holds the rest of a piece already fetched."""
        return cursor is not None and cursor.piece in self.positions

    def resume_point(self, cursor) -> tuple[tuple[int, int, int, int], int]:
        """``((epoch, record_batch, item, piece), slot offset)`` of the first slot not yet packed
        after a batch that ended at ``cursor``; forgets the pieces no later batch can need."""
        if cursor.piece in self.positions:
            where, base, _ = self.positions[cursor.piece]
            offset = base + cursor.offset
        else:
            # The row ended with the last piece fetched: resume at its end.
            last = cursor.piece - 1 if cursor.piece >= 0 else max(self.positions)
            where, base, n = self.positions[last]
            offset = base + n
        for k in [k for k in self.positions if k < cursor.piece - 1]:
            del self.positions[k]
        return where, offset

    def next_epoch(self) -> None:
        """After ``EPOCH_END``: the next fetch opens the next epoch; numbering restarts."""
        self.ahead.clear()
        self.positions.clear()

    def state_dict(self) -> dict[str, Any]:
        """What the loop holds (for inspection; the checkpointed position is the loader's
        :class:`~stoicheia.data.position.PackPosition`): the pieces in flight and whether one is
        fetched ahead."""
        return {
            "positions": {k: [list(w), b, n] for k, (w, b, n) in self.positions.items()},
            "ahead": len(self.ahead),
        }
