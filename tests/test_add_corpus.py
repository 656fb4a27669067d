"""``stoicheia add-corpus``: a user's EpiDoc corpus added to a run's shards, parallels index and
n-gram without training (stoicheia.data.add_tier, docs/parallels.md "A corpus you bring").

The shards: 24 I.Sicily inscriptions (those whose number ends in 4 held out as the dev set). The
user's corpus: 24 IIP files (one of them, bshe0142, a building inscription with a formula the
test restores) and ISic031001, the re-edition under a new number of ISic030004, which the shards
already hold: a twin."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from stoicheia.cli import main
from stoicheia.data.parallels_layout import same_shards, shards_provenance
from stoicheia.data.shards import convert
from stoicheia.data.splits import dev_digit

sys.path.insert(0, str(Path(__file__).parent))
from restore_stub import stub_model  # noqa: E402

TWIN, TWIN_OF = "ISic031001.xml", "ISic030004.xml"
FORMULA = "bshe0142.xml"


def _iip_files(corpus_root: Path) -> list[Path]:
    """bshe0142 and 23 more IIP files, three of them with the dev digit 4."""
    names = sorted(p.name for p in (corpus_root / "iip").glob("*.xml"))
    dev = [n for n in names if n.startswith("akko") and dev_digit(n) == 4][:3]
    rest = [n for n in names if n.startswith("caes") and dev_digit(n) != 4][:20]
    return [corpus_root / "iip" / n for n in [FORMULA, *dev, *rest]]


@pytest.fixture(scope="module")
def added(corpus_root, tmp_path_factory):
    """The shards before (a copy), after, the run folder and the command's output."""
    from stoicheia.inference.evaluate import train_ngram
    from stoicheia.inference.ngram import save_ngram

    tmp = tmp_path_factory.mktemp("addcorpus")
    isic = corpus_root / "isicily" / "inscriptions"
    base = sorted(isic.glob("ISic00*.xml"))[:20] + [
        isic / n for n in (TWIN_OF, "ISic003544.xml", "ISic003545.xml", "ISic001312.xml")
    ]
    shards = tmp / "shards"
    convert(
        {"bronze": base},
        shards,
        val_fraction=0.0,
        inscription_dev_digits=[4],
        workers=1,
        progress=False,
    )
    before = tmp / "before"
    shutil.copytree(shards, before)
    mine = tmp / "mine"
    mine.mkdir()
    for f in [*_iip_files(corpus_root), isic / TWIN]:
        shutil.copy(f, mine / f.name)
    run = tmp / "run"
    run.mkdir()
    weights = {"bronze": 1.0}
    config = {"data": {"shard_root": str(shards), "tier_weights": weights}}
    (run / "config.json").write_text(json.dumps(config), encoding="utf-8")
    ngram, info = train_ngram(shards, weights, 4)
    save_ngram(ngram, run / "ngram.npz", weight=0.5, trained_on=info)
    return {"shards": shards, "before": before, "mine": mine, "run": run, "weights": weights}


@pytest.fixture(scope="module")
def output(added, capsys_module):
    code = main(["add-corpus", str(added["mine"]), "--name", "mine", "--run", str(added["run"])])
    out = capsys_module()
    assert code == 0, out
    return out


@pytest.fixture(scope="module")
def capsys_module():
    """The stdout of the command (module-scoped fixtures cannot use capsys)."""
    import contextlib
    import io

    buf = io.StringIO()
    stack = contextlib.ExitStack()
    stack.enter_context(contextlib.redirect_stdout(buf))
    yield lambda: (stack.close(), buf.getvalue())[1]
    stack.close()


def _works(root: Path, tier: str, split: str) -> set[str]:
    from stoicheia.data.eval_sets import read_split_records

    try:
        return {r.work for r in read_split_records(root, split, [tier])}
    except FileNotFoundError:  # no record in that split
        return set()


def test_a_twin_of_a_text_in_the_shards_is_counted_and_not_added(added, output):
    stats = json.loads((added["shards"] / "stats.json").read_text(encoding="utf-8"))
    assert "twins: 1 text of mine already in the shards under another number, not added" in output
    assert f"mine/{TWIN} ~ bronze/{TWIN_OF}" in output
    (twin,) = stats["inscription_dev"]["twins_of_known"]
    assert twin["work"] == f"mine/{TWIN}" and twin["twin_of"] == [f"bronze/{TWIN_OF}"]
    assert twin["jaccard"] >= 0.75
    assert stats["tiers"]["mine"]["records_dropped"]["twin of a text already in the shards"] >= 1
    for split in ("train", "val", "inscription_dev"):
        assert TWIN not in _works(added["shards"], "mine", split)
    assert stats["added_tiers"]["mine"]["twins_of_known"] == 1
    assert stats["added_tiers"]["mine"]["trained_on"] is False
    # the tiers that were there are as they were
    old = json.loads((added["before"] / "stats.json").read_text(encoding="utf-8"))
    assert stats["tiers"]["bronze"] == old["tiers"]["bronze"]


def test_dev_texts_stay_out_of_the_index_and_the_ngram(added, output):
    from stoicheia.inference.evaluate import iter_train_chars, train_ngram
    from stoicheia.inference.ngram import LetterNgram, load_ngram
    from stoicheia.inference.parallels import ParallelsIndex

    shards = added["shards"]
    dev = _works(shards, "mine", "inscription_dev")
    expected = {p.name for p in added["mine"].glob("*.xml") if dev_digit(p.name) == 4}
    assert dev and dev <= expected  # those with a kept record
    train = _works(shards, "mine", "train")
    assert FORMULA in train and not dev & train
    index = ParallelsIndex(shards / "parallels")
    works = {index.work_name(int(index.rec_work[r])) for r in range(index.records)}
    assert FORMULA in works and not dev & works
    assert f"dev inscriptions of mine (dev digit 4): {len(dev)}" in output
    # the n-gram: the old counts plus the new tier's train letters, as if fitted on both
    model, meta = load_ngram(added["run"] / "ngram.npz")
    mine = list(iter_train_chars(shards, "mine"))
    old = list(iter_train_chars(shards, "bronze"))
    fitted = LetterNgram(4).fit(old + mine)
    assert model.letters == fitted.letters
    for m in range(2, 5):
        for a, b in zip(
            model._grams[m] + model._hist[m], fitted._grams[m] + fitted._hist[m], strict=True
        ):
            np.testing.assert_array_equal(a, b)
    assert meta["added_tiers"] == {"mine": model.letters - LetterNgram(4).fit(old).letters}
    assert meta["weight"] == 0.5
    # the benchmark's n-gram counts the added tier too (rebuilt: the same counts)
    again, info = train_ngram(shards, added["weights"], 4)
    assert info["letters"]["mine"] > 0
    np.testing.assert_array_equal(again._grams[4][1], model._grams[4][1])


def test_restore_cites_the_added_corpus_and_the_index_is_the_runs(added, output):
    from stoicheia.inference.parallels import ParallelsIndex
    from stoicheia.inference.restore import restore
    from stoicheia.inference.restore.gap_search import Fusion

    index = ParallelsIndex(added["shards"] / "parallels")
    text = "ἐπὶ Φλαουίου Ἀρτεμιδώρου μεγαλοπρεπεστάτου κόμιτος καὶ [........] καὶ τοῦτο τὸ ἔργον"
    res = restore(stub_model(), text, top_k=2, fusion=Fusion(None, 0.0, index, 0.9))
    top = res.to_json()["gaps"][0]["parallels"][0]
    assert top["fill"] == "αρχοντοσ"  # base letters
    assert top["parallels"][0]["label"].startswith("IIP bshe0142")
    # the index is of the run's shards, and of the shards as converted before the addition
    assert same_shards(index.manifest, added["shards"]) is True
    assert same_shards(index.manifest, added["before"]) is True
    assert index.manifest["shards"]["added_tiers"] == ["mine"]
    assert (
        index.manifest["shards"]["base_fingerprint"]
        == shards_provenance(added["before"])["fingerprint"]
    )
    assert "parallels index rebuilt" in output and "n-gram extended" in output


def test_bad_input_is_refused_naming_the_file_and_the_fix(added, output, tmp_path, capsys):
    shards = str(added["shards"])
    before = (added["shards"] / "stats.json").read_bytes()

    def refused(folder, name="other"):
        code = main(["add-corpus", str(folder), "--name", name, "--shards", shards])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        return err

    empty = tmp_path / "empty"
    empty.mkdir()
    assert f"{empty}: no .xml file" in refused(empty)
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "a.txt").write_text("μῆνιν ἄειδε θεά\n", encoding="utf-8")
    err = refused(texts)
    assert "no .xml file (it holds 1 other source files, not EpiDoc)" in err
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(added["mine"] / FORMULA, mixed / FORMULA)
    (mixed / "notes.txt").write_text("μῆνιν ἄειδε θεά\n", encoding="utf-8")
    assert f"{mixed / 'notes.txt'}" in refused(mixed) and "move them out" in refused(mixed)
    html = tmp_path / "html"
    html.mkdir()
    (html / "page.xml").write_text("<html><body>not EpiDoc</body></html>", encoding="utf-8")
    err = refused(html)
    assert "page.xml" in err and "no Greek record" in err
    assert "already holds a tier" in refused(added["mine"], name="mine")
    assert "already holds a tier" in refused(added["mine"], name="bronze")
    assert "letters, digits" in refused(added["mine"], name="my corpus")
    # nothing of a refused addition stays
    assert (added["shards"] / "stats.json").read_bytes() == before
    assert not (added["shards"] / "other").exists()
    assert not list(added["shards"].glob(".*.adding"))
