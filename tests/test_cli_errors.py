"""Bad input to the ``stoicheia`` commands: one line on stderr naming the argument or file and
the fix, exit status 2, no traceback, nothing lost. These cases fail before a model is needed
(the ones that need a trained model are in test_inference.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

GAP = "καὶ [...] τοῦ"


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """``stoicheia ARGV`` in this process: (exit status, stdout, stderr). An exception other
    than SystemExit (a traceback for a user) propagates and fails the test."""
    from stoicheia.cli import main

    try:
        rc = main(argv)
    except SystemExit as stop:
        rc = stop.code
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def one_error(argv: list[str], capsys, *needles: str) -> str:
    """Run ``argv``; assert exit 2 and one stderr line ``stoicheia CMD: error: ...`` holding
    every needle; returns that line."""
    rc, _, err = run_cli(argv, capsys)
    lines = [x for x in err.splitlines() if x.strip()]
    assert rc == 2, (argv, rc, err)
    assert len(lines) == 1, (argv, err)
    assert lines[0].startswith(f"stoicheia {argv[0]}: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# --- finding 2: option values, refused where argparse reads them, before any file is read ----

MISSING = "/nonexistent/checkpoint.pt"  # never read: the option is refused first


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (
            ["restore", MISSING, "--about-margin", "nan", GAP],
            ["argument --about-margin", "nan is not a finite number", "[0, 1]"],
        ),
        (
            ["restore", MISSING, "--about-margin", "-3", GAP],
            ["argument --about-margin", "-3 is out of range", "[0, 1]"],
        ),
        (
            ["restore", MISSING, "--about-margin", "inf", GAP],
            ["argument --about-margin", "not a finite number"],
        ),
        (
            ["restore", MISSING, "--window", "-4", GAP],
            [
                "argument --window",
                "-4 is out of range",
                "at least 0",
                "0: one window, a longer text refused",
            ],
        ),
        (
            ["restore", MISSING, "--window", "x", GAP],
            ["argument --window", "'x' is not a whole number"],
        ),
        (
            ["restore", MISSING, "--unknown-width", "0", GAP],
            ["argument --unknown-width", "from 1 to 10,000"],
        ),
        (
            ["restore", MISSING, "--unknown-width", "3000000000", GAP],
            ["argument --unknown-width", "from 1 to 10,000"],
        ),
        (["restore", MISSING, "--top-k", "0", GAP], ["argument --top-k", "from 1 to 100"]),
        (["restore", MISSING, "--beam", "-1", GAP], ["argument --beam", "from 1 to 256"]),
        (
            ["restore", MISSING, "--top-k", "5", "--beam", "2", GAP],
            ["--beam 2 is smaller than --top-k 5", "--beam 5 or more"],
        ),
        (
            ["evaluate", MISSING, "--shards", "x", "--word-rate", "-1"],
            ["argument --word-rate", "(0, 1]"],
        ),
        (
            ["evaluate", MISSING, "--shards", "x", "--word-rate", "0"],
            ["argument --word-rate", "(0, 1]"],
        ),
        (
            ["evaluate", MISSING, "--shards", "x", "--t", "1.5"],
            ["argument --t", "1.5 is out of range", "(0, 1]"],
        ),
        (
            ["evaluate", MISSING, "--shards", "x", "--t", "nan"],
            ["argument --t", "not a finite number"],
        ),
        (
            ["evaluate", MISSING, "--shards", "x", "--max-records", "0"],
            ["argument --max-records", "at least 1"],
        ),
        (
            ["evaluate", MISSING, "--shards", "x", "--ngram-order", "0", "--max-records", "-5"],
            ["argument --max-records"],
        ),
        (
            ["evaluate", MISSING, "--shards", "x", "--ngram-order", "-2"],
            ["argument --ngram-order", "from 0 to 6", "0: no n-gram"],
        ),
        (
            ["evaluate", MISSING, "--shards", "x", "--ngram-order", "7"],
            ["argument --ngram-order", "from 0 to 6"],
        ),
        (
            ["evaluate", MISSING, "--shards", "x", "--seq-len", "8"],
            ["argument --seq-len", "from 32 to 65,536"],
        ),
        (["evaluate", MISSING, "--shards", "x", "--rows", "0"], ["argument --rows", "at least 1"]),
        (["evaluate", MISSING, "--shards", "x", "--seed", "-1"], ["argument --seed"]),
        (
            ["convert", "--out", "o", "gold=x", "--val-fraction", "1"],
            ["argument --val-fraction", "[0, 1)"],
        ),
        (
            ["convert", "--out", "o", "gold=x", "--min-greek", "nan"],
            ["argument --min-greek", "not a finite number"],
        ),
        (
            ["convert", "--out", "o", "gold=x", "--workers", "0"],
            ["argument --workers", "at least 1"],
        ),
        (["restore", MISSING], ["the following arguments are required: TEXT"]),
    ],
)
def test_option_out_of_range_is_one_line(argv, needles, capsys):
    one_error(argv, capsys, *needles)


def test_restore_library_refuses_the_same_values():
    """The library call checks what the command checks (for callers that skip argparse)."""
    from stoicheia.inference.restore import RestoreError, check_options, parse_input

    for kwargs, needle in (
        ({"about_margin": float("nan")}, "about_margin=nan"),
        ({"about_margin": -3.0}, "from 0 to 1"),
        ({"unknown_width": 0}, "1 to 10,000"),
        ({"window": -4}, "window=-4"),
    ):
        with pytest.raises(RestoreError, match=needle.replace("(", r"\(")):
            check_options(**kwargs)
    with pytest.raises(RestoreError, match="from 0 to 1"):
        parse_input(GAP, about_margin=-3.0)


# --- finding 1: lacuna widths are checked when the notation is read ---------------------------


def test_counted_widths_above_the_bound_are_refused_by_the_parser():
    from stoicheia.text.leiden import parse_leiden
    from stoicheia.text.leiden_segments import (
        MAX_LACUNA_WIDTH,
        Lacuna,
        LacunaTooWideError,
        LeidenError,
    )

    assert parse_leiden(f"α[{MAX_LACUNA_WIDTH}]β")[1] == Lacuna(
        MAX_LACUNA_WIDTH, MAX_LACUNA_WIDTH, False, 2, 7
    )
    for notation, widest in (
        (f"[{MAX_LACUNA_WIDTH + 1}]", MAX_LACUNA_WIDTH + 1),
        ("[3000000000]", 3000000000),  # read as text, never as 3e9 slots: no memory is asked for
        ("[99999999999999999999]", 99999999999999999999),
        (f"[-ca.{MAX_LACUNA_WIDTH + 1}-]", MAX_LACUNA_WIDTH + 1),
        (f"[{MAX_LACUNA_WIDTH}±3]", MAX_LACUNA_WIDTH + 3),
        (f"[.3-{MAX_LACUNA_WIDTH + 1}.]", MAX_LACUNA_WIDTH + 1),
    ):
        with pytest.raises(LacunaTooWideError) as caught:
            parse_leiden(f"καὶ {notation} τοῦ")
        assert isinstance(caught.value, LeidenError)
        assert caught.value.width == widest and caught.value.notation == notation


def test_restore_input_names_the_model_limit():
    """Widths are checked against the model's window before any slot is made."""
    from stoicheia.inference.restore import GapTooWideError, parse_input

    why = "the window: the 512-slot rows the model was trained on"
    for text, needle in (
        (
            "καὶ [100000] τοῦ",
            "holds up to 100,000 letters, more than the model can fill: "
            "at most 512 letters at once",
        ),
        ("καὶ [99999999999999999999] τοῦ", "more than the model can fill: at most 512"),
        ("καὶ [600] τοῦ", "holds 600 letters, more than the model can fill: at most 512 letters"),
        ("καὶ [-ca.500-] τοῦ", "smaller --about-margin"),
        # read as exactly 600 letters it still does not fit: no margin can help
        (
            "καὶ [-ca.600-] τοῦ",
            "restore the text on each side of it on its own (a loss this long is not filled "
            "whole: at most 510 letters are)",
        ),
    ):
        with pytest.raises(GapTooWideError) as caught:
            parse_input(text, max_slots=512, limit_why=why)
        assert needle in str(caught.value) and why in str(caught.value)
        assert "--unknown-width" not in str(caught.value) or "---" in text
        # the width is the stone's: never 'a narrower lacuna'
        assert "narrower" not in str(caught.value)
    with pytest.raises(GapTooWideError, match=r"give --unknown-width 510 or less"):
        parse_input("καὶ [---] τοῦ", unknown_width=600, max_slots=512, limit_why=why)
    assert parse_input("καὶ [510] τοῦ", max_slots=512)[1][0].slots == 510


# --- findings 3 and 4: --config and --device ---------------------------------------------------


def test_missing_config_is_one_line_before_the_checkpoint(capsys):
    one_error(
        ["restore", MISSING, "--config", "/nonexistent.yaml", "--device", "cpu", GAP],
        capsys,
        "--config /nonexistent.yaml: config file not found",
    )


def test_config_folder_is_one_line(tmp_path, capsys):
    one_error(
        ["restore", MISSING, "--config", str(tmp_path), "--device", "cpu", GAP],
        capsys,
        f"--config {tmp_path}",
    )


def test_device_names_and_absent_gpus(monkeypatch, capsys):
    one_error(
        ["restore", MISSING, "--device", "gpu0", GAP],
        capsys,
        "argument --device",
        "'gpu0' is not a device name",
        "cpu",
    )
    one_error(
        ["evaluate", MISSING, "--shards", "x", "--device", "meta"],
        capsys,
        "argument --device",
        "only cpu, cuda and mps",
    )
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    one_error(
        ["restore", MISSING, "--device", "cuda", GAP],
        capsys,
        "argument --device",
        "no CUDA GPU is visible",
        "--device cpu",
    )
    one_error(["export", MISSING, "out", "--device", "cuda:0"], capsys, "no CUDA GPU is visible")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    one_error(["restore", MISSING, "--device", "cuda", GAP], capsys, "CUDA_VISIBLE_DEVICES=''")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    one_error(
        ["restore", MISSING, "--device", "cuda:2", GAP],
        capsys,
        "2 visible CUDA GPU(s), cuda:0 to cuda:1",
        "cpu, cuda:0, cuda:1",
    )


def test_resolve_device_auto_and_cpu():
    from stoicheia.inference.loading import ModelLoadError, resolve_device

    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type in ("cpu", "cuda")
    with pytest.raises(ModelLoadError, match="not a device name"):
        resolve_device("gpu0")


# --- finding 5: output paths are checked first ---------------------------------------------------


def test_output_path_that_is_a_file(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("keep me\n")
    # the checkpoint does not exist: the output is checked before it would be read
    one_error(["export", MISSING, str(afile)], capsys, f"OUT_DIR {afile} is a file, not a folder")
    one_error(
        ["export", MISSING, str(afile / "sub")],
        capsys,
        f"{afile} is a file, so no folder can be made under it",
    )
    one_error(
        ["report", str(tmp_path), "--out", str(afile)],
        capsys,
        f"--out {afile} is a file, not a folder",
    )
    src = tmp_path / "a.txt"
    src.write_text("μῆνιν ἄειδε θεὰ\n", encoding="utf-8")
    one_error(
        ["convert", "--out", str(afile), f"gold={src}"],
        capsys,
        f"--out {afile} is a file, not a folder",
    )
    one_error(
        ["evaluate", MISSING, "--shards", str(src), "--out", str(tmp_path)],
        capsys,
        "is a folder; give a file name",
    )
    assert afile.read_text() == "keep me\n"  # nothing lost


def test_export_refuses_a_full_folder_before_loading(tmp_path, capsys):
    full = tmp_path / "full"
    full.mkdir()
    (full / "mine.txt").write_text("x")
    one_error(
        ["export", MISSING, str(full)],
        capsys,
        f"OUT_DIR {full} exists and is not empty",
        "--overwrite",
    )
    assert (full / "mine.txt").read_text() == "x"


def test_convert_library_refuses_a_file(tmp_path):
    from stoicheia.data.shards import ConvertError, convert

    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(ConvertError, match="is a file; give a directory"):
        convert({"gold": [tmp_path]}, afile, overwrite=True)


# --- finding 6: evaluate's inputs --------------------------------------------------------------


def test_evaluate_inputs_checked_before_the_model(small_shards, tmp_path, capsys):
    txt = tmp_path / "a.txt"
    txt.write_text("μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχιλῆος οὐλομένην\n", encoding="utf-8")
    # a stray ":0" suffix: the path named exactly as given, and the fix
    one_error(
        ["evaluate", MISSING, "--shards", f"{txt}:0"],
        capsys,
        f"--shards '{txt}:0': no such file or folder",
        "drop the ':0'",
    )
    one_error(
        ["evaluate", MISSING, "--shards", str(tmp_path / "nope")],
        capsys,
        f"'{tmp_path / 'nope'}': no such file or folder",
    )
    # a shard folder beside raw files is refused, not silently dropped
    one_error(
        ["evaluate", MISSING, "--shards", str(small_shards), str(txt)],
        capsys,
        "is a shard folder",
        "give one shard folder alone",
    )
    one_error(
        ["evaluate", MISSING, "--shards", str(txt), str(small_shards)], capsys, "is a shard folder"
    )
    # tiers the shards do not have: the tiers present are named
    one_error(
        ["evaluate", MISSING, "--shards", str(small_shards), "--tiers", "bronze"],
        capsys,
        "--tiers bronze",
        "no val records of that tier",
        "tiers with val records: gold, silver",
    )
    one_error(
        ["evaluate", MISSING, "--shards", str(small_shards), "--tiers", "gold", "bronze", "copper"],
        capsys,
        "--tiers bronze copper",
        "those tiers",
    )
    # tiers and splits are those of shards: refused for raw files rather than ignored
    one_error(
        ["evaluate", MISSING, "--shards", str(txt), "--tiers", "gold"],
        capsys,
        "--tiers gold",
        "leave --tiers out",
    )
    one_error(
        ["evaluate", MISSING, "--shards", str(txt), "--split", "train"],
        capsys,
        "--split train",
        "leave --split out",
    )
    one_error(
        ["evaluate", MISSING, "--shards", str(txt), "--train-shards", str(tmp_path / "nope")],
        capsys,
        "--train-shards",
    )


def test_evaluate_counts_files_it_does_not_read(small_shards, tmp_path):
    from stoicheia.inference.evaluate import is_shard_folder, load_records

    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "a.txt").write_text("μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχιλῆος οὐλομένην\n", encoding="utf-8")
    (folder / "b.weird").write_text("xx\n")
    (folder / "notes.json").write_text("{}\n")
    records, described = load_records([str(folder)])
    assert len(records) == 1
    assert sorted(Path(p).name for p in described["not_read"]) == ["b.weird", "notes.json"]
    (folder / "a.txt").unlink()
    with pytest.raises(ValueError, match="2 files not read"):
        load_records([str(folder)])
    assert is_shard_folder(small_shards) and not is_shard_folder(folder)
    recs, desc = load_records([str(small_shards)], tiers=["silver"], max_records=2)
    assert desc["tiers"] == ["silver"] and len(recs) == 2 and {r.tier for r in recs} == {"silver"}


# --- finding 7: report --------------------------------------------------------------------------


def test_report_names_the_file_and_what_is_wrong(tmp_path, capsys):
    one_error(
        ["report", str(tmp_path / "nope")],
        capsys,
        f"{tmp_path / 'nope'}: no such folder",
        "give the run folder",
    )
    afile = tmp_path / "afile"
    afile.write_text("x")
    one_error(["report", str(afile)], capsys, f"{afile} is a file, not a run folder")
    cases = {
        "empty": (b"", "metrics.jsonl is empty (0 bytes)"),
        "blank": (b"\n\n", "metrics.jsonl is empty (2 bytes)"),
        "binary": (
            bytes(range(256)) * 3,
            "metrics.jsonl is not a JSONL log (768 bytes, no line of JSON)",
        ),
        "junk": (
            b'hello\n5\n[1, 2]\n{"no_step": 1}\n',
            "metrics.jsonl: none of its lines is a JSON record with a step",
        ),
    }
    for name, (content, needle) in cases.items():
        run = tmp_path / name
        run.mkdir()
        (run / "metrics.jsonl").write_bytes(content)
        line = one_error(["report", str(run)], capsys, str(run / "metrics.jsonl"), needle)
        assert not (run / "report.png").exists(), line
    (tmp_path / "junk" / "evals.jsonl").write_bytes(b"\x00\x01")
    one_error(
        ["report", str(tmp_path / "junk")],
        capsys,
        "evals.jsonl is not a JSONL log",
        "metrics.jsonl: none of its lines",
    )


def test_report_leaves_out_odd_lines_and_says_so(tmp_path, caplog):
    from stoicheia.train.report import read_curves

    run = tmp_path / "run"
    run.mkdir()
    lines = [{"step": 1, "loss/total": 3.0}, 5, {"nostep": 1}, {"step": 2, "loss/total": 2.5}]
    (run / "metrics.jsonl").write_text(
        "\n".join(json.dumps(x) for x in lines) + '\n{"step": 3, "lo\n'
    )
    (run / "evals.jsonl").write_text(
        json.dumps({"step": 2, "set": "dev", "metrics": {"bits_per_char": 3.1}}) + "\n[]\n"
    )
    curves = read_curves(run)
    assert curves.steps == [1, 2] and curves.series["loss/total"] == [3.0, 2.5]
    # NUL bytes or a cut character in one line (a crash) leave the other lines readable
    with open(run / "metrics.jsonl", "ab") as fh:
        fh.write(
            b'\x00\x00\x00\n{"step": 9, "loss/total": \xff}\n'
            + json.dumps({"step": 4, "loss/total": 2.0}).encode()
            + b"\n"
        )
    assert read_curves(run).series["loss/total"] == [3.0, 2.5, 2.0]
    assert curves.evals == {"dev": {"bits_per_char": [(2, 3.1)]}}
    said = caplog.text
    assert "3 line(s) left out: 1 not JSON" in said and "2 without a step" in said
    assert "1 line(s) are JSON but no evaluation record" in said


# --- finding 8: an unreadable checkpoint's fix names the run's other checkpoints -----------------


def test_truncated_checkpoint_names_the_others(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    torch.save({"state": {"model": {"encoder.w": torch.zeros(4096)}}}, run / "ep0-ba8-rank0.pt")
    data = (run / "ep0-ba8-rank0.pt").read_bytes()
    (run / "best.pt").write_bytes(data)
    (run / "ep0-ba8-rank0.pt").write_bytes(data[: len(data) // 2])
    line = one_error(
        ["restore", str(run / "ep0-ba8-rank0.pt"), "--device", "cpu", GAP],
        capsys,
        "ep0-ba8-rank0.pt: incomplete or corrupt checkpoint",
        "use another checkpoint of the run",
        f"the run folder {run} also holds best.pt",
    )
    assert "download the file again" in line


def test_truncated_checkpoint_alone_in_its_folder(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    torch.save({"state": {"model": {"encoder.w": torch.zeros(4096)}}}, run / "best.pt")
    data = (run / "best.pt").read_bytes()
    (run / "best.pt").write_bytes(data[: len(data) // 2])
    line = one_error(
        ["restore", str(run / "best.pt"), "--device", "cpu", GAP],
        capsys,
        "best.pt: incomplete or corrupt checkpoint",
        f"copy or download the file again ({run} holds no other checkpoint",
    )
    assert "another checkpoint" not in line and "latest-rank0" not in line


def test_interrupted_export_leaves_the_old_folder(tmp_path, monkeypatch):
    """A failure (Ctrl-C, full disk) while an export is written leaves the earlier export whole
    and no OUT.partial: never weights of one export beside the config of another."""
    from stoicheia.inference.export import folder as ex

    out = tmp_path / "exp"
    out.mkdir()
    (out / "config.json").write_text("old config")
    (out / "model.safetensors").write_bytes(b"old weights")

    def boom(model, folder, held_out, training_data, weights_dtype):
        (folder / "model.safetensors").write_bytes(b"new weights")
        raise KeyboardInterrupt

    monkeypatch.setattr(ex, "_write_export", boom)
    with pytest.raises(KeyboardInterrupt):
        ex.export_model(object(), out, overwrite=True)
    assert (out / "model.safetensors").read_bytes() == b"old weights"
    assert (out / "config.json").read_text() == "old config"
    assert not (tmp_path / "exp.partial").exists()


def test_evaluate_never_writes_over_its_inputs(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "text": "καὶ τὸν πατέρα"}\n', encoding="utf-8")
    one_error(
        ["evaluate", MISSING, "--shards", str(src), "--out", str(src)],
        capsys,
        "over the input",
        str(src),
    )
    one_error(
        ["evaluate", MISSING, "--shards", str(tmp_path), "--out", str(tmp_path / "eval.json")],
        capsys,
        "over the input",
    )
    one_error(
        ["evaluate", MISSING, "--shards", str(src), "--out", str(tmp_path / "res.txt")],
        capsys,
        "give a .json name",
    )
    assert src.read_text(encoding="utf-8") == '{"id": "a", "text": "καὶ τὸν πατέρα"}\n'


def test_convert_names_a_file_name_that_is_not_utf8(tmp_path, capsys):
    folder = tmp_path / "src"
    folder.mkdir()
    bad = os.fsdecode(b"bad\xffname.txt")
    (folder / bad).write_text("καὶ τὸν πατέρα ἔφη τὸν ἐμὸν παρεῖναι " * 20, encoding="utf-8")
    line = one_error(
        ["convert", "--out", str(tmp_path / "o"), "--workers", "1", f"gold={folder}"],
        capsys,
        "not valid UTF-8",
        "rename",
    )
    assert "bad\\udcffname.txt" in line
    assert not (tmp_path / "o").exists()


def test_ctrl_c_is_one_line(monkeypatch, capsys):
    from stoicheia.commands import status

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(status, "run", interrupted)
    rc, _, err = run_cli(["status", "/nonexistent/run"], capsys)
    assert rc == 130 and err.strip() == "stoicheia status: interrupted (Ctrl-C)"


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["restore", MISSING, "καὶ [...] ἔφη", "--top-k", "100000"], "--top-k"),
        (["restore", MISSING, "καὶ [...] ἔφη", "--beam", "100000"], "--beam"),
        (["evaluate", MISSING, "--shards", "/x", "--seq-len", "100000"], "--seq-len"),
    ],
)
def test_costly_options_have_an_upper_bound(argv, needle, capsys):
    one_error(argv, capsys, needle, "out of range")


def test_evaluate_counts_nothing_twice_and_names_a_damaged_folder(small_shards, tmp_path, capsys):
    import shutil

    from stoicheia.inference.evaluate import load_records

    one_error(
        ["evaluate", MISSING, "--shards", str(small_shards), str(small_shards)],
        capsys,
        "is given twice",
    )
    once, _ = load_records([str(small_shards)], tiers=["gold"])
    twice, desc = load_records([str(small_shards)], tiers=["gold", "gold"])
    assert len(twice) == len(once) and desc["tiers"] == ["gold"]
    damaged = tmp_path / "shards"
    shutil.copytree(small_shards, damaged)
    (damaged / "gold" / "val" / "index.json").unlink()
    one_error(
        ["evaluate", MISSING, "--shards", str(damaged)],
        capsys,
        "gold/val/index.json is missing",
        "convert it again",
    )


@pytest.mark.parametrize(
    "name, text",
    [
        ("complete.json", "[1, 2]"),
        ("complete.json", '{"use": 5, "step": "x", "best": 3}'),
        ("anneal.json", "[]"),
        ("diverged.json", '{"step": 5, "last_good_checkpoint": 12}'),
    ],
)
def test_status_names_a_damaged_marker_file(tmp_path, capsys, name, text):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 1, "time": 1.0, "loss/total": 3.0}\n')
    (run / name).write_text(text)
    rc, out, err = run_cli(["status", str(run)], capsys)
    lines = [x for x in err.splitlines() if x.strip()]
    assert rc in (0, 2) and "Traceback" not in err, err
    if rc == 2:
        assert (
            len(lines) == 1
            and lines[0].startswith("stoicheia status: error: ")
            and (name in lines[0] or str(run) in lines[0])
        ), err


def test_a_text_file_given_as_checkpoint_is_not_called_corrupt(tmp_path, capsys):
    # a text file read 'incomplete or corrupt checkpoint ... use another checkpoint of the run
    # (the run folder also holds empty.pt)': it is no checkpoint, and an empty .pt is no offer
    (tmp_path / "A.txt").write_text("ἐνθάδε κεῖται\n", encoding="utf-8")
    (tmp_path / "empty.pt").write_bytes(b"")
    line = one_error(
        ["restore", str(tmp_path / "A.txt"), "--device", "cpu", GAP],
        capsys,
        "A.txt: not a checkpoint (a text file)",
        "give a checkpoint written by training",
    )
    assert "corrupt" not in line and "run folder" not in line.split(";")[0]
    torch.save({"state": {"model": {"encoder.w": torch.zeros(4096)}}}, tmp_path / "best.pt")
    data = (tmp_path / "best.pt").read_bytes()
    (tmp_path / "best.pt").write_bytes(data[: len(data) // 2])
    line = one_error(
        ["restore", str(tmp_path / "best.pt"), "--device", "cpu", GAP],
        capsys,
        "best.pt: incomplete or corrupt checkpoint",
    )
    assert "empty.pt" not in line


def test_an_xml_file_given_as_checkpoint_or_text_points_to_epidoc(tmp_path, capsys):
    """`restore X.xml` took the EpiDoc file for a checkpoint ("not a checkpoint (a text file)",
    or "TEXT is required"); the line says it is XML and gives the --epidoc command."""
    xml = tmp_path / "ISic000001.xml"
    xml.write_text('<?xml version="1.0"?>\n<TEI><text/></TEI>\n', encoding="utf-8")
    fix = f"stoicheia restore --epidoc {xml} --out FOLDER"
    for argv in (["restore", str(xml)], ["restore", str(xml), GAP, "--device", "cpu"]):
        line = one_error(argv, capsys, f"{xml} is an XML file, not a checkpoint", fix)
        assert "zip" not in line and "TEXT" not in line
    # found by its first bytes too, and --out / more --epidoc paths carried into the command
    tei = tmp_path / "edition.tei"
    tei.write_bytes(b"\xef\xbb\xbf\n  <TEI/>")
    one_error(
        ["restore", str(tei), "--epidoc", str(xml), "--out", "done"],
        capsys,
        f"{tei} is an XML file, not a checkpoint",
        f"stoicheia restore --epidoc {tei} {xml} --out done",
    )
    # in the TEXT's place, after a checkpoint
    one_error(
        ["restore", MISSING, str(xml)],
        capsys,
        f"{xml} is an XML file, not a Greek text",
        f"stoicheia restore {MISSING} --epidoc {xml} --out FOLDER",
    )


def test_xml_pasted_as_text_is_one_line_with_the_fix(capsys):
    """XML pasted inline (not a file): once 'internal: 6 letters encoded but 3 found', or the
    tags restored as letters; now one line, before the checkpoint is looked at."""
    one_error(
        ["restore", MISSING, '<?xml version="1.0"?><TEI>καὶ</TEI>'],
        capsys,
        "holds XML markup (first tag '<?xml version=\"1.0\"?>')",
        "save the document to a file and run: stoicheia restore --epidoc FILE --out FOLDER",
    )
    line = one_error(
        ["restore", MISSING, 'καὶ <gap reason="lost" extent="unknown" unit="character"/> ἔδωκε'],
        capsys,
        "not EpiDoc elements; give it as 'καὶ [---] ἔδωκε'",
    )
    assert "internal" not in line and MISSING not in line


def test_an_unquoted_text_is_answered_with_the_command_quoted(capsys):
    one_error(
        ["restore", MISSING, "ἐνθάδε", "κεῖ[..]αι", "--top-k", "2"],
        capsys,
        "unrecognized arguments: κεῖ[..]αι",
        f'a text of several words goes in quotes: stoicheia restore {MISSING} "ἐνθάδε κεῖ[..]αι"',
    )


def test_a_utf16_stdin_and_a_file_name_as_text_are_answered_plainly(tmp_path, capsys, monkeypatch):
    import io

    class _Stdin:
        buffer = io.BytesIO("ἐνθάδε κεῖ[..]αι\r\n".encode("utf-16"))

    monkeypatch.setattr("sys.stdin", _Stdin())
    one_error(["restore", MISSING, "-"], capsys, "the text on stdin is not UTF-8 (it is UTF-16")
    text_file = tmp_path / "edition.txt"
    text_file.write_text("ἐνθάδε κεῖ[..]αι\n", encoding="utf-8")
    one_error(
        ["restore", MISSING, str(text_file)],
        capsys,
        "is a file, not a Greek text",
        f"stoicheia restore CHECKPOINT - < {text_file}",
    )
    # a long one-line text is no file name: it goes on to the checkpoint (which is missing here),
    # not to a traceback from the file system ('File name too long')
    long_text = "καὶ τὸν πατέρα ἔφη τὸν ἐμὸν παρ[...]αι μέν " * 12
    one_error(["restore", MISSING, long_text], capsys, "checkpoint")


def test_an_unknown_option_is_answered_by_its_commands_parser(capsys):
    """`stoicheia parallels TEXT --run X`: the line names the command and points at its own
    --help (it pointed at `stoicheia --help`, which lists the commands, not their options)."""
    line = one_error(
        ["parallels", "καὶ τὸν", "--run", "somewhere"],
        capsys,
        "unrecognized arguments: --run somewhere",
        "(stoicheia parallels --help lists the arguments)",
    )
    assert line.startswith("stoicheia parallels: error: ")


def test_an_empty_stdin_is_named_as_such(capsys, monkeypatch):
    """`restore CHECKPOINT - < empty` said "no Greek letter in ''" after loading the model."""
    import io

    class _Stdin:
        buffer = io.BytesIO(b"\xef\xbb\xbf \n")

    monkeypatch.setattr("sys.stdin", _Stdin())
    one_error(["restore", MISSING, "-"], capsys, "stdin was empty", "- < FILE")


def test_an_empty_text_is_named_as_such(capsys):
    """`restore ''` said "the following arguments are required: TEXT" though one was given;
    it is one line naming the empty text, without loading a model (no shipped-model note)."""
    one_error(["restore", ""], capsys, "the TEXT is empty", "'-'")
    one_error(["restore", "   "], capsys, "the TEXT is empty")
    one_error(["restore", MISSING, " "], capsys, "the TEXT is empty")


def test_ctrl_c_while_the_arguments_are_parsed_ends_at_once_and_the_handler_is_given_back(
    monkeypatch,
):
    """While main parses (torch and numpy load for some arguments), SIGINT is handled by a
    handler that exits at once with 130 (a KeyboardInterrupt inside numpy's C import would leave
    it half-loaded); the previous handler is back once the command runs."""
    import signal

    from stoicheia import cli

    seen = []
    real_parser = cli.build_parser

    def spying_parser():
        seen.append(signal.getsignal(signal.SIGINT))
        return real_parser()

    monkeypatch.setattr(cli, "build_parser", spying_parser)
    before = signal.getsignal(signal.SIGINT)
    assert cli.main(["restore", "--help"]) == 0
    assert seen == [cli._interrupted_while_starting]
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.parametrize(
    "typed, meant", [("restor", "restore"), ("benchmrk", "benchmark"), ("staus", "status")]
)
def test_a_mistyped_command_gets_did_you_mean(typed, meant, capsys):
    rc, _, err = run_cli([typed, "x"], capsys)
    assert rc == 2
    assert err.splitlines() == [
        f"stoicheia: error: {typed!r} is not a command; did you mean {meant!r}? "
        "(stoicheia --help lists the arguments)"
    ]


def test_a_command_nothing_like_any_gets_argparses_list(capsys):
    rc, _, err = run_cli(["xyzzy"], capsys)
    assert rc == 2 and len(err.splitlines()) == 1
    assert "invalid choice: 'xyzzy' (choose from 'convert'" in err and "did you mean" not in err


def test_a_mistyped_option_or_choice_gets_did_you_mean(capsys):
    one_error(
        ["restore", MISSING, "--top-kk", "3", "ἐνθάδε κεῖ[..]αι"],
        capsys,
        "unrecognized arguments: --top-kk",
        "; did you mean --top-k?",
    )
    one_error(
        ["status", "--folde", "x"], capsys, "unrecognized arguments: --folde"
    )  # nothing close: argparse's words alone
    one_error(
        ["benchmark", MISSING, "--sampel=80", "--out", "x"],
        capsys,
        "unrecognized arguments: --sampel=80; did you mean --sample?",
    )
    one_error(
        ["restore", MISSING, "--top-kk=3", "--beem", "4", "ἐνθάδε κεῖ[..]αι"],
        capsys,
        "; did you mean --top-k (for --top-kk), --beam (for --beem)?",
    )
    one_error(
        ["restore", MISSING, "--decoder", "fuse", "ἐνθάδε κεῖ[..]αι"],
        capsys,
        "argument --decoder: invalid choice: 'fuse'; did you mean 'fused'?",
    )


def test_a_lone_text_file_is_answered_with_batch_and_stdin(tmp_path, capsys):
    """``restore my_text.txt``: the file was taken for a checkpoint and the answer was 'the
    following arguments are required: TEXT'; it names the file and the two ways to restore it."""
    path = tmp_path / "my_text.txt"
    path.write_text("ἔδοξε τῇ [...] καὶ\n", encoding="utf-8")
    one_error(
        ["restore", str(path)],
        capsys,
        f"{path} is a text file, not a checkpoint: restore its lines with --batch {path} "
        f"(one text a line), or its whole text with stoicheia restore - < {path}",
    )
