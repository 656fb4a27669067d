"""Tests for stoicheia.noise: masked-diffusion corruption of one record."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from stoicheia.noise import (
    PATTERNS,
    NoiseConfig,
    Noised,
    noise_record,
    reference_noise,
    sample_t,
)
from stoicheia.text.alphabet import (
    BLANK,
    BOUNDARY_UNKNOWN,
    CAP_UNKNOWN,
    DIA_UNKNOWN,
    IGNORE_INDEX,
    MASK,
    PUNCT_UNKNOWN,
)

UNK = {"boundary": BOUNDARY_UNKNOWN, "dia": DIA_UNKNOWN, "punct": PUNCT_UNKNOWN}
ALL_KNOWN = {"boundary": (1.0, 0.0), "dia": (1.0, 0.0), "punct": (1.0, 0.0)}
MASK_PATTERNS = ("span", "word", "elastic", "iid", "half_word")


def make_planes(word_lens, rng, boundary_unknown=False):
    """Planes of words with the given lengths; random letters/dia/cap/punct, no UNKNOWN."""
    n = int(sum(word_lens))
    boundary = np.zeros(n, np.uint8)
    ends = np.cumsum(word_lens) - 1
    boundary[ends] = 1
    boundary[-1] = 2
    if boundary_unknown:
        boundary[:] = BOUNDARY_UNKNOWN
    return SimpleNamespace(
        chars=rng.integers(0, 24, n).astype(np.uint8),
        boundary=boundary,
        dia=rng.integers(0, 48, n).astype(np.uint8),
        cap=rng.integers(0, 2, n).astype(np.uint8),
        punct=rng.integers(0, 6, n).astype(np.uint8),
    )


def random_record(rng, n_words=40, max_word=9):
    return make_planes(rng.integers(1, max_word + 1, n_words), rng)


def cfg_for(pattern, t=None, **kw):
    extra = {} if t is None else {"t_min": t, "t_max": t}
    return NoiseConfig(weights={pattern: 1.0}, **extra, **kw)


def word_bounds(planes):
    """(start, length) of every source word."""
    b = np.asarray(planes.boundary)
    ends = np.flatnonzero((b == 1) | (b == 2))
    starts = np.concatenate(([0], ends[:-1] + 1))
    return list(zip(starts.tolist(), (ends - starts + 1).tolist(), strict=True))


def slot_groups(out):
    """Slot ranges of the words of a Noised record, split at word_start."""
    ws = np.flatnonzero(out.word_start).tolist() + [len(out)]
    return [(a, b - a) for a, b in zip(ws[:-1], ws[1:], strict=True)]


def letter_slots(out):
    """Bool (M,): slots that hold a letter of the source (not elastic BLANK filler)."""
    return out.tgt_chars != BLANK


# ------------------------------------------------------------------------------------------
# labels


@pytest.mark.parametrize("pattern", MASK_PATTERNS)
def test_labels_only_where_masked(pattern):
    rng = np.random.default_rng(1)
    cfg = cfg_for(pattern, channel_known=ALL_KNOWN)
    n_masked = 0
    for _ in range(40):
        planes = random_record(rng)
        out = noise_record(planes, rng, cfg)
        assert out.pattern == pattern
        masked = out.chars == MASK
        letters = letter_slots(out)
        n_masked += int(masked.sum())
        # char targets and weights exactly at MASK slots
        assert np.array_equal(out.tgt_chars != IGNORE_INDEX, masked)
        assert np.allclose(out.weight[masked], 1.0 / out.t)
        assert np.all(out.weight[~masked] == 0)
        # map letter slots back to the source letters
        src_chars = np.asarray(planes.chars)
        assert np.array_equal(out.chars[letters & ~masked], src_chars[~masked[letters]])
        assert np.array_equal(out.tgt_chars[letters & masked], src_chars[masked[letters]])
        lm = masked[letters]  # masked, at letter level
        for name in ("boundary", "dia", "punct"):
            src = np.asarray(getattr(planes, name)).astype(np.int16)
            inp = getattr(out, name)[letters]
            tgt = getattr(out, "tgt_" + name)[letters]
            assert np.all(inp[lm] == UNK[name])
            assert np.array_equal(inp[~lm], src[~lm])  # channel fully known
            assert np.array_equal(tgt[lm], src[lm])
            assert np.all(tgt[~lm] == IGNORE_INDEX)
            assert np.all(getattr(out, "tgt_" + name)[~letters] == IGNORE_INDEX)
            assert np.all(getattr(out, name)[~letters] == UNK[name])
        # cap has no input: supervised at every letter slot
        assert np.array_equal(out.tgt_cap[letters], np.asarray(planes.cap))
        assert np.all(out.tgt_cap[~letters] == IGNORE_INDEX)
    assert n_masked > 1000


def test_substitute_labels_and_letters():
    rng = np.random.default_rng(2)
    cfg = cfg_for("substitute", t=0.4, channel_known=ALL_KNOWN)
    replaced_from_alpha = []
    n_sub = n_total = 0
    for _ in range(60):
        planes = random_record(rng)
        out = noise_record(planes, rng, cfg)
        src = np.asarray(planes.chars)
        assert len(out) == src.size and out.pattern == "substitute"
        assert not np.any(out.chars == MASK) and out.chars.max() < 24
        sub = out.chars != src
        n_sub += int(sub.sum())
        n_total += src.size
        replaced_from_alpha.extend(out.chars[sub & (src == 0)].tolist())
        # every letter is a target, weight 1.0 (not 1/t)
        assert np.array_equal(out.tgt_chars, src.astype(np.int16))
        assert np.all(out.weight == 1.0)
        for name in ("boundary", "dia", "punct"):
            s = np.asarray(getattr(planes, name))
            assert np.array_equal(getattr(out, name), s)  # inputs untouched (channel known)
            tgt = getattr(out, "tgt_" + name)
            assert np.array_equal(tgt != IGNORE_INDEX, sub)
            assert np.array_equal(tgt[sub], s[sub])
        assert np.array_equal(out.tgt_cap, np.asarray(planes.cap))
    assert abs(n_sub / n_total - 0.4) < 0.02
    # the replacement of alpha is uniform over the 23 other letters: all of them occur
    assert set(replaced_from_alpha) == set(range(1, 24))


# ------------------------------------------------------------------------------------------
# patterns


def test_word_pattern_masks_whole_words():
    rng = np.random.default_rng(3)
    cfg = cfg_for("word", t=0.3)
    partial = whole = 0
    for _ in range(50):
        planes = random_record(rng)
        out = noise_record(planes, rng, cfg)
        assert len(out) == len(planes.chars)
        masked = out.chars == MASK
        for s, L in word_bounds(planes):
            m = masked[s : s + L]
            partial += int(m.any() and not m.all())
            whole += int(m.all())
    assert partial == 0 and whole > 200


def test_elastic_lengths_and_blank_targets():
    rng = np.random.default_rng(4)
    cfg = cfg_for("elastic", t=0.4)
    n_elastic = 0
    seen_u = set()
    lengths_u = []
    for _ in range(50):
        planes = random_record(rng)
        out = noise_record(planes, rng, cfg)
        src = np.asarray(planes.chars)
        words = word_bounds(planes)
        groups = slot_groups(out)
        assert len(groups) == len(words)
        assert out.word_start[0]
        for (s, L), (a, m) in zip(words, groups, strict=True):
            ch = out.chars[a : a + m]
            if m == L:  # untouched word
                assert not np.any(ch == MASK)
                assert np.array_equal(ch, src[s : s + L])
                continue
            n_elastic += 1
            assert L + 2 <= m <= L + 2 + 20
            seen_u.add(m - L - 2)
            lengths_u.append((L, m - L - 2))
            assert np.all(ch == MASK)
            tgt = out.tgt_chars[a : a + m]
            assert np.array_equal(tgt[:L], src[s : s + L])
            assert np.all(tgt[L:] == BLANK)
            assert np.allclose(out.weight[a : a + m], 1.0 / out.t)
            for name in ("boundary", "dia", "punct", "cap"):
                assert np.all(getattr(out, "tgt_" + name)[a + L : a + m] == IGNORE_INDEX)
                assert np.all(getattr(out, "tgt_" + name)[a : a + L] != IGNORE_INDEX)
            for name in ("boundary", "dia", "punct"):
                assert np.all(getattr(out, name)[a : a + m] == UNK[name])
            assert out.word_start[a] and not out.word_start[a + 1 : a + m].any()
    assert n_elastic > 200
    assert seen_u == set(range(21))  # u in 0..elastic_pad_max = 0..20, whatever the word's length
    # the padding says nothing of the width: short and long words draw the same u
    short = [u for (L, u) in lengths_u if L <= 3]
    long_ = [u for (L, u) in lengths_u if L >= 6]
    assert max(short) >= 15 and abs(np.mean(short) - np.mean(long_)) < 2.0


@pytest.mark.parametrize("pattern", MASK_PATTERNS + ("substitute",))
def test_word_start(pattern):
    rng = np.random.default_rng(5)
    cfg = cfg_for(pattern)
    for _ in range(20):
        planes = random_record(rng)
        out = noise_record(planes, rng, cfg)
        assert out.word_start.dtype == bool and out.word_start[0]
        starts = [s for s, _ in word_bounds(planes)]
        assert int(out.word_start.sum()) == len(starts)
        # letter slot -> letter index; word starts fall on the first letters of words
        letters = np.flatnonzero(letter_slots(out))
        assert np.array_equal(np.flatnonzero(out.word_start[letters]), starts)


def test_half_word_strict_anchored_parts():
    rng = np.random.default_rng(6)
    cfg = cfg_for("half_word", t=0.3)
    anchors = {"end": 0, "start": 0, "middle": 0}
    for _ in range(150):
        planes = random_record(rng)
        out = noise_record(planes, rng, cfg)
        masked = out.chars == MASK
        assert len(out) == len(planes.chars)
        for s, L in word_bounds(planes):
            m = np.flatnonzero(masked[s : s + L])
            if m.size == 0:
                continue
            assert L >= 2 and m.size <= L - 1  # a strict part of a word of >= 2 letters
            assert np.array_equal(m, np.arange(m[0], m[-1] + 1))  # one contiguous part
            if L >= 3:
                if m[-1] == L - 1:
                    anchors["end"] += 1
                elif m[0] == 0:
                    anchors["start"] += 1
                else:
                    anchors["middle"] += 1
    total = sum(anchors.values())
    assert total > 1500
    for name, p in (("end", 0.5), ("start", 0.3), ("middle", 0.2)):
        assert abs(anchors[name] / total - p) < 0.04, anchors


def test_span_runs_cross_word_edges():
    rng = np.random.default_rng(7)
    cfg = cfg_for("span", t=0.3)
    crossing = 0
    for _ in range(30):
        planes = random_record(rng)
        out = noise_record(planes, rng, cfg)
        masked = out.chars == MASK
        ends = np.flatnonzero(np.asarray(planes.boundary) > 0)[:-1]
        crossing += int(np.sum(masked[ends] & masked[ends + 1]))
    assert crossing > 50


@pytest.mark.parametrize("pattern", ("span", "word", "elastic", "iid", "half_word", "substitute"))
def test_corrupted_fraction_close_to_t(pattern):
    """Mean corrupted fraction matches t, for fixed t and for t ~ Beta(2, 4)."""
    rng = np.random.default_rng(8)

    def frac(out, planes):
        if pattern == "substitute":
            return float(np.mean(out.chars != np.asarray(planes.chars)))
        return float(np.sum(out.tgt_chars[out.tgt_chars != BLANK] != IGNORE_INDEX)) / len(
            planes.chars
        )

    for t in (0.15, 0.45):
        cfg = cfg_for(pattern, t=t)
        fr = [frac(noise_record(p, rng, cfg), p) for p in (random_record(rng) for _ in range(300))]
        # standard error is below 0.002 here; overshooting by half a word per record would
        # shift the mean by ~0.012
        assert abs(np.mean(fr) - t) < 0.006, (t, np.mean(fr))
    # t ~ Beta(2, 4): half_word falls short only for the rare t above ~0.75 (strict parts)
    cfg = cfg_for(pattern)
    diffs = []
    for _ in range(400):
        p = random_record(rng)
        out = noise_record(p, rng, cfg)
        diffs.append(frac(out, p) - out.t)
    assert abs(np.mean(diffs)) < 0.006, np.mean(diffs)


def test_mixture_draws_every_pattern_with_its_weight():
    rng = np.random.default_rng(9)
    cfg = NoiseConfig()
    planes = random_record(rng, n_words=5)
    counts = dict.fromkeys(PATTERNS, 0)
    ts = []
    for _ in range(3000):
        out = noise_record(planes, rng, cfg)
        counts[out.pattern] += 1
        ts.append(out.t)
    for name, w in cfg.weights.items():
        assert abs(counts[name] / 3000 - w) < 0.03, counts
    ts = np.array(ts)
    assert ts.min() >= 0.05 and ts.max() <= 0.95
    assert abs(ts.mean() - 1 / 3) < 0.015  # Beta(2, 4) mean, little changed by clipping


def test_sample_t_clipped():
    rng = np.random.default_rng(10)
    cfg = NoiseConfig(t_min=0.2, t_max=0.3)
    ts = np.array([sample_t(rng, cfg) for _ in range(2000)])
    assert ts.min() == 0.2 and ts.max() == 0.3
    assert 0.2 < np.median(ts) < 0.35 or np.median(ts) == 0.3


# ------------------------------------------------------------------------------------------
# channels


@pytest.mark.parametrize("pattern", MASK_PATTERNS + ("substitute",))
def test_channel_hiding_sets_unknown_and_labels(pattern):
    rng = np.random.default_rng(11)
    patchy = {"boundary": (0.0, 0.0), "dia": (0.0, 0.0), "punct": (0.0, 0.0)}
    cfg = cfg_for(pattern, channel_known=patchy)
    n_hidden_visible_letter = 0
    for _ in range(30):
        planes = random_record(rng)
        out = noise_record(planes, rng, cfg)
        letters = letter_slots(out)
        src_chars = np.asarray(planes.chars)
        corrupted = (out.chars != src_chars[np.cumsum(letters) - 1]) & letters
        for name in ("boundary", "dia", "punct"):
            src = np.asarray(getattr(planes, name))
            inp = getattr(out, name)[letters]
            tgt = getattr(out, "tgt_" + name)[letters]
            cor = corrupted[letters]
            hidden = inp == UNK[name]  # the source has no UNKNOWN values
            if pattern != "substitute":
                assert np.all(hidden[cor])
            n_hidden_visible_letter += int(np.sum(hidden & ~cor))
            assert np.array_equal(inp[~hidden], src[~hidden])
            assert np.array_equal(tgt != IGNORE_INDEX, hidden | cor)
            sup = tgt != IGNORE_INDEX
            assert np.array_equal(tgt[sup], src[sup])
    assert n_hidden_visible_letter > 500


def test_channel_availability_frequencies():
    rng = np.random.default_rng(12)
    cfg = cfg_for("iid", t=0.05)
    kinds = {name: {"known": 0, "unknown": 0, "patchy": 0} for name in UNK}
    for _ in range(1500):
        planes = random_record(rng, n_words=30)
        out = noise_record(planes, rng, cfg)
        vis = out.chars != MASK
        for name in UNK:
            h = getattr(out, name)[vis] == UNK[name]
            kind = "known" if not h.any() else ("unknown" if h.all() else "patchy")
            kinds[name][kind] += 1
    for name, (pk, pu) in cfg.channel_known.items():
        assert abs(kinds[name]["known"] / 1500 - pk) < 0.045, kinds
        assert abs(kinds[name]["unknown"] / 1500 - pu) < 0.045, kinds


@pytest.mark.parametrize("pattern", MASK_PATTERNS + ("substitute",))
def test_source_unknown_planes_never_targets(pattern):
    rng = np.random.default_rng(13)
    cfg = cfg_for(pattern, t=0.5)
    for _ in range(20):
        planes = random_record(rng)
        n = len(planes.chars)
        planes.punct = np.full(n, PUNCT_UNKNOWN, np.uint8)  # e.g. PROIEL: no punctuation
        unk_dia = rng.random(n) < 0.5
        planes.dia = np.where(unk_dia, DIA_UNKNOWN, planes.dia).astype(np.uint8)
        unk_cap = rng.random(n) < 0.3
        planes.cap = np.where(unk_cap, CAP_UNKNOWN, planes.cap).astype(np.uint8)
        out = noise_record(planes, rng, cfg)
        letters = letter_slots(out)
        assert np.all(out.punct == PUNCT_UNKNOWN)
        assert np.all(out.tgt_punct == IGNORE_INDEX)
        assert np.all(out.dia[letters][unk_dia] == DIA_UNKNOWN)
        assert np.all(out.tgt_dia[letters][unk_dia] == IGNORE_INDEX)
        assert np.all(out.tgt_cap[letters][unk_cap] == IGNORE_INDEX)
        assert np.all(out.tgt_cap[letters][~unk_cap] == planes.cap[~unk_cap])


def test_all_unknown_boundary_gives_pseudo_words():
    rng = np.random.default_rng(14)
    cfg = cfg_for("word", t=0.4)
    for _ in range(30):
        planes = make_planes(rng.integers(1, 10, 30), rng, boundary_unknown=True)
        out = noise_record(planes, rng, cfg)
        assert np.all(out.boundary == BOUNDARY_UNKNOWN)
        assert np.all(out.tgt_boundary == IGNORE_INDEX)
        starts = np.flatnonzero(out.word_start)
        lens = np.diff(np.append(starts, len(out)))
        assert starts[0] == 0 and lens.max() <= 8 and np.all(lens[:-1] >= 2)
        masked = out.chars == MASK
        for s, L in zip(starts, lens, strict=True):
            assert masked[s : s + L].all() or not masked[s : s + L].any()
        assert masked.any()


# ------------------------------------------------------------------------------------------
# max_len, determinism, API


def test_max_len_respected():
    rng = np.random.default_rng(15)
    cfg = cfg_for("elastic", t=0.9)
    plain_seen = 0
    for _ in range(30):
        planes = random_record(rng)
        n = len(planes.chars)
        max_len = n + 12
        out = noise_record(planes, rng, cfg, max_len=max_len)
        assert len(out) <= max_len
        for (_s, L), (a, m) in zip(word_bounds(planes), slot_groups(out), strict=True):
            if m == L and np.all(out.chars[a : a + m] == MASK):
                plain_seen += 1
                assert not np.any(out.tgt_chars[a : a + m] == BLANK)
        out = noise_record(planes, rng, cfg, max_len=n)
        assert len(out) == n
        with pytest.raises(ValueError, match="max_len"):
            noise_record(planes, rng, cfg, max_len=n - 1)
    assert plain_seen > 100


def noised_equal(a: Noised, b: Noised) -> bool:
    for f in dataclasses.fields(Noised):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            if x.dtype != y.dtype or not np.array_equal(x, y):
                return False
        elif x != y:
            return False
    return True


def test_determinism():
    planes = random_record(np.random.default_rng(16), n_words=60)
    cfg = NoiseConfig()
    runs = [
        [noise_record(planes, np.random.default_rng(seed), cfg) for seed in range(30)]
        for _ in range(2)
    ]
    assert all(noised_equal(a, b) for a, b in zip(runs[0], runs[1], strict=True))
    other = [noise_record(planes, np.random.default_rng(seed + 1000), cfg) for seed in range(30)]
    assert sum(noised_equal(a, b) for a, b in zip(runs[0], other, strict=True)) == 0
    # the global numpy state is not used
    np.random.seed(0)
    a = noise_record(planes, np.random.default_rng(3), cfg)
    np.random.seed(1)
    assert noised_equal(a, noise_record(planes, np.random.default_rng(3), cfg))


def test_dtypes_and_slicing():
    rng = np.random.default_rng(17)
    planes = random_record(rng)
    out = noise_record(planes, rng, cfg_for("elastic", t=0.5))
    assert out.chars.dtype == np.uint8 and out.boundary.dtype == np.uint8
    assert out.dia.dtype == np.uint8 and out.punct.dtype == np.uint8
    for name in ("tgt_chars", "tgt_boundary", "tgt_dia", "tgt_cap", "tgt_punct"):
        assert getattr(out, name).dtype == np.int16
        assert getattr(out, name).shape == (len(out),)
    assert out.weight.dtype == np.float32 and out.word_start.dtype == bool
    assert len(out) > len(planes.chars)
    part = out[3:20]
    assert isinstance(part, Noised) and len(part) == 17
    assert np.array_equal(part.tgt_dia, out.tgt_dia[3:20]) and part.t == out.t
    with pytest.raises(TypeError):
        out[3]


def test_reference_noise():
    rng = np.random.default_rng(18)
    n_masked = n_total = 0
    for _ in range(100):
        planes = random_record(rng)
        out = reference_noise(planes, rng, t=0.3)
        assert out.pattern == "reference" and out.t == 0.3 and len(out) == len(planes.chars)
        masked = out.chars == MASK
        n_masked += int(masked.sum())
        n_total += len(out)
        assert np.array_equal(out.tgt_chars != IGNORE_INDEX, masked)
        assert np.all(out.weight[masked] == 1.0) and np.all(out.weight[~masked] == 0)
        for name in ("boundary", "dia", "punct"):
            assert np.all(getattr(out, name) == UNK[name])
            assert np.array_equal(getattr(out, "tgt_" + name), getattr(planes, name))
        assert np.array_equal(out.tgt_cap, planes.cap)
    assert abs(n_masked / n_total - 0.3) < 0.015
    a = reference_noise(planes, np.random.default_rng(1))
    assert noised_equal(a, reference_noise(planes, np.random.default_rng(1)))
    with pytest.raises(ValueError, match="t"):
        reference_noise(planes, rng, t=0.0)


def test_bad_planes():
    rng = np.random.default_rng(19)
    cfg = NoiseConfig()
    good = random_record(rng, n_words=3)
    bad = SimpleNamespace(**vars(good))
    bad.dia = bad.dia.copy()
    bad.dia[2] = 49
    with pytest.raises(ValueError, match=r"'dia' has id 49 at letter 2"):
        noise_record(bad, rng, cfg)
    bad = SimpleNamespace(**vars(good))
    bad.chars = np.full_like(good.chars, MASK)
    with pytest.raises(ValueError, match="'chars'"):
        noise_record(bad, rng, cfg)
    bad = SimpleNamespace(**vars(good))
    bad.cap = good.cap[:-1]
    with pytest.raises(ValueError, match="'cap' has"):
        noise_record(bad, rng, cfg)
    bad = SimpleNamespace(**vars(good))
    bad.punct = good.punct.astype(np.int64) - 1
    with pytest.raises(ValueError, match="'punct' has id -1"):
        noise_record(bad, rng, cfg)
    bad = SimpleNamespace(**{k: v for k, v in vars(good).items() if k != "boundary"})
    with pytest.raises(ValueError, match="'boundary'"):
        noise_record(bad, rng, cfg)
    empty = SimpleNamespace(**{k: v[:0] for k, v in vars(good).items()})
    with pytest.raises(ValueError, match="empty"):
        noise_record(empty, rng, cfg)
    # other integer dtypes are accepted
    wide = SimpleNamespace(**{k: v.astype(np.int64) for k, v in vars(good).items()})
    assert noised_equal(
        noise_record(wide, np.random.default_rng(0), cfg),
        noise_record(good, np.random.default_rng(0), cfg),
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weights": {"spam": 1.0}}, "unknown pattern 'spam'"),
        ({"weights": {"word": -0.1, "iid": 1.0}}, r"weights\['word'\]"),
        ({"weights": {"word": 0.0}}, "all zero"),
        ({"weights": {"word": float("nan")}}, r"weights\['word'\]"),
        ({"t_min": 0.0}, "t range"),
        ({"t_min": 0.6, "t_max": 0.5}, "t range"),
        ({"t_max": 1.5}, "t range"),
        ({"t_beta": (2.0, -1.0)}, "t_beta"),
        ({"t_beta": (2.0,)}, "t_beta"),
        ({"span_mean": 0.5}, "span_mean"),
        ({"span_max": 0}, "span_max"),
        ({"span_max": 2.5}, "span_max"),
        ({"half_word_anchor": {"edge": 1.0}}, "unknown anchor 'edge'"),
        ({"half_word_anchor": {"end": 0.0}}, "half_word_anchor"),
        ({"loss_weight": "unifrom"}, "loss_weight"),
        ({"elastic_pad_max": -1}, "elastic_pad_max"),
        ({"elastic_pad_max": 2.5}, "elastic_pad_max"),
        ({"channel_known": {"boundary": (0.5, 0.3), "dia": (0.3, 0.5)}}, "missing channel 'punct'"),
        (
            {"channel_known": {"boundary": (0.8, 0.3), "dia": (0.3, 0.5), "punct": (0.3, 0.5)}},
            r"channel_known\['boundary'\]",
        ),
        (
            {"channel_known": {"cap": (1, 0), "boundary": (1, 0), "dia": (1, 0), "punct": (1, 0)}},
            "unknown channel 'cap'",
        ),
    ],
)
def test_config_validate_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        NoiseConfig(**kwargs)
    # validate() also catches a field changed after construction, and noise_record re-checks
    cfg = NoiseConfig()
    for k, v in kwargs.items():
        setattr(cfg, k, v)
    with pytest.raises(ValueError, match=message):
        cfg.validate()
    planes = random_record(np.random.default_rng(0), n_words=3)
    with pytest.raises(ValueError, match=message):
        noise_record(planes, np.random.default_rng(0), cfg)


def test_mean_rate_of_the_clipped_beta():
    from stoicheia.noise.prepared import mean_rate

    # Beta(2, 4) (pdf 20 t (1-t)^3) has mean 1/3; clipping to [0.05, 0.95] moves the mass
    # below 0.05 up to 0.05 (above 0.95 there is 3e-5 of it): by hand, P(t < 0.05) = 0.0225925
    # and E[t; t < 0.05] = 0.00074329, so E = 1/3 + 0.05 * 0.0225925 - 0.00074329 = 0.3337197
    assert mean_rate((2.0, 4.0), 0.0, 1.0) == pytest.approx(1 / 3, abs=1e-6)
    assert mean_rate((2.0, 4.0), 0.05, 0.95) == pytest.approx(0.3337197, abs=2e-6)
    assert mean_rate((2.0, 4.0), 0.3, 0.3) == pytest.approx(0.3)  # t_min == t_max fixes t
    assert mean_rate((1.0, 1.0), 0.0, 1.0) == pytest.approx(0.5, abs=1e-6)


@pytest.mark.parametrize("pattern", ["span", "word", "iid", "elastic"])
def test_uniform_loss_weight_is_one_over_the_mean_rate(pattern):
    cfg = cfg_for(pattern, loss_weight="uniform")
    w = cfg.prepared().masked_weight
    assert w == pytest.approx(1 / 0.3337197, rel=1e-5)
    rng = np.random.default_rng(3)
    rates, supervised = set(), 0
    for _ in range(20):
        out = noise_record(random_record(rng, n_words=12), rng, cfg)
        sup = out.tgt_chars != IGNORE_INDEX
        supervised += int(sup.sum())
        rates.add(out.t)
        # the same weight at every masked slot whatever the record's rate t
        assert np.allclose(out.weight[sup], w) and np.all(out.weight[~sup] == 0)
    assert supervised > 100 and len(rates) == 20


def test_config_defaults_valid():
    cfg = NoiseConfig()
    cfg.validate()
    assert cfg.weights == {
        "span": 0.15,
        "word": 0.20,
        "elastic": 0.15,
        "iid": 0.15,
        "half_word": 0.20,
        "substitute": 0.15,
        "lacuna": 0.0,
    }
    assert cfg.t_beta == (2.0, 4.0) and (cfg.t_min, cfg.t_max) == (0.05, 0.95)


def test_config_is_an_omegaconf_structured_config():
    from omegaconf import OmegaConf

    merged = OmegaConf.merge(
        OmegaConf.structured(NoiseConfig),
        OmegaConf.create({"weights": {"word": 2.0}, "channel_known": {"dia": [0.1, 0.2]}}),
    )
    cfg = OmegaConf.to_object(merged)
    assert isinstance(cfg, NoiseConfig) and cfg.weights["word"] == 2.0
    assert list(cfg.channel_known["dia"]) == [0.1, 0.2]
    noise_record(random_record(np.random.default_rng(0)), np.random.default_rng(0), cfg)
    bad = OmegaConf.merge(merged, OmegaConf.create({"t_min": 0.0}))
    with pytest.raises(ValueError, match="t range"):
        OmegaConf.to_object(bad)


# ---------------------------------------------------------------------------------------------
# real lacunae (issue 7): never a target, never a letter, input MASK, metrics never score them


def _with_real_lacuna():
    from stoicheia.text.encode import encode_text

    text = "ἔλα[..]εν τὸν [---] βασιλέα κα[ὶ] τ[ca.4]ος [5±1] δῆμον"
    planes = encode_text(text, strict=True).planes
    return planes, planes.lacuna > 0


def test_encoded_real_lacuna_slots():
    planes, real = _with_real_lacuna()
    from stoicheia.text.alphabet import LACUNA_ABOUT, LACUNA_LOST, LACUNA_UNKNOWN

    assert int(np.count_nonzero(planes.lacuna == LACUNA_LOST)) == 2
    assert int(np.count_nonzero(planes.lacuna == LACUNA_UNKNOWN)) == 1
    assert int(np.count_nonzero(planes.lacuna == LACUNA_ABOUT)) == 4 + 6
    assert (planes.chars[real] == MASK).all()
    assert planes.n_letters() == len(planes) - int(real.sum())


@pytest.mark.parametrize("pattern", PATTERNS)
def test_real_lacuna_is_never_a_target(pattern):
    planes, real = _with_real_lacuna()
    cfg = NoiseConfig(
        weights={pattern: 1.0},
        t_min=0.9,
        t_max=0.95,
        channel_known={"boundary": (0.0, 1.0), "dia": (0.0, 1.0), "punct": (0.0, 1.0)},
    )
    n_letters = int((~real).sum())
    masked_letters = []
    for seed in range(60):
        out = noise_record(planes, np.random.default_rng(seed), cfg)
        if pattern not in ("elastic", "lacuna"):
            assert len(out) == len(planes)
            r = real
        else:  # elastic inserts BLANK slots after chosen words; find the original slots again
            r = _expanded_real(out, planes, real)
        assert (out.chars[r] == MASK).all()
        assert (out.tgt_chars[r] == IGNORE_INDEX).all() and (out.weight[r] == 0).all()
        for name in ("tgt_boundary", "tgt_dia", "tgt_cap", "tgt_punct"):
            assert (getattr(out, name)[r] == IGNORE_INDEX).all(), name
        assert (out.boundary[r] == BOUNDARY_UNKNOWN).all() and (out.dia[r] == DIA_UNKNOWN).all()
        assert (out.punct[r] == PUNCT_UNKNOWN).all()
        if pattern != "substitute":
            masked_letters.append(
                int(((out.tgt_chars != IGNORE_INDEX) & (out.tgt_chars != BLANK)).sum())
            )
    if pattern in ("iid", "span", "word"):
        # the rate applies to the letters alone: about t * n_letters, never more than n_letters
        assert max(masked_letters) <= n_letters
        assert np.mean(masked_letters) > 0.8 * n_letters


def _expanded_real(out, planes, real):
    """Map the real-lacuna slots of ``planes`` into the elastic-expanded ``out``: BLANK slots
    follow a masked letter and have tgt BLANK; every other slot is an original one in order."""
    keep = out.tgt_chars != BLANK
    # the first slot of each expanded group keeps its target; filler slots have BLANK targets
    idx = np.flatnonzero(keep)
    assert idx.size == len(planes)
    r = np.zeros(len(out), dtype=bool)
    r[idx[real]] = True
    return r


def test_reference_noise_never_scores_a_real_lacuna():
    planes, real = _with_real_lacuna()
    out = reference_noise(planes, np.random.default_rng(0), t=1.0)
    assert (out.tgt_chars[real] == IGNORE_INDEX).all() and (
        out.tgt_chars[~real] != IGNORE_INDEX
    ).all()
    for name in ("tgt_boundary", "tgt_dia", "tgt_cap", "tgt_punct"):
        assert (getattr(out, name)[real] == IGNORE_INDEX).all()


def test_mask_in_chars_outside_a_lacuna_is_an_error():
    planes, real = _with_real_lacuna()
    bad = dataclasses.replace(planes, lacuna=np.zeros(len(planes), np.uint8))
    with pytest.raises(ValueError, match="chars MASK only at a real-lacuna slot"):
        noise_record(bad, np.random.default_rng(0), NoiseConfig())


def test_every_pattern_name_has_one_function():
    from stoicheia.noise import PATTERN_FUNCTIONS

    assert tuple(PATTERN_FUNCTIONS) == PATTERNS
    assert set(NoiseConfig().weights) == set(PATTERNS)
    assert all(callable(f) and f.__name__ == name for name, f in PATTERN_FUNCTIONS.items())
