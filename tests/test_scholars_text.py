"""Issue 14 §1: text as scholars and their tools type it.

Each kind of input is tested on real corpus files where the corpus has it (I.Sicily, Perseus,
UD) and otherwise on the convention of the project that writes it (papyri.info EpiDoc, IAph,
IGCyr, DDbDP lacuna notations), written into a temporary file and read by the real readers.
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from stoicheia.sources import read_epidoc, read_jsonl, read_perseus, read_plaintext
from stoicheia.text import alphabet as A
from stoicheia.text.clusters import compat_letter
from stoicheia.text.encode import encode_text, text_to_planes
from stoicheia.text.filter import normalise_record
from stoicheia.text.leiden import parse_leiden
from stoicheia.text.leiden_segments import Editorial, Lacuna, LeidenError, Text
from stoicheia.text.render import planes_to_text

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


def real(rel: str) -> Path:
    path = CORPUS / rel
    if not path.exists():
        pytest.fail(f"real corpus missing: {path} (tests read ../shared/corpus; see its README.md)")
    return path


def plain(text: str) -> str:
    """The text the encoder stores, rendered back (word breaks as spaces)."""
    return planes_to_text(encode_text(text).planes)


def words(text: str) -> int:
    return len(encode_text(text).planes.word_starts())


# --- signs inside a word never split it -----------------------------------------------------


@pytest.mark.parametrize(
    "typed",
    [
        "Διονύ|σιος",
        "Διονύ/σιος",
        "Διονύ¦σιος",
        "Διονύ‖σιος",
        "Διο«ν»ύσιος",
        "Διονύ=σιος",
        "Διονύ-|σιος",
        "Διο[νύ]|σιος",
        "Διονύ|[σιος]",
    ],
)
def test_line_division_and_correction_signs_inside_a_word_leave_one_word(typed):
    enc = encode_text(typed)
    assert planes_to_text(enc.planes) == "Διονύσιος"
    assert enc.dropped["in_word_sign"] >= 1


def test_signs_between_words_still_separate_them():
    assert words("καὶ | τοῦ") == 2
    assert words("«λόγος» καὶ") == 2
    assert plain("εἶπεν «ἀλλά»") == "εἶπεν ἀλλά"


@pytest.mark.parametrize("hyphen", ["-", "\u00ad", "\u2010", "\u2011", "=", "\u2e17"])
def test_line_end_hyphen_in_plain_text_joins_the_word(tmp_path, hyphen):
    f = tmp_path / "t.txt"
    f.write_text(
        f"ἐπὶ τῷ πο{hyphen}\nτῷ καὶ [ἐπ]{hyphen}\r\n[ὶ] τοῖς\n\nἄλλο -\nμέρος\n", encoding="utf-8"
    )
    counts = Counter()
    recs = list(read_plaintext(f, counts=counts))
    assert recs[0].text == "ἐπὶ τῷ ποτῷ καὶ [ἐπ][ὶ] τοῖς"
    assert plain(recs[0].text) == "ἐπὶ τῷ ποτῷ καὶ ἐπὶ τοῖς"
    assert recs[1].text == "ἄλλο - μέρος"  # a dash after a space is not a divided word
    assert counts["hyphen_joined"] == 2


def test_line_end_hyphen_inside_a_jsonl_text_joins_the_word(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text(
        json.dumps({"id": "a", "text": "Διονύ-\nσιος Διονυσίου"}, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    (rec,) = read_jsonl(f)
    assert rec.text == "Διονύσιος Διονυσίου"


def test_real_isicily_hyphen_before_a_line_break_joins_the_word():
    counts = Counter()
    (rec,) = read_epidoc(real("isicily/inscriptions/ISic001405.xml"), counts=counts)
    # <supplied>— —</supplied> χρη- <lb n="2"/><supplied>στὲ ἔ</supplied>ζη
    assert rec.text.startswith("[---] χρη[στὲ ἔ]ζη [---]")
    assert "χρηστὲ ἔζη" in plain(rec.text)
    (rec,) = read_epidoc(real("isicily/inscriptions/ISic090110.xml"), counts=counts)
    assert "Σωτήρων vac. οἱ" in rec.text  # Σωτή-<lb break="no"/>ρων
    assert counts["hyphen_joined"] == 2


PAPYRUS = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<TEI xmlns="http://www.tei-c.org/ns/1.0"><teiHeader><fileDesc><titleStmt><title>t</title>'
    "</titleStmt>\n"
    "<publicationStmt><p>t</p></publicationStmt><sourceDesc><p>t</p></sourceDesc></fileDesc>"
    "</teiHeader>\n"
    '<text><body><div type="edition" xml:lang="grc"><ab>\n'
    '<lb n="1"/>Ἀπολ<g type="apostrophe"/>λωνίου τοῦ Ἀπολ<g type="apostrophe"/>'
    '<supplied reason="lost">λ</supplied>ωνίου\n'
    '<lb n="2"/>δ<g type="apostrophe"/> ἐκεῖνος <app type="editorial"><lem>ἔδωκεν</lem>'
    "<rdg>ἔδωκε</rdg><rdg>ἔδοκεν</rdg></app> καὶ\n"
    '<lb n="3"/><app type="alternative"><rdg>ἀλλά</rdg><rdg>ἄλλα</rdg></app>\n'
    "</ab></div></body></text></TEI>\n"
)


def test_epidoc_apostrophe_inside_a_word_and_app_lemma(tmp_path):
    """papyri.info's conventions: ``<g type="apostrophe"/>`` and ``<app>`` (no I.Sicily
    edition holds either, so the test writes one in that convention)."""
    f = tmp_path / "p.xml"
    f.write_text(PAPYRUS, encoding="utf-8")
    counts = Counter()
    (rec,) = read_epidoc(f, counts=counts)
    assert rec.text == "Ἀπολλωνίου τοῦ Ἀπολ[λ]ωνίου δ’ ἐκεῖνος ἔδωκεν καὶ ἀλλά"
    assert plain(rec.text) == "Ἀπολλωνίου τοῦ Ἀπολλωνίου δ ἐκεῖνος ἔδωκεν καὶ ἀλλά"
    assert counts["apostrophe_in_word"] == 2 and counts["apostrophe"] == 1
    assert counts["reading_left_out:rdg"] == 3 and counts["app"] == 2


# --- every spelling of a letter or mark is one letter or mark -------------------------------


def test_every_compatibility_spelling_of_a_greek_letter_is_that_letter():
    """Survey of the Unicode database: every code point whose compatibility decomposition is
    one letter of the alphabet (plus marks) encodes exactly as that letter."""
    found = []
    for cp in range(0x110000):
        ch = chr(cp)
        if unicodedata.decomposition(ch).startswith("<") and compat_letter(ch) is not None:
            found.append(ch)
            assert (
                encode_text(ch).planes == encode_text(unicodedata.normalize("NFKD", ch)).planes
            ), hex(cp)
    # micro sign, the math alphabets, double-struck, modifier and subscript letters
    assert "\u00b5" in found and "\U0001d6c2" in found and "\u213c" in found and "\u1d5d" in found
    assert len(found) > 300


def test_a_single_look_alike_is_not_evidence_that_a_record_is_not_greek():
    assert normalise_record("\u00b5ῆνιν ἄειδε").reject_reason is None  # micro sign for μ
    assert plain("\u00b5ῆνιν") == "μῆνιν"
    enc = encode_text("ϗ τὰ ἄλλα Ϗ")
    assert planes_to_text(enc.planes) == "καί τὰ ἄλλα Καί" and enc.dropped["kai_ligature"] == 2


@pytest.mark.parametrize(
    "typed",
    [
        "τῶν",
        "τω\u0342ν",
        "τω\u0302ν",
        "τω\u0303ν",
        "τω\u0311ν",
        "τω\u1fc0ν",
        "τω\u02dcν",
        "τω~ν",
        "τω^ν",
        "τω\u02c6ν",
    ],
)
def test_circumflex_in_every_spelling_is_one_circumflex(typed):
    assert plain(typed) == "τῶν"
    assert words(typed) == 1


@pytest.mark.parametrize(
    "typed, expected",
    [
        ("λο\u00b4γος", "λόγος"),
        ("λο\u02caγος", "λόγος"),
        ("το`ν", "τὸν"),
        ("το\u02cbν", "τὸν"),
        ("τῳ", "τῳ"),
        ("τω\u0328", "τῳ"),
        ("τω\u02db", "τῳ"),
        ("\u02bdο", "ὁ"),
        ("ο\u0312", "ὁ"),
        ("ο\u0315", "ὀ"),
    ],
)
def test_other_marks_in_their_look_alike_spellings(typed, expected):
    assert plain(typed) == expected


# --- runs of dots are an omission ------------------------------------------------------------


def test_runs_of_dots_are_an_omission_not_a_full_stop():
    p = encode_text("κυριευθησόμεθα . . . . . . . ἀλλὰ").planes
    assert p.punct.tolist() == [0] * len(p) and p.boundary[13] == A.BOUNDARY_WORD
    assert planes_to_text(p) == "κυριευθησόμεθα ἀλλὰ"
    assert plain("λόγος… καί") == "λόγος καί"
    assert plain("λόγος. καί") == "λόγος. καί"  # one full stop is a full stop


def test_real_perseus_omission_dots():
    recs = list(read_perseus(real("perseus/Theophrastus/char_gk.xml")))
    text = next(r.text for r in recs if "ἐρανίζοντας . . . ὡς" in r.text)
    out = planes_to_text(encode_text(text).planes)
    assert "ἐρανίζοντας ὡς" in out and "ἐρανίζοντας." not in out
    recs = list(read_perseus(real("perseus/Aeschylus/aesch.ag_gk.xml")))
    text = next(r.text for r in recs if ". . .ἀνδρακὰς" in r.text)
    assert "ἄνωθεν ἀνδρακὰς" in planes_to_text(encode_text(text).planes)


# --- EpiDoc: dashes inside <supplied reason="lost"> ------------------------------------------


def test_real_isicily_dashes_inside_supplied_are_a_lacuna_of_unknown_width():
    counts = Counter()
    (rec,) = read_epidoc(real("isicily/inscriptions/ISic002732.xml"), counts=counts)
    assert rec.text == "[---]σκλο [---] [---]"
    enc = encode_text(rec.text, strict=True)
    assert enc.leiden["lacunae_unknown_width"] == 3
    assert counts["supplied_dashes_lacuna"] == 3
    assert enc.dropped["punctuation_other"] == 0


# --- lacuna notations of other projects ----------------------------------------------------


@pytest.mark.parametrize(
    "typed, width",
    [
        ("[ .. ? .. ]", (0, None)),  # IAph: lost letters, number unknown
        ("[.?]", (0, None)),  # DDbDP Leiden+
        ("[ca.?]", (0, None)),
        ("[-?-]", (0, None)),
        ("[-min.2-]", (2, None)),  # IGCyr: at least 2
        ("[- min. 2 -]", (2, None)),
        ("[-max.5-]", (1, 5)),
        ("[+3+]", (3, 3)),
        ("[+++]", (3, 3)),
        ("[.5]", (5, 5)),  # DDbDP
        ("[.1-3]", (1, 3)),
    ],
)
def test_other_projects_lacuna_notations_read_as_the_width_they_state(typed, width):
    segs = parse_leiden(f"ἐπὶ {typed}ος")
    (lac,) = [s for s in segs if isinstance(s, Lacuna)]
    assert (lac.min_width, lac.max_width) == width
    assert not any(isinstance(s, Editorial) for s in segs)
    assert [s.text for s in segs if isinstance(s, Text)] == ["ἐπὶ ", "ος"]
    enc = encode_text(f"ἐπὶ {typed}ος", strict=True)
    assert (
        enc.leiden["lacunae"] == 1
        and enc.dropped.get("latin", 0) == 0
        and enc.dropped.get("digit", 0) == 0
    )
    # the lacuna is inside the word it stands in: no invented word break
    assert len(enc.planes.word_starts()) == 2


@pytest.mark.parametrize(
    "typed, message",
    [
        ("[1.5]", "not a whole number"),
        ("[.,;]", "touch the punctuation"),
        ("[-5]", "dash on one side"),
        ("[5-]", "dash on one side"),
        ("[ca.]", "no number after 'ca.'"),
        ("[ - ca. - ]", "no number after 'ca.'"),
    ],
)
def test_what_is_not_leiden_is_refused_with_what_is_missing(typed, message):
    with pytest.raises(LeidenError, match=message):
        parse_leiden(f"καὶ {typed} τοῦ")
    # the readers (lenient) repair it and count it, never read it as letters
    enc = encode_text(f"καὶ {typed} τοῦ")
    assert enc.leiden["leiden_repaired"] >= 1 and enc.leiden["lacuna_slots"] == 0


# --- JSONL is split on \n only -------------------------------------------------------------


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c"])
def test_jsonl_record_holding_a_unicode_line_separator_is_read_whole(tmp_path, sep):
    f = tmp_path / "t.jsonl"
    lines = [
        json.dumps({"id": "a", "text": f"μῆνιν ἄειδε{sep}θεὰ"}, ensure_ascii=False),
        json.dumps({"id": "b", "text": "Πηληϊάδεω Ἀχιλῆος"}, ensure_ascii=False),
    ]
    f.write_bytes(("\r\n".join(lines) + "\n").encode("utf-8"))
    recs = list(read_jsonl(f))
    assert [r.text for r in recs] == ["μῆνιν ἄειδε θεὰ", "Πηληϊάδεω Ἀχιλῆος"]
    assert [r.line for r in recs] == [1, 2]


def test_lacuna_plane_of_an_open_ended_lacuna_is_one_stand_in():
    p = encode_text("ἐπὶ [-min.2-] τοῦ", strict=True).planes
    assert int(np.count_nonzero(p.lacuna == A.LACUNA_UNKNOWN)) == 1
    assert text_to_planes("τοῦ")[0].lacuna.tolist() == [0, 0, 0]


@pytest.mark.parametrize(
    "typed, expected",
    [
        ("Διоνύσιος", "Διονύσιος"),
        ("хαίρε", "χαίρε"),
        ("сοῦ", "σοῦ"),
        ("λⲟγος", "λογος"),
        ("ΔΙⲞΝΥϹΙⲞϹ", "ΔΙΟΝΥΣΙΟΣ"),
    ],
)
def test_cyrillic_and_coptic_look_alikes_inside_a_greek_word_are_greek(typed, expected):
    enc = encode_text(typed)
    assert planes_to_text(enc.planes) == expected and enc.dropped["script_lookalike"] >= 1
    assert normalise_record(typed).reject_reason is None


def test_a_coptic_text_is_not_read_as_greek():
    r = normalise_record("ⲁⲛⲟⲕ ⲡⲉ ⲡⲛⲟⲩⲧⲉ")
    assert r.reject_reason == "not_greek" and r.dropped["script_lookalike"] == 0


def test_ellipsis_character_inside_brackets_is_the_dots_it_stands_for():
    """A word processor turns "[...]" into "[…]": still three lost letters, not an omission."""
    (lac,) = parse_leiden("[…]")
    assert (lac.min_width, lac.max_width) == (3, 3)
    enc = encode_text("ἐπὶ τ[…]ος", strict=True)
    assert enc.leiden["lacuna_slots"] == 3 and len(enc.planes.word_starts()) == 2


def test_full_stop_after_an_elided_letter_inside_brackets_is_a_full_stop():
    """Real Perseus: Diogenes Laertius 5.2 lists books "[... Περὶ διαβολῆς α’.]": the dot after
    the numeral's mark ends the title; it is neither a lost letter nor a reason to refuse."""
    (sup,) = parse_leiden("[Περὶ διαβολῆς α’.]")
    assert isinstance(sup, Editorial) and sup.text == "Περὶ διαβολῆς α’."
    recs = {r.id: r.text for r in read_perseus(real("perseus/Diogenes/dl_gk.xml"))}
    enc = encode_text(recs["dl_gk.xml#5.2"])
    # one bracket opened inside another is repaired as on main; the twelve "α’." are no
    # longer read as twelve lost letters (main: lacunae 12), nor refused
    assert enc.leiden["leiden_repaired"] == 1 and enc.leiden["supplied_letters"] > 200
    assert enc.leiden["lacunae"] == 0


def test_real_perseus_numeral_acute_is_not_a_line_division():
    """Dionysius: "<add>lb/</add>ou)/ toi" is the numeral λβʹ before οὔ, not one word λβοὔ."""
    counts = Counter()
    recs = {
        r.id: r.text for r in read_perseus(real("perseus/Dionysius/dh.006_gk.xml"), counts=counts)
    }
    assert "λβʹοὔ τοι" in recs["dh.006_gk.xml#23"]
    assert "λβ οὔ τοι" in plain(recs["dh.006_gk.xml#23"])
    assert counts["numeral_sign_from_acute"] >= 3
