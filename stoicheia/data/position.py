"""The packer's data position (plain data) and how it moves to another world size.

A packed row takes a variable number of records and may end inside one, so Composer's sample
count cannot say where a resumed run starts. Each rank's packer keeps its exact position
(:class:`PackPosition`); the training loader
(:class:`~stoicheia.data.loader.PackedLoader`, its ``state_dict``/``load_state_dict``) saves
every rank's position in the checkpoint and gives each rank its own back on resume.

**Same number of processes**: every rank resumes at its own saved position; the batches
after the resume are bit-identical to an uninterrupted run's.

**Another number of processes (elastic resume)**: streaming gives the records of a stream
epoch one global order that does not depend on the number of processes, as long as
``num_canonical_nodes`` is fixed (``data.num_canonical_nodes``; on one node streaming's
default already is); rank ``r`` of ``W`` reads worker batch ``q`` (``B`` records each) at
global records ``[q*B*W, (q+1)*B*W)`` of that order. Ranks pack at different speeds, so at a
checkpoint they stand in different worker batches. The new processes restart the epoch at
the start of the earliest worker batch any rank was in (:func:`plan_elastic_resume`), and
skip the records that some rank had already trained on after that point (each rank saves
the keys ``id#part`` of those records: :class:`ElasticRegion`). A record that a rank had
partly packed (a row in flight ends inside it) is dropped, counted and logged. The noise of
the records after an elastic resume differs from an uninterrupted run's (it is keyed by
rank and position), the records and their order of epochs do not.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

FORMAT = 3  # version of the saved data position


@dataclass
class PackPosition:
    """Where the packer of one rank stands (all counts 0-based).

    Attributes:
        batch: packed batches yielded so far (one batch = one optimizer step).
        phase: index of the tier mix the records come from (0 = ``data.tier_weights``).
        phase_start: the batch at which that mix began.
        epoch: stream epoch of that mix's dataset.
        record_batch: worker batch (``records_per_batch`` records) within the epoch, counted
            from ``sample_base``.
        item, piece, offset: record within that worker batch, piece within the record, and
            slot within the piece of the first slot not yet packed.
        sample_base: global record (of the stream epoch ``epoch``) at which worker batch 0
            starts: 0, except after an elastic resume inside that epoch.
    """

    batch: int = 0
    phase: int = 0
    phase_start: int = 0
    epoch: int = 0
    record_batch: int = 0
    item: int = 0
    piece: int = 0
    offset: int = 0
    sample_base: int = 0

    def record(self) -> tuple[int, int, int]:
        """``(epoch, record_batch, item)``: the record this position is in."""
        return (self.epoch, self.record_batch, self.item)

    def in_record(self) -> bool:
        """True if some of the current record's slots were already packed (a row in flight)."""
        return self.piece > 0 or self.offset > 0


@dataclass
class ElasticRegion:
    """Records of one stream epoch to skip after an elastic resume.

    Attributes:
        epoch: the stream epoch.
        start, end: global records ``[start, end)`` of that epoch's order where the skipping
            applies (``end`` ``None``: to the end of the epoch).
        keys: ``id#part`` of the records some rank had already trained on (or partly packed)
            in that range; each is skipped wherever it falls after the resume.
        in_flight: how many of ``keys`` were only partly trained on (dropped rows' records).
    """

    epoch: int
    start: int
    end: int | None
    keys: list[str] = field(default_factory=list)
    in_flight: int = 0

    def covers(self, epoch: int, sample: int) -> bool:
        """True if global record ``sample`` of ``epoch`` lies in the region."""
        return (
            epoch == self.epoch and sample >= self.start and (self.end is None or sample < self.end)
        )


@dataclass
class ElasticPlan:
    """What every process does after an elastic resume: all start at ``start`` (same phase,
    epoch and ``sample_base``; ``record_batch`` 0) and skip the records of ``regions``."""

    start: PackPosition
    regions: list[ElasticRegion]
    skipped: int
    in_flight: int


def phase_at(schedule: list[tuple[int, int]], batch: int) -> int:
    """The tier-mix index that a mix schedule ``[(first batch, mix index), ...]`` (sorted by
    batch) gives for batch ``batch`` (0-based): the last entry that has begun, mix 0 before
    the first. The one lookup both the packer and the anneal plugin use."""
    phase = 0
    for first, index in schedule:
        if batch >= first:
            phase = index
    return phase


def frontier(ranks: list[PackPosition]) -> tuple[int, int]:
    """``(epoch, record_batch)`` of the earliest worker batch any rank stands in."""
    first = min(ranks, key=lambda p: (p.epoch, p.record_batch))
    return first.epoch, first.record_batch


def global_start(pos: PackPosition, record_batch: int, records_per_batch: int, world: int) -> int:
    """Global record of the stream epoch where worker batch ``record_batch`` of ranks standing
    like ``pos`` begins: ``sample_base + record_batch * B * W``."""
    return pos.sample_base + record_batch * records_per_batch * world


def plan_elastic_resume(
    ranks: list[PackPosition],
    consumed: list[list[list]],
    regions: list[ElasticRegion],
    records_per_batch: int,
) -> ElasticPlan:
    """Plan a resume on another number of processes from the positions of the old ones.

    Args:
        ranks: the saved :class:`PackPosition` of each old rank (all in one tier mix).
        consumed: per old rank, ``[epoch, record_batch, item, key]`` of the records it took
            from the :func:`frontier` on (as
            :meth:`PackedLoader.state_dict <stoicheia.data.loader.PackedLoader.state_dict>`
            saves them).
        regions: the skip regions still in force when the checkpoint was written (from an
            earlier elastic resume); they are kept.
        records_per_batch: the old ranks' worker batch size ``B``.

    Returns the :class:`ElasticPlan`. Raises ``ValueError`` if the ranks were in different
    tier mixes (a checkpoint never holds that).
    """
    phases = {(p.phase, p.phase_start, p.batch) for p in ranks}
    if len(phases) != 1:
        raise ValueError(
            f"the saved ranks stand in different tier mixes or batches: {sorted(phases)}"
        )
    world = len(ranks)
    e0, q0 = frontier(ranks)
    base0 = next(p.sample_base for p in ranks if p.epoch == e0)
    start_sample = base0 + q0 * records_per_batch * world
    last = max(p.epoch for p in ranks)
    # Ranks may stand across an epoch boundary: the older epochs then run to their end.
    by_epoch = {
        e: ElasticRegion(e, start_sample if e == e0 else 0, None) for e in range(e0, last + 1)
    }
    by_epoch[last].end = max(
        global_start(p, p.record_batch + 1, records_per_batch, world)
        for p in ranks
        if p.epoch == last
    )
    skipped = in_flight = 0
    for p, taken in zip(ranks, consumed, strict=True):
        for epoch, rb, item, key in taken:
            here = (epoch, rb, item) == p.record()
            if epoch in by_epoch and ((epoch, rb, item) < p.record() or (here and p.in_record())):
                by_epoch[epoch].keys.append(key)
                skipped += 1
                if here:
                    by_epoch[epoch].in_flight += 1
                    in_flight += 1
    for old in regions:  # an earlier elastic resume's skips that may still lie ahead
        reg = by_epoch.get(old.epoch)
        if reg is None:
            if old.epoch > e0:
                by_epoch[old.epoch] = dataclasses.replace(old, keys=list(old.keys))
            continue
        reg.keys = sorted(set(reg.keys) | set(old.keys))
        reg.end = None if reg.end is None or old.end is None else max(reg.end, old.end)
    start = PackPosition(
        batch=ranks[0].batch,
        phase=ranks[0].phase,
        phase_start=ranks[0].phase_start,
        epoch=e0,
        sample_base=start_sample,
    )
    return ElasticPlan(start, [by_epoch[e] for e in sorted(by_epoch)], skipped, in_flight)
