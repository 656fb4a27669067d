"""The network as a judge of whole readings (issue 32 §3): each candidate fill of a gap scored
by the network with its letters hidden together (:func:`judge_scores`, all of a gap's
candidates at once), a weight fitted with the mixture's; at 0 the ranking is the one before,
to the bit; at a large weight the network's best fill wins."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from stoicheia.inference.restore.gap_search import GapShape, score_fill
from stoicheia.inference.restore.whole_readings import ReadingWeights, judge_scores
from stoicheia.text import alphabet as A
from tests.test_whole_readings import _fusion, _model, corpus, index  # noqa: F401


def _logp(slots: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 2.0, size=(slots, A.NUM_LETTERS + 2))
    x[:, A.MASK] = -np.inf  # never offered, as in the restore's pass
    return x - np.logaddexp.reduce(x, axis=1, keepdims=True)


@pytest.mark.parametrize(
    "shape", [GapShape(4, 4, True), GapShape(1, 12, False), GapShape(3, 7, False)]
)
def test_all_candidates_at_once_score_as_one_by_one(shape):
    logp = _logp(max(shape.max_letters, 12), seed=shape.max_letters)
    rng = np.random.default_rng(7)
    fills = [
        rng.integers(0, A.NUM_LETTERS, size=int(n))
        for n in rng.integers(shape.min_letters, shape.max_letters + 1, size=30)
    ]
    fills.append(np.arange(shape.max_letters) % A.NUM_LETTERS)  # the widest the gap takes
    batch = judge_scores(logp, shape, fills)
    one = np.array([judge_scores(logp, shape, [f])[0] for f in fills])
    np.testing.assert_array_equal(batch, one)
    # the search's own score of a fill without n-gram and parallels: the network's alone
    np.testing.assert_allclose(batch, [score_fill(logp, shape, f) for f in fills], rtol=1e-12)
    with pytest.raises(ValueError, match="judge_scores: a fill of"):
        judge_scores(logp, shape, [np.zeros(shape.max_letters + 1, dtype=np.int64)])


def test_over_every_fill_of_every_width_the_scores_are_a_distribution():
    shape = GapShape(1, 3, False)
    logp = _logp(3, seed=3)
    total = 0.0
    for n in (1, 2, 3):
        grid = np.stack(np.meshgrid(*[np.arange(A.NUM_LETTERS)] * n, indexing="ij"), -1)
        total += np.exp(judge_scores(logp, shape, list(grid.reshape(-1, n)))).sum()
    assert total == pytest.approx(1.0)


def test_a_fill_the_network_forbids_scores_minus_infinity_and_never_wins():
    logp = _logp(3, seed=1)
    logp[2, 5] = -np.inf
    got = judge_scores(logp, GapShape(3, 3, True), [np.array([0, 0, 5]), np.array([0, 0, 4])])
    assert got[0] == -np.inf and np.isfinite(got[1])


def _case(idx, text):
    """The whole-readings case of the first gap of ``text`` (restore's own decoder)."""
    from stoicheia.inference.restore.decoders import gap_candidates
    from stoicheia.inference.restore.decoding import gap_logp
    from stoicheia.inference.restore.reading import parse_input

    items, gaps = parse_input(text, unknown_width=12)
    total = sum(gaps[it.gap].slots if it.gap is not None else 1 for it in items)
    logp = gap_logp(_model(), items, gaps, {}, 0, 0, total, False)
    hold: dict = {}
    gap_candidates("fused", logp, items, gaps, {}, 0, 20, _fusion(idx), cache=hold)
    return hold["case"]


TEXTS = ("ἔδοξε τᾶι βουλᾶι καὶ τῶι δά[..]ι ἐπαινέσαι", "ἐπαινέσαι Ζωπυρίων ἀρετᾶς [---]")


@pytest.mark.parametrize("text", TEXTS)
def test_judge_weight_zero_is_the_ranking_before_to_the_bit(index, text):  # noqa: F811
    case = _case(index, text)
    assert case.judge is not None and len(case.judge) == len(case.letters)
    before = dataclasses.replace(case, judge=None)  # the case as built before the judge
    for w in (ReadingWeights(), ReadingWeights(0.5, 4.0, 2.0), ReadingWeights(0.9, 0.25, 0.0)):
        now = case.ranked(dataclasses.replace(w, judge=0.0), 20)
        old = before.ranked(w, 20)
        assert [c.text() for c in now] == [c.text() for c in old]
        assert [c.prob for c in now] == [c.prob for c in old]
        np.testing.assert_array_equal(
            case.mixture(dataclasses.replace(w, judge=0.0)), before.mixture(w)
        )
        # a case without the judge's scores ignores any weight
        assert [c.text() for c in before.ranked(dataclasses.replace(w, judge=5.0), 20)] == [
            c.text() for c in old
        ]


@pytest.mark.parametrize("text", TEXTS)
def test_with_a_large_judge_weight_the_networks_best_fill_wins(index, text):  # noqa: F811
    case = _case(index, text)
    plain = case.ranked(ReadingWeights(), 20)
    best = int(np.argmax(case.judge))
    judged = case.ranked(ReadingWeights(judge=60.0), 20)
    assert judged[0].letters.tolist() == case.letters[best].tolist()
    # the mass of the candidates is kept, only shared out differently
    assert case.mixture(ReadingWeights(judge=60.0)).sum() == pytest.approx(
        case.mixture(ReadingWeights()).sum()
    )
    if text.startswith("ἔδοξε"):  # the parallels' μω first, the network's εε once it judges
        assert plain[0].text() == "μω" and judged[0].text() == "εε"


def test_restore_uses_the_judge_weight_of_the_fusion(index):  # noqa: F811
    from stoicheia.inference.restore import restore

    text = TEXTS[0]
    fusion = _fusion(index)
    assert restore(_model(), text, top_k=1, fusion=fusion).restorations[0].fills[0] == "μω"
    fusion.readings = ReadingWeights(judge=60.0)
    assert restore(_model(), text, top_k=1, fusion=fusion).restorations[0].fills[0] == "εε"


def test_the_judge_weight_is_read_from_fusion_json_and_checked():
    assert ReadingWeights.from_json({"lam_max": 0.7, "half": 1.0, "unattested": 0.0}).judge == 0.0
    w = ReadingWeights.from_json({"lam_max": 0.7, "half": 1.0, "unattested": 0.0, "judge": 0.5})
    assert w.judge == 0.5 and ReadingWeights.from_json(w.to_json()) == w
    for bad in (-0.1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="readings judge"):
            ReadingWeights(judge=bad)


def test_fusion_json_stores_the_judge_weight_chosen():
    from stoicheia.inference.benchmark.parallels import fusion_config

    chosen = {"ngram": 0.6, "lam_max": 0.7, "half": 1.0, "unattested": 0.0, "judge": 0.5}
    entry = {"weights": chosen, "figures": {"hidden": {"top1": 0.2, "cer": 0.7}}}
    result = {"fusion": {"fused": {"sweep": [entry], "chosen": chosen, "chosen_on": "2 gaps"}}}
    config = fusion_config(result, None)
    assert config.readings["judge"] == 0.5 and config.ngram_weight == 0.6
    assert "judge 0.5" in config.chosen_on


def test_the_benchmark_takes_the_whole_readings_grid_with_the_judge():
    import argparse

    from stoicheia.commands.benchmark import _readings_grid
    from stoicheia.inference.benchmark.defaults import READINGS_GRID

    assert READINGS_GRID["judge"][0] == 0.0  # the grid holds today's decoder
    grid = _readings_grid("judge=0.5; lam_max=0.7,0.9")
    assert grid == {**READINGS_GRID, "judge": (0.5,), "lam_max": (0.7, 0.9)}
    for bad in ("beta=1", "judge=", "judge=x", "judge=-1", "lam_max=1.5", "half=0", "judge"):
        with pytest.raises(argparse.ArgumentTypeError):
            _readings_grid(bad)
