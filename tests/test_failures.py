"""Clear failures before training: each bad setting or input stops ``recipes/train.py`` before
the first batch with exit status 2 and one message naming the thing and the fix, no
traceback; the fix the message suggests exists."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from stoicheia.config import load_config, to_dict

sys.path.insert(0, str(Path(__file__).parent))
from tiny import tiny_run  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _train(yaml: Path, *overrides: str, world: int = 1) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    }
    cmd = (
        [str(REPO / ".venv" / "bin" / "python"), "recipes/train.py"]
        if world == 1
        else [str(REPO / ".venv" / "bin" / "composer"), "-n", str(world), "recipes/train.py"]
    )
    return subprocess.run(
        [*cmd, str(yaml), *overrides],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _check(proc: subprocess.CompletedProcess, *needles: str) -> str:
    err = proc.stderr
    assert proc.returncode == 2, proc.stdout[-2000:] + err[-2000:]
    assert "Traceback" not in err and "Traceback" not in proc.stdout, err[-3000:]
    lines = [line for line in err.splitlines() if line.startswith("train.py:")]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert "[train] step" not in proc.stdout  # nothing trained
    return lines[0]


@pytest.fixture
def yaml(small_shards, tmp_path) -> Path:
    path = tmp_path / "run.yaml"
    OmegaConf.save(OmegaConf.create(to_dict(tiny_run(small_shards, tmp_path, "fail"))), path)
    return path


def _suggested_key_exists(line: str, key: str) -> None:
    """A key the message tells the user to set is a real configuration key."""
    assert key in line
    section, name = key.split(".")
    assert name in to_dict(load_config(REPO / "yamls" / "demo.yaml"))[section]


def test_shard_root_missing(yaml, tmp_path):
    line = _check(
        _train(yaml, f"data.shard_root={tmp_path / 'nowhere'}"),
        "nowhere",
        "index.json",
        "stoicheia convert",
    )
    _suggested_key_exists(line, "data.tier_weights")


def test_shard_file_truncated(yaml, small_shards, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(small_shards, broken)
    shard = sorted((broken / "silver" / "train").glob("shard.*.mds*"))[0]
    shard.write_bytes(shard.read_bytes()[:100])
    _check(_train(yaml, f"data.shard_root={broken}"), shard.name, "stoicheia convert")


def test_config_typo(yaml):
    line = _check(_train(yaml, "train.sav_interval=3"), "train.sav_interval", "train.save_interval")
    _suggested_key_exists(line, "train.save_interval")


def test_seq_len_too_small_for_the_model(yaml):
    line = _check(
        _train(yaml, "data.seq_len=64", "model.char_window=128"),
        "data.seq_len",
        "model.char_window",
    )
    _suggested_key_exists(line, "model.char_window")


def test_load_path_missing(yaml, tmp_path):
    line = _check(
        _train(yaml, f"train.load_path={tmp_path / 'no.pt'}"), "no.pt", "train.load_path=null"
    )
    _suggested_key_exists(line, "train.load_path")


def test_save_folder_not_writable(yaml, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file, not a folder")
    line = _check(
        _train(yaml, f"train.save_folder={blocker}/{{run_name}}"),
        "train.save_folder",
        "not writable",
    )
    _suggested_key_exists(line, "train.save_folder")


def test_global_batch_that_cannot_be_split(yaml):
    # 6 rows over 2 processes of 2-row micro-batches: 3 rows each, not a whole number of
    # micro-batches
    proc = _train(
        yaml,
        "train.global_batch_rows=6",
        "train.grad_accum=null",
        "train.micro_batch_rows=2",
        world=2,
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("train.py:")]
    assert len(lines) == 1 and "cannot be split over 2 process(es)" in lines[0], proc.stderr
    assert "set train.micro_batch_rows to a divisor of 3 (e.g. 1)" in lines[0]
