"""The letter n-gram a checkpoint is restored with: ``ngram.npz`` beside it.

``stoicheia benchmark CHECKPOINT --save-ngram`` writes ``ngram.npz`` into the checkpoint's
folder: the n-gram's counts (trained on the run's training shards) and the fusion weight that
did best on the inscription dev set (0 when the fusion did not help there). ``restore`` (the
CLI, the page, :func:`stoicheia.inference.restore.restore`) then fuses it in by default;
``--ngram PATH`` names another file, ``--ngram-weight W`` overrides the weight (0: the model
alone).
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any

from stoicheia.inference.ngram import load_ngram
from stoicheia.inference.restore.gap_search import Fusion
from stoicheia.inference.restore.reading import RestoreError

log = logging.getLogger(__name__)

#: the file name beside a checkpoint
NGRAM_FILE = "ngram.npz"


def beside(source: str) -> Path | None:
    """The ``ngram.npz`` path beside a checkpoint, a run folder or an export folder ``source``
    (a local path), else ``None`` (an object-store URI)."""
    if "://" in source:
        return None
    p = Path(source)
    return (p if p.is_dir() else p.parent) / NGRAM_FILE


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int) -> tuple[Any, dict]:
    """:func:`load_ngram`, read once per file version (a page or a corpus run restores many texts)."""
    del mtime_ns  # part of the cache key only
    return load_ngram(path)


def find_fusion(
    loaded: Any, path: str | Path | None = None, weight: float | None = None
) -> Fusion | None:
    """The :class:`Fusion` for ``loaded`` (a :class:`~stoicheia.inference.loading.LoadedModel`):
    the n-gram file ``path`` (default :func:`beside` its source; a missing default file means no
    fusion), at ``weight`` (default the weight stored in the file). Returns ``None`` for the
    model alone. Raises :class:`RestoreError` naming the file when ``path`` is given and missing
    or unreadable, or ``weight`` is outside [0, 1]."""
    if weight is not None and not 0.0 <= weight <= 1.0:
        raise RestoreError(f"--ngram-weight {weight}: give a weight in [0, 1] (0: the model alone)")
    if weight == 0.0:
        return None
    chosen = Path(path) if path is not None else beside(str(loaded.source))
    if chosen is None or not chosen.exists():
        if path is not None:
            raise RestoreError(
                f"{path}: no such n-gram file; write one with `stoicheia benchmark CHECKPOINT --save-ngram`"
            )
        return None
    try:
        ngram, meta = _load(str(chosen.resolve()), chosen.stat().st_mtime_ns)
    except ValueError as err:
        raise RestoreError(str(err)) from None
    w = float(meta.get("weight", 0.0)) if weight is None else weight
    if w <= 0.0:
        return None
    fusion = Fusion(ngram, w)
    fusion.source = f"{chosen.name}, weight {'chosen on ' + meta['chosen_on'] if 'chosen_on' in meta and weight is None else 'given'}"
    return fusion


__all__ = ["NGRAM_FILE", "beside", "find_fusion"]
