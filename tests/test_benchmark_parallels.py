"""The parallels in the benchmark: the ``parallels`` row (alone, backing off to the n-gram) and
the ``fused3`` family (network + n-gram + parallels, weights chosen on the selection half only),
their intervals against the n-gram and against fused, ``fusion.json`` written by the command and
read by restore, and the output as before without an index."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from stoicheia.inference.benchmark.parallels import (
    ParallelsCache,
    ParallelsDecoder,
    best_fused,
    fusion_config,
)
from stoicheia.inference.benchmark.protocols import Task
from stoicheia.inference.benchmark.run import ModelDecoder, NgramDecoder
from stoicheia.inference.ngram import LetterNgram
from stoicheia.inference.parallels import ParallelsIndex
from stoicheia.text import alphabet as A


@pytest.fixture(scope="module")
def hesiod(corpus_root, tmp_path_factory):
    """Shards of Hesiod (gold) with their parallels index beside them."""
    from stoicheia.data.shards import convert

    out = tmp_path_factory.mktemp("bpar") / "shards"
    convert(
        {"gold": [corpus_root / "perseus" / "Hesiod"]},
        out,
        val_fraction=0.0,
        max_record_letters=300,
        workers=1,
        progress=False,
    )
    return out


def _task(text: str, truth: str) -> Task:
    start = text.index("[")
    end = text.index("]") + 1
    return Task("hidden", "ISic000014.xml#1", text, start, end, 0, truth, True)


def test_parallels_row_gives_the_passages_fill_first_and_backs_off_to_the_ngram(hesiod):
    index = ParallelsIndex(hesiod / "parallels")
    letters = np.asarray(index.text[:4000]).astype(np.int64)
    # 80 letters of one record (0 separates the records in the index's text)
    a = next(i for i in range(0, len(letters) - 80, 10) if (letters[i : i + 80] > 0).all())
    s = "".join(A.LETTERS[c - 1] for c in letters[a : a + 80])
    text = s[:40] + "[.....]" + s[45:80]
    ngram = NgramDecoder(LetterNgram(3).fit([np.where(letters == 0, A.MASK, letters - 1)]))
    dec = ParallelsDecoder(ParallelsCache(ModelDecoder(None), index), ngram)
    cands, prob = dec(_task(text, s[40:45]))
    assert cands[0] == s[40:45] and 0 < prob <= 1
    assert len(cands) == 20 and len(set(cands)) == 20, "the n-gram fills the rest of the 20"
    # nothing in the index matches: the n-gram's answer, candidates and probability
    nowhere = _task("ζψζψζξψζξ[...]ξψζψξζψζ", "ααα")
    assert dec(nowhere) == ngram(nowhere)
    # without a back-off: no candidate
    assert ParallelsDecoder(ParallelsCache(ModelDecoder(None), index))(nowhere) == ([], 0.0)


def test_best_fused_and_the_fusion_file_come_from_the_selection_half():
    def fam(chosen, top1, cer):
        return {
            "chosen": chosen,
            "chosen_on": "5 gaps of the selection half",
            "sweep": [{"weights": chosen, "figures": {"hidden": {"top1": top1, "cer": cer}}}],
        }

    fusion = {
        "fused": fam({"ngram": 0.8}, 0.3, 0.5),
        "fused3": fam({"ngram": 0.6, "parallels": 0.9}, 0.4, 0.6),
    }
    assert best_fused(fusion) == "fused3"
    config = fusion_config({"fusion": fusion}, "/x/parallels")
    assert (config.ngram_weight, config.parallels_weight, config.parallels_index) == (
        0.6,
        0.9,
        "/x/parallels",
    )
    assert config.chosen_on.startswith("fused3 (ngram 0.6, parallels 0.9), 5 gaps")
    fusion["fused3"] = fam({"ngram": 0.6, "parallels": 0.9}, 0.3, 0.5)  # a tie: the simpler
    assert best_fused(fusion) == "fused"
    assert fusion_config({"fusion": fusion}, None).parallels_weight == 0.0
    assert best_fused({}) is None and fusion_config({}, None).ngram_weight == 0.0


def _convert(corpus_root, out, parallels_index=True):
    from stoicheia.data.shards import convert

    isic = corpus_root / "isicily" / "inscriptions"
    convert(
        # ISic000864 falls in the report half, ISic000874 in the selection half
        {"bronze": [isic / f"ISic000{n}.xml" for n in (864, 874, 635, 636, 640, 641, 795)]},
        out,
        val_fraction=0.0,
        inscription_dev_digits=[4],
        workers=1,
        progress=False,
        parallels_index=parallels_index,
    )
    return out


def _run(tmp_path, monkeypatch, shards, *more):
    from test_benchmark import _Stub

    import stoicheia.cli as cli
    from stoicheia.commands import benchmark as benchmark_command

    stub = _Stub(2)
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    stub.source = str(run / "best.pt")
    monkeypatch.setattr(benchmark_command, "load", lambda args, command: stub)
    out = tmp_path / "bench"
    args = ["benchmark", "stub.pt", "--shards", str(shards), "--out", str(out)]
    args += ["--spans-per-text", "2", "--ngram-order", "3", "--bootstrap", "50", *more]
    assert cli.main(args) == 0
    return stub, json.loads((out / "benchmark.json").read_text())


def test_the_command_adds_parallels_and_fused3_and_writes_fusion_json(
    tmp_path, corpus_root, monkeypatch, capsys
):
    from stoicheia.inference.restore import restore
    from stoicheia.inference.restore.fusion_file import FUSION_FILE, FusionConfig, find_fusion

    shards = _convert(corpus_root, tmp_path / "shards")
    stub, res = _run(
        tmp_path,
        monkeypatch,
        shards,
        "--protocols",
        "hidden",
        "supplements",
        "--fused3-weights",
        "0.5,0.9/0.4,1",
        "--save-ngram",  # the old name still writes both files
    )
    printed = capsys.readouterr().out
    assert f"parallels: {shards / 'parallels'}" in printed
    # the index's letters as restore counts them (separators between records left out)
    man = json.loads((shards / "parallels" / "manifest.json").read_text(encoding="utf-8"))
    assert f"training records, {man['letters']:,} letters)" in printed
    assert man["letters"] != man["slots"]
    for p in ("hidden", "supplements"):
        assert _rows(res, p) == [
            "model",
            "ngram",
            "parallels",
            "fused",
            "fused3",
        ]
        rep = res["protocols"][p]["views"]["report"]
        for pair in ("fused3-ngram", "parallels-ngram", "fused3-fused", "parallels-fused"):
            d = rep["differences"][pair]["top1"]
            a, b = pair.split("-")
            figs = rep["decoders"]
            assert d["diff"] == pytest.approx(figs[a]["top1"] - figs[b]["top1"])
            # one inscription in the report half: no interval; else one around the difference
            assert d["low"] is None or d["low"] <= d["diff"] <= d["high"]
        bands = rep["decoders"]["model"]["by_length"]
        for name in ("parallels", "fused3"):
            assert rep["decoders"][name]["by_length"].keys() == bands.keys()
    # fused3 swept on the selection half only: 2 hidden spans and [Μην] of ISic000874
    f3 = res["fusion"]["fused3"]
    assert f3["axes"] == {"ngram": [0.5, 0.9], "parallels": [0.4, 1.0]} and len(f3["sweep"]) == 4
    assert all(
        [e["figures"][p]["gaps"] for p in ("hidden", "supplements")] == [2, 1] for e in f3["sweep"]
    )
    assert f3["chosen_on"].startswith("3 gaps of the selection half")
    assert res["parallels"]["index"] == str((shards / "parallels").resolve())
    # fusion.json beside the checkpoint: the best fused decoder on the selection half
    config = FusionConfig.load(tmp_path / "run" / FUSION_FILE)
    best = best_fused(res["fusion"])
    assert config.ngram_weight == res["fusion"][best]["chosen"]["ngram"]
    assert config.parallels_weight == res["fusion"][best]["chosen"].get("parallels", 0.0)
    # relative to the run folder: the run and its shards can move together
    assert config.parallels_index == os.path.join("..", "shards", "parallels")
    assert (tmp_path / "run" / "ngram.npz").exists()
    # ... and restore reads it by default
    found = find_fusion(stub)
    assert found.parallels is not None and found.parallels_weight == config.parallels_weight
    assert Path(found.parallels.folder) == (shards / "parallels").absolute()
    got = restore(stub, "καὶ τὸν δῆμον [....] ἔδωκε", top_k=2, fusion="auto")
    assert got.gaps[0].parallels is not None


def _rows(res: dict, protocol: str) -> list[str]:
    """The protocol's decoder rows but the ablations ``<family> without network``, each
    checked to be there exactly where its family's chosen point weighs the network."""
    rows = list(res["protocols"][protocol]["decoders"])
    for name, fam in res["fusion"].items():
        assert (f"{name} without network" in rows) == (fam["chosen"].get("ngram", 1.0) < 1.0)
    return [r for r in rows if not r.endswith(" without network")]


def test_without_an_index_the_benchmark_is_as_before(tmp_path, corpus_root, monkeypatch, capsys):
    from stoicheia.inference.restore.fusion_file import FUSION_FILE, FusionConfig

    shards = _convert(corpus_root, tmp_path / "shards", parallels_index=False)
    _, res = _run(tmp_path, monkeypatch, shards, "--protocols", "hidden", "--save-fusion")
    assert "parallels:" not in capsys.readouterr().out
    assert _rows(res, "hidden") == ["model", "ngram", "fused"]
    assert list(res["fusion"]) == ["fused"] and "parallels" not in res
    assert [
        d
        for d in res["protocols"]["hidden"]["views"]["report"]["differences"]
        if not d.endswith(" without network")
    ] == ["fused-ngram", "model-ngram", "model-fused"]
    config = FusionConfig.load(tmp_path / "run" / FUSION_FILE)
    assert config.parallels_weight == 0.0 and config.parallels_index is None
    assert config.ngram_weight == res["fusion"]["fused"]["chosen"]["ngram"]
    # an index given and present elsewhere, '' for none even where one is beside the shards
    with_index = _convert(corpus_root, tmp_path / "with", parallels_index=True)
    _, res = _run(tmp_path, monkeypatch, with_index, "--protocols", "hidden", "--parallels", "")
    assert _rows(res, "hidden") == ["model", "ngram", "fused"]
    import stoicheia.cli as cli

    bad = ["benchmark", "stub.pt", "--shards", str(shards), "--out", str(tmp_path / "b")]
    assert cli.main(bad + ["--parallels", str(tmp_path / "nowhere")]) == 2
    assert "stoicheia index" in capsys.readouterr().err


def test_the_parallels_decoder_lists_the_fills_by_share_as_restore_prints_them(hesiod):
    """The search ranks fills by context matched; a fill of less context but many more sources
    can hold the larger share. The decoder's first candidate (the benchmark's top-1) is the fill
    of the largest share, the one restore's whole-text ranking prints first (before, the page
    showed `[ἱεροῦ]` 17 % while the gap's list began with `δωκεν` 2 %)."""
    from stoicheia.inference.benchmark.run import parse_task
    from stoicheia.inference.parallels.search import FillParallels, GapParallels
    from stoicheia.inference.restore.decoders import gap_candidates
    from stoicheia.inference.restore.gap_search import Fusion

    def ids(s: str) -> np.ndarray:
        return np.array([A.LETTERS.index(c) for c in s], dtype=np.int64)

    long_context = FillParallels(ids("αβγ"), 20, (10, 10), 1, 0, weight=1.0, prob=0.1)
    many_sources = FillParallels(ids("δεζ"), 12, (6, 6), 9, 0, weight=9.0, prob=0.9)
    found = GapParallels([long_context, many_sources], ids("καιτον"), ids("εδωκε"), (3,))
    items, gaps, g = parse_task(_task("καὶ τὸν [...] ἔδωκε", "δεζ"))
    cands = gap_candidates("parallels", None, items, gaps, {}, g, 5, Fusion(None, 0.0), found=found)
    assert [c.text() for c in cands[:2]] == ["δεζ", "αβγ"]
    assert cands[0].prob == pytest.approx(0.9) and cands[0].score > cands[1].score
