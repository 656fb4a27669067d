"""scripts/shard_view.py: a view of converted shards without the tiers ``stoicheia add-corpus``
added, for the benchmark's before and after on the same dev set (docs/measuring-restoration.md,
"What the new corpora add, per corpus").

The shards: 12 I.Sicily inscriptions as bronze (those whose number ends in 4 held out as the
dev set), then 8 IIP files added as the tier ``iip`` (two of them dev inscriptions)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from stoicheia.data.add_tier import add_tier
from stoicheia.data.shards import convert
from stoicheia.data.splits import dev_digit
from stoicheia.inference.benchmark.protocols import read_dev_texts
from stoicheia.inference.evaluate import train_ngram

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from shard_view import ViewError, main, make_view  # noqa: E402


@pytest.fixture(scope="module")
def shards(corpus_root, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("view")
    isic = sorted((corpus_root / "isicily" / "inscriptions").glob("ISic00*.xml"))[:12]
    out = tmp / "shards"
    convert({"bronze": isic}, out, val_fraction=0.0, inscription_dev_digits=[4], progress=False)
    names = sorted(p.name for p in (corpus_root / "iip").glob("caes*.xml"))
    dev = [n for n in names if dev_digit(n) == 4][:2]
    rest = [n for n in names if dev_digit(n) != 4][:6]
    mine = tmp / "iip"
    mine.mkdir()
    for n in dev + rest:
        (mine / n).write_bytes((corpus_root / "iip" / n).read_bytes())
    add_tier(out, "iip", mine)
    return out


def _stats(root: Path) -> dict:
    return json.loads((root / "stats.json").read_text(encoding="utf-8"))


def test_view_leaves_the_tier_out_of_index_and_ngram_but_keeps_the_dev_set(shards, tmp_path):
    view = tmp_path / "before"
    record = make_view(shards, view, ["iip"])
    assert (view / "bronze").is_symlink() and not (view / "iip").exists()
    assert (view / "bronze").resolve() == (shards / "bronze").resolve()
    full, mine = _stats(shards), _stats(view)
    assert list(mine["tiers"]) == ["bronze"] and "iip" not in mine.get("added_tiers", {})
    assert "iip" in full["added_tiers"]  # the shards themselves untouched
    assert mine["inscription_dev"] == full["inscription_dev"]
    assert {w["tier"] for w in mine["inscription_dev"]["works"]} == {"bronze", "iip"}
    # the benchmark restores the same dev texts on the view as on the shards
    assert [t.id for t in read_dev_texts(view)] == [t.id for t in read_dev_texts(shards)]
    # the view's index and n-gram hold bronze only, as the shards did before iip was added
    manifest = json.loads((view / "parallels" / "manifest.json").read_text(encoding="utf-8"))
    whole = json.loads((shards / "parallels" / "manifest.json").read_text(encoding="utf-8"))
    assert list(record["index"]["per_tier"]) == ["bronze"]
    assert manifest["per_tier"]["bronze"] == whole["per_tier"]["bronze"]
    assert manifest["letters"] == whole["letters"] - whole["per_tier"]["iip"]["letters"] > 0
    weights = {"bronze": 1.0}
    assert set(train_ngram(view, weights, 3)[1]["letters"]) == {"bronze"}
    assert set(train_ngram(shards, weights, 3)[1]["letters"]) == {"bronze", "iip"}
    on_disk = json.loads((view / "view.json").read_text(encoding="utf-8"))
    assert on_disk == record and record["left_out"] == ["iip"]
    assert record["dev_works"] == len(full["inscription_dev"]["works"])


def test_a_view_is_replaced_and_anything_else_refused(shards, tmp_path, capsys):
    view = tmp_path / "v"
    make_view(shards, view, ["iip"], index=False)
    assert not (view / "parallels").exists()
    make_view(shards, view, [], index=False)  # the same folder again: replaced
    assert (view / "iip").is_symlink() and list(_stats(view)["tiers"]) == ["bronze", "iip"]
    assert (shards / "iip" / "train").is_dir()  # replacing removed the link, not the tier
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(ViewError, match="not a view made by scripts/shard_view.py"):
        make_view(shards, other, ["iip"])
    assert (other / "notes.txt").read_text(encoding="utf-8") == "keep me"
    with pytest.raises(ViewError, match="no tier cretan; its tiers are bronze, iip"):
        make_view(shards, tmp_path / "w", ["cretan"])
    with pytest.raises(ViewError, match="every tier left out"):
        make_view(shards, tmp_path / "w", ["bronze", "iip"])
    with pytest.raises(ViewError, match="replace the shards themselves"):
        make_view(shards, shards, ["iip"])
    assert main([str(shards), str(tmp_path / "w"), "--leave-out", "cretan"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("shard_view: ") and len(err.strip().splitlines()) == 1
    assert main([str(shards), str(view), "--leave-out", "iip", "--no-index"]) == 0
    out = capsys.readouterr().out
    assert "tiers bronze; left out iip; dev set kept whole" in out
