"""The small run the training tests share: a 2-layer model on the small real shards."""

from __future__ import annotations

import os
from pathlib import Path

from stoicheia.config import RunConfig, load_config

REPO = Path(__file__).resolve().parents[1]


def tiny_run(shards, folder, name, *extra: str) -> RunConfig:
    """``yamls/demo.yaml`` shrunk to a 2-layer, 32-wide model on 96-slot rows, one held-out
    set, checkpoints in ``folder/name``; ``extra`` overrides come last. The small shards hold
    gold and silver only, so the demo's bronze tier is switched off. It trains in fp32 whatever
    the demo's precision (``auto``: bf16 on a CPU with the instructions), so a test gives the
    same figures on every CPU; tests/test_bf16.py trains the tiny run in bf16."""
    return load_config(
        "yamls/demo.yaml",
        [
            f"run_name={name}",
            f"data.shard_root={shards}",
            "data.tier_weights.bronze=0",
            "callbacks.anneal_data.phases=[[0.5, {gold: 1.0, silver: 1.0}], [1.0, {gold: 1.0}]]",
            "data.seq_len=96",
            "data.records_per_batch=4",
            "data.num_workers=0",
            "data.eval_records=4",
            "data.eval_rows=4",
            "data.eval_sets=[holdout]",
            "train.decide_on=holdout/bits_per_char",
            "model.d_model=32",
            "model.n_layers=2",
            "model.n_heads=2",
            "model.char_window=16",
            "train.micro_batch_rows=2",
            "train.global_batch_rows=null",
            "train.grad_accum=1",
            "train.log_every=1000",
            "train.warmup_frac=0.05",
            "train.precision=fp32",
            f"train.save_folder={folder}/{{run_name}}",
            "callbacks.restoration_example=false",
            *extra,
        ],
    )


def train_tiny(shards, folder, name, *extra: str) -> Path:
    """Train :func:`tiny_run` (``extra`` overrides: the steps, evaluations, loggers) to its end
    from the repository root (the config names repository paths) and return its run folder,
    ``folder/name``. The working directory is restored afterwards."""
    from stoicheia.train.builder import build_trainer
    from stoicheia.train.run import fit_run

    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        built = build_trainer(tiny_run(shards, folder, name, *extra))
        fit_run(built)
        built.trainer.close()
    finally:
        os.chdir(cwd)
    return Path(folder) / name
