"""Tests for stoicheia.text.leiden: every Leiden sign, and the errors."""

from __future__ import annotations

import pytest

from stoicheia.text.leiden import has_leiden, parse_leiden
from stoicheia.text.leiden_segments import Comment, Editorial, Lacuna, LeidenError, Text


def _lacunae(text: str) -> list[tuple[int, int | None, bool]]:
    return [
        (s.min_width, s.max_width, s.approximate)
        for s in parse_leiden(text)
        if isinstance(s, Lacuna)
    ]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[...]", [(3, 3, False)]),
        ("[. . .]", [(3, 3, False)]),
        ("[.5.]", [(5, 5, False)]),
        ("[5]", [(5, 5, False)]),
        ("[-ca.5-]", [(5, 5, True)]),
        ("[ - ca. 5 - ]", [(5, 5, True)]),
        ("[ca.5]", [(5, 5, True)]),
        ("[.c.12.]", [(12, 12, True)]),
        ("[5±3]", [(2, 8, False)]),
        ("[5+/-3]", [(2, 8, False)]),
        ("[.3-6.]", [(3, 6, False)]),
        ("[---]", [(0, None, False)]),
        ("[ - - - ]", [(0, None, False)]),
        ("[– – –]", [(0, None, False)]),
        ("[——]", [(0, None, False)]),
    ],
)
def test_lacuna_widths(text, expected):
    assert _lacunae(text) == expected
    assert all(not isinstance(s, (Text, Editorial)) for s in parse_leiden(text))


def test_supplement_inside_a_word_keeps_the_word_together():
    segs = parse_leiden("ἔλα[σ]εν")
    assert [type(s) for s in segs] == [Text, Editorial, Text]
    assert [s.text for s in segs] == ["ἔλα", "σ", "εν"]
    assert segs[1].reason == "lost"
    # spans cover the string: brackets are between the segments
    assert (segs[0].start, segs[0].end, segs[1].start, segs[1].end, segs[2].start) == (
        0,
        3,
        4,
        5,
        6,
    )


def test_supplement_and_lacuna_in_one_bracket():
    segs = parse_leiden("[καὶ τοῦ ---]")
    assert (
        isinstance(segs[0], Editorial) and segs[0].text == "καὶ τοῦ " and segs[0].reason == "lost"
    )
    assert isinstance(segs[1], Lacuna) and segs[1].max_width is None
    segs = parse_leiden("[..]ν")
    assert (segs[0].min_width, segs[1].text) == (2, "ν")


def test_full_stop_inside_a_supplement_is_punctuation():
    (seg,) = parse_leiden("[ἔλαττον.]")
    assert isinstance(seg, Editorial) and seg.text == "ἔλαττον."
    segs = parse_leiden("[καὶ . .]")
    assert segs[0].text == "καὶ " and (segs[1].min_width, segs[1].max_width) == (2, 2)
    segs = parse_leiden("[αβ..]")
    assert segs[0].text == "αβ" and segs[1].min_width == 2


def test_doubtful_supplement():
    (seg,) = parse_leiden("[καὶ?]")
    assert seg.text == "καὶ" and seg.uncertain == (True, True, True)


@pytest.mark.parametrize(
    "text, reason, letters",
    [
        ("⟨ι⟩", "omitted", "ι"),
        ("〈ι〉", "omitted", "ι"),
        ("<ι>", "omitted", "ι"),
        ("⟦ἄλφα⟧", "erased", "ἄλφα"),
        ("〚ἄλφα〛", "erased", "ἄλφα"),
        ("[[ἄλφα]]", "erased", "ἄλφα"),
        ("{ν}", "surplus", "ν"),
        ("⸢ος⸣", "partly_lost", "ος"),
        ("⌈ος⌉", "partly_lost", "ος"),
    ],
)
def test_editorial_brackets(text, reason, letters):
    (seg,) = parse_leiden(text)
    assert isinstance(seg, Editorial)
    assert (seg.reason, seg.text, seg.start, seg.end) == (reason, letters, 0, len(text))


def test_abbreviation_expansion_and_comments():
    segs = parse_leiden("α(ὐτοῦ) (?) (!) (sic) vac. 3 vacat")
    assert isinstance(segs[0], Text) and segs[0].text == "α"
    assert isinstance(segs[1], Editorial) and (segs[1].text, segs[1].reason) == (
        "ὐτοῦ",
        "abbreviation",
    )
    comments = [s.text for s in segs if isinstance(s, Comment)]
    assert comments == ["(?)", "(!)", "(sic)", "vac. 3", "vacat"]


def test_dots_below_are_uncertain_letters():
    (seg,) = parse_leiden("τ̣ο̣ῦ")
    assert seg.text == "τοῦ" and seg.uncertain == (True, True, False)
    # the dot below may come before or after the accent (NFD order is canonical)
    (seg,) = parse_leiden("ὸ\u0323")
    assert seg.text == "ὸ" and seg.uncertain == (True,)


def test_dots_below_on_no_letter_are_illegible_letters():
    segs = parse_leiden(" ̣ ̣ ̣ος")
    assert isinstance(segs[0], Lacuna) and (segs[0].min_width, segs[0].max_width) == (3, 3)
    assert segs[-1].text == "ος"


def test_plain_text_is_one_segment_and_dots_outside_brackets_are_text():
    text = "καὶ ταῦτα... ἔφη."
    assert not has_leiden(text)
    (seg,) = parse_leiden(text)
    assert isinstance(seg, Text) and seg.text == text
    assert parse_leiden("") == []
    assert has_leiden("α[β]") and has_leiden("α̣") and has_leiden("vac.")


@pytest.mark.parametrize(
    "text, position, words",
    [
        ("[α(ὐτοῦ)]", 2, "do not nest"),
        ("⟦α[β]⟧", 2, "do not nest"),
        ("[καὶ", 0, "never closed"),
        ("καὶ]", 3, "closes no bracket"),
        ("α)", 1, "closes no bracket"),
        ("[α)", 2, "does not close"),
        ("[]", 0, "empty"),
        ("( )", 0, "empty"),
        ("[.0.]", 1, "width 0"),
        ("[0]", 1, "width 0"),
        ("[5±5]", 1, "width of 0"),
        ("[.6-3.]", 1, "empty"),
        ("[\u0301]", 1, "no letter inside the bracket"),
        ("λόγ[...\u0301]", 7, "no letter inside the bracket"),
        ("⟨\u0313 καὶ⟩", 1, "no letter inside the bracket"),
        ("{\u0308}", 1, "no letter inside the bracket"),
    ],
)
def test_errors_name_the_position(text, position, words):
    with pytest.raises(LeidenError) as e:
        parse_leiden(text)
    assert isinstance(e.value, ValueError)
    assert e.value.position == position
    assert words in str(e.value)
    assert f"character {position}" in str(e.value)


ACUTE, SMOOTH = "\u0301", "\u0313"


@pytest.mark.parametrize(
    "text, reason, expected, before",  # before: the letter (index) before the bracket, if any
    [
        (f"ἀνθρώπ[{ACUTE}ου]", "lost", "όυ", 5),
        (f"λόγ[{SMOOTH}ο]", "lost", "ὀ", 2),
        (f"α({ACUTE}β)", "abbreviation", "β\u0301", 0),
        (f"⟨{SMOOTH}{ACUTE}Α⟩θῆναι", "omitted", "Ἄ", None),
        (f"[[{ACUTE}α]]", "erased", "ά", None),
        (f"π[---{ACUTE}α]", "lost", "ά", 0),
    ],
)
def test_marks_right_after_an_opening_bracket_belong_to_the_letter_after_them(
    text, reason, expected, before
):
    import unicodedata

    from stoicheia.text import alphabet as A
    from stoicheia.text.encode import encode_text

    (ed,) = [s for s in parse_leiden(text) if isinstance(s, Editorial)]
    assert ed.reason == reason and unicodedata.normalize("NFC", ed.text) == unicodedata.normalize(
        "NFC", expected
    )
    # on the planes: the letter before the bracket keeps no mark of the bracket's letter
    enc = encode_text(text, strict=True)
    if before is not None:
        assert A.dia_fields(int(enc.planes.dia[before])) == (0, 0, 0, 0)
    assert enc.dropped["unknown_mark"] == 0 and enc.dropped["elision"] == 0


def test_a_mark_on_no_letter_in_a_bracket_is_repaired_not_moved_outside():
    from stoicheia.text import alphabet as A
    from stoicheia.text.encode import encode_text

    enc = encode_text("λόγ[\u0301]ος")  # the readers' lenient mode: dropped and counted
    assert enc.leiden["leiden_repaired"] >= 1
    assert A.dia_fields(int(enc.planes.dia[2])) == (0, 0, 0, 0)  # γ gets no accent


def test_reader_keeps_a_too_wide_lacuna_as_unknown_width():
    """The readers' lenient mode reads a counted lacuna above MAX_LACUNA_WIDTH as [---]: the
    loss stays where it was (never joined across) and is counted lacuna_too_wide."""
    from stoicheia.text.encode import encode_text
    from stoicheia.text.leiden_segments import LacunaTooWideError

    with pytest.raises(LacunaTooWideError):
        encode_text("καὶ τὸν [20000] πατέρα", strict=True)
    wide = encode_text("καὶ τὸν [20000] πατέρα")
    unknown = encode_text("καὶ τὸν [---] πατέρα")
    assert wide.leiden["lacuna_too_wide"] == 1 and wide.leiden["leiden_repaired"] == 0
    assert wide.planes.chars.tolist() == unknown.planes.chars.tolist()
    assert wide.planes.lacuna.tolist() == unknown.planes.lacuna.tolist()
    assert 3 in wide.planes.lacuna.tolist()


@pytest.mark.parametrize(
    "text, letters, slots",
    [
        ("ἀνέθηκε ⟦...⟧ καὶ", "ἀνέθηκε [...] καὶ", 3),  # a name erased past reading
        ("ἀνέθηκε ⟦αβ..γ⟧ καὶ", "ἀνέθηκε αβ[..]γ καὶ", 2),
        ("τοῦ ⸢..ν⸣ καὶ", "τοῦ [..]ν καὶ", 2),
    ],
)
def test_dots_in_erasure_and_half_brackets_are_lost_letters(text, letters, slots):
    from stoicheia.text.encode import encode_text
    from stoicheia.text.render import planes_to_text

    enc = encode_text(text, strict=True)
    assert planes_to_text(enc.planes) == letters
    assert enc.leiden["lacuna_slots"] == slots


@pytest.mark.parametrize("note", ["[vac.]", "[vacat]", "[vac. 3]", "[ vac. ca. 4 ]", "[VACAT]"])
def test_vacat_in_square_brackets_is_no_lacuna(note):
    segs = parse_leiden(f"ἔδοξε {note} τῶι δάμωι")
    assert not [s for s in segs if isinstance(s, Lacuna)]
    assert [s.text for s in segs if isinstance(s, Comment)] == [note]


def test_a_width_padded_with_spaced_dashes_or_naming_its_unit_is_one_lacuna():
    """``[- - ca. 12 - -]`` is one lacuna of about 12 letters: its last ``- -`` was read as a
    second lacuna of unknown width (restore filled ``[βουλομένο ς]``, a lone final sigma). An
    unspaced padding keeps a spaced dash run after it apart (``[.3. - - -]``: 3, then unknown).
    The number may name its unit (``[- - - c. 10 litt. - - -]``)."""
    from stoicheia.text.leiden import parse_leiden
    from stoicheia.text.leiden_segments import Lacuna

    for text, widths in (
        ("καὶ [- - ca. 12 - -] τοῦ", [(12, 12)]),
        ("καὶ [ - - - ca.5 - - - ] τοῦ", [(5, 5)]),
        ("καὶ [. . 3 . .] τοῦ", [(3, 3)]),
        ("καὶ [-ca.5-] τοῦ", [(5, 5)]),
        ("καὶ [.3. - - -] τοῦ", [(3, 3), (0, None)]),
        # the unit named: it was read as a supplement in Latin ([ca. 3 lit.] -> [αὐ lit.])
        ("καὶ [- - - c. 10 litt. - - -] τοῦ", [(10, 10)]),
        ("καὶ [ca. 3 lit.] τοῦ", [(3, 3)]),
        ("καὶ [3 letters] τοῦ", [(3, 3)]),
    ):
        got = [(s.min_width, s.max_width) for s in parse_leiden(text) if isinstance(s, Lacuna)]
        assert got == widths, text


def test_spaced_dots_in_an_erasure_or_half_brackets_are_one_lacuna():
    """``⟦. . .⟧`` is 3 lost letters in one lacuna, as ``[. . .]`` is: each dot was a lacuna of
    its own, with a word break between (``⸢. .υλῇ⸣`` was filled ``ἐ συλῇ``)."""
    from stoicheia.text.leiden import parse_leiden
    from stoicheia.text.leiden_segments import Lacuna

    for text, widths in (
        ("καὶ ⟦. . .⟧ τοῦ", [3]),
        ("καὶ ⸢. .υλῇ⸣ τοῦ", [2]),
        ("καὶ ⟦..⟧ τοῦ [. . .]", [2, 3]),
    ):
        got = [s.min_width for s in parse_leiden(text) if isinstance(s, Lacuna)]
        assert got == widths, text
