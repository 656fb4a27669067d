"""The stone's edge (issue 31 §2): at a gap with text on one side only, a parallel whose own
text has an edge there (the word that opens or closes an inscription of the corpus) weighs
``exp(edge_gain)`` times more, the gain fitted on the selection half by ``stoicheia
benchmark`` and kept in ``fusion.json``. On a small corpus of EpiDoc files the test writes:
one epitaph that opens with ἐνθάδε κῖτε, two in which ὧδε κῖτε follows a name."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from stoicheia.data.shards import convert
from stoicheia.inference.parallels import ParallelsIndex, gap_parallels
from stoicheia.text.encode import encode_text

sys.path.insert(0, str(Path(__file__).parent))
from test_whole_readings import _model  # noqa: E402  (the readings' tests' stand-in network)

_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<TEI xmlns="http://www.tei-c.org/ns/1.0">'
    '<teiHeader><profileDesc><textLang mainLang="grc"/></profileDesc></teiHeader>\n'
    "<text><body>\n"
)
_TAIL = "\n</body></text></TEI>\n"

TEXTS = [
    "ἐνθάδε κῖτε Ζωσίμη χρηστὴ χαῖρε",  # the formula opens the text: at its edge
    "Νικίας ὧδε κῖτε Ζωσίμη χρηστὴ χαῖρε",  # the same context, after a name: two sources
    "Λέων ὧδε κῖτε Ζωσίμη χρηστὴ χαῖρε",
    "ἔδοξε τᾶι βουλᾶι ἐπαινέσαι Δίωνα ἀρετᾶς ἕνεκα",
    "ἔδοξε τᾶι βουλᾶι ἐπαινέσαι Βίωνα ἀρετᾶς ἕνεκα καὶ εὐνοίας",
]


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> ParallelsIndex:
    src = tmp_path_factory.mktemp("edge") / "isicily"
    src.mkdir()
    for i, text in enumerate(TEXTS):
        body = f'<div type="edition" xml:lang="grc"><ab><lb n="1"/>{text}</ab></div>'
        (src / f"ISic9200{i:02d}.xml").write_text(_HEAD + body + _TAIL, encoding="utf-8")
    out = src.parent / "shards"
    convert({"bronze": [src]}, out, val_fraction=0.0, max_record_letters=200, progress=False)
    return ParallelsIndex(out / "parallels")


def _ids(s: str) -> np.ndarray:
    p = encode_text(s).planes
    return p.chars[p.lacuna == 0].astype(np.int64)


def _fills(found) -> list[tuple[str, float]]:
    return [(f.text(), round(f.prob, 6)) for f in sorted(found.fills, key=lambda f: -f.prob)]


def test_a_parallel_at_its_texts_edge_wins_a_stones_edge_when_the_gain_says_so(index):
    right = _ids("κῖτε Ζωσίμη χρηστὴ")
    empty = np.zeros(0, dtype=np.int64)
    plain = gap_parallels(index, empty, right, range(1, 13), to_word_end=True)
    # at gain 0 each source weighs the same: ὧδε (two sources) before ἐνθάδε (one)
    assert _fills(plain) == [("ωδε", pytest.approx(2 / 3)), ("ενθαδε", pytest.approx(1 / 3))]
    assert [f.edge_weight > 0 for f in sorted(plain.fills, key=lambda f: -f.prob)] == [False, True]
    found = gap_parallels(index, empty, right, range(1, 13), to_word_end=True, edge_gain=2.0)
    e2 = float(np.exp(2.0))
    assert _fills(found) == [
        ("ενθαδε", pytest.approx(e2 / (e2 + 2))),
        ("ωδε", pytest.approx(2 / (e2 + 2))),
    ]
    # the search at gain 0 reweighted is the search at that gain, to the bit
    again = plain.reweighted(2.0)
    assert [(f.text(), f.prob, f.weight) for f in again.fills] == [
        (f.text(), f.prob, f.weight) for f in found.fills
    ]
    assert again.reweighted(0.0) is again or _fills(again.reweighted(0.0)) == _fills(plain)
    # the gap after a text: ἕνεκα ends one of its two sources' texts
    left = _ids("ἐπαινέσαι Δίωνα ἀρετᾶς")
    after = gap_parallels(index, left, empty, range(1, 13), to_word_end=True, edge_gain=1.0)
    (f,) = after.fills
    assert f.text() == "ενεκα" and f.sources == 2 and f.prob == 1.0
    assert f.edge_weight > 0 and f.plain_weight > 0  # one source ends there, one goes on


def test_the_gain_leaves_two_sided_and_known_widths_as_they_were(index):
    left, right = _ids("ἐπαινέσαι Δίωνα ἀρετᾶς"), _ids("καὶ εὐνοίας")
    for widths in (range(5, 6), range(1, 13)):
        a = gap_parallels(index, left, right, widths)
        b = gap_parallels(index, left, right, widths, edge_gain=4.0)
        assert [(f.text(), f.prob, f.weight) for f in a.fills] == [
            (f.text(), f.prob, f.weight) for f in b.fills
        ]
        assert all(f.edge_weight == 0 for f in b.fills)
    with pytest.raises(ValueError, match="edge gain"):
        a.reweighted(-1.0)


def _task(text: str, truth: str, name: str):
    from stoicheia.inference.benchmark.protocols import Task

    start, end = text.index("["), text.index("]") + 1
    return Task("edge", name, text, start, end, 0, truth, False)


def test_the_benchmark_fits_the_gain_on_the_gaps_it_is_given(index):
    from stoicheia.inference.benchmark.parallels import (
        ParallelsCache,
        ParallelsDecoder,
        fit_edge_gain,
    )
    from stoicheia.inference.benchmark.run import ModelDecoder

    md = ModelDecoder(model=None, unknown_width=12)
    cache = ParallelsCache(md, index)
    dec = ParallelsDecoder(cache, None)
    opens = {"edge": [_task("[---] κῖτε Ζωσίμη χρηστὴ", "ενθαδε", "ISic000001")]}
    got = fit_edge_gain(cache, dec, opens)
    assert got["figures"]["0"] == {"gaps": 1, "top1": 0.0, "length_right": 0.0}
    assert got["figures"]["1"]["top1"] == 1.0 and got["chosen"] == 1.0  # the smallest that wins
    assert cache.edge_gain == 1.0 and dec(opens["edge"][0])[0][0] == "ενθαδε"
    # where the word inside the text is the truth, no gain: 0 is kept
    inside = {"edge": [_task("[---] κῖτε Ζωσίμη χρηστὴ", "ωδε", "ISic000002")]}
    assert fit_edge_gain(cache, dec, inside)["chosen"] == 0.0 and cache.edge_gain == 0.0
    # a two-sided gap is nothing to fit on: the gain stays 0
    two = {"unknown": [_task("Νικίας [---] κῖτε Ζωσίμη", "ωδε", "ISic000003")]}
    assert fit_edge_gain(cache, dec, two) == {
        "gains": [0.0, 1.0, 2.0, 3.0, 4.0],
        "figures": {},
        "chosen": 0.0,
        "chosen_on": "0 gaps with text on one side only of the selection half (0 inscriptions)",
    }


def test_fusion_json_hands_the_gain_to_restore(index, tmp_path):
    from stoicheia.inference.restore.fusion_file import FusionConfig
    from stoicheia.inference.restore.gaps import RestoreError

    path = tmp_path / "fusion.json"
    FusionConfig(0.5, 0.0, str(index.folder), "test", parallels_edge_gain=2.0).save(path)
    assert json.loads(path.read_text())["parallels_edge_gain"] == 2.0
    assert FusionConfig.load(path).parallels_edge_gain == 2.0
    data = json.loads(path.read_text())
    del data["parallels_edge_gain"]  # a file written before: no gain
    path.write_text(json.dumps(data))
    assert FusionConfig.load(path).parallels_edge_gain == 0.0
    for bad in (-1, float("inf"), True, "2"):
        with pytest.raises(RestoreError, match="parallels_edge_gain"):
            FusionConfig(parallels_edge_gain=bad)


def test_restore_at_the_stones_edge_uses_the_gain(index):
    from stoicheia.inference.restore import restore
    from stoicheia.inference.restore.gap_search import Fusion

    text = "[---] κῖτε Ζωσίμη χρηστὴ"
    got = {}
    for gain in (0.0, 2.0):
        fusion = Fusion(None, 0.0, index, 0.0)
        fusion.edge_gain = gain
        r = restore(_model(), text, top_k=1, unknown_width=12, fusion=fusion, decoder="parallels")
        got[gain] = r.gaps[0].alternatives[0].letters
    assert got == {0.0: "ωδε", 2.0: "ενθαδε"}
