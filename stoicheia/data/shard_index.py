"""Check converted shards from their ``index.json`` alone: no streaming, no torch.

Used at start-up before anything heavy is imported (a missing or damaged corpus answers in a
second, like a configuration typo), and by the data path itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path


def index_samples(split_dir: Path) -> int:
    """Number of samples in the MDS split at ``split_dir``, after checking that every shard file
    named by its ``index.json`` is present with the size the index records.

    Raises ``FileNotFoundError`` (missing index or shard) or ``ValueError`` (a shard of the wrong
    size: truncated or replaced), naming the file and the fix, so that a damaged corpus stops a
    run at start-up instead of failing inside DataLoader workers.
    """
    index = Path(split_dir) / "index.json"
    if not index.exists():
        raise FileNotFoundError(f"{index} not found: run `stoicheia convert` (see README)")
    try:
        shards = json.loads(index.read_text(encoding="utf-8"))["shards"]
    except (ValueError, KeyError) as err:
        raise ValueError(
            f"{index} is not a valid MDS index ({err}); re-run `stoicheia convert`"
        ) from err
    total = 0
    for shard in shards:
        total += int(shard["samples"])
        zipped = shard.get("zip_data")
        raw = shard["raw_data"]
        candidates = [(zipped["basename"], zipped["bytes"])] if zipped else []
        candidates.append((raw["basename"], raw["bytes"]))
        present = [(name, size) for name, size in candidates if (Path(split_dir) / name).exists()]
        if not present:
            raise FileNotFoundError(
                f"{Path(split_dir) / candidates[0][0]} is missing (listed in {index}); "
                "the corpus is incomplete: re-run `stoicheia convert`"
            )
        for name, size in present:
            actual = (Path(split_dir) / name).stat().st_size
            if actual != size:
                raise ValueError(
                    f"{Path(split_dir) / name} has {actual} bytes, {index} says {size}: the shard "
                    "is truncated or corrupt; re-run `stoicheia convert`"
                )
    return total


def check_local_split(shard_root: str | Path, tier: str, split: str) -> Path:
    """The folder ``shard_root/tier/split`` after checking it holds a complete MDS split with
    records (:func:`index_samples`). Raises ``FileNotFoundError`` (no ``index.json``, a missing
    shard) or ``ValueError`` (an empty split, a shard of the wrong size), naming the file, the
    tier and the fix."""
    local = Path(shard_root) / tier / split
    if not (local / "index.json").exists():
        raise FileNotFoundError(
            f"{local / 'index.json'} not found: tier {tier!r} has no {split} shards. "
            f"Run `stoicheia convert` with {tier}=PATH, or set its weight to 0 in data.tier_weights"
        )
    if index_samples(local) == 0:
        raise ValueError(
            f"{local} holds no records: tier {tier!r} has an empty {split} split. "
            f"Convert more text for it, or set its weight to 0 in data.tier_weights"
        )
    return local


def check_local_tiers(
    shard_root: str | Path, tier_weights: Mapping[str, float], split: str = "train"
) -> None:
    """:func:`check_local_split` for every tier with a positive weight (raises what it raises)."""
    for tier, weight in tier_weights.items():
        if weight > 0:
            check_local_split(shard_root, tier, split)
