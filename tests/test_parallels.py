"""The parallels index and search (docs/parallels.md) on a small real corpus the tests convert:
Hesiod (one work held out whole) and 40 I.Sicily inscriptions (those numbered ...4 held out as the
inscription dev set)."""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from stoicheia.data.parallels_index import IndexBuildError, build_index
from stoicheia.data.shards import convert, decode_planes
from stoicheia.inference.parallels import ParallelsIndex, gap_parallels
from stoicheia.inference.parallels.passages import shared_passages
from stoicheia.text import alphabet as A

sys.path.insert(0, str(Path(__file__).parent))
from restore_stub import stub_model  # noqa: E402

HELD_WORK = "hes.sh_gk.xml"


@pytest.fixture(scope="module")
def corpus(corpus_root, tmp_path_factory):
    isic = sorted((corpus_root / "isicily" / "inscriptions").glob("ISic*.xml"))[:40]
    out = tmp_path_factory.mktemp("par") / "shards"
    convert(
        {"gold": [corpus_root / "perseus" / "Hesiod"], "bronze": isic},
        out,
        val_fraction=0.2,
        val_works=[HELD_WORK],
        max_record_letters=300,
        inscription_dev_digits=[4],
        workers=1,
        progress=False,
    )
    return out


def _records(root, split):
    """{(tier, record id): (work, letters str with '#' at lacunae)} of one split, parts joined."""
    from streaming import StreamingDataset

    from stoicheia.data.shm import retry_prefix_race

    out: dict = {}
    for tier in ("gold", "bronze"):
        if not (root / tier / split / "index.json").exists():
            continue
        # the node-wide prefix lock, as the index builder takes it: another job on the machine
        # may be building a StreamingDataset at the same moment
        local = str(root / tier / split)
        ds = retry_prefix_race(
            lambda local=local: StreamingDataset(local=local, batch_size=1, shuffle=False)
        )
        for i in range(ds.num_samples):
            s = ds.get_item(i)
            p = decode_planes(s)
            s_letters = "".join(
                "#" if lac else A.LETTERS[c] for c, lac in zip(p.chars, p.lacuna, strict=True)
            )
            key = (tier, str(s["id"]))
            work, before = out.get(key, (str(s["work"]), ""))
            out[key] = (work, before + s_letters)
    return out


def _ids(s: str) -> np.ndarray:
    return np.array([A.LETTERS.index(c) for c in s], dtype=np.int64)


def test_the_index_finds_every_occurrence_a_scan_finds_and_none_across_records(corpus):
    index = ParallelsIndex(corpus / "parallels")
    train = _records(corpus, "train")
    assert index.records == len(train)
    rng = random.Random(0)
    keys = sorted(train)
    patterns = []
    for _ in range(60):
        work, s = train[rng.choice(keys)]
        n = rng.randint(2, 9)
        if len(s) > n:
            i = rng.randrange(len(s) - n)
            patterns.append(s[i : i + n])
    # patterns made of the end of one record and the start of the next: never one match
    for a, b in zip(keys[:20], keys[1:21], strict=True):
        patterns.append(train[a][1][-4:] + train[b][1][:4])
    patterns += ["ααααα", "ζζ", "ωψ"]
    for pat in patterns:
        if "#" in pat:
            continue
        want = set()
        for (tier, rid), (_, s) in train.items():
            start = s.find(pat)
            while start >= 0:
                want.add((tier, rid, start))
                start = s.find(pat, start + 1)
        lo, hi = index.find(_ids(pat))
        got = set()
        for pos in np.asarray(index.sa[lo:hi]).tolist():
            src = index.source(pos)
            got.add((src.tier, src.record, src.offset))
        assert got == want, pat


def test_no_evaluation_text_is_indexed(corpus):
    index = ParallelsIndex(corpus / "parallels")
    stats = json.loads((corpus / "stats.json").read_text())
    dev_works = {w["work"] for w in stats["inscription_dev"]["works"]}
    assert dev_works, "the small corpus has dev inscriptions"
    held = _records(corpus, "val") | _records(corpus, "inscription_dev")
    assert any(w == HELD_WORK for w, _ in held.values())
    indexed_ids = {index.record_id(r) for r in range(index.records)}
    indexed_works = {index.work_name(w) for w in range(index.manifest["works"])}
    assert not indexed_ids & {rid for _, rid in held}
    assert not indexed_works & (dev_works | {HELD_WORK})
    # and the held-out texts' own long stretches are not in it (unless a train text has them)
    train_text = "|".join(s for _, s in _records(corpus, "train").values())
    checked = 0
    for _, s in held.values():
        for piece in s.split("#"):
            if len(piece) >= 30 and piece[:30] not in train_text:
                assert index.count(_ids(piece[:30])) == 0
                checked += 1
    assert checked > 10


def test_the_build_refuses_a_train_record_of_a_held_out_work(corpus, tmp_path):
    copy = tmp_path / "shards"
    shutil.copytree(corpus, copy, ignore=shutil.ignore_patterns("parallels"))
    stats = json.loads((copy / "stats.json").read_text())
    index = ParallelsIndex(corpus / "parallels")
    stats["val_works"].append(index.work_name(0))
    (copy / "stats.json").write_text(json.dumps(stats))
    with pytest.raises(IndexBuildError, match="inconsistent"):
        build_index(copy, progress=False)


def test_stoicheia_index_rebuilds_the_same_arrays(corpus, tmp_path):
    from stoicheia.cli import main

    assert main(["index", str(corpus), "--out", str(tmp_path / "again")]) == 0
    for name in ("text", "sa", "look", "flow", "rec_start", "rec_work"):
        a = np.load(corpus / "parallels" / f"{name}.npy")
        b = np.load(tmp_path / "again" / f"{name}.npy")
        assert np.array_equal(a, b), name


@pytest.mark.parametrize("widths", ["fixed", "range", "unknown"])
def test_a_gap_is_filled_by_its_own_passage_for_fixed_range_and_unknown_widths(corpus, widths):
    index = ParallelsIndex(corpus / "parallels")
    train = _records(corpus, "train")
    rng = random.Random(1)
    keys = [k for k in sorted(train) if len(train[k][1]) > 200]
    found = 0
    for key in [rng.choice(keys) for _ in range(8)]:
        s = train[key][1]
        w = rng.randint(3, 9)
        i = rng.randrange(30, len(s) - w - 30)
        if "#" in s[i - 30 : i + w + 30]:
            continue
        ws = {"fixed": (w,), "range": range(w - 2, w + 3), "unknown": range(1, 21)}[widths]
        g = gap_parallels(index, _ids(s[i - 30 : i]), _ids(s[i + w : i + w + 30]), ws)
        fills = {f.text(): f for f in g.fills}
        assert s[i : i + w] in fills
        best = fills[s[i : i + w]]
        assert best.context == 60 and g.fills[0].context == 60
        assert key[1] in {p.source.record for p in best.parallels}
        assert all(len(f.letters) in tuple(ws) for f in g.fills)
        found += 1
    assert found >= 4


def test_a_lacuna_ends_the_context_and_matches_stay_in_one_record(corpus):
    index = ParallelsIndex(corpus / "parallels")
    train = _records(corpus, "train")
    key = next(k for k in sorted(train) if k[0] == "gold" and len(train[k][1]) > 100)
    s = train[key][1]
    left = _ids(s[20:50])
    cut = np.concatenate([_ids("ζζζζζζζζ"), [A.MASK], left])  # the lacuna hides the ζ's
    right = _ids(s[55:85])
    g1 = gap_parallels(index, left, right, (5,))
    g2 = gap_parallels(index, cut, right, (5,))
    assert [f.text() for f in g1.fills] == [f.text() for f in g2.fills]
    assert len(g2.left) == 30
    for f in g1.fills:
        for p in f.parallels:
            r0, r1 = index.record_span(p.source.record_index)
            assert r0 <= p.pos - p.left and p.pos + p.width + p.right <= r1


def test_shared_passages_finds_the_text_it_was_given(corpus):
    index = ParallelsIndex(corpus / "parallels")
    train = _records(corpus, "train")
    key = next(k for k in sorted(train) if k[0] == "gold" and len(train[k][1]) > 100)
    s = train[key][1][10:70]
    found = shared_passages(index, _ids(s), min_letters=8)
    assert found and found[0].longest == 60
    assert key[1] in {index.record_id(m.record_index) for m in found if m.longest == 60}
    row = found[0].to_json(index)
    assert row["pieces"][2].replace(" ", "").replace("ς", "σ")  # the shared run, as printed


# --- the parallels in the decoder -------------------------------------------------------


def _summary(res):
    return (
        [(r.text, r.logprob) for r in res.restorations],
        [[(a.fill, a.prob) for a in g.alternatives] for g in res.gaps],
        [g.width_probs for g in res.gaps],
        [g.letter_probs for g in res.gaps],
    )


def _hesiod_text(corpus, start: int, gap: int, around: int = 40) -> tuple[str, str]:
    """A stretch of the gold train record as letters, with ``gap`` letters in brackets."""
    train = _records(corpus, "train")
    key = next(k for k in sorted(train) if k[0] == "gold")
    s = train[key][1]
    a, b = start, start + gap
    return s[a - around : a] + "[" + "." * gap + "]" + s[b : b + around], s[a:b]


def test_the_decoder_with_parallels_at_weight_0_or_without_fills_is_todays(corpus):
    from stoicheia.inference.ngram import LetterNgram
    from stoicheia.inference.restore import restore
    from stoicheia.inference.restore.gap_search import Fusion

    index = ParallelsIndex(corpus / "parallels")
    stub = stub_model()
    t = np.asarray(index.text[:20000]).astype(np.int64)
    ngram = LetterNgram(3).fit([np.where(t == 0, A.MASK, t - 1)])
    hes, _ = _hesiod_text(corpus, 2000, 5)
    nowhere = "ζψζψζξ[...]ξψζψξζ [---] ψξψζξ"  # no fill: the index holds none of this
    for text in (hes, nowhere, hes.replace("[.....]", "[---]")):
        for ng, w in ((None, 0.0), (ngram, 0.4)):
            today = restore(stub, text, top_k=3, fusion=Fusion(ng, w))
            shown = restore(stub, text, top_k=3, fusion=Fusion(ng, w, index, 0.0))
            assert _summary(shown) == _summary(today)
            assert all(g.parallels is not None for g in shown.gaps)
            assert "parallels" in shown.to_json()["gaps"][0]
            assert "parallels" not in today.to_json()["gaps"][0]
            if text is nowhere:
                fused = restore(stub, text, top_k=3, fusion=Fusion(ng, w, index, 0.9))
                assert all(not g.parallels.fills for g in fused.gaps)
                assert _summary(fused) == _summary(today)


@pytest.mark.parametrize("unknown", [False, True])
def test_fused_parallels_restore_a_gap_the_network_alone_misses(corpus, unknown):
    from stoicheia.inference.restore import format_result, restore
    from stoicheia.inference.restore.gap_search import Fusion

    index = ParallelsIndex(corpus / "parallels")
    stub = stub_model()
    text, truth = _hesiod_text(corpus, 3000, 6)
    if unknown:
        text = text.replace("[......]", "[---]")
    alone = restore(stub, text, top_k=2, unknown_width=12, fusion=Fusion(None, 0.0))
    fused = restore(stub, text, top_k=2, unknown_width=12, fusion=Fusion(None, 0.0, index, 0.9))
    assert alone.restorations[0].fills[0] != truth
    assert _letters_only(fused.restorations[0].fills[0]) == truth
    gap = fused.to_json()["gaps"][0]
    top = gap["parallels"][0]
    assert top["fill"] == truth and top["letters_matched"] == 80
    assert top["parallels"][0]["record"] and "⟪" in top["parallels"][0]["passage"]
    lines = "\n".join(format_result(fused))
    assert "parallels (corpus passages" in lines and "fused at weight 0.9" in lines
    # the legend explains the parallels' brackets only where parallels are listed
    assert "⟪ ⟫ the letters matched around the gap, ⸢ ⸣ its fill" in lines.splitlines()[-1]
    assert "⟪" not in format_result(alone)[-1]


def _letters_only(s: str) -> str:
    from stoicheia.text.encode import text_to_planes

    return "".join(A.LETTERS[c] for c in text_to_planes(s)[0].chars)


def test_search_gap_with_an_empty_prior_is_todays_to_the_bit():
    from stoicheia.inference.parallels.prior import FillPrior
    from stoicheia.inference.parallels.search import FillParallels
    from stoicheia.inference.restore.gap_search import Fusion, GapShape, score_fill, search_gap

    rng = np.random.default_rng(5)
    x = rng.normal(size=(8, A.NUM_LETTERS + 2)) * 2
    logp = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
    fill = FillParallels(_ids("δημου"), 30, (15, 15), 3, 0, weight=1.0, evidence=3.0)
    for shape in (GapShape(5, 5, True), GapShape(2, 8, False)):
        today = search_gap(logp, shape, 12, Fusion(None, 0.0))
        for prior in (FillPrior([fill], 0.0), FillPrior([], 0.8), None):
            same = search_gap(logp, shape, 12, Fusion(None, 0.0), prior=prior)
            for a, b in zip(today, same, strict=True):
                assert np.array_equal(a.letters, b.letters) and a.score == b.score
                assert a.prob == b.prob and np.array_equal(a.steps, b.steps)
        fused = search_gap(logp, shape, 12, Fusion(None, 0.0), prior=FillPrior([fill], 0.9))
        assert fused[0].text() == "δημου"
        for c in fused:  # the editor's reading is scored as the search ranks it
            assert score_fill(
                logp, shape, c.letters, Fusion(None, 0.0), prior=FillPrior([fill], 0.9)
            ) == pytest.approx(c.score)


def test_the_page_api_carries_the_parallels_and_links_to_their_records(corpus):
    from fastapi.testclient import TestClient

    from stoicheia.serve.app import create_app

    # the run's shards hold the index: restore finds it there (no fusion.json: the whole
    # readings at their default weights)
    model = stub_model(source="x", shard_root=str(corpus))
    text, truth = _hesiod_text(corpus, 3000, 6)
    client = TestClient(create_app(model))
    got = client.post("/restore", json={"text": text, "top_k": 2})
    assert got.status_code == 200, got.text
    gap = got.json()["gaps"][0]
    top = gap["parallels"][0]
    assert top["fill"] == truth and top["sources"] >= 1
    p = top["parallels"][0]
    assert p["pieces"][2].strip() == p["supplies"]
    page = client.get(f"/source/{p['record_index']}?start={p['at'][0]}&end={p['at'][1]}")
    assert page.status_code == 200 and "<mark>" in page.text
    assert p["supplies"] in page.text
    assert client.get("/source/999999").status_code == 404
    assert any("whole readings" in n and "the defaults" in n for n in got.json()["notes"])
    # the letters of context searched on each side, from which the page heads the parallels
    # ("same letters on both sides", or "before the gap" at a stone's edge after it)
    assert all(n > 0 for n in gap["parallels_context"])
    edge = client.post("/restore", json={"text": text.split("[")[0] + "[---]", "top_k": 2})
    assert edge.status_code == 200, edge.text
    before, after = edge.json()["gaps"][0]["parallels_context"]
    assert before > 0 and after == 0


def test_fusion_json_beside_the_checkpoint_holds_the_parallels_weight_and_index(
    corpus, tmp_path, monkeypatch
):
    from stoicheia.inference.restore.fusion_file import FUSION_FILE, FusionConfig, find_fusion
    from stoicheia.inference.restore.gaps import RestoreError

    model = stub_model()
    model.source = str(tmp_path / "best.pt")
    monkeypatch.chdir(tmp_path)  # no data/shards/parallels here
    assert find_fusion(model) is None
    FusionConfig(
        parallels_weight=0.4, parallels_index=str(corpus / "parallels"), chosen_on="dev half A"
    ).save(tmp_path / FUSION_FILE)
    fusion = find_fusion(model)
    assert fusion.ngram is None and fusion.parallels_weight == 0.4
    assert fusion.parallels.records == ParallelsIndex(corpus / "parallels").records
    assert "chosen on dev half A" in fusion.parallels_source
    # the folder relative to the one holding it and the checkpoint (never absolute, the same
    # from any current folder: the page's notes must not tell the server's folders)
    shown = f"{corpus.parent.name}/{corpus.name}/parallels, weight chosen on dev half A"
    assert fusion.parallels_source.startswith(shown)
    monkeypatch.chdir(corpus)
    assert find_fusion(model).parallels_source.startswith(shown)
    monkeypatch.chdir(tmp_path)
    # --ngram-weight 0 leaves the n-gram out, not the parallels: the note says which
    from stoicheia.commands.restore import without_ngram_note

    assert without_ngram_note(fusion, 0.0) == (
        "the network and the parallels, without the letter n-gram: --ngram-weight 0; "
        "with --parallels-weight 0 too, the model alone"
    )
    assert without_ngram_note(None, 0.0) == (
        "the model alone, without the letter n-gram: --ngram-weight 0"
    )
    assert without_ngram_note(fusion, None).startswith("the network and the parallels: no ngram")
    assert find_fusion(model, parallels_weight=0.0).parallels_weight == 0.0
    # an index at weight 0 listed first by the parallels decoder ranks the fills: the note
    # never says "the model alone" beside it
    first = find_fusion(model, parallels_weight=0.0, decoder="parallels")
    assert without_ngram_note(first, None).startswith("the network and the parallels: no ngram")
    assert find_fusion(model, parallels="") is None  # no index, no n-gram: the model alone
    (tmp_path / FUSION_FILE).write_text('{"parallels_weight": 3}')
    with pytest.raises(RestoreError, match="parallels_weight"):
        find_fusion(model)
    with pytest.raises(RestoreError, match="no parallels index"):
        find_fusion(model, parallels=str(tmp_path), config=FusionConfig())


def test_fusion_json_ngram_weight_goes_with_its_parallels(corpus, tmp_path, monkeypatch):
    """fusion.json's n-gram weight was chosen together with the parallels' weight: it is used
    when the parallels are fused in, and the n-gram's own weight (chosen for it alone) when
    they are not (no index, or parallels weight 0)."""
    from stoicheia.inference.ngram import LetterNgram, save_ngram
    from stoicheia.inference.restore.fusion_file import FUSION_FILE, FusionConfig, find_fusion
    from stoicheia.text import alphabet as A

    model = stub_model()
    model.source = str(tmp_path / "best.pt")
    monkeypatch.chdir(tmp_path)
    letters = np.array([A.LETTERS.index(c) for c in "καιτονδημον" * 5], dtype=np.uint8)
    save_ngram(LetterNgram(3).fit([letters]), tmp_path / "ngram.npz", weight=0.9, chosen_on="n")
    FusionConfig(
        ngram_weight=0.6,
        parallels_weight=0.6,
        parallels_index=str(corpus / "parallels"),
        chosen_on="fused3, 9 gaps",
    ).save(tmp_path / FUSION_FILE)
    both = find_fusion(model)
    assert both.weight == 0.6 and both.parallels_weight == 0.6
    assert both.source == "ngram.npz, weight chosen with the parallels' weight"
    assert "chosen on fused3, 9 gaps" in both.parallels_source
    alone = find_fusion(model, parallels="")
    assert alone.weight == 0.9 and alone.source == "ngram.npz, weight chosen on n"
    shown = find_fusion(model, parallels_weight=0.0)
    assert shown.weight == 0.9 and shown.parallels_weight == 0.0
    assert find_fusion(model, weight=0.3).weight == 0.3  # given on the command line


def test_the_whole_readings_note_says_each_thing_once(corpus, tmp_path, monkeypatch):
    """The demo's note said "chosen on 402 gaps ..." twice and "unattested words −0"."""
    from stoicheia.inference.restore.fusion_file import FUSION_FILE, FusionConfig, find_fusion

    model = stub_model()
    model.source = str(tmp_path / "best.pt")
    monkeypatch.chdir(tmp_path)
    where = "9 gaps of the selection half"

    def source_with(fusion_chosen_on: str, **readings: object) -> str:
        """The parallels' note of a fusion.json with these whole-reading weights."""
        FusionConfig(
            parallels_weight=0.9,
            parallels_index=str(corpus / "parallels"),
            chosen_on=fusion_chosen_on,
            readings={"lam_max": 0.7, "half": 4.0, "judge": 0.0, **readings},
        ).save(tmp_path / FUSION_FILE)
        return find_fusion(model).parallels_source

    source = source_with(
        f"fused (ngram 0.9, lam_max 0.7), {where}", unattested=0.0, chosen_on=where
    )
    assert source.count(where) == 1, source
    assert "unattested words kept" in source and "−0" not in source
    source = source_with(f"fused, {where}", unattested=1.5, chosen_on="other gaps")
    assert "unattested words −1.5 (chosen on other gaps)" in source, source
