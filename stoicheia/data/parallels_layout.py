"""What a parallels index folder holds, and which shards it was built from: the constants and
the provenance shared by the build (:mod:`stoicheia.data.parallels_index`, which reads the
shards with ``streaming``) and the readers (:mod:`stoicheia.inference.parallels`, which need
numpy alone). Nothing here imports numpy, ``streaming`` or torch.

Provenance. :func:`shards_provenance` fingerprints a converted corpus from its small files only
(each tier's ``train/index.json`` and ``stats.json``): the shard files of every tier's train
split (name, size, samples) and each tier's train counts (records, letters, letter counts).
The build stores it as ``manifest.json``'s ``"shards"``; restore compares it with the
provenance of the shards the checkpoint was trained on (its run's ``data.shard_root``), so that
an index of another corpus is not used unsaid (:func:`same_shards`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

#: the folder beside the tiers
INDEX_DIR = "parallels"
#: 2: the line numbers (``line_start.npy``, ``line_label*.npy``) were added; the ``"shards"``
#: provenance of the manifest came later, without a new version (older indexes lack it)
VERSION = 2
#: what text.npy holds at a separator (between records) and at a real-lacuna slot
SEPARATOR = 0

#: the arrays of :mod:`stoicheia.data.parallels_index`'s layout, each written as NAME.npy
ARRAYS = (
    "text",
    "sa",
    "look",
    "flow",
    "rec_start",
    "rec_tier",
    "rec_work",
    "ids",
    "ids_off",
    "works",
    "works_off",
    "works_meta",
    "works_meta_off",
    "line_start",
    "line_label",
    "line_label_off",
    "words",
)
#: every file a built index holds (a folder holding anything else is not replaced)
INDEX_FILES = frozenset(["manifest.json", *(f"{n}.npy" for n in ARRAYS)])


def shards_provenance(shard_root: str | Path) -> dict:
    """The provenance of the converted corpus at ``shard_root``: ``{"fingerprint":
    "sha256:<64 hex>", "train_letters": {tier: letters}}``.

    The fingerprint is the SHA-256 of a canonical JSON of, per tier of ``stats.json`` (sorted),
    the shards of ``TIER/train/index.json`` (basename, raw and compressed bytes, samples) and the
    tier's train counts of ``stats.json`` (records kept, letters, letter counts): the same for
    the same conversion wherever its folder lies, another for shards converted from other
    sources or with other settings. Shards to which ``stoicheia add-corpus`` added tiers
    (``stats.json``'s ``added_tiers``) also give ``"added_tiers"`` (their names) and
    ``"base_fingerprint"``, the fingerprint of the other tiers: that of the corpus as it was
    converted. Raises ``FileNotFoundError`` without ``stats.json`` and
    ``ValueError`` for an unreadable one.
    """
    root = Path(shard_root)
    path = root / "stats.json"
    try:
        stats = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} not found: not a converted corpus") from None
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: unreadable ({err})") from None
    tiers = stats.get("tiers") or {}
    added = [t for t in (stats.get("added_tiers") or {}) if t in tiers]
    what: dict[str, dict] = {}
    letters: dict[str, int] = {}
    for tier in sorted(tiers):
        t = tiers[tier] or {}
        shards: list = []
        index = root / tier / "train" / "index.json"
        if index.is_file():
            try:
                for s in json.loads(index.read_text(encoding="utf-8")).get("shards", []):
                    raw, packed = s.get("raw_data") or {}, s.get("zip_data") or {}
                    name, size = raw.get("basename"), raw.get("bytes")
                    shards.append([name, size, packed.get("bytes"), s.get("samples")])
            except (OSError, ValueError, AttributeError) as err:
                raise ValueError(f"{index}: unreadable ({err})") from None
        counts = {
            "records": (t.get("records_kept") or {}).get("train"),
            "letters": (t.get("letters") or {}).get("train"),
            "letter_counts": t.get("letter_counts_train"),
        }
        what[tier] = {"shards": shards, "counts": counts}
        letters[tier] = int(counts["letters"] or 0)
    out = {"fingerprint": _fingerprint(what), "train_letters": letters}
    if added:
        # the corpus as converted, before `stoicheia add-corpus` added tiers: what a run
        # trained before the addition names (same_shards)
        out["added_tiers"] = added
        out["base_fingerprint"] = _fingerprint({t: v for t, v in what.items() if t not in added})
    return out


def _fingerprint(what: dict) -> str:
    blob = json.dumps(what, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(blob.encode("ascii")).hexdigest()


def same_shards(index_manifest: dict, shard_root: str | Path) -> bool | None:
    """Whether the index of ``index_manifest`` was built from the corpus at ``shard_root``, or from
    it with tiers added by ``stoicheia add-corpus`` (the index's ``base_fingerprint`` is that
    corpus's fingerprint, or both have the same base): ``True``/``False``, or ``None`` when it
    cannot be told (an index built before its manifest recorded ``"shards"``, or no readable
    ``stats.json`` at ``shard_root``)."""
    built = index_manifest.get("shards") or {}
    if not built.get("fingerprint"):
        return None
    try:
        here = shards_provenance(shard_root)
    except (FileNotFoundError, ValueError):
        return None
    # an index of the run's shards with tiers added by `stoicheia add-corpus` is theirs too
    return built["fingerprint"] == here["fingerprint"] or (
        built.get("base_fingerprint") is not None
        and built["base_fingerprint"] in (here["fingerprint"], here.get("base_fingerprint"))
    )


def short(fingerprint: str | None) -> str:
    """``sha256:1a2b3c4d5e6f`` (the first 12 hex digits) of a fingerprint, for messages."""
    return (fingerprint or "none")[:19]


__all__ = [
    "ARRAYS",
    "INDEX_DIR",
    "INDEX_FILES",
    "SEPARATOR",
    "VERSION",
    "same_shards",
    "shards_provenance",
    "short",
]
