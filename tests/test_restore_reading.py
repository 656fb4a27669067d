"""One reading of the input, handed on (issue 23 §6): ``restore`` and ``stoicheia restore``
parse a text's Leiden notation once and encode it once before decoding, and a
:class:`~stoicheia.inference.restore.reading.Reading` is checked before it is used."""

from __future__ import annotations

import collections
import importlib
import sys
from pathlib import Path

import pytest

from stoicheia.inference.restore import RestoreError, read_input, restore
from stoicheia.text import encode as encode_module
from stoicheia.text import leiden as leiden_module

sys.path.insert(0, str(Path(__file__).parent))
from restore_stub import stub_model  # noqa: E402

STUB = stub_model()

#: real kinds of input: a lacuna of known width, look-alike Latin letters in a Greek word (the
#: folding), an editor's supplement and a lacuna of unknown width, a dot below and ``++``
TEXTS = [
    "μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχι[...]ος",
    "ἐνπέραμo [..] καὶ τὸν",
    "ἔδοξε τῇ βουλῇ [καὶ] τῷ [....]ῳ· Φιλόστρατος [---] εἶπεν",
    "ΔΙΟΝΥΣΙΟΣ ΑΡΙΣ[-ca.5-]ΟΥ ++ ἀνέθη̣κ̣εν",
]


@pytest.fixture
def counts(monkeypatch):
    """Counts of the Leiden parses and the encodings of a text made outside ``stoicheia.text``
    (the encoder's own parse is part of its one encoding): every module of ``stoicheia`` but
    ``stoicheia.text.*`` that holds the parser or the encoder by name gets a counting spy.
    ``text_to_planes`` of one character (the per-code-point letter table) is not an
    encoding of the text and is not counted."""
    seen: collections.Counter = collections.Counter()
    originals = {
        "parse_leiden": leiden_module.parse_leiden,
        "encode_text": encode_module.encode_text,
        "text_to_planes": encode_module.text_to_planes,
    }

    def spy(name):
        original = originals[name]

        def counted(text, *args, **kwargs):
            if name != "text_to_planes" or len(text) > 1:
                seen[name] += 1
            return original(text, *args, **kwargs)

        return counted

    for mod_name in ("stoicheia.commands.restore", "stoicheia.serve.app"):
        importlib.import_module(mod_name)
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith("stoicheia.") or mod_name.startswith("stoicheia.text."):
            continue
        for name, original in originals.items():
            if getattr(mod, name, None) is original:
                monkeypatch.setattr(mod, name, spy(name))
    return seen


def _encodes(seen: collections.Counter) -> int:
    return seen["encode_text"] + seen["text_to_planes"]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize(
    "options",
    [{}, {"score_supplements": True}, {"respace": True}, {"supplements": "repredict"}],
    ids=["plain", "score-supplements", "respace", "repredict"],
)
def test_restore_parses_and_encodes_the_input_once(counts, text, options):
    result = restore(STUB, text, top_k=2, fusion=None, **options)
    assert result.restorations and result.gaps
    assert counts["parse_leiden"] == 1, counts
    assert _encodes(counts) == 1, counts


def test_the_command_reads_the_text_once(counts, monkeypatch, capsys):
    """``stoicheia restore`` reads the text before loading the model (a typo fails first) and
    hands that reading to ``restore``: one parse and one encoding in all."""
    from stoicheia.cli import main
    from stoicheia.commands import restore as command

    monkeypatch.setattr(command, "load", lambda args, name: STUB)
    for text in TEXTS[:2]:
        counts.clear()
        assert main(["restore", "stub.pt", "--top-k", "2", "--ngram-weight", "0", text]) == 0
        assert counts["parse_leiden"] == 1, counts
        assert _encodes(counts) == 1, counts
    assert "#1" in capsys.readouterr().out


def test_a_reading_gives_what_the_text_gives():
    """``restore`` of a :class:`Reading` and of its text print the same result."""
    text = TEXTS[2]
    for options in ({}, {"score_supplements": True}):
        read_as = "repredict" if options else "keep"
        a = restore(STUB, read_input(text, supplements=read_as), top_k=3, fusion=None, **options)
        b = restore(STUB, text, top_k=3, fusion=None, **options)
        assert a.to_json() == b.to_json()


def test_a_reading_is_used_once_and_with_its_own_options():
    reading = read_input(TEXTS[0])
    restore(STUB, reading, top_k=1, fusion=None)
    with pytest.raises(RestoreError, match="restored already"):
        restore(STUB, reading, top_k=1, fusion=None)
    with pytest.raises(RestoreError, match="the reading was made with"):
        restore(STUB, read_input(TEXTS[0]), unknown_width=30, fusion=None)
    with pytest.raises(RestoreError, match="the reading was made with"):
        restore(STUB, read_input(TEXTS[2]), score_supplements=True, fusion=None)


def test_a_reading_too_wide_for_the_window_is_refused_with_the_windows_limit():
    reading = read_input("καὶ [.40.] ἔφη")
    with pytest.raises(RestoreError, match="--window 30; the model was trained on 512"):
        restore(STUB, reading, window=30, fusion=None)


def test_restore_epidoc_reads_each_piece_once(corpus_root, monkeypatch):
    """``restore --epidoc`` reads each piece of the edition once, when it plans the file (the
    width of each gap comes from the reader's lacuna, not from parsing its notation again) and
    hands that reading to the decoder, which does not read the piece again."""
    from stoicheia.inference.epidoc.plan import plan_epidoc
    from stoicheia.inference.epidoc.restore import restore_epidoc
    from stoicheia.inference.restore import reading as reading_module

    src = corpus_root / "isicily" / "inscriptions" / "ISic003084.xml"
    plan = plan_epidoc(src, window=512)
    assert len(plan.pieces) >= 1 and plan.to_fill >= 2
    parsed: list[str] = []
    original = reading_module._parse

    def counted(text, *args, **kwargs):
        parsed.append(text)
        return original(text, *args, **kwargs)

    monkeypatch.setattr(reading_module, "_parse", counted)
    result = restore_epidoc(STUB, src, top_k=2)
    assert sum(g.status == "restored" for g in result.gaps) == plan.to_fill
    assert parsed == [p.text for p in plan.pieces], "each piece read once, nothing else"


def test_a_text_in_beta_code_is_named_and_given_back_in_unicode():
    """Beta Code pasted as TEXT: its ``)`` once read as a Leiden bracket ("')' closes no
    bracket"); now named, with the Unicode Greek to give instead. Latin stays "no Greek"."""
    with pytest.raises(RestoreError, match="looks like Beta Code") as err:
        read_input("e)/doce th=| boulh=| kai\\ tw=| [....]")
    assert "'ἔδοξε τῇ βουλῇ καὶ τῷ [....]'" in str(err.value)
    with pytest.raises(RestoreError, match="no Greek letter"):
        read_input("senatus populusque [....]anus")
    assert read_input("καὶ τῷ [....]").gaps  # Greek with a bracket is not Beta Code


def test_latin_with_leiden_expansions_is_not_taken_for_beta_code():
    """``D(is) M(anibus) [---] VIXIT`` was refused as Beta Code (a capital before ``(``) with
    'δ(ις) μ(ανιβυς) [‐‐‐] ϝιχιτ' to give instead: Latin gets "no Greek letter", saying why."""
    for latin in (
        "D(is) M(anibus) [---] VIXIT",
        "Aur(elius) Aur(eliae) [...] vixit annos",
        "Iuliae Felici/ssimae co/niugi [---]",  # line divisions inside words
    ):
        with pytest.raises(RestoreError, match="^no Greek letter in") as err:
            read_input(latin)
        assert "convert Beta Code to Unicode Greek first" in str(err.value), err.value
        assert "looks like Beta Code" not in str(err.value)
    with pytest.raises(RestoreError, match="no Greek letter") as err:
        read_input("[....]")  # no Latin letter: no word about Latin
    assert "Latin" not in str(err.value)


@pytest.mark.parametrize(
    ("beta", "greek"),
    [
        # the Leiden lacunae, a mixed bracket and the editor's remarks kept as typed
        (
            "kai\\ e)/dwke [---] tw=| [5±3] [-ca.5-] [kai\\ tou= ---] [.5.] [kai?] vac. 3 (?)",
            "καὶ ἔδωκε [---] τῷ [5±3] [-ca.5-] [καὶ τοῦ ---] [.5.] [και?] vac. 3 (?)",
        ),
        # TLG capitals: upper case is the same letters; * marks a capital
        ("KAI\\ E)/DWKE TW=| DH/MW| [...]", "καὶ ἔδωκε τῷ δήμῳ [...]"),
        ("*)AQHNAI=OI KAI\\ *)/ARGOS [---]", "Ἀθηναῖοι καὶ Ἄργος [---]"),
    ],
)
def test_beta_code_is_given_back_with_its_leiden_unchanged(beta, greek):
    """The Greek to give for Beta Code once turned ``[---]`` into ``[‐‐‐]`` and ``[5±3]`` into
    ``[±]``: only the Beta Code letters are converted, and the result reads as Leiden."""
    with pytest.raises(RestoreError, match="looks like Beta Code") as err:
        read_input(beta)
    assert str(err.value).endswith(f"give it as '{greek}'"), err.value
    assert f"'{beta}' looks like Beta Code" in str(err.value)  # quoted as typed, whole
    assert read_input(greek).gaps


def test_a_long_beta_code_text_is_quoted_cut_and_given_back_whole():
    beta = "e)/doce th=| boulh=| kai\\ tw=| dh/mw| e)pi\\ tou= a)/rxontos tou= meta\\ to\\n [...]"
    with pytest.raises(RestoreError) as err:
        read_input(beta * 2)
    msg = str(err.value)
    assert msg.startswith(f"'{(beta * 2)[:79]}…' looks like Beta Code"), msg
    whole = "ἔδοξε τῇ βουλῇ καὶ τῷ δήμῳ ἐπὶ τοῦ ἄρχοντος τοῦ μετὰ τὸν [...]"
    assert msg.endswith(f"'{whole}{whole}'"), msg


def test_xml_markup_in_the_text_is_named_with_the_fix():
    """XML pasted as TEXT: a document once gave 'internal: 6 letters encoded but 3 found' or was
    restored with its tags as letters, an EpiDoc element inside a line too (``<gap/>`` read as
    the Leiden ``< >``). A document is sent to ``--epidoc``; a line gets its Leiden."""
    for doc, tag in (
        ('<?xml version="1.0"?><TEI>καὶ</TEI>', '<?xml version="1.0"?>'),
        ("<TEI><text>καὶ [...]</text></TEI>", "<TEI>"),
    ):
        with pytest.raises(RestoreError, match="holds XML markup") as err:
            read_input(doc)
        msg = str(err.value)
        assert f"first tag '{tag}'" in msg and "internal" not in msg, msg
        assert "save the document to a file" in msg and "--epidoc FILE --out FOLDER" in msg
    for line, leiden in (
        ('καὶ <gap reason="lost" extent="unknown" unit="character"/> ἔδωκε', "καὶ [---] ἔδωκε"),
        ('<supplied reason="lost">καὶ</supplied> [...]', "[καὶ] [...]"),
        (
            'τῷ <gap reason="lost" quantity="5" unit="character"/> <supplied reason="lost">δή'
            '</supplied>μῳ <gap reason="lost" atLeast="3" atMost="6" unit="character"/>',
            "τῷ [.....] [δή]μῳ [.3-6.]",
        ),
    ):
        with pytest.raises(RestoreError, match="holds XML markup") as err:
            read_input(line)
        msg = str(err.value)
        assert f"give it as '{leiden}'" in msg and "--epidoc" not in msg, msg
        assert read_input(leiden).gaps
    # a tag cut off: no Leiden to give, the rule instead
    with pytest.raises(RestoreError, match="first tag '<gap reason=\"lost\"'") as err:
        read_input('καὶ <gap reason="lost" [...]')
    assert 'write <gap .../> as [---] (extent="unknown") or [...]' in str(err.value)


@pytest.mark.parametrize(
    "text", ["ἔδωκ<ε> [...]", "καὶ <π> [...]", "καὶ <T> [...]", "καὶ <ab [...]", "⟨καὶ⟩ [...] a<b"]
)
def test_leiden_angle_brackets_are_no_xml(text):
    """Leiden's ``< >`` (letters the scribe omitted) and a lone ``<`` are no tags."""
    from stoicheia.inference.restore.foreign_input import find_markup

    assert find_markup(text) is None
    assert find_markup("<l>καὶ</l>") is not None and find_markup("καὶ<lb/>") is not None


def test_look_alike_letters_beside_brackets_are_read_and_a_mix_of_scripts_is_named():
    """A Latin look-alike inside brackets beside a Greek letter (``ΚΑ[I]``) or after ϗ is read
    as Greek by the encoder; counting it as Latin gave 'internal: 3 letters encoded but 2
    found'. A mix the letters cannot be aligned in is one clear line."""
    for text, letters in (
        ("ΚΑ[I] [...]", 3),
        ("ἔδωκ[E] [...]", 5),
        ("ἔδωκ<E> [...]", 5),
        ("ἐν ⟦T⟧ῷ [...]", 4),
        ("ϗT [...]", 4),
    ):
        reading = read_input(text)
        assert sum(it.gap is None for it in reading.items) == letters, text
    with pytest.raises(RestoreError, match="mixes letters of other scripts") as err:
        read_input("εvо [...]")  # Latin v, Cyrillic о
    assert "internal" not in str(err.value) and "(v о)" in str(err.value)
