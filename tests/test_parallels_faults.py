"""The parallels index and ``stoicheia parallels``/``stoicheia index`` under a careless or unlucky
user: damaged index folders, bytes that are not UTF-8 on stdin, ``--out`` at a folder of other
things. Each answer is one line naming the file and the fix; no traceback, no data lost."""

from __future__ import annotations

import io
import json
import shutil

import numpy as np
import pytest

from stoicheia.data.parallels_index import IndexBuildError, build_index
from stoicheia.data.shards import convert
from stoicheia.inference.parallels.index import IndexError_, ParallelsIndex


@pytest.fixture(scope="module")
def shards(corpus_root, tmp_path_factory):
    isic = sorted((corpus_root / "isicily" / "inscriptions").glob("ISic*.xml"))[:12]
    out = tmp_path_factory.mktemp("faults") / "shards"
    convert({"bronze": isic}, out, val_fraction=0.2, workers=1, progress=False)
    assert (out / "parallels" / "manifest.json").exists()
    return out


def _one_error(argv, capsys, *needles):
    from stoicheia.cli import main

    rc = main(argv)
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert rc == 2 and len(err) == 1, (rc, err)
    assert err[0].startswith(f"stoicheia {argv[0]}: error: "), err[0]
    for needle in needles:
        assert needle in err[0], (needle, err[0])
    return err[0]


def _bad_json(d):
    (d / "manifest.json").write_text('{"version": 1, ', encoding="utf-8")
    return "manifest.json"


def _a_list(d):
    (d / "manifest.json").write_text("[1]", encoding="utf-8")
    return "manifest.json"


def _cut_sa(d):
    data = (d / "sa.npy").read_bytes()
    (d / "sa.npy").write_bytes(data[: len(data) // 2])  # a copy cut short
    return "sa.npy"


def _cut_header(d):
    (d / "text.npy").write_bytes((d / "text.npy").read_bytes()[:50])
    return "text.npy"


def _no_sa(d):
    (d / "sa.npy").unlink()
    return "sa.npy"


def _not_npy(d):
    (d / "look.npy").write_bytes(b"\x00garbage" * 100)
    return "look.npy"


def _sa_of_another_build(d):
    sa = np.load(d / "sa.npy")
    np.save(d / "sa.npy", sa[: len(sa) // 2])  # a valid .npy, too short: C would read past it
    return "sa.npy"


def _records_of_another_build(d):
    starts = np.load(d / "rec_start.npy")
    np.save(d / "rec_start.npy", starts - 1)
    return "rec_start.npy"


def _wrong_dtype(d):
    np.save(d / "sa.npy", np.load(d / "sa.npy").astype(np.int64))
    return "sa.npy"


DAMAGE = [
    _bad_json,
    _a_list,
    _cut_sa,
    _cut_header,
    _no_sa,
    _not_npy,
    _sa_of_another_build,
    _records_of_another_build,
    _wrong_dtype,
]


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__.strip("_"))
def test_a_damaged_index_is_refused_in_one_line_naming_the_file_and_the_fix(
    shards, tmp_path, capsys, damage
):
    folder = tmp_path / "parallels"
    shutil.copytree(shards / "parallels", folder)
    ParallelsIndex(folder)  # the copy opens
    name = damage(folder)
    with pytest.raises(IndexError_, match="stoicheia index") as err:
        ParallelsIndex(folder)
    assert name in str(err.value)
    _one_error(["parallels", "καὶ τῶι δήμωι", "--index", str(folder)], capsys, name)


def test_a_damaged_index_named_in_fusion_json_is_one_note_and_restoring_goes_on(shards, tmp_path):
    from stoicheia.inference.restore.fusion_file import FUSION_FILE, FusionConfig, find_fusion
    from stoicheia.inference.restore.reading import RestoreError

    folder = tmp_path / "parallels"
    shutil.copytree(shards / "parallels", folder)
    _sa_of_another_build(folder)

    class Model:
        source = str(tmp_path / "best.pt")
        config: dict = {}

    FusionConfig(parallels_weight=0.5, parallels_index=str(folder)).save(tmp_path / FUSION_FILE)
    notes: list[str] = []
    assert find_fusion(Model(), notes=notes) is None  # no index, no n-gram: the model alone
    said = [n for n in notes if "parallels" in n]
    assert len(said) == 1 and "sa.npy" in said[0] and "stoicheia index" in said[0]
    assert str(tmp_path) not in said[0], "a note never shows the server's absolute paths"
    # given on the command line, the same index is refused in one line
    with pytest.raises(RestoreError, match="sa.npy"):
        find_fusion(Model(), parallels=str(folder))
    # a weight out of range is the user's first fault to hear of: checked before any file opens
    with pytest.raises(RestoreError, match="--ngram-weight 1.5"):
        find_fusion(Model(), weight=1.5)
    with pytest.raises(RestoreError, match="parallels_weight"):
        FusionConfig(parallels_weight=True)  # JSON true is no weight


def test_bytes_that_are_not_utf8_on_stdin_are_refused_not_replaced(shards, capsys, monkeypatch):
    class Stdin:
        buffer = io.BytesIO("καὶ τῶι ".encode() + b"\xff\xfe" + "δήμωι".encode())

    monkeypatch.setattr("sys.stdin", Stdin())
    _one_error(
        ["parallels", "-", "--index", str(shards / "parallels")],
        capsys,
        "not UTF-8 (byte 16",
        "save it as UTF-8",
    )
    monkeypatch.setattr("sys.stdin", type("S", (), {"buffer": io.BytesIO("\ufeffκαὶ".encode())}))
    from stoicheia.cli import main

    assert main(["parallels", "-", "--index", str(shards / "parallels"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["text"] == "καὶ"


def test_index_out_at_a_folder_of_other_things_is_refused_and_nothing_is_deleted(
    shards, tmp_path, capsys
):
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("an epigrapher's notes", encoding="utf-8")
    with pytest.raises(IndexBuildError, match="no part of an index"):
        build_index(shards, other, progress=False)
    assert (other / "notes.txt").read_text(encoding="utf-8") == "an epigrapher's notes"
    # the shards folder itself: the careless `stoicheia index data/shards --out data/shards`
    before = sorted(p.name for p in shards.iterdir())
    _one_error(["index", str(shards), "--out", str(shards)], capsys, "stats.json", "new or empty")
    assert sorted(p.name for p in shards.iterdir()) == before
    # a previous index (its own files only) is rebuilt in place, as before; the list of an
    # index's files is the list of what a build writes (an array added to one but not the
    # other would make every rebuild refuse its own folder)
    from stoicheia.data.parallels_index import INDEX_FILES

    assert {p.name for p in (shards / "parallels").iterdir()} == INDEX_FILES
    copy = tmp_path / "again"
    shutil.copytree(shards / "parallels", copy)
    assert build_index(shards, copy, progress=False)["records"] == ParallelsIndex(copy).records


def test_the_source_page_answers_a_broken_fusion_json_in_one_line(shards, tmp_path):
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from stoicheia.inference.restore.fusion_file import FUSION_FILE
    from stoicheia.serve.source_page import add_source_routes

    class Model:
        source = str(tmp_path / "best.pt")
        config = {"data": {"shard_root": str(shards)}}

    app = FastAPI()
    add_source_routes(app, Model())
    client = TestClient(app)
    assert client.get("/source/0").status_code == 200  # the run's shards' index
    # an index named in fusion.json that has gone: no index (said in restore's notes), no 500
    (tmp_path / FUSION_FILE).write_text('{"parallels_index": "/moved/away"}', encoding="utf-8")
    got = client.get("/source/0")
    assert got.status_code == 404 and "no record 0" in got.json()["detail"]
    (tmp_path / FUSION_FILE).write_text('{"parallels_weight": 3}', encoding="utf-8")
    got = client.get("/source/0")  # a hand-edited fusion.json: its one line
    assert got.status_code == 503 and "parallels_weight" in got.json()["detail"]


def test_a_build_cut_short_leaves_the_previous_index_whole(shards, tmp_path, monkeypatch):
    folder = tmp_path / "parallels"
    shutil.copytree(shards / "parallels", folder)
    records = ParallelsIndex(folder).records
    save = np.save

    def interrupted(path, arr, *a, **k):
        if str(path).endswith("sa.npy"):
            raise KeyboardInterrupt  # Ctrl-C while the arrays are written
        return save(path, arr, *a, **k)

    monkeypatch.setattr(np, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_index(shards, folder, progress=False)
    monkeypatch.undo()
    assert ParallelsIndex(folder).records == records
    assert not (tmp_path / "parallels.partial").exists()


def test_a_full_disk_is_named_as_such_and_leaves_no_partial_index(shards, tmp_path, monkeypatch):
    import os

    from stoicheia.publish import WriteError

    out = tmp_path / "parallels"
    partial = tmp_path / "parallels.partial"
    save, statvfs = np.save, os.statvfs

    def short_write(path, arr, *a, **k):
        if str(path).endswith("sa.npy"):  # numpy's short write on a full disk: no errno
            raise OSError(f"{arr.nbytes} requested and 17376 written")
        return save(path, arr, *a, **k)

    class Full:  # the disk is full while the partial files fill it
        def __init__(self, real):
            self.f_frsize, self.f_bavail = real.f_frsize, 0 if partial.exists() else 10**9

    monkeypatch.setattr(np, "save", short_write)
    monkeypatch.setattr(os, "statvfs", lambda p: Full(statvfs(p)))
    with pytest.raises(WriteError) as err:
        build_index(shards, out, progress=False)
    assert "No space left on device" in str(err.value) and str(out) in str(err.value)
    assert not out.exists() and not partial.exists()


def test_what_parallels_leaves_out_of_a_text_is_counted_and_said(shards, capsys):
    from stoicheia.cli import main

    argv = ["parallels", "hello καὶ τῶι δήμωι Привет 12", "--index", str(shards / "parallels")]
    assert main([*argv, "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["left_out"] == {"latin": 5, "other": 6, "digit": 2}
    assert captured.err.strip() == (
        "stoicheia parallels: left out, not Greek: 5 Latin letter(s), 6 letter(s) of another "
        "script, 2 digit(s)"
    )
    _one_error(["parallels", "hello", "--index", str(shards / "parallels")], capsys, "no Greek")


def test_fusion_json_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    from pathlib import Path

    from stoicheia.inference.restore.fusion_file import FUSION_FILE, FusionConfig
    from stoicheia.publish import WriteError

    path = tmp_path / FUSION_FILE
    FusionConfig(ngram_weight=0.6, parallels_weight=0.9).save(path)
    write_text = Path.write_text

    def full(self, data, *a, **k):  # the disk fills half-way through the new file
        write_text(self, data[: len(data) // 2], *a, **k)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(WriteError, match="No space left"):
        FusionConfig(ngram_weight=0.1, parallels_weight=0.2).save(path)
    monkeypatch.undo()
    assert FusionConfig.load(path).parallels_weight == 0.9  # the previous file, whole


def test_a_parallels_query_imports_no_training_stack(shards):
    """``stoicheia parallels`` needs numpy and the index: importing streaming, transformers or
    torch cost it 5-8 s and 760 MB a query (issue 33). Run in a fresh interpreter, as a user
    runs it; the index build reads no module that imports it back (the import circle with
    shards.py)."""
    import subprocess
    import sys

    heavy = ("torch", "streaming", "transformers", "composer")
    probe = (
        "import sys\n"
        "from stoicheia.cli import main\n"
        f"code = main(['parallels', 'καὶ τῶι δήμωι', '--index', {str(shards)!r}, '--json'])\n"
        "import stoicheia.inference.parallels, stoicheia.inference.parallels.passages\n"
        "import stoicheia.data.parallels_index\n"
        f"print(code, sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))\n"
        "print('stoicheia.data.shards' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    ).stdout.splitlines()
    assert out[-2] == "0 []", out[-2]
    assert out[-1] == "False", "the index build imports shards.py, which imports it back"
