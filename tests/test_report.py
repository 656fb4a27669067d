"""``stoicheia report``'s reading of a run folder (stoicheia.train.report)."""

from __future__ import annotations

import json
import math

from stoicheia.text.alphabet import LETTERS


def _run(tmp_path):
    """A run folder ``checkout/checkpoints/run`` trained with ``data.shard_root: data/shards``
    (relative to ``checkout``), its shards' ``stats.json`` with uniform letter counts."""
    checkout = tmp_path / "checkout"
    shards = checkout / "data" / "shards"
    shards.mkdir(parents=True)
    counts = {c: 10 for c in LETTERS}
    stats = {"tiers": {"gold": {"letter_counts_train": counts}}}
    (shards / "stats.json").write_text(json.dumps(stats), encoding="utf-8")
    run = checkout / "checkpoints" / "run"
    run.mkdir(parents=True)
    config = {"run_name": "run", "data": {"shard_root": "data/shards", "tier_weights": {"gold": 1}}}
    (run / "config.json").write_text(json.dumps(config), encoding="utf-8")
    rows = [{"step": s, "loss/train/total": 3.0 - s / 10} for s in (1, 2, 3)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_the_unigram_line_is_found_from_any_current_folder(tmp_path, monkeypatch):
    """The run's relative shard_root is looked for above the run folder, not in the current
    folder: the report drew no letter-unigram line when run from another folder."""
    from stoicheia.train.report import read_curves

    run = _run(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    curves = read_curves(run)
    assert curves.unigram_bits is not None
    assert math.isclose(curves.unigram_bits, math.log2(len(LETTERS)), rel_tol=1e-9)
    monkeypatch.chdir(run.parents[1])  # the checkout, where it was trained: the same
    assert read_curves(run).unigram_bits == curves.unigram_bits
