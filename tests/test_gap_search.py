"""The search over one gap's forward pass (stoicheia.inference.restore.gap_search)."""

from __future__ import annotations

import numpy as np
import pytest

from stoicheia.inference.ngram import LetterNgram
from stoicheia.inference.restore.gap_search import Fusion, GapShape, score_fill, search_gap
from stoicheia.text import alphabet as A


def _logp(rng: np.random.Generator, slots: int) -> np.ndarray:
    x = rng.normal(size=(slots, A.NUM_LETTERS + 2)) * 2
    return x - np.log(np.exp(x).sum(axis=1, keepdims=True))


NGRAM = LetterNgram(3).fit(
    [np.array([A.LETTERS.index(c) for c in "καιτονδημονκαιτηνβουληνεδοξε" * 20], dtype=np.uint8)]
)


@pytest.mark.parametrize("w", [0.0, 0.4, 1.0])
@pytest.mark.parametrize(
    "shape", [GapShape(4, 4, True), GapShape(2, 6, False)], ids=["known", "uncertain"]
)
def test_each_candidate_scores_as_score_fill_scores_it(w, shape):
    """The editor's reading is scored by score_fill: it must give a candidate the score the
    search ranked it by, at every weight and for both kinds of width."""
    rng = np.random.default_rng(3)
    logp = _logp(rng, shape.max_letters + 2)
    left, right = np.array([0, 9]), np.array([2, 5])
    fusion = Fusion(NGRAM, w)
    cands = search_gap(logp, shape, 10, fusion, left, right)
    assert len({c.text() for c in cands}) == len(cands) == 10
    assert [c.score for c in cands] == sorted((c.score for c in cands), reverse=True)
    for c in cands:
        assert score_fill(logp, shape, c.letters, fusion, left, right) == pytest.approx(c.score)
        assert all(p >= c.prob - 1e-12 for p in c.letter_probs)
    assert sum(c.prob for c in cands) <= 1 + 1e-9


def test_the_model_alone_gives_proper_path_probabilities():
    """At weight 0 a fill's probability is the product of its steps: summed over every fill of a
    2-letter known width it is 1 (the pool keeps all 576)."""
    rng = np.random.default_rng(0)
    logp = _logp(rng, 2)
    cands = search_gap(logp, GapShape(2, 2, True), 576, Fusion(None, 0.0), pool=576)
    assert sum(c.prob for c in cands) == pytest.approx(1.0)
    lm = logp[:, : A.NUM_LETTERS] - np.log(
        np.exp(logp[:, : A.NUM_LETTERS]).sum(axis=1, keepdims=True)
    )
    best = cands[0]
    assert best.prob == pytest.approx(np.exp(lm[0, best.letters[0]] + lm[1, best.letters[1]]))
    with pytest.raises(ValueError, match="weight 1.5"):
        Fusion(NGRAM, 1.5)


def test_the_ngram_sees_every_letter_before_the_gap_when_there_are_fewer_than_its_history():
    from stoicheia.inference.ngram import BOS
    from stoicheia.inference.restore.gap_search import context

    e, p, i = (A.LETTERS.index(c) for c in "επι")
    # three letters after the text's start, history 4: BOS then all three (not only the last)
    assert context(np.array([e, p, i]), 4, "left").tolist() == [BOS, e, p, i]
    # the same after a lacuna (MASK cuts the context)
    assert context(np.array([p, A.MASK, e, p, i]), 4, "left").tolist() == [BOS, e, p, i]
    assert context(np.array([i, e, p, i, e]), 4, "left").tolist() == [e, p, i, e]
    assert context(np.array([], dtype=np.int64), 4, "left").tolist() == [BOS] * 4
    assert context(np.array([e, p, A.MASK, i]), 4, "right").tolist() == [e, p]


def test_a_short_left_side_scores_as_its_padded_context():
    from stoicheia.inference.restore.gap_search import context

    logp = _logp(np.random.default_rng(0), 3)
    shape = GapShape(3, 3, True)
    fusion = Fusion(NGRAM, 0.7)
    short = np.array([A.LETTERS.index("κ")])
    got = search_gap(logp, shape, 5, fusion, short, np.zeros(0, dtype=np.int64))
    padded = search_gap(logp, shape, 5, fusion, context(short, 2, "left"), None)
    assert [c.text() for c in got] == [c.text() for c in padded]
    assert [c.score for c in got] == pytest.approx([c.score for c in padded])
    # and the n-gram's view of "κ" differs from no left context at all
    alone = search_gap(logp, shape, 5, fusion, None, None)
    assert [c.score for c in got] != pytest.approx([c.score for c in alone])
    assert score_fill(logp, shape, got[0].letters, fusion, short) == pytest.approx(got[0].score)


def test_a_one_letter_fill_of_a_whole_word_gap_is_a_vowel():
    """A gap of uncertain width between word breaks ([---] alone on a line) was filled 'ς': with
    ``one_letter`` a fill of one letter must be one of those letters (vowels); longer fills are
    free."""
    logp = np.full((4, 27), -20.0)
    sigma, alpha = A.LETTERS.index("σ"), A.LETTERS.index("α")
    logp[0, sigma], logp[0, alpha] = -0.1, -3.0
    logp[1:, A.BLANK] = -0.01  # end after the first letter
    vowels = np.array([c in "αεηιουω" for c in A.LETTERS])
    free = search_gap(logp, GapShape(1, 4, False), 3)
    assert free[0].text() == "σ"
    kept = search_gap(logp, GapShape(1, 4, False, vowels), 3)
    assert all(len(c.letters) > 1 or vowels[c.letters[0]] for c in kept)
    assert kept[0].text() == "α"


@pytest.mark.parametrize("w", [0.4, 1.0])
def test_letters_the_rules_forbid_stay_forbidden_at_every_ngram_weight(w):
    """A letter the text's rules forbid is -inf in the forward pass (decoders.ruled): at n-gram
    weight 1 the network weighs 0, and 0 x -inf was NaN (a RuntimeWarning in the benchmark's
    fused sweep, and candidates whose probabilities were NaN). The rule holds at every weight,
    the probabilities stay numbers, and score_fill agrees with the search."""
    rng = np.random.default_rng(5)
    shape = GapShape(1, 3, False)
    logp = _logp(rng, shape.max_letters + 2)
    vowels = [A.LETTERS.index(c) for c in "αεηιουω"]
    consonants = [i for i in range(A.NUM_LETTERS) if i not in vowels]
    logp[0, consonants] = -np.inf  # the first slot: a vowel only
    left, right = np.array([0, 9]), np.array([2, 5])
    fusion = Fusion(NGRAM, w)
    cands = search_gap(logp, shape, 10, fusion, left, right)
    assert cands and all(np.isfinite(c.prob) and np.isfinite(c.score) for c in cands)
    assert all(int(c.letters[0]) in vowels for c in cands)
    assert all(np.all(np.isfinite(c.letter_probs)) for c in cands)
    for c in cands:
        assert score_fill(logp, shape, c.letters, fusion, left, right) == pytest.approx(c.score)
