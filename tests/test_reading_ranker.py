"""The whole readings' ranker (stoicheia/inference/restore/reading_ranker.py) and its fit on the
selection half (stoicheia/inference/benchmark/ranker_fit.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from stoicheia.inference.benchmark.ranker_fit import (
    _objective,
    choice_rows,
    fit_ranker,
    top1_share,
    truth_index,
)
from stoicheia.inference.restore.reading_ranker import (
    FEATURES,
    NULL_FEATURES,
    candidate_features,
    check_coefficients,
    ranked_probabilities,
    reading_kind,
)
from stoicheia.inference.restore.whole_readings import ReadingCase, ReadingWeights
from stoicheia.text import alphabet as A


@dataclass
class _Source:
    """What the ranker reads of a parallels' fill (FillParallels' fields)."""

    sides: tuple[int, int]
    sources: int
    weight: float = 1.0
    edge_weight: float = 0.0
    breaks_disagree: int = 0


def _ids(s: str) -> np.ndarray:
    return np.array([A.LETTERS.index(c) for c in s], dtype=np.int64)


def _case(rng: np.random.Generator, truth_first_by_sources: bool) -> tuple[ReadingCase, str]:
    """A gap of four candidates: the search prefers the first; the parallels carry the others,
    one of them from many independent sources (the truth where ``truth_first_by_sources``)."""
    words = ["αβγ", "δεζ", "ηθι", "κλμ"]
    many = int(rng.integers(1, 4))
    sources = [None] + [_Source((4, 4), 12 if i == many else 1) for i in range(1, 4)]
    p_base = np.array([0.5, 0.1, 0.1, 0.1]) * rng.uniform(0.8, 1.2, 4)
    p_par = np.array([0.0, 0.4, 0.3, 0.3])
    case = ReadingCase(
        [_ids(w) for w in words],
        p_base,
        p_par,
        np.zeros(4, dtype=bool),
        3.0,
        sources,
        [[]] + [None] * 3,
    )
    truth = words[many] if truth_first_by_sources else "νξο"
    return case, truth


def test_the_ranker_learns_what_the_mixture_cannot_weigh():
    """Here the truth is the fill most independent sources carry, whatever the mixture says:
    the fitted ranker puts it first, the mixture never does."""
    rng = np.random.default_rng(0)
    weights = ReadingWeights(0.5, 1.0, 0.0)
    cases = [_case(rng, True) for _ in range(200)]
    data = [(c, c.mixture(weights), truth_index(c, t)) for c, t in cases]
    coef, figures = fit_ranker([choice_rows(c, m, t) for c, m, t in data])
    assert figures["gaps"] == 200 and figures["truth_among"] == 200
    ranked = ReadingWeights(0.5, 1.0, 0.0, ranker={"known": coef})
    assert top1_share((m, t) for _, m, t in data) < 0.5
    assert top1_share((c.mixture(ranked), t) for c, _, t in data) == 1.0
    assert coef["sources"] > 0


def test_none_of_them_takes_the_share_of_gaps_whose_truth_is_no_candidate():
    """Half the gaps have their truth among the candidates: the probabilities of the
    candidates sum to about one half (the rest is "none of them")."""
    rng = np.random.default_rng(1)
    weights = ReadingWeights(0.5, 1.0, 0.0)
    cases = [_case(rng, i % 2 == 0) for i in range(400)]
    data = [(c, c.mixture(weights), truth_index(c, t)) for c, t in cases]
    coef, figures = fit_ranker([choice_rows(c, m, t) for c, m, t in data])
    assert figures["truth_among"] == 200
    ranker = {"known": coef}
    total = np.mean([ranked_probabilities(ranker, c, m).sum() for c, m, _ in data])
    assert total == pytest.approx(0.5, abs=0.03)
    one = ranked_probabilities(ranker, *data[0][:2])
    assert one.shape == (4,) and np.all(one > 0) and one.sum() < 1
    # a kind of gap without coefficients keeps the mixture
    data[0][0].kind = "edge"
    assert np.array_equal(ranked_probabilities(ranker, *data[0][:2]), data[0][1])


def test_the_fit_reaches_the_maximum_of_its_objective():
    """Newton's method stops where the penalised log-likelihood's gradient is 0, and the
    gradient is that of the objective (a finite difference)."""
    rng = np.random.default_rng(2)
    weights = ReadingWeights(0.5, 1.0, 0.0)
    cases = [_case(rng, rng.random() < 0.7) for _ in range(100)]
    gaps = [choice_rows(c, c.mixture(weights), truth_index(c, t)) for c, t in cases]
    coef, _ = fit_ranker(gaps, l2=1.0)
    theta = np.array([coef[k] for k in (*FEATURES, *NULL_FEATURES)])
    _, grad, _ = _objective(theta, gaps, 1.0)
    assert np.abs(grad).max() < 1e-4
    probe = rng.normal(size=theta.shape) * 0.1
    v0, g0, _ = _objective(probe, gaps, 1.0)
    step = np.zeros_like(probe)
    step[0] = 1e-6
    v1, _, _ = _objective(probe + step, gaps, 1.0)
    assert (v1 - v0) / 1e-6 == pytest.approx(g0[0], rel=1e-3)


def test_features_of_a_gap_of_known_width_and_one_of_unknown():
    rng = np.random.default_rng(3)
    case, _ = _case(rng, True)
    m = case.mixture(ReadingWeights(0.5, 1.0, 0.0))
    x = candidate_features(case, m)
    col = {k: i for i, k in enumerate(FEATURES)}
    assert x.shape == (4, len(FEATURES))
    assert list(x[:, col["from_parallels"]]) == [0, 1, 1, 1]
    assert list(x[:, col["from_search"]]) == [1, 0, 0, 0]
    assert np.all(x[:, col["letters"]] == 0.3) and np.all(x[:, col["short"]] == 0)
    assert x[0, col["rank"]] == 0.0  # the search's first is the mixture's first here
    assert x[1:, col["two_sided"]].tolist() == [1, 1, 1]


def test_the_kind_of_gap_picks_its_ranker():
    @dataclass
    class _Found:
        left: np.ndarray
        right: np.ndarray

    both, one = _Found(_ids("αβ"), _ids("γδ")), _Found(_ids("αβ"), _ids(""))
    assert reading_kind(True, one) == "known"
    assert reading_kind(False, both) == "unknown" and reading_kind(False, None) == "unknown"
    assert reading_kind(False, one) == "edge"


def test_a_ranker_of_other_features_is_refused_with_the_fix():
    coef = dict.fromkeys((*FEATURES, *NULL_FEATURES), 0.0)
    assert ReadingWeights(ranker={"edge": coef}).ranker == {"edge": coef}
    with pytest.raises(ValueError, match=r"unknown kind\(s\) of gap \['side'\]"):
        ReadingWeights(ranker={"side": coef})
    with pytest.raises(ValueError, match=r"unknown feature\(s\) \['tier'\].*--save-fusion"):
        check_coefficients({**coef, "tier": 1.0})
    with pytest.raises(ValueError, match=r"missing \['rank'\]"):
        ReadingWeights.from_json(
            {"ranker": {"known": {k: v for k, v in coef.items() if k != "rank"}}}
        )
    with pytest.raises(ValueError, match="not a finite number"):
        check_coefficients({**coef, "rank": float("nan")})


def test_the_benchmark_keeps_a_kinds_ranker_only_where_it_ranks_better_on_the_selection_half():
    """Gaps of known width whose truth the sources pick: their ranker is kept; gaps at the
    stone's edge whose truth is the mixture's first already: the mixture is kept for them."""
    from types import SimpleNamespace

    from stoicheia.inference.benchmark.parallels import fit_readings_ranker
    from stoicheia.inference.benchmark.protocols import Task

    rng = np.random.default_rng(4)
    cases, tasks = {}, {"hidden": [], "edge": []}
    for i in range(120):
        case, truth = _case(rng, True)
        if i % 2:
            case.kind, truth = "edge", "αβγ"  # the search's first, the mixture's first
        task = Task("edge" if i % 2 else "hidden", f"ISic{i:06d}", "", i, i + 1, 0, truth, True)
        cases[task.text_id] = case
        tasks[task.protocol].append(task)

    def make(chosen, ranker=None):
        weights = ReadingWeights(0.5, 1.0, 0.0, ranker=ranker)
        fusion = SimpleNamespace(readings=weights)
        return SimpleNamespace(fusion=fusion, case=lambda task: cases[task.text_id])

    decoder, figures = fit_readings_ranker(make, {}, tasks)
    assert figures["kinds"]["known"]["kept"] and not figures["kinds"]["edge"]["kept"]
    assert set(decoder.fusion.readings.ranker) == {"known"}
    assert figures["kinds"]["known"]["selection_top1"]["ranker"] == 1.0
