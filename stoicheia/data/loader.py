"""Training and evaluation dataloaders: noised records packed into rows of ``seq_len`` slots.

Why packing runs here, in the main process, and not in the DataLoader workers: a packed row
takes a variable number of records and may end in the middle of one, so the count of
samples Composer keeps (``sample_in_epoch``) cannot say where a resumed run must start, and
with several workers each would hold a partial row of its own. The workers do the expensive
part (reading, splitting, noising: a fixed ``records_per_batch`` records per DataLoader
batch, which streaming can resume exactly); the main process only concatenates arrays, and
keeps the exact position ``(epoch, batch, item, piece, offset)`` of the first slot not yet
trained on. :class:`stoicheia.data.stream.NoisedRecordStream` saves and restores it.

The training loader never ends: it runs from stream epoch to stream epoch, so training is
measured in batches (``max_duration: ...ba``) and every rank yields the same number of
batches (ranks that ran out of an epoch at different times would deadlock DDP).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader

from stoicheia.data.packing import collate_rows, pack_rows
from stoicheia.data.shards import split_at_words
from stoicheia.data.stream import NoisedRecordStream
from stoicheia.noise import Noised, reference_noise


def _list_collate(items: list[list[Noised]]) -> list[list[Noised]]:
    return items


class PackedLoader(DataLoader):
    """Endless iterator of packed micro-batches for one rank.

    Each batch is the dict of :func:`stoicheia.data.packing.collate_rows`: ``rows`` rows of
    ``seq_len`` slots. ``len()`` is undefined (raises ``TypeError``): the number of batches
    per stream epoch depends on the noise.

    Args:
        dataset: the tier mix; its ``batch_size`` is the number of records per worker batch.
        rows: rows per micro-batch (the device micro-batch size).
        num_workers: DataLoader worker processes that read and noise records.
        min_fragment: shortest piece fragment started at the end of a row (slots).
    """

    def __init__(
        self,
        dataset: NoisedRecordStream,
        *,
        rows: int,
        num_workers: int = 0,
        min_fragment: int = 16,
        prefetch_factor: int | None = None,
    ) -> None:
        super().__init__(
            dataset,
            batch_size=dataset.batch_size,
            collate_fn=_list_collate,
            num_workers=num_workers,
            prefetch_factor=prefetch_factor if num_workers > 0 else None,
            persistent_workers=False,
        )
        self.rows = rows
        self.seq_len = dataset.seq_len
        self.min_fragment = min_fragment

    def __len__(self) -> int:
        raise TypeError("PackedLoader has no length: measure training in batches (e.g. max_duration: 1000ba)")

    def _pieces(self, start: dict[str, Any]) -> Iterator[tuple[Noised, tuple[int, int, int, int], int]]:
        """All pieces from position ``start`` on, over stream epochs, each with its position
        ``(epoch, batch, item, piece)`` and the slot offset it starts at (non-zero only for
        the piece cut at ``start['offset']`` when resuming)."""
        epoch = start["epoch"]
        resuming = True
        while True:
            # streaming resumes at the first batch that every rank had started; this rank
            # may be a few batches further (``skip_batches``).
            batch_no = start["batch"] - start.get("skip_batches", 0) if resuming else 0
            got_any = False
            for records in super().__iter__():
                got_any = True
                if resuming and batch_no < start["batch"]:
                    batch_no += 1
                    continue
                for i, pieces in enumerate(records):
                    for j, piece in enumerate(pieces):
                        offset = 0
                        if resuming and batch_no == start["batch"]:
                            if (i, j) < (start["item"], start["piece"]):
                                continue
                            if (i, j) == (start["item"], start["piece"]):
                                offset = start["offset"]
                        yield (piece[offset:] if offset else piece), (epoch, batch_no, i, j), offset
                resuming = False
                batch_no += 1
            if not got_any and not resuming:
                raise RuntimeError(
                    "the training streams yielded no record in a whole epoch; check data.epoch_size and the shards"
                )
            resuming = False
            epoch += 1

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        dataset: NoisedRecordStream = self.dataset  # type: ignore[assignment]
        start = dataset.resume_from or {"epoch": 0, "batch": 0, "item": 0, "piece": 0, "offset": 0}
        dataset.resume_from = None
        # piece number (as pack_rows counts) -> (position, slot offset it starts at, slots)
        positions: dict[int, tuple[tuple[int, int, int, int], int, int]] = {}
        counter = iter(range(1 << 62))

        def numbered() -> Iterator[Noised]:
            for piece, where, base in self._pieces(start):
                k = next(counter)
                positions[k] = (where, base, len(piece))
                yield piece

        rows: list[list[Noised]] = []
        for row, cursor in pack_rows(numbered(), self.seq_len, self.min_fragment):
            rows.append(row)
            if len(rows) == self.rows:
                if cursor.piece in positions:
                    (epoch, batch, item, piece), base, _ = positions[cursor.piece]
                    offset = base + cursor.offset
                else:
                    # The row ended exactly with the last piece fetched: resume at its end.
                    (epoch, batch, item, piece), base, n = positions[cursor.piece - 1]
                    offset = base + n
                for k in [k for k in positions if k < cursor.piece - 1]:
                    del positions[k]
                dataset.packer_state = {"epoch": epoch, "batch": batch, "item": item, "piece": piece, "offset": offset}
                yield collate_rows(rows, self.seq_len)
                rows = []


def build_eval_batches(
    records: list[Any], seq_len: int, rows: int, t: float, seed: int, min_fragment: int = 16
) -> list[dict[str, torch.Tensor]]:
    """Fixed evaluation batches: every record noised with the reference noise (iid masking
    at rate ``t``, all channels UNKNOWN; record k seeded by ``(seed, k)``), then packed.

    ``records`` are :class:`stoicheia.text.planes.Planes`; pieces longer than 80% of
    ``seq_len`` are split at word starts. Returns a list of collated batches.
    """
    pieces: list[Noised] = []
    for k, planes in enumerate(records):
        rng = np.random.default_rng([seed, k])
        for part in split_at_words(planes, max(1, int(seq_len * 0.8))):
            pieces.append(reference_noise(part, rng, t=t))
    batches, rows_acc = [], []
    for row, _ in pack_rows(pieces, seq_len, min_fragment):
        rows_acc.append(row)
        if len(rows_acc) == rows:
            batches.append(collate_rows(rows_acc, seq_len))
            rows_acc = []
    if rows_acc:
        batches.append(collate_rows(rows_acc, seq_len))
    return batches
