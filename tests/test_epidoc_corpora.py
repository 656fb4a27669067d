"""The EpiDoc reader on the four inscription corpora beside I.Sicily (IOSPE, IGCyr, Cretan
Institutional Inscriptions, IIP): short excerpts of real files, cited by name, and the real
files read in place from ../shared/corpus."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from stoicheia.sources import SourceError, read_epidoc
from stoicheia.sources.epidoc_tei import is_greek_lang

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


def real(corpus: str, name: str) -> Path:
    path = CORPUS / corpus / name
    if not path.exists():
        pytest.fail(f"real corpus missing: {path} (tests read ../shared/corpus; see its README.md)")
    return path


def tei(body: str, header: str = "") -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<TEI xmlns="http://www.tei-c.org/ns/1.0">'
        f"<teiHeader>{header}</teiHeader><text><body>{body}</body></text></TEI>\n"
    )


def read_excerpt(tmp_path: Path, body: str, counts: Counter | None = None, name="x.xml"):
    path = tmp_path / name
    path.write_text(tei(body), encoding="utf-8")
    return {r.id.split("#", 1)[1]: r.text for r in read_epidoc(path, tmp_path, counts=counts)}


def test_adjacent_w_elements_are_two_words(tmp_path):
    # ISic001249.xml line 4: <w part="F">…ίλια</w><w>τρισμύρια</w> (no space between the <w>s)
    body = (
        '<div type="edition" xml:lang="grc"><ab><lb n="4"/><gap reason="lost" extent="unknown" '
        'unit="character"/> <num atLeast="34000"><w part="F"><unclear>α</unclear>'
        '<supplied reason="lost">κισ</supplied><unclear>χ</unclear><supplied reason="lost">ίλια'
        "</supplied></w><w>τρισμύρια</w></num> <w>τάλαντα</w></ab></div>"
    )
    counts = Counter()
    text = read_excerpt(tmp_path, body, counts)["1"]
    assert text == "[---] α̣[κισ]χ̣[ίλια] τρισμύρια τάλαντα"
    assert counts["word_break_between_w"] == 1
    # the real file: no word glued across the two <w>
    (rec,) = read_epidoc(real("isicily", "inscriptions/ISic001249.xml"), CORPUS / "isicily")
    assert "[ίλια] τρισμύρια" in rec.text


def test_parts_of_one_word_in_adjacent_w_stay_one_word(tmp_path):
    body = (
        '<div type="edition" xml:lang="grc"><ab><w part="I">ἀνέ</w><w part="F">θηκεν</w></ab></div>'
    )
    assert read_excerpt(tmp_path, body)["1"] == "ἀνέθηκεν"


def test_text_beside_nested_text_parts_is_read(tmp_path):
    # cretan/ic2_23_7.xml: part A has its own lines 1-3 above its columns I and II
    body = (
        '<div type="edition" xml:lang="grc" xml:space="preserve"><div type="textpart" '
        'subtype="part" n="A"><ab><lb n="1"/>ἐπὶ <w lemma="δαμιοργός">δαμιοργῶν</w> '
        '<name nymRef="Ὀνάσανδρος">Ὀνάσανδρος</name> <name>Παρμένοντος</name>,</ab>'
        '<div type="textpart" subtype="column" n="I"><ab><lb n="4"/>'
        "<name>Τασκαιννάδας</name> <name>Σώσω</name>,</ab></div>"
        '<div type="textpart" subtype="column" n="II"><ab><lb n="5"/>Καλλίκριτος '
        '<w lemma="ποιέω">ἐποίησε</w>.</ab></div></div>'
        '<div type="textpart" subtype="part" n="B"><ab><lb n="2"/>'
        '<w lemma="ἐπισκευάζω">ἐπεσκεύασαν</w></ab></div></div>'
    )
    counts = Counter()
    got = read_excerpt(tmp_path, body, counts)
    assert got == {
        "A": "ἐπὶ δαμιοργῶν Ὀνάσανδρος Παρμένοντος,",
        "A.I": "Τασκαιννάδας Σώσω,",
        "A.II": "Καλλίκριτος ἐποίησε.",
        "B": "ἐπεσκεύασαν",
    }
    assert counts["text_beside_textparts"] == 1
    # the real file: lines 1-3 of part A are a record of their own
    recs = {r.id: r.text for r in read_epidoc(real("cretan", "ic2_23_7.xml"), CORPUS / "cretan")}
    assert recs["ic2_23_7.xml#A"].startswith("ἐπὶ δαμιοργῶν Ὀνάσανδρος Παρμένοντος")
    assert "Τασκαιννάδας" not in recs["ic2_23_7.xml#A"]


def test_edition_text_beside_its_text_parts(tmp_path):
    # igcyr/igcyr016800.xml: fragments b+c hold lines of their own beside columns i and ii
    recs = {
        r.id.split("#")[1]: r.text
        for r in read_epidoc(real("igcyr", "igcyr016800.xml"), CORPUS / "igcyr")
    }
    assert {"a", "b+c", "b+c.i", "b+c.ii"} <= set(recs)
    body = (
        '<div type="edition" xml:lang="grc"><ab><lb n="1"/>θεός</ab>'
        '<div type="textpart" n="a"><ab><lb n="2"/>τύχα</ab></div></div>'
    )
    assert read_excerpt(tmp_path, body) == {"edition": "θεός", "a": "τύχα"}


@pytest.mark.parametrize(
    "tag, greek",
    [
        ("grc", True),
        ("grc ", True),  # iip: xml:lang="grc " (a trailing space)
        ("grc-GR", True),
        ("el-polyton", True),
        ("grc-x-doric", True),
        ("grc-Grek-x-cretan", True),
        ("GRC-grek", True),
        ("grc-Latn", False),
        ("xly-Grek", False),
        ("la", False),
        ("", False),
        (None, False),
    ],
)
def test_language_tags_with_subtags(tag, greek):
    assert is_greek_lang(tag) is greek


def test_greek_word_with_a_private_use_subtag_is_kept(tmp_path):
    body = (
        '<div type="edition" xml:lang="grc"><ab>ἔδοξε τᾶι <w xml:lang="grc-x-doric">πόλι</w> '
        '<w xml:lang="el-polyton">καὶ</w> <w xml:lang="grc-GR">δάμωι</w></ab></div>'
    )
    assert read_excerpt(tmp_path, body)["1"] == "ἔδοξε τᾶι πόλι καὶ δάμωι"


def test_iip_transcription_read_once(tmp_path):
    # iip/akko0003.xml: a diplomatic, a transcription and a segmented copy of one text
    body = (
        '<div type="edition" subtype="diplomatic" ana="b1"><p>ΕΠΙ ΠΑΥ<lb/>ΣΑΝΙΑ</p></div>'
        '<div type="edition" subtype="transcription" ana="b1"><p>Ἐπὶ Παυ<lb break="no"/>σανία'
        '</p></div><div type="translation"><p>In the term of Pausanias</p></div>'
        '<div type="edition" subtype="transcription_segmented"><p><w xml:lang="grc">Ἐπὶ</w> '
        '<w xml:lang="grc">Παυσανία</w></p></div>'
    )
    counts = Counter()
    path = tmp_path / "akko0003.xml"
    path.write_text(tei(body, '<textLang mainLang="grc"/>'), encoding="utf-8")
    recs = list(read_epidoc(path, tmp_path, counts=counts))
    assert [(r.id, r.text) for r in recs] == [("akko0003.xml#1", "Ἐπὶ Παυσανία")]
    assert counts["edition_skipped:diplomatic"] == 1
    assert counts["edition_skipped:transcription_segmented"] == 1
    (rec,) = read_epidoc(real("iip", "akko0003.xml"), CORPUS / "iip")
    assert rec.text == "Ἐπὶ Παυσανία"


def test_iip_file_with_only_a_diplomatic_copy_is_read_lower_cased():
    # iip/caes0082.xml: the only edition is the diplomatic copy (capitals as on the stone)
    counts = Counter()
    (rec,) = read_epidoc(real("iip", "caes0082.xml"), CORPUS / "iip", counts=counts)
    assert rec.text.startswith("[..]ειυπομεα̣ονταις [..]λλαξουσιν̣")
    assert counts["edition_read:diplomatic"] == 1


def test_iip_merge_conflict_markers_refused_in_one_line():
    with pytest.raises(SourceError) as err:
        list(read_epidoc(real("iip", "sepp0018.xml"), CORPUS / "iip"))
    assert "merge-conflict" in str(err.value) and "\n" not in str(err.value)


def test_iip_duplicate_xml_id_in_the_segmented_copy_is_read():
    # iip/suhm0001.xml: two <w xml:id="suhm0001-1"> in the segmented copy, not read anyway
    (rec,) = read_epidoc(real("iip", "suhm0001.xml"), CORPUS / "iip")
    assert "ἐφυλοκαλ" in rec.text


def test_restorer_sees_the_gap_beside_nested_text_parts():
    # the same units as the reader: a <gap> in a face's own lines above its columns is one
    # the EpiDoc restorer fills (it was dropped before)
    from stoicheia.inference.epidoc.edition import read_edition

    xml = tei(
        '<div type="edition" xml:lang="grc"><div type="textpart" n="A"><ab><lb n="1"/>ἐπὶ '
        'δαμιοργ<gap reason="lost" quantity="2" unit="character"/></ab>'
        '<div type="textpart" n="I"><ab><lb n="2"/>Σώσω</ab></div></div></div>'
    )
    ed = read_edition(xml)
    assert [u.text for u in ed.units] == ["ἐπὶ δαμιοργ[..]", "Σώσω"]
    assert [len(u.lacunae) for u in ed.units] == [1, 0]
    assert ed.units[0].elements[0] is not None


def test_supplied_inside_surplus_is_surplus(tmp_path):
    # cretan/seg_23_566.xml line 20: a dittography the editor deletes, its lost letters supplied
    body = (
        '<div type="edition" xml:lang="grc"><ab><lb n="20"/>καινὰ τιμαδὰ σῴ<unclear>ζ</unclear>'
        'ουσι <w lemma="δᾶμος">δάμω</w> <surplus>κτού<supplied reason="lost">πω</supplied>ν '
        '<supplied reason="lost">κ</supplied>αινὰ τιμαδά</surplus>·</ab></div>'
    )
    counts = Counter()
    text = read_excerpt(tmp_path, body, counts)["1"]
    assert text == "καινὰ τιμαδὰ σῴζ̣ουσι δάμω {κτούπων καινὰ τιμαδά}·"
    assert counts["supplied_in_surplus"] == 2
    from stoicheia.text.encode import encode_text

    enc = encode_text(text, strict=True)
    assert enc.leiden["supplied_letters"] == 0  # no deleted letter is trained on as text
    recs = [r.text for r in read_epidoc(real("cretan", "seg_23_566.xml"), CORPUS / "cretan")]
    assert any("{κτούπων καινὰ τιμαδά}" in t for t in recs)


def test_gap_and_erasure_inside_surplus_are_no_lacuna(tmp_path):
    # isicily/ISic030058.xml: <surplus><del rend="erasure">αρ</del></surplus>ακλείδα
    body = (
        '<div type="edition" xml:lang="grc"><ab><surplus><del rend="erasure">αρ</del></surplus>'
        'ακλείδα ἀνέθη<surplus>κ<gap reason="lost" quantity="1" unit="character"/></surplus>κεν'
        "</ab></div>"
    )
    counts = Counter()
    text = read_excerpt(tmp_path, body, counts)["1"]
    assert text == "{αρ}ακλείδα ἀνέθη{κ}κεν"
    assert counts["gap_in_surplus"] == 1


def test_misspelt_gap_unit_is_still_counted_in_letters(tmp_path):
    # iip/caes0109.xml: <gap reason="illegible" quantity="1" unit="charcter"/>
    body = (
        '<div type="edition" subtype="transcription" xml:lang="grc"><p>Ἀβ<gap reason="illegible" '
        'quantity="1" unit="charcter"/>ς <gap reason="lost" quantity="2" unit="characteρ"/>ν</p>'
        "</div>"
    )
    counts = Counter()
    assert read_excerpt(tmp_path, body, counts)["1"] == "Ἀβ[.]ς [..]ν"
    assert counts["gap_unit_read_as_character:charcter"] == 1
    assert counts["gap_unit_read_as_character:characteρ"] == 1


@pytest.mark.parametrize(
    "corpus, name, want",
    [
        (
            "iospe",
            "1.10.xml",
            {
                "corpus": "IOSPE",
                "citation": "IOSPE I² 10",
                "url": "https://iospe.kcl.ac.uk/1.10.html",
                "place": "Tyras",
                "findspot": "Belgorod-Dnestrovsky",
                "not_before": 101,
                "not_after": 200,
                "object_type": "Panel",
            },
        ),
        (
            "igcyr",
            "gvcyr001.xml",
            {
                "corpus": "IGCyr",
                "citation": "GVCyr001",
                "url": "https://igcyr2.unibo.it/en/gvcyr001",
                "place": "Cyrene",
                "findspot": "Cyrene",
                "not_before": -600,
                "not_after": -566,
                "object_type": "stele",
            },
        ),
        (
            "cretan",
            "ic1_14_1.xml",
            {
                "corpus": "I.Cret.",
                "citation": "I.Cret. I xiv 1",
                "place": "Teos, tempio di Dioniso",
                "not_before": -201,
                "not_after": -201,
                "object_type": "blocco",
            },
        ),
        (
            "iip",
            "akko0003.xml",
            {
                "corpus": "IIP",
                "citation": "IIP akko0003",
                "place": "Akko",
                "not_before": -225,
                "not_after": -220,
                "object_type": "amphora handle",
            },
        ),
        (
            "isicily",
            "inscriptions/ISic000046.xml",
            {
                "corpus": "I.Sicily",
                "citation": "ISic000046",
                "url": "http://sicily.classics.ox.ac.uk/inscription/ISic000046",
                "place": "Syracusae",
                "not_before": 401,
                "not_after": 500,
                "object_type": "plaque",
            },
        ),
    ],
)
def test_each_record_carries_the_inscription_s_metadata(corpus, name, want):
    recs = list(read_epidoc(real(corpus, name), CORPUS / corpus))
    assert recs and all(dict(r.meta) == want for r in recs)


def test_citation_and_link_reach_the_shards_and_the_parallels(tmp_path):
    import json

    from stoicheia.data.record_meta import record_meta
    from stoicheia.data.shards import convert
    from stoicheia.inference.parallels.index import ParallelsIndex
    from stoicheia.inference.parallels.passages import shared_passages
    from stoicheia.text.encode import encode_text

    files = [real("cretan", "ic1_14_1.xml"), real("iospe", "1.10.xml"), real("iip", "akko0003.xml")]
    out = tmp_path / "shards"
    summary = convert({"bronze": files}, out, val_fraction=0.0, progress=False)
    assert summary["tiers"]["bronze"]["records_kept"]["train"] >= 3
    per_input = summary["tiers"]["bronze"]["per_input"]
    assert set(per_input) == {str(f) for f in files}
    cretan = per_input[str(files[0])]
    assert cretan["files"] == 1 and cretan["records"] == 1 and cretan["letters"] > 1000
    # every <supplied reason="lost"> of the file is counted
    assert cretan["supplements"] == str(files[0].read_text(encoding="utf-8")).count(
        '<supplied reason="lost"'
    )
    from streaming import StreamingDataset

    from stoicheia.data.shm import retry_prefix_race

    ds = retry_prefix_race(
        lambda: StreamingDataset(local=str(out / "bronze" / "train"), batch_size=1, shuffle=False)
    )
    cites = {record_meta(ds.get_item(i)).get("citation") for i in range(ds.num_samples)}
    assert {"I.Cret. I xiv 1", "IOSPE I² 10", "IIP akko0003"} <= cites
    index = ParallelsIndex(out / "parallels")
    text = "ἔδοξεν Ἰστρωνίων τοῖς κόσμοις καὶ τᾶι πόλει"
    letters = encode_text(text, strict=True).planes.chars.astype("int64")
    (best, *_) = shared_passages(index, letters, min_letters=12)
    got = best.to_json(index)
    assert got["label"].startswith("I.Cret. I xiv 1") and got["url"] == ""
    assert json.loads(json.dumps(got))["work"] == "ic1_14_1.xml"


@pytest.mark.parametrize("name", ["cretan/ic4_72.xml", "iospe/5.183.xml", "igcyr/gvcyr008.xml"])
def test_a_long_text_encoded_in_pieces_is_the_text_encoded_whole(name):
    # memory bounded by the piece (benchmarks/convert_memory.py), the same planes and counts:
    # cuts at a space outside every bracket, before a letter (not before "." or "[---]"'s
    # neighbour punctuation), the last letter of a piece ending a word, not the record
    from stoicheia.text.encode import encode_text
    from stoicheia.text.filter import encode_in_pieces

    corpus = name.split("/")[0]
    text = " ".join(r.text for r in read_epidoc(real(corpus, name.split("/")[1]), CORPUS / corpus))
    whole = encode_text(text)
    for size in (30, 200, 1000):
        planes, dropped, leiden = encode_in_pieces(text, size=size)
        assert planes == whole.planes and dropped == whole.dropped and leiden == whole.leiden


def test_inline_apparatus_reads_the_lemma(tmp_path):
    # iospe/1.23.xml line 1: the editor's alternatives for a supplement, <lem> the text
    body = (
        '<div type="edition" xml:lang="grc"><ab><lb n="1"/><persName type="ruler"><name>'
        '<supplied reason="lost">Ῥοιμητάλκης</supplied></name> <supplied reason="lost">'
        '<placeName type="ethnic">Θρᾳκῶν</placeName> <app type="alternative"><lem><w>βασιλεὺς'
        "</w></lem><rdg><w>δυνάστης</w></rdg></app></supplied> <w><supplied reason="
        '"lost">βασ</supplied>ιλέως</w></persName></ab></div>'
    )
    counts = Counter()
    assert read_excerpt(tmp_path, body, counts)["1"] == "[Ῥοιμητάλκης] [Θρᾳκῶν βασιλεὺς] [βασ]ιλέως"
    assert counts["reading_left_out:rdg"] == 1 and counts["supplements"] == 3
    (rec,) = read_epidoc(real("iospe", "1.23.xml"), CORPUS / "iospe")
    assert "βασιλεὺς" in rec.text and "δυνάστης" not in rec.text
