"""``stoicheia restore --batch``: many texts with one model load, one entry per text, every
failure counted and said (issue 33, part 3)."""

from __future__ import annotations

import io
import json

import pytest
from test_run_folder import _checkpoint

GOOD = ["καὶ τοῦ δή[...] τοῦ ἑαυτοῦ", "ἔδοξε τῆι β[..]ῆι καὶ τῶι δήμωι", "τὸν [.] δῆμον"]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return _checkpoint(tmp_path_factory.mktemp("batch") / "run" / "best.pt", "data/shards")


@pytest.fixture
def loads(monkeypatch):
    """The number of model loads of the batch."""
    from stoicheia.commands import restore_batch

    count = []
    real = restore_batch.load

    def counted(args, command):
        count.append(1)
        return real(args, command)

    monkeypatch.setattr(restore_batch, "load", counted)
    return count


def _single(ckpt, text, capsys):
    from stoicheia.cli import main

    assert main(["restore", str(ckpt), "--device", "cpu", "--json", "--top-k", "2", text]) == 0
    return json.loads(capsys.readouterr().out)


def test_plain_lines_in_jsonl_out_one_load_failures_counted(ckpt, tmp_path, capsys, loads):
    from stoicheia.cli import main

    lines = [GOOD[0], "", GOOD[1], "καὶ [τοῦ", "   ", GOOD[2], "καὶ τοῦ δήμου"]
    src = tmp_path / "texts.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = ["restore", str(ckpt), "--device", "cpu", "--top-k", "2", "--batch", str(src)]
    assert main([*argv, "--json"]) == 2  # two texts failed
    out, err = capsys.readouterr()
    entries = [json.loads(x) for x in out.splitlines()]
    assert [e["line"] for e in entries] == [1, 3, 4, 6, 7]
    assert [("error" in e) for e in entries] == [False, False, True, False, True]
    assert entries[2]["text"] == "καὶ [τοῦ" and entries[2]["error"]
    assert "nothing to restore" in entries[4]["error"] or "no lacuna" in entries[4]["error"]
    assert len(loads) == 1
    summary = err.strip().splitlines()[-1]
    assert summary == (
        "stoicheia restore: restored 3 of 5 texts; 2 failed (lines 4, 7; their entries say "
        "why); 2 blank line(s), no text"
    )
    # each result is the one restore TEXT gives
    for e, text in zip([entries[0], entries[1], entries[3]], GOOD, strict=True):
        single = _single(ckpt, text, capsys)
        assert {k: v for k, v in e.items() if k != "line"} == single
    # the aligned text of restore TEXT, under a header per line
    assert main(argv) == 2
    out = capsys.readouterr().out
    assert out.startswith("== line 1 ==\ninput     καὶ τοῦ δή[...] τοῦ ἑαυτοῦ\n")
    assert "== line 4 ==\nerror: " in out and out.count("== line") == 5


def test_jsonl_in_and_out_keeps_the_ids_and_says_bad_lines(ckpt, tmp_path, capsys, monkeypatch):
    from stoicheia.cli import main

    rows = [
        json.dumps({"id": "ISic000001", "text": GOOD[0]}, ensure_ascii=False),
        "{not json",
        json.dumps({"id": "x", "txt": GOOD[1]}),
        json.dumps({"id": 7, "text": GOOD[2], "line": 99}, ensure_ascii=False),
    ]
    data = ("\ufeff" + "\n".join(rows) + "\n").encode() + b"\xff\xfe\n"
    monkeypatch.setattr("sys.stdin", type("S", (), {"buffer": io.BytesIO(data)}))
    argv = ["restore", str(ckpt), "--device", "cpu", "--top-k", "2", "--batch", "-", "--jsonl"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    entries = [json.loads(x) for x in out.splitlines()]
    assert [(e["line"], e.get("id")) for e in entries] == [
        (1, "ISic000001"),
        (2, None),
        (3, "x"),
        (4, 7),
        (5, None),
    ]
    assert "restorations" in entries[0] and "restorations" in entries[3]
    assert entries[3]["input_line"] == 99  # the input's own "line", kept beside the output's
    assert entries[1]["error"].startswith("not JSON")
    assert entries[2]["error"].startswith('no "text" string')
    assert entries[4]["error"].startswith("not UTF-8")
    assert "restored 2 of 5 texts; 3 failed (lines 2, 3, 5" in err


def test_batch_refusals_are_one_line(ckpt, tmp_path, capsys):
    from stoicheia.cli import main

    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    for argv, said in (
        (["--batch", str(empty)], "no text in it (2 blank lines)"),
        (["--batch", str(tmp_path / "missing.txt")], "missing.txt"),
        (["--batch", str(empty), "καὶ [..]"], "give TEXT or --batch, not both"),
        (["--jsonl", "καὶ [..]"], "give --batch FILE with it"),
        (["--batch", str(empty), "--epidoc", str(tmp_path)], "give one of them"),
    ):
        assert main(["restore", str(ckpt), "--device", "cpu", *argv]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and said in err[0], (argv, err)


def test_ctrl_c_keeps_the_entries_answered_and_says_where_to_go_on(
    ckpt, tmp_path, capsys, monkeypatch
):
    """Ctrl-C in a batch: the entries printed stay, exit 130, and one line counts the texts
    answered and those not (with the line to go on from); it said only 'interrupted'."""
    from stoicheia import inference
    from stoicheia.cli import main

    real = inference.restore.restore
    calls = []

    def stopped(*a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(inference.restore, "restore", stopped)
    src = tmp_path / "texts.txt"
    src.write_text("\n".join([GOOD[0], "", GOOD[1], "καὶ [τοῦ", GOOD[2], GOOD[0]]) + "\n")
    argv = ["restore", str(ckpt), "--device", "cpu", "--top-k", "2", "--json", "--batch"]
    assert main([*argv, str(src)]) == 130
    out, err = capsys.readouterr()
    assert [json.loads(x)["line"] for x in out.splitlines()] == [1, 3, 4]
    assert err.strip().splitlines()[-1] == (
        "stoicheia restore: interrupted (Ctrl-C): 3 of 5 texts answered above (1 of them "
        f"failed); 2 not restored, from line 5 on (`tail -n +5 {src}` gives them)"
    )


def test_one_failed_text_is_named_as_one_line(ckpt, tmp_path, capsys):
    from stoicheia.cli import main

    src = tmp_path / "texts.txt"
    src.write_text(f"{GOOD[2]}\nκαὶ [τοῦ\n", encoding="utf-8")
    argv = ["restore", str(ckpt), "--device", "cpu", "--top-k", "2", "--json", "--batch"]
    assert main([*argv, str(src)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "stoicheia restore: restored 1 of 2 texts; 1 failed (line 2; their entries say why)"
    )


def test_a_jsonl_key_the_output_writes_is_kept_under_another_name():
    """An input key named as one of the output's (``"line": "A7"``, ``"notes"``) was dropped or
    overwritten unsaid; it is copied as ``input_KEY``."""
    from stoicheia.commands.restore_batch import read_batch

    raw = '{"text": "τοῦ [..]ου", "id": 1, "line": "A7", "notes": "SEG 12"}\n'
    (item,), _ = read_batch(raw.encode(), jsonl=True)
    assert item.error is None and item.text == "τοῦ [..]ου"
    assert item.extra == {"id": 1, "input_line": "A7", "input_notes": "SEG 12"}


def test_a_utf16_file_with_its_byte_order_mark_is_read():
    """A batch saved as UTF-16 (Windows Notepad's "Unicode") gave every line 'not UTF-8', and
    one more line of its last NUL byte."""
    from stoicheia.commands.restore_batch import read_batch

    for codec in ("utf-16", "utf-16-be"):
        raw = "ἔδοξε τῇ [...] καὶ\n\nτοῦ δήμου [..]ου\n".encode(codec)
        if codec == "utf-16-be":
            raw = b"\xfe\xff" + raw
        items, blank = read_batch(raw, jsonl=False)
        assert [(i.line, i.text, i.error) for i in items] == [
            (1, "ἔδοξε τῇ [...] καὶ", None),
            (3, "τοῦ δήμου [..]ου", None),
        ]
        assert blank == 1
