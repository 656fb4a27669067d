"""Issue 23 §1, training: a checkpoint that cannot be written (full disk) stops the run as SIGTERM
does (exit 143) with one line naming the file and the cause; no half-written file is left, the
``latest`` link stays on the last good checkpoint and the same command resumes from it once
there is space. With two processes the failure on rank 0 does not leave rank 1 waiting.

The run folder is on a real small file system (a tmpfs: tests/disk.py), filled to within
64 KiB: the small logs still fit, a checkpoint (about 0.4 MB) does not."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from composer.core import Callback
from omegaconf import OmegaConf

from stoicheia.config import to_dict
from stoicheia.train import builder
from stoicheia.train.exit_status import ExitCode
from stoicheia.train.run import run

sys.path.insert(0, str(Path(__file__).parent))
from disk import fill, leftovers, small_disk  # noqa: E402
from tiny import tiny_run  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
COMPOSER = str(REPO / ".venv" / "bin" / "composer")
FULL = "No space left on device"
LEAVE = 64 * 1024


def _cfg(shards, folder: Path, name: str):
    return tiny_run(
        shards,
        folder,
        name,
        "train.nominal_steps=24",
        "train.max_steps=24",
        "train.save_interval=10",
    )


class _FillAt(Callback):
    """Fills the run folder's file system (all but 64 KiB) at the end of batch ``at``."""

    def __init__(self, folder: Path, at: int) -> None:
        self.folder, self.at = folder, at

    def batch_end(self, state, logger) -> None:
        if int(state.timestamp.batch) == self.at:
            fill(self.folder, leave=LEAVE)


def _only_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("train.py:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err, err
    return lines[0]


def test_a_full_disk_stops_the_run_like_sigterm_and_it_resumes(
    small_shards, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(REPO)
    with small_disk(tmp_path, "16m") as mnt:
        folder = mnt / "full"
        build = builder.build_trainer

        def with_filler(cfg):
            built = build(cfg)
            built.trainer.state.callbacks.append(_FillAt(mnt, 12))
            return built

        monkeypatch.setattr(builder, "build_trainer", with_filler)
        assert run(_cfg(small_shards, mnt, "full")) == ExitCode.PREEMPTED == 143
        line = _only_line(capsys.readouterr().err)
        # the first save after batch 12: pre_anneal.pt (the anneal starts at 19) or batch 20's
        m = re.fullmatch(
            rf"train\.py: cannot save checkpoint {re.escape(str(folder))}/(\S+) \({FULL}\); "
            r"the run stopped at batch (\d+): free some space or write elsewhere, "
            r"then run the same command to resume from "
            rf"{re.escape(str(folder / 'ep0-ba10-rank0.pt'))}",
            line,
        )
        assert m and m[1] in ("pre_anneal.pt", "best.pt", "ep0-ba20-rank0.pt"), line
        assert 12 < int(m[2]) <= 20, line
        assert os.readlink(folder / "latest-rank0.pt") == "ep0-ba10-rank0.pt"
        assert leftovers(mnt) == [] and not (folder / m[1]).exists()
        assert sorted(f.name for f in folder.glob("ep*.pt")) == ["ep0-ba10-rank0.pt"]
        assert not (folder / "complete.json").exists()

        (mnt / ".filler").unlink()  # space again: the same command resumes at batch 10
        monkeypatch.setattr(builder, "build_trainer", build)
        assert run(_cfg(small_shards, mnt, "full")) == ExitCode.OK
        assert "resuming run 'full' from its checkpoint at batch 10" in capsys.readouterr().out
        assert (folder / "complete.json").exists() and leftovers(mnt) == []


@pytest.mark.slow
def test_two_processes_stop_together_when_rank_0_cannot_save(small_shards, tmp_path):
    """Rank 0 fails writing the first checkpoint; rank 1 waits inside Composer's save at a
    barrier. Both must end at once with 143 (well before the 300 s distributed timeout), the
    line printed once, nothing half-written."""
    with small_disk(tmp_path, "16m") as mnt:
        yaml = tmp_path / "two.yaml"
        OmegaConf.save(OmegaConf.create(to_dict(_cfg(small_shards, mnt, "two"))), yaml)
        fill(mnt, leave=LEAVE)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
        }
        env["PYTHONPATH"] = str(REPO)
        proc = subprocess.run(
            [COMPOSER, "-n", "2", "--master_port", str(port), "recipes/train.py", str(yaml)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,  # a rank left at the barrier would fail after 300 s with a traceback
        )
        out = proc.stdout + proc.stderr
        assert proc.returncode == ExitCode.PREEMPTED, out[-4000:]
        lines = [line for line in out.splitlines() if "cannot save checkpoint" in line]
        assert len(lines) == 1 and FULL in lines[0], out[-4000:]
        assert (
            "best.pt (No space left on device); the run stopped at batch 10: no checkpoint was "
            "saved yet: free some space or write elsewhere, "
            "then run the same command to start again"
        ) in lines[0], lines[0]
        assert "Traceback" not in out, out[-4000:]
        folder = mnt / "two"
        assert leftovers(mnt) == [] and not list(folder.glob("*.pt")), sorted(os.listdir(folder))


def test_a_log_line_the_disk_refuses_is_counted_not_fatal(tmp_path, caplog):
    """metrics.jsonl and evals.jsonl lines that a full disk refuses are dropped and counted
    (one warning per file); the run goes on to its next checkpoint save, which stops it."""
    from stoicheia.train import run_files
    from stoicheia.train.loggers.jsonl_logger import JSONLLogger

    run_files.DROPPED_LOG_LINES.clear()
    with small_disk(tmp_path, "1m") as mnt:
        fill(mnt)
        metrics = JSONLLogger(mnt / "metrics.jsonl")
        for step in range(1, 5):
            metrics.log_metrics({"loss/total": 1.0}, step=step)
        metrics.close(None, None)
        with pytest.raises(run_files.WriteError):  # the plain helper raises; its callers count
            run_files.append_jsonl(mnt / "evals.jsonl", [{"step": 1}])
        assert run_files.DROPPED_LOG_LINES == {str(mnt / "metrics.jsonl"): 4}
        warned = [r for r in caplog.records if "metrics.jsonl" in r.getMessage()]
        assert len(warned) == 1 and FULL in warned[0].getMessage()
        (mnt / ".filler").unlink()
        metrics.log_metrics({"loss/total": 0.5}, step=5)
        metrics.close(None, None)
        assert run_files.read_jsonl(mnt / "metrics.jsonl") == [
            {"step": 5, "time": pytest.approx(0, abs=1e10), "loss/total": 0.5}
        ]
    run_files.DROPPED_LOG_LINES.clear()
