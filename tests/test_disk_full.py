"""Issue 23 §1: nothing half-written, one line on a full disk or past a file size limit.

Every command that writes is run against a real small file system (a tmpfs, mounted as root:
tests/disk.py) filled to the brim, or in a subprocess under ``RLIMIT_FSIZE`` (the CLI ignores
``SIGXFSZ``, so the write fails with ``EFBIG``). Each must answer with one line naming the
path and the cause, exit 2, and leave neither the output nor a ``.partial`` file behind (an
older output stays as it was)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stoicheia.cli import main
from stoicheia.publish import WriteError, atomic_path, atomic_write, publishing, write_failure

sys.path.insert(0, str(Path(__file__).parent))
from disk import fill, leftovers, small_disk  # noqa: E402
from tiny import train_tiny  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PYTHON = str(REPO / ".venv" / "bin" / "python")
FULL = "No space left on device"
TOO_LARGE = "File too large"


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MiB tmpfs, filled: nothing more fits."""
    with small_disk(tmp_path, "1m") as mnt:
        fill(mnt)
        yield mnt


def _one_error_line(err: str, command: str, path: Path, cause: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"stoicheia {command}: error: cannot write "), err
    assert str(path) in lines[0] and cause in lines[0], err
    assert "Traceback" not in err


def _limited(size: int):
    """``preexec_fn`` of a subprocess whose files may not grow past ``size`` bytes; SIGXFSZ
    keeps its default action (kill): the command itself must ignore it."""

    def setup() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return setup


def _cli(args: list[str], size: int) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [PYTHON, "-m", "stoicheia", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_limited(size),
    )


# --- the helper ------------------------------------------------------------------------------


def test_atomic_write_on_a_full_disk_keeps_the_old_file_and_leaves_no_partial(tmp_path):
    with small_disk(tmp_path, "1m") as mnt:
        target = mnt / "stats.json"
        atomic_write(target, '{"old": true}\n')
        fill(mnt)
        with pytest.raises(WriteError) as info:
            atomic_write(target, "x" * 300_000)
        assert (
            str(info.value) == f"cannot write {target} ({FULL}); free some space or write elsewhere"
        )
        assert info.value.filename == str(target) and info.value.strerror == FULL
        assert target.read_text() == '{"old": true}\n'
        assert leftovers(mnt) == []


def test_torch_and_safetensors_failures_are_told_by_their_cause(tmp_path):
    """torch raises ``RuntimeError("... unexpected pos ...")`` on a full disk (the OSError is
    only its context, or nothing when torch writes the path itself); safetensors raises its own
    error with ``os error 28`` in the text: each becomes the same one line."""
    import torch
    from safetensors.torch import save_file

    tensors = {"w": torch.zeros(300_000)}

    def to_file_object(path: Path) -> None:
        with open(path, "wb") as fh:  # as Composer's save_checkpoint writes
            torch.save(tensors, fh)

    with small_disk(tmp_path, "1m") as mnt:
        fill(mnt)
        for what, write in (
            ("torch, file object", to_file_object),
            ("torch, path", lambda p: torch.save(tensors, str(p))),
            ("safetensors", lambda p: save_file(tensors, str(p))),
        ):
            with pytest.raises(WriteError, match=FULL) as info:
                with atomic_path(mnt / "w.bin") as tmp:
                    write(tmp)
            assert info.value.path == mnt / "w.bin", what
            assert leftovers(mnt) == [] and not (mnt / "w.bin").exists(), what


def test_a_failure_that_is_not_the_disk_is_not_disguised(tmp_path):
    assert write_failure(ValueError("bad value"), tmp_path / "x") is None
    assert write_failure(FileNotFoundError(2, "No such file or directory"), tmp_path / "x") is None
    with pytest.raises(ZeroDivisionError):
        with atomic_path(tmp_path / "y") as tmp:
            tmp.write_text("half")
            raise ZeroDivisionError
    assert not (tmp_path / "y").exists() and leftovers(tmp_path) == []


def test_a_folder_is_published_whole_or_not_at_all(tmp_path):
    with small_disk(tmp_path, "1m") as mnt:
        out = mnt / "out"
        with publishing(out) as tmp:
            (tmp / "a.txt").write_text("first")
        fill(mnt)
        with pytest.raises(WriteError, match=FULL):
            with publishing(out) as tmp:
                (tmp / "a.txt").write_text("second" * 100_000)
        assert (out / "a.txt").read_text() == "first"
        assert leftovers(mnt) == [] and sorted(p.name for p in mnt.iterdir()) == [".filler", "out"]


def test_past_the_file_size_limit_the_write_fails_with_efbig(tmp_path):
    code = (
        "import sys; "
        "from stoicheia.publish import WriteError, atomic_write, ignore_file_size_signal\n"
        "ignore_file_size_signal()\n"
        "try:\n    atomic_write(sys.argv[1], 'x' * 200_000)\n"
        "except WriteError as err:\n    print(err)\n"
    )
    target = tmp_path / "big.txt"
    proc = subprocess.run(
        [PYTHON, "-c", code, str(target)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited(100_000),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        f"cannot write {target} ({TOO_LARGE}); "
        "raise the file size limit (ulimit -f) or write elsewhere"
    )
    assert not target.exists() and leftovers(tmp_path) == []


# --- the commands ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(small_shards, tmp_path_factory):
    """A 2-layer model trained for 4 steps (one evaluation: best.pt, metrics, evals)."""
    return train_tiny(
        small_shards,
        tmp_path_factory.mktemp("runs"),
        "disk",
        "train.nominal_steps=4",
        "train.max_steps=4",
        "train.save_interval=4",
        "train.log_every=1",
    )


def test_export_on_a_full_disk(trained, full_disk, capsys):
    out = full_disk / "export"
    assert main(["export", str(trained / "best.pt"), str(out)]) == 2
    _one_error_line(capsys.readouterr().err, "export", out, FULL)
    assert not out.exists() and leftovers(full_disk) == []


def test_export_past_the_file_size_limit(trained, tmp_path):
    out = tmp_path / "export"
    proc = _cli(["export", str(trained / "best.pt"), str(out)], 64_000)  # the weights are larger
    assert proc.returncode == 2, proc.stdout + proc.stderr
    _one_error_line(proc.stderr, "export", out, TOO_LARGE)
    assert not out.exists() and leftovers(tmp_path) == []


def test_convert_on_a_full_disk_keeps_the_old_shards(corpus_root, tmp_path, capsys):
    hesiod = corpus_root / "perseus" / "Hesiod"
    with small_disk(tmp_path, "2m") as mnt:
        out = mnt / "shards"
        args = ["convert", f"gold={hesiod}", "--out", str(out), "--workers", "1"]
        assert main([*args, "--val-fraction", "0.1"]) == 0
        before = json.loads((out / "stats.json").read_text())
        fill(mnt)
        capsys.readouterr()
        assert main([*args, "--val-fraction", "0.2", "--overwrite"]) == 2
        _one_error_line(capsys.readouterr().err, "convert", out, FULL)
        assert json.loads((out / "stats.json").read_text()) == before  # the old output, whole
        assert leftovers(mnt) == []


def test_convert_past_the_file_size_limit(corpus_root, tmp_path):
    out = tmp_path / "shards"
    proc = _cli(
        [
            "convert",
            f"gold={corpus_root / 'perseus' / 'Hesiod'}",
            "--out",
            str(out),
            "--workers",
            "1",
        ],
        20_000,  # a shard of Hesiod is larger
    )
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr
    _one_error_line(proc.stderr, "convert", out, TOO_LARGE)
    assert not out.exists() and leftovers(tmp_path) == []


def test_report_on_a_full_disk(trained, full_disk, capsys):
    out = full_disk / "report"
    out.mkdir()
    assert main(["report", str(trained), "--out", str(out)]) == 2
    _one_error_line(capsys.readouterr().err, "report", out / "report.png", FULL)
    assert list(out.iterdir()) == []


def test_evaluate_on_a_full_disk(trained, small_shards, full_disk, capsys):
    out = full_disk / "eval.json"
    args = ["evaluate", str(trained / "best.pt"), "--shards", str(small_shards), "--out", str(out)]
    assert main([*args, "--max-records", "4", "--ngram-order", "0"]) == 2
    err = capsys.readouterr().err
    _one_error_line(err, "evaluate", out, FULL)
    assert not out.exists() and leftovers(full_disk) == []


def test_benchmark_outputs_and_ngram_on_a_full_disk(full_disk):
    """What ``stoicheia benchmark`` writes (its tables, the plot, ``--save-ngram``'s file) goes
    through the same helper; the command line turns the WriteError into its one line."""
    from stoicheia.inference.benchmark.report import write_outputs
    from stoicheia.inference.ngram import LetterNgram, save_ngram
    from stoicheia.text.alphabet import NUM_LETTERS

    result = {"protocols": {}, "notes": ["x" * 400_000]}
    with pytest.raises(WriteError, match=FULL) as info:
        write_outputs(result, full_disk / "bench")
    assert info.value.path == full_disk / "bench" / "benchmark.json"
    rng = np.random.default_rng(0)
    ngram = LetterNgram(order=4).fit([rng.integers(0, NUM_LETTERS, 200_000, dtype=np.uint8)])
    with pytest.raises(WriteError, match=FULL):
        save_ngram(ngram, full_disk / "ngram.npz", weight=0.1)
    assert leftovers(full_disk) == [] and not (full_disk / "ngram.npz").exists()


def test_restore_epidoc_on_a_full_disk(trained, corpus_root, full_disk, capsys):
    src = sorted((corpus_root / "isicily").rglob("ISic0000*.xml"))[:1]
    assert src, "no I.Sicily file in the corpus"
    out = full_disk / "restored"
    code = main(["restore", str(trained / "best.pt"), "--epidoc", str(src[0]), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and FULL in lines[0] and "Traceback" not in err, err
    assert leftovers(full_disk) == []
