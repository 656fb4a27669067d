"""Two benchmark runs compared gap by gap (stoicheia.inference.benchmark.compare,
scripts/benchmark_compare.py, scripts/benchmark_matrix.py) on hand-made results whose figures
can be reasoned about: a decoder that gains only on one corpus's inscriptions, the halves, the
training twins, the corpus order, runs that restored other gaps."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from stoicheia.inference.benchmark.compare import (
    CompareError,
    compare,
    corpora,
    matrix_table,
    paired_rows,
    per_corpus_table,
)

REPO = Path(__file__).resolve().parents[1]

# four inscriptions of each corpus, two gaps each; the halves alternate by inscription
INSCRIPTIONS = [(f"ISic00{i}004.xml", "I.Sicily") for i in range(4)] + [
    (f"akko{i}004.xml", "IIP") for i in range(4)
]


def _run(right: dict[str, set[str]], twin: set[str] = frozenset(), extra: str | None = None):
    """A ``benchmark.json`` with protocols hidden and supplements: each decoder of ``right``
    (decoder -> the corpora where its top-1 is right) restores every gap of those corpora and
    misses the others (rank 0, a wrong letter); ``twin``: inscriptions with a training twin;
    ``extra``: the corpus name of one more inscription (``SEG``)."""
    inscriptions = INSCRIPTIONS + ([("seg0001004.xml", extra)] if extra else [])
    protocols = {}
    for protocol in ("hidden", "supplements"):
        rows = []
        for k, (work, corpus) in enumerate(inscriptions):
            for g, truth in enumerate(("αβ", "γδε")):
                row = {
                    "text": f"{work}#1",
                    "start": 4 * g,
                    "end": 4 * g + len(truth) + 2,
                    "truth": truth,
                    "half": "report" if k % 2 else "selection",
                    "twin": work in twin,
                    "corpus": corpus,
                }
                for d, where in right.items():
                    ok = corpus in where
                    row[d] = {"top1": truth if ok else "ω", "rank": 1 if ok else 0, "prob": 0.5}
                rows.append(row)
        protocols[protocol] = {"decoders": {d: {} for d in right}, "examples": rows}
    return {"protocols": protocols}


BEFORE = _run({"ngram": {"I.Sicily"}, "parallels": {"I.Sicily"}})
AFTER = _run({"ngram": {"I.Sicily"}, "parallels": {"I.Sicily", "IIP"}})


def test_per_corpus_table_gives_each_corpus_its_own_gain():
    lines = per_corpus_table(BEFORE, AFTER, "all", 200, "top1", ["ngram", "parallels"])
    assert lines[0] == (
        "| protocol | corpus | gaps (inscriptions) | n-gram top1 | parallels top1 |"
    )
    hidden = [line for line in lines if line.startswith("| hidden spans |")]
    assert [line.split(" | ")[1] for line in hidden] == ["I.Sicily", "IIP", "all"]
    sicily, iip, both = hidden
    assert "| 8 (4) |" in sicily
    assert sicily.endswith(
        "| 100.0 → 100.0, +0.0 [+0.0, +0.0] | 100.0 → 100.0, +0.0 [+0.0, +0.0] |"
    )
    # IIP: every gap wrong before, right after, on every resample of the inscriptions
    assert iip.endswith("| 0.0 → 0.0, +0.0 [+0.0, +0.0] | 0.0 → 100.0, +100.0 [+100.0, +100.0]* |")
    # all: half the gaps gained; the interval moves with the resampled share of IIP
    cell = both.split(" | ")[-1]
    assert cell.startswith("50.0 → 100.0, +50.0 [") and cell.endswith("]* |")
    assert sum(line.startswith("| editors' supplements |") for line in lines) == 3


def test_halves_and_twins_choose_the_gaps():
    rows = paired_rows(BEFORE, AFTER, "hidden", ["parallels"], "IIP", "report")
    assert {r["text"] for r in rows} == {"akko1004.xml#1", "akko3004.xml#1"}
    twin = _run({"ngram": {"I.Sicily"}, "parallels": {"I.Sicily", "IIP"}}, twin={"akko1004.xml"})
    rows = paired_rows(BEFORE, twin, "hidden", ["parallels"], "IIP", "all", without_twins=True)
    assert len(rows) == 6 and "akko1004.xml#1" not in {r["text"] for r in rows}
    assert rows[0]["parallels@before"]["rank"] == 0 and rows[0]["parallels@after"]["rank"] == 1


def test_compare_lines_name_the_corpus_and_the_interval():
    lines = compare(BEFORE, AFTER, "IIP", "all", 200)
    assert lines[0].startswith("hidden: 8 gaps of 4 inscriptions (all half, IIP); after − before")
    par = next(line for line in lines[1:4] if line.strip().startswith("parallels"))
    assert "top1 0.0 -> 100.0 (+100.0 [+100.0, +100.0]*)" in par
    assert "cer 100.0 -> 0.0 (-100.0 [-100.0, -100.0]*)" in par


def test_other_corpora_follow_the_five_in_order():
    run = _run({"ngram": {"IIP"}}, extra="SEG")
    assert corpora(run) == ["I.Sicily", "IIP", "SEG"]


def test_runs_of_other_gaps_are_refused():
    other = copy.deepcopy(AFTER)
    other["protocols"]["hidden"]["examples"][3]["start"] = 99
    with pytest.raises(CompareError, match="protocol hidden: the two runs restored other gaps"):
        per_corpus_table(BEFORE, other, "all", 10)
    with pytest.raises(CompareError, match="decoder\\(s\\) model not scored by both runs"):
        per_corpus_table(BEFORE, AFTER, "all", 10, names=["model"])


def test_matrix_puts_each_tiers_gain_on_its_own_corpus():
    without_sicily = _run({"ngram": {"I.Sicily"}, "parallels": {"IIP"}})
    lines = matrix_table(
        AFTER, {"iip": BEFORE, "isicily": without_sicily}, "hidden", "parallels", "all", 200
    )
    assert lines[0] == (
        "| hidden spans: parallels top1, with all − without | I.Sicily | IIP | all |"
    )
    assert lines[2] == "| gaps (inscriptions) | 8 (4) | 8 (4) | 16 (8) |"
    assert lines[3].startswith("| without iip | +0.0 [+0.0, +0.0] | +100.0 [+100.0, +100.0]* |")
    assert lines[4].startswith("| without isicily | +100.0 [+100.0, +100.0]* | +0.0 [+0.0, +0.0] |")
    assert lines[5] == "| with all: top1 | 100.0 | 100.0 | 100.0 |"
    with pytest.raises(CompareError, match="decoder model not scored both with and without iip"):
        matrix_table(AFTER, {"iip": BEFORE}, "hidden", "model", "all", 10)
    with pytest.raises(CompareError, match="at least one"):
        matrix_table(AFTER, {}, "hidden", "parallels", "all", 10)


def _write(folder: Path, result: dict) -> str:
    folder.mkdir()
    (folder / "benchmark.json").write_text(json.dumps(result), encoding="utf-8")
    return str(folder)


def _script(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / name), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


def test_scripts_print_the_tables_and_refuse_with_one_line(tmp_path):
    before, after = _write(tmp_path / "b", BEFORE), _write(tmp_path / "a", AFTER)
    done = _script(
        "benchmark_compare.py", before, after, "--per-corpus", "--half", "all", "--resamples", "50"
    )
    assert done.returncode == 0, done.stderr
    assert "| hidden spans | IIP | 8 (4) |" in done.stdout
    done = _script("benchmark_matrix.py", after, f"iip={before}", "--half", "all")
    assert done.returncode == 0, done.stderr
    assert "| without iip | +0.0 [+0.0, +0.0] | +100.0 [+100.0, +100.0]* |" in done.stdout
    assert "| editors' supplements: parallels top1" in done.stdout
    missing = str(tmp_path / "nothing")
    done = _script("benchmark_matrix.py", after, f"iip={missing}")
    assert done.returncode == 2
    assert done.stderr.startswith("benchmark_matrix: ") and "benchmark.json" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    done = _script("benchmark_matrix.py", after, "iip")
    assert done.returncode == 2 and "give NAME=FOLDER" in done.stderr
