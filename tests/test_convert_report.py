"""``stoicheia convert`` tells the truth about what it read: files that are not what their
suffix says are refused (or counted with --skip-bad), dangling links are listed, the counts
that matter are in the summary line, and a long conversion shows its progress."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from stoicheia.cli import main
from stoicheia.sources import SourceError, read_source

# An English translation in a Perseus-style TEI P4 file, in verse lines, without a lang
# attribute: each line holds at most one capitalised word, so the reader's Latin-chunk rule
# (two capitalised ASCII words, no accent) does not catch it, and its Beta Code conversion
# made Greek-looking letters of it ("from the heliconian muses" -> "φρομ τηε ...").
ENGLISH_P4 = """<?xml version="1.0" encoding="UTF-8"?>
<TEI.2>
<teiHeader><fileDesc><titleStmt><title>Theogony (English)</title></titleStmt></fileDesc></teiHeader>
<text><body>
<div1 type="card" n="1">
<l n="1">from the heliconian muses let us begin to sing,</l>
<l n="2">who hold the great and holy mount of helicon,</l>
<l n="3">and dance on soft feet about the deep-blue spring</l>
<l n="4">and the altar of the almighty son of cronos,</l>
<l n="5">and, when they have washed their tender bodies</l>
<l n="6">in permessus or in the horse's spring or olmeius,</l>
<l n="7">make their fair, lovely dances upon highest helicon</l>
<l n="8">and move with vigorous feet.</l>
</div1>
</body></text>
</TEI.2>
"""


def test_conllu_token_lines_that_are_not_10_columns_are_refused(tmp_path):
    for n in (2, 3, 4):
        f = tmp_path / f"cols{n}.conllu"
        cols = ["1", "ἐν", "ἐν", "ADP"][:n]
        f.write_text(
            "# text = ἐν ἀρχῇ\n"
            + "\t".join(cols)
            + "\n"
            + "\t".join(["2", "ἀρχῇ", "ἀρχή", "NOUN"][:n])
            + "\n\n",
            encoding="utf-8",
        )
        with pytest.raises(
            SourceError,
            match=rf"cols{n}\.conllu:2: token line has {n} tab-separated columns, CoNLL-U has 10",
        ):
            list(read_source(f, None, counts=Counter()))


def test_real_ud_files_still_read(corpus_root):
    for name in ("grc_proiel-ud-dev.conllu", "grc_perseus-ud-dev.conllu"):
        assert sum(1 for _ in read_source(corpus_root / "ud" / name, None, counts=Counter())) >= 1


def test_english_tei_p4_without_lang_is_refused_not_read_as_greek(tmp_path):
    f = tmp_path / "hes.th_eng.xml"
    f.write_text(ENGLISH_P4, encoding="utf-8")
    with pytest.raises(
        SourceError,
        match=r"hes\.th_eng\.xml:\d+: the text is not Beta Code Greek: "
        r"0 of \d+ words carry a Greek accent",
    ):
        list(read_source(f, None, counts=Counter()))


def test_real_perseus_files_with_the_fewest_accents_are_still_read(corpus_root):
    """The Perseus files whose words carry the fewest Beta Code accents (the Ichneutae
    papyrus, 64%; Euclid's labels; a short Dionysius) are Greek and read."""
    for rel in (
        "Sophocles/soph.ich_gk.xml",
        "Dionysius/dh.007_gk.xml",
        "Aristotle/aristot.econ_gk.xml",
    ):
        recs = list(
            read_source(corpus_root / "perseus" / rel, corpus_root / "perseus", counts=Counter())
        )
        assert recs and all(r.text for r in recs), rel


def test_convert_refuses_or_counts_such_files_and_lists_dangling_links(
    corpus_root, tmp_path, capsys
):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(corpus_root / "ud" / "grc_proiel-ud-dev.conllu", src / "grc_proiel-ud-dev.conllu")
    (src / "english.xml").write_text(ENGLISH_P4, encoding="utf-8")
    (src / "tagged.conllu").write_text(
        "# text = ἐν ἀρχῇ\n1\tἐν\tADP\n2\tἀρχῇ\tNOUN\n\n", encoding="utf-8"
    )
    os.symlink(tmp_path / "moved-away.conllu", src / "gone.conllu")  # a link whose target was moved
    (src / "notes.md").write_text("not a source\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["convert", f"silver={src}", "--out", str(out), "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert "english.xml" in err and "not Beta Code Greek" in err and "--skip-bad" in err
    assert (
        main(["convert", f"silver={src}", "--out", str(out), "--workers", "1", "--skip-bad"]) == 0
    )
    printed = capsys.readouterr().out
    stats = json.loads((out / "stats.json").read_text())["tiers"]["silver"]
    assert sorted(Path(p).name for p in stats["files_skipped"]) == ["english.xml", "tagged.conllu"]
    assert "files skipped 2" in printed
    assert (
        f"  dangling link {src / 'gone.conllu'} -> {tmp_path / 'moved-away.conllu'} "
        "(its target does not exist): not read" in printed
    )
    assert str(src / "gone.conllu") in stats["files_not_read"]
    assert "  1 file in the directories is not a source and was not read" in printed
    assert stats["records_kept"]["train"] >= 1  # the good file is converted


def test_summary_line_counts_files_without_records_and_leiden_repairs(
    corpus_root, tmp_path, capsys, monkeypatch
):
    """Real I.Sicily files: many keep no Greek record (Latin, or nothing legible); the
    summary line says how many, and how many Leiden notations were repaired, as stats.json
    does. Not on a terminal, a progress line is printed (every 30 s; here every file)."""
    from stoicheia.data import conversion_pool

    monkeypatch.setattr(conversion_pool, "PROGRESS_EVERY", 0.0)
    files = sorted((corpus_root / "isicily" / "inscriptions").glob("ISic*.xml"))[:120]
    folder = tmp_path / "isic"
    folder.mkdir()
    for f in files:
        shutil.copy(f, folder / f.name)
    out = tmp_path / "out"
    assert main(["convert", f"bronze={folder}", "--out", str(out), "--workers", "1"]) == 0
    cap = capsys.readouterr()
    st = json.loads((out / "stats.json").read_text())["tiers"]["bronze"]
    without = len(st["files_without_records"])
    repaired = st["leiden"].get("leiden_repaired", 0)
    assert without > 0, "some of these I.Sicily files keep no Greek record"
    line = next(x for x in cap.out.splitlines() if x.startswith("bronze: "))
    why = st["files_without_records_why"]
    assert sum(why.values()) == without and "edition not in Greek" in why, why
    listed = ", ".join(f"{k} {v}" for k, v in why.items())
    assert f"files without a kept record {without} ({listed})," in line
    assert f"Leiden notation repaired {repaired:,}," in line
    progress = [x for x in cap.err.splitlines() if x.startswith("convert: bronze ")]
    assert progress and re.fullmatch(
        r"convert: bronze \d+/120 files, [\d,]+ records, ETA \d+ min", progress[-1]
    ), progress[-3:]
