"""The benchmark's paired bootstrap intervals on hand-made results whose resampling can be
reasoned about: identical decoders, a decoder right where the other is wrong, inscriptions as
the resampling unit, CER pooled over the drawn gaps, seeded determinism, an old folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stoicheia.inference.benchmark.bootstrap import add_differences, paired_differences
from stoicheia.inference.benchmark.protocols import Task, inscription_of
from stoicheia.inference.benchmark.report import difference_lines, format_table, summary_lines
from stoicheia.inference.benchmark.rewrite import rewrite_folder
from stoicheia.inference.benchmark.run import run_tasks

REPO = Path(__file__).resolve().parents[1]


def _task(text_id: str, truth: str, start: int = 0) -> Task:
    return Task(
        "hidden", text_id, "[" + "." * len(truth) + "]", start, len(truth) + 2, 0, truth, True
    )


def _row(text: str, truth: str, **decoders: tuple[str, int | None]) -> dict:
    """A gap of a protocol's ``examples``: per decoder its top-1 and the truth's rank."""
    return {
        "text": text,
        "start": 0,
        "truth": truth,
        **{n: {"top1": t, "rank": r, "prob": 0.5} for n, (t, r) in decoders.items()},
    }


# three inscriptions, the first printed as two texts: six gaps of 1-4 letters
GAPS = [
    ("ISic000014.xml#1", "α"),
    ("ISic000014.xml#1", "βγ"),
    ("ISic000014.xml#2", "δεζ"),
    ("ISic000024.xml#1", "ηθ"),
    ("ISic000024.xml#1", "ικλμ"),
    ("ISic000034.xml#1", "ν"),
]


def test_identical_decoders_differ_by_zero_on_every_resample():
    rows = [
        _row(
            t,
            x,
            a=(x if i % 2 else "ω", 1 if i % 2 else None),
            b=(x if i % 2 else "ω", 1 if i % 2 else None),
        )
        for i, (t, x) in enumerate(GAPS)
    ]
    d = paired_differences(rows, [("a", "b")], ("top1", "top20", "cer"), resamples=500, seed=3)
    assert d == {
        "a-b": {f: {"diff": 0.0, "low": 0.0, "high": 0.0} for f in ("top1", "top20", "cer")}
    }


def test_right_everywhere_against_wrong_everywhere_is_100_points_on_every_resample():
    # a: the truth first; b: no candidate at all (a failed gap: empty top-1, every letter an error)
    rows = [_row(t, x, a=(x, 1), b=("", None)) for t, x in GAPS]
    d = paired_differences(
        rows, [("a", "b"), ("b", "a")], ("top1", "top20", "cer"), resamples=500, seed=3
    )
    assert d["a-b"]["top1"] == d["a-b"]["top20"] == {"diff": 1.0, "low": 1.0, "high": 1.0}
    assert d["a-b"]["cer"] == {"diff": -1.0, "low": -1.0, "high": -1.0}
    assert d["b-a"]["top1"] == {"diff": -1.0, "low": -1.0, "high": -1.0}
    assert difference_lines({"differences": d})[0] == (
        "  a - b            top-1 +100.0 pts [+100.0, +100.0]*  top-20 +100.0 pts [+100.0, +100.0]*"
        "  CER -100.0 pts [-100.0, -100.0]*"
    )


def test_cer_is_pooled_over_the_letters_not_a_mean_of_ratios():
    # a misses one letter of a 1-letter gap (ratio 1) and restores a 10-letter gap (ratio 0):
    # CER 1/11, where a mean of ratios would give 1/2; b is exact on both
    rows = [
        _row("ISic000014.xml#1", "α", a=("β", None), b=("α", 1)),
        _row("ISic000024.xml#1", "βγδεζηθικλ", a=("βγδεζηθικλ", 1), b=("βγδεζηθικλ", 1)),
    ]
    d = paired_differences(rows, [("a", "b")], ("top1", "cer"), resamples=1000, seed=0)
    assert d["a-b"]["cer"]["diff"] == pytest.approx(1 / 11)
    assert d["a-b"]["top1"]["diff"] == pytest.approx(-0.5)
    # two inscriptions: a resample holds the first twice (CER 2/2), once (1/11) or never (0);
    # 1,000 resamples draw each of the three often enough for the 2.5th and 97.5th percentiles
    # to fall on 0 and 1
    assert (d["a-b"]["cer"]["low"], d["a-b"]["cer"]["high"]) == (0.0, 1.0)


def test_inscriptions_are_the_resampling_unit():
    assert (
        inscription_of("ISic000014.xml#2") == "ISic000014.xml" == inscription_of("ISic000014.xml")
    )
    # inscription A: three gaps that a restores and b does not; inscription B: one gap both miss.
    # A resample draws two inscriptions: AA (p 1/4, difference 6/6), AB or BA (p 1/2, 3 of
    # the 4 gaps: 0.75, not the mean 0.5 of the two inscriptions' differences), BB (p 1/4, 0);
    # the 40th and 60th percentiles both fall in AB's half of the mass
    rows = [_row(f"A.xml#{i}", "α", a=("α", 1), b=("β", None)) for i in (1, 2, 2)]
    rows.append(_row("B.xml#1", "α", a=("β", None), b=("β", None)))
    d = paired_differences(rows, [("a", "b")], ("top1",), resamples=1000, seed=5, level=0.2)
    assert d["a-b"]["top1"] == {"diff": 0.75, "low": 0.75, "high": 0.75}
    # the 20th percentile falls in BB's quarter (0), the 80th in AA's (1). Gaps drawn one by
    # one would give 3 of 4 gaps of A with p 0.42, 2 of 4 (0.5) with p 0.21: [0.5, 1]
    d = paired_differences(rows, [("a", "b")], ("top1",), resamples=1000, seed=5, level=0.6)
    assert (d["a-b"]["top1"]["low"], d["a-b"]["top1"]["high"]) == (0.0, 1.0)
    # all the gaps in one inscription (two texts of it): nothing to resample, no interval
    one = paired_differences(rows[:3], [("a", "b")], ("top1",), resamples=10, seed=5)
    assert one["a-b"]["top1"] == {"diff": 1.0, "low": None, "high": None}
    assert "top-1 +100.0 pts [no interval]" in difference_lines({"differences": one})[0]


def _mixed_rows() -> list[dict]:
    """Gaps where the two decoders disagree one way and the other: a wide distribution."""
    out = []
    for i in range(40):
        truth = "αβγ"[: 1 + i % 3]
        a_right, b_right = i % 3 != 0, i % 4 != 0
        out.append(
            _row(
                f"ISic{i % 13:06d}.xml#1",
                truth,
                a=(truth if a_right else "ω", 1 if a_right else 7),
                b=(truth if b_right else "ωω", 1 if b_right else 5),
            )
        )
    return out


def test_seeded_and_deterministic():
    rows = _mixed_rows()
    first = paired_differences(rows, [("a", "b")], ("top1", "top20", "cer"), resamples=300, seed=11)
    assert first == paired_differences(
        rows, [("a", "b")], ("top1", "top20", "cer"), resamples=300, seed=11
    )
    other = paired_differences(rows, [("a", "b")], ("top1", "top20", "cer"), resamples=300, seed=12)
    assert other != first and other["a-b"]["top1"]["diff"] == first["a-b"]["top1"]["diff"]
    for f in ("top1", "cer"):
        assert first["a-b"][f]["low"] < first["a-b"][f]["diff"] < first["a-b"][f]["high"]
    assert first["a-b"]["top20"] == {"diff": 0.0, "low": 0.0, "high": 0.0}, (
        "both always in the 20 best"
    )
    with pytest.raises(ValueError, match="no gap"):
        paired_differences([], [("a", "b")])
    with pytest.raises(ValueError, match=r"gap 0 \(X#1 at 0\) has no truth or no top1/rank of c"):
        paired_differences([_row("X#1", "α", a=("α", 1))], [("a", "c")])


def _result(candidates: int = 20) -> dict:
    """A benchmark result of three decoders on the six GAPS, made by run_tasks itself."""
    tasks = {"hidden": [_task(t, x, i) for i, (t, x) in enumerate(GAPS)]}
    answers = {
        "model": lambda t: (["ω", t.truth], 0.4),  # the truth second
        "ngram": lambda t: ([t.truth] if len(t.truth) < 3 else ["ωωω"], 0.6),
        "fused": lambda t: ([t.truth], 0.7),
    }
    protocols = run_tasks(answers, tasks)
    return {
        "corpus": {"shards": "s", "digits": [4], "inscriptions": 3, "texts": 4, "letters": 13},
        "settings": {"seed": 1234, "candidates": candidates},
        "protocols": protocols,
        "published": [],
    }


def test_add_differences_to_a_result_and_its_table():
    res = add_differences(_result(), resamples=200)
    diffs = res["protocols"]["hidden"]["differences"]
    # every decoder against the n-gram, and the others against today's fused decoder
    assert list(diffs) == ["fused-ngram", "model-ngram", "model-fused"]
    assert diffs["model-fused"]["top1"]["diff"] == pytest.approx(-1.0)
    assert diffs["model-fused"]["top20"]["diff"] == pytest.approx(0.0)
    # and on each length band: 1-3 letters are α, βγ, δεζ, ηθ, ν; 4-6 and 4-10 the ικλμ alone
    bands = res["protocols"]["hidden"]["band_differences"]
    assert list(bands) == ["1-3", "4-6", "4-10"], "7-10 has no gap"
    assert bands["1-3"]["fused-ngram"]["top1"]["diff"] == pytest.approx(1 / 5)
    assert bands["4-10"]["fused-ngram"]["top1"]["diff"] == pytest.approx(1.0)
    assert bands["4-6"]["fused-ngram"]["top1"]["low"] is None, "one inscription: no interval"
    # n-gram: wrong on δεζ and ικλμ (2 of 6 gaps; 3 + 4 of 13 letters); fused: all right
    assert diffs["fused-ngram"]["top1"]["diff"] == pytest.approx(2 / 6)
    assert diffs["fused-ngram"]["cer"]["diff"] == pytest.approx(-7 / 13)
    assert diffs["model-ngram"]["top1"]["diff"] == pytest.approx(-4 / 6)
    assert diffs["model-ngram"]["top20"]["diff"] == pytest.approx(2 / 6)
    assert res["bootstrap"] == {
        "resamples": 200,
        "seed": 1234,
        "level": 0.95,
        "unit": "inscription (the text id before '#'), every gap of each drawn inscription",
        "inscriptions": {"hidden": 3},
    }
    again = add_differences(_result(), resamples=200)  # seeded with settings.seed
    assert again["protocols"]["hidden"]["differences"] == diffs
    table = format_table(res)
    assert any(line.startswith("  fused - n-gram   top-1 +33.3 pts [") for line in table)
    assert any(
        "paired bootstrap over the inscriptions (200 resamples, seed 1234)" in line
        for line in table
    )
    assert difference_lines(res["protocols"]["hidden"])[1] in summary_lines(res)
    # 0 resamples: nothing added; 5 candidates: no top-20
    assert "differences" not in add_differences(_result(), resamples=0)["protocols"]["hidden"]
    assert list(
        add_differences(_result(5), resamples=20)["protocols"]["hidden"]["differences"][
            "fused-ngram"
        ]
    ) == ["top1", "cer"]
    # a protocol without a gap (no supplement in these texts) gets no differences
    empty = _result()
    empty["protocols"]["supplements"] = run_tasks(
        {"model": None, "ngram": None}, {"supplements": []}
    )["supplements"]
    empty = add_differences(empty, resamples=20)
    assert "differences" not in empty["protocols"]["supplements"]
    assert empty["bootstrap"]["inscriptions"] == {"hidden": 3}
    # without the n-gram there is no pair to compare
    alone = _result()
    for name in ("ngram", "fused"):
        del alone["protocols"]["hidden"]["decoders"][name]
    assert "differences" not in add_differences(alone, resamples=20)["protocols"]["hidden"]


def test_a_result_whose_examples_do_not_give_its_figures_is_refused():
    res = _result()
    res["protocols"]["hidden"]["decoders"]["fused"]["cer"] = 0.25
    with pytest.raises(
        ValueError,
        match="hidden: the examples give fused's cer as 0.000000, the result records 0.250000",
    ):
        add_differences(res, resamples=10)
    res = _result()
    del res["protocols"]["hidden"]["examples"]
    with pytest.raises(ValueError, match="protocol hidden has no per-gap examples"):
        add_differences(res, resamples=10)


def test_an_old_benchmark_folder_gets_its_intervals(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    (old / "benchmark.json").write_text(json.dumps(_result()), encoding="utf-8")
    paths = rewrite_folder(old, tmp_path / "new", resamples=50, seed=7)
    assert [p.name for p in paths] == [
        "benchmark.json",
        "benchmark.txt",
        "summary.txt",
        "reliability.png",
    ]
    got = json.loads(paths[0].read_text(encoding="utf-8"))
    assert got["bootstrap"]["seed"] == 7 and "differences" in got["protocols"]["hidden"]
    assert (
        got["protocols"]["hidden"]["differences"]
        == add_differences(_result(), 50, 7)["protocols"]["hidden"]["differences"]
    )
    assert "fused - n-gram" in paths[1].read_text(encoding="utf-8")
    assert (
        json.loads((old / "benchmark.json").read_text())["protocols"]["hidden"].get("differences")
        is None
    )
    with pytest.raises(
        ValueError, match=r"nowhere/benchmark.json: no such file; give the --out folder"
    ):
        rewrite_folder(tmp_path / "nowhere")
    (old / "benchmark.json").write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match=r"old/benchmark.json: not a readable benchmark result"):
        rewrite_folder(old)
    script = [sys.executable, str(REPO / "scripts" / "benchmark_intervals.py")]
    run = subprocess.run(
        [*script, str(tmp_path / "nowhere")], capture_output=True, text=True, cwd=REPO
    )
    assert (
        run.returncode == 2
        and run.stderr.startswith("benchmark_intervals: ")
        and "no such file" in run.stderr
    )
    (old / "benchmark.json").write_text(json.dumps(_result()), encoding="utf-8")
    run = subprocess.run(
        [*script, str(old), "--bootstrap", "40"], capture_output=True, text=True, cwd=REPO
    )
    assert run.returncode == 0, run.stderr
    assert "  fused - n-gram   top-1 +33.3 pts [" in run.stdout
    assert json.loads((old / "benchmark.json").read_text())["bootstrap"]["resamples"] == 40


def test_the_bootstrap_option_takes_a_count_of_resamples(tmp_path, capsys):
    from stoicheia.cli import main

    args = ["benchmark", "x.pt", "--out", str(tmp_path / "b"), "--bootstrap"]
    assert main([*args, "-1"]) == 2
    assert "--bootstrap: -1 is out of range; give a whole number from 0 to 100,000 resamples" in (
        capsys.readouterr().err
    )


def test_gaps_of_unknown_width_compare_how_often_the_length_is_right():
    # a gets the length of every gap right (one letter wrong in ικλμ), b only on the 1-letter
    # gaps (α, ν): 6/6 against 2/6; both are resampled as inscriptions, like the other figures
    rows = [
        _row(t, x, a=(x if len(x) != 4 else "ικλξ", 1 if len(x) != 4 else None), b=(x[:1], None))
        for t, x in GAPS
    ]
    d = paired_differences(
        rows, [("a", "b")], ("top1", "cer", "length_right"), resamples=300, seed=5
    )
    assert d["a-b"]["length_right"]["diff"] == pytest.approx(4 / 6)
    assert 0 < d["a-b"]["length_right"]["low"] <= 4 / 6 <= d["a-b"]["length_right"]["high"]
    assert "length +66.7 pts [" in difference_lines({"differences": d})[0]
    # a benchmark result of the unknown protocol (its decoders record length_right) gets the
    # length compared; a known-width protocol does not
    res = _result()
    hidden = res["protocols"]["hidden"]
    for name, dec in hidden["decoders"].items():
        dec["length_right"] = sum(
            len(r[name]["top1"]) == len(r["truth"]) for r in hidden["examples"]
        ) / len(hidden["examples"])
    res["protocols"] = {"unknown": hidden}
    diffs = add_differences(res, resamples=50)["protocols"]["unknown"]["differences"]
    assert all("length_right" in figs for figs in diffs.values())
    assert (
        "length_right"
        not in add_differences(_result(), resamples=50)["protocols"]["hidden"]["differences"][
            "fused-ngram"
        ]
    )
