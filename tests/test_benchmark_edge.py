"""The stone's-edge protocol of the benchmark (issue 31 §4): the first or last word of a dev text
as ``[---]`` with text on one side only, by hand on editions, then through ``benchmark`` on a
small dev set the test converts (epitaphs and a decree whose edge words the parallels carry),
scored top-1 and length right with halves and bootstrap intervals like the other protocols."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from stoicheia.inference.benchmark.edge import edge_tasks, edge_words
from stoicheia.inference.benchmark.protocols import DevText
from stoicheia.inference.benchmark.tasks import build_tasks
from stoicheia.inference.loading import LoadedModel
from stoicheia.text import alphabet as A


def _dev(text: str, id: str = "ISic000004.xml#1") -> DevText:
    return DevText(id, "ISic000004.xml", "ISic000004.xml", text)


def test_the_first_and_last_word_become_one_sided_gaps_by_hand():
    dev = _dev("ἐνθάδε κῖτε Βικτωρία ζήσασα ἔτη δ ἀνέθηκε.")
    first, last = edge_tasks(dev)
    assert (first.input, first.truth) == ("[---] κῖτε Βικτωρία ζήσασα ἔτη δ ἀνέθηκε.", "ενθαδε")
    # the full stop is punctuation, not the word's: it stays as printed after the gap
    assert (last.input, last.truth) == ("ἐνθάδε κῖτε Βικτωρία ζήσασα ἔτη δ [---].", "ανεθηκε")
    for t in (first, last):
        assert t.protocol == "edge" and not t.known_width and t.target == 0
        assert t.input[t.start : t.end] == "[---]"
    # punctuation after the first word stays too: ἔδοξε· -> [---]·
    assert edge_tasks(_dev("ἔδοξε· τῶι δάμωι"))[0].input == "[---]· τῶι δάμωι"
    # another lacuna of the edition stays a lacuna; the target is the edge word's
    # (the first word, against that lacuna, would leave its gap no text on either side: counted)
    counts = Counter()
    (t,) = edge_tasks(_dev("Ἀρίστων [---] καὶ ἀνέθηκε"), counts)
    assert t.input == "Ἀρίστων [---] καὶ [---]" and t.target == 1
    assert counts == {"edge_not_one_sided": 1}


def test_edge_words_not_intact_too_long_or_alone_are_left_out_and_counted():
    counts = Counter()
    # a supplement in the first word, an expansion in the last
    assert edge_tasks(_dev("[ἐν]θάδε κῖτε καλ(ανδῶν)"), counts) == []
    # an uncertain letter; a text that starts at a lacuna (its edge is lost already)
    assert edge_words(_dev("κοιμη̣θεὶς κῖτε")) == {"first": None, "last": (11, 15)}
    assert edge_words(_dev("[---] κῖτε Ἀρίστων[ος]")) == {"first": None, "last": None}
    assert counts == {"edge_word_not_intact": 2}
    # 11 letters: beyond the protocols' 1-10
    got = edge_tasks(_dev("Ἀριστοκλέους υἱὸς ὁ"), counts)
    assert [t.truth for t in got] == ["ο"] and counts["edge_word_length"] == 1
    # one word: nothing left to read the gap from, on either side
    assert edge_tasks(_dev("χαῖρε"), counts) == [] and counts["edge_no_letter_left"] == 2
    # build_tasks runs it as a protocol among the others; its counts are its own
    counts = Counter()
    tasks = build_tasks([_dev("ἐνθάδε κῖτε")], ["hidden", "edge"], 1, 0, counts)
    assert [t.truth for t in tasks["edge"]] == ["ενθαδε", "κιτε"] and len(tasks["hidden"]) == 1


# --- through the benchmark, on a small dev set the test converts ------------------------------

_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<TEI xmlns="http://www.tei-c.org/ns/1.0">'
    '<teiHeader><profileDesc><textLang mainLang="grc"/></profileDesc></teiHeader>\n'
    "<text><body>\n"
)
_TAIL = "\n</body></text></TEI>\n"
_NAMES = ["Εὐκλείδας", "Φιλόξενος", "Δαμάρετος", "Σωσίβιος", "Θεόδωρος", "Νικάνωρ"]
#: training inscriptions (numbers not ending in 4): epitaphs whose first word is ἐνθάδε's
#: neighbour, and a decree's formula ending in ἕνεκα, each under other names
TRAIN = [f"{n} ἐνθάδε κῖτε χρηστὲ χαῖρε" for n in _NAMES] + [
    f"{n} εἶπε· ἔδοξε τᾶι βουλᾶι καὶ τῶι δάμωι ἐπαινέσαι {m} ἀρετᾶς ἕνεκα"
    for n, m in zip(_NAMES, _NAMES[1:] + _NAMES[:1], strict=True)
]
#: the dev inscriptions (numbers ending in 4): ISic920004 falls in the selection half, ISic920034
#: in the report half (halves.half_of)
DEV = {
    "ISic920004.xml": "ἐνθάδε κῖτε χρηστὲ χαῖρε Ἀρίστων",
    "ISic920034.xml": "ἐνθάδε κῖτε χρηστὲ χαῖρε Πολύξενος",
    "ISic920044.xml": "Καλλίας εἶπε· ἔδοξε τᾶι βουλᾶι καὶ τῶι δάμωι ἐπαινέσαι Εὐκλείδαν "
    "ἀρετᾶς ἕνεκα",
    "ISic920074.xml": "[Τι]μόθεος εἶπε· ἔδοξε τᾶι βουλᾶι καὶ τῶι δάμωι ἐπαινέσαι Φιλόξενον "
    "ἀρετᾶς ἕνεκα",
}


def _write(folder: Path, name: str, text: str) -> None:
    text = text.replace("[Τι]", '<supplied reason="lost">Τι</supplied>')
    body = f'<div type="edition" xml:lang="grc"><ab><lb n="1"/>{text}</ab></div>'
    (folder / name).write_text(_HEAD + body + _TAIL, encoding="utf-8")


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    from stoicheia.data.shards import convert

    src = tmp_path_factory.mktemp("edge") / "isicily"
    src.mkdir()
    for i, text in enumerate(TRAIN):
        _write(src, f"ISic92{i:02d}01.xml", text)  # numbers ending in 1: training
    for name, text in DEV.items():
        _write(src, name, text)
    out = src.parent / "shards"
    convert(
        {"bronze": [src]},
        out,
        val_fraction=0.0,
        inscription_dev_digits=[4],
        max_record_letters=200,
        workers=1,
        progress=False,
    )
    return out


class _Rho(LoadedModel):
    """A stand-in model: ρ at the first 5 slots of a hidden run, BLANK after: its fill of a
    ``[---]`` is ``ρρρρρ``, five letters."""

    def __init__(self):
        super().__init__(None, {"data": {"seq_len": 128}}, "stub", "checkpoint")

    def __call__(self, batch):
        chars = batch["chars"]
        B, T = chars.shape
        out = {
            h: torch.zeros(B, T, n)
            for h, n in (("char", 27), ("boundary", 3), ("dia", 48), ("cap", 2), ("punct", 6))
        }
        rho = A.LETTERS.index("ρ")
        gap = (chars == A.MASK) | (chars == rho)
        idx = torch.arange(T).expand(B, T)
        run = idx - torch.cummax(torch.where(gap, -1, idx), dim=1).values
        out["char"][..., rho] = torch.where(gap & (run <= 5), 8.0, 0.0)
        out["char"][..., A.BLANK] = torch.where(gap & (run > 5), 8.0, 0.0)
        return out


def test_the_edge_protocol_through_the_benchmark_with_the_parallels(shards):
    from stoicheia.inference.benchmark.parallels import (
        ParallelsCache,
        ParallelsDecoder,
        readings_family,
    )
    from stoicheia.inference.benchmark.report import format_table, summary_lines
    from stoicheia.inference.benchmark.run import NgramDecoder, benchmark
    from stoicheia.inference.ngram import LetterNgram
    from stoicheia.inference.parallels import ParallelsIndex

    index = ParallelsIndex(shards / "parallels")
    t = np.asarray(index.text).astype(np.int64)
    ngram = LetterNgram(3).fit([np.where(t == 0, A.MASK, t - 1)])
    caches: dict = {}

    def cache_of(md):
        return caches.setdefault(id(md), ParallelsCache(md, index))

    grid = {"lam_max": (0.7,), "half": (1.0,), "unattested": (0.0, 1.0)}
    res = benchmark(
        _Rho(),
        shards,
        protocols=["edge"],
        ngram=ngram,
        unknown_width=12,
        fusion_weights=[0.4],
        bootstrap=200,
        twin_threshold=None,
        decoders={
            "parallels": lambda md: ParallelsDecoder(
                cache_of(md), NgramDecoder(ngram, unknown_width=12)
            )
        },
        families=[
            # the judge alone: no ranker fitted after the grid (its row: test_reading_ranker)
            lambda md: readings_family(md, ngram, cache_of(md), (0.4,), grid, ranker=False)
        ],
    )
    edge = res["protocols"]["edge"]
    rows = edge["examples"]
    # two edges of each text, less [Τι]μόθεος (a supplement in the word): counted, not scored
    assert [(r["text"].split("#")[0], r["truth"]) for r in rows] == [
        ("ISic920004.xml", "ενθαδε"),
        ("ISic920004.xml", "αριστων"),
        ("ISic920034.xml", "ενθαδε"),
        ("ISic920034.xml", "πολυξενοσ"),
        ("ISic920044.xml", "καλλιασ"),
        ("ISic920044.xml", "ενεκα"),
        ("ISic920074.xml", "ενεκα"),
    ]
    assert res["corpus"]["left_out"] == {"edge_word_not_intact": 1}
    assert [r["half"] for r in rows] == ["selection"] * 2 + ["report"] * 5
    # the parallels carry the formulas' edge words whole: ἐνθάδε before κῖτε, ἕνεκα after
    # ἀρετᾶς, each one candidate of the right length (never ἐ, ἐν, ...); not a name they never saw
    by_truth = {(r["text"], r["truth"]): r for r in rows}
    for r in rows:
        if r["truth"] in ("ενθαδε", "ενεκα"):
            assert r["parallels"]["rank"] == 1 and r["parallels"]["top1"] == r["truth"], r
    assert by_truth[("ISic920034.xml#1", "πολυξενοσ")]["parallels"]["rank"] != 1
    # the model's ρρρρρ: 5 letters, the length of ἕνεκα alone; never right
    model = edge["decoders"]["model"]
    assert model["top1"] == 0.0 and model["length_right"] == pytest.approx(2 / 7)
    par = edge["decoders"]["parallels"]
    assert par["top1"] == pytest.approx(4 / 7) and par["length_right"] >= 4 / 7
    # every row has its length right, fused included (its weights chosen on the selection half)
    without = {"fused without network"} if res["fusion"]["fused"]["chosen"]["ngram"] < 1 else set()
    # the ranker's mixture where a ranker won on the selection half (test_reading_ranker)
    without |= {"fused without ranker"} if res["fusion"]["fused"].get("ranker") else set()
    assert set(edge["decoders"]) == {"model", "ngram", "parallels", "fused"} | without
    assert all("length_right" in f for f in edge["decoders"].values())
    assert res["fusion"]["fused"]["chosen_on"].startswith("2 gaps of the selection half")
    # the report half's view and its intervals, length right among the figures compared
    rep = edge["views"]["report"]
    assert rep["gaps"] == 5 and rep["decoders"]["parallels"]["top1"] == pytest.approx(3 / 5)
    diff = rep["differences"]["fused-ngram"]
    assert {"top1", "length_right"} <= set(diff)
    assert (
        diff["length_right"]["low"] <= diff["length_right"]["diff"] <= diff["length_right"]["high"]
    )
    assert res["bootstrap"]["inscriptions"] == {"edge": 4}
    table = format_table(res)
    assert any(
        line.startswith("the stone's edge, first or last word as [---]: 7 gaps") for line in table
    )
    summary = summary_lines(res)
    assert "the stone's edge, first or last word [---], 5 gaps" in summary
    assert any(line.startswith("  parallels") and "right length  80.0%" in line for line in summary)


def test_a_judge_weight_chosen_gets_the_row_without_it_and_their_difference(shards):
    """With the network's judgement in the whole readings' grid, the chosen point is compared
    on the report half with the same point without it (issue 32 §3)."""
    from stoicheia.inference.benchmark.parallels import ParallelsCache, readings_family
    from stoicheia.inference.benchmark.report import format_table
    from stoicheia.inference.benchmark.run import benchmark
    from stoicheia.inference.ngram import LetterNgram
    from stoicheia.inference.parallels import ParallelsIndex

    index = ParallelsIndex(shards / "parallels")
    t = np.asarray(index.text).astype(np.int64)
    ngram = LetterNgram(3).fit([np.where(t == 0, A.MASK, t - 1)])
    caches: dict = {}

    def cache_of(md):
        return caches.setdefault(id(md), ParallelsCache(md, index))

    def run(judge: tuple[float, ...]) -> dict:
        grid = {"lam_max": (0.7,), "half": (1.0,), "unattested": (0.0,), "judge": judge}
        return benchmark(
            _Rho(),
            shards,
            protocols=["edge"],
            ngram=ngram,
            unknown_width=12,
            fusion_weights=[0.4],
            bootstrap=200,
            twin_threshold=None,
            families=[
                # the judge alone: no ranker fitted after the grid (its row: test_reading_ranker)
                lambda md: readings_family(md, ngram, cache_of(md), (0.4,), grid, ranker=False)
            ],
        )

    res = run((2.0,))
    edge = res["protocols"]["edge"]
    assert res["fusion"]["fused"]["chosen"]["judge"] == 2.0
    assert set(edge["decoders"]) == {
        "model",
        "ngram",
        "fused",
        "fused without judge",
        "fused without network",
    }
    diff = edge["views"]["report"]["differences"]
    assert "fused-fused without judge" in diff and "fused without judge-ngram" not in diff
    # the same point on the n-gram alone (ngram 1, judge 0): what the network adds
    assert "fused-fused without network" in diff and "fused without network-ngram" not in diff
    for row in edge["examples"]:
        assert set(row["fused without network"]["top1"]) != {"ρ"}, row  # not the network's
    # the network (ρρρρρ) judging with weight 2 puts its own reading first: never the truth
    for row in edge["examples"]:
        assert row["fused"]["top1"] == "ρρρρρ"[: len(row["fused"]["top1"])], row
    table = format_table(res)
    assert any(line.lstrip().startswith("fused - fused without judge") for line in table)
    # a judge weight of 0 chosen: no row without it, the figures of the grid without the judge
    plain = run((0.0,))
    assert set(plain["protocols"]["edge"]["decoders"]) == {
        "model",
        "ngram",
        "fused",
        "fused without network",
    }
