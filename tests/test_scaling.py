"""benchmarks/scaling.py: compute per run from its own files, and the straight-line crossing."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("scaling", ROOT / "benchmarks" / "scaling.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["scaling"] = mod
    spec.loader.exec_module(mod)
    return mod


scaling = _load()


def _run(tmp: Path, name: str, d_model: int, tokens: int, dev: float, model_top1: float) -> tuple:
    run, bench = tmp / name, tmp / f"{name}-bench"
    run.mkdir()
    bench.mkdir()
    cfg = {
        "model": {"d_model": d_model, "n_layers": 2, "n_heads": 2, "char_window": 16},
        "data": {"seq_len": 64},
    }
    (run / "config.json").write_text(json.dumps(cfg))
    (run / "best.json").write_text(json.dumps({"step": 9, "value": dev}))
    rows = [
        {"step": 1, "time/token": tokens // 2},
        {"step": 2, "eval/dev/bits_per_char": 5.0},  # an evaluation row: no time/token
        {"step": 3, "time/token": tokens},
    ]
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    decoders = {
        "model": {"top1": model_top1},
        "ngram": {"top1": 0.2},
        "fused": {"top1": 0.21},
        "fused3": {"top1": 0.25},
    }
    # the whole set's figures differ from the report half's: the report half is read
    whole = {d: {"top1": 0.99} for d in decoders}
    diff = {"top1": {"diff": model_top1 - 0.2, "low": model_top1 - 0.25, "high": model_top1 - 0.15}}
    report = {"decoders": decoders, "differences": {"model-ngram": diff}}
    bench_json = {"protocols": {"hidden": {"decoders": whole, "views": {"report": report}}}}
    (bench / "benchmark.json").write_text(json.dumps(bench_json))
    return run, bench


def test_point_counts_compute_from_the_last_training_row(tmp_path):
    run, bench = _run(tmp_path, "a", 32, 1000, 3.1, 0.05)
    p = scaling.read_point(10, run, bench)
    enc = scaling.CharBertEncoder(
        scaling.EncoderConfig(d_model=32, n_layers=2, n_heads=2, char_window=16)
    )
    assert p.letters == 1000 and p.steps == 3
    assert p.flops == pytest.approx(scaling.flops_per_letter(enc, 64) * 1000)
    assert p.parameters == sum(x.numel() for x in enc.parameters())
    assert p.dev_bits_per_char == 3.1
    assert p.top1 == {"hidden": {"model": 0.05, "ngram": 0.2, "fused": 0.21, "fused3": 0.25}}
    assert p.model_minus_ngram["hidden"] == pytest.approx(
        {"diff": -0.15, "low": -0.2, "high": -0.1}
    )


def test_crossing_is_where_the_fitted_line_meets_the_ngram(tmp_path):
    a = scaling.read_point(10, *_run(tmp_path, "a", 32, 1000, 3.1, 0.05))
    b = scaling.read_point(100, *_run(tmp_path, "b", 32, 10000, 3.0, 0.10))
    c = scaling.crossing([a, b], "hidden")
    # 0.05 points of top-1 per decade of FLOPs; 0.10 short of the n-gram's 0.20 -> 2 decades on
    assert c["slope_per_decade"] == pytest.approx(0.05)
    assert math.log10(c["flops"]) == pytest.approx(math.log10(b.flops) + 2)
    assert scaling.crossing([a], "hidden") is None
    flat = scaling.read_point(100, *_run(tmp_path, "c", 32, 10000, 3.0, 0.04))
    assert scaling.crossing([a, flat], "hidden")["flops"] is None


def test_a_missing_file_names_the_folder(tmp_path):
    run, bench = _run(tmp_path, "a", 32, 1000, 3.1, 0.05)
    (run / "best.json").unlink()
    with pytest.raises(SystemExit, match="best.json is missing"):
        scaling.read_point(10, run, bench)


def test_two_benchmarks_are_compared_on_the_same_gaps(tmp_path):
    """A larger run against the smallest: paired over inscriptions, report half only, and no
    comparison at all when the gaps differ."""

    def bench(name: str, hits: list[bool]) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        rows = []
        for i, hit in enumerate(hits):
            truth = "αβγ"
            got = {"top1": truth if hit else "δδδ", "rank": 1 if hit else None}
            rows.append(
                {
                    "text": f"ISic{i % 4:06d}.xml#1",
                    "start": i,
                    "end": i + 3,
                    "truth": truth,
                    "half": "report" if i < 8 else "selection",
                    "model": got,
                    "fused3": got,
                }
            )
        data = {"protocols": {"hidden": {"examples": rows}}}
        (folder / "benchmark.json").write_text(json.dumps(data))
        return folder

    small = bench("small", [False] * 8 + [True] * 4)
    large = bench("large", [True, False] * 4 + [False] * 4)
    v = scaling.versus(large, small)
    # report half: 4 of 8 against 0 of 8 (the selection half's hits do not count)
    assert v["model"]["diff"] == pytest.approx(0.5) and v["fused3"]["diff"] == pytest.approx(0.5)
    assert v["model"]["low"] <= 0.5 <= v["model"]["high"]
    other = bench("other", [True] * 7)
    assert scaling.versus(other, small) is None
