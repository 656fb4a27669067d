"""scripts/demo.sh stopped by Ctrl-C: the trainer's ``[preempt]`` line reaches the run's
console.log and the script exits 130, as docs/runs.md says; ``stoicheia status`` then says the
run was stopped by Ctrl-C and how to resume.

The script runs in a copy of the checkout's layout in a temporary folder (its own
``scripts/demo.sh``, the checkout's ``.venv`` and ``recipes``, the small shards as
``data/shards``, a tiny ``yamls/demo.yaml``), so the checkout's ``checkpoints/`` is not
touched. The signal goes to the script's process group once two batches are logged, as a
terminal's Ctrl-C does; no timed sleep decides anything."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from stoicheia.config import to_dict
from stoicheia.train import run_files

sys.path.insert(0, str(Path(__file__).parent))
from tiny import tiny_run  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _demo_tree(root: Path, shards: Path) -> Path:
    """A checkout layout in ``root`` for scripts/demo.sh; returns the run folder it trains in."""
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "demo.sh", root / "scripts" / "demo.sh")
    (root / "scripts" / "setup.sh").write_text("echo 'setup: ready (test)'\n")
    (root / ".venv").symlink_to(REPO / ".venv")
    (root / "recipes").symlink_to(REPO / "recipes")
    (root / "data").mkdir()
    (root / "data" / "shards").symlink_to(shards)
    cfg = tiny_run(
        shards,
        "checkpoints",
        "stoicheia-demo",
        "train.nominal_steps=400",
        "train.max_steps=400",
        "train.save_interval=1000",
        "data.num_workers=1",
    )
    (root / "yamls").mkdir()
    OmegaConf.save(OmegaConf.create(to_dict(cfg)), root / "yamls" / "demo.yaml")
    return root / "checkpoints" / "stoicheia-demo"


def _steps(folder: Path) -> int:
    rows = run_files.read_jsonl(folder / "metrics.jsonl") if folder.is_dir() else []
    return max((int(r["step"]) for r in rows if "loss/total" in r), default=0)


@pytest.mark.slow
def test_ctrl_c_in_demo_script_logs_the_preempt_line_and_exits_130(small_shards, tmp_path):
    folder = _demo_tree(tmp_path / "checkout", small_shards)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.Popen(
        ["bash", str(tmp_path / "checkout" / "scripts" / "demo.sh")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # the script leads its group, as a terminal's foreground job
    )
    try:
        deadline = time.monotonic() + 300
        while _steps(folder) < 2:
            assert proc.poll() is None, f"the demo ended ({proc.returncode}) before two batches"
            assert time.monotonic() < deadline, "no two batches within 300 s"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    console = (folder / "console.log").read_text(encoding="utf-8")
    assert proc.returncode == 130, out[-3000:]
    assert "[preempt]" in console and "exiting with status 130" in console, console[-3000:]
    assert "Traceback" not in console, console[-3000:]
    status = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-m", "stoicheia", "status", str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "state: stopped by Ctrl-C (SIGINT) at step " in status.stdout, status.stdout
    assert "run the same training command again to resume" in status.stdout, status.stdout
