"""Labelled evaluation sets read from the held-out (``val``) shards.

``stoicheia convert`` sends a record to ``val`` for one of two reasons: its id hashes below
``--val-fraction`` (text of works the model also trains on), or its whole work was named
with ``--val-work`` (unseen works). The sets:

* ``holdout``: held-out records of works that are also in training (the id hash);
* ``dev``: records of the ``--val-work`` works, i.e. works the model never sees;
* ``all``: every held-out record.

The list of ``--val-work`` works comes from ``stats.json`` (``val_works``); shards read from
an object store without it have no ``dev`` records.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from stoicheia.data.corpus_stats import read_stats
from stoicheia.data.shard_index import index_samples
from stoicheia.data.shards import decode_planes
from stoicheia.text.planes import Planes

log = logging.getLogger(__name__)

EVAL_SETS = ("holdout", "dev", "all")


@dataclass
class EvalRecord:
    """One record to evaluate: its letter planes and where it comes from.

    ``tier`` is the shard tier (``input`` for raw files), ``work`` the work id (path of the
    source relative to the tier's directory, or the raw file's name), ``id`` the record id
    (``#part`` appended for a part of a long record).
    """

    planes: Planes
    tier: str
    work: str
    id: str


def read_split_records(
    shard_root: str | Path,
    split: str = "val",
    tiers: Iterable[str] | None = None,
    max_records: int | None = None,
) -> list[EvalRecord]:
    """Every record of ``split`` (``train``/``val``) of the local shards under ``shard_root``,
    tier by tier (sorted names, or the order of ``tiers``), in shard order: deterministic.

    ``max_records`` caps the records read per tier. Tiers without that split are skipped
    with a logged message. Raises ``FileNotFoundError`` naming the folder when no tier has
    the split (a corrupt shard raises what :func:`index_samples` raises).
    """
    root = Path(shard_root)
    names = (
        list(tiers)
        if tiers is not None
        else sorted(p.name for p in root.iterdir() if (p / split).is_dir())
    )
    out: list[EvalRecord] = []
    found = False
    for tier in names:
        local = root / tier / split
        if not (local / "index.json").exists() or index_samples(local) == 0:
            log.info("[eval] tier %r has no %s records at %s", tier, split, local)
            continue
        found = True
        ds = local_val_dataset(str(local.resolve()))
        n = ds.num_samples if max_records is None else min(ds.num_samples, max_records)
        for i in range(n):
            sample = ds.get_item(i)
            rid = str(sample["id"]) + (
                f"#{int(sample['part'])}" if int(sample.get("part", 0)) else ""
            )
            out.append(
                EvalRecord(decode_planes(sample), str(sample["tier"]), str(sample["work"]), rid)
            )
    if not found:
        raise FileNotFoundError(
            f"no {split} shards under {root} (looked for {root}/TIER/{split}/index.json): give the "
            "output folder of `stoicheia convert`, or raw .txt/.jsonl/.xml/.conllu files"
        )
    return out


def read_text_records(
    paths: Iterable[str | Path], min_greek: float = 0.95, not_read: list[Path] | None = None
) -> tuple[list[EvalRecord], Counter]:
    """Raw sources (``.txt``, ``.jsonl``, Perseus TEI ``.xml``, CoNLL-U), converted on the fly with
    the readers of :mod:`stoicheia.sources` and :func:`stoicheia.text.filter.normalise_record`,
    exactly as ``stoicheia convert`` would. Directories are searched like ``convert`` does.

    Returns the records (tier ``input``, work = the file's path relative to the directory
    given, or its name) and a ``Counter`` of rejected records by reason (``empty``,
    ``not_greek``): nothing is dropped silently. The files of the directories that are not
    read (no source suffix, licence/readme, hidden) are appended to ``not_read`` when it is a
    list, for the caller to report. Raises :class:`stoicheia.sources.SourceError` (file,
    line, fix) for a file the readers cannot read and ``ValueError`` when no Greek record is
    left (the message counts the files not read).
    """
    from stoicheia.sources import iter_source_files, read_source
    from stoicheia.text.filter import normalise_record

    out: list[EvalRecord] = []
    dropped: Counter = Counter()
    skipped: list[Path] = []
    paths = list(paths)
    for given in map(Path, paths):
        root = given if given.is_dir() else given.parent
        for f in iter_source_files([given], skipped=skipped):
            for rec in read_source(f, root):
                norm = normalise_record(rec.text, known=rec.known, min_greek=min_greek)
                if norm.planes is None:
                    dropped[norm.reject_reason or "rejected"] += 1
                    continue
                out.append(EvalRecord(norm.planes, "input", rec.work, rec.id))
    if not_read is not None:
        not_read.extend(skipped)
    if not out:
        unread = (
            f", {len(skipped)} files not read as they are no sources (e.g. {skipped[0]})"
            if skipped
            else ""
        )
        raise ValueError(
            f"no Greek record in {', '.join(map(str, paths))} (rejected: "
            f"{dict(dropped) or 'none'}{unread}); give Greek "
            ".txt/.jsonl/.xml/.conllu files or a shard folder"
        )
    return out, dropped


@functools.lru_cache(maxsize=32)
def local_val_dataset(local: str):
    """One read-only dataset per local val folder and process: a ``StreamingDataset`` holds
    shared-memory handles for as long as the process lives, so it is not built anew for each
    trainer a process builds."""
    from streaming import StreamingDataset

    from stoicheia.data.shm import retry_prefix_race

    return retry_prefix_race(lambda: StreamingDataset(local=local, batch_size=1, shuffle=False))


def _val_works(shard_root: str | Path | None) -> frozenset[str]:
    try:
        return (
            frozenset(read_stats(Path(shard_root)).get("val_works", []))
            if shard_root
            else frozenset()
        )
    except (FileNotFoundError, ValueError):
        return frozenset()


def read_eval_sets(
    shard_root: str | Path | None,
    tier_weights: Mapping[str, float],
    names: list[str],
    max_records: int,
    remote: str | None = None,
    local_cache: str | Path | None = None,
) -> dict[str, list[Planes]]:
    """The first ``max_records`` records of each named set, taken round-robin over the tiers
    with a positive weight, in shard order (deterministic).

    Sets without records (e.g. ``dev`` when no ``--val-work`` was given) are left out with a
    logged message; tiers without val shards are skipped likewise. Raises ``ValueError`` for
    an unknown set name or when no set has any record (with the convert options to use).
    """
    from streaming import StreamingDataset

    for name in names:
        if name not in EVAL_SETS:
            raise ValueError(
                f"data.eval_sets: unknown set {name!r}; the sets are {', '.join(EVAL_SETS)}"
            )
    val_works = _val_works(shard_root)
    per_set: dict[str, list[list[Planes]]] = {name: [] for name in names}
    for tier, weight in tier_weights.items():
        if weight <= 0:
            continue
        if remote is None:
            local = Path(shard_root) / tier / "val"  # type: ignore[arg-type]
            if not (local / "index.json").exists() or index_samples(local) == 0:
                log.info(
                    "[eval] tier %r has no held-out records at %s; it is not evaluated", tier, local
                )
                continue
            ds = local_val_dataset(str(local.resolve()))
        else:
            ds = StreamingDataset(
                remote=f"{remote.rstrip('/')}/{tier}/val",
                local=str(Path(local_cache or "shard_cache") / tier / "val"),
                batch_size=1,
                shuffle=False,
            )
        taken = {name: [] for name in names}
        for i in range(ds.num_samples):
            if all(len(t) >= max_records for t in taken.values()):
                break
            sample = ds.get_item(i)
            unseen = str(sample["work"]) in val_works
            for name in names:
                wanted = name == "all" or (name == "dev") == unseen
                if wanted and len(taken[name]) < max_records:
                    taken[name].append(decode_planes(sample))
        for name in names:
            per_set[name].append(taken[name])
    out: dict[str, list[Planes]] = {}
    for name, tiers in per_set.items():
        records: list[Planes] = []
        k = 0
        while len(records) < max_records and any(k < len(t) for t in tiers):
            for t in tiers:
                if k < len(t) and len(records) < max_records:
                    records.append(t[k])
            k += 1
        if records:
            out[name] = records
        else:
            why = (
                "no work was sent to val with --val-work" if name == "dev" else "no held-out record"
            )
            log.info("[eval] evaluation set %r is empty (%s); it is not evaluated", name, why)
    if not out:
        raise ValueError(
            f"no held-out records under {shard_root or remote}/*/val for the tiers in "
            "data.tier_weights and the sets "
            f"{names}: convert again with a larger --val-fraction or a --val-work"
        )
    return out
