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
