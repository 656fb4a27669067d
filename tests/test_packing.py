"""Packing noised records into rows: seg ids, positions, word-aligned splits, nothing lost."""

from __future__ import annotations

import numpy as np
import pytest

from stoicheia.data.packing import collate_rows, pack_rows, split_point
from stoicheia.noise import Noised
from stoicheia.text.alphabet import IGNORE_INDEX, PAD


def make_piece(word_lengths: list[int], tag: int) -> Noised:
    """A fake noised piece whose chars all equal ``tag`` (to recognise it after packing)."""
    n = sum(word_lengths)
    word_start = np.zeros(n, dtype=bool)
    word_start[np.cumsum([0, *word_lengths[:-1]])] = True
    tgt = np.full(n, IGNORE_INDEX, dtype=np.int16)
    tgt[::2] = tag
    return Noised(
        chars=np.full(n, tag, dtype=np.uint8),
        boundary=np.zeros(n, dtype=np.uint8),
        dia=np.zeros(n, dtype=np.uint8),
        punct=np.zeros(n, dtype=np.uint8),
        tgt_chars=tgt,
        tgt_boundary=tgt.copy(),
        tgt_dia=tgt.copy(),
        tgt_cap=tgt.copy(),
        tgt_punct=tgt.copy(),
        weight=np.where(tgt >= 0, 2.0, 0.0).astype(np.float32),
        word_start=word_start,
        t=0.5,
        pattern="test",
    )


def test_split_point_is_last_word_start_that_fits():
    piece = make_piece([3, 4, 5], tag=1)  # word starts at 0, 3, 7
    assert split_point(piece, 2) == 0
    assert split_point(piece, 3) == 3
    assert split_point(piece, 6) == 3
    assert split_point(piece, 7) == 7
    assert split_point(piece, 11) == 7


def test_rows_never_exceed_seq_len_and_every_slot_is_packed_once():
    rng = np.random.default_rng(0)
    pieces = [
        make_piece(list(rng.integers(1, 9, size=rng.integers(1, 8))), tag=k % 24)
        for k in range(200)
    ]
    seq_len = 64
    rows = [row for row, _ in pack_rows(pieces, seq_len, min_fragment=4)]
    assert all(sum(len(f) for f in row) <= seq_len for row in rows)
    packed = np.concatenate([f.chars for row in rows for f in row])
    original = np.concatenate([p.chars for p in pieces])
    np.testing.assert_array_equal(packed, original)  # order kept, nothing dropped or repeated


def test_split_happens_only_at_word_starts():
    pieces = [make_piece([5] * 6, tag=1), make_piece([7] * 4, tag=2)]
    for row, _ in pack_rows(pieces, 32, min_fragment=4):
        for frag in row:
            assert frag.word_start[0], "a fragment must begin at a word start"


def test_fill_is_high_for_long_records():
    rng = np.random.default_rng(1)
    pieces = [make_piece(list(rng.integers(2, 10, size=30)), tag=3) for _ in range(60)]
    rows = [row for row, _ in pack_rows(pieces, 256, min_fragment=16)][:-1]  # last row is partial
    fill = np.mean([sum(len(f) for f in row) / 256 for row in rows])
    assert fill > 0.95


def test_cursor_points_at_first_unpacked_slot():
    pieces = [make_piece([4] * 5, tag=1), make_piece([4] * 5, tag=2), make_piece([4] * 5, tag=3)]
    consumed = 0
    flat = np.concatenate([p.chars for p in pieces])
    offsets = np.cumsum([0] + [len(p) for p in pieces])
    for row, cursor in pack_rows(pieces, 24, min_fragment=4):
        consumed += sum(len(f) for f in row)
        if cursor.piece >= 0:
            assert offsets[cursor.piece] + cursor.offset == consumed
    assert consumed == len(flat)


def test_piece_longer_than_row_is_an_error():
    with pytest.raises(ValueError, match="exceeds seq_len"):
        list(pack_rows([make_piece([40], tag=1)], 32))


def test_collate_seg_ids_positions_and_padding():
    rows = [[make_piece([3, 3], 1), make_piece([4], 2)], [make_piece([2], 3)]]
    batch = collate_rows(rows, 12)
    assert batch["chars"].shape == (2, 12)
    assert batch["seg_id"][0].tolist() == [1] * 6 + [2] * 4 + [0] * 2
    assert batch["pos"][0].tolist() == [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 0, 0]
    assert batch["seg_id"][1].tolist() == [1, 1] + [0] * 10
    pad = batch["seg_id"] == 0
    assert (batch["chars"][pad] == PAD).all()
    for name in ("tgt_chars", "tgt_boundary", "tgt_dia", "tgt_cap", "tgt_punct"):
        assert (batch[name][pad] == IGNORE_INDEX).all()
    assert (batch["weight"][pad] == 0).all()
    assert batch["chars"].dtype.is_floating_point is False


def test_collate_can_build_the_batch_in_pinned_memory(monkeypatch):
    """A GPU run's batches are allocated page-locked (so Composer's non_blocking copy is
    asynchronous) and filled in place: the same values as the plain batch."""
    import torch

    from stoicheia.data import packing

    asked = []
    real_full = torch.full

    def full(*args, pin_memory=False, **kw):  # no CUDA here: record the request, allocate plain
        asked.append(pin_memory)
        return real_full(*args, **kw)

    rows = [[make_piece([3, 4], 1)], [make_piece([5], 2), make_piece([2], 3)]]
    plain = collate_rows(rows, 16)
    monkeypatch.setattr(packing.torch, "full", full)
    pinned = collate_rows(rows, 16, pin=True)
    assert asked == [True] * len(plain)
    assert list(pinned) == list(plain)
    assert all(
        torch.equal(pinned[k], plain[k]) and pinned[k].dtype == plain[k].dtype for k in plain
    )
