"""The text traps of real files (issue 7): each kind, with the right value."""

from __future__ import annotations

import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from stoicheia.sources import read_conllu, read_jsonl, read_perseus, read_plaintext
from stoicheia.text import alphabet as A
from stoicheia.text.encode import encode_text, text_to_planes
from stoicheia.text.filter import normalise_record
from stoicheia.text.render import planes_to_text

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


def words(planes) -> list[str]:
    """Rendered words without marks and capitals (lacuna slots as '.')."""
    out, cur = [], []
    for c, b, lac in zip(
        planes.chars.tolist(), planes.boundary.tolist(), planes.lacuna.tolist(), strict=True
    ):
        cur.append("." if lac else A.LETTERS[c])
        if b in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE):
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


def p4(tmp_path: Path, body: str, counts: Counter | None = None):
    xml = (
        '<?xml version="1.0"?>\n'
        '<!DOCTYPE TEI.2 PUBLIC "-//TEI P4//DTD Main DTD Driver File//EN" "tei2.dtd">\n'
        "<TEI.2><teiHeader><fileDesc><titleStmt><title>t</title></titleStmt></fileDesc></teiHeader>\n"
        f"<text><body>\n{body}\n</body></text></TEI.2>\n"
    )
    path = tmp_path / "t_gk.xml"
    path.write_text(xml, encoding="utf-8")
    return list(read_perseus(path, tmp_path, counts=counts))


# --- entities --------------------------------------------------------------------------


def test_every_standard_entity_resolves(tmp_path):
    (rec,) = p4(tmp_path, '<div1 n="1"><p>lo/gos&hellip; &amacr; 3&times;4 a&acute;</p></div1>')
    assert "…" in rec.text and "ā" in rec.text and "×" in rec.text and "´" in rec.text


# --- editorial marks inside words -----------------------------------------------------


@pytest.mark.parametrize(
    "text", ["ἔλα[σ]εν", "ἔλα⸢σ⸣εν", "ἔλα⟨σ⟩εν", "ἔ[λασ]εν", "ἔλα[.]εν", "ἔλα⟦σ⟧εν"]
)
def test_editorial_signs_inside_a_word_do_not_split_it(text):
    r = normalise_record(text + " καὶ")
    assert r.planes is not None and len(words(r.planes)) == 2
    assert words(r.planes)[0] in ("ελασεν", "ελα.εν")


def test_beta_code_brackets_inside_a_word_and_final_sigma(tmp_path):
    recs = p4(tmp_path, '<div1 n="1"><p>e)/la[s]en lo/go[s] kai\\ tw=n [!!!] e)/ti</p></div1>')
    (rec,) = recs
    assert rec.text == "ἔλα[σ]εν λόγο[ς] καὶ τῶν [...] ἔτι"
    r = normalise_record(rec.text)
    assert words(r.planes) == ["ελασεν", "λογοσ", "και", "των", "...", "ετι"]
    assert planes_to_text(r.planes) == "ἔλασεν λόγος καὶ τῶν [...] ἔτι"
    assert r.leiden["lacuna_slots"] == 3 and r.dropped.get("punctuation_other", 0) == 0


# --- apparatus elements in P4 ---------------------------------------------------------


def test_p4_apparatus_gives_one_reading(tmp_path):
    counts = Counter()
    body = (
        '<div1 n="1"><p>a)/nqrwpos <choice><sic>lo/gs</sic><corr>lo/gos</corr></choice> kai\\ '
        "<app><lem>e)/rgon</lem>\n<rdg>e)/rga</rdg></app> te</p></div1>"
    )
    (rec,) = p4(tmp_path, body, counts)
    assert rec.text == "ἄνθρωπος λόγος καὶ ἔργον τε"
    assert counts["reading_left_out:choice"] == 1 and counts["reading_left_out:app"] == 1


# --- Leiden in plain text and JSONL ---------------------------------------------------


LEIDEN_LINE = "ἔδοξε τῶι δή[μωι] [...] α(ὐτοῦ) [.5.] τ̣ο̣ῦ [---] ⟦Νέρωνος⟧ ⟨κ⟩αὶ [5±3] {ν}"


def _check_leiden_record(r):
    assert r.planes is not None, r.reject_reason  # dots, digits and brackets are not "not Greek"
    assert not (r.planes.punct == A.PUNCT_FULL_STOP).any()  # no dot became a full stop
    assert r.dropped.get("digit", 0) == 0
    lac = r.planes.lacuna
    assert int(np.count_nonzero(lac == A.LACUNA_LOST)) == 3 + 5
    assert int(np.count_nonzero(lac == A.LACUNA_ABOUT)) == 8
    assert int(np.count_nonzero(lac == A.LACUNA_UNKNOWN)) == 1
    w = words(r.planes)
    assert w[:4] == ["εδοξε", "τωι", "δημωι", "..."] and "αυτου" in w and "και" in w
    assert r.leiden["uncertain_letters"] == 2 and r.leiden["surplus_letters"] == 1


def test_leiden_in_plain_text(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text(LEIDEN_LINE + "\n", encoding="utf-8")
    (rec,) = read_plaintext(path, tmp_path)
    _check_leiden_record(normalise_record(rec.text))


def test_leiden_in_jsonl(tmp_path):
    import json

    path = tmp_path / "d.jsonl"
    path.write_text(
        json.dumps({"id": "a", "text": LEIDEN_LINE}, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (rec,) = read_jsonl(path, tmp_path)
    _check_leiden_record(normalise_record(rec.text))


def test_unreadable_leiden_is_repaired_and_counted_not_lost():
    r = normalise_record("καὶ [τοῦ λόγου")  # an open bracket that runs past the record
    assert r.planes is not None and words(r.planes) == ["και", "του", "λογου"]
    assert r.leiden["leiden_repaired"] == 1
    with pytest.raises(ValueError, match="never closed"):
        encode_text("καὶ [τοῦ λόγου", strict=True)


# --- signs that look like Greek or normalise into something else ---------------------


@pytest.mark.parametrize("sign", ["\u0374", "\u02b9", "\u2032"])
def test_numeral_sign_in_every_spelling(sign):
    r = normalise_record(f"ἔτη ιβ{sign} μῆνας δ{sign}")
    assert r.planes is not None
    assert words(r.planes) == ["ετη", "ιβ", "μηνασ", "δ"]
    assert r.dropped["numeral_sign"] == 2
    assert r.planes == normalise_record("ἔτη ιβ\u0374 μῆνας δ\u0374").planes


def test_numeral_sign_in_a_real_inscription():
    from stoicheia.sources import read_epidoc

    # I.Sicily 1279 dates by "τὸ διʹ" (the 14th consulship), the keraia typed as U+0374
    path = CORPUS / "isicily" / "inscriptions" / "ISic001279.xml"
    (rec,) = read_epidoc(path, CORPUS / "isicily")
    assert "τὸ διʹ κ[α]ὶ" in rec.text  # NFC: U+0374 -> U+02B9
    n = normalise_record(rec.text)
    assert (
        n.planes is not None and n.dropped["numeral_sign"] == 1 and n.dropped.get("other", 0) == 0
    )


def test_look_alike_code_points_decided():
    # lunate sigma, symbol forms and Latin look-alikes inside words read as the Greek letter
    a = text_to_planes("ϲοφὸϲ ϑεὸϲ")[0]
    b = text_to_planes("σοφὸς θεὸς")[0]
    assert a == b
    # Latin A (a look-alike: read as Α) and Latin a (not one: dropped, the word stays whole)
    p, c = text_to_planes("Aθηνaῖοι")
    assert words(p) == ["αθηνιοι"] and p.cap.tolist()[0] == 1
    assert c["latin_lookalike"] == 1 and c["latin"] == 1 and c["latin_in_word"] == 1


# --- marks where they cannot belong ---------------------------------------------------


def test_elision_after_rho_in_real_ud_text():
    recs = {
        r.line: r for r in read_conllu(CORPUS / "ud" / "grc_perseus-ud-dev.conllu", CORPUS / "ud")
    }
    text = next(r.text for r in recs.values() if "παῤ Ἀθηναίους" in r.text)
    r = normalise_record(text)
    w = words(r.planes)
    i = w.index("παρ")
    assert w[i + 1] == "αθηναιουσ"
    k = sum(len(x) for x in w[:i]) + 2  # the ρ of παρ
    assert A.dia_fields(int(r.planes.dia[k]))[1] == 0  # no breathing on the elided ρ


def test_crasis_coronis_typed_as_apostrophe():
    for apostrophe in ("\u2019", "'", "\u02bc"):
        p, c = text_to_planes(f"κα{apostrophe}γώ")
        assert words(p) == ["καγω"] and c["crasis"] == 1
        assert A.dia_fields(int(p.dia[1]))[1] == 1  # κἀγώ: the coronis is a smooth breathing
        assert p == text_to_planes("κἀγώ")[0]
    # elision stays elision: after a consonant, or before a vowel
    assert words(text_to_planes("δ’ ἐγώ")[0]) == ["δ", "εγω"]
    assert words(text_to_planes("δι’ἐκείνων")[0]) == ["δι", "εκεινων"]


def test_combining_marks_before_a_capital_belong_to_it():
    nfd = unicodedata.normalize("NFD", "Ἀθῆναι")
    typed = "\u0313" + nfd.replace("\u0313", "")  # the breathing typed before the capital
    p, c = text_to_planes("καὶ " + typed)
    assert p == text_to_planes("καὶ Ἀθῆναι")[0]
    assert c["mark_before_capital"] == 1 and c.get("unknown_mark", 0) == 0


def test_heta_and_overline_in_real_archaic_inscriptions():
    """Epigraphers write the archaic aspirate (heta) as Latin h: it is the rough breathing of
    the vowel after it at a word start; an overline (U+02C9) is a stroke, not "not Greek"."""
    p, c = text_to_planes("hο hιαρὸν Hερμῆς ιˉ")
    assert planes_to_text(p) == "ὁ ἱαρὸν Ἑρμῆς ι"
    assert c["heta"] == 3 and c.get("latin", 0) == 0 and c.get("other", 0) == 0
    from stoicheia.sources import read_epidoc

    # I.Sicily 1089, an archaic dedication: "Ἀλεξίας hο Ξένο̄νος ... τᾶι hεκάται"
    (rec,) = read_epidoc(CORPUS / "isicily" / "inscriptions" / "ISic001089.xml", CORPUS / "isicily")
    n = normalise_record(rec.text)
    assert planes_to_text(n.planes) == "Ἀλεξίας ὁ Ξένονος ἐπὶ ἀνγέλοι τᾶι ἑκάται ἀνέθεκε"
    assert n.dropped["heta"] == 2 and n.dropped.get("latin", 0) == 0


# --- two marks of one kind on a letter ------------------------------------------------


@pytest.mark.parametrize(
    "text, accent, position",
    [
        ("λόγος ά\u0301β", 1, 7),  # the same acute twice (precomposed + combining)
        ("λόγος α\u0301\u0301β", 1, 8),  # twice combining
        ("λόγος α\u0301\u0300β", 1, 8),  # acute then grave: the first typed is kept
        ("λόγος ὰ\u0301β", 2, 7),  # grave (precomposed) then acute
        ("λόγος ᾶ\u0301β", 3, 7),  # circumflex then acute
    ],
)
def test_stacked_accents_keep_the_first_are_counted_and_refused_in_restore_input(
    text, accent, position
):
    enc = encode_text(text)
    assert A.dia_fields(int(enc.planes.dia[5])) == (accent, 0, 0, 0)
    assert enc.dropped["extra_mark"] == 1 and len(enc.planes) == 7
    with pytest.raises(ValueError, match="two accents") as e:
        encode_text(text, strict=True)
    assert e.value.position == position


def test_two_breathings_are_counted_and_a_breathing_plus_an_accent_is_no_stack():
    enc = encode_text("ἀ\u0314ν")
    assert A.dia_fields(int(enc.planes.dia[0]))[1] == 1 and enc.dropped["extra_mark"] == 1
    with pytest.raises(ValueError, match="two breathings"):
        encode_text("ἀ\u0314ν", strict=True)
    ok = encode_text(
        "α\u0313\u0301ν ἀλλ\u0313", strict=True
    )  # ἄν; the elision mark on λ is no breathing
    assert ok.dropped["extra_mark"] == 0


def test_stacked_accents_are_counted_in_the_conversion_stats(tmp_path):
    from stoicheia.data.shards import convert

    src = tmp_path / "t.txt"
    src.write_text("λόγος ά\u0301β καὶ ὰ\u0301λλος\n", encoding="utf-8")
    stats = convert({"gold": [src]}, tmp_path / "out", val_fraction=0.0, progress=False)
    assert stats["tiers"]["gold"]["stripped_characters"]["extra_mark"] == 2
