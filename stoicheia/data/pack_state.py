"""The training loader's data position in a checkpoint: what Composer sees as the loader's
``dataset`` (:class:`StateHook`, where it looks for ``state_dict``), and where a resumed run
starts (:func:`resume_point`), on the same number of processes or on another (the plan of
:func:`~stoicheia.data.position.plan_elastic_resume`).

The packer (:class:`~stoicheia.data.loader.PackedLoader`) owns its position; it builds its
``state_dict`` and hands the saved one to :func:`resume_point`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from torch.utils.data import IterableDataset

from stoicheia.data.position import FORMAT, ElasticRegion, PackPosition, plan_elastic_resume

log = logging.getLogger(__name__)


class StateHook(IterableDataset):
    """What Composer sees as the training loader's ``dataset`` (where it looks for
    ``state_dict``): passes both hooks on to the loader. Never iterated."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def __iter__(self):
        raise TypeError("the loader's dataset hook is not iterable; iterate the PackedLoader")

    def state_dict(self, num_samples: int = 0, from_beginning: bool = True) -> dict[str, Any]:
        return self.loader.state_dict()

    def load_state_dict(self, obj: dict[str, Any]) -> None:
        self.loader.load_state_dict(obj)


@dataclass
class ResumePoint:
    """Where one rank resumes: its own position, every rank's (to find the worker batch all
    had started), the tier mixes when saved, the skip regions and the records taken since the
    frontier (``(epoch, record_batch, item, "id#part")`` lists)."""

    own: PackPosition
    ranks: list[PackPosition]
    mixes: list[dict] | None
    regions: list[ElasticRegion] = field(default_factory=list)
    taken: list[list] = field(default_factory=list)


def resume_point(
    obj: dict[str, Any], world: int, rank: int, rows: int, records_per_batch: int
) -> ResumePoint:
    """Where rank ``rank`` of ``world`` processes (``rows`` rows per batch each,
    ``records_per_batch`` records per worker batch) resumes from the saved data position
    ``obj`` (the loader's ``state_dict``): its own saved position on the same number of
    processes, else the elastic plan (logged).

    Raises ``ValueError`` for another global batch (rows per step), another
    ``records_per_batch`` on the same number of processes, or an older format."""
    version = obj.get("version") if obj else None
    if version not in (2, FORMAT):
        raise ValueError(
            f"unrecognised data position in checkpoint (format {version}, expected {FORMAT}): "
            "it was written by an older Stoicheia; load weights only (train.load_path with a "
            "new run_name)"
        )
    ranks = [PackPosition(**r) for r in obj["ranks"]]
    saved_rows = obj.get("global_rows")
    if saved_rows is not None and saved_rows != rows * world:
        raise ValueError(
            f"the checkpoint was trained with a batch of {saved_rows} rows per step; this run "
            f"has {rows * world} ({world} process(es) x {rows} rows): set "
            f"train.global_batch_rows={saved_rows} (and leave train.grad_accum null) to resume "
            "with the same batch"
        )
    regions = [ElasticRegion(**r) for r in obj.get("regions", [])]
    consumed = obj.get("consumed") or [[] for _ in ranks]
    if len(ranks) == world:
        if obj["records_per_batch"] != records_per_batch:
            raise ValueError(
                f"checkpoint used data.records_per_batch={obj['records_per_batch']}, the config "
                f"says {records_per_batch}; keep it unchanged to resume"
            )
        return ResumePoint(ranks[rank], ranks, obj.get("mixes"), regions, consumed[rank])
    if version == 2:
        raise ValueError(
            f"the checkpoint was saved by {len(ranks)} processes in an older format that cannot "
            f"move to {world}; resume it with {len(ranks)} processes"
        )
    plan = plan_elastic_resume(ranks, consumed, regions, obj["records_per_batch"])
    log.info(
        "[data] elastic resume %d -> %d processes at batch %d: stream epoch %d restarts at "
        "record %d; %d records already trained on after it are skipped, of them %d in flight "
        "at the checkpoint (partly trained, their rest dropped)",
        len(ranks),
        world,
        plan.start.batch,
        plan.start.epoch,
        plan.start.sample_base,
        plan.skipped,
        plan.in_flight,
    )
    return ResumePoint(plan.start, [plan.start], obj.get("mixes"), plan.regions, [])


def warn_if_changed(
    start: PackPosition,
    phase: int,
    schedule: list[tuple[int, int]],
    saved_mixes: list[dict] | None,
    mixes: list[dict] | None,
) -> None:
    """Log a warning when a resumed position ``start`` no longer means what it meant when
    saved: the schedule now gives mix ``phase`` at its batch (not a switch there), or its mix's
    tier weights changed (``saved_mixes`` then, ``mixes`` now; ``mixes`` ``None``: a loader of
    one dataset, nothing to compare)."""
    if phase != start.phase and not any(
        first == start.batch and p == phase for first, p in schedule
    ):
        log.warning(
            "[data] batch %d: the checkpoint was in tier mix %d, the schedule now gives mix %d "
            "(changed anneal settings?): mix %d starts from its first record",
            start.batch,
            start.phase,
            phase,
            phase,
        )
    elif (
        saved_mixes is not None
        and mixes is not None
        and start.phase < len(saved_mixes)
        and start.phase < len(mixes)
    ):
        if dict(saved_mixes[start.phase]) != mixes[start.phase]:
            log.warning(
                "[data] batch %d: tier mix %d was %s when checkpointed and is %s now: the "
                "stream position is reused, so the records drawn differ from an uninterrupted "
                "run",
                start.batch,
                start.phase,
                saved_mixes[start.phase],
                mixes[start.phase],
            )
