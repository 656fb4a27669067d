"""Elastic resume: a run killed under N processes goes on under M != N (``composer -n``, gloo
on CPU, real shards). The batch (rows per step) stays the same, grad_accum follows the number
of processes, every record of the stream epoch is trained on once over both jobs (apart from
the records in flight at the checkpoint, counted in the log), and the plugins' state (anneal
phases, best checkpoint) carries over."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from stoicheia.config import ConfigError, batch_split, to_dict
from stoicheia.data.position import ElasticRegion, PackPosition, plan_elastic_resume

sys.path.insert(0, str(Path(__file__).parent))
from tiny import tiny_run  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
COMPOSER = str(REPO / ".venv" / "bin" / "composer")
EPOCH = 12  # records per stream epoch: small, so that epoch 0 ends inside the run

ELASTIC = (
    "train.global_batch_rows=8",
    "train.grad_accum=null",
    "train.micro_batch_rows=2",
    "data.records_per_batch=2",
    f"data.epoch_size={EPOCH}",
    "train.nominal_steps=24",
    "train.max_steps=24",
    "train.decay_frac=0.5",
    "train.save_interval=4",
    "callbacks.auto_anneal=false",
    "callbacks.anneal_early_stop.patience=0",
    "callbacks.anneal_data.phases=[[0.5, {silver: 1}], [1.0, {gold: 1, silver: 1}]]",
    "callbacks.record_log={}",
)


def _env() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    }


def _yaml(shards, tmp_path, name) -> Path:
    path = tmp_path / f"{name}.yaml"
    OmegaConf.save(OmegaConf.create(to_dict(tiny_run(shards, tmp_path, name, *ELASTIC))), path)
    return path


def _run_until_checkpoint(n: int, yaml: Path, folder: Path, batch: int) -> str:
    """Start ``composer -n n`` and SIGKILL its whole process group once checkpoint ``batch``
    is complete (``latest`` points at it)."""
    proc = subprocess.Popen(
        [COMPOSER, "-n", str(n), "recipes/train.py", str(yaml)],
        cwd=REPO,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    latest = folder / "latest-rank0.pt"
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if latest.is_symlink() and int(re.search(r"ba(\d+)", os.readlink(latest))[1]) >= batch:
                break
            time.sleep(0.05)
        assert proc.poll() is None, (
            f"the first job ended before checkpoint {batch}: {proc.stdout.read()[-3000:]}"
        )
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
    out = proc.stdout.read()
    proc.wait()
    return out


def _records(folder: Path, killed_at: int) -> tuple[list[dict], int]:
    """Record lines of both jobs: the first job's up to its checkpoint, then the second's."""
    rows = []
    for f in sorted(folder.glob("records-rank*.jsonl")):
        rows += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    # a line of the first job has step <= killed_at or was retrained; the resumed job's lines
    # come after the first job's in each file, so keep per (rank, step) the last job's lines
    kept = [r for r in rows if r["step"] > killed_at]
    first = [r for r in rows if r["step"] <= killed_at]
    return first + kept, len(first)


def _check_resumed(shards, tmp_path, name: str, before: int, after: int):
    yaml = _yaml(shards, tmp_path, name)
    folder = tmp_path / name
    _run_until_checkpoint(before, yaml, folder, 4)
    killed_at = int(re.search(r"ba(\d+)", os.readlink(folder / "latest-rank0.pt"))[1])
    # lines the first job wrote after its checkpoint are retrained: drop them
    for f in folder.glob("records-rank*.jsonl"):
        lines = [
            line
            for line in f.read_text().splitlines()
            if line.strip() and json.loads(line)["step"] <= killed_at
        ]
        f.write_text("".join(line + "\n" for line in lines))
    proc = subprocess.run(
        [COMPOSER, "-n", str(after), "recipes/train.py", str(yaml)],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    accum = 8 // (2 * after)
    assert (
        f"[run] batch: 8 rows of 96 slots per step = {after} process(es) x 2 rows "
        f"x grad_accum {accum}" in out
    )
    m = re.search(
        rf"elastic resume {before} -> {after} processes at batch {killed_at}: "
        r"stream epoch (\d+) restarts at record (\d+); "
        r"(\d+) records already trained on after it are skipped, of them (\d+) in flight",
        out,
    )
    assert m, out[-3000:]
    skipped, in_flight = int(m[3]), int(m[4])
    # the plugins' state came along: the phases switch at their batches, once
    assert out.count("[data] step 12: anneal phase 1 of 2 starts") == 1
    assert out.count("[data] step 18: anneal phase 2 of 2 starts") == 1
    assert out.count("[run] step 24: run complete") == 1
    assert json.loads((folder / "complete.json").read_text())["step"] == 24
    assert json.loads((folder / "best.json").read_text())["step"] in range(4, 25, 4)
    rows, _ = _records(folder, killed_at)
    # phase 0 (batches 1-12) reads mix 0: its stream epoch 0 must be read once, entirely
    epoch0 = Counter(r["record"] for r in rows if r["phase"] == 0 and r["epoch"] == 0)
    twice = {k: c for k, c in epoch0.items() if c > 1}
    assert not twice, f"drawn twice across the {before} -> {after} resume: {twice}"
    assert sum(epoch0.values()) == EPOCH, (
        f"{EPOCH - sum(epoch0.values())} records of epoch 0 skipped"
    )
    return killed_at, skipped, in_flight


@pytest.mark.slow
def test_two_processes_to_one(small_shards, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    killed_at, skipped, in_flight = _check_resumed(small_shards, tmp_path, "two-to-one", 2, 1)
    print(
        f"2 -> 1 at batch {killed_at}: {skipped} records skipped (trained before), "
        f"{in_flight} in flight"
    )


@pytest.mark.slow
def test_one_process_to_two(small_shards, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    killed_at, skipped, in_flight = _check_resumed(small_shards, tmp_path, "one-to-two", 1, 2)
    print(
        f"1 -> 2 at batch {killed_at}: {skipped} records skipped (trained before), "
        f"{in_flight} in flight"
    )


def test_global_batch_split_follows_the_processes():
    cfg = tiny_run(
        "unused",
        "/tmp",
        "x",
        "train.global_batch_rows=8",
        "train.grad_accum=null",
        "train.micro_batch_rows=2",
    ).train
    assert [batch_split(cfg, w) for w in (1, 2, 4)] == [(4, 8), (2, 8), (1, 8)]
    with pytest.raises(
        ConfigError,
        match=r"cannot be split over 3 process\(es\).*use a number of processes that divides 8",
    ):
        batch_split(cfg, 3)
    cfg.micro_batch_rows = 3
    with pytest.raises(
        ConfigError, match=r"set train.micro_batch_rows to a divisor of 4 \(e.g. 2\)"
    ):
        batch_split(cfg, 2)
    cfg.micro_batch_rows, cfg.grad_accum = 2, 3
    with pytest.raises(ConfigError, match="train.grad_accum=3 disagrees"):
        batch_split(cfg, 2)
    legacy = tiny_run(
        "unused",
        "/tmp",
        "x",
        "train.global_batch_rows=null",
        "train.grad_accum=2",
        "train.micro_batch_rows=2",
    ).train
    assert batch_split(legacy, 2) == (2, 8)


def test_elastic_plan_restarts_at_the_earliest_worker_batch():
    # two ranks, B = 4 records per worker batch: rank 0 in worker batch 5 (inside its item 2),
    # rank 1 in worker batch 3 at the start of item 1 (nothing of it packed yet)
    ranks = [
        PackPosition(batch=30, epoch=1, record_batch=5, item=2, piece=1),
        PackPosition(batch=30, epoch=1, record_batch=3, item=1),
    ]
    consumed = [
        [[1, 3, 0, "a"], [1, 4, 3, "b"], [1, 5, 1, "c"], [1, 5, 2, "d"], [1, 5, 3, "e"]],
        [[1, 3, 0, "f"], [1, 3, 1, "g"]],
    ]
    plan = plan_elastic_resume(ranks, consumed, [ElasticRegion(0, 0, None, ["old"])], 4)
    assert plan.start == PackPosition(batch=30, epoch=1, sample_base=3 * 4 * 2)
    # a, b, c trained; d in flight; e only fetched; f trained; g not started
    assert plan.skipped == 5 and plan.in_flight == 1
    assert [(r.epoch, r.start, r.end, sorted(r.keys)) for r in plan.regions] == [
        (1, 24, 6 * 4 * 2, ["a", "b", "c", "d", "f"])
    ]
    # ranks across an epoch boundary: the old epoch's region runs to its end
    ranks = [
        PackPosition(batch=9, epoch=0, record_batch=7, item=0),
        PackPosition(batch=9, epoch=1, record_batch=0, item=1, offset=3),
    ]
    plan = plan_elastic_resume(
        ranks, [[[0, 7, 0, "x"]], [[0, 8, 0, "y"], [1, 0, 0, "z"], [1, 0, 1, "w"]]], [], 2
    )
    assert [(r.epoch, r.start, r.end, sorted(r.keys)) for r in plan.regions] == [
        (0, 28, None, ["y"]),
        (1, 0, 4, ["w", "z"]),
    ]
    assert plan.in_flight == 1 and plan.start.sample_base == 28
