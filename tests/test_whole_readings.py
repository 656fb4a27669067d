"""Whole readings (issue 31): the decoder weighs the parallels' fills as whole strings, word
division, the stone's edge, and the user's choice of decoder. On a small corpus of EpiDoc files
the tests write: formulas carried by several inscriptions, a passage that runs across a word
break, epitaphs ending at the stone's edge."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stoicheia.data.shards import convert
from stoicheia.inference.parallels import ParallelsIndex, gap_parallels
from stoicheia.text import alphabet as A
from stoicheia.text.encode import encode_text

_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<TEI xmlns="http://www.tei-c.org/ns/1.0">'
    '<teiHeader><profileDesc><textLang mainLang="grc"/></profileDesc></teiHeader>\n'
    "<text><body>\n"
)
_TAIL = "\n</body></text></TEI>\n"

#: what each inscription of the corpus says (one file each); the decree's formula is carried
#: by five, each with its own name around it (five independent sources)
NAMES = ["Φιλιστίων", "Ζωπυρίων", "Μενεκράτης", "Θεόδωρος", "Καλλίστρατος"]
DATED = ["Ἀγάθων", "Βίων", "Γλαῦκος", "Δίων", "Εὔδημος", "Ζήνων", "Ἥρων", "Θέων", "Ἴων", "Κλέων"]
TEXTS = [
    f"{n} εἶπε· ἔδοξε τᾶι βουλᾶι καὶ τῶι δάμωι ἐπαινέσαι {m} ἀρετᾶς ἕνεκα"
    for n, m in zip(NAMES, NAMES[1:] + NAMES[:1], strict=True)
] + [
    # a passage that runs across a word break: μῆν τῆ|ς ἡμέρας, three times, against one
    # μῆνας ς ἡμέρας that agrees with the text's word division
    "ἐπὶ τὸν μῆν τῆς ἡμέρας ἀγαθῆς Πολύξενος",
    "ἐπὶ τὸν μῆν τῆς ἡμέρας ἀγαθῆς Ἀρχέδαμος",
    "ἐπὶ τὸν μῆν τῆς ἡμέρας ἀγαθῆς Τιμολέων",
    "μετὰ μῆνας ς ἡμέρας ἐτελεύτησεν Δεξίθεος",
    # epitaphs: the word before κῖτε
    "Εὐκλείδας ἐνθάδε κῖτε χρηστὲ χαῖρε",
    "Φιλόξενος ἐνθάδε κῖτε χρηστὲ χαῖρε",
    # a lone sigma between spaces (a misprint, in some edition)
    "καὶ ς ἔδωκε τὸν στέφανον Νικάνωρ",
    # a date: ten passages divide πρὸς δὲ where the text to restore divides πρὸ (a lone ς
    # between its typed space and theirs), one agrees with it (πρὸ δύο)
    *(
        f"{n} ἀπέθανε τῇ πρὸς δὲ καλανδῶν {m}"
        for n, m in zip(DATED, DATED[1:] + DATED[:1], strict=True)
    ),
    "Ἀρίστων ἀπέθανε τῇ πρὸ δύο καλανδῶν Μαρτίων",
    # a comma after a word that ends in ει, where the text to restore has one after ε: the
    # parallel would print ἐπρυτάνευε, [ι, δοὺ]ς, a lone ι
    "Ἀπολλόδωρος φονεύει, δοὺς τὸν κλῆρον Σωσικλεῖ",
    # a name with its capital and breathing
    "ὑπὲρ βασιλέως Ἀλεξάνδρου εὐχὴν Ἑρμοκράτης",
    "ὑπὲρ βασιλέως Ἀλεξάνδρου εὐχὴν Σωσίβιος",
]


def _write(folder: Path, name: str, text: str) -> None:
    body = f'<div type="edition" xml:lang="grc"><ab><lb n="1"/>{text}</ab></div>'
    (folder / name).write_text(_HEAD + body + _TAIL, encoding="utf-8")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("readings") / "isicily"
    src.mkdir()
    for i, text in enumerate(TEXTS):
        _write(src, f"ISic9100{i:02d}.xml", text)
    out = src.parent / "shards"
    convert({"bronze": [src]}, out, val_fraction=0.0, max_record_letters=200, progress=False)
    return out


@pytest.fixture(scope="module")
def index(corpus) -> ParallelsIndex:
    return ParallelsIndex(corpus / "parallels")


class _Prefers:
    """A stand-in network that puts ``letter`` first at every hidden slot (logit 4, the other
    letters 0) and BLANK at ``blank``: each of its letters scores higher alone than any other."""

    def __init__(self, letter: str = "ε", blank: float = 1.0) -> None:
        self.letter, self.blank = A.LETTERS.index(letter), blank

    def __call__(self, batch):
        import torch

        chars = batch["chars"]
        B, T = chars.shape
        out = {
            h: torch.zeros(B, T, n)
            for h, n in (("char", 27), ("boundary", 3), ("dia", 48), ("cap", 2), ("punct", 6))
        }
        out["char"][:, :, self.letter] = 4.0
        out["char"][:, :, A.BLANK] = self.blank
        out["boundary"][:, :, 0] = 1.0
        out["punct"][:, :, 0] = 1.0
        return out


def _model(net=None, shards: Path | None = None):
    from stoicheia.inference.loading import LoadedModel

    class Loaded(LoadedModel):
        def __call__(self, batch):
            return self.encoder(batch)

    data = {"seq_len": 512, **({"shard_root": str(shards)} if shards else {})}
    return Loaded(net or _Prefers(), {"data": data}, "stub", "checkpoint")


def _fusion(index, ngram=None, weight=0.0):
    from stoicheia.inference.restore.gap_search import Fusion
    from stoicheia.inference.restore.whole_readings import ReadingWeights

    f = Fusion(ngram, weight, index, 0.0)
    f.readings = ReadingWeights()
    return f


def _ngram(index):
    from stoicheia.inference.ngram import LetterNgram

    t = np.asarray(index.text).astype(np.int64)
    return LetterNgram(3).fit([np.where(t == 0, A.MASK, t - 1)])


def _letters(s: str) -> str:
    p = encode_text(s).planes
    return "".join(A.LETTERS[c] for c in p.chars[p.lacuna == 0])


# --- readings compete as wholes -----------------------------------------------------------


def test_a_reading_carried_by_many_parallels_beats_letters_that_each_score_higher(index):
    from stoicheia.inference.restore import restore
    from stoicheia.inference.restore.gap_search import Fusion

    text = "ἔδοξε τᾶι βουλᾶι καὶ τῶι δά[..]ι ἐπαινέσαι"
    alone = restore(_model(), text, top_k=1, fusion=None)
    assert alone.restorations[0].fills[0] == "εε"  # each ε scores higher than μ or ω alone
    # letter by letter at a middling weight the network's letters still win a step
    letterwise = restore(_model(), text, top_k=1, fusion=Fusion(None, 0.0, index, 0.3))
    assert letterwise.restorations[0].fills[0] != "μω"
    whole = restore(_model(), text, top_k=3, fusion=_fusion(index))
    assert whole.restorations[0].fills[0] == "μω"
    gap = whole.gaps[0]
    assert gap.parallels.fills[0].text() == "μω" and gap.parallels.fills[0].sources == 5
    assert gap.alternatives[0].letters == "μω" and gap.alternatives[0].prob > 0.5
    # the network's reading is still offered, below
    assert "εε" in [a.letters for a in gap.alternatives]


def test_a_parallel_across_a_word_break_ranks_below_one_that_agrees(index):
    from stoicheia.inference.restore import restore
    from stoicheia.inference.restore.parallels_fusion import parallel_context, word_breaks
    from stoicheia.inference.restore.reading import read_input

    text = "μῆ[...] ς ἡμέρας"
    r = read_input(text)
    left, right = parallel_context(r.items, r.gaps, {}, 0)
    blind = gap_parallels(index, left, right, [3])
    # letters only: three sources of μῆν τῆ|ς ἡμέρας outweigh the one μῆνας ς ἡμέρας
    assert blind.fills[0].text() == "ντη"
    aware = gap_parallels(index, left, right, [3], breaks=word_breaks(r.items, r.gaps, {}, 0))
    assert [f.text() for f in aware.fills[:2]] == ["νασ", "ντη"]
    assert aware.fills[0].breaks_disagree == 0 and aware.fills[1].breaks_disagree > 0
    assert aware.fills[0].prob > aware.fills[1].prob
    got = restore(_model(), text, top_k=1, fusion=_fusion(index), decoder="parallels")
    assert got.restorations[0].fills[0] == "νασ"
    # in scriptio continua the text gives no word division: nothing to compare
    continua = read_input("ΜΗ[...]ΣΗΜΕΡΑΣ")
    assert word_breaks(continua.items, continua.gaps, {}, 0) is None


def test_fills_whose_words_the_corpus_never_attests_are_marked(index):
    from stoicheia.inference.restore.parallels_fusion import gap_parallels_for
    from stoicheia.inference.restore.reading import read_input
    from stoicheia.inference.restore.whole_readings import unattested_flags

    r = read_input("ἔδοξε τᾶι βουλᾶι καὶ τῶι δά[..]ι ἐπαινέσαι")
    found = gap_parallels_for(_fusion(index), r.items, r.gaps, {}, 0, prior=False)
    flags = unattested_flags(
        index, found, [np.array([A.LETTERS.index(c) for c in w]) for w in ("μω", "εε")]
    )
    assert flags.tolist() == [False, True]  # δάμωι is a word of the corpus, δάεει none
    # no word division, no judgement
    r = read_input("ΔΑ[..]Ι")
    found = gap_parallels_for(_fusion(index), r.items, r.gaps, {}, 0, prior=False)
    assert not unattested_flags(index, found, [np.array([0, 0])]).any()


def test_no_lone_letter_greek_does_not_write(index):
    from stoicheia.inference.restore import restore

    text = "καὶ [.] ἔδωκε τὸν στέφανον"
    for decoder in ("fused", "parallels", "model"):
        got = restore(_model(), text, top_k=3, fusion=_fusion(index), decoder=decoder)
        fills = [a.letters for a in got.gaps[0].alternatives] + got.restorations[0].fills
        assert "σ" not in fills and "ς" not in fills, decoder
    # the parallels list it (what the corpus has), the decoder never offers it
    assert got.gaps[0].parallels.fills[0].text() == "σ"


def test_a_parallels_fill_never_prints_a_letter_alone_between_word_breaks(index):
    from stoicheia.inference.restore import restore

    sde = [A.LETTERS.index(c) for c in "σδε"]
    # the text divides πρὸ | [...]: ten sources' πρὸς δὲ would print πρὸ [ς δὲ], a lone ς
    text = "ἀπέθανε τῇ πρὸ [...] καλανδῶν"
    for decoder in ("fused", "parallels"):
        got = restore(_model(), text, top_k=3, fusion=_fusion(index), decoder=decoder)
        printed = [r.text for r in got.restorations] + [a.fill for a in got.gaps[0].alternatives]
        assert not any("[ς" in p or p.startswith("ς") for p in printed), (decoder, printed)
        assert all(a.letters != "σδε" for a in got.gaps[0].alternatives), decoder
        # listed among the parallels (what the corpus has), marked and counted as left out
        found = got.gaps[0].parallels
        lone = [f for f in found.fills if f.letters.tolist() == sde]
        assert lone and lone[0].lone_letter == 0 and found.lone_words >= 1, decoder
        # the one parallel that agrees with the text's word division wins
        assert got.restorations[0].text == "ἀπέθανε τῇ πρὸ [δύο] καλανδῶν", decoder
    # where the text leaves the word open (πρὸ[...]), the ten sources agree and win
    got = restore(_model(), "ἀπέθανε τῇ πρὸ[...] καλανδῶν", top_k=1, fusion=_fusion(index))
    assert got.gaps[0].parallels.lone_words == 0
    assert got.restorations[0].text == "ἀπέθανε τῇ πρὸ[ς δὲ] καλανδῶν"


def test_a_parallel_across_a_typed_comma_never_prints_a_lone_iota(index):
    """``ἐπρυτάνευε, [....]ς``: the passage ``φονεύει, δοὺς`` matches ``ευε`` before the gap and
    would print ``[ι, δοὺ]ς``, a lone ι between the text's comma and the passage's; Greek never
    writes ι (or υ) alone, so that fill is left out and counted."""
    from stoicheia.inference.restore import restore

    idou = [A.LETTERS.index(c) for c in "ιδου"]
    for decoder in ("fused", "parallels"):
        got = restore(
            _model(),
            "ἐπρυτάνευε, [....]ς τὸν κλῆρον",
            top_k=3,
            fusion=_fusion(index),
            decoder=decoder,
        )
        found = got.gaps[0].parallels
        lone = [f for f in found.fills if f.letters.tolist() == idou]
        assert lone and lone[0].lone_letter == 0 and found.lone_words >= 1, decoder
        printed = [r.text for r in got.restorations] + [a.fill for a in got.gaps[0].alternatives]
        assert not any("[ι," in p or p.startswith("ι,") for p in printed), (decoder, printed)


def test_a_fill_from_the_parallels_prints_their_capitals_and_accents(index):
    from stoicheia.inference.restore import restore

    text = "ὑπὲρ βασιλέως [.]λεξάνδρου εὐχὴν"
    got = restore(_model(), text, top_k=1, fusion=_fusion(index))
    assert got.restorations[0].text == "ὑπὲρ βασιλέως [Ἀ]λεξάνδρου εὐχὴν"
    assert got.gaps[0].alternatives[0].fill == "Ἀ"
    # in a text without marks, in capitals: as the input writes its letters
    got = restore(_model(), "ΥΠΕΡ ΒΑΣΙΛΕΩΣ [.]ΛΕΞΑΝΔΡΟΥ ΕΥΧΗΝ", top_k=1, fusion=_fusion(index))
    assert got.restorations[0].printed[0] == "Α"
    # a fill of the network's own prints with its heads, as before
    alone = restore(_model(), text, top_k=1, fusion=None)
    assert alone.gaps[0].alternatives[0].letters == "ε"
    assert alone.gaps[0].alternatives[0].fill.lower() == alone.gaps[0].alternatives[0].fill


# --- the stone's edge -----------------------------------------------------------------------


def test_a_one_sided_gap_takes_the_whole_word_of_its_parallel(index):
    from stoicheia.inference.restore import restore
    from stoicheia.inference.restore.reading import read_input

    text = "ἐπαινέσαι Ζωπυρίων ἀρετᾶς [---]"
    assert read_input(text).gaps[0].one_sided == "left"
    got = restore(_model(), text, top_k=3, unknown_width=12, fusion=_fusion(index))
    fills = [f.text() for f in got.gaps[0].parallels.fills]
    assert fills == ["ενεκα"]  # one source, one candidate: never ε, εν, ενε ...
    assert got.restorations[0].fills[0] == "ενεκα"
    # the other side: the word before κῖτε
    text = "[---] κῖτε χρηστὲ χαῖρε"
    got = restore(_model(), text, top_k=1, unknown_width=12, fusion=_fusion(index))
    assert got.gaps[0].one_sided == "right"
    assert [f.text() for f in got.gaps[0].parallels.fills] == ["ενθαδε"]
    assert got.gaps[0].parallels.fills[0].sources == 2
    assert got.restorations[0].fills[0] == "ενθαδε"
    # a gap between two words is two-sided: its widths are searched as before
    assert read_input("ἀρετᾶς [---] καὶ").gaps[0].one_sided is None


# --- the user chooses -----------------------------------------------------------------------


def _task(text: str, truth: str):
    from stoicheia.inference.benchmark.protocols import Task

    start = text.index("[")
    end = text.index("]") + 1
    return Task("hidden", "ISic000001", text, start, end, 0, truth, "-" not in text[start:end])


#: a ranker's coefficients (reading_ranker.py) that reorder the mixture: sources and context
#: count, a long fill gains
_COEF = {
    **dict.fromkeys(("base", "judge", "from_search", "edge", "two_sided", "short", "rank"), 0.0),
    **{"mixture": 1.0, "parallels": 0.3, "from_parallels": 0.5, "unattested": -1.0},
    **{"context": 0.8, "sources": 0.7, "breaks_disagree": -1.0, "letters": 2.0},
    **{"none": 1.0, "none_top": -0.5, "none_evidence": -0.2},
}
#: per kind of gap; the stone's edge keeps the mixture
RANKER = {"known": _COEF, "unknown": {**_COEF, "letters": -1.0, "short": 1.0}}


@pytest.mark.parametrize("edge_gain,ranker", [(0.0, None), (2.0, None), (0.0, RANKER)])
def test_the_decoder_choices_equal_the_benchmarks_rows(corpus, index, edge_gain, ranker):
    from stoicheia.inference.benchmark.parallels import (
        ParallelsCache,
        ParallelsDecoder,
        readings_family,
    )
    from stoicheia.inference.benchmark.run import ModelDecoder, NgramDecoder
    from stoicheia.inference.restore import restore
    from stoicheia.inference.restore.gap_search import Fusion
    from stoicheia.inference.restore.whole_readings import ReadingWeights

    model = _model()
    ngram = _ngram(index)
    md = ModelDecoder(model, k=20, unknown_width=12)
    # the stone's edge's gain as the benchmark fits it and fusion.json hands it to restore
    cache = ParallelsCache(md, index, edge_gain=edge_gain)
    point = {"ngram": 0.4, "lam_max": 0.7, "half": 1.0, "unattested": 1.0}
    rows = {
        "model": md,
        "ngram": NgramDecoder(ngram, k=20, unknown_width=12),
        "parallels": ParallelsDecoder(cache, NgramDecoder(ngram, k=20, unknown_width=12)),
        "fused": readings_family(md, ngram, cache, (0.4,)).make(point, ranker),
    }
    weights = ReadingWeights(0.7, 1.0, 1.0, ranker=ranker)
    for text in (
        "ἔδοξε τᾶι βουλᾶι καὶ τῶι δά[..]ι ἐπαινέσαι",
        "μῆ[...] ς ἡμέρας",
        "ἐπαινέσαι Ζωπυρίων ἀρετᾶς [---]",
        "Φιλόξενος [---] κῖτε χρηστὲ χαῖρε",
    ):
        task = _task(text, "")
        for name, row in rows.items():
            fusion = Fusion(ngram, 0.4, index, 0.0)
            fusion.readings = weights
            fusion.edge_gain = edge_gain
            got = restore(
                model,
                text,
                top_k=1,
                alternatives=20,
                unknown_width=12,
                fusion=fusion,
                decoder=name,
            )
            cands, prob = row(task)
            mine = [a.letters for a in got.gaps[0].alternatives]
            assert mine == cands[: len(mine)] and len(mine) == min(20, len(cands)), (name, text)
            assert got.gaps[0].alternatives[0].prob == pytest.approx(prob, rel=1e-5)


@pytest.mark.parametrize("decoder", ["ngram", "parallels"])
def test_letter_probabilities_of_the_ngram_and_parallels_decoders(index, decoder):
    """Each letter's probability is the summed probability of the fills listed with that letter
    there, as for the fused and model decoders: at least the fill's own, and below 1 where
    other fills disagree (these decoders once printed every letter at 100 %)."""
    from stoicheia.inference.restore import restore

    text = "ἐπὶ τὸν μῆ[...] ς ἡμέρας"  # the parallels carry two fills: νασ and ντη
    got = restore(
        _model(), text, top_k=3, fusion=_fusion(index, _ngram(index), 0.5), decoder=decoder
    )
    gap = got.gaps[0]
    best = gap.alternatives[0]
    assert len(gap.letter_probs) == len(best.letters)
    assert all(best.prob - 1e-6 <= p <= 1.0 for p in gap.letter_probs)
    assert best.prob < 0.999 and min(gap.letter_probs) < 0.999
    # the same shading whatever top-k asks for
    more = restore(
        _model(), text, top_k=5, fusion=_fusion(index, _ngram(index), 0.5), decoder=decoder
    )
    assert more.gaps[0].letter_probs == pytest.approx(gap.letter_probs)


def test_decoder_option_refused_when_unknown_and_ngram_needs_its_file(index):
    from stoicheia.inference.restore import RestoreError, restore

    with pytest.raises(RestoreError, match="--decoder 'beam'"):
        restore(_model(), "καὶ [..]", decoder="beam")
    with pytest.raises(RestoreError, match="no n-gram"):
        restore(_model(), "καὶ τῶι [..]", fusion=_fusion(index), decoder="ngram")


def test_the_parallels_decoder_without_an_index_says_it_printed_the_ngrams_readings(index):
    """``--decoder parallels`` with no index to search gives the n-gram's readings; its note
    says so and how to get an index, not that the parallels came first."""
    from stoicheia.inference.restore import restore

    ngram = _ngram(index)
    alone = _fusion(None, ngram, 0.5)
    got = restore(_model(), "καὶ τῶι [..]", top_k=1, fusion=alone, decoder="parallels")
    (note,) = [n for n in got.notes if n.startswith("decoder parallels")]
    assert "no parallels index was found" in note and "n-gram's readings alone" in note
    assert "stoicheia parallels --build" in note
    with_index = restore(
        _model(), "καὶ τῶι [..]", top_k=1, fusion=_fusion(index, ngram, 0.5), decoder="parallels"
    )
    assert any(
        n.startswith("decoder parallels: the parallels' fills first") for n in with_index.notes
    )


# --- the confidence floor of restore --epidoc -------------------------------------------------

_EDITION = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<TEI xmlns="http://www.tei-c.org/ns/1.0">'
    "<teiHeader><fileDesc><titleStmt><title>t</title></titleStmt></fileDesc>"
    '<profileDesc><textLang mainLang="grc"/></profileDesc></teiHeader>\n<text><body>'
    '<div type="edition" xml:lang="grc"><ab>{}</ab></div></body></text></TEI>\n'
)
_GAP_A = '<gap reason="lost" quantity="2" unit="character"/>'
_GAP_B = '<gap reason="lost" extent="unknown" unit="character"/>'


def _edition(tmp_path: Path) -> tuple[Path, bytes]:
    body = f"ἔδοξε τᾶι βουλᾶι καὶ τῶι δά{_GAP_A}ι ἐπαινέσαι Ζωπυρίων ἀρετᾶς {_GAP_B}"
    path = tmp_path / "ISic990001.xml"
    path.write_bytes(_EDITION.format(body).encode("utf-8"))
    return path, path.read_bytes()


def _body(xml: bytes) -> bytes:
    return xml[xml.index(b"<text>") :]


def test_below_the_floor_the_gap_stays_and_the_edition_is_otherwise_untouched(index, tmp_path):
    import re

    from stoicheia.inference.epidoc.restore import restore_epidoc

    path, before = _edition(tmp_path)
    model = _model(shards=index.folder.parent)  # the run's shards: its parallels index
    res = restore_epidoc(model, path, top_k=3, unknown_width=12, min_probability=1.0)
    assert res.count("restored") == 0 and res.count("left") == 2
    # one reason for both (the corpus summary counts gaps by reason: one bucket, not one per
    # probability), the gaps' own probabilities apart
    assert {g.reason for g in res.gaps} == {
        "below the confidence floor --min-probability 1, readings proposed"
    }
    after = res.xml
    assert _GAP_A.encode() in after and _GAP_B.encode() in after and b"<supplied" not in after
    # the proposals stand right after their gap, each naming it, the best reading first
    proposals = re.findall(rb"<certainty match=[^>]*/>", after)
    assert proposals and b'assertedValue="\xce\xbc\xcf\x89"' in proposals[0]  # μω
    # without them, the edition is the input's byte for byte (the header declares the model)
    assert re.sub(rb"<certainty match=[^>]*/>", b"", _body(after)) == _body(before)
    assert b"left as gaps" in after and b'who="#stoicheia"' in after
    # nothing restored: the change says so without promising restorations
    assert b"Stoicheia restored 0 lacunae" in after and b"top 3 restorations" not in after
    # above the floor: written, the parallels named, the editor's statement of the loss kept
    res = restore_epidoc(model, path, top_k=3, unknown_width=12, min_probability=0.0)
    assert res.count("restored") == 2
    xml = res.xml.decode("utf-8")
    assert 'evidence="parallel"' in xml and "<desc>parallels: ISic9100" in xml
    assert re.search(r'<supplied [^>]*extent="unknown"[^>]*>ἕνεκα</supplied>', xml)
    assert re.search(r'<supplied reason="lost"[^>]*>μω</supplied>', xml)
    assert 'quantity="2"' not in xml  # a counted loss is said by the letters written


def test_a_gap_of_unknown_extent_has_its_own_floor_from_fusion_json(index, tmp_path):
    """fusion.json's two floors: the gap of known width is written at its floor, the one of
    unknown extent is left below its own (and the header names both floors); a file written
    before the two floors uses its one floor for both; --min-probability sets both."""
    import json
    import re

    from stoicheia.inference.epidoc.restore import Floors, default_floors, restore_epidoc

    path, _ = _edition(tmp_path)
    model = _model(shards=index.folder.parent)
    model.source = str(tmp_path / "best.pt")
    fusion = tmp_path / "fusion.json"
    fusion.write_text(json.dumps({"min_probability": 0.0, "min_probability_unknown": 1.0}))
    assert default_floors(model) == Floors(0.0, 1.0)
    res = restore_epidoc(model, path, top_k=3, unknown_width=12, decoder="parallels")
    (known, unknown) = res.gaps
    assert known.status == "restored" and known.fill == "μω"
    assert unknown.status == "left" and unknown.fill == "ἕνεκα"
    assert unknown.reason == "below the confidence floor --min-probability 1, readings proposed"
    xml = res.xml.decode("utf-8")
    assert re.search(r'<supplied reason="lost"[^>]*>μω</supplied>', xml)
    assert '<gap reason="lost" extent="unknown" unit="character"/>' in xml
    assert "below the confidence floor 0 (1 for gaps of unknown extent)" in xml
    # the floor given by hand is every gap's
    res = restore_epidoc(
        model, path, top_k=3, unknown_width=12, decoder="parallels", min_probability=0.0
    )
    assert res.count("restored") == 2
    fusion.write_text(json.dumps({"min_probability": 0.3}))  # before the two floors
    assert default_floors(model) == Floors(0.3, 0.3)
    fusion.unlink()
    assert default_floors(model) == Floors(0.0, 0.0)
    assert Floors(0.2, 0.5).of("[---]") == 0.5 and Floors(0.2, 0.5).of("[.3.]") == 0.2


def test_the_floors_are_chosen_per_kind_of_gap_with_the_wilson_interval():
    """A floor is the least at which the selection half's written gaps are right with the lower
    end of the 95 % Wilson interval at one half or more; each kind of gap has its own; none
    reaching it keeps 1 (nothing written but the sure); the summary says what the floor
    writes on the report half."""
    from stoicheia.inference.benchmark.floors import (
        KNOWN_WIDTH,
        UNKNOWN_EXTENT,
        choose_floor,
        wilson_interval,
        written_lines,
    )

    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="11 right of 10"):
        wilson_interval(11, 10)

    def rows(half, prob, right, n):
        return [{"half": half, "fused": {"prob": prob, "rank": 1 if right else 2}}] * n

    known = rows("selection", 0.9, True, 12) + rows("selection", 0.5, False, 12)
    known += rows("report", 0.9, True, 2) + rows("report", 0.9, False, 1)
    known += rows("report", 0.5, True, 1)
    unknown = rows("selection", 0.9, True, 3) + rows("selection", 0.2, False, 30)
    result = {
        "protocols": {
            "hidden": {"examples": known},
            "unknown": {"examples": unknown + rows("report", 0.95, False, 2)},
        }
    }
    # known width: from 0.55 up 12 of 12 right (Wilson low 0.76); at 0.5, 12 of 24 (0.31)
    assert choose_floor(result, "fused", KNOWN_WIDTH) == 0.55
    # unknown extent: 3 of 3 at 0.25 and up gives a Wilson low of 0.44 only: none written
    assert choose_floor(result, "fused", UNKNOWN_EXTENT) == 1.0
    assert choose_floor(result, "model", UNKNOWN_EXTENT) is None  # no such decoder's rows
    lines = written_lines(result, "fused", {"known": 0.55, "unknown": 1.0})
    assert lines[1] == "  gaps of known width: floor 0.55, 3 of 4 written, 66.7% right [20.8, 93.9]"
    assert lines[2] == "  gaps of unknown extent [---]: floor 1, 0 of 2 written, none"


def test_the_floor_and_the_default_decoder_are_chosen_by_hand():
    """The floor: the least probability at which the selection half's gaps written would be
    right half the time (the low end of the Wilson interval); the default decoder: the best
    top-1 on the report half."""
    from stoicheia.inference.benchmark.floors import choose_floor
    from stoicheia.inference.benchmark.parallels import report_winner

    def row(half, prob, right):
        return {"half": half, "fused": {"prob": prob, "rank": 1 if right else 3}}

    examples = [row("selection", 0.9, True)] * 9 + [
        row("selection", 0.6, False),
        row("selection", 0.3, True),
        row("selection", 0.12, False),
        row("selection", 0.02, False),
        row("report", 0.01, True),  # the report half never moves the floor
        row("report", 0.02, True),
    ]
    result = {"protocols": {"hidden": {"examples": examples}}}
    # at 0: 10 of 13 right (Wilson low 0.497); from 0.05: 10 of 12 (0.552)
    assert choose_floor(result, "fused") == 0.05
    examples[0] = row("selection", 0.9, False)
    # at 0: 9 of 13 (0.424); from 0.05: 9 of 12 (0.468); from 0.15: 9 of 11 (0.523)
    assert choose_floor(result, "fused") == 0.15
    examples[10] = row("selection", 0.3, False)
    # from 0.15: 8 of 11; from 0.35: 8 of 10 (0.490); from 0.65: 8 of 9 (0.565)
    assert choose_floor(result, "fused") == 0.65

    def view(top1, cer):
        return {"top1": top1, "cer": cer}

    result = {
        "protocols": {
            p: {
                "views": {
                    "report": {
                        "decoders": {
                            "fused": view(0.40, 0.5),
                            "parallels": view(a, 0.6),
                            "ngram": view(0.2, 0.7),
                            "model": view(0.1, 0.8),
                            "fused3": view(0.9, 0.1),  # not a choice of --decoder
                        }
                    }
                }
            }
            for p, a in (("hidden", 0.50), ("supplements", 0.36))
        }
    }
    assert report_winner(result) == "parallels"  # 0.43 against 0.40
    result["protocols"]["supplements"]["views"]["report"]["decoders"]["parallels"]["top1"] = 0.3
    assert report_winner(result) == "fused"  # a tie at 0.40: the lower CER


def test_corpus_words_of_a_text_without_word_ends_is_empty():
    import numpy as np

    from stoicheia.data.word_hashes import corpus_words
    from stoicheia.text import alphabet as A

    text = np.array([3, 4, 5, 0, 6], dtype=np.uint8)
    none = np.full(5, A.BOUNDARY_INTERNAL)
    assert corpus_words(text, none).size == 0, "scriptio continua gives no attested word"
    assert corpus_words(np.zeros(3, dtype=np.uint8), none[:3]).size == 0


def test_the_ranker_fitted_by_the_benchmark_reaches_restore_through_fusion_json(tmp_path):
    """fusion_config writes the ranker beside the mixture's weights; restore reads it back."""
    from stoicheia.inference.benchmark.parallels import fusion_config
    from stoicheia.inference.restore.fusion_file import FusionConfig
    from stoicheia.inference.restore.whole_readings import ReadingWeights

    chosen = {"ngram": 0.9, "lam_max": 0.7, "half": 4.0, "unattested": 0.0, "judge": 0.0}
    result = {
        "fusion": {
            "fused": {
                "chosen": chosen,
                "chosen_on": "10 gaps of the selection half",
                "sweep": [{"weights": chosen, "figures": {"hidden": {"top1": 0.5, "cer": 0.4}}}],
                "ranker": {"coef": RANKER, "gaps": 10},
            }
        }
    }
    config = fusion_config(result, None)
    assert config.readings["ranker"] == RANKER
    config.save(tmp_path / "fusion.json")
    back = FusionConfig.load(tmp_path / "fusion.json")
    assert ReadingWeights.from_json(back.readings).ranker == RANKER
