"""The corruption patterns: one function per pattern, looked up by the names used in
:attr:`stoicheia.noise.NoiseConfig.weights` (:data:`PATTERN_FUNCTIONS`).

Every pattern function has the signature ``fn(letters, t, prep, rng, max_len) -> Choice``:
``letters`` (:class:`Letters`) is the record's letters only (real-lacuna slots taken out by
the sampler, so no pattern can choose one), ``t`` the corruption rate, ``prep`` the
validated config, ``rng`` the only source of randomness, ``max_len`` the slot budget of the
elastic pattern (or None). A new pattern is a function here plus its name in
:data:`PATTERN_FUNCTIONS`; the order of that mapping is the order used to draw patterns.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from stoicheia.noise import lacuna_table as LT
from stoicheia.noise.prepared import PreparedNoise
from stoicheia.noise.words import (
    runs_mask,
    stochastic_count,
    target_count,
    uniform_int,
    word_spans,
)
from stoicheia.text.alphabet import NUM_LETTERS

__all__ = ["Letters", "Choice", "PATTERN_FUNCTIONS", "PATTERNS"]


class Letters(NamedTuple):
    """The letters a pattern may corrupt.

    ``stack``: uint8 ``(5, n)`` planes in the order chars, boundary, dia, punct, cap;
    ``ws``: bool ``(n,)`` word starts; ``n``: letters; ``n_slots``: slots of the whole record
    (letters plus real-lacuna slots, the base of the elastic ``max_len`` budget).
    """

    stack: np.ndarray
    ws: np.ndarray
    n: int
    n_slots: int


class Choice(NamedTuple):
    """What a pattern chose, over the ``n`` letters.

    ``corrupt``: bool ``(n,)`` letters corrupted (masked, or substituted); ``in_chars``: uint8
    ``(n,)`` letters shown to the model for a substitution record (None: MASK at ``corrupt``);
    ``extra_at``/``extra``: int64 last-letter index of each elastic word and its BLANK count
    (None for the other patterns); ``substitution``: True when every letter is a target with
    weight 1 (no mask signal).
    """

    corrupt: np.ndarray
    in_chars: np.ndarray | None = None
    extra_at: np.ndarray | None = None
    extra: np.ndarray | None = None
    substitution: bool = False


def span(
    letters: Letters, t: float, prep: PreparedNoise, rng: np.random.Generator, max_len: int | None
) -> Choice:
    """Geometric-length runs (mean ``span_mean``, capped at ``span_max``) that ignore word edges."""
    return Choice(_span_mask(letters.n, t, prep, rng))


def word(
    letters: Letters, t: float, prep: PreparedNoise, rng: np.random.Generator, max_len: int | None
) -> Choice:
    """Whole words, about ``t * n`` letters (stochastic count, see the package docstring)."""
    mask, _, _ = _words(letters, t, rng)
    return Choice(mask)


def elastic(
    letters: Letters, t: float, prep: PreparedNoise, rng: np.random.Generator, max_len: int | None
) -> Choice:
    """Whole words whose width is hidden too: ``L + 2 + u`` slots for a word of ``L`` letters,
    ``u`` uniform in ``0..elastic_pad_max``, independent of ``L`` (see
    :class:`~stoicheia.noise.config.NoiseConfig`); within ``max_len`` slots."""
    mask, chosen, (word_starts, word_len) = _words(letters, t, rng)
    if not chosen.size:
        return Choice(mask)
    L = word_len[chosen]
    extra = 2 + uniform_int(rng, prep.pad_max + 1, L.size)
    if max_len is not None:
        # from the first word that does not fit on, plain word masking
        extra[np.cumsum(extra) > max_len - letters.n_slots] = 0
    return Choice(mask, extra_at=word_starts[chosen] + L - 1, extra=extra)


def iid(
    letters: Letters, t: float, prep: PreparedNoise, rng: np.random.Generator, max_len: int | None
) -> Choice:
    """Each letter masked independently with probability ``t``."""
    return Choice(rng.random(letters.n) < t)


def half_word(
    letters: Letters, t: float, prep: PreparedNoise, rng: np.random.Generator, max_len: int | None
) -> Choice:
    """A strict part of each of several words, anchored at the end, start or middle."""
    word_starts, word_len = word_spans(letters.ws)
    return Choice(_half_word_mask(word_starts, word_len, t, letters.n, prep, rng))


def substitute(
    letters: Letters, t: float, prep: PreparedNoise, rng: np.random.Generator, max_len: int | None
) -> Choice:
    """Each letter replaced, with probability ``t``, by a uniformly drawn different letter."""
    n = letters.n
    chars = letters.stack[0]
    sub = rng.random(n) < t
    shift = (1 + uniform_int(rng, NUM_LETTERS - 1, n)).astype(np.uint8)
    # adding 1..23 mod 24 gives a uniformly drawn letter different from the original
    in_chars = np.where(sub, (chars + shift) % np.uint8(NUM_LETTERS), chars)
    return Choice(sub, in_chars=in_chars, substitution=True)


def _words(letters: Letters, t: float, rng: np.random.Generator):
    """Whole words in random order until about ``t * n`` letters: ``(mask, chosen word
    indices, (word starts, word lengths))``."""
    word_starts, word_len = word_spans(letters.ws)
    k = target_count(t, letters.n, rng)
    order = rng.permutation(word_len.shape[0])
    chosen = order[: stochastic_count(word_len[order], k, rng)]
    wmask = np.zeros(word_len.shape[0], dtype=bool)
    wmask[chosen] = True
    return np.repeat(wmask, word_len), chosen, (word_starts, word_len)


def _span_mask(n: int, t: float, prep: PreparedNoise, rng: np.random.Generator) -> np.ndarray:
    k = target_count(t, n, rng)
    if k == 0:
        return np.zeros(n, dtype=bool)
    # k spans of length >= 1 always reach k letters; draw a few more than the expected count
    # first and fall back to k only if they do not suffice.
    m0 = min(k, int(2 * k * prep.span_p) + 8)
    lens = np.minimum(rng.geometric(prep.span_p, size=m0), prep.span_max)
    cs = np.cumsum(lens)
    if cs[-1] < k:
        lens = np.minimum(rng.geometric(prep.span_p, size=k), prep.span_max)
        cs = np.cumsum(lens)
    m = int(cs.searchsorted(k)) + 1
    lens = lens[:m]
    lens[-1] = k - (int(cs[m - 2]) if m > 1 else 0)  # trim the last span: exactly k letters
    # Random placement without overlap: the n-k unmasked letters are split into m+1 gaps by
    # a uniform random composition (sorted draws with replacement, "stars and bars").
    before = np.sort(uniform_int(rng, n - k + 1, m))
    starts = before + np.cumsum(lens) - lens
    return runs_mask(n, starts, lens)


def _half_word_mask(
    word_starts: np.ndarray,
    word_len: np.ndarray,
    t: float,
    n: int,
    prep: PreparedNoise,
    rng: np.random.Generator,
) -> np.ndarray:
    k = target_count(t, n, rng)
    pe, ps, _ = prep.anchor
    if k == 0:
        return np.zeros(n, dtype=bool)
    order = rng.permutation(word_len.shape[0])
    L = word_len[order]
    # A 2-letter word has no middle, so it is eligible only if end or start has weight > 0;
    # every part has >= 1 letter, so the first k eligible words always suffice.
    keep = np.flatnonzero(L >= (2 if pe + ps > 0 else 3))[:k]
    if keep.size == 0:
        return np.zeros(n, dtype=bool)
    order = order[keep]
    L = L[keep]
    u = rng.random((3, keep.size))
    # anchor 0 end, 1 start, 2 middle; a 2-letter word draws in [0, pe + ps): end or start
    a = np.where(L == 2, u[0] * (pe + ps), u[0])
    anchor = np.array([pe, pe + ps]).searchsorted(a, side="right")
    middle = anchor == 2
    # Part length l = 1 + floor(q * top) in 1..top, top = L-1 (L-2 for a middle part), with a
    # per-word q ~ Beta(alpha, 1) (q = U**(1/alpha)) of mean m = clip(t + 0.25, 0.5, 0.99):
    # m = 0.5 (alpha = 1) makes l uniform on 1..top; a larger t pushes parts towards the whole
    # word, so that the eligible words can hold about t*n letters (with a margin) and the
    # masked fraction follows t up to the strict-part limit.
    m = min(max(t + 0.25, 0.5), 0.99)
    length = 1 + (u[1] ** ((1.0 - m) / m) * (L - 1 - middle)).astype(np.int64)
    # a middle part starts at 1..L-1-length, so it touches neither end of the word
    mid_offset = 1 + (u[2] * (L - 1 - length)).astype(np.int64)
    offset = np.where(anchor == 0, L - length, np.where(middle, mid_offset, 0))
    take = stochastic_count(length, k, rng)
    return runs_mask(n, word_starts[order[:take]] + offset[:take], length[:take])


def lacuna(
    letters: Letters, t: float, prep: PreparedNoise, rng: np.random.Generator, max_len: int | None
) -> Choice:
    """Lost stretches as real editions show them (:mod:`stoicheia.noise.lacuna_table`).

    With the measured probabilities (49 % each) a stretch holds the record's first word
    (starts at letter 0) and one its last (ends at letter ``n``): stones break at their edges.
    Then stretches off the edges (:func:`draw_stretch`: width and place in the word from the
    table) until about ``t * n`` letters are hidden: the stretch that crosses ``K = t * n``
    (stochastically rounded) is kept with probability ``(K - hidden before) / its new
    letters``, so the expected count is ``K`` when the edges leave room. Each stretch's width
    is drawn by :func:`draw_width`; with the measured probability (45 %) its extent is unknown
    and its width hidden too, as the elastic pattern does: ``2 + u`` BLANK slots after it,
    ``u`` uniform in ``0..elastic_pad_max``, within ``max_len`` slots (past it, the stretch
    keeps its width)."""
    n = letters.n
    k = target_count(t, n, rng)
    mask = np.zeros(n, dtype=bool)
    if k == 0:
        return Choice(mask)
    starts, lengths = word_spans(letters.ws)
    budget = np.inf if max_len is None else max_len - letters.n_slots
    extra: dict[int, int] = {}

    def hide(a: int, b: int, unknown: bool) -> None:
        nonlocal budget
        mask[a:b] = True
        if unknown:
            u = 2 + int(uniform_int(rng, prep.pad_max + 1, 1)[0])
            if u <= budget and (b - 1) not in extra:
                extra[b - 1] = u
                budget -= u

    edge = rng.random(4)
    if edge[0] < _P_FIRST:
        hide(0, min(draw_width(rng), n), bool(edge[1] < _P_UNKNOWN))
    if edge[2] < _P_LAST:
        hide(n - min(draw_width(rng), n), n, bool(edge[3] < _P_UNKNOWN))
    masked = int(mask.sum())
    for _ in range(4 * k):  # bounded: a stretch that hides nothing new is drawn again
        if masked >= k:
            break
        a, b, unknown = draw_stretch(starts, lengths, n, rng)
        new = int((~mask[a:b]).sum())
        if new == 0:
            continue
        if masked + new > k and rng.random() >= (k - masked) / new:
            break
        hide(a, b, unknown)
        masked += new
    if not extra:
        return Choice(mask)
    at = np.array(sorted(extra), dtype=np.int64)
    return Choice(mask, extra_at=at, extra=np.array([extra[i] for i in at], dtype=np.int64))


_W_P = np.array(list(LT.WIDTH_COUNTS.values()), dtype=np.float64)
_W_CUM = np.cumsum(_W_P / _W_P.sum())
_PLACE_P = np.array(list(LT.PLACE_COUNTS.values()), dtype=np.float64)
_PLACE_CUM = np.cumsum(_PLACE_P / _PLACE_P.sum())
_P_FIRST = LT.TEXTS_FIRST_LOST / LT.TEXTS
_P_LAST = LT.TEXTS_LAST_LOST / LT.TEXTS
_P_UNKNOWN = LT.KIND_COUNTS["unknown"] / sum(LT.KIND_COUNTS.values())


def draw_width(rng: np.random.Generator) -> int:
    """One stretch width in letters from :data:`~stoicheia.noise.lacuna_table.WIDTH_COUNTS`:
    a bucket by its count, then a width uniform within the bucket."""
    b = min(int(_W_CUM.searchsorted(rng.random(), side="right")), len(_W_CUM) - 1)
    lo, hi = LT.bucket_bounds()[b]
    return lo + int(uniform_int(rng, hi - lo + 1, 1)[0])


def draw_stretch(
    starts: np.ndarray, lengths: np.ndarray, n: int, rng: np.random.Generator
) -> tuple[int, int, bool]:
    """One lost stretch ``[a, b)`` off the text's edges, over ``n`` letters in words
    (``starts``/``lengths``: int64 first letter and length of each word, ``n`` their end), and
    whether its extent is unknown.

    Width ``w`` from :func:`draw_width`; place from the table: whole words (from a word's start
    to the end of the word where ``w`` letters are reached), word start (from a word's start,
    ``w`` letters, ending inside a word), word end (``w`` letters back from a word's end,
    starting inside a word), inside (from inside a word, ``w`` letters, ending inside a word:
    within one word or across several). A stretch that would end exactly at a word's edge
    where the place says inside is one letter shorter. It is kept between the end of the
    first word and the start of the last (cut to fit); a text of fewer than three words has no
    such room, and the stretch goes anywhere.
    """
    w = min(draw_width(rng), n)
    unknown = bool(rng.random() < _P_UNKNOWN)
    place = min(int(_PLACE_CUM.searchsorted(rng.random(), side="right")), 3)
    m = len(starts)
    ends = starts + lengths
    if m >= 3:
        lo, hi, first, last = int(ends[0]), int(starts[-1]), 1, m - 2
    else:
        lo, hi, first, last = 0, n, 0, m - 1
    i = first + int(uniform_int(rng, last - first + 1, 1)[0])
    if place == 0:  # whole words
        j = min(int(np.searchsorted(ends, starts[i] + w, side="left")), last)
        a, b = int(starts[i]), int(ends[j])
    elif place == 1:  # word start: ends inside a word
        a = int(starts[i])
        b = a + w
        if b < hi and b in ends and w > 1:
            b -= 1
    elif place == 2:  # word end: starts inside a word
        b = int(ends[i])
        a = b - w
        if a > lo and a in starts and w > 1:
            a += 1
    else:  # inside: from inside a word (not its first letter) to inside a word (not its last)
        inner = 1 if w > 1 else 2  # one letter inside needs a word of 3
        room = first + np.flatnonzero(lengths[first : last + 1] >= 1 + inner)
        if room.size:
            j = int(room[uniform_int(rng, room.size, 1)[0]])
            a = int(starts[j]) + 1 + int(uniform_int(rng, int(lengths[j]) - inner, 1)[0])
        else:
            a = lo + int(uniform_int(rng, max(1, hi - lo - w + 1), 1)[0])
        b = a + w
        if b in ends and w > 1:
            b -= 1
    a, b = max(a, lo), min(b, hi)
    if b <= a:  # cut to nothing: one letter of the room
        a = lo + int(uniform_int(rng, hi - lo, 1)[0])
        b = a + 1
    return a, b, unknown


#: Pattern name -> function; the order is the order in which patterns are drawn.
PATTERN_FUNCTIONS = {
    "span": span,
    "word": word,
    "elastic": elastic,
    "iid": iid,
    "half_word": half_word,
    "substitute": substitute,
    "lacuna": lacuna,
}
#: Pattern names, in the order used to draw them.
PATTERNS = tuple(PATTERN_FUNCTIONS)
