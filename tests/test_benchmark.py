"""The restoration benchmark: protocols on hand-made editions, scores against hand computations,
the product's decoder and the n-gram on the same gaps, the command on a real dev set."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest
import torch

from stoicheia.inference.benchmark.protocols import (
    BenchmarkError,
    DevText,
    base_letters,
    hidden_spans,
    read_dev_texts,
    span_tasks,
    supplement_tasks,
)
from stoicheia.inference.benchmark.run import ModelDecoder, NgramDecoder, run_tasks
from stoicheia.inference.benchmark.scoring import GapScore, calibration, edit_distance, summarise
from stoicheia.inference.benchmark.tasks import build_tasks
from stoicheia.inference.loading import LoadedModel
from stoicheia.inference.ngram import LetterNgram
from stoicheia.text import alphabet as A


def _dev(text: str, id: str = "ISic000004.xml#1") -> DevText:
    return DevText(id, "ISic000004.xml", "ISic000004.xml", text)


# --- protocols --------------------------------------------------------------------------------


def test_supplements_protocol_by_hand():
    dev = _dev("καὶ [τὸν] δῆμον [---] ἔδωκε[ν] [καὶ ---] [ἀνέθηκε τὸν ἀνδριάντα]")
    counts = Counter()
    tasks = supplement_tasks(dev, counts)
    # [καὶ ---] shares its bracket with a lacuna; the last supplement has 18 letters
    assert counts == {"supplement_shares_bracket": 1, "supplement_length": 1}
    assert [t.truth for t in tasks] == ["τον", "ν"]
    first, second = tasks
    assert first.input == "καὶ [...] δῆμον [---] ἔδωκε[ν] [καὶ ---] [ἀνέθηκε τὸν ἀνδριάντα]"
    assert (
        first.target == 0 and first.input[first.start : first.end] == "[...]" and first.known_width
    )
    # the other supplements stay as printed, the real gap stays a lacuna (lacuna 0), the target is
    # lacuna 1
    assert second.input == "καὶ [τὸν] δῆμον [---] ἔδωκε[.] [καὶ ---] [ἀνέθηκε τὸν ἀνδριάντα]"
    assert second.target == 1 and second.input[second.start : second.end] == "[.]"


def test_hidden_spans_only_intact_letters_by_hand():
    # intact letters: β (α̣ is uncertain), γ (after a supplement, before a comma); nothing else
    dev = _dev("[καὶ] α̣β [τὸν] γ, [---]")
    spans = hidden_spans(dev, 5, seed=7)
    assert sorted((dev.text[a:b], t) for a, b, t in spans) == [("β", "β"), ("γ", "γ")]
    hidden = span_tasks(dev, 5, 7, "hidden")
    unknown = span_tasks(dev, 5, 7, "unknown")
    assert sorted(t.input for t in hidden) == [
        "[καὶ] α̣[.] [τὸν] γ, [---]",
        "[καὶ] α̣β [τὸν] [.], [---]",
    ]
    assert sorted(t.input for t in unknown) == [
        "[καὶ] α̣[---] [τὸν] γ, [---]",
        "[καὶ] α̣β [τὸν] [---], [---]",
    ]
    assert all(t.target == 0 and not t.known_width for t in unknown)
    assert [(t.start, t.truth) for t in hidden] == [(t.start, t.truth) for t in unknown], (
        "the same spans"
    )


def test_hidden_spans_are_seeded_and_span_spaces_not_signs():
    text = "ἔδοξε τῷ δήμῳ· Ἀριστοκλῆς Ἀριστοκλέους εἶπεν, ἐπειδὴ [ὁ δῆμος] ἀνέθηκε"
    dev = _dev(text)
    first = span_tasks(dev, 6, 1234)
    assert [(t.start, t.end) for t in first] == [(t.start, t.end) for t in span_tasks(dev, 6, 1234)]
    assert [(t.start, t.end) for t in first] != [(t.start, t.end) for t in span_tasks(dev, 6, 99)]
    assert len(first) == 6 and len({t.start for t in first}) >= 2
    for t in first:
        width = len(t.truth)
        assert 1 <= width <= 10 and t.input[t.start : t.end] == "[" + "." * width + "]"
        removed = text[t.start : t.start + len(text) - len(t.input) + t.end - t.start]
        assert base_letters(removed) == t.truth
        assert not set(removed) & set("·,[]"), "a span holds letters and spaces only"
        assert t.input.replace(t.input[t.start : t.end], removed, 1) == text
    with pytest.raises(BenchmarkError, match="unknown protocol"):
        build_tasks([dev], ["hidden", "lost"], 1, 0)
    # nothing left to read the gap from: left out, counted
    counts = Counter()
    assert span_tasks(_dev("[---] ὁ [---]"), 3, 1, counts=counts) == [] and counts == {
        "no_letter_left": 1
    }
    assert supplement_tasks(_dev("[καὶ] [---]"), counts) == [] and counts["no_letter_left"] == 2


def test_base_letters_fold_marks_case_and_final_sigma():
    assert base_letters("Τὸν Δῆμον, ὅς") == "τονδημονοσ"
    assert base_letters("ἀνέθηκε(ν)") == "ανεθηκεν"


# --- scores -----------------------------------------------------------------------------------


def test_edit_distance_by_hand():
    assert (
        edit_distance("", "") == 0
        and edit_distance("αβγ", "") == 3
        and edit_distance("", "αβ") == 2
    )
    assert edit_distance("καιτον", "καιτων") == 1
    assert edit_distance("δημος", "δημοσιοσ") == 4  # ς -> σ substituted, ιοσ inserted
    assert edit_distance("αβγδ", "βγδε") == 2  # delete α, insert ε


def test_cer_and_top_k_against_a_hand_computation():
    scores = [
        GapScore("τον", ("τον", "των"), 0.95, True),  # exact: distance 0, rank 1
        GapScore("ν", ("σ", "ν"), 0.55, True),  # distance 1, rank 2
        GapScore(
            "δημοσ", ("δημου",) + tuple(f"x{i}" for i in range(5)) + ("δημοσ",), 0.35, True
        ),  # d 1, rank 7
        GapScore("ανεθηκεν", ("ανεθηκε",), 0.15, True),  # distance 1, absent
    ]
    f = summarise(scores)
    assert f["gaps"] == 4 and f["truth_letters"] == 3 + 1 + 5 + 8
    assert f["cer"] == pytest.approx((0 + 1 + 1 + 1) / 17)
    assert (f["top1"], f["top5"], f["top20"]) == (0.25, 0.5, 0.75)
    assert "length_right" not in f
    assert f["by_length"]["1-3"] == {
        "gaps": 2,
        "truth_letters": 4,
        "cer": 0.25,
        "top1": 0.5,
        "top5": 1.0,
        "top20": 1.0,
    }
    assert f["by_length"]["4-6"]["gaps"] == 1 and f["by_length"]["4-6"]["cer"] == pytest.approx(
        1 / 5
    )
    assert f["by_length"]["7-10"]["top20"] == 0.0
    unknown = summarise(
        [GapScore("τον", ("το",), 0.5, False), GapScore("και", ("και",), 0.5, False)]
    )
    assert unknown["length_right"] == 0.5 and unknown["cer"] == pytest.approx(1 / 6)
    assert summarise([])["gaps"] == 0


def test_ece_against_a_hand_computation():
    probs = [0.95, 0.91, 0.55, 0.52, 0.05, 1.0]
    correct = [True, False, False, False, False, True]
    cal = calibration(probs, correct)
    # bin 9: 0.95, 0.91, 1.0 -> conf 0.9533, acc 2/3; bin 5: 0.55, 0.52 -> conf 0.535, acc 0;
    # bin 0: 0.05, acc 0
    want = 3 / 6 * abs(2 / 3 - (0.95 + 0.91 + 1.0) / 3) + 2 / 6 * 0.535 + 1 / 6 * 0.05
    assert cal["ece"] == pytest.approx(want)
    assert [b["n"] for b in cal["bins"]] == [1, 0, 0, 0, 0, 2, 0, 0, 0, 3]
    assert cal["bins"][1]["accuracy"] is None
    assert calibration([0.3], [True])["ece"] == pytest.approx(0.7)
    with pytest.raises(ValueError):
        calibration([1.2], [True])


def test_run_tasks_figures_by_hand():
    dev = _dev("καὶ [τὸν] δῆμον ἔδωκε[ν]")
    tasks = {"supplements": supplement_tasks(dev)}
    answers = {"τον": (["Τὸν", "ταν"], 0.9), "ν": (["α", "ς", "ν"], 0.5)}
    res = run_tasks(
        {
            "model": lambda t: answers[t.truth],
            "ngram": lambda t: (["ν", "α"] if t.truth == "ν" else ["ταν"], 0.25),
        },
        tasks,
    )
    sup = res["supplements"]
    assert sup["gaps"] == 2
    m, n = sup["decoders"]["model"], sup["decoders"]["ngram"]
    assert m["cer"] == pytest.approx(1 / 4) and (m["top1"], m["top5"]) == (0.5, 1.0)
    assert m["ece"] == pytest.approx(0.5 * 0.1 + 0.5 * 0.5)  # 0.9 right, 0.5 wrong
    assert n["cer"] == pytest.approx(1 / 4) and (n["top1"], n["top5"]) == (0.5, 0.5)
    assert n["ece"] == pytest.approx(abs(0.5 - 0.25))  # both in the bin [0.2, 0.3): accuracy 1/2
    assert m["restorations_per_second"] > 0
    assert sup["examples"][0]["model"] == {
        "top1": "τον",
        "rank": 1,
        "prob": 0.9,
        "best5": ["τον", "ταν"],
    }
    assert sup["examples"][1]["model"]["rank"] == 3, "marks and final sigma folded before ranking"

    def refuses(task):
        raise ValueError("no Greek letter")

    res = run_tasks({"model": refuses}, tasks)["supplements"]
    f = res["decoders"]["model"]
    assert f["failed"] == 2 and f["cer"] == 1.0 and f["top20"] == 0.0, (
        "a failure is a wrong answer, counted"
    )
    assert res["examples"][0]["model"]["error"] == "no Greek letter"


# --- the decoders on the same gaps --------------------------------------------------------------


class _Stub(LoadedModel):
    """A stand-in model: logit 8 for ρ at the first ``k`` MASK-or-ρ slots of a run, BLANK after."""

    def __init__(self, k: int):
        super().__init__(None, {"data": {"seq_len": 128}}, "stub", "checkpoint")
        self.k = k

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
        run = idx - torch.cummax(torch.where(gap, -1, idx), dim=1).values  # slots of the run so far
        out["char"][..., rho] = torch.where(gap & (run <= self.k), 8.0, 0.0)
        out["char"][..., A.BLANK] = torch.where(gap & (run > self.k), 8.0, 0.0)
        return out


def test_model_decoder_decodes_only_the_target_with_the_products_decoder():
    text = "καὶ [---] δῆμος [...] ἔδωκε"  # the target is lacuna 1; lacuna 0 stays MASK slots
    dev = _dev(text)
    from stoicheia.inference.benchmark.protocols import Task

    known = Task("hidden", dev.id, text, 15, 20, 1, "ρρρ", True)
    fills, prob = ModelDecoder(_Stub(3), k=4)(known)
    assert (
        fills[0] == "ρρρ"
        and len(fills) == 4
        and len(set(fills)) == 4
        and all(len(f) == 3 for f in fills)
    )
    p = math.exp(8) / (math.exp(8) + 23)  # ρ against the 23 other letters at each slot
    assert prob == pytest.approx(p**3)
    # another lacuna of the edition wider than the 128-slot window: only the target's window is seen
    wide = Task("supplements", dev.id, "καὶ [.300.] δῆμος [...] ἔδωκε", 18, 23, 1, "ρρρ", True)
    fills, prob = ModelDecoder(_Stub(3), k=4)(wide)
    assert fills[0] == "ρρρ" and prob == pytest.approx(p**3)
    unknown = Task("unknown", dev.id, "καὶ δῆμος [---] ἔδωκε", 10, 15, 0, "ρρρ", False)
    fills, prob = ModelDecoder(_Stub(3), unknown_width=10)(unknown)
    assert fills[0] == "ρρρ", "BLANK ends the unknown width after 3 letters"
    # slot 0: letters only; slots 1, 2: BLANK (logit 0) may end the gap, a letter takes the rest;
    # slot 3: BLANK (logit 8) ends it, against 24 letters
    b = 1 / (math.exp(8) + 24)
    end = math.exp(8) / (math.exp(8) + 24)
    assert prob == pytest.approx(p * ((1 - b) * p) ** 2 * end)


def test_fused_decoder_shares_the_forward_pass_and_leans_on_the_ngram():
    text = "καὶ τὸν δῆμον καὶ τ[..] δῆμον"
    dev = _dev(text)
    from stoicheia.inference.benchmark.protocols import Task
    from stoicheia.inference.restore.gap_search import Fusion

    ngram = LetterNgram(3).fit(
        [np.array([A.LETTERS.index(c) for c in "καιτονδημον" * 30], dtype=np.uint8)]
    )
    task = Task("hidden", dev.id, text, 19, 23, 0, "ον", True)
    alone = ModelDecoder(_Stub(3), k=5)
    assert alone(task)[0][0] == "ρρ"  # the stub wants ρ everywhere in a gap
    fused = alone.with_fusion(Fusion(ngram, 1.0))
    assert fused.cache is alone.cache and len(alone.cache) == 1
    assert fused(task)[0][0] == "ον", "at weight 1 the letters are the n-gram's"
    assert fused.cached_seconds(task) > 0 and alone.cached_seconds(task) == 0


def test_ngram_decoder_on_the_same_gaps():
    ngram = LetterNgram(3).fit(
        [np.array([A.LETTERS.index(c) for c in "καιτονδημον" * 30], dtype=np.uint8)]
    )
    from stoicheia.inference.benchmark.protocols import Task

    text = "καὶ τὸν δῆμον καὶ τ[..] δῆμον"
    task = Task("hidden", "x", text, 19, 23, 0, "ον", True)
    fills, prob = NgramDecoder(ngram, k=5)(task)
    assert (
        fills[0] == "ον" and len(fills) == 5 and all(len(f) == 2 for f in fills) and 0.5 < prob <= 1
    )
    task = Task("unknown", "x", "καὶ τὸν δῆμον καὶ τ[---] δῆμον", 19, 24, 0, "ον", False)
    fills, prob = NgramDecoder(ngram, k=20, unknown_width=10)(task)
    assert fills[0] == "ον" and len({len(f) for f in fills}) > 1 and 0 < prob <= 1


# --- on the real dev set, through the command ---------------------------------------------------


def test_benchmark_command_on_real_inscriptions(tmp_path, corpus_root, capsys):
    from stoicheia.cli import main as cli_main
    from stoicheia.data.shards import convert

    isic = corpus_root / "isicily" / "inscriptions"
    files = [isic / f"ISic000{n}.xml" for n in (824, 864, 635, 636, 640, 641, 795)]
    shards = tmp_path / "shards"
    convert(
        {"bronze": files},
        shards,
        val_fraction=0.0,
        inscription_dev_digits=[4],
        workers=1,
        progress=False,
    )

    from stoicheia.inference.benchmark.run import benchmark
    from stoicheia.inference.evaluate import load_records

    # evaluate --split inscription_dev reads the same inscriptions from the shards
    records, described = load_records([str(shards)], "inscription_dev")
    assert {r.work for r in records} == {"ISic000824.xml", "ISic000864.xml"} and described[
        "split"
    ] == "inscription_dev"
    with pytest.raises(BenchmarkError, match="--inscription-dev-digit"):
        plain = tmp_path / "plain"
        convert({"bronze": files}, plain, val_fraction=0.0, workers=1, progress=False)
        benchmark(_Stub(2), plain, protocols=["hidden"])
    # shards converted elsewhere: the EpiDoc files are looked up under --epidoc-root by work id
    with pytest.raises(
        BenchmarkError, match=r"nowhere/ISic000824.xml: the EpiDoc file .* is missing"
    ):
        benchmark(_Stub(2), shards, protocols=["hidden"], epidoc_root=tmp_path / "nowhere")
    moved = benchmark(_Stub(2), shards, protocols=["supplements"], epidoc_root=isic, max_texts=1)
    assert moved["protocols"]["supplements"]["gaps"] == 9
    res = benchmark(
        _Stub(2),
        shards,
        protocols=["hidden", "supplements"],
        spans_per_text=2,
        ngram=LetterNgram(3).fit([np.arange(24, dtype=np.uint8)] * 3),
    )
    assert res["corpus"]["inscriptions"] == 2 and res["corpus"]["texts"] == 2
    hidden, sup = (res["protocols"][p] for p in ("hidden", "supplements"))
    assert hidden["gaps"] == 4, "2 spans in each of the 2 texts"
    # ISic000824: [βασιλέως] [Γέλωνος] [β] [έως] [Ἱέρω] [Ἡρ] [Κ] [ρό] [ς];
    # ISic000864: [ωνια] [ἔτη] [έρας]
    assert sup["gaps"] == 9 + 3
    assert [e["truth"] for e in sup["examples"][-3:]] == ["ωνια", "ετη", "ερασ"]
    for protocol in res["protocols"].values():
        for f in protocol["decoders"].values():
            assert 0 <= f["top1"] <= f["top5"] <= f["top20"] <= 1 and 0 <= f["ece"] <= 1
    # model - n-gram with the intervals of a paired bootstrap over the 2 inscriptions (no fusion)
    assert res["bootstrap"]["inscriptions"] == {"hidden": 2, "supplements": 2}
    # both inscriptions fall in the report half: its view holds every gap, with the same figures
    assert res["halves"]["report"] == ["ISic000824.xml", "ISic000864.xml"]
    assert res["halves"]["selection"] == [] and res["halves"]["gaps"]["supplements"] == {
        "selection": 0,
        "report": 12,
    }
    rep = sup["views"]["report"]
    assert rep["gaps"] == 12 and sup["views"]["selection"]["gaps"] == 0
    for name, f in sup["decoders"].items():
        for key in ("cer", "top1", "top5", "top20", "ece", "by_length", "reliability"):
            assert rep["decoders"][name][key] == f[key], (name, key)
    assert "differences" not in sup, "no interval on all gaps when there are halves"
    assert list(rep["differences"]) == ["model-ngram"]
    d = rep["differences"]["model-ngram"]["cer"]
    assert (
        d["diff"]
        == pytest.approx(sup["decoders"]["model"]["cer"] - sup["decoders"]["ngram"]["cer"])
        and -1 <= d["low"] <= d["high"] <= 1
    )
    # the training inscriptions hold no twin of these two texts
    assert (
        res["contamination"]["dev_texts_with_twin"] == []
        and res["contamination"]["training"]["records"] >= 5
    )
    with pytest.raises(SystemExit) as exc:
        cli_main(
            [
                "benchmark",
                str(tmp_path / "nope.pt"),
                "--shards",
                str(shards),
                "--out",
                str(tmp_path / "b"),
            ]
        )
    assert exc.value.code == 2 and "nope.pt: no such file" in capsys.readouterr().err
    from stoicheia.inference.benchmark.report import format_table, write_outputs

    paths = write_outputs(res, tmp_path / "out")
    assert json.loads(paths[0].read_text())["protocols"]["supplements"]["gaps"] == 12
    table = paths[1].read_text()
    assert (
        "editors' supplements, width given: 12 gaps" in table
        and "n-gram" in table
        and "Ithaca" in table
    )
    assert table.splitlines() == format_table(res)
    assert "  model - n-gram   top-1 " in table
    summary = paths[2].read_text().splitlines()
    assert "editors' supplements [....], 12 gaps" in summary and any(
        line.startswith("  n-gram") for line in summary
    )
    assert paths[3].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_benchmark_command_writes_table_json_and_plot(tmp_path, corpus_root, capsys, monkeypatch):
    """The whole command (n-gram trained on the train split, the four protocols, the outputs),
    the checkpoint replaced by the stand-in model (loading is tested in test_inference)."""
    import stoicheia.cli as cli
    from stoicheia.commands import benchmark as benchmark_command
    from stoicheia.data.shards import convert

    isic = corpus_root / "isicily" / "inscriptions"
    shards = tmp_path / "shards"
    convert(
        # ISic000864 falls in the report half, ISic000874 in the selection half
        {"bronze": [isic / f"ISic000{n}.xml" for n in (864, 874, 635, 636, 640, 641, 795)]},
        shards,
        val_fraction=0.0,
        inscription_dev_digits=[4],
        workers=1,
        progress=False,
        parallels_index=False,  # no index: the rows of before (test_benchmark_parallels: with one)
    )
    stub = _Stub(2)
    (tmp_path / "run").mkdir()
    stub.source = str(tmp_path / "run" / "best.pt")  # --save-ngram writes beside it
    monkeypatch.setattr(benchmark_command, "load", lambda args, command: stub)
    out = tmp_path / "bench"
    args = [
        "benchmark",
        "stub.pt",
        "--shards",
        str(shards),
        "--out",
        str(out),
        "--spans-per-text",
        "2",
        "--unknown-width",
        "10",
        "--ngram-order",
        "3",
        "--save-ngram",
    ]
    assert cli.main(args) == 0
    printed = capsys.readouterr().out
    assert (
        "n-gram baseline: order 3" in printed
        and "hidden spans, width given [....]: 4 gaps; report half" in printed
    )
    # ISic000864: [ωνια] [ἔτη] [έρας]; ISic000874: [Μην]
    assert (
        "editors' supplements, width given: 4 gaps; report half (headline; the fusion weights were "
        "chosen on the other half): 3 gaps of 1 inscriptions"
        in printed
        and "hidden spans, unknown width [---]: 4 gaps" in printed
    )
    # the stone's edge: ISic000874's last word, μόρσιμον (its first, Θ(εοῖς), and both of
    # ISic000864's are not intact in the edition)
    assert "the stone's edge, first or last word as [---]: 1 gaps" in printed
    assert "halves: 1 inscriptions choose the fusion weights (selection), 1 report" in printed
    res = json.loads((out / "benchmark.json").read_text())
    assert res["corpus"]["inscriptions"] == 2 and res["ngram"]["order"] == 3
    assert res["halves"]["selection"] == ["ISic000874.xml"]
    assert res["halves"]["report"] == ["ISic000864.xml"]
    fu = res["fusion"]["fused"]
    # the same search without the network where the chosen point weighs it (ngram below 1)
    without = {"fused without network"} if fu["chosen"]["ngram"] < 1 else set()
    without |= {"fused without ranker"} if fu.get("ranker") else set()
    assert set(res["protocols"]["unknown"]["decoders"]) == {"model", "ngram", "fused"} | without
    # the fusion weight swept at the default weights on the selection half only, the best mean
    # top-1 chosen, and fused at that weight restores every gap
    assert fu["axes"] == {"ngram": [0.0, 0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0]}
    # 2 hidden spans, [Μην], the 2 spans as [---], μόρσιμον as [---]
    assert fu["chosen_on"].startswith("6 gaps of the selection half")
    assert all(
        [e["figures"][p]["gaps"] for p in ("hidden", "supplements", "unknown", "edge")]
        == [2, 1, 2, 1]
        for e in fu["sweep"]
    )
    mean_top1 = {
        e["weights"]["ngram"]: sum(p["top1"] for p in e["figures"].values()) / 4
        for e in fu["sweep"]
    }
    assert mean_top1[fu["chosen"]["ngram"]] == max(mean_top1.values())
    sel = res["protocols"]["hidden"]["views"]["selection"]["decoders"]["fused"]
    chosen = next(e for e in fu["sweep"] if e["weights"] == fu["chosen"])
    assert sel["top1"] == chosen["figures"]["hidden"]["top1"]
    assert [r["half"] for r in res["protocols"]["supplements"]["examples"]] == [
        "report",
        "report",
        "report",
        "selection",
    ]
    # every decoder against the n-gram and against fused, on the report half
    rep = res["protocols"]["supplements"]["views"]["report"]
    assert list(rep["differences"]) == ["fused-ngram", "model-ngram", "model-fused"] + [
        f"fused-{w}" for w in sorted(without)
    ]
    # contamination measured against the training records, listed in its own file
    assert res["contamination"]["threshold"] == 0.75
    assert (out / "contamination.tsv").read_text().startswith("dev_text\ttier\twork")
    assert "contamination: 0 of 2 dev texts" in printed
    # the weight chosen on the selection half is the one stored beside the checkpoint
    from stoicheia.inference.ngram import load_ngram

    _, meta = load_ngram(tmp_path / "run" / "ngram.npz")
    assert meta["weight"] == fu["chosen"]["ngram"] and meta["chosen_on"] == fu["chosen_on"]
    assert (out / "reliability.png").stat().st_size > 1000
    assert (
        cli.main(
            [
                "benchmark",
                "stub.pt",
                "--shards",
                str(shards),
                "--out",
                str(out),
                "--protocols",
                "lost",
            ]
        )
        == 2
    )
    assert "invalid choice: 'lost'" in capsys.readouterr().err


def test_hidden_and_unknown_figures_by_hand_through_the_decoder():
    """Both span protocols on a fixture, the product's decoder with the stand-in model: the
    figures follow from the model's logits by hand."""
    dev = _dev("[καὶ] α̣β [τὸν] γ, [---]")  # the spans: β and γ (see above)
    tasks = build_tasks([dev], ["hidden", "unknown"], 5, 7)
    res = run_tasks({"model": ModelDecoder(_Stub(1), unknown_width=10)}, tasks)
    p = math.exp(8) / (math.exp(8) + 23)  # ρ at a 1-letter gap, against 23 letters
    q = math.exp(8) / (math.exp(8) + 24)  # the BLANK after it, against 24 letters and BLANK
    hidden = res["hidden"]["decoders"]["model"]
    # β (after α̣): top-1 ρ, then the other letters in alphabet order, tied: α, β -> rank 3.
    # γ stands alone between word breaks: restore's letter rules (which the benchmark's rows
    # share) make a one-letter word a vowel of α ε η ο ω (never ι or υ alone), so those 5 tie
    # first (α, probability 1/5)
    # and no consonant is offered: γ is not among them
    assert (hidden["gaps"], hidden["cer"], hidden["top1"], hidden["top5"]) == (2, 1.0, 0.0, 0.5)
    assert sorted(e["model"]["rank"] or 0 for e in res["hidden"]["examples"]) == [0, 3]
    assert hidden["ece"] == pytest.approx(0.5 * p + 0.5 / 5), "bins of confidence p and 1/5"
    unknown = res["unknown"]["decoders"]["model"]
    assert (unknown["gaps"], unknown["cer"], unknown["top1"], unknown["length_right"]) == (
        2,
        1.0,
        0.0,
        1.0,
    )
    # [---] alone as a word: a fill of one letter is a vowel (no lone ρ)
    tops = {e["truth"]: e["model"] for e in res["unknown"]["examples"]}
    assert tops["β"]["top1"] == "ρ" and tops["γ"]["top1"] == "α" and tops["γ"]["rank"] is None
    assert unknown["ece"] == pytest.approx(0.5 * p * q + 0.5 * tops["γ"]["prob"])


def test_ngram_file_round_trip_and_the_fusion_restore_finds_beside_the_checkpoint(tmp_path):
    from types import SimpleNamespace

    from stoicheia.cli_args import fusion_weights
    from stoicheia.inference.ngram import load_ngram, save_ngram
    from stoicheia.inference.restore import RestoreError
    from stoicheia.inference.restore.fusion_file import find_fusion

    ngram = LetterNgram(3).fit(
        [np.array([A.LETTERS.index(c) for c in "καιτονδημονκαιτηνβουλην" * 5], dtype=np.uint8)]
    )
    run = tmp_path / "run"
    run.mkdir()
    save_ngram(ngram, run / "ngram.npz", weight=0.7, chosen_on="12 gaps")
    back, meta = load_ngram(run / "ngram.npz")
    hist = np.array([[0, 1], [24, 24], [5, 9]])
    assert np.array_equal(back.log_probs(hist), ngram.log_probs(hist)) and meta == {
        "weight": 0.7,
        "chosen_on": "12 gaps",
    }
    loaded = SimpleNamespace(source=str(run / "best.pt"))
    fusion = find_fusion(loaded)
    assert fusion.weight == 0.7 and fusion.ngram.order == 3 and "chosen on 12 gaps" in fusion.source
    assert find_fusion(loaded, weight=0.3).weight == 0.3 and find_fusion(loaded, weight=0.0) is None
    assert find_fusion(loaded, weight=0.3).source == "ngram.npz, weight given"
    # fusion.json's weight (chosen by the benchmark with the parallels') is not "given"
    from stoicheia.inference.restore.fusion_file import FUSION_FILE, FusionConfig

    # (fusion.json's n-gram weight goes with its parallels: without an index, the n-gram's own)
    FusionConfig(ngram_weight=0.6, chosen_on="fused3, 9 gaps").save(run / FUSION_FILE)
    fusion = find_fusion(loaded)
    assert fusion.weight == 0.7 and fusion.source == "ngram.npz, weight chosen on 12 gaps"
    (run / FUSION_FILE).unlink()
    assert find_fusion(SimpleNamespace(source=str(tmp_path / "other" / "best.pt"))) is None, (
        "no file beside: the model alone"
    )
    with pytest.raises(RestoreError, match="no such n-gram file"):
        find_fusion(loaded, tmp_path / "missing.npz")
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(RestoreError, match="bad.npz: not an n-gram file"):
        find_fusion(loaded, tmp_path / "bad.npz")
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    with pytest.raises(RestoreError, match=r"other.npz: not an n-gram file .*no 'order' array\)"):
        find_fusion(loaded, tmp_path / "other.npz")
    assert fusion_weights("0, 0.5,1,0.5") == [0.0, 0.5, 1.0] and fusion_weights("") == []
    import argparse

    for bad, why in (("0.5,x", "'x' is not a number"), ("1.5", "outside")):
        with pytest.raises(argparse.ArgumentTypeError, match=why):
            fusion_weights(bad)


def test_benchmark_help_imports_no_numpy():
    """``stoicheia benchmark --help`` shows the benchmark's defaults (twin threshold, fused3 grid)
    from :mod:`stoicheia.inference.benchmark.defaults` without importing NumPy, torch or
    datasketch (the package's ``__init__`` imports nothing); checked in a fresh interpreter."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from stoicheia.cli import main\n"
        "assert main(['benchmark', '--help']) == 0\n"
        "heavy = [m for m in ('numpy', 'torch', 'datasketch') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "--twin-threshold" in res.stdout and "0.75" in res.stdout


def test_dev_text_with_two_accents_on_a_letter_keeps_the_first_as_the_shards_do(
    tmp_path, corpus_root
):
    """IOSPE 5.272 has `Χρο͂͂` (two perispomeni on one letter): restore's notation refuses it, so
    before, every decoder failed on every gap of that text (30 warnings in the demo). The dev
    text keeps the first mark, as convert does, and the removal is counted."""
    from stoicheia.text.encode import drop_stacked_marks, encode_text
    from stoicheia.text.leiden_segments import LeidenError

    assert drop_stacked_marks("Χρο\u0342\u0342 καὶ ἔ\u0301δωκε") == ("Χρο\u0342 καὶ ἔδωκε", 2)
    assert drop_stacked_marks("[καὶ] ᾅδου") == ("[καὶ] ᾅδου", 0)
    path = corpus_root / "iospe" / "5.272.xml"
    if not path.exists():
        pytest.skip("IOSPE not in the shared corpus")
    stats = {"inscription_dev": {"works": [{"work": "5.272.xml", "epidoc": str(path)}]}}
    (tmp_path / "stats.json").write_text(json.dumps(stats), encoding="utf-8")
    counts: Counter = Counter()
    texts = read_dev_texts(tmp_path, counts=counts)
    assert texts and counts["second_mark_on_a_letter"] >= 1
    for t in texts:
        encode_text(t.text, strict=True)  # reads: no LeidenError any more
    from stoicheia.sources import read_source

    raw = [r.text for r in read_source(path, None)]
    with pytest.raises(LeidenError):
        for r in raw:
            encode_text(r, strict=True)
