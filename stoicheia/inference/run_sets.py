"""A model's figures on the evaluation sets its run trained with (``holdout``, ``dev``), computed
as the training evaluators compute them (the run's letter-unigram entropy beside them:
:func:`stoicheia.data.corpus_stats.run_unigram_bits`).

``stoicheia evaluate`` prints these beside its own per-tier and per-work table, in the training
console's format (:func:`stoicheia.train.console.eval_lines`), so the figures of a checkpoint
can be compared with the ``[eval]`` lines and ``evals.jsonl`` of its run: same records
(:func:`stoicheia.data.eval_sets.read_eval_sets` with the run's ``data.tier_weights``,
``data.eval_sets`` and ``data.eval_records``), same reference noise (``data.eval_t``,
``data.eval_seed``), same packing (``data.seq_len``, ``data.eval_rows``).
"""

from __future__ import annotations

from pathlib import Path

import torch

from stoicheia.data.eval_batches import build_eval_batches
from stoicheia.data.eval_sets import read_eval_sets
from stoicheia.inference.loading import LoadedModel
from stoicheia.model.metrics import eval_metrics, update_metric


def run_eval_sets(model: LoadedModel, shard_root: str | Path) -> dict[str, dict[str, float]]:
    """``{set: {metric: value}}`` of ``model`` on the evaluation sets of its run, read from the
    converted corpus ``shard_root`` (the run's ``data.shard_root``, or the same shards
    elsewhere). Metrics are :data:`stoicheia.model.metrics.EVAL_METRICS` (bits per character
    over masked letters, in bits; accuracies and F1 in [0, 1]). Sets without records are left
    out (as in training).

    Raises ``ValueError`` if the model's run config has no ``data`` section or no set has a
    record, ``FileNotFoundError`` if ``shard_root`` holds no shards.
    """
    data = (model.config or {}).get("data")
    if not isinstance(data, dict) or "tier_weights" not in data:
        raise ValueError(
            f"{model.source}: the run config has no data section; its evaluation sets are unknown"
        )
    sets = read_eval_sets(
        shard_root,
        data["tier_weights"],
        list(data.get("eval_sets", ["holdout"])),
        int(data.get("eval_records", 256)),
    )
    out: dict[str, dict[str, float]] = {}
    with torch.no_grad():
        for label, records in sets.items():
            metrics = eval_metrics()
            batches = build_eval_batches(
                records,
                int(data.get("seq_len", 512)),
                int(data.get("eval_rows", 8)),
                float(data.get("eval_t", 0.30)),
                int(data.get("eval_seed", 1234)),
            )
            for batch in batches:
                logits = {h: v.cpu() for h, v in model(batch).items()}
                for m in metrics.values():
                    update_metric(m, logits, batch)
            out[label] = {name: float(m.compute()) for name, m in metrics.items()}
    return out
