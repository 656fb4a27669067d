"""The run as one function (``stoicheia.train.run``): exit statuses, configuration errors that
answer without Composer or torch, one owner per run-folder file, a checkpoint of another model
shape refused when it is loaded, plugins and loggers by name, clipping without the guard."""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from stoicheia.checkpoint_files import model_shapes, shape_mismatches
from stoicheia.config import to_dict
from stoicheia.train import registry
from stoicheia.train.exit_status import ExitCode

sys.path.insert(0, str(Path(__file__).parent))
from tiny import tiny_run  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PYTHON = str(REPO / ".venv" / "bin" / "python")


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    }
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def _yaml(shards, folder: Path, name: str, *extra: str) -> Path:
    path = folder / f"{name}.yaml"
    OmegaConf.save(OmegaConf.create(to_dict(tiny_run(shards, folder, name, *extra))), path)
    return path


def test_exit_codes_are_defined_once():
    assert [int(c) for c in ExitCode] == [0, 2, 3, 4, 130, 143]
    assert (
        ExitCode.for_signal(2) is ExitCode.INTERRUPTED
        and ExitCode.for_signal(15) is ExitCode.PREEMPTED
    )
    from stoicheia.train.callbacks.preemption import PREEMPTED_EXIT

    assert PREEMPTED_EXIT == ExitCode.PREEMPTED == 143


PROBE = """
import sys
from stoicheia.train.run import main
rc = main(sys.argv[1:])
heavy = sorted(m for m in ("torch", "composer", "streaming") if m in sys.modules)
print("RC", int(rc), "HEAVY", ",".join(heavy) or "-")
"""


@pytest.mark.parametrize(
    ("overrides", "world", "needle"),
    [
        (["train.sav_interval=3"], "1", "did you mean 'train.save_interval'"),
        (["callbacks.auto_anneal.stall_windw=3"], "1", "did you mean 'stall_window'"),
        (["algorithms.gradient_gard={}"], "1", "unknown algorithm 'gradient_gard'"),
        (
            ["train.global_batch_rows=6", "train.grad_accum=null", "train.micro_batch_rows=2"],
            "2",
            "cannot be split over 2 process(es)",
        ),
        (
            ["data.shard_root=/nonexistent-shards"],
            "1",
            "index.json not found: tier 'gold' has no train shards",
        ),
    ],
)
def test_configuration_errors_answer_without_composer_or_torch_and_make_no_folder(
    small_shards, tmp_path, overrides, world, needle
):
    yaml = _yaml(small_shards, tmp_path, "cfg")
    proc = subprocess.run(
        [PYTHON, "-c", PROBE, str(yaml), *overrides],
        cwd=REPO,
        env=_env(WORLD_SIZE=world, RANK="0"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "RC 2 HEAVY -" in proc.stdout, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("train.py:")]
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert not (tmp_path / "cfg").exists(), "a configuration error leaves no run folder"


def test_status_and_help_do_not_import_torch(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "metrics.jsonl").write_text(
        '{"step": 3, "time": 0, "lr-AdamW/group0": 0.001, "loss/total": 2.0}\n'
    )
    code = (
        "import sys; from stoicheia.cli import main; rc = main(['status', sys.argv[1]]); "
        "assert rc == 0; "
        "assert 'torch' not in sys.modules and 'composer' not in sys.modules, 'heavy import'; "
        "print('OK')"
    )
    proc = subprocess.run(
        [PYTHON, "-c", code, str(folder)],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stdout + proc.stderr
    proc = subprocess.run(
        [PYTHON, "recipes/train.py", "--help"],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "ExitCode" in proc.stdout


def test_plugin_signatures_read_from_source_match_the_classes():
    for kind, table in (("callbacks", registry.CALLBACKS), ("algorithms", registry.ALGORITHMS)):
        for name in table:
            real = [
                p
                for p in inspect.signature(
                    registry.plugin_class(kind, name).__init__
                ).parameters.values()
                if p.name != "self"
            ]
            read = registry.signature(kind, name)
            assert [(p.name, p.kind) for p in read] == [(p.name, p.kind) for p in real], name
            for r, p in zip(read, real, strict=True):
                if r.default is not registry.UNKNOWN:
                    assert r.default == p.default, (name, p.name)


def test_every_marker_file_has_one_writer():
    """anneal.json, best.json, complete.json, diverged.json are written only by their
    functions in run_files (no other module passes their names to write_json)."""
    names = {"ANNEAL", "BEST", "COMPLETE", "DIVERGED"}
    offenders = []
    for path in (REPO / "stoicheia").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", None)) == "write_json"
            ):
                args = [a for a in node.args[1:2] if isinstance(a, (ast.Attribute, ast.Name))]
                used = {getattr(a, "attr", getattr(a, "id", None)) for a in args}
                if used & names and path.name != "run_files.py":
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not offenders, offenders
    from stoicheia.train import run_files

    for fn in (
        run_files.write_anneal,
        run_files.write_best,
        run_files.write_complete,
        run_files.write_diverged,
    ):
        assert fn.__doc__


def test_model_shapes_are_read_without_loading(tmp_path):
    from stoicheia.model.composer_model import StoicheiaModel
    from stoicheia.model.config import EncoderConfig

    small = StoicheiaModel(EncoderConfig(d_model=32, n_heads=2, n_layers=2, char_window=16))
    wide = StoicheiaModel(EncoderConfig(d_model=64, n_heads=2, n_layers=2, char_window=16))
    path = tmp_path / "ckpt.pt"
    torch.save(
        {
            "state": {
                "model": {f"module.{k}": v for k, v in small.state_dict().items()},
                "other": [1, 2],
            }
        },
        path,
    )
    saved = model_shapes(path)
    want = {k: tuple(v.shape) for k, v in small.state_dict().items()}
    assert saved == want
    differs = shape_mismatches(saved, {k: tuple(v.shape) for k, v in wide.state_dict().items()})
    assert differs and all("in the checkpoint" in d for d in differs)
    assert any("[" in d and "32" in d and "64" in d for d in differs)
    assert shape_mismatches(saved, want) == []
    (tmp_path / "junk.pt").write_bytes(b"not a zip")
    assert model_shapes(tmp_path / "junk.pt") is None


def test_a_checkpoint_of_another_shape_is_refused_when_loaded(
    small_shards, tmp_path, capsys, monkeypatch
):
    from stoicheia.model.composer_model import StoicheiaModel
    from stoicheia.model.config import EncoderConfig
    from stoicheia.train.run import main

    monkeypatch.chdir(REPO)
    other = StoicheiaModel(EncoderConfig(d_model=64, n_heads=2, n_layers=2, char_window=16))
    ckpt = tmp_path / "other.pt"
    torch.save({"state": {"model": other.state_dict()}}, ckpt)
    yaml = _yaml(small_shards, tmp_path, "shape", f"train.load_path={ckpt}")
    assert main([str(yaml)]) == ExitCode.CONFIG
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "made by a model of another shape" in err[0] and str(ckpt) in err[0], (
        err
    )
    assert "[64" in err[0] and "[32" in err[0] and "train.load_path" in err[0]


def test_loggers_are_built_by_name_and_clipping_survives_without_the_guard(
    small_shards, tmp_path, monkeypatch
):
    from composer.algorithms import GradientClipping

    from stoicheia.train.builder import build_trainer
    from stoicheia.train.loggers.jsonl_logger import JSONLLogger

    monkeypatch.chdir(REPO)
    cfg = tiny_run(
        small_shards, tmp_path, "noguard", "algorithms.gradient_guard=false", "train.clip_norm=0.5"
    )
    assert registry.logger_names(cfg, remote=False) == ["jsonl"]
    assert registry.logger_names(cfg, remote=True) == ["jsonl", "store_uploader"]
    built = build_trainer(cfg)
    try:
        clips = [a for a in built.trainer.state.algorithms if isinstance(a, GradientClipping)]
        assert (
            len(clips) == 1
            and clips[0].clipping_threshold == 0.5
            and clips[0].clipping_type == "norm"
        )
        assert any(isinstance(d, JSONLLogger) for d in built.trainer.logger.destinations)
    finally:
        built.trainer.close()


def test_evaluate_reports_the_run_sets_as_the_console(small_shards, tmp_path, monkeypatch):
    """The run's own evaluation sets, evaluated from a checkpoint, give the figures the
    training console logged at that step (same records, noise and packing)."""
    from stoicheia.data.corpus_stats import run_unigram_bits
    from stoicheia.inference.loading import load_model
    from stoicheia.inference.run_sets import run_eval_sets
    from stoicheia.train.builder import build_trainer
    from stoicheia.train.run_files import read_history

    monkeypatch.chdir(REPO)
    built = build_trainer(
        tiny_run(
            small_shards,
            tmp_path,
            "sets",
            "train.nominal_steps=4",
            "train.max_steps=4",
            "train.save_interval=2",
        )
    )
    built.trainer.fit()
    built.trainer.close()
    folder = tmp_path / "sets"
    model = load_model(folder / "ep0-ba4-rank0.pt", device="cpu")
    got = run_eval_sets(model, small_shards)
    logged = {r["set"]: r["metrics"] for r in read_history(folder) if r["step"] == 4}
    assert got.keys() == logged.keys() == {"holdout"}
    for name, value in logged["holdout"].items():
        assert got["holdout"][name] == pytest.approx(value, rel=1e-5, abs=1e-6), name
    bits = run_unigram_bits(model.config, small_shards)
    assert bits is not None and 3.5 < bits < 4.5
    rows = [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines()]
    steps = [r["step"] for r in rows]
    assert steps == sorted(set(steps)) == [1, 2, 3, 4], "one line per step"
    assert all("loss/total" in r and "time/batch" in r for r in rows)


def test_the_packing_loop_state_is_an_object_with_state_dict():
    from stoicheia.data.packing import EPOCH_END, Cursor, PieceQueue

    pieces = iter(
        [("abcd", (0, 0, 0, 0), 0), ("efghij", (0, 0, 1, 0), 0), ("kl", (0, 0, 1, 1), 3), EPOCH_END]
    )
    queue = PieceQueue(pieces)
    assert queue.peek()[0] == "abcd" and queue.state_dict() == {"positions": {}, "ahead": 1}
    numbered = queue.numbered()
    assert [next(numbered), next(numbered)] == ["abcd", "efghij"]
    assert queue.pending(Cursor(1, 2)) and not queue.pending(None)
    # a batch that ended 2 slots into piece 1: resume there; piece 0 is still kept (k >= piece - 1)
    assert queue.resume_point(Cursor(1, 2)) == ((0, 0, 1, 0), 2)
    assert next(numbered) == "kl"
    # a batch ending past the last piece fetched resumes at that piece's end (offset 3 + 2 slots)
    assert queue.resume_point(Cursor(3, 0)) == ((0, 0, 1, 1), 5)
    assert sorted(queue.state_dict()["positions"]) == [2]
    assert list(numbered) == [] and queue.peek() is EPOCH_END
    queue.next_epoch()
    assert queue.state_dict() == {"positions": {}, "ahead": 0}
