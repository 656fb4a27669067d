"""The ``lacuna`` noise kind: lost stretches drawn as real editions show them."""

from __future__ import annotations

import math

import numpy as np

from stoicheia.noise import NoiseConfig, noise_record
from stoicheia.noise import lacuna_table as LT
from stoicheia.noise.patterns import draw_stretch, draw_width
from stoicheia.text.alphabet import BLANK, IGNORE_INDEX
from stoicheia.text.planes import Planes


def _words(rng, n_words=2000):
    lengths = rng.integers(2, 11, n_words).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return starts, lengths, int(lengths.sum())


def _planes(rng, n_words=60):
    starts, lengths, n = _words(rng, n_words)
    boundary = np.zeros(n, dtype=np.uint8)  # 0: inside a word; 1: a word ends here
    boundary[starts[1:] - 1] = 1
    zeros = np.zeros(n, dtype=np.uint8)
    chars = rng.integers(0, 24, n).astype(np.uint8)
    return Planes(chars=chars, boundary=boundary, dia=zeros, cap=zeros, punct=zeros)


def _within(observed: int, total: int, p: float) -> bool:
    """Within 4 binomial standard errors (a test that fails by chance about once in 15,000)."""
    return abs(observed - total * p) <= 4 * math.sqrt(total * p * (1 - p)) + 1


def test_widths_follow_the_measured_table():
    rng = np.random.default_rng(0)
    draws = [draw_width(rng) for _ in range(20_000)]
    total = sum(LT.WIDTH_COUNTS.values())
    got = {b: 0 for b in LT.WIDTH_BUCKETS}
    for w in draws:
        got[LT.width_bucket(w)] += 1
    for b, c in LT.WIDTH_COUNTS.items():
        assert _within(got[b], len(draws), c / total), (b, got[b], c / total)


def test_places_and_unknown_extent_follow_the_table():
    """Stretches off the text's edges: their place in the word and their unknown extent as
    the table says, never touching the first or the last word."""
    rng = np.random.default_rng(1)
    starts, lengths, n = _words(rng)
    ends = set((starts + lengths).tolist())
    first = set(starts.tolist())
    draws = 20_000
    place = {p: 0 for p in LT.PLACE_COUNTS}
    unknown = 0
    for _ in range(draws):
        a, b, unk = draw_stretch(starts, lengths, n, rng)
        assert starts[0] + lengths[0] <= a < b <= starts[-1]
        unknown += unk
        s, e = a in first, b in ends
        place[
            "whole words" if s and e else "word start" if s else "word end" if e else "inside"
        ] += 1
    kinds = sum(LT.KIND_COUNTS.values())
    assert _within(unknown, draws, LT.KIND_COUNTS["unknown"] / kinds)
    total = sum(LT.PLACE_COUNTS.values())
    for p, c in LT.PLACE_COUNTS.items():
        assert _within(place[p], draws, c / total), (p, place)


def test_a_text_loses_its_first_and_last_word_as_often_as_in_the_editions():
    """Over records of 60 words, the first letter is hidden in the share of texts whose first
    word the editions lost (49 %), the last letter likewise; the letters hidden are about
    ``t * n`` on average."""
    cfg = NoiseConfig(weights={"lacuna": 1.0}, t_min=0.3, t_max=0.3)
    planes = _planes(np.random.default_rng(4))
    n = len(planes)
    records = 3000
    first = last = hidden = 0
    for seed in range(records):
        z = noise_record(planes, np.random.default_rng(seed), cfg)
        letters = z.tgt_chars[z.tgt_chars != BLANK]  # the n letters' slots, in order
        assert len(letters) == n
        first += int(letters[0] != IGNORE_INDEX)
        last += int(letters[-1] != IGNORE_INDEX)
        hidden += int((letters != IGNORE_INDEX).sum())
    assert _within(first, records, LT.TEXTS_FIRST_LOST / LT.TEXTS)
    assert _within(last, records, LT.TEXTS_LAST_LOST / LT.TEXTS)
    assert abs(hidden / records / n - 0.3) < 0.05


def test_lacuna_noise_is_deterministic_and_hides_unknown_extent():
    cfg = NoiseConfig(weights={"lacuna": 1.0}, t_beta=(2.0, 4.0))
    planes = _planes(np.random.default_rng(2))
    a = noise_record(planes, np.random.default_rng(7), cfg, max_len=1000)
    b = noise_record(planes, np.random.default_rng(7), cfg, max_len=1000)
    assert a.pattern == "lacuna" and np.array_equal(a.chars, b.chars)
    assert np.array_equal(a.tgt_chars, b.tgt_chars)
    blanks = masked = 0
    for seed in range(200):
        z = noise_record(planes, np.random.default_rng(seed), cfg, max_len=1000)
        assert len(z) <= 1000
        blanks += int((z.tgt_chars == BLANK).sum())
        masked += int((z.weight > 0).sum())
    assert blanks > 0 and masked > 0
    # a config without the kind draws exactly as before (its weight 0 by default)
    assert NoiseConfig().weights.get("lacuna", 0.0) == 0.0
