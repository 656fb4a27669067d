"""Composer fit on real shards, evaluation metrics, and resume equivalence."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from stoicheia.config import RunConfig
from stoicheia.train.builder import build_trainer
from stoicheia.train.run import fit_run

sys.path.insert(0, str(Path(__file__).parent))
from tiny import tiny_run  # noqa: E402


def tiny_config(shards, folder, name, steps=6, save_interval=3) -> RunConfig:
    return tiny_run(
        shards,
        folder,
        name,
        "data.eval_records=8",
        "train.grad_accum=2",
        "train.log_every=1",
        "train.warmup_frac=0.04",
        "callbacks.restoration_example=true",
        f"train.nominal_steps={steps}",
        f"train.max_steps={steps}",
        f"train.save_interval={save_interval}",
    )


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
    for key in (
        "lr-AdamW/group0",
        "train/grad_norm",
        "throughput/letters_per_sec",
        "memory/gib",
        "loss/char",
        "loss/punct",
    ):
        assert key in train[-1], key
    evals = [r for r in lines if "metrics/holdout/bits_per_char" in r]
    assert len(evals) == 2 and all(0 < r["metrics/holdout/bits_per_char"] < 10 for r in evals)
    assert (tmp_path / "fit" / "latest-rank0.pt").exists()
    assert built.control.complete


def test_resume_equivalence(small_shards, tmp_path):
    n = 3
    straight = build_trainer(
        tiny_config(small_shards, tmp_path, "straight", steps=2 * n, save_interval=n)
    )
    straight.trainer.fit()
    straight.trainer.close()
    want = _weights(straight.model)

    first = build_trainer(
        tiny_config(small_shards, tmp_path, "resumed", steps=2 * n, save_interval=n)
    )
    first.trainer.fit(duration=f"{n}ba")  # "preempted" after n batches (checkpoint at n)
    first.trainer.close()
    second = build_trainer(
        tiny_config(small_shards, tmp_path, "resumed", steps=2 * n, save_interval=n)
    )
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
