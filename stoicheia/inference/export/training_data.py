"""What an exported model was trained on, for its model card and ``config.json``: the run's
shards (:func:`find_shard_root`), their tiers, letters, held-out works and record sources
(:func:`describe_training_data`), the licences of those sources (:data:`CORPUS_LICENCES`), the
tiers the run gave weight to (:func:`trained_tiers`), and the letter n-gram kept beside the
checkpoint (:func:`ngram_beside`, trained on the same shards by ``stoicheia benchmark``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from stoicheia.inference.loading import LoadedModel

__all__ = [
    "CORPUS_LICENCES",
    "EPIDOC_COLLECTIONS",
    "describe_training_data",
    "find_shard_root",
    "ngram_beside",
    "source_licence",
    "tier_phases",
    "trained_tiers",
]

#: Licence of the corpora the repository's readers produce, by record ``source`` prefix
#: (from ../shared/corpus/README.md and the licence files there).
CORPUS_LICENCES = {
    "perseus": "Perseus Digital Library Greek texts (Tufts University; via "
    "cltk/greek_text_perseus): CC BY-SA 3.0 US",
    "ud:grc_perseus": "UD Ancient Greek-Perseus treebank: CC BY-NC-SA 2.5",
    "ud:grc_proiel": "UD Ancient Greek-PROIEL treebank: CC BY-NC-SA 3.0",
    "isicily": "I.Sicily inscriptions (J. Prag et al., http://sicily.classics.ox.ac.uk): CC BY 4.0",
}
#: The EpiDoc reader's records all have the source ``epidoc``; the collection is told by the
#: file name (the record's work): I.Sicily names its files ``ISic000001.xml``. A match makes
#: the source ``epidoc:COLLECTION``, looked up in :data:`CORPUS_LICENCES`.
EPIDOC_COLLECTIONS = {"isicily": re.compile(r"(?:^|/)ISic\d{6}\.xml$")}


def ngram_beside(model: LoadedModel) -> Path | None:
    """The ``ngram.npz`` beside ``model``'s checkpoint or export folder (the one ``restore``
    fuses in), or ``None`` when there is none."""
    from stoicheia.inference.restore.fusion_file import beside

    path = beside(str(model.source))
    return path if path is not None and path.is_file() else None


def find_shard_root(
    run_config: dict[str, Any], checkpoint: str | Path | None = None
) -> Path | None:
    """The run's ``data.shard_root`` as a local folder with a ``stats.json``: as given (from the
    current folder), else, for a relative path and a checkpoint in the run's own
    ``train.save_folder``, relative to the folder the run was started from (the checkpoint's
    folder without the ``save_folder`` part). ``None`` when neither exists."""
    data = run_config.get("data", {}) or {}
    given = data.get("shard_root")
    if not given:
        return None
    if (Path(given) / "stats.json").exists():
        return Path(given)
    save = str((run_config.get("train", {}) or {}).get("save_folder", "")).format(
        run_name=run_config.get("run_name", "")
    )
    if (
        checkpoint is None
        or Path(given).is_absolute()
        or not save
        or "://" in save
        or Path(save).is_absolute()
    ):
        return None
    folder = Path(checkpoint).resolve()
    folder = folder if folder.is_dir() else folder.parent
    parts = Path(save).parts
    if folder.parts[-len(parts) :] != parts:
        return None
    base = Path(*folder.parts[: -len(parts)])
    return base / given if (base / given / "stats.json").exists() else None


def describe_training_data(
    run_config: dict[str, Any], shard_root: Path | None = None
) -> dict[str, Any]:
    """What the run trained on, from ``shard_root/stats.json`` (see :func:`find_shard_root`):
    tiers with their weights, train/held-out letters and records, the held-out works, and the
    licences of the corpora (:data:`CORPUS_LICENCES`, matched on the record sources stored in
    the shards). Missing facts are left out, never guessed."""
    data = run_config.get("data", {}) or {}
    out: dict[str, Any] = {
        "tier_weights": data.get("tier_weights", {}),
        "shard_root": str(shard_root or data.get("shard_root")),
    }
    if shard_root is None or not (Path(shard_root) / "stats.json").exists():
        return out
    root = Path(shard_root)
    stats_file = root / "stats.json"
    stats = json.loads(stats_file.read_text(encoding="utf-8"))
    out["tiers"] = {
        tier: {
            "letters": st.get("letters", {}),
            "records": st.get("records_kept", {}),
            "files": st.get("files"),
        }
        for tier, st in stats.get("tiers", {}).items()
    }
    out["val_works"] = stats.get("val_works", [])
    out["val_fraction"] = stats.get("val_fraction")
    sources = _sources(root)
    trained = trained_tiers(run_config)
    if trained is not None:  # a tier of weight 0 in every phase trained nothing
        sources = {t: srcs for t, srcs in sources.items() if t in trained}
    out["sources"] = sources
    out["licences"] = sorted(
        {lic for srcs in sources.values() for s in srcs if (lic := source_licence(s))}
    )
    unknown = sorted({s for srcs in sources.values() for s in srcs if source_licence(s) is None})
    if unknown:
        out["licences_unknown"] = unknown
    return out


def source_licence(source: str) -> str | None:
    """The licence of a record source as :func:`_sources` names it (``perseus``,
    ``ud:grc_proiel``, ``epidoc:isicily``, ...), from :data:`CORPUS_LICENCES`; ``None`` if
    unknown."""
    name = source.split(":", 1)[1] if source.startswith("epidoc:") else source
    for prefix, lic in CORPUS_LICENCES.items():
        if name == prefix or name.startswith(prefix):
            return lic
    return None


def _source_name(source: str, work: str) -> str:
    if source == "epidoc":
        for collection, pattern in EPIDOC_COLLECTIONS.items():
            if pattern.search(work):
                return f"epidoc:{collection}"
    return source


def _sources(root: Path) -> dict[str, list[str]]:
    """Distinct sources of every record of every tier and split (reads the shards): the
    record's ``source``, for EpiDoc records with the collection its work names
    (:data:`EPIDOC_COLLECTIONS`), e.g. ``epidoc:isicily``."""
    from stoicheia.data.eval_sets import local_val_dataset
    from stoicheia.data.shard_index import index_samples

    found: dict[str, set[str]] = {}
    for tier_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for split in ("train", "val"):
            if (
                not (tier_dir / split / "index.json").exists()
                or index_samples(tier_dir / split) == 0
            ):
                continue  # streaming refuses an empty split (convert --val-fraction 0)
            ds = local_val_dataset(str((tier_dir / split).resolve()))
            for i in range(ds.num_samples):
                item = ds.get_item(i)
                found.setdefault(tier_dir.name, set()).add(
                    _source_name(str(item["source"]), str(item["work"]))
                )
    return {t: sorted(s) for t, s in found.items()}


def tier_phases(run_config: dict[str, Any]) -> list[Any]:
    """The run's tier-mix phases (``callbacks.anneal_data.phases``: ``[[until, {tier: weight}],
    ...]``), or ``[]``."""
    anneal = (run_config.get("callbacks") or {}).get("anneal_data")
    phases = anneal.get("phases") if isinstance(anneal, dict) else None
    return list(phases) if isinstance(phases, list) else []


def trained_tiers(run_config: dict[str, Any]) -> set[str] | None:
    """The tiers the run trained on: a positive weight in ``data.tier_weights`` or in a phase
    of ``callbacks.anneal_data.phases``. ``None`` when the configuration records no weights."""
    weights = (run_config.get("data") or {}).get("tier_weights")
    mixes = [
        w
        for w in [weights]
        + [p[1] for p in tier_phases(run_config) if isinstance(p, list) and len(p) == 2]
        if isinstance(w, dict)
    ]
    if not mixes:
        return None
    return {t for mix in mixes for t, w in mix.items() if isinstance(w, (int, float)) and w > 0}
