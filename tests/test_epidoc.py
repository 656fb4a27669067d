"""Tests for the EpiDoc / TEI P5 reader on real I.Sicily files (read in place)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from stoicheia.data.shards import convert
from stoicheia.sources import EpiDocOptions, SourceError, read_epidoc, read_perseus, read_source
from stoicheia.text import alphabet as A
from stoicheia.text.encode import encode_text
from stoicheia.text.filter import normalise_record
from stoicheia.text.render import planes_to_text

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
ISICILY = CORPUS / "isicily"


def isic(number: str) -> Path:
    path = ISICILY / "inscriptions" / f"ISic{number}.xml"
    if not path.exists():
        pytest.fail(f"real corpus missing: {path} (tests read ../shared/corpus; see its README.md)")
    return path


def texts(number: str, counts: Counter | None = None, **options) -> dict[str, str]:
    recs = read_epidoc(isic(number), ISICILY, counts=counts, options=EpiDocOptions(**options))
    return {r.id.split("#", 1)[1]: r.text for r in recs}


def test_supplied_expansion_gap_and_word_across_a_line_break():
    counts = Counter()
    (rec,) = read_epidoc(isic("000811"), ISICILY, counts=counts)
    assert rec.id == "inscriptions/ISic000811.xml#1" and rec.work == "inscriptions/ISic000811.xml"
    assert rec.source == "epidoc"
    assert rec.text == (
        "[τ]ῆς πρὸς πάντας ἀνθρώπ[ους] [ε]ὐνοίας πειραθέντε[ς] [κ]αὶ τῆς ἀνυπερβ[λ]ήτου "
        "χρησ[τότητος] μετασχόντες [Δ]ομιτίου Λατρωνιανοῦ [τ]οῦ λαμπρ(οτάτου) ἐπανο[ρθωτοῦ] "
        "[ἡ]βουλὴ καὶ ὁ δῆμος εὐν[οίας][---] χάριν"
    )
    enc = encode_text(rec.text, strict=True)
    # the supplements are letters where they stand, the words are whole
    assert planes_to_text(enc.planes).startswith("τῆς πρὸς πάντας ἀνθρώπους εὐνοίας")
    assert "χρηστότητος" in planes_to_text(enc.planes)
    assert enc.leiden["supplied_letters"] == 1 + 3 + 1 + 1 + 1 + 1 + 7 + 1 + 1 + 6 + 1 + 4
    assert enc.leiden["expansion_letters"] == 6
    assert enc.leiden["lacunae_unknown_width"] == 1
    assert int(np.count_nonzero(enc.planes.lacuna == A.LACUNA_UNKNOWN)) == 1
    assert counts["gaps"] == 1 and counts["expansions"] == 1 and counts["records"] == 1


def test_options_supplied_as_lacuna_and_abbreviated():
    t = texts("000811", supplied_lost="lacuna", expansions="abbreviated")["1"]
    assert t.startswith("[.]ῆς πρὸς πάντας ἀνθρώπ[...] [.]ὐνοίας")
    assert " λαμπρ ἐπανο[......] " in t
    enc = encode_text(t, strict=True)
    assert enc.leiden["supplied_letters"] == 0
    assert int(np.count_nonzero(enc.planes.lacuna == A.LACUNA_LOST)) == 28
    with pytest.raises(ValueError, match="supplied_lost"):
        EpiDocOptions(supplied_lost="maybe")


@pytest.mark.parametrize(
    "number, expected",
    [
        ("020492", {"1": "Δαμ[...]"}),  # <gap quantity="3" unit="character">
        ("004186", {"1": "[.2-3.]γόρ̣ας"}),  # atLeast/atMost
        ("003542", {"1": "[---]ιμη [---]υ̣ς̣γο [---]"}),  # unknown width, lost line, <orig>
        ("004161", {"1": "⟦Νηρ̣⟧[---]⟦ς̣⟧"}),  # <del rend="erasure">, <unclear>
        ("004038", {"1": "Λευδίκα καὶ Χόρος τοῖς παράγουσι χαίρειν{ι} Χ"}),  # surplus, space
        ("004122", {"1": "Ἀλύπ̣ου"}),  # <choice><orig>ω</orig><reg>ο</reg>
        ("004255", {"1": "Πο⟨μ⟩πώνιος Λαΐδος"}),  # supplied omitted
        ("001714", {"1": "Ἀντίωχος"}),  # <g ref="#christogram">: no letter
        ("000892", {"1": "ἐνθάδε κῖτε Ἀντωνῖνος ἔτῶν τριά[κο]ντα κ[.]πδει"}),  # subst, orig
        ("001719", {"1": "Πασκεντία ἐν εἰρήνῃ ἐνθάδε κῖτε ζήσασα σεμνῶς παρ̣θένος ἔτη ν"}),  # num
    ],
)
def test_leiden_of_each_element(number, expected):
    assert texts(number) == expected


def test_about_width_gap():
    t = texts("001382")["1"]
    assert t.startswith("[---] [ζή]σας ἔ[τη] [-ca.1-] [ἐνθάδε] κῖτε")
    enc = encode_text(t, strict=True)
    assert int(np.count_nonzero(enc.planes.lacuna == A.LACUNA_ABOUT)) == 1


def test_choice_options_give_one_reading():
    assert texts("004122", choice="original") == {"1": "Ἀλύπ̣ωυ"}
    # <choice><corr>Κ</corr><sic>ΙC</sic></choice>ορίσκου: one reading, one word
    assert texts("004032")["a"] == "Κορίσκου"
    assert texts("004032", choice="original")["a"] == "ΙCορίσκου"


def test_words_and_interpuncts():
    counts = Counter()
    t = texts("000770", counts)["1"]
    assert t.startswith("θεοῖς πᾶσι̣ Μ(άρκος) Αἰμίλιος Ῥό[δων] Κίπου υἱὸς ὑπ̣[ὲρ τῆς]")
    assert counts["symbol"] >= 4
    r = normalise_record(t)
    assert r.planes is not None and r.leiden["uncertain_letters"] == 4


def test_non_greek_editions_and_other_editions_are_left_out():
    counts = Counter()
    assert texts("001880", counts) == {}  # xml:lang="la"
    assert counts["lang:la"] == 1
    counts = Counter()
    # part a is Latin, part b Greek verse; the simple-lemmatized edition repeats the text
    assert list(texts("000406", counts)) == ["b"]
    assert counts["lang:la"] == 1 and counts["edition_skipped:simple-lemmatized"] == 1


def test_xml_dispatch_and_p5_refused_by_the_p4_reader(tmp_path):
    recs = list(read_source(isic("020492"), ISICILY))
    assert [r.source for r in recs] == ["epidoc"]
    with pytest.raises(SourceError) as e:
        list(read_perseus(isic("020492"), ISICILY))
    assert "not the TEI P4 <TEI.2>" in str(e.value) and "read_tei" in str(e.value)
    other = tmp_path / "x.xml"
    other.write_text('<?xml version="1.0"?>\n<root><a/></root>\n', encoding="utf-8")
    with pytest.raises(SourceError, match="neither TEI P4"):
        list(read_source(other, tmp_path))


def test_convert_bronze_stats(tmp_path):
    files = [isic(n) for n in ("000811", "020492", "003542", "004038", "001880", "001382")]
    stats = convert({"bronze": files}, tmp_path / "out", val_fraction=0.0, progress=False)
    st = stats["tiers"]["bronze"]
    assert sum(st["records_kept"].values()) == 5
    assert st["files_without_records"] == [str(isic("001880"))]
    assert st["files_without_records_why"] == {"edition not in Greek": 1}  # xml:lang="la"
    assert st["reader_counts"]["records"] == 5 and st["reader_counts"]["lang:la"] == 1
    # 000811: 28 supplied letters; 001382: ζή τη ἐνθάδε εἰρήνῃ σας τὸν ἑαυτῷ καὶ τοῖς ἰδίοις
    assert st["leiden"]["supplied_letters"] == 28 + (2 + 2 + 6 + 6 + 3 + 3 + 5 + 13)
    slots = st["real_lacuna_slots"]["train"]
    assert slots == 3 + 1 + st["leiden"]["lacunae_unknown_width"]
    assert st["letters"]["train"] == sum(st["letter_counts_train"].values())
    assert json.loads((tmp_path / "out" / "stats.json").read_text())["tiers"]["bronze"] == st


def test_restoration_example_never_picks_a_word_with_a_real_lacuna():
    from stoicheia.train.callbacks.restoration_example import pick_word

    planes = encode_text("ἀνθρώπ[...] καὶ λόγος", strict=True).planes
    r, a, b = pick_word([planes], 400)
    assert (r, a, b) == (0, 12, 17) and not planes.lacuna[a:b].any()  # λόγος, not ἀνθρώπ[...]


def _tei(tmp_path: Path, body: str, name: str = "t.xml") -> Path:
    """A small TEI P5 file (for markup the corpus does not show in one place)."""
    path = tmp_path / name
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<TEI xmlns="http://www.tei-c.org/ns/1.0">'
        '<teiHeader><profileDesc><langUsage><language ident="grc"/></langUsage>'
        '<textLang mainLang="grc"/></profileDesc>'
        f"</teiHeader>\n<text><body>\n{body}\n</body></text></TEI>\n",
        encoding="utf-8",
    )
    return path


def test_repeated_textpart_numbers_get_a_suffix_and_are_counted(tmp_path):
    path = _tei(
        tmp_path,
        '<div type="edition" xml:lang="grc"><div type="textpart" n="a"><ab>λόγος</ab></div>'
        '<div type="textpart" n="a"><ab>ἔργον</ab></div>'
        '<div type="textpart" n="a"><ab>καί</ab></div></div>',
    )
    counts = Counter()
    recs = list(read_epidoc(path, tmp_path, counts=counts))
    assert [r.id for r in recs] == ["t.xml#a", "t.xml#a~2", "t.xml#a~3"]
    assert counts["duplicate_id"] == 2


def test_gap_without_a_readable_width_is_an_unknown_width_lacuna_counted_by_kind(tmp_path):
    path = _tei(
        tmp_path,
        '<div type="edition" xml:lang="grc"><ab>λόγος '
        '<gap reason="lost" quantity="lots" unit="character"/> '
        'καὶ <gap reason="lost" quantity="0" unit="character"/> ἔργον '
        '<gap reason="lost" atLeast="x" atMost="3" '
        'unit="character"/> τε <gap reason="lost" unit="character"/> δὲ '
        '<gap reason="lost" extent="unknwn" '
        'unit="character"/> μὲν <gap reason="lost" quantity=" 2 " unit="character"/></ab></div>',
    )
    counts = Counter()
    (rec,) = read_epidoc(path, tmp_path, counts=counts)
    assert rec.text == "λόγος [---] καὶ [---] ἔργον [---] τε [---] δὲ [---] μὲν [..]"
    assert counts["gaps"] == 6
    assert counts["gap_quantity_unreadable"] == 2  # "lots" and "0"
    assert counts["gap_range_unreadable"] == 1
    assert counts["gap_width_unstated"] == 1
    assert counts["gap_extent:unknwn"] == 1
    enc = encode_text(rec.text, strict=True)
    assert int(np.count_nonzero(enc.planes.lacuna == A.LACUNA_UNKNOWN)) == 5
    assert int(np.count_nonzero(enc.planes.lacuna == A.LACUNA_LOST)) == 2
    stats = convert({"bronze": [path]}, tmp_path / "out", val_fraction=0.0, progress=False)
    rc = stats["tiers"]["bronze"]["reader_counts"]
    assert rc["gap_quantity_unreadable"] == 2 and rc["gap_range_unreadable"] == 1


def test_unknown_elements_keep_their_text_and_are_counted_by_name(tmp_path):
    path = _tei(
        tmp_path,
        '<div type="edition" xml:lang="grc"><ab><date>ἔτους</date> '
        "<placeName>Συρακοσίων</placeName> <term>δῆμος</term> "
        "<persName><roleName>ἄρχων</roleName></persName> <date>β</date></ab></div>",
    )
    counts = Counter()
    (rec,) = read_epidoc(path, tmp_path, counts=counts)
    assert rec.text == "ἔτους Συρακοσίων δῆμος ἄρχων β"
    unknown = {k: v for k, v in counts.items() if k.startswith("unknown_element:")}
    assert unknown == {"unknown_element:date": 2, "unknown_element:term": 1}


def test_tei_p5_without_an_edition_div_names_what_is_missing(tmp_path):
    from stoicheia.data.shards import ConvertError

    path = _tei(
        tmp_path, '<div type="textpart" n="1"><ab>λόγος καὶ ἔργον</ab></div>', name="noedition.xml"
    )
    with pytest.raises(SourceError) as e:
        list(read_source(path, tmp_path))
    msg = str(e.value)
    assert msg.startswith(f"{path}:") and 'without a <div type="edition">' in msg
    assert "not Greek" not in msg and 'wrap the text of <body> in <div type="edition"' in msg
    with pytest.raises(ConvertError, match='without a <div type="edition">'):
        convert({"bronze": [path]}, tmp_path / "out", val_fraction=0.0, progress=False)
    stats = convert(
        {"bronze": [path, isic("020492")]},
        tmp_path / "out2",
        val_fraction=0.0,
        progress=False,
        skip_bad=True,
    )
    st = stats["tiers"]["bronze"]
    assert list(st["files_skipped"]) == [str(path)] and "edition" in st["files_skipped"][str(path)]
    assert sum(st["records_kept"].values()) == 1


def test_a_tier_without_greek_says_what_the_readers_left_out(tmp_path):
    from stoicheia.data.shards import ConvertError

    with pytest.raises(ConvertError) as e:
        convert({"bronze": [isic("001880")]}, tmp_path / "out", val_fraction=0.0, progress=False)
    assert "left out by the readers: lang:la: 1" in str(e.value)


def test_gap_too_wide_to_count_is_unknown_width(tmp_path):
    """A <gap> wider than the Leiden parser's limit (a typo, or a whole column) is a loss of
    unknown width, counted; it never allocates its stated width (99,999,999,999 letters)."""
    from stoicheia.sources.epidoc import read_epidoc
    from stoicheia.sources.epidoc_gap import MAX_GAP_LETTERS
    from stoicheia.text.leiden_segments import MAX_LACUNA_WIDTH

    assert MAX_GAP_LETTERS == MAX_LACUNA_WIDTH
    f = tmp_path / "wide.xml"
    f.write_text(
        '<TEI xmlns="http://www.tei-c.org/ns/1.0"><teiHeader><fileDesc><titleStmt><title>t</title></titleStmt>'
        '</fileDesc></teiHeader><text><body><div type="edition" xml:lang="grc"><ab>'
        'καὶ τὸν <gap reason="lost" unit="character" quantity="99999999999"/> πατέρα '
        '<gap reason="lost" unit="character" atLeast="3" atMost="20000"/> ἔφη</ab></div>'
        "</body></text></TEI>",
        encoding="utf-8",
    )
    counts = __import__("collections").Counter()
    recs = list(read_epidoc(f, counts=counts))
    assert len(recs) == 1 and recs[0].text.count("[---]") == 2, recs
    assert counts["gap_too_wide"] == 2
