"""A corpus a user brings, added as one more tier of converted shards (``stoicheia add-corpus``).

:func:`add_tier` converts a folder of EpiDoc files with the same reader and the same options as
the shards were converted with (``stats.json``'s ``epidoc``, ``min_greek``,
``max_record_letters``, ``val_fraction``), holds out its dev inscriptions by the same rule
(``inscription_dev.digits``: :func:`stoicheia.data.splits.dev_digit`), leaves out every text that
is a twin of one already in the shards (MinHash, :mod:`stoicheia.data.twins`: counted and listed,
never silently), writes it as ``SHARDS/NAME/{train,val,inscription_dev}`` and records it in
``stats.json``: the tier's counts under ``tiers``, its dev inscriptions and twins under
``inscription_dev``, and under ``added_tiers`` where it came from and that no network was trained
on it. Then the parallels index is rebuilt over all tiers
(:func:`stoicheia.data.parallels_index.build_index`); the n-gram beside a run is extended by the
command (:func:`stoicheia.inference.ngram.extend_ngram_file`).

The shards' ``stats.json`` is replaced only when the new tier's folders are in place, and the
tier's folders only appear whole (they are written beside, then renamed): a refused or killed
addition leaves the shards as they were.
"""

from __future__ import annotations

import datetime
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from stoicheia.data.convert_inputs import ConvertError
from stoicheia.data.corpus_stats import read_stats
from stoicheia.data.shard_index import index_samples
from stoicheia.data.splits import INSCRIPTION_DEV, SPLITS
from stoicheia.data.twins import twin_key
from stoicheia.publish import atomic_write
from stoicheia.sources import EpiDocOptions, SourceError, iter_source_files
from stoicheia.text.alphabet import NUM_LETTERS

#: ``stats.json``'s record of the tiers added after conversion (what restore's notes name)
ADDED_TIERS = "added_tiers"


class AddTierError(ConvertError):
    """The corpus cannot be added; the message names the file or folder and the fix."""


def shard_texts(root: Path, tiers: list[str]) -> dict[str, np.ndarray]:
    """The EpiDoc texts of every split of ``tiers`` under ``root``, one per ``(tier, work)``
    (keyed by :func:`stoicheia.data.twins.twin_key`): uint8 letter ids ``(n,)``, the letters of
    its records joined, real-lacuna slots and non-letters left out (the form twins compare)."""
    from stoicheia.data.eval_sets import local_val_dataset
    from stoicheia.data.shards import decode_planes

    letters: dict[str, list[np.ndarray]] = {}
    for tier in tiers:
        for split in (*SPLITS, INSCRIPTION_DEV):
            local = root / tier / split
            if not (local / "index.json").exists() or index_samples(local) == 0:
                continue
            ds = local_val_dataset(str(local.resolve()))
            for i in range(ds.num_samples):
                s = ds.get_item(i)
                if str(s["source"]) != "epidoc":
                    continue
                p = decode_planes(s)
                keep = (p.lacuna == 0) & (p.chars < NUM_LETTERS)
                letters.setdefault(twin_key(tier, str(s["work"])), []).append(p.chars[keep])
    return {k: np.concatenate(v).astype(np.uint8) for k, v in letters.items()}


def check_addition(shards: Path, name: str, folder: Path) -> dict:
    """Refuse, before anything is read, what cannot be added: ``shards`` without ``stats.json``,
    a tier name of other characters than letters, digits, ``_`` and ``-`` or one the shards
    already hold (or a folder of that name), a ``folder`` that does not exist or holds no
    ``.xml`` file. Returns the shards' ``stats.json``. Raises :class:`AddTierError`."""
    try:
        stats = read_stats(shards)
    except FileNotFoundError as err:
        raise AddTierError(
            f"{err}; give --shards the output folder of `stoicheia convert`"
        ) from None
    except ValueError as err:
        raise AddTierError(f"{shards / 'stats.json'}: unreadable ({err}); convert again") from None
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
        raise AddTierError(
            f"--name {name!r}: a tier name uses letters, digits, '_' and '-' only (e.g. iip)"
        )
    if name in (stats.get("tiers") or {}) or (shards / name).exists() or name == "parallels":
        held = ", ".join(stats.get("tiers") or {})
        raise AddTierError(
            f"--name {name!r}: {shards} already holds a tier (or folder) of that name ({held}); "
            "choose another --name, or convert again without it to replace it"
        )
    if not folder.is_dir():
        raise AddTierError(f"{folder}: no such folder; give the folder of your EpiDoc files")
    try:
        found = list(iter_source_files([folder]))
    except SourceError as err:
        raise AddTierError(str(err)) from None
    xml = [f for f in found if f.suffix == ".xml"]
    if not xml:
        others = f" (it holds {len(found)} other source files, not EpiDoc)" if found else ""
        raise AddTierError(
            f"{folder}: no .xml file{others}; give the folder of the corpus's EpiDoc files "
            '(TEI with <div type="edition">)'
        )
    if len(xml) < len(found):
        not_xml = sorted(str(f) for f in found if f.suffix != ".xml")
        raise AddTierError(
            f"{folder}: {len(not_xml)} files are not EpiDoc XML ({', '.join(not_xml[:3])}); "
            "add-corpus reads EpiDoc only: move them out, or convert them with "
            "`stoicheia convert`"
        )
    return stats


def add_tier(
    shards: str | Path,
    name: str,
    folder: str | Path,
    *,
    workers: int = 1,
    progress: bool | str = False,
    parallels_index: bool = True,
    say: Callable[[str], None] = lambda _line: None,
) -> dict:
    """Add the EpiDoc files under ``folder`` to the converted corpus ``shards`` as the tier
    ``name`` (module docstring) and rebuild its parallels index (unless ``parallels_index`` is
    False). Files the EpiDoc reader refuses are skipped and listed (as ``convert --skip-bad``).

    Returns ``{"tier": the tier's stats.json entry, "twins_of_known": [{"work", "twin_of",
    "jaccard"}], "dev_works": [...], "index": manifest or None, "seconds": {"convert",
    "twins", "index"}}``; ``say`` gets one line per stage.

    Raises :class:`AddTierError` (a bad name, folder or shards; a corpus with no Greek record,
    or nothing left once its twins are out) and
    :class:`stoicheia.data.parallels_index.IndexBuildError`.
    """
    import time

    from stoicheia.data.shards import convert

    shards, folder = Path(shards), Path(folder)
    stats = check_addition(shards, name, folder)
    tiers = list(stats.get("tiers") or {})
    dev = stats.get("inscription_dev") or {}
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    known = shard_texts(shards, tiers)
    seconds["twins"] = time.perf_counter() - t0
    say(f"compared against {len(known):,} EpiDoc texts already in {shards}")
    work = shards / f".{name}.adding"
    shutil.rmtree(work, ignore_errors=True)
    t0 = time.perf_counter()
    try:
        try:
            summary = convert(
                {name: [folder]},
                work,
                val_fraction=float(stats.get("val_fraction", 0.005)),
                max_record_letters=int(stats.get("max_record_letters", 2048)),
                min_greek=float(stats.get("min_greek", 0.95)),
                skip_bad=True,
                workers=workers,
                progress=progress,
                epidoc=EpiDocOptions(**(stats.get("epidoc") or {})),
                inscription_dev_digits=dev.get("digits") or (),
                parallels_index=False,
                known_texts=known,
            )
        except ConvertError as err:
            raise AddTierError(str(err)) from None
        seconds["convert"] = time.perf_counter() - t0
        new_dev = summary["inscription_dev"]
        added = {
            "from": str(folder.resolve()),
            "added": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "trained_on": False,
            "twins_of_known": len(new_dev["twins_of_known"]),
        }
        merged = dict(stats)
        merged["tiers"] = {**stats["tiers"], name: summary["tiers"][name]}
        merged["inscription_dev"] = {
            **dev,
            "works": [*dev.get("works", []), *new_dev["works"]],
            "twin_groups": [*dev.get("twin_groups", []), *new_dev["twin_groups"]],
            "twins_of_known": [*dev.get("twins_of_known", []), *new_dev["twins_of_known"]],
        }
        if not dev.get("digits"):
            merged["inscription_dev"].setdefault("digits", [])
        merged[ADDED_TIERS] = {**(stats.get(ADDED_TIERS) or {}), name: added}
        merged["warnings"] = [*stats.get("warnings", []), *summary.get("warnings", [])]
        (work / name).rename(shards / name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    try:
        atomic_write(shards / "stats.json", json.dumps(merged, indent=2, ensure_ascii=False) + "\n")
    except BaseException:
        shutil.rmtree(shards / name, ignore_errors=True)  # the shards as they were
        raise
    manifest = None
    if parallels_index:
        from stoicheia.data.parallels_index import build_index

        t0 = time.perf_counter()
        manifest = build_index(shards, progress=progress)
        seconds["index"] = time.perf_counter() - t0
    return {
        "tier": merged["tiers"][name],
        "twins_of_known": new_dev["twins_of_known"],
        "dev_works": new_dev["works"],
        "index": manifest,
        "seconds": seconds,
    }


__all__ = ["ADDED_TIERS", "AddTierError", "add_tier", "check_addition", "shard_texts"]
