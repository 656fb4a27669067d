"""The records of one tier mix's :class:`~stoicheia.data.stream.NoisedRecordStream`, from a
data position on, over endless stream epochs, read (and noised) by DataLoader worker processes.

The training loader (:class:`~stoicheia.data.loader.PackedLoader`) packs them; between two
epochs it yields :data:`~stoicheia.data.packing.EPOCH_END` so that every rank opens the next
epoch at the same step (streaming waits there for all ranks of the node).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator

from torch.utils.data import DataLoader

from stoicheia.data.packing import EPOCH_END
from stoicheia.data.position import PackPosition
from stoicheia.data.rank_flags import barrier
from stoicheia.data.stream import NoisedRecord, NoisedRecordStream
from stoicheia.lifetime import worker_init


def _list_collate(items: list[NoisedRecord]) -> list[NoisedRecord]:
    return items


def epoch_records(
    dataset: NoisedRecordStream,
    start: PackPosition,
    first_record_batch: int,
    *,
    num_workers: int = 0,
    prefetch_factor: int | None = None,
) -> Iterator[tuple[NoisedRecord, int, int, int]]:
    """``(record, epoch, record_batch, item)`` from ``start`` on, over stream epochs, with
    :data:`~stoicheia.data.packing.EPOCH_END` after each epoch.

    ``first_record_batch``: the worker batch (``dataset.batch_size`` records) streaming resumes
    at (the first that every rank had started); the batches before ``start.record_batch`` are
    read and not yielded. ``num_workers``/``prefetch_factor``: of the DataLoader that reads the
    records. Collective at the start (a barrier: every rank starts this generator at the same
    batch). Raises ``RuntimeError`` when a whole epoch yields no record (not resuming)."""
    epoch = start.epoch
    record_batch = first_record_batch
    resuming = (start.epoch, start.record_batch, start.sample_base) != (0, 0, 0)
    if resuming:
        dataset.seek(start.epoch, first_record_batch, start.sample_base)
    # streaming keeps the resume point in one shared-memory segment per node that every
    # rank writes; a rank must not start reading before all have written it (a reader once
    # found it still empty). Every rank starts this generator at the same batch.
    barrier()
    inner: DataLoader | None = None
    built_for = None  # dataset.seek_base the worker processes were started with
    it = None
    try:
        while True:
            if inner is None or built_for != dataset.seek_base:
                # Worker processes are kept from epoch to epoch (persistent_workers), not
                # started anew for each (seconds of idle per epoch on a large node): each
                # epoch's iter() re-runs the dataset's __iter__ in the same workers, and
                # streaming hands them the next epoch through its shared memory. The workers
                # hold a copy of the dataset, so they are started again when a value they
                # read has changed in this process since: seek_base, which an elastic resume
                # sets for its first epoch only (so at most once a run).
                _shutdown(it)
                inner = _record_loader(dataset, num_workers, prefetch_factor)
                built_for = dataset.seek_base
            it = iter(inner)
            got_any = False
            for records in it:
                got_any = True
                if record_batch >= start.record_batch or epoch > start.epoch:
                    for i, record in enumerate(records):
                        yield record, epoch, record_batch, i
                record_batch += 1
            if not got_any and not resuming:
                raise RuntimeError(
                    "the training streams yielded no record in a whole epoch; check "
                    "data.epoch_size and the shards"
                )
            # Every rank must open the next epoch at the same step (streaming waits for all
            # ranks of the node there): the packer resumes this generator when all are done.
            yield EPOCH_END
            resuming = False
            dataset.seek_base = 0
            epoch += 1
            record_batch = 0
    finally:
        _shutdown(it)


def _record_loader(
    dataset: NoisedRecordStream, num_workers: int, prefetch_factor: int | None
) -> DataLoader:
    """The DataLoader whose workers read and noise ``dataset``'s records, one worker batch
    (``dataset.batch_size`` records, a list) at a time; its workers persist across epochs."""
    return DataLoader(
        dataset,
        batch_size=dataset.batch_size,
        collate_fn=_list_collate,
        num_workers=num_workers,
        prefetch_factor=prefetch_factor,
        persistent_workers=num_workers > 0,
        # workers die with this process even when it is SIGKILLed, and leave SIGTERM
        # (preemption) to it: see stoicheia.lifetime
        worker_init_fn=functools.partial(worker_init, os.getpid()) if num_workers > 0 else None,
    )


def _shutdown(it: object) -> None:
    """Stop the worker processes of a DataLoader iterator (if any) now, not at garbage
    collection."""
    shutdown = getattr(it, "_shutdown_workers", None)
    if shutdown is not None:
        shutdown()
