"""The edition's line numbers, from ``<lb n="..."/>`` to the parallels shown to the user: the
EpiDoc reader, the shards' ``lines`` column, the parallels index and the labels. On a small
EpiDoc corpus the tests write (markup the real files show, in one place), converted and
indexed."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from stoicheia.data.line_numbers import decode_lines, line_starts
from stoicheia.data.parallels_index import build_index
from stoicheia.data.shards import COLUMNS, convert, decode_planes
from stoicheia.inference.parallels import ParallelsIndex, gap_parallels
from stoicheia.inference.parallels.display import parallel_lines
from stoicheia.inference.parallels.index import IndexError_, Source
from stoicheia.inference.parallels.passages import shared_passages
from stoicheia.sources.epidoc import read_epidoc
from stoicheia.text.encode import encode_text

_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<TEI xmlns="http://www.tei-c.org/ns/1.0">'
    '<teiHeader><profileDesc><textLang mainLang="grc"/></profileDesc></teiHeader>\n'
    "<text><body>\n"
)
_TAIL = "\n</body></text></TEI>\n"

#: ISic900001: numbered lines, a word over a line end (break="no") inside a supplement, a
#: lettered line ("10a") and lines without n (counted on: 11, 12)
ONE = """<div type="edition" xml:lang="grc"><ab>
<lb n="1"/>ἀγαθᾷ τύχᾳ ἔδοξε τᾷ βουλᾷ
<lb n="2"/>καὶ τῷ δάμῳ τῶν Ἀκραγαντίνων
<lb n="3"/>ἐπαινέσαι Φιλιστίωνα <supplied reason="lost">Ἀρίστω</supplied><lb n="4"
break="no"/><supplied reason="lost">νος</supplied> Συρακόσιον
<lb n="5"/>εὐεργέταν γενόμενον πολλάκις <gap reason="lost" quantity="3"
unit="character"/> μεγάλων
<lb n="10a"/>στεφανῶσαι χρυσέῳ στεφάνῳ
<lb/>ἀρετᾶς ἕνεκεν καὶ εὐνοίας
<lb/>τᾶς εἰς τὰν πόλιν
</ab></div>"""

#: ISic900002: two text parts whose line numbers each begin at 1
TWO = """<div type="edition" xml:lang="grc">
<div type="textpart" n="a"><ab><lb n="1"/>Διονύσιος Ἡρακλείδου
<lb n="2"/>χαίρειν ἱερεὺς Ἀπόλλωνος</ab></div>
<div type="textpart" n="b"><ab><lb n="1"/>Νικομάχα θυγάτηρ
<lb n="2"/>Ἑρμοκράτεος ἀνέθηκε</ab></div>
</div>"""

#: ISic900003: a long text (stored as several parts) with one number per line
LONG_WORDS = [
    "Ζωπυρίων",
    "Μενεκράτης",
    "Θεόδωρος",
    "Καλλίστρατος",
    "Πολύξενος",
    "Ἀρχέδαμος",
    "Τιμολέων",
    "Ἱππόστρατος",
    "Δεξίθεος",
    "Εὐκλείδας",
    "Φιλόξενος",
    "Νικάνωρ",
]
LONG = (
    '<div type="edition" xml:lang="grc"><ab>'
    + "".join(f'<lb n="{k}"/>{w} υἱὸς ' for k, w in enumerate(LONG_WORDS, 1))
    + "</ab></div>"
)
#: the line each word stands on, as the edition prints it
EXPECTED = {
    "ἀγαθᾷ τύχᾳ": "1",
    "Ἀκραγαντίνων": "2",
    "ἐπαινέσαι Φιλιστίωνα": "3",
    "Συρακόσιον": "4",
    "εὐεργέταν": "5",
    "στεφανῶσαι χρυσέῳ": "10a",
    "ἀρετᾶς ἕνεκεν": "11",
    "τὰν πόλιν": "12",
    **{w: str(k) for k, w in enumerate(LONG_WORDS, 1)},
}


def _write(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(_HEAD + body + _TAIL, encoding="utf-8")
    return path


def _ids(text: str) -> np.ndarray:
    """The letter ids of ``text`` (its base letters, as the index holds them)."""
    p = encode_text(text).planes
    return p.chars[p.lacuna == 0].astype(np.int64)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("lines") / "isicily"
    src.mkdir()
    for name, body in (
        ("ISic900001.xml", ONE),
        ("ISic900002.xml", TWO),
        ("ISic900003.xml", LONG),
    ):
        _write(src, name, body)
    out = src.parent / "shards"
    convert({"bronze": [src]}, out, val_fraction=0.0, max_record_letters=40, progress=False)
    return out


# --- the reader -------------------------------------------------------------------------


def test_the_reader_gives_each_line_its_printed_number_and_its_text(tmp_path):
    counts: Counter = Counter()
    (rec,) = read_epidoc(_write(tmp_path, "ISic900001.xml", ONE), counts=counts)
    labels = [label for label, _ in rec.lines]
    assert labels == ["1", "2", "3", "4", "5", "10a", "11", "12"]
    assert counts["line_number_counted"] == 2
    texts = dict(rec.lines)
    # the supplement over the line end is closed within each line, the letters unchanged
    assert texts["3"] == "ἐπαινέσαι Φιλιστίωνα [Ἀρίστω]"
    assert texts["4"] == "[νος] Συρακόσιον"
    assert "[Ἀρίστωνος]" in rec.text  # the record's own text is as before: one supplement
    joined = "".join(encode_text(t).planes.chars.tobytes().hex() for _, t in rec.lines)
    assert joined == encode_text(rec.text).planes.chars.tobytes().hex()


def test_text_parts_number_their_lines_from_their_own_lb(tmp_path):
    recs = list(read_epidoc(_write(tmp_path, "ISic900002.xml", TWO)))
    assert [r.id.rsplit("#", 1)[1] for r in recs] == ["a", "b"]
    assert [[label for label, _ in r.lines] for r in recs] == [["1", "2"], ["1", "2"]]


def test_a_file_without_lb_gives_no_lines(tmp_path):
    body = '<div type="edition" xml:lang="grc"><ab>ἀγαθᾷ τύχᾳ</ab></div>'
    (rec,) = read_epidoc(_write(tmp_path, "ISic900009.xml", body))
    assert rec.lines == ()


def test_lines_whose_letters_differ_from_the_record_are_aligned_and_counted():
    record = encode_text("ἀγαθᾷ τύχᾳ ἔδοξε τᾷ βουλᾷ").planes.chars
    # the second line lost a letter ("ἔδξε"): its start still lands on ἔ
    counts: Counter = Counter()
    got = line_starts(record, [("1", "ἀγαθᾷ τύχᾳ"), ("2", "ἔδξε τᾷ βουλᾷ")], None, counts)
    assert got == [(0, "1"), (9, "2")]
    assert counts["line_numbers_realigned"] == 1 and counts["line_numbers"] == 2
    # an empty line gives way to the line that starts at the same slot
    got = line_starts(record, [("1", "ἀγαθᾷ τύχᾳ"), ("2", ""), ("3", "ἔδοξε τᾷ βουλᾷ")])
    assert got == [(0, "1"), (9, "3")]


# --- the shards -------------------------------------------------------------------------


def _samples(root: Path, split: str = "train"):
    from streaming import StreamingDataset

    from stoicheia.data.shm import retry_prefix_race

    # another process on the machine may take the same shared-memory prefix: retried
    ds = retry_prefix_race(
        lambda: StreamingDataset(local=str(root / "bronze" / split), batch_size=1, shuffle=False)
    )
    return [ds.get_item(i) for i in range(ds.num_samples)]


def test_the_shards_carry_the_line_starts_of_every_part(corpus):
    samples = _samples(corpus)
    long_parts = [s for s in samples if s["id"].endswith("ISic900003.xml#1")]
    assert len(long_parts) > 2  # cut into parts: each carries the lines that begin in it
    labels = [label for s in long_parts for _, label in decode_lines(s)]
    assert labels == [str(k) for k in range(1, len(LONG_WORDS) + 1)]
    for s in long_parts:
        planes = decode_planes(s)
        for off, label in decode_lines(s):
            word = LONG_WORDS[int(label) - 1]
            n = len(_ids(word))
            got = planes.chars[off : off + n].astype(np.int64)
            assert np.array_equal(got, _ids(word)), label
    assert decode_lines({"id": "old"}) is None  # shards written before the column: unknown


def test_two_reader_processes_write_the_same_lines(corpus, tmp_path):
    out = tmp_path / "two"
    convert(
        {"bronze": [corpus.parent / "isicily"]},
        out,
        val_fraction=0.0,
        max_record_letters=40,
        workers=2,
        progress=False,
        parallels_index=False,
    )
    one = [(s["id"], s["part"], s["lines"]) for s in _samples(corpus)]
    two = [(s["id"], s["part"], s["lines"]) for s in _samples(out)]
    assert one == two and any(json.loads(x) for _, _, x in one)


# --- the index and the labels ----------------------------------------------------------


def test_the_line_of_a_match_is_the_lb_n_of_the_edition(corpus):
    index = ParallelsIndex(corpus / "parallels")
    assert index.manifest["lines"] == 8 + 4 + len(LONG_WORDS)
    assert index.manifest["records_with_lines"] == 4
    for words, line in EXPECTED.items():
        letters = _ids(words)
        lo, hi = index.find(letters)
        assert hi - lo == 1, words
        pos = int(index.sa[lo])
        assert index.lines(pos, pos + len(letters)) == line, words
        src = index.source(pos, (pos, pos + len(letters)))
        assert src.line == line
        assert src.label().endswith(f", l. {line}")
    # a match over a line end names both lines
    letters = _ids("Ἀκραγαντίνων ἐπαινέσαι")
    lo, _ = index.find(letters)
    pos = int(index.sa[lo])
    src = index.source(pos, (pos, pos + len(letters)))
    assert src.line == "2–3" and src.label() == "ISic900001, ll. 2–3"
    # the text part is named when the file has several
    letters = _ids("Ἑρμοκράτεος")
    lo, _ = index.find(letters)
    pos = int(index.sa[lo])
    assert index.source(pos, (pos, pos + 3)).label() == "ISic900002, text b, l. 2"


def test_the_parallels_shown_carry_the_line(corpus):
    index = ParallelsIndex(corpus / "parallels")
    left, fill, right = "ἀρετᾶς ἕνεκεν καὶ", "εὐνοίας", "τᾶς εἰς τὰν πόλιν"
    found = gap_parallels(index, _ids(left), _ids(right), (len(_ids(fill)),))
    assert found.fills, "the gap's own passage is in the index"
    rows = found.to_json(top=1, per_fill=1)
    p = rows[0]["parallels"][0]
    assert p["line"] == "11–12" and p["label"] == "ISic900001, ll. 11–12"
    console = "\n".join(parallel_lines(found, top=1, per_fill=1))
    assert "ISic900001, ll. 11–12" in console
    # `stoicheia parallels` (shared passages) says the line too
    (match, *_) = shared_passages(index, _ids("στεφανῶσαι χρυσέῳ στεφάνῳ"), min_letters=8)
    row = match.to_json(index)
    assert row["line"] == "10a" and row["label"] == "ISic900001, l. 10a"


def test_the_heading_says_on_which_side_the_letters_were_matched(corpus):
    """A gap with text on one side only (a stone's edge) is headed with the side its letters
    were matched on, not "on both sides" (the page's matchedWhere says the same)."""
    index = ParallelsIndex(corpus / "parallels")
    left, fill, right = "ἀρετᾶς ἕνεκεν καὶ", "εὐνοίας", "τᾶς εἰς τὰν πόλιν"
    width = (len(_ids(fill)),)
    both = parallel_lines(gap_parallels(index, _ids(left), _ids(right), width))
    assert both[0] == "     parallels (corpus passages with the same letters on both sides):"
    empty = _ids("")
    after_text = gap_parallels(index, _ids(left), empty, range(3, 9), to_word_end=True)
    assert after_text.fills, "the word after ἀρετᾶς ἕνεκεν καὶ is in the index"
    assert parallel_lines(after_text)[0] == (
        "     parallels (corpus passages with the same letters before the gap; nothing after "
        "it to match):"
    )
    before_text = gap_parallels(index, empty, _ids(right), range(3, 9), to_word_end=True)
    assert before_text.fills
    assert parallel_lines(before_text)[0] == (
        "     parallels (corpus passages with the same letters after the gap; nothing before "
        "it to match):"
    )
    nothing = gap_parallels(index, _ids("ξψξψξψξψ"), empty, range(3, 9), to_word_end=True)
    assert parallel_lines(nothing) == [
        "     parallels: none in the corpus (8 letters of context before the gap searched; "
        "nothing after it to match)"
    ]


def test_the_page_heads_the_parallels_as_the_console_does(tmp_path):
    """app.js's matchedWhere, run by node on the three cases, gives display.matched_where's
    words."""
    import re
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the page's script cannot be run here")
    from stoicheia.inference.parallels.display import matched_where

    js = (
        Path(__file__).resolve().parents[1] / "stoicheia" / "serve" / "static" / "app.js"
    ).read_text(encoding="utf-8")
    fn = re.search(r"^function matchedWhere\(ctx\) \{.*?^\}", js, re.S | re.M)
    assert fn, "app.js has no matchedWhere"
    cases = [[5, 7], [5, 0], [0, 7]]
    script = fn.group(0) + f"\nconsole.log(JSON.stringify({cases}.map(matchedWhere)));\n"
    (tmp_path / "t.js").write_text(script, encoding="utf-8")
    out = subprocess.run([node, str(tmp_path / "t.js")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [matched_where(*c) for c in cases]
    assert "same letters ${where}" in js and "matchedWhere(g.parallels_context)" in js


def test_shards_without_the_lines_column_index_with_line_unknown(corpus, tmp_path):
    from streaming import MDSWriter

    old = tmp_path / "old"
    shutil.copytree(corpus, old, ignore=shutil.ignore_patterns("parallels", "train"))
    columns = {k: v for k, v in COLUMNS.items() if k != "lines"}  # the layout before the column
    with MDSWriter(out=str(old / "bronze" / "train"), columns=columns) as w:
        for s in _samples(corpus):
            w.write({k: s[k] for k in columns})
    man = build_index(old, progress=False)
    assert man["lines"] == 0
    index = ParallelsIndex(old / "parallels")
    letters = _ids("στεφανῶσαι χρυσέῳ")
    lo, _ = index.find(letters)
    pos = int(index.sa[lo])
    src = index.source(pos, (pos, pos + len(letters)))
    assert src.line is None and src.label() == "ISic900001, line unknown"
    assert index.source(pos).label() == "ISic900001"  # no stretch asked for: no line


def test_an_index_of_the_layout_before_the_lines_asks_for_stoicheia_index(corpus, tmp_path):
    copy = tmp_path / "parallels"
    shutil.copytree(corpus / "parallels", copy)
    man = json.loads((copy / "manifest.json").read_text())
    man["version"] = 1
    (copy / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(IndexError_, match="stoicheia index"):
        ParallelsIndex(copy)


def test_perseus_records_are_labelled_author_work_and_passage():
    def label(work: str, record: str) -> str:
        return Source("gold", work, record, 0, 0, span=True).label()

    assert label("Homer/hom.il_gk.xml", "Homer/hom.il_gk.xml#1") == "Homer, hom.il 1"
    assert label("Plutarch/plut.082_teubner_gk.xml", "Plutarch/plut.082_teubner_gk.xml#69.10") == (
        "Plutarch, plut.082_teubner 69.10"
    )
    # a source that is neither: its record id
    assert label("grc_proiel-ud-dev.conllu", "grc_proiel-ud-dev.conllu#3") == (
        "grc_proiel-ud-dev.conllu#3"
    )
