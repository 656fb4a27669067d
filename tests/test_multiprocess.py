"""Two processes (``composer -n 2``, gloo on CPU) on real shards: the run trains, evaluates
sharded over the ranks, logs its loss terms, and both ranks switch tier mix at the same batch."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import torch
from omegaconf import OmegaConf

from stoicheia.config import to_dict
from stoicheia.train import run_files

sys.path.insert(0, str(Path(__file__).parent))
from test_plugins import PHASED, config  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def test_two_processes_switch_phase_at_the_same_batch(small_shards, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    yaml = tmp_path / "two.yaml"
    OmegaConf.save(
        OmegaConf.create(
            to_dict(config(small_shards, tmp_path, "two", *PHASED, "train.log_every=4"))
        ),
        yaml,
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    }
    proc = subprocess.run(
        [str(REPO / ".venv" / "bin" / "composer"), "-n", "2", "recipes/train.py", str(yaml)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    # once per job, not once per process
    assert out.count("[data] step 12: anneal phase 1 of 2 starts") == 1
    assert out.count("[data] step 16: anneal phase 2 of 2 starts") == 1
    assert out.count("[run] step 20: run complete") == 1
    folder = tmp_path / "two"
    # every rank's packer position, as saved in the checkpoints (gathered from both ranks)
    for name, phase, start in [("ep0-ba14-rank0.pt", 1, 12), ("final.pt", 2, 16)]:
        ranks = torch.load(folder / name, weights_only=False)["state"]["dataset_state"]["train"][
            "ranks"
        ]
        assert len(ranks) == 2
        assert [(r["phase"], r["phase_start"]) for r in ranks] == [(phase, start)] * 2, (
            name,
            ranks,
        )
    rows = run_files.read_jsonl(folder / "metrics.jsonl")
    train = [r for r in rows if "loss/total" in r]
    assert len(train) == 20 and all(
        math.isfinite(r["loss/total"]) and math.isfinite(r["loss/char"]) for r in train
    )
    evals = [r for r in rows if "metrics/holdout/bits_per_char" in r]
    assert len(evals) == 10 and all(0 < r["metrics/holdout/bits_per_char"] < 10 for r in evals)
    done = json.loads((folder / "complete.json").read_text())
    assert done["reason"] == "anneal_done" and done["step"] == 20
