"""Leiden as papyrologists and other projects type it (issue 23, part 3): the Duke Databank's
signs, ``[-min.N-]`` and its kin, runs of ``+``, and control characters, read by ``restore``
as ``convert`` reads them (one parser, one meaning), with what is dropped counted."""

from __future__ import annotations

import numpy as np
import pytest

from stoicheia.data.shards import convert
from stoicheia.inference.restore import RestoreError
from stoicheia.inference.restore.notes import reading_notes
from stoicheia.inference.restore.reading import parse_input, read_input
from stoicheia.text import alphabet as A
from stoicheia.text.encode import encode_text
from stoicheia.text.filter import normalise_record
from stoicheia.text.leiden import parse_leiden
from stoicheia.text.leiden_segments import Comment, Editorial, Lacuna, LeidenError, Text
from stoicheia.text.render import planes_to_text


def _known_letters(items) -> str:
    return "".join(A.LETTERS[it.values[0]] for it in items if it.gap is None)


# --- the papyrological signs: convert and restore read them alike -------------------------

SIGNS = [
    # (text, what the planes print, the Leiden count it adds)
    ("τὰς ((δραχμὰς)) [.]", "τὰς δραχμὰς [.]", {"expansion_letters": 7}),
    ("ἐ\\π/ὶ τοῦ [.]", "ἐπὶ τοῦ [.]", {"added_letters": 1}),
    ("καὶ 〚τοῦ〛 [.]", "καὶ τοῦ [.]", {"erased_letters": 3}),
    ("καὶ ⸢τοῦ⸣ [.]", "καὶ τοῦ [.]", {"partly_lost_letters": 3}),
    ("καὶ {τοῦ} τῶ[.]", "καὶ τῶ[.]", {"surplus_letters": 3}),
    ("καὶ <τοῦ> [.]", "καὶ τοῦ [.]", {"omitted_letters": 3}),
    ("καὶ vac. τοῦ [.]", "καὶ τοῦ [.]", {"editorial_comments": 1}),
    ("ἐπὶ vac. 3 τοῦ [.]", "ἐπὶ τοῦ [.]", {"editorial_comments": 1}),
]


@pytest.mark.parametrize("text, printed, leiden", SIGNS)
def test_papyrological_signs_read_alike_by_convert_and_restore(text, printed, leiden):
    loose = encode_text(text)  # what convert does (repairs what it cannot read)
    strict = encode_text(text, strict=True)  # what restore does (refuses it)
    assert planes_to_text(loose.planes) == printed
    assert loose.leiden["leiden_repaired"] == 0, "read as notation, not repaired"
    for k, v in leiden.items():
        assert loose.leiden[k] == v
    for plane in ("chars", "boundary", "dia", "cap", "punct", "lacuna"):
        assert np.array_equal(getattr(loose.planes, plane), getattr(strict.planes, plane)), plane
    items, gaps = parse_input(text)
    assert [g.notation for g in gaps] == ["[.]"]
    assert _known_letters(items) == "".join(
        A.LETTERS[c]
        for c, lac in zip(loose.planes.chars, loose.planes.lacuna, strict=True)
        if lac == 0
    )


def test_symbol_resolution_is_one_editorial_not_nested_brackets():
    (seg, rest) = parse_leiden("((δραχμὰς)) ρ")
    assert seg == Editorial("δραχμὰς", "abbreviation", (False,) * 7, 0, 11)
    assert isinstance(rest, Text)
    # a resolution that holds no Greek letter is an editor's remark, like "(?)"
    assert isinstance(parse_leiden("((?))")[0], Comment)
    # and a real nesting is still refused
    with pytest.raises(LeidenError, match="do not nest"):
        parse_leiden("(α(β))")


def test_added_above_the_line_is_one_word_and_a_lone_slash_no_bracket():
    enc = encode_text("ἐ\\π/ὶ", strict=True)
    assert planes_to_text(enc.planes) == "ἐπὶ" and len(enc.planes.word_starts()) == 1
    # "/" alone: the line division inside a word, as before; never an unopened bracket
    assert planes_to_text(encode_text("Διονύ/σιος", strict=True).planes) == "Διονύσιος"
    # "\\" with no "/" after it on its line: no bracket either (Perseus keeps stray backslashes,
    # Beta Code graves: Sophocles' Ichneutae); the text is read as before, not refused
    segs = parse_leiden("μισθ\\ς ἐλεύθερο")
    assert [type(s).__name__ for s in segs] == ["Text"]
    assert segs[0].text == "μισθ\\ς ἐλεύθερο"


def test_symbol_resolution_gives_restore_its_letters(tmp_path):
    """Today's convert repaired ((δραχμὰς)) (leiden_repaired 2) and restore refused it."""
    items, gaps = parse_input("ἀργυρίου ((δραχμὰς)) ἑκατ[..]")
    assert _known_letters(items) == "αργυριουδραχμασεκατ"
    assert [(g.min_letters, g.max_letters) for g in gaps] == [(2, 2)]


# --- [-min.N-] and its kin ----------------------------------------------------------------


@pytest.mark.parametrize(
    "notation, lacuna, bounds",
    [
        ("[-min.2-]", (2, None), (2, 20)),
        ("[- min. 3 -]", (3, None), (3, 20)),
        ("[-min.30-]", (30, None), (30, 30)),  # wider than --unknown-width: at least its minimum
        ("[-max.5-]", (1, 5), (1, 5)),
        ("[-min.2 max.4-]", (2, 4), (2, 4)),
        ("[-max.4 min.2-]", (2, 4), (2, 4)),
        ("[- min. 3, max. 5 -]", (3, 5), (3, 5)),
    ],
)
def test_min_and_max_lacunae_bound_the_fill(notation, lacuna, bounds):
    (seg, _) = parse_leiden(notation + "ος")
    assert isinstance(seg, Lacuna) and (seg.min_width, seg.max_width) == lacuna
    _, (gap,) = parse_input(notation + "ος καὶ")
    assert (gap.min_letters, gap.max_letters) == bounds
    assert gap.notation == notation and not gap.fixed_width


@pytest.mark.parametrize(
    "notation, message",
    [
        ("[-min.2 min.4-]", "min. twice"),
        ("[-min.5 max.3-]", "at least 5 but at most 3"),
        ("[-min.0-]", "0 letters"),
    ],
)
def test_min_max_that_cannot_be_read_is_refused_by_restore_and_repaired_by_convert(
    notation, message
):
    with pytest.raises(RestoreError, match=message):
        parse_input(notation + "ος")
    assert encode_text(notation + "ος").leiden["leiden_repaired"] >= 1


# --- runs of "+" --------------------------------------------------------------------------


def test_plus_runs_are_lost_letters_in_convert_and_restore():
    enc = encode_text("λό++ος ++ καὶ")
    assert planes_to_text(enc.planes) == "λό[..]ος [..] καὶ"
    assert enc.leiden["lacunae"] == 2 and enc.leiden["lacuna_slots"] == 4
    assert int(np.count_nonzero(enc.planes.lacuna == A.LACUNA_LOST)) == 4
    # the same as [+2+] and [++]: one letter per "+"
    for same in ("λό[+2+]ος [++] καὶ", "λό[..]ος [..] καὶ"):
        assert np.array_equal(encode_text(same).planes.lacuna, enc.planes.lacuna)
    items, gaps = parse_input("λό++ος ++ καὶ")
    assert [(g.notation, g.min_letters, g.max_letters, g.traces) for g in gaps] == [
        ("++", 2, 2, True),
        ("++", 2, 2, True),
    ]
    assert _known_letters(items) == "λοοσκαι"


def test_a_plus_touching_a_letter_is_one_lost_letter_and_a_lone_plus_a_cross():
    (a, gap, b) = parse_leiden("ἀ+ός")
    assert gap == Lacuna(1, 1, False, 1, 2) and (a.text, b.text) == ("ἀ", "ός")
    # "+ Ἐν ὀνόματι": the cross that opens a Christian document, not a lost letter
    enc = encode_text("+ Ἐν ὀνόματι")
    assert enc.leiden["lacunae"] == 0 and enc.dropped["punctuation_other"] == 1
    _, gaps = parse_input("+ Ἐν ὀνόματι [.]")
    assert [g.notation for g in gaps] == ["[.]"]


# --- control characters -------------------------------------------------------------------


@pytest.mark.parametrize("control", ["\x07", "\x00", "\x1b", "\x1f", "\x7f", "\x90", "\x9f"])
def test_a_control_character_is_dropped_and_counted_without_splitting_the_word(control):
    for text in (f"λό{control}γος καὶ", f"{control}λόγος καὶ"):
        norm = normalise_record(text)
        assert norm.planes is not None, norm.reject_reason  # the record is kept
        assert planes_to_text(norm.planes) == "λόγος καὶ"
        assert norm.dropped["control"] == 1 and norm.dropped["other"] == 0
        items, gaps = parse_input(text.replace("καὶ", "κ[.]ὶ"))
        assert _known_letters(items) == "λογοσκι" and len(gaps) == 1
        reading = read_input(text.replace("καὶ", "κ[.]ὶ"))
        assert any("control character" in n for n in reading_notes(reading))


def test_whitespace_controls_still_separate_words():
    for sep in ("\t", "\n", "\r", "\x0b", "\x0c", "\x85"):
        enc = encode_text(f"λόγος{sep}καὶ")
        assert planes_to_text(enc.planes) == "λόγος καὶ" and enc.dropped["control"] == 0


def test_convert_counts_controls_and_reads_the_papyrological_signs(tmp_path):
    src = tmp_path / "papyri.txt"
    src.write_text(
        "ἀργυρίου ((δραχμὰς)) ἑκατὸν καὶ ἐ\\π/ὶ τοῦ λό++ος\n\n"
        "\x07ὁ δῆμος ἐτί\x1bμησεν τὸν [-min.2-]ον\n",
        encoding="utf-8",
    )
    stats = convert({"bronze": [src]}, tmp_path / "out", val_fraction=0.0, progress=False)
    st = stats["tiers"]["bronze"]
    assert sum(st["records_kept"].values()) == 2 and not st["records_dropped"]
    assert st["stripped_characters"]["control"] == 2
    assert st["leiden"]["expansion_letters"] == 7 and st["leiden"]["added_letters"] == 1
    assert st["leiden"]["lacuna_slots"] == 2 and st["leiden"]["lacunae_unknown_width"] == 1
    assert "leiden_repaired" not in st["leiden"]


def test_a_word_divided_at_a_line_end_next_to_the_signs_is_joined():
    from collections import Counter

    from stoicheia.sources.plain import normalise_text

    counts = Counter()
    assert normalise_text("πο-\n\\π/τῷ λό+-\n+ος ἐ\\π/-\nτῷ", counts) == "πο\\π/τῷ λό++ος ἐ\\π/τῷ"
    assert counts["hyphen_joined"] == 3


# --- restore with a model: the same readings, filled -------------------------------------


@pytest.fixture(scope="module")
def model(small_shards, tmp_path_factory):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from tiny import train_tiny

    from stoicheia.inference.loading import load_model

    run = train_tiny(
        small_shards,
        tmp_path_factory.mktemp("runs"),
        "papyri",
        "train.nominal_steps=2",
        "train.max_steps=2",
        "train.save_interval=2",
        "train.log_every=1",
    )
    return load_model(run, device="cpu")


def test_restore_fills_plus_runs_min_lacunae_and_reads_the_signs(model):
    from stoicheia.inference.restore import restore
    from stoicheia.text.leiden_segments import DOT_BELOW

    fast = {"top_k": 2, "beam": 2, "unknown_width": 4}
    # "++": two lost letters (restore said there was nothing to restore), filled as traces
    res = restore(model, "ὁ λό++ος καὶ", **fast)
    (g,) = res.gaps
    assert (g.notation, g.min_letters, g.max_letters) == ("++", 2, 2)
    best = res.restorations[0].text
    assert "+" not in best and best.startswith("ὁ λό") and best.endswith("ος καὶ")
    assert best.count(DOT_BELOW) == 2  # two letters, each dotted: traces, as "̣ ̣" are
    # "[-min.2-]": two letters or more (it was 1 to 20, and came back with one letter)
    res = restore(model, "τὸν [-min.2-] καὶ τὸν δῆμον", **fast)
    (g,) = res.gaps
    assert (g.min_letters, g.max_letters) == (2, 4)
    assert set(g.width_probs) == {2, 3, 4} and abs(sum(g.width_probs.values()) - 1) < 1e-6
    for r in res.restorations:
        (letters,) = r.fills
        assert len(letters) >= 2, r.fills
    # the papyrological signs around a gap are read, not refused as nested brackets
    res = restore(model, "ἀργυρίου ((δραχμὰς)) ἐ\\π/ὶ τ[..] vac. 〚καὶ〛 ⸢τοῦ⸣", **fast)
    assert [g.notation for g in res.gaps] == ["[..]"]
    # a control character: left out, said in a note, the word whole
    res = restore(model, "λό\x07γος κ[.]ὶ\x1b", **fast)
    assert any("control character" in n and "U+0007" in n for n in res.notes), res.notes
    for r in res.restorations:  # printed without them (an ESC would reach the terminal)
        assert r.text.startswith("λόγος κ[") and r.text.endswith("]ὶ"), r.text
        assert len(r.marks) <= len(r.text)
