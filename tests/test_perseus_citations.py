"""Literary parallels cited by canonical reference (issue 31 §3): the Perseus reader gives each
record its citation lines from the TEI's own numbering (sections, verse lines, Stephanus
sections), under the work's short title from the header, and the parallels name a stretch as a
classicist looks it up (``Josephus, AJ 14.195``). On real Perseus files, read in place."""

from __future__ import annotations

from collections import Counter

import pytest

from stoicheia.inference.benchmark.protocols import base_letters
from stoicheia.inference.parallels.index import Source, cited_range
from stoicheia.sources.perseus import read_perseus, reference


@pytest.fixture(scope="module")
def perseus(corpus_root):
    return corpus_root / "perseus"


def _record(perseus, path: str, cite: str):
    counts: Counter = Counter()
    recs = list(read_perseus(perseus / path, perseus, counts=counts))
    return next(r for r in recs if r.id.endswith("#" + cite)), recs, counts


def _letters_agree(rec) -> None:
    """The lines read one after the other hold the record's letters, in order."""
    assert base_letters("".join(t for _, t in rec.lines)) == base_letters(rec.text), rec.id


def test_josephus_sections_under_book_and_the_headers_abbreviation(perseus):
    rec, recs, counts = _record(perseus, "Josephus/j.aj_gk.xml", "14")
    refs = dict(rec.lines)
    # <milestone n="195" unit="section"/> in book 14: the Niese section, not Whiston's numbering
    assert refs["AJ 14.195"].startswith("ὅσα τε κατὰ τοὺς ἰδίους αὐτῶν νόμους")
    assert refs["AJ 14.196"].startswith("Γαΐου Καίσαρος")
    labels = [label for label, _ in rec.lines]
    # the book's text before its first section: the book itself
    assert labels[0] == "AJ 14" and labels[1] == "AJ 14.1" and labels[-1] == "AJ 14.491"
    assert not any("Whiston" in (label or "") for label in labels)
    for r in recs:
        _letters_agree(r)
    assert counts["citation_lines"] == sum(len(r.lines) - 1 for r in recs)
    # the record's text and id are as before: only the lines are new
    assert rec.id == "Josephus/j.aj_gk.xml#14" and rec.text.startswith("Τῶν δὲ περὶ Ἀλεξάνδραν")


def test_verse_lines_counted_where_the_tei_numbers_every_fifth(perseus):
    # Hesiod's Theogony: one division named "Th." (it names the work), <l n="5"> every fifth
    rec, _, _ = _record(perseus, "Hesiod/hes.th_gk.xml", "Th.")
    labels = [label for label, _ in rec.lines]
    assert labels[1:6] == ["Th. 1", "Th. 2", "Th. 3", "Th. 4", "Th. 5"]
    assert dict(rec.lines)["Th. 1"].startswith("μουσάων Ἑλικωνιάδων")
    _letters_agree(rec)
    # a play: its episodes and odes are structure, its lines run on through them
    recs = list(read_perseus(perseus / "Sophocles/soph.ant_gk.xml", perseus))
    # (a line split between speakers is "161b": its number is 161)
    numbers = [int(label.split()[-1].rstrip("ab")) for r in recs for label, _ in r.lines if label]
    assert numbers[:3] == [1, 2, 3] and numbers == sorted(numbers)
    assert all(label.startswith("Ant. ") for r in recs for label, _ in r.lines if label)


def test_stephanus_sections_and_plutarchs_chapters(perseus):
    # a file of several works: the dialogue's name, then the Stephanus section
    rec, _, _ = _record(perseus, "Plato/plat.tet1_gk.xml", "Euthyph.")
    assert [label for label, _ in rec.lines][1:3] == ["Euthyph. 2a", "Euthyph. 2b"]
    assert dict(rec.lines)["Euthyph. 2a"].startswith("τί νεώτερον, ὦ Σώκρατες")
    _letters_agree(rec)
    # Plutarch's Lives: chapters by milestone (the record), sections within them
    rec, _, _ = _record(perseus, "Plutarch/plut.ant_gk.xml", "6")
    assert [label for label, _ in rec.lines][1:3] == ["Ant. 6.1", "Ant. 6.2"]


@pytest.mark.parametrize(
    "path, cite, first",
    [
        # speech and section are divisions (no milestone inside): the record is the reference
        ("Aeschines/aeschin_gk.xml", "2.114", "Speeches 2.114"),
        # a book of chapter milestones and no section: the chapters are its citation lines
        ("Athenaeus/ath10_gk.xml", "10", "Deipnosophists 10"),
        # a division named for its work (Hippocrates' Ancient Medicine), then its chapter
        ("Hippocrates/hp.jones_gk.xml", "VM.1", "VM 1"),
        ("Galen/gal.nat.fac_gk.xml", "1.1", "On the Natural Faculties 1.1"),
        # a short piece numbered by nothing: its title
        ("Lucian/71_gk.xml", "body", None),
    ],
)
def test_every_record_has_a_reference_where_the_tei_numbers_no_line(perseus, path, cite, first):
    """Parallels from these works were cited by raw ids (``Aeschines, aeschin 2.114``,
    ``Athenaeus, ath10 10``): the record's own divisions, under the header's title, label its
    text that no finer citation point labels, so every letter has a canonical reference."""
    rec, recs, _ = _record(perseus, path, cite)
    labels = [label for label, _ in rec.lines]
    if first is not None:
        assert labels[0] == first, labels[:3]
    assert labels and all(labels), (rec.id, labels[:5])
    for r in recs:
        _letters_agree(r)


def test_athenaeus_chapters_are_citation_lines(perseus):
    rec, _, _ = _record(perseus, "Athenaeus/ath10_gk.xml", "10")
    labels = [label for label, _ in rec.lines]
    assert labels[1:3] == ["Deipnosophists 10.2", "Deipnosophists 10.3"]
    # a file that numbers sections keeps them: Herodotus' chapters do not become lines
    rec, _, _ = _record(perseus, "Herodotus/hdt_gk.xml", "1")
    assert [label for label, _ in rec.lines[:2]] == ["Histories 1", "Histories 1.1.0"]


def test_reference_and_range_as_a_classicist_writes_them():
    assert reference("AJ", "14|195") == "AJ 14.195"
    assert reference("Iliad", "1|5") == "Iliad 1.5"
    assert reference(None, "Euthyph.|2a") == "Euthyph. 2a"
    assert reference("Theogony", "Th.|1") == "Th. 1", "a named division names the work"
    assert reference(None, "3") == "3"
    assert cited_range("AJ 14.195–AJ 14.196") == "AJ 14.195–196"
    assert cited_range("Iliad 1.5–Iliad 1.7") == "Iliad 1.5–7"
    assert cited_range("Ant. 99–Ant. 100") == "Ant. 99–100"
    assert cited_range("AJ 14.195") == "AJ 14.195"


def test_a_parallels_source_is_cited_by_author_and_reference():
    def src(line, span=True):
        return Source(
            "gold", "Josephus/j.aj_gk.xml", "Josephus/j.aj_gk.xml#14", 3, 10, "", line, span
        )

    assert src("AJ 14.195").label() == "Josephus, AJ 14.195"
    assert src("AJ 14.195–AJ 14.196").label() == "Josephus, AJ 14.195–196"
    # shards converted before the reader kept the references, or no stretch asked: as before
    assert src(None).label() == "Josephus, j.aj 14"
    assert src(None, span=False).label() == "Josephus, j.aj 14"


def test_the_index_carries_the_references_of_a_converted_play(perseus, tmp_path):
    from stoicheia.data.shards import convert
    from stoicheia.inference.parallels import ParallelsIndex

    out = tmp_path / "shards"
    convert(
        {"gold": [perseus / "Sophocles" / "soph.ant_gk.xml"]},
        out,
        val_fraction=0.0,
        max_record_letters=300,
        workers=1,
        progress=False,
    )
    index = ParallelsIndex(out / "parallels")
    a, _ = index.record_span(0)
    assert index.lines(a, a + 1) == "Ant. 1"
    first, last = index.lines(a, a + 120).split("–")
    assert first == "Ant. 1" and last.startswith("Ant. ") and int(last.split()[-1]) > 1
    # the lines' letters agree with the records': laid on their slots without realignment
    import json

    reader = json.loads((out / "stats.json").read_text())["tiers"]["gold"]["reader_counts"]
    assert reader.get("line_numbers", 0) > 1000 and not reader.get("line_numbers_realigned")
