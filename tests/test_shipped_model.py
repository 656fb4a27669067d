"""The shipped model (stoicheia/base_model, docs/model-card.md): restore with no CHECKPOINT,
its provenance against the card, the lone positional read as text or checkpoint, the parallels
index built on first use (`stoicheia parallels --build`) on a small corpus, and `stoicheia export
RUN --ship` on a tiny run the tests train."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from stoicheia.cli import main
from stoicheia.inference import run_paths, shipped
from stoicheia.inference.export import shipping

sys.path.insert(0, str(Path(__file__).parent))
from tiny import train_tiny  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = "ἔδοξε τῇ βουλῇ καὶ τῷ [....]"
NOTE = "no CHECKPOINT given: the shipped model"


@pytest.fixture
def bundle(tmp_path, monkeypatch):
    """A copy of the shipped bundle standing in for the package's, out of reach of any
    data/shards of this checkout (the anchors then are the copy's folders and STOICHEIA_HOME)."""
    folder = tmp_path / "pkg" / "stoicheia" / "base_model"
    shutil.copytree(shipped.SHIPPED_DIR, folder)
    monkeypatch.setattr(shipped, "SHIPPED_DIR", folder)
    monkeypatch.setattr(run_paths, "checkout_root", lambda: None)
    monkeypatch.setenv("STOICHEIA_HOME", str(tmp_path / "home"))
    return folder


def test_the_bundle_is_small_and_whole():
    """The package holds the model restore needs, a few MB, each file as provenance.json says."""
    prov = shipped.read_provenance()
    names = {p.name for p in shipped.SHIPPED_DIR.iterdir()}
    assert names == set(shipping.BUNDLE_FILES) | {shipped.PROVENANCE}
    total = sum(p.stat().st_size for p in shipped.SHIPPED_DIR.iterdir())
    assert total < 8e6, f"the bundle is {total / 1e6:.1f} MB"
    for name, facts in prov["files"].items():
        assert shipping._sha256(shipped.SHIPPED_DIR / name) == facts["sha256"], (
            f"stoicheia/base_model/{name} differs from provenance.json: ship the model with "
            "`stoicheia export RUN --ship`, never by copying files"
        )
    assert prov["check"]["same_top5"] is True
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '"stoicheia" = ["base_model/*"]' in pyproject


def test_the_model_card_quotes_the_shipped_model():
    """docs/model-card.md's generated part is the one of the bundle's provenance: a model
    swapped without its card fails here."""
    card = (REPO / "docs" / "model-card.md").read_text(encoding="utf-8")
    prov = shipped.read_provenance()
    assert shipping.card_block(prov) in card, (
        "docs/model-card.md does not quote stoicheia/base_model/provenance.json: ship the model "
        "with `stoicheia export RUN --ship`, which rewrites the card's figures"
    )
    assert f"step **{prov['step']}**" in card
    assert f"**{prov['dev_bits_per_char']:.3f}**" in card


def test_the_model_card_gives_no_training_time_but_the_provenances():
    """The card called the shipped model "a 10-minute recipe" while its provenance says the
    run took 30.7 minutes: the card's prose names no minutes of its own for the model (no
    "N-minute"), only the generated line's, which is the provenance's wall clock."""
    card = (REPO / "docs" / "model-card.md").read_text(encoding="utf-8")
    prov = shipped.read_provenance()
    assert re.findall(r"\d+-minute", card) == []
    assert f"training: {prov['wall_seconds'] / 60:.1f} minutes of wall clock" in card


def test_restore_with_no_checkpoint_uses_the_shipped_model(bundle, capsys):
    """One note on stderr names the shipped model and its card; the gap gets a fill of its
    width; without the index, one note names the command that builds it."""
    assert main(["restore", EXAMPLE, "--json", "--top-k", "3"]) == 0
    out, err = capsys.readouterr()
    assert err.count(NOTE) == 1 and shipped.CARD in err
    result = json.loads(out)
    assert len(result["gaps"]) == 1 and result["gaps"][0]["min_letters"] == 4
    assert len(result["restorations"]) == 3
    for r in result["restorations"]:
        assert len(r["letters"][0]) == 4 and r["text"].startswith("ἔδοξε τῇ βουλῇ καὶ τῷ [")
    build = [n for n in result["notes"] if shipped.BUILD_COMMAND in n]
    assert len(build) == 1 and build[0].startswith("no parallels")
    assert build[0] == shipped.missing_index_note()


def test_the_missing_index_note_names_the_one_command_its_cost_and_its_gain():
    """A first restore with the shipped model gives `[περι]` at 1 %: the one note says the single
    command that improves it, what building costs (why restore does not build it unasked), and
    what the parallels brought on the shipped model's own benchmark."""
    prov = {
        "benchmark": {
            "protocols": {
                "hidden": {"decoders": {"fused": {"top1": 0.2037}, "ngram": {"top1": 0.1389}}}
            }
        }
    }
    note = shipped.missing_index_note(prov)
    assert note.count("`") == 2 and f"run `{shipped.BUILD_COMMAND}` once" in note
    assert shipped.BUILD_COST in note and "too slow to build unasked" in note
    assert "right fill first for 20 % of hidden spans, the letter n-gram alone for 14 %" in note
    # without benchmark figures: the command and the cost, no figure made up
    bare = shipped.missing_index_note({})
    assert shipped.BUILD_COMMAND in bare and "%" not in bare


def test_batch_takes_the_shipped_model_too(bundle, tmp_path, capsys):
    """--batch with no CHECKPOINT answers every line; the note is said once."""
    texts = tmp_path / "texts.txt"
    texts.write_text(f"{EXAMPLE}\nκαὶ [..] τοῦ δήμου\n", encoding="utf-8")
    assert main(["restore", "--batch", str(texts), "--json", "--top-k", "1"]) == 0
    out, err = capsys.readouterr()
    assert err.count(NOTE) == 1
    assert [json.loads(line)["line"] for line in out.splitlines()] == [1, 2]


def test_epidoc_without_the_index_says_why_so_few_gaps_are_written(
    bundle, tmp_path, corpus_root, capsys
):
    """restore --epidoc with the shipped model before its parallels index is built: the
    floors were chosen with the parallels, so ISic001255 had every gap left, and the summary
    line alone did not say why; the note that names the command now follows it, once."""
    src = corpus_root / "isicily" / "inscriptions" / "ISic001255.xml"
    assert main(["restore", "--epidoc", str(src), "--out", str(tmp_path / "out")]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].startswith("restore --epidoc: 1 files (1 written")
    assert lines[1:] == [f"({shipped.missing_index_note()})"]
    assert err.count(NOTE) == 1
    # a run whose every file is refused decoded nothing: no note of what it went without
    plain = tmp_path / "plain.xml"
    plain.write_text("not a file of XML\n", encoding="utf-8")
    assert main(["restore", "--epidoc", str(plain), "--out", str(tmp_path / "out2")]) == 2
    out, _ = capsys.readouterr()
    assert out.splitlines() == [out.splitlines()[0]] and "1 refused" in out


@pytest.mark.parametrize(
    "argv, said",
    [
        (
            ["restore", "checkpoints/typo/best.pt", EXAMPLE],
            "checkpoints/typo/best.pt: no such file or folder",
        ),
        (["restore", "checkpoints/typo"], "the following arguments are required: TEXT"),
        (["restore", "ἔδοξε", "τῇ"], 'goes in quotes: stoicheia restore "ἔδοξε τῇ"'),
        (["restore", "ἔδοξε", "τῇ", "βουλῇ"], 'stoicheia restore "ἔδοξε τῇ βουλῇ"'),
        (["serve", "no/such/run"], "no/such/run: no such file or folder"),
    ],
)
def test_a_positional_that_is_neither_path_nor_text_is_refused(argv, said, bundle, capsys):
    """A missing checkpoint is named (by the loader, after the text and options are checked),
    never restored as a text; Greek words typed without quotes are told to be quoted."""
    try:
        code = main(argv)
    except SystemExit as stop:  # a checkpoint that does not load ends the command so
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert said in err and NOTE not in err


@pytest.mark.parametrize(
    "text", ["senatus populusque [....]anus", "edoxe tei boulei kai toi [....]", "[....]"]
)
def test_a_lone_text_without_greek_is_refused_as_a_text(text, bundle, capsys):
    """A Latin or transliterated text (Leiden brackets, several words) is the TEXT, refused
    for having no Greek letter: not taken for a missing CHECKPOINT ("TEXT required")."""
    assert main(["restore", text]) == 2
    err = capsys.readouterr().err
    assert f"no Greek letter in {text!r}" in err and "required: TEXT" not in err
    # one error line: the shipped model's note waits for the model to load, which never comes
    assert [ln for ln in err.splitlines() if ln.strip()] == [
        ln for ln in err.splitlines() if "error:" in ln
    ]


def test_a_text_with_nothing_to_restore_is_one_line_before_the_shipped_model_loads(bundle, capsys):
    assert main(["restore", "καὶ τῷ δήμῳ"]) == 2
    err = capsys.readouterr().err
    assert NOTE not in err and err.count("\n") == 1 and "nothing to restore" in err


def test_parallels_build_converts_and_indexes_once(bundle, tmp_path, corpus_root, capsys):
    """`stoicheia parallels --build` replays the bundle's conversion on the corpus (here a
    small one: Hesiod and 30 Greek I.Sicily inscriptions), indexes it under STOICHEIA_HOME, says so
    when run again, and restore with the shipped model then fuses the parallels in."""
    small = tmp_path / "corpus"
    (small / "isic").mkdir(parents=True)
    (small / "Hesiod").symlink_to(corpus_root / "perseus" / "Hesiod")
    greek = [
        f
        for f in sorted((corpus_root / "isicily" / "inscriptions").glob("ISic*.xml"))[:200]
        if 'xml:lang="grc"' in f.read_text(encoding="utf-8")
    ]
    for f in greek[:30]:  # copied into the test's folder: the readers skip linked files
        shutil.copyfile(f, small / "isic" / f.name)
    prov = json.loads((bundle / "provenance.json").read_text(encoding="utf-8"))
    prov["convert"] = dict(
        prov["convert"], inputs=[["gold", "Hesiod"], ["bronze", "isic"]], val_works=[]
    )
    (bundle / "provenance.json").write_text(json.dumps(prov), encoding="utf-8")

    assert main(["parallels", "--build", "--corpus", str(tmp_path / "nowhere")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert main(["parallels", "--build", "--corpus", str(small), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    index = tmp_path / "home" / "data" / "shards" / "parallels"
    assert (index / "manifest.json").is_file()
    assert "not those the shipped model was trained on" in out  # another corpus: said
    assert main(["parallels", "--build"]) == 0
    assert "built already" in capsys.readouterr().out

    assert main(["restore", "Ἔργα καὶ [....]ραι", "--json", "--top-k", "1"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert not [n for n in result["notes"] if "no parallels" in n]
    assert main(["parallels", "ἀθανάτων μακάρων"]) == 0  # the default index: the built one
    assert "1. " in capsys.readouterr().out


def test_export_ship_writes_the_bundle_of_a_run(small_shards, tmp_path, capsys):
    """`stoicheia export RUN --ship OUT` on a tiny run: the bundle restore reads, with the
    provenance of the run (step, held-out figures, shards fingerprint, conversion)."""
    from stoicheia.data.parallels_layout import shards_provenance
    from stoicheia.inference.loading import load_model

    run = train_tiny(
        small_shards,
        tmp_path / "runs",
        "ship",
        "train.nominal_steps=4",
        "train.max_steps=4",
        "train.save_interval=4",
        "data.eval_records=4",
    )
    out = tmp_path / "bundle"
    assert main(["export", str(run), str(out), "--ship"]) == 2  # no n-gram nor fusion weights
    assert "no ngram.npz, fusion.json" in capsys.readouterr().err
    for name in ("ngram.npz", "fusion.json"):  # the letter n-gram does not depend on the run
        shutil.copyfile(shipped.SHIPPED_DIR / name, run / name)
    assert main(["export", str(run), str(out), "--ship", "--shards", str(small_shards)]) == 0
    said = capsys.readouterr().out
    assert "weights give" in said and "not updated" in said  # the check said; the card kept
    prov = shipped.read_provenance(out)
    assert prov["run_name"] == "ship" and prov["step"] == 4
    assert prov["checkpoint"] in ("best.pt", "final.pt")
    assert prov["shards"]["fingerprint"] == shards_provenance(small_shards)["fingerprint"]
    assert [t for t, _ in prov["convert"]["inputs"]] == ["gold", "gold", "silver"]
    assert isinstance(prov["holdout_bits_per_char"], float) and prov["dev_bits_per_char"] is None
    assert {p.name for p in out.iterdir()} == set(shipping.BUNDLE_FILES) | {shipped.PROVENANCE}
    model = load_model(str(out), device="cpu")
    assert model.step == 4
    assert str(tmp_path) not in (out / "config.json").read_text(encoding="utf-8")
    assert main(["restore", str(out), EXAMPLE, "--top-k", "1"]) == 0  # RUN "TEXT" still works
    assert NOTE not in capsys.readouterr().err


def test_serve_with_no_checkpoint_starts_the_page_with_the_shipped_model(
    bundle, monkeypatch, capsys
):
    """`stoicheia serve` alone loads the shipped model (one note) and hands its page to
    uvicorn (stubbed here: the test starts no server)."""
    import socket

    import uvicorn

    started = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: started.update(app=app, **kw))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["serve", "--port", str(port), "--device", "cpu"]) == 0
    out, err = capsys.readouterr()
    assert err.count(NOTE) == 1
    assert f"serving {bundle} (step {shipped.read_provenance()['step']})" in out
    assert started["port"] == port
    # the page's /model says it is the shipped model (the page then names it so)
    from fastapi.testclient import TestClient

    info = TestClient(started["app"]).get("/model").json()
    assert info["shipped"] is True and info["step"] == shipped.read_provenance()["step"]


def test_load_model_with_no_path_is_the_shipped_model(bundle, monkeypatch):
    """The Python API as the command line: ``load_model()`` loads the shipped model, and a
    checkout without one gets the error that says how to ship or what to give."""
    from stoicheia.inference.loading import ModelLoadError, load_model

    model = load_model(device="cpu")
    assert Path(model.source) == bundle
    monkeypatch.setattr(shipped, "SHIPPED_DIR", bundle.parent / "none")
    with pytest.raises(ModelLoadError, match="no model given and no shipped model"):
        load_model(device="cpu")
