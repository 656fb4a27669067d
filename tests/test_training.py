"""Composer fit on real shards, evaluation metrics, and resume equivalence."""

from __future__ import annotations

import json

import pytest
import torch

from stoicheia.config import RunConfig, load_config
from stoicheia.train.builder import build_trainer, fit_run


def tiny_config(shards, folder, name, steps=6, save_interval=3) -> RunConfig:
    cfg = load_config(
        "yamls/demo.yaml",
        [
            f"run_name={name}",
            f"data.shard_root={shards}",
            "data.seq_len=96",
            "data.records_per_batch=4",
            "data.num_workers=0",
            "data.eval_records=8",
            "data.eval_rows=4",
            "data.eval_sets=[holdout]",
            "train.decide_on=holdout/bits_per_char",
            "model.d_model=32",
            "model.n_layers=2",
            "model.n_heads=2",
            "model.char_window=16",
            "train.micro_batch_rows=2",
            "train.grad_accum=2",
            f"train.nominal_steps={steps}",
            f"train.max_steps={steps}",
            f"train.save_interval={save_interval}",
            "train.log_every=1",
            f"train.save_folder={folder}/{{run_name}}",
        ],
    )
    return cfg


def _weights(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.fixture(autouse=True)
def _chdir_repo(monkeypatch):
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).resolve().parents[1])


def test_fit_logs_metrics_and_checkpoints(small_shards, tmp_path, capsys):
    built = build_trainer(tiny_config(small_shards, tmp_path, "fit"))
    built.trainer.fit()
    built.trainer.close()
    out = capsys.readouterr().out
    assert "[eval]" in out and "bits_per_char" in out
    assert "[restore]" in out
    lines = [json.loads(x) for x in (tmp_path / "fit" / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in lines if "loss/total" in r]
    assert len(train) == 6
    for key in ("lr-AdamW/group0", "train/grad_norm", "throughput/letters_per_sec", "memory/gib", "loss/char", "loss/punct"):
        assert key in train[-1], key
    evals = [r for r in lines if "metrics/holdout/bits_per_char" in r]
    assert len(evals) == 2 and all(0 < r["metrics/holdout/bits_per_char"] < 10 for r in evals)
    assert (tmp_path / "fit" / "latest-rank0.pt").exists()
    assert built.control.complete


def test_resume_equivalence(small_shards, tmp_path):
    n = 3
    straight = build_trainer(tiny_config(small_shards, tmp_path, "straight", steps=2 * n, save_interval=n))
    straight.trainer.fit()
    straight.trainer.close()
    want = _weights(straight.model)

    first = build_trainer(tiny_config(small_shards, tmp_path, "resumed", steps=2 * n, save_interval=n))
    first.trainer.fit(duration=f"{n}ba")  # "preempted" after n batches (checkpoint at n)
    first.trainer.close()
    second = build_trainer(tiny_config(small_shards, tmp_path, "resumed", steps=2 * n, save_interval=n))
    assert int(second.trainer.state.timestamp.batch) == n, "autoresume must pick up the checkpoint"
    second.trainer.fit()
    second.trainer.close()
    got = _weights(second.model)
    assert want.keys() == got.keys()
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=0, atol=0, msg=k)


def test_completed_run_does_not_train_on(small_shards, tmp_path, capsys):
    cfg = tiny_config(small_shards, tmp_path, "done", steps=3, save_interval=3)
    b = build_trainer(cfg)
    b.trainer.fit()
    b.trainer.close()
    again = build_trainer(cfg)
    assert fit_run(again) is False
    assert int(again.trainer.state.timestamp.batch) == 3
    assert "already complete" in capsys.readouterr().out
