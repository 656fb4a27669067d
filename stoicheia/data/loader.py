"""The training dataloader: noised records packed into rows of ``seq_len`` slots (the fixed
evaluation batches are built in :mod:`stoicheia.data.eval_batches`).

Why packing runs here, in the main process, and not in the DataLoader workers: a packed row
takes a variable number of records and may end in the middle of one, so the count of
samples Composer keeps (``sample_in_epoch``) cannot say where a resumed run must start, and
with several workers each would hold a partial row of its own. The workers do the expensive
part (reading, splitting, noising: a fixed ``records_per_batch`` records per DataLoader
batch, which streaming can resume exactly); the main process only concatenates arrays, and
the packer keeps the exact position (:class:`~stoicheia.data.position.PackPosition`) of the
first slot not yet trained on. It owns that position and saves and restores it itself
(:meth:`PackedLoader.state_dict`, :meth:`PackedLoader.load_state_dict`), also on another
number of processes (the plan is in :mod:`stoicheia.data.position`); Composer reaches them
through the loader's ``dataset`` (:class:`~stoicheia.data.pack_state.StateHook`), where it
looks for ``state_dict``; :mod:`stoicheia.data.pack_state` decides where a resumed run starts.
The records come from :func:`~stoicheia.data.stream_epochs.epoch_records`, and the ranks agree
through :mod:`stoicheia.data.rank_flags`.

Tier mixes change during a run (the anneal phases): the loader holds a mix schedule
(``[(first batch, mix index), ...]``, set by a training plugin) and, before producing batch
``b``, starts the mix that the schedule gives for ``b`` if it is not the current one. The
rows in flight of the old mix are dropped and the new mix starts at its own stream position
0, so a resumed run (even one resumed exactly at a switch) packs the same batches.

The training loader never ends: it runs from stream epoch to stream epoch, so training is
measured in batches (``max_duration: ...ba``) and every rank yields the same number of
batches (ranks that ran out of an epoch at different times would deadlock DDP).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch.utils.data import DataLoader

from stoicheia.data.pack_state import StateHook, resume_point, warn_if_changed
from stoicheia.data.packing import EPOCH_END, PieceQueue, collate_rows, pack_rows
from stoicheia.data.position import FORMAT, ElasticRegion, PackPosition, frontier, phase_at
from stoicheia.data.rank_flags import agree
from stoicheia.data.stream import NoisedRecordStream, TierMixFactory
from stoicheia.data.stream_epochs import epoch_records
from stoicheia.noise import Noised

log = logging.getLogger(__name__)


class PackedLoader(DataLoader):
    """Endless iterator of packed batches for one rank, over a schedule of tier mixes.

    Each batch is the dict of :func:`stoicheia.data.packing.collate_rows`: ``rows`` rows of
    ``seq_len`` slots. ``len()`` is undefined (raises ``TypeError``): the number of batches
    per stream epoch depends on the noise.

    Args:
        source: one :class:`NoisedRecordStream` (a single mix), or a
            :class:`~stoicheia.data.stream.TierMixFactory` that builds the dataset of mix
            ``k`` (weights ``mixes[k]``) when the schedule first reaches it.
        rows: rows per batch (rows per device per optimizer step).
        mixes: with a factory, the tier weights of each mix, mix 0 first.
        num_workers: DataLoader worker processes that read and noise records.
        min_fragment: shortest piece fragment started at the end of a row (slots).
        pin_memory: build each batch in page-locked host memory (a GPU run: the copy to the
            device is then asynchronous, ``non_blocking``); needs CUDA.

    Attributes:
        position: the :class:`PackPosition` after the last batch yielded.
        schedule: ``[(first_batch, phase), ...]`` sorted; batches before the first entry
            use mix 0. Set with :meth:`set_schedule`.
        record_log: ``None``, or a list to which ``(batch, phase, tier, "id#part")`` is
            appended for every record taken (``batch`` is the batch being packed).
        taken: ``(epoch, record_batch, item, "id#part")`` of the records taken in the current
            mix since the last checkpoint's frontier (what an elastic resume must skip).
        regions: skip regions in force after an elastic resume.
        skipped: records skipped so far because of ``regions``.
    """

    def __init__(
        self,
        source: NoisedRecordStream | TierMixFactory,
        *,
        rows: int,
        mixes: list[Mapping[str, float]] | None = None,
        num_workers: int = 0,
        min_fragment: int = 16,
        prefetch_factor: int | None = None,
        pin_memory: bool = False,
    ) -> None:
        if isinstance(source, NoisedRecordStream):
            self.factory: TierMixFactory | None = None
            first = source
            self.mixes: list[dict[str, float]] = [{}]
        else:
            if not mixes:
                raise ValueError(
                    "PackedLoader needs mixes (a list of tier weights, mix 0 first) with a "
                    "TierMixFactory"
                )
            self.factory = source
            self.mixes = []
            self.set_mixes(mixes)
            first = source.build(self.mixes[0], 0)
        super().__init__(StateHook(self), batch_size=None)
        self._datasets: dict[int, NoisedRecordStream] = {0: first}
        self.rows = rows
        self.seq_len = first.seq_len
        self.records_per_batch = first.batch_size
        self.num_workers = num_workers
        self.worker_prefetch = prefetch_factor if num_workers > 0 else None
        self.min_fragment = min_fragment
        self.pin = bool(pin_memory)
        self.position = PackPosition()
        self.schedule: list[tuple[int, int]] = []
        self.record_log: list[tuple[int, int, str, str]] | None = None
        self.taken: list[tuple[int, int, int, str]] = []
        self.regions: list[ElasticRegion] = []
        self.skipped = 0
        self._resume: tuple[PackPosition, list[PackPosition]] | None = None
        self._saved_mixes: list[dict] | None = None  # the mixes when the resumed position was saved
        # The per-batch collective also carries a flag of the training side (the preemption
        # plugin's signal), so that a batch costs one all-reduce, not two (see _all_ranks_done).
        self.signal_source: Callable[[], int] | None = None
        self.agreed_signal = 0  # MAX over the ranks of signal_source() at the last collective
        self.collectives = 0  # per-batch all-reduces run so far (tests, benchmarks)
        self.flag_group: Any = None  # process group of the flags (a gloo group under NCCL)

    def set_mixes(self, mixes: list[Mapping[str, float]]) -> None:
        """Set the tier mixes (mix 0 = the stable phase's); each is checked against the shards
        now (``FileNotFoundError``/``ValueError`` naming the tier and the fix). Mix 0 cannot
        change once its dataset exists."""
        if self.factory is None:
            raise ValueError(
                "this PackedLoader was built with a single dataset; build it from a "
                "TierMixFactory to use several mixes"
            )
        mixes = [dict(m) for m in mixes]
        if getattr(self, "_datasets", None) and mixes[0] != self.mixes[0]:
            raise ValueError(f"mix 0 is fixed once built: {self.mixes[0]} (asked {mixes[0]})")
        for m in mixes:
            self.factory.check(m)
        self.mixes = mixes

    def __len__(self) -> int:
        raise TypeError(
            "PackedLoader has no length: measure training in batches (e.g. max_duration: 1000ba)"
        )

    def set_schedule(self, schedule: list[tuple[int, int]]) -> None:
        """Set the mix schedule ``[(first_batch, phase), ...]``; takes effect at the next batch."""
        self.schedule = sorted((int(b), int(p)) for b, p in schedule)

    def phase_at(self, batch: int) -> int:
        """The mix index the schedule gives for batch ``batch`` (0-based)."""
        return phase_at(self.schedule, batch)

    def resume(
        self,
        own: PackPosition,
        ranks: list[PackPosition] | None = None,
        mixes: list[dict] | None = None,
        *,
        regions: list[ElasticRegion] | None = None,
        taken: list[list] | None = None,
    ) -> None:
        """Start the next iteration at ``own`` (``ranks``: every rank's position, to find the
        worker batch that all ranks of this mix and epoch had started; ``mixes``: the tier
        mixes when the position was saved, to warn when they have changed since;
        ``regions``/``taken``: the elastic-resume state saved with it)."""
        self._resume = (own, ranks or [own])
        self._saved_mixes = mixes
        self.position = own
        self.regions = list(regions or [])
        self.taken = [(int(e), int(rb), int(i), str(k)) for e, rb, i, k in (taken or [])]

    def state_dict(self) -> dict[str, Any]:
        """The data position to checkpoint: the positions of all ranks, the records each took
        since the :func:`~stoicheia.data.position.frontier` (for an elastic resume) and the skip
        regions in force. Composer's sample count is not used (it cannot describe a packed
        position). Collective: call on every rank."""
        from composer.utils import dist

        ranks = dist.all_gather_object(dataclasses.asdict(self.position))
        self.trim_taken(frontier([PackPosition(**r) for r in ranks]))
        consumed = dist.all_gather_object([list(t) for t in self.taken])
        return {
            "version": FORMAT,
            "ranks": ranks,
            "consumed": consumed,
            "regions": [dataclasses.asdict(r) for r in self.regions],
            "records_per_batch": self.records_per_batch,
            "global_rows": self.rows * dist.get_world_size(),
            "mixes": self.mixes,
            "mix_unit": "letters",  # the weights are shares of letters (tier_mix.py)
        }

    def load_state_dict(self, obj: dict[str, Any]) -> None:
        """Resume at this rank's saved position, or, when the number of processes changed, at
        the plan of :func:`~stoicheia.data.position.plan_elastic_resume`.

        Raises ``ValueError`` for another global batch (rows per step), another
        ``records_per_batch`` on the same number of processes, or an older format.
        """
        from composer.utils import dist

        at = resume_point(
            obj, dist.get_world_size(), dist.get_global_rank(), self.rows, self.records_per_batch
        )
        if obj.get("mix_unit") != "letters" and any(
            sum(1 for w in m.values() if w > 0) > 1 for m in obj.get("mixes") or []
        ):
            log.warning(
                "[data] the checkpoint was saved when tier weights were record proportions; "
                "they are now shares of letters, so the mix changes from here (the printed "
                "tier mix in letters is the one trained on from now)"
            )
        self.resume(at.own, at.ranks, at.mixes, regions=at.regions, taken=at.taken)

    def trim_taken(self, front: tuple[int, int]) -> None:
        """Forget the records taken before worker batch ``front = (epoch, record_batch)`` (no
        rank stands before it any more, so no elastic resume can need them)."""
        self.taken = [t for t in self.taken if (t[0], t[1]) >= front]
        self.regions = [r for r in self.regions if r.epoch >= front[0]]

    def dataset_of(self, phase: int) -> NoisedRecordStream:
        """The dataset of mix ``phase``, built on first use. Raises ``ValueError`` for a mix
        the loader does not have."""
        if phase not in self._datasets:
            if self.factory is None or not 0 <= phase < len(self.mixes):
                raise ValueError(
                    f"tier mix {phase} was scheduled, but the loader has {len(self.mixes)} mix(es)"
                )
            self._datasets[phase] = self.factory.build(self.mixes[phase], phase)
        return self._datasets[phase]

    def _pieces(
        self, start: PackPosition, first_record_batch: int
    ) -> Iterator[tuple[Noised, tuple[int, int, int, int], int]]:
        """All pieces of mix ``start.phase`` from ``start`` on, each with its position
        ``(epoch, record_batch, item, piece)`` and the slot offset it starts at."""
        dataset = self.dataset_of(start.phase)
        if start.phase_start == start.batch and (start.epoch, start.record_batch, start.item) == (
            0,
            0,
            0,
        ):
            self.taken = []  # a new mix: records of the old one are no longer in question
        per_batch = dataset.batch_size * dataset.world_size()
        skip = [(r, set(r.keys)) for r in self.regions]
        records = epoch_records(
            dataset,
            start,
            first_record_batch,
            num_workers=self.num_workers,
            prefetch_factor=self.worker_prefetch,
        )
        # closed explicitly (its workers stop now): a frame kept alive by a traceback would
        # otherwise keep the worker processes, which persist across epochs, running
        try:
            for got in records:
                if got is EPOCH_END:
                    yield EPOCH_END
                    continue
                record, epoch, rb, i = got
                at_start = (epoch, rb) == (start.epoch, start.record_batch)
                if at_start and i < start.item:
                    continue
                key = f"{record.id}#{record.part}"
                if skip:
                    base = start.sample_base if epoch == start.epoch else 0
                    sample = base + rb * per_batch
                    if any(r.covers(epoch, sample) and key in keys for r, keys in skip):
                        self.skipped += 1
                        continue
                self.taken.append((epoch, rb, i, key))
                if self.record_log is not None:
                    self.record_log.append((self.position.batch, start.phase, record.tier, key))
                for j, piece in enumerate(record.pieces):
                    offset = 0
                    if at_start and i == start.item:
                        if j < start.piece:
                            continue
                        if j == start.piece:
                            offset = start.offset
                    if offset >= len(piece):
                        continue
                    yield (piece[offset:] if offset else piece), (epoch, rb, i, j), offset
        finally:
            records.close()

    def _batches(
        self, start: PackPosition, first_record_batch: int
    ) -> Iterator[dict[str, torch.Tensor]]:
        """Packed batches of mix ``start.phase`` until the schedule changes mix.

        A rank whose share of a stream epoch is used up yields all-padding rows (nothing
        trained, weight 0) until every rank's is: the ranks then open the next epoch together,
        at the same step (see :meth:`_all_ranks_done`).
        """
        queue = PieceQueue(self._pieces(start, first_record_batch))
        # Fetch now, on every rank alike: opening an epoch waits for all ranks of the node.
        queue.peek()
        padded = 0
        try:
            while True:  # one stream epoch
                packer = pack_rows(queue.numbered(), self.seq_len, self.min_fragment)
                cursor = None
                while True:  # one batch
                    done = not queue.pending(cursor) and queue.peek() is EPOCH_END
                    if self._all_ranks_done(done):
                        break
                    rows: list[list[Noised]] = []
                    for row, at in packer:
                        rows.append(row)
                        cursor = at
                        if len(rows) == self.rows:
                            break
                    if rows:
                        (epoch, rb, item, piece), offset = queue.resume_point(cursor)
                        self.position = PackPosition(
                            self.position.batch + 1,
                            start.phase,
                            start.phase_start,
                            epoch,
                            rb,
                            item,
                            piece,
                            offset,
                            start.sample_base if epoch == start.epoch else 0,
                        )
                    else:
                        padded += 1
                        self.position = dataclasses.replace(
                            self.position, batch=self.position.batch + 1
                        )
                    rows += [[] for _ in range(self.rows - len(rows))]
                    yield collate_rows(rows, self.seq_len, pin=self.pin)
                    if self.phase_at(self.position.batch) != start.phase:
                        return
                packer.close()
                queue.next_epoch()
                if padded:
                    log.debug(
                        "[data] rank waited %d batches (padding) for the other ranks to end the "
                        "epoch",
                        padded,
                    )
                padded = 0
        finally:
            queue.pieces.close()

    def _all_ranks_done(self, done: bool) -> bool:
        """Collective (one per batch, on every rank): True when every rank has used up its
        share of the stream epoch. One process: ``done`` itself.

        The same all-reduce (MAX of ``[not done, signal]``) agrees on the training side's flag
        (``signal_source()``, the preemption plugin's signal number, 0 for none) into
        ``agreed_signal``: one collective per batch for both. The flags are CPU tensors; under
        NCCL they go through ``flag_group`` (a gloo group the builder makes), so reading them
        never waits for the GPU's queued work (no host-device sync): see
        :func:`stoicheia.data.rank_flags.agree`."""
        signal = int(self.signal_source()) if self.signal_source is not None else 0
        all_done, self.agreed_signal, ran = agree(done, signal, self.flag_group)
        self.collectives += int(ran)
        return all_done

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        if self._resume is not None:
            start, ranks = self._resume
            self._resume = None
            # streaming resumes at the first worker batch that every rank (in this mix and
            # epoch) had started; this rank then skips to its own.
            same = [
                r.record_batch for r in ranks if (r.phase, r.epoch) == (start.phase, start.epoch)
            ]
            first_record_batch = min(same) if same else start.record_batch
            mixes = self.mixes if self.factory is not None else None
            warn_if_changed(
                start, self.phase_at(start.batch), self.schedule, self._saved_mixes, mixes
            )
        else:
            start, first_record_batch = PackPosition(), 0
        self.position = dataclasses.replace(start)
        while True:
            phase = self.phase_at(self.position.batch)
            if phase != start.phase:
                self.dataset_of(phase)
                log.debug(
                    "batch %d: tier mix %d starts (%s)",
                    self.position.batch,
                    phase,
                    self.mixes[phase] if self.factory else "",
                )
                start = PackPosition(
                    batch=self.position.batch, phase=phase, phase_start=self.position.batch
                )
                first_record_batch = 0
                self.position = dataclasses.replace(start)
            yield from self._batches(start, first_record_batch)
            start = self.position
