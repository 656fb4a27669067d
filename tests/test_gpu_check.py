"""benchmarks/gpu_check.py end to end on a CPU (``--dry-run``): every stage runs in its child
process under its time limit and writes its figures; the trained model is exported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_gpu_check_dry_run_end_to_end(small_shards, tmp_path) -> None:
    out = tmp_path / "check"
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "gpu_check.py"),
            str(out),
            "--dry-run",
            "--shards",
            str(small_shards),
            "--budget",
            "900",
            "--steps",
            "4",
            "--train-seconds",
            "20",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    figures = json.loads((out / "figures.json").read_text())
    statuses = {k: v.get("status") for k, v in figures.items()}
    bad = {k: v for k, v in figures.items() if v.get("status") != "ok"}
    assert proc.returncode == 0, (statuses, bad, proc.stderr[-2000:])
    assert (out / "figures.txt").read_text() in proc.stdout
    assert [figures[s]["status"] for s in ("env", "flex_vs_sdpa", "train_path", "train")] == [
        "ok"
    ] * 4
    flex = figures["flex_vs_sdpa"]
    assert flex["compile"] == "skipped (CPU)" and flex["lengths"] == [256, 200]
    assert flex["T200_uncompiled"]["max_logit_diff"] < 1e-4
    path = figures["train_path"]
    assert path["steps"] == 4 and path["compile_s"] == "skipped (CPU)"
    assert path["train_dynamo"]["graph_breaks"] == 0
    assert path["compiled_flex_cache"] != "RAW flex_attention"
    assert path["letters_per_s"] > 0 and "2_rows_composer_eval_s" in path["eval"]
    train = figures["train"]
    assert train["stopped_by_sigterm"] and train["exit_status"] == 143
    assert 0 < train["export_bytes"] < 16 * 2**20
    assert (out / "export" / "model.safetensors").exists()


def test_a_stage_that_overruns_is_reported_and_skipped(tmp_path) -> None:
    """run_stage kills a child past its limit and reports it; the script goes on."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import gpu_check

    args = gpu_check.argparse.Namespace(out=tmp_path, shards=tmp_path, steps=1, dry_run=True)
    fig = gpu_check.run_stage("env", args, limit=0.2)  # importing torch alone takes longer
    assert fig["status"] == "overrun" and fig["limit_s"] == 0.2
    assert not (tmp_path / "stage-env.json").exists()
