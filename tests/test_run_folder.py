"""A run folder works wherever it is (issue 33, part 1): what lies beside a checkpoint (the
parallels index, fusion.json, the run's shards) is found relative to the checkpoint, never to
the current folder; a moved run folder finds its own index; an index of other shards is not used
unsaid; notes never show absolute paths.

The "checkout" is a folder laid out as the demo leaves one: ``data/shards`` (12 real I.Sicily
inscriptions, with their parallels index) and ``checkpoints/run/best.pt``, a checkpoint of the
tiny model (random weights) whose run config names its shards relatively, as the demo does."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest

from stoicheia.data.shards import convert
from stoicheia.text import alphabet as A


def _convert(corpus_root, out, files):
    isic = sorted((corpus_root / "isicily" / "inscriptions").glob("ISic*.xml"))[files]
    convert({"bronze": isic}, out, val_fraction=0.2, workers=1, progress=False)
    assert (out / "parallels" / "manifest.json").exists()
    return out


def _checkpoint(path: Path, shard_root: str) -> Path:
    """A checkpoint of the tiny model (seeded random weights) as Composer nests it, its run
    config (RunRecord) naming ``shard_root``."""
    import torch
    from tiny import tiny_run

    from stoicheia.model.encoder import CharBertEncoder

    cfg = tiny_run(shard_root, path.parent.parent, path.parent.name)
    torch.manual_seed(0)
    encoder = CharBertEncoder(cfg.model)
    config = {
        "run_name": "moved",
        "data": {"seq_len": cfg.data.seq_len, "shard_root": shard_root},
        "model": asdict(cfg.model),
    }
    state = {
        "model": {f"encoder.{k}": v for k, v in encoder.state_dict().items()},
        "callbacks": {"RunRecord": {"version": 1, "config": config}},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state": state}, path)
    (path.parent / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def lab(corpus_root, tmp_path_factory):
    root = tmp_path_factory.mktemp("lab") / "checkout"
    _convert(corpus_root, root / "data" / "shards", slice(0, 12))
    _checkpoint(root / "checkpoints" / "run" / "best.pt", "data/shards")
    return root


@pytest.fixture(scope="module")
def other_shards(corpus_root, tmp_path_factory):
    return _convert(corpus_root, tmp_path_factory.mktemp("other") / "shards", slice(12, 24))


@pytest.fixture
def no_checkout(monkeypatch):
    """The package's own checkout out of the anchors (it may hold a demo's data/shards)."""
    monkeypatch.setattr("stoicheia.inference.run_paths.checkout_root", lambda: None)


def _text_with_a_gap(shards: Path) -> str:
    """A text of 20 letters of the index's first long record with 3 of them hidden: its
    parallels include the record itself."""
    from stoicheia.inference.parallels import ParallelsIndex

    index = ParallelsIndex(shards / "parallels")
    text = index.text
    for r in range(index.records):
        a, b = index.record_span(r)
        run = text[a:b]
        if len(run) >= 30 and (run[:30] > 0).all():
            letters = "".join(A.LETTERS[int(c) - 1] for c in run[:20])
            return f"{letters[:8]}[...]{letters[11:]}"
    raise AssertionError("no record of 30 letters without a lacuna")


def _stub(source: Path, shard_root: str = "data/shards"):
    class Model:
        pass

    m = Model()
    m.source = str(source)
    m.config = {"data": {"shard_root": shard_root}}
    return m


def _par(notes: list[str]) -> list[str]:
    """The notes on the parallels (not the n-gram's)."""
    return [n for n in notes if "parallels" in n and "ngram.npz" not in n]


def _restore_json(argv, capsys) -> dict:
    from stoicheia.cli import main

    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_restore_gives_one_result_from_any_current_folder(lab, tmp_path, capsys, monkeypatch):
    ckpt = lab / "checkpoints" / "run" / "best.pt"
    text = _text_with_a_gap(lab / "data" / "shards")
    argv = ["restore", str(ckpt), "--device", "cpu", "--json", "--top-k", "2", text]
    monkeypatch.chdir(lab)
    here = _restore_json(argv, capsys)
    elsewhere_dir = tmp_path / "somewhere" / "else"
    elsewhere_dir.mkdir(parents=True)
    monkeypatch.chdir(elsewhere_dir)
    elsewhere = _restore_json(argv, capsys)
    assert here == elsewhere
    assert here["gaps"][0].get("parallels"), "the run's index is found from the checkpoint"
    assert all(str(lab) not in n and str(tmp_path) not in n for n in here["notes"])
    assert any("no ngram.npz beside the checkpoint" in n for n in here["notes"])


def test_a_moved_run_folder_finds_its_own_index(lab, tmp_path, no_checkout):
    from stoicheia.inference.benchmark.parallels import fusion_config
    from stoicheia.inference.restore.fusion_file import FUSION_FILE, FusionConfig, find_fusion

    old = tmp_path / "old"
    shutil.copytree(lab, old)
    run = old / "checkpoints" / "run"
    # what benchmark --save-fusion writes: the index relative to the run folder
    result = {
        "fusion": {
            "fused3": {
                "chosen": {"ngram": 0.5, "parallels": 0.5},
                "chosen_on": "3 gaps",
                "sweep": [
                    {
                        "weights": {"ngram": 0.5, "parallels": 0.5},
                        "figures": {"hidden": {"top1": 0.5, "cer": 0.5}},
                    }
                ],
            }
        }
    }
    config = fusion_config(result, old / "data" / "shards" / "parallels", beside=run)
    assert config.parallels_index == os.path.join("..", "..", "data", "shards", "parallels")
    config.save(run / FUSION_FILE)
    new = tmp_path / "new"
    shutil.copytree(old, new)
    found = find_fusion(_stub(new / "checkpoints" / "run" / "best.pt"))
    assert Path(found.parallels.folder).is_relative_to(new), "the copy reads its own index"
    assert found.parallels_source.startswith("data/shards/parallels, weight chosen on fused3")

    # a fusion.json of before, with an absolute path: the moved folder's own index first ...
    absolute = FusionConfig(0.5, 0.5, str(old / "data" / "shards" / "parallels"), "fused3")
    absolute.save(new / "checkpoints" / "run" / FUSION_FILE)
    found = find_fusion(_stub(new / "checkpoints" / "run" / "best.pt"))
    assert Path(found.parallels.folder).is_relative_to(new)
    # ... also once the old folder is gone
    shutil.rmtree(old)
    notes: list[str] = []
    found = find_fusion(_stub(new / "checkpoints" / "run" / "best.pt"), notes=notes)
    assert Path(found.parallels.folder).is_relative_to(new)
    assert not _par(notes)
    # nothing left to find: one note, and the restoration goes on (no error, no 422)
    shutil.rmtree(new / "data" / "shards" / "parallels")
    notes = []
    assert find_fusion(_stub(new / "checkpoints" / "run" / "best.pt"), notes=notes) is None
    said = _par(notes)
    assert len(said) == 1 and "is not there" in said[0] and "--parallels DIR" in said[0]
    assert str(tmp_path) not in said[0], "never the server's absolute path"


def test_an_index_of_other_shards_is_said_and_not_used_unless_given(
    lab, other_shards, tmp_path, no_checkout
):
    from stoicheia.data.parallels_layout import shards_provenance
    from stoicheia.inference.parallels import ParallelsIndex
    from stoicheia.inference.restore.fusion_file import FUSION_FILE, FusionConfig, find_fusion

    shards = lab / "data" / "shards"
    # provenance recorded at build, the same wherever the shards lie
    built = ParallelsIndex(shards / "parallels").manifest["shards"]
    assert built == shards_provenance(shards)
    copy = tmp_path / "copy"
    shutil.copytree(shards, copy)
    assert shards_provenance(copy)["fingerprint"] == built["fingerprint"]
    other = ParallelsIndex(other_shards / "parallels").manifest["shards"]
    assert other["fingerprint"] != built["fingerprint"]

    run = tmp_path / "run"
    run.mkdir()
    model = _stub(run / "best.pt", str(shards))
    FusionConfig(0.5, 0.5, str(other_shards / "parallels"), "fused3").save(run / FUSION_FILE)
    notes: list[str] = []
    assert find_fusion(model, notes=notes) is None
    said = _par(notes)
    assert len(said) == 1, notes
    assert "built from other shards" in said[0] and "not used" in said[0]
    assert other["fingerprint"][:19] in said[0] and built["fingerprint"][:19] in said[0]
    # given on the command line: used, and said
    notes = []
    found = find_fusion(model, parallels=str(other_shards / "parallels"), notes=notes)
    assert found.parallels is not None
    assert any("used as given (--parallels)" in n for n in notes)
    # the run's own index: no note
    FusionConfig(0.5, 0.5, str(shards / "parallels"), "fused3").save(run / FUSION_FILE)
    notes = []
    assert find_fusion(model, notes=notes).parallels is not None
    assert not _par(notes)


def test_serve_takes_parallels_and_its_notes_show_no_absolute_path(lab, tmp_path, no_checkout):
    from fastapi.testclient import TestClient

    from stoicheia.cli import build_parser
    from stoicheia.inference.loading import load_model
    from stoicheia.inference.restore.fusion_file import FUSION_FILE, FusionConfig
    from stoicheia.serve.app import create_app

    args = build_parser().parse_args(["serve", "x.pt", "--parallels", "idx"])
    assert args.parallels == "idx"
    moved = tmp_path / "moved"
    shutil.copytree(lab / "checkpoints" / "run", moved)  # the run folder alone, no shards
    FusionConfig(0.5, 0.5, str(tmp_path / "gone" / "data" / "shards" / "parallels"), "x").save(
        moved / FUSION_FILE
    )
    model = load_model(str(moved / "best.pt"), device="cpu")
    text = _text_with_a_gap(lab / "data" / "shards")
    got = TestClient(create_app(model)).post("/restore", json={"text": text, "top_k": 1})
    assert got.status_code == 200, got.text
    notes = got.json()["notes"]
    assert any("no parallels" in n and "is not there" in n for n in notes), notes
    assert all(str(tmp_path) not in n for n in notes), notes
    assert "parallels" not in got.json()["gaps"][0]
    assert TestClient(create_app(model)).get("/model").json()["parallels"] is False
    # serve --parallels DIR: that index
    app = create_app(model, parallels=str(lab / "data" / "shards" / "parallels"))
    client = TestClient(app)
    got = client.post("/restore", json={"text": text, "top_k": 1})
    assert got.status_code == 200 and got.json()["gaps"][0].get("parallels")
    assert all(str(tmp_path) not in n for n in got.json()["notes"])
    assert client.get("/source/0").status_code == 200
    assert client.get("/model").json()["parallels"] is True  # GET /model says the same


def test_parallels_outside_the_checkout_finds_the_index(lab, tmp_path, capsys, monkeypatch):
    from stoicheia.cli import main

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    text = _text_with_a_gap(lab / "data" / "shards").replace("[...]", "")
    # the run folder or a checkpoint names its index
    for given in (lab / "checkpoints" / "run", lab / "checkpoints" / "run" / "best.pt"):
        assert main(["parallels", text, "--index", str(given), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["passages"]
    # no --index: the checkout's data/shards/parallels, whatever the current folder
    monkeypatch.setattr("stoicheia.inference.run_paths.checkout_root", lambda: lab)
    assert main(["parallels", text, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["passages"]
    monkeypatch.setattr("stoicheia.inference.run_paths.checkout_root", lambda: elsewhere)
    assert main(["parallels", text]) == 2
    err = capsys.readouterr().err
    assert "no parallels index" in err and "give --index DIR" in err
