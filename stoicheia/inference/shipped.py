"""The base model shipped inside the package (``stoicheia/base_model/``): what ``restore`` and
``serve`` use when no CHECKPOINT is given, and where the parts that cannot ship are built.

The folder is an export folder (:mod:`stoicheia.inference.export`: ``model.safetensors``,
``config.json``, ``tokenizer_config.json``, ``README.md``, ``ngram.npz``, ``fusion.json``;
without the model code, which ``stoicheia export`` writes for ``transformers``) with a
``provenance.json`` beside it (run, step, held-out bits per character, the shards' fingerprint,
the benchmark's figures, the conversion that made the shards: :mod:`.export.shipping`). It is
written by ``stoicheia export RUN_FOLDER --ship``; docs/model-card.md describes it.

The parallels index (hundreds of MB) cannot ship: ``stoicheia parallels --build`` converts the
corpus as the shipped model's shards were converted and indexes it, into :func:`cache_root`'s
``data/shards``, where ``restore`` then finds it (the run's ``data.shard_root`` found under the
checkout, :mod:`.run_paths`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

#: the shipped model's folder, package data of ``stoicheia``
SHIPPED_DIR = Path(__file__).resolve().parents[1] / "base_model"
#: the file of the bundle that says where the model comes from
PROVENANCE = "provenance.json"
#: where the model card is, for notes
CARD = "docs/model-card.md"
#: the one command that builds the parallels index the shipped model fuses in
BUILD_COMMAND = "stoicheia parallels --build"
#: where the shards and their index are built, under :func:`cache_root` (the demo's folder)
SHARDS = "data/shards"


def shipped_dir() -> Path | None:
    """The shipped model's folder when it holds a model (``config.json`` and
    ``model.safetensors``), else ``None`` (a checkout or wheel without the bundle)."""
    from stoicheia.inference.loading import is_export_dir

    return SHIPPED_DIR if is_export_dir(SHIPPED_DIR) else None


def is_shipped(source: str | Path | None) -> bool:
    """Whether ``source`` (a loaded model's ``source``) is the shipped model's folder."""
    if source is None or "://" in str(source):
        return False
    try:
        return Path(source).resolve() == SHIPPED_DIR
    except OSError:
        return False


def read_provenance(folder: str | Path | None = None) -> dict[str, Any]:
    """The ``provenance.json`` of a shipped-model folder (default: :data:`SHIPPED_DIR`) as a
    dict. Raises ``FileNotFoundError``
    when there is none and ``ValueError`` (naming the file) when it is not a JSON object."""
    path = Path(folder if folder is not None else SHIPPED_DIR) / PROVENANCE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err}); ship the model again") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object; ship the model again")
    return data


#: what building the index costs, measured: the demo's conversion of ../shared/corpus into
#: shards with the parallels index (the shipped model's corpus and settings, provenance.json
#: "convert") took 105 s on 2 idle cores (checkpoints/stoicheia-demo/console.log, 2026-12-05),
#: and the index is 282 MB on disk: fifty times a restore (about 2 s), so a first restore
#: never builds it unasked; the note says so and names the command
BUILD_COST = "about 2 minutes on 2 cores, 280 MB"


def missing_index_note(provenance: dict[str, Any] | None = None) -> str:
    """The one note of a restore with the shipped model before its parallels index is built:
    the single command that improves the reading, what it costs (:data:`BUILD_COST`), and what
    the parallels bring, from the shipped model's own benchmark (``provenance``, default
    :func:`read_provenance`: top-1 on the hidden spans of the report half, the fused decoder
    with the parallels against the n-gram alone), when it has one."""
    if provenance is None:
        try:
            provenance = read_provenance()
        except (OSError, ValueError):
            provenance = {}
    gain = ""
    rows = (((provenance.get("benchmark") or {}).get("protocols") or {}).get("hidden") or {}).get(
        "decoders"
    ) or {}
    with_par, ngram = (rows.get(k, {}).get("top1") for k in ("fused", "ngram"))
    if isinstance(with_par, (int, float)) and isinstance(ngram, (int, float)):
        gain = (
            f": on the shipped model's benchmark, fused with them it puts the right fill first "
            f"for {100 * with_par:.0f} % of hidden spans, the letter n-gram alone for "
            f"{100 * ngram:.0f} %"
        )
    return (
        f"no parallels yet: run `{BUILD_COMMAND}` once and every restore after it fuses in the "
        f"corpus's parallels{gain}; it converts the corpus and indexes it ({BUILD_COST}), too "
        "large to ship with the model and too slow to build unasked"
    )


def shipped_note(command: str) -> str:
    """The one note of a command run with the shipped model: which model, its figures and where
    its card is."""
    try:
        p = read_provenance()
    except (OSError, ValueError):
        p = {}
    what = p.get("run_name", "the base model")
    facts = []
    if p.get("step") is not None:
        facts.append(f"step {p['step']}")
    if isinstance(p.get("dev_bits_per_char"), (int, float)):
        facts.append(f"dev {p['dev_bits_per_char']:.3f} bits/char")
    shown = f" ({', '.join(facts)})" if facts else ""
    return (
        f"stoicheia {command}: no CHECKPOINT given: the shipped model {what}{shown}, "
        f"stoicheia/base_model; its card: {CARD}"
    )


def cache_root() -> Path:
    """The folder the parallels index of the shipped model is built under:
    ``$STOICHEIA_HOME`` when set, else the checkout the package runs from (its ``data/`` is
    git-ignored; the demo converts into the same ``data/shards``), else, for an installed
    package, the user cache (``$XDG_CACHE_HOME/stoicheia``, default ``~/.cache/stoicheia``)."""
    from stoicheia.inference.run_paths import checkout_root

    given = os.environ.get("STOICHEIA_HOME")
    if given:  # another place chosen (tests, a shared install)
        return Path(given)
    root = checkout_root()
    if root is not None:
        return root
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stoicheia"


def default_corpus() -> Path:
    """The corpus ``stoicheia parallels --build`` converts by default: ``$STOICHEIA_CORPUS``,
    else ``../shared/corpus`` beside the checkout (as ``scripts/demo.sh``)."""
    given = os.environ.get("STOICHEIA_CORPUS")
    if given:
        return Path(given)
    return cache_root().parent / "shared" / "corpus"


__all__ = [
    "BUILD_COMMAND",
    "BUILD_COST",
    "CARD",
    "PROVENANCE",
    "SHARDS",
    "SHIPPED_DIR",
    "cache_root",
    "default_corpus",
    "is_shipped",
    "missing_index_note",
    "read_provenance",
    "shipped_dir",
    "shipped_note",
]
