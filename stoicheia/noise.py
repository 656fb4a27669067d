"""Masked-diffusion corruption of one record's letter planes.

A record of ``n`` letters arrives as five aligned ``uint8`` planes of shape ``(n,)``
(``chars``, ``boundary``, ``dia``, ``cap``, ``punct``; ids in :mod:`stoicheia.text.alphabet`).
:func:`noise_record` draws one corruption rate ``t`` and one corruption *pattern* for the
record, corrupts the letters, hides some auxiliary channels, and returns a :class:`Noised`
record of ``M >= n`` slots (``M > n`` only for the ``elastic`` pattern, whose lacunae have an
unknown width) holding the model inputs, the targets and the per-slot loss weights.

Training objective (MDLM; Sahoo et al. 2024, "Simple and Effective Masked Diffusion Language
Models", NeurIPS 2024): for the linear schedule ``alpha_t = 1 - t`` the continuous-time ELBO weights
the cross-entropy of each masked token by ``1/t``. Every record gets one rate
``t ~ Beta(2, 4)`` clipped to ``[t_min, t_max]``, and each masked character slot gets weight
``1/t``. The structured patterns (span, word, half-word, elastic) are not the iid absorbing
process of the ELBO, but mask about ``t * n`` letters on average, so the same weight keeps the
patterns on one scale.

Patterns (one per record, drawn with :attr:`NoiseConfig.weights`):

``span``
    geometric-length runs (mean ``span_mean``, capped at ``span_max``) that ignore word edges.
``word``
    whole words.
``half_word``
    a strict part (1..L-1 letters) of each of several words of ``L >= 2`` letters, anchored at
    the word's end, start or middle (a middle part touches neither end, so needs ``L >= 3``).
``elastic``
    whole words whose width is hidden too: a word of ``L`` letters becomes
    ``L + 2 + u`` MASK slots, ``u`` uniform in ``0..floor(elastic_extra_frac * L)``; the
    targets are the ``L`` letters followed by BLANK.
``iid``
    each letter masked independently with probability ``t``.
``substitute``
    each letter replaced, with probability ``t``, by a uniformly drawn *different* letter,
    with no mask signal.

The count patterns (span, word, half_word, elastic) aim at ``K`` masked letters with
``K = floor(t*n + U(0,1))`` (stochastic rounding, so ``E[K] = t*n`` exactly), and choose words in
random order until the running total reaches ``K``; the word that crosses ``K`` is kept with
probability ``(K - total_before) / size``, which makes the expected masked count ``K`` again.
Exception: a half-word part is strictly shorter than its word, and its length grows with ``t``
(uniform on ``1..L-1`` for ``t <= 0.25``, towards ``L-1`` as ``t`` grows; see
:func:`_half_word_mask`), but for ``t`` above about 0.75 (with word lengths 1..9) the
``half_word`` pattern masks fewer than ``t*n`` letters.

Word edges: word ``k`` runs from a word start to the next letter whose boundary is
``BOUNDARY_WORD`` or ``BOUNDARY_SENTENCE``; ``BOUNDARY_UNKNOWN`` counts as word-internal. A record
whose boundary plane is *entirely* UNKNOWN (the source did not record word division) would be one
single word, so it is cut into pseudo-words of 2..8 letters (uniform; the last may be shorter)
for the word patterns and for :attr:`Noised.word_start`.

Loss-target rules (``IGNORE_INDEX = -100`` where not supervised):

* Masked/elastic slots: char input MASK; their boundary/dia/punct inputs UNKNOWN (a lacuna hides
  the marks too); char target the true letter (BLANK on elastic filler slots), weight ``1/t``.
  Uncorrupted slots: char target -100, weight 0.
* Substitute records train the model to spot *and* correct errors with no mask signal, so every
  slot gets the true letter as char target with weight 1.0. The ``1/t`` factor is the ELBO weight
  of the absorbing (mask) process only; a substitution record is not a sample of that process,
  and weighting all ``n`` letters by ``1/t`` would make these records dominate the loss.
* Channel availability (boundary, dia, punct), per record: fully known, fully unknown, or patchy
  (rate ``r ~ U(0,1)``, each position hidden with probability ``r``); see
  :attr:`NoiseConfig.channel_known`. Hidden positions get the UNKNOWN input id.
* Auxiliary targets (boundary, dia, cap, punct) only where the letter was corrupted or that
  channel was hidden. Cap has no input channel, so it is always hidden: supervised at every
  letter slot. A value the *source* did not record (``== UNKNOWN`` in the input planes) is never a
  target and its input is UNKNOWN. Elastic BLANK slots have no aux targets and UNKNOWN inputs.

Determinism: every random draw comes from the ``np.random.Generator`` passed in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

import numpy as np

from stoicheia.text.alphabet import (
    BLANK,
    BOUNDARY_SENTENCE,
    BOUNDARY_UNKNOWN,
    BOUNDARY_WORD,
    CAP_UNKNOWN,
    DIA_UNKNOWN,
    IGNORE_INDEX,
    MASK,
    NUM_LACUNA,
    NUM_LETTERS,
    PUNCT_UNKNOWN,
)

#: Pattern names, in the order used to draw them.
PATTERNS = ("span", "word", "elastic", "iid", "half_word", "substitute")
#: Half-word anchors.
ANCHORS = ("end", "start", "middle")
#: Auxiliary channels that have a model input (and so can be hidden); cap has none.
HIDEABLE = ("boundary", "dia", "punct")
_UNKNOWN_ID = {"boundary": BOUNDARY_UNKNOWN, "dia": DIA_UNKNOWN, "punct": PUNCT_UNKNOWN}
#: Largest valid value per plane, UNKNOWN included (chars: letters only).
_PLANE_MAX = {
    "chars": NUM_LETTERS - 1,
    "boundary": BOUNDARY_UNKNOWN,
    "dia": DIA_UNKNOWN,
    "cap": CAP_UNKNOWN,
    "punct": PUNCT_UNKNOWN,
}
#: Pseudo-word lengths for records without word division: uniform in [min, max].
PSEUDO_WORD_MIN = 2
PSEUDO_WORD_MAX = 8


def _default_weights() -> dict[str, float]:
    return {
        "span": 0.15,
        "word": 0.20,
        "elastic": 0.15,
        "iid": 0.15,
        "half_word": 0.20,
        "substitute": 0.15,
    }


def _default_anchor() -> dict[str, float]:
    return {"end": 0.5, "start": 0.3, "middle": 0.2}


def _default_channel_known() -> dict[str, list[float]]:
    # lists, not tuples: OmegaConf structured configs cannot hold a dict of tuples
    return {"boundary": [0.5, 0.3], "dia": [0.3, 0.5], "punct": [0.3, 0.5]}


def _finite_nonneg(name: str, value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"NoiseConfig.{name} = {value!r} is not a number") from None
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"NoiseConfig.{name} = {value!r} must be a finite number >= 0")
    return v


def _mixture_weights(name: str, weights: Any, known: tuple[str, ...], what: str) -> list[float]:
    """Weights of the ``known`` names (a ``what``: pattern, anchor) from the mapping ``weights``;
    missing names weigh 0.

    Raises ``ValueError`` naming ``NoiseConfig.<name>`` for a non-mapping, an unknown name, a
    negative or non-finite weight, or all weights zero.
    """
    if not isinstance(weights, Mapping):
        raise ValueError(f"NoiseConfig.{name} = {weights!r} must be a mapping name -> weight")
    for k in weights:
        if k not in known:
            raise ValueError(f"NoiseConfig.{name} has unknown {what} {k!r}; known: {', '.join(known)}")
    values = [_finite_nonneg(f"{name}[{k!r}]", weights.get(k, 0.0)) for k in known]
    if sum(values) <= 0:
        raise ValueError(f"NoiseConfig.{name} weights are all zero; give at least one a weight > 0")
    return values


class _Prepared(NamedTuple):
    """A validated :class:`NoiseConfig` in the form the sampler uses."""

    pattern_cum: np.ndarray  # (6,) float64 cumulative, normalised pattern probabilities
    last_pattern: int  # index of the last pattern with weight > 0
    anchor: tuple[float, float, float]  # (end, start, middle), normalised
    t_beta: tuple[float, float]
    t_min: float
    t_max: float
    span_p: float  # geometric success probability 1 / span_mean
    span_max: int
    extra_frac: float
    channel: tuple[tuple[float, float], ...]  # (p_known, p_unknown) per HIDEABLE channel


@dataclass
class NoiseConfig:
    """Parameters of :func:`noise_record`.

    Attributes:
        weights: mixture weight per pattern name (see :data:`PATTERNS`); need not sum to 1
            (they are normalised); a pattern left out has weight 0.
        t_beta: ``(a, b)`` of the Beta distribution of the per-record rate ``t``.
        t_min, t_max: ``t`` is clipped to ``[t_min, t_max]``, ``0 < t_min <= t_max <= 1``
            (``t > 0`` because the loss weight is ``1/t``). ``t_min == t_max`` fixes ``t``.
        span_mean: mean of the geometric span length before the cap (letters, >= 1).
        span_max: span lengths are capped at this many letters (>= 1).
        half_word_anchor: probability of anchoring a half-word part at the word's ``end``,
            ``start`` or ``middle`` (normalised; a 2-letter word has no middle and redraws
            among end/start; a left-out anchor has weight 0).
        elastic_extra_frac: an elastic word of ``L`` letters gets ``2 + u`` BLANK slots,
            ``u`` uniform in ``0..floor(elastic_extra_frac * L)``.
        channel_known: per hideable channel (``boundary``, ``dia``, ``punct``; all three
            required), ``[p_fully_known, p_fully_unknown]`` (any 2-sequence; lists because
            OmegaConf cannot hold a dict of tuples), ``p_known + p_unknown <= 1``; the rest of
            the probability is "patchy": rate ``r ~ U(0,1)``, each position hidden with
            probability ``r``.

    The config is validated on construction and again (cheaply, only when a field changed)
    by every :func:`noise_record` call.
    """

    weights: dict[str, float] = field(default_factory=_default_weights)
    t_beta: tuple[float, float] = (2.0, 4.0)
    t_min: float = 0.05
    t_max: float = 0.95
    span_mean: float = 3.5
    span_max: int = 20
    half_word_anchor: dict[str, float] = field(default_factory=_default_anchor)
    elastic_extra_frac: float = 0.3
    channel_known: dict[str, list[float]] = field(default_factory=_default_channel_known)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check every field; raise ``ValueError`` naming the bad field and the fix.

        Errors: unknown pattern/anchor/channel name, negative or non-finite weight, all-zero
        weights, ``t_beta`` not two positive numbers, ``t_min``/``t_max`` outside
        ``0 < t_min <= t_max <= 1``, ``span_mean < 1``, ``span_max`` not an integer >= 1,
        negative ``elastic_extra_frac``, a channel probability outside ``[0, 1]``, a
        ``p_known + p_unknown > 1``, a missing channel.
        """
        self._prepare()

    def _key(self) -> tuple:
        # A snapshot of every field: a cached preparation is reused only while it matches.
        try:
            return (
                tuple(self.weights.items()),
                tuple(self.t_beta),
                self.t_min,
                self.t_max,
                self.span_mean,
                self.span_max,
                tuple(self.half_word_anchor.items()),
                self.elastic_extra_frac,
                tuple((k, tuple(v)) for k, v in self.channel_known.items()),
            )
        except (AttributeError, TypeError):
            return (object(),)  # malformed: never matches, so _prepare reports the error

    def _prepared(self) -> _Prepared:
        key = self._key()
        cached = self.__dict__.get("_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        prep = self._prepare()
        self.__dict__["_cache"] = (key, prep)
        return prep

    def _prepare(self) -> _Prepared:
        pw = np.array(_mixture_weights("weights", self.weights, PATTERNS, "pattern"))
        pa = _mixture_weights("half_word_anchor", self.half_word_anchor, ANCHORS, "anchor")
        # rate
        try:
            ta, tb = (float(x) for x in self.t_beta)
        except (TypeError, ValueError):
            raise ValueError(
                f"NoiseConfig.t_beta = {self.t_beta!r} must be two numbers (a, b) > 0"
            ) from None
        if not (math.isfinite(ta) and math.isfinite(tb) and ta > 0 and tb > 0):
            raise ValueError(f"NoiseConfig.t_beta = {self.t_beta!r} must be two numbers (a, b) > 0")
        t_min = _finite_nonneg("t_min", self.t_min)
        t_max = _finite_nonneg("t_max", self.t_max)
        if not 0 < t_min <= t_max <= 1:
            raise ValueError(
                f"NoiseConfig t range t_min={self.t_min!r}, t_max={self.t_max!r}: "
                "need 0 < t_min <= t_max <= 1 (the loss weight is 1/t)"
            )
        # span, elastic
        span_mean = _finite_nonneg("span_mean", self.span_mean)
        if span_mean < 1:
            raise ValueError(
                f"NoiseConfig.span_mean = {self.span_mean!r}: a geometric length >= 1 has mean >= 1"
            )
        sm = self.span_max
        if isinstance(sm, bool) or not isinstance(sm, (int, np.integer)) or sm < 1:
            raise ValueError(f"NoiseConfig.span_max = {sm!r} must be an integer >= 1")
        extra_frac = _finite_nonneg("elastic_extra_frac", self.elastic_extra_frac)
        # channels
        ck = self.channel_known
        if not isinstance(ck, Mapping):
            raise ValueError(
                f"NoiseConfig.channel_known = {ck!r} must be a mapping channel -> (p, p)"
            )
        for k in ck:
            if k not in HIDEABLE:
                raise ValueError(
                    f"NoiseConfig.channel_known has unknown channel {k!r}; "
                    f"known: {', '.join(HIDEABLE)}"
                )
        channel = []
        for k in HIDEABLE:
            if k not in ck:
                raise ValueError(
                    f"NoiseConfig.channel_known is missing channel {k!r}; "
                    "give (p_known, p_unknown) for each of " + ", ".join(HIDEABLE)
                )
            try:
                pk, pu = (float(x) for x in ck[k])
            except (TypeError, ValueError):
                raise ValueError(
                    f"NoiseConfig.channel_known[{k!r}] = {ck[k]!r} must be (p_known, p_unknown)"
                ) from None
            if not (0 <= pk <= 1 and 0 <= pu <= 1 and pk + pu <= 1 + 1e-9):
                raise ValueError(
                    f"NoiseConfig.channel_known[{k!r}] = {ck[k]!r}: need probabilities in "
                    "[0, 1] with p_known + p_unknown <= 1"
                )
            channel.append((pk, pu))
        total_a = sum(pa)
        return _Prepared(
            pattern_cum=np.cumsum(pw / pw.sum()),
            last_pattern=int(np.flatnonzero(pw)[-1]),
            anchor=(pa[0] / total_a, pa[1] / total_a, pa[2] / total_a),
            t_beta=(ta, tb),
            t_min=t_min,
            t_max=t_max,
            span_p=1.0 / span_mean,
            span_max=int(sm),
            extra_frac=extra_frac,
            channel=tuple(channel),
        )


@dataclass
class Noised:
    """One noised record of ``M >= n`` slots; every array has shape ``(M,)``.

    Attributes:
        chars: uint8 input ids, letters 0..23 or MASK (24); BLANK is never an input.
        boundary, dia, punct: uint8 inputs, UNKNOWN (3 / 48 / 6) where hidden.
        tgt_chars: int16 target, letter 0..23 or BLANK (25), -100 where not supervised.
        tgt_boundary, tgt_dia, tgt_cap, tgt_punct: int16 aux targets, -100 where not supervised.
        weight: float32 char-loss weight per slot (``1/t`` at masked slots, 1.0 everywhere for
            substitution records, 0 where ``tgt_chars`` is -100).
        word_start: bool, True at the first slot of each word of the original record (a safe
            split point when packing records into rows); slot 0 is True in a full record.
        t: the corruption rate of the record.
        pattern: the pattern name (one of :data:`PATTERNS`, or ``"reference"``).
    """

    chars: np.ndarray
    boundary: np.ndarray
    dia: np.ndarray
    punct: np.ndarray
    tgt_chars: np.ndarray
    tgt_boundary: np.ndarray
    tgt_dia: np.ndarray
    tgt_cap: np.ndarray
    tgt_punct: np.ndarray
    weight: np.ndarray
    word_start: np.ndarray
    t: float
    pattern: str

    def __len__(self) -> int:
        """Number of slots ``M``."""
        return int(self.chars.shape[0])

    def __getitem__(self, s: slice) -> Noised:
        """Slice every array with ``s`` (used to split a record across packed rows).

        Raises ``TypeError`` for anything but a slice (an integer index would drop the axis).
        """
        if not isinstance(s, slice):
            raise TypeError(f"Noised can only be sliced (got {type(s).__name__}); use rec[a:b]")
        kw = {}
        for f in fields(self):
            v = getattr(self, f.name)
            kw[f.name] = v[s] if isinstance(v, np.ndarray) else v
        return Noised(**kw)


def sample_t(rng: np.random.Generator, cfg: NoiseConfig) -> float:
    """Draw one corruption rate ``t ~ Beta(*cfg.t_beta)`` clipped to ``[cfg.t_min, cfg.t_max]``.

    Raises ``ValueError`` if ``cfg`` is invalid.
    """
    return _sample_t(rng, cfg._prepared())


def _sample_t(rng: np.random.Generator, prep: _Prepared) -> float:
    return float(min(max(rng.beta(*prep.t_beta), prep.t_min), prep.t_max))


# --------------------------------------------------------------------------------------------
# helpers

#: plane order inside the stacked (5, n) array: the three hideable channels, then cap, are
#: contiguous so that one vectorised pass handles all auxiliary channels.
_STACK_ORDER = ("chars", "boundary", "dia", "punct", "cap")
# chars may be MASK only at a real-lacuna slot (checked in _real_lacuna)
_STACK_MAX = np.array([MASK, BOUNDARY_UNKNOWN, DIA_UNKNOWN, PUNCT_UNKNOWN, CAP_UNKNOWN])
#: UNKNOWN id of boundary, dia, punct, cap (rows 1..4 of the stack), shape (4, 1)
_AUX_UNKNOWN = np.array(
    [[BOUNDARY_UNKNOWN], [DIA_UNKNOWN], [PUNCT_UNKNOWN], [CAP_UNKNOWN]], dtype=np.uint8
)
_I16_IGNORE = np.int16(IGNORE_INDEX)


def _check_planes(planes: Any) -> np.ndarray:
    """Stack the planes as uint8 ``(5, n)`` in :data:`_STACK_ORDER`; ``ValueError`` if bad."""
    arrs = []
    for name in _STACK_ORDER:
        try:
            a = getattr(planes, name)
        except AttributeError:
            raise ValueError(
                f"planes object {type(planes).__name__} has no attribute {name!r}; pass a "
                "stoicheia.text.planes.Planes (or anything with chars/boundary/dia/cap/punct)"
            ) from None
        a = np.asarray(a)
        if a.ndim != 1:
            raise ValueError(f"plane {name!r} has shape {a.shape}; expected one axis (n,)")
        arrs.append(a)
    n = arrs[0].shape[0]
    if n == 0:
        raise ValueError("cannot noise an empty record (n = 0); drop empty records upstream")
    stack = np.empty((5, n), dtype=np.uint8)
    for i, (name, a) in enumerate(zip(_STACK_ORDER, arrs, strict=True)):
        if a.shape[0] != n:
            raise ValueError(f"plane {name!r} has {a.shape[0]} entries but chars has {n}")
        if a.dtype != np.uint8:
            if a.dtype.kind not in "iu":
                raise ValueError(
                    f"plane {name!r} has dtype {a.dtype}; expected integer ids (uint8)"
                )
            lo, hi = int(a.min()), int(a.max())
            if lo < 0 or hi > _STACK_MAX[i]:
                pos = int(np.flatnonzero((a < 0) | (a > _STACK_MAX[i]))[0])
                _bad_id(name, int(a[pos]), pos, i)
        stack[i] = a
    bad = stack.max(axis=1) > _STACK_MAX
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        pos = int(np.flatnonzero(stack[i] > _STACK_MAX[i])[0])
        _bad_id(_STACK_ORDER[i], int(stack[i, pos]), pos, i)
    return stack


def _real_lacuna(planes: Any, stack: np.ndarray) -> np.ndarray | None:
    """Bool ``(n,)``: the real-lacuna slots (``planes.lacuna > 0``), or None if there are none.

    ``planes.lacuna`` may be absent (no real lacuna). Raises ``ValueError`` for a lacuna plane
    of the wrong length or ids, and for a ``chars`` MASK outside a real-lacuna slot.
    """
    lac = getattr(planes, "lacuna", None)
    n = stack.shape[1]
    if lac is not None:
        lac = np.asarray(lac)
        if lac.shape != (n,):
            raise ValueError(f"plane 'lacuna' has shape {lac.shape} but chars has {n} entries")
        if lac.size and (int(lac.min()) < 0 or int(lac.max()) >= NUM_LACUNA):
            pos = int(np.flatnonzero((lac < 0) | (lac >= NUM_LACUNA))[0])
            raise ValueError(
                f"plane 'lacuna' has id {int(lac[pos])} at slot {pos}; valid ids are 0..{NUM_LACUNA - 1}"
            )
        real = lac > 0
    else:
        real = np.zeros(n, dtype=bool)
    stray = (stack[0] >= NUM_LETTERS) & ~real
    if stray.any():
        pos = int(np.flatnonzero(stray)[0])
        _bad_id("chars", int(stack[0, pos]), pos, 0, NUM_LETTERS - 1)
    return real if real.any() else None


def _bad_id(name: str, value: int, pos: int, row: int, top: int | None = None) -> None:
    raise ValueError(
        f"plane {name!r} has id {value} at letter {pos}; valid ids are "
        f"0..{int(_STACK_MAX[row]) if top is None else top} (see stoicheia.text.alphabet; "
        "chars MASK only at a real-lacuna slot)"
    )


def _word_start(boundary: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Bool ``(n,)``: True at the first letter of every word (always at letter 0)."""
    n = boundary.shape[0]
    ws = np.empty(n, dtype=bool)
    ws[0] = True
    if boundary[0] == BOUNDARY_UNKNOWN and (boundary == BOUNDARY_UNKNOWN).all():
        # No word division recorded: pseudo-words of 2..8 letters (see module docstring).
        lens = PSEUDO_WORD_MIN + _uniform_int(
            rng, PSEUDO_WORD_MAX - PSEUDO_WORD_MIN + 1, n // PSEUDO_WORD_MIN + 1
        )
        cs = np.cumsum(lens)
        ws[1:] = False
        ws[cs[cs < n]] = True
        return ws
    # a word starts after a letter with boundary 1 or 2 <=> boundary - 1 in {0, 1}, where the
    # uint8 subtraction wraps 0 - 1 to 255
    np.less_equal(
        boundary[:-1] - np.uint8(BOUNDARY_WORD), BOUNDARY_SENTENCE - BOUNDARY_WORD, out=ws[1:]
    )
    return ws


def _word_spans(ws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start index and length of every word, two int64 ``(n_words,)`` arrays."""
    starts = np.flatnonzero(ws)
    lens = np.empty_like(starts)
    np.subtract(starts[1:], starts[:-1], out=lens[:-1])
    lens[-1] = ws.shape[0] - starts[-1]
    return starts, lens


def _stochastic_count(sizes: np.ndarray, k: int, rng: np.random.Generator) -> int:
    """How many leading items of ``sizes`` to take so that the expected total is ``k``.

    Items are taken while the running total stays below ``k``; the item that reaches ``k``
    is taken with probability ``(k - total_before) / size``, so ``E[total] = k`` whenever
    ``k <= sizes.sum()`` (else every item is taken).
    """
    if k <= 0 or sizes.size == 0:
        return 0
    cs = np.cumsum(sizes)
    j = int(cs.searchsorted(k))
    if j >= sizes.size:
        return int(sizes.size)
    before = int(cs[j - 1]) if j > 0 else 0
    if rng.random() * int(sizes[j]) < k - before:
        return j + 1
    return j


def _runs_mask(n: int, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Bool ``(n,)``, True on every ``[starts[i], starts[i] + lengths[i])``.

    The runs must not overlap, and the starts (resp. the ends) must be distinct.
    """
    if starts.size <= 16:
        # a few slice assignments beat the ~5 numpy calls of the difference array below
        mask = np.zeros(n, dtype=bool)
        for s, length in zip(starts.tolist(), lengths.tolist(), strict=True):
            mask[s : s + length] = True
        return mask
    d = np.zeros(n + 1, dtype=np.int8)
    d[starts] = 1
    d[starts + lengths] -= 1  # an end that is another run's start gives 0: the run goes on
    return d[:n].cumsum() > 0


def _uniform_int(rng: np.random.Generator, high: int | np.ndarray, size: int) -> np.ndarray:
    """``size`` uniform integers in ``0..high-1`` (``high`` scalar or ``(size,)``), int64.

    ``floor(U * high)`` with ``U ~ U[0, 1)``: uniform up to float rounding (~2**-53), and a
    few microseconds cheaper per call than ``Generator.integers``, which matters at one call
    per record.
    """
    return (rng.random(size) * high).astype(np.int64)


def _target_count(t: float, n: int, rng: np.random.Generator) -> int:
    # Stochastic rounding: E[K] = t*n exactly, also for short records.
    return min(n, int(t * n + rng.random()))


def _span_mask(n: int, t: float, prep: _Prepared, rng: np.random.Generator) -> np.ndarray:
    k = _target_count(t, n, rng)
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
    before = np.sort(_uniform_int(rng, n - k + 1, m))
    starts = before + np.cumsum(lens) - lens
    return _runs_mask(n, starts, lens)


def _half_word_mask(
    word_starts: np.ndarray,
    word_len: np.ndarray,
    t: float,
    n: int,
    prep: _Prepared,
    rng: np.random.Generator,
) -> np.ndarray:
    k = _target_count(t, n, rng)
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
    take = _stochastic_count(length, k, rng)
    return _runs_mask(n, word_starts[order[:take]] + offset[:take], length[:take])


def _hidden(n: int, prep: _Prepared, rng: np.random.Generator) -> np.ndarray:
    """Hidden positions of boundary, dia, punct and cap: bool ``(4, n)``.

    Per channel: fully known, fully unknown, or patchy (each position hidden with probability
    ``r ~ U(0,1)``). Cap has no input, so its row is always all True.
    """
    hid = np.zeros((4, n), dtype=bool)
    hid[3] = True
    u = rng.random(6)
    for i, (pk, pu) in enumerate(prep.channel):
        if u[2 * i] < pk:
            continue
        if u[2 * i] < pk + pu:
            hid[i] = True
        else:
            hid[i] = rng.random(n) < u[2 * i + 1]
    return hid


# --------------------------------------------------------------------------------------------
# assembly


def _assemble(
    stack: np.ndarray,
    ws: np.ndarray,
    t: float,
    pattern: str,
    in_chars: np.ndarray,
    tgt_mask: np.ndarray | None,
    corrupt: np.ndarray,
    hidden: np.ndarray,
    char_weight: float,
    extra_at: np.ndarray | None = None,
    extra: np.ndarray | None = None,
    real: np.ndarray | None = None,
) -> Noised:
    """Build the slot arrays at letter level, then expand elastic words into their BLANK slots.

    ``in_chars``: uint8 (n,) char inputs; ``tgt_mask``: letters with a char target (None: all,
    for substitution); ``corrupt``: bool (n,) letters whose aux labels are supervised and, when
    ``tgt_mask`` is given, whose aux inputs are hidden; ``hidden``: bool (4, n) from
    :func:`_hidden`; ``extra_at``/``extra``: last letter index of each elastic word and its
    BLANK count; ``real``: bool (n,) real-lacuna slots (input MASK and UNKNOWN, no target,
    weight 0, whatever the pattern chose).
    """
    n = stack.shape[1]
    chars = stack[0]
    aux = stack[1:]
    if tgt_mask is not None:
        tgt_chars = np.where(tgt_mask, chars.astype(np.int16), _I16_IGNORE)
        weight = tgt_mask * np.float32(char_weight)
        shown_hidden = hidden[:3] | tgt_mask
    else:
        tgt_chars = chars.astype(np.int16)
        weight = np.full(n, char_weight, dtype=np.float32)
        shown_hidden = hidden[:3]
    # source-UNKNOWN values are UNKNOWN in the plane already, so hiding them changes nothing
    inputs = np.where(shown_hidden, _AUX_UNKNOWN[:3], aux[:3])
    supervised = (hidden | corrupt) & (aux != _AUX_UNKNOWN)
    if real is not None:
        in_chars = np.where(real, np.uint8(MASK), in_chars)
        tgt_chars = np.where(real, _I16_IGNORE, tgt_chars)
        weight = np.where(real, np.float32(0), weight).astype(np.float32)
        inputs = np.where(real, _AUX_UNKNOWN[:3], inputs)
        supervised &= ~real
    targets = np.where(supervised, aux.astype(np.int16), _I16_IGNORE)

    if extra_at is not None and extra is not None and extra.sum() > 0:
        counts = np.ones(n, dtype=np.int64)
        counts[extra_at] += extra
        src = np.repeat(np.arange(n), counts)
        first = np.zeros(src.shape[0], dtype=bool)
        first[np.cumsum(counts) - counts] = True
        # Filler slots copy the last (masked) letter of their word: input MASK, aux inputs
        # UNKNOWN and weight 1/t are already right; only the targets change.
        in_chars = in_chars[src]
        inputs = inputs.take(src, axis=1)
        tgt_chars = np.where(first, tgt_chars[src], np.int16(BLANK))
        targets = np.where(first, targets.take(src, axis=1), _I16_IGNORE)
        weight = weight[src]
        ws = ws[src] & first
    return Noised(
        chars=in_chars,
        boundary=inputs[0],
        dia=inputs[1],
        punct=inputs[2],
        tgt_chars=tgt_chars,
        tgt_boundary=targets[0],
        tgt_dia=targets[1],
        tgt_cap=targets[3],
        tgt_punct=targets[2],
        weight=weight,
        word_start=ws,
        t=float(t),
        pattern=pattern,
    )


def noise_record(
    planes: Any,
    rng: np.random.Generator,
    cfg: NoiseConfig,
    max_len: int | None = None,
) -> Noised:
    """Corrupt one record for masked-diffusion training (rules in the module docstring).

    Args:
        planes: any object with attributes ``chars`` (ids 0..23), ``boundary`` (0..3),
            ``dia`` (0..48), ``cap`` (0..2), ``punct`` (0..6): integer arrays of shape ``(n,)``,
            normally ``uint8`` (e.g. :class:`stoicheia.text.planes.Planes`).
        rng: the only source of randomness (same generator state, same output).
        cfg: noise parameters (re-validated whenever a field changed).
        max_len: if given, ``len(result) <= max_len`` is guaranteed: once the elastic
            expansion would exceed it, the remaining chosen words (in their random selection
            order) are masked as plain words (``L`` MASK slots, no BLANK).

    Returns:
        A :class:`Noised` of ``M`` slots, ``n <= M`` (``M > n`` only for ``elastic``).

    Raises:
        ValueError: bad planes (missing attribute, lengths differ, id out of range, ``n == 0``),
            invalid ``cfg``, or ``n > max_len``.
    """
    prep = cfg._prepared()
    full = _check_planes(planes)
    n_full = full.shape[1]
    if max_len is not None and n_full > max_len:
        raise ValueError(
            f"record has {n_full} letters > max_len={max_len}; split long records before noising"
        )
    real = _real_lacuna(planes, full)
    t = _sample_t(rng, prep)
    idx = int(prep.pattern_cum.searchsorted(rng.random(), side="right"))
    # float rounding of the cumulative sum could land past the last pattern with weight > 0
    pattern = PATTERNS[min(idx, prep.last_pattern)]
    ws = _word_start(full[1], rng)
    if real is None:
        stack, letter_idx = full, None
    else:
        # The patterns choose among the record's letters only: they run on the letters
        # with the real-lacuna slots taken out, and their choice is put back in place.
        letter_idx = np.flatnonzero(~real)
        stack = full[:, letter_idx]
        if letter_idx.size:
            stack[1] = _letters_boundary(full[1], real, letter_idx)
    n = stack.shape[1]
    if n == 0:  # a part of a record that holds only lacuna slots: nothing to learn
        hidden = _hidden(n_full, prep, rng)
        zero = np.zeros(n_full, dtype=bool)
        return _assemble(full, ws, t, pattern, full[0], zero, zero, hidden, 1.0 / t, real=real)
    chars = stack[0]
    ws_l = ws if letter_idx is None else _word_start(stack[1], rng)

    extra_at = extra = None
    if pattern == "substitute":
        sub = rng.random(n) < t
        shift = (1 + _uniform_int(rng, NUM_LETTERS - 1, n)).astype(np.uint8)
        # adding 1..23 mod 24 gives a uniformly drawn letter different from the original
        in_chars = np.where(sub, (chars + shift) % np.uint8(NUM_LETTERS), chars)
        hidden = _hidden(n_full, prep, rng)
        sub, in_chars = _put_back(sub, letter_idx, n_full), _put_back_chars(in_chars, letter_idx, full[0])
        return _assemble(full, ws, t, pattern, in_chars, None, sub, hidden, 1.0, real=real)

    mask, extra_at, extra = _pattern_mask(pattern, stack, ws_l, t, n, prep, rng, max_len, n_full)
    mask = _put_back(mask, letter_idx, n_full)
    if extra_at is not None and letter_idx is not None:
        extra_at = letter_idx[extra_at]
    in_chars = np.where(mask, np.uint8(MASK), full[0])
    hidden = _hidden(n_full, prep, rng)
    return _assemble(
        full, ws, t, pattern, in_chars, mask, mask, hidden, 1.0 / t, extra_at, extra, real=real
    )


def _pattern_mask(
    pattern: str,
    stack: np.ndarray,
    ws: np.ndarray,
    t: float,
    n: int,
    prep: _Prepared,
    rng: np.random.Generator,
    max_len: int | None,
    n_full: int,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The masked letters ``(n,)`` of a mask pattern, and the elastic words' last letter
    indices and BLANK counts (None for the other patterns)."""
    extra_at = extra = None
    if pattern == "iid":
        mask = rng.random(n) < t
    elif pattern == "span":
        mask = _span_mask(n, t, prep, rng)
    elif pattern == "half_word":
        word_starts, word_len = _word_spans(ws)
        mask = _half_word_mask(word_starts, word_len, t, n, prep, rng)
    else:  # word, elastic
        word_starts, word_len = _word_spans(ws)
        k = _target_count(t, n, rng)
        order = rng.permutation(word_len.shape[0])
        chosen = order[: _stochastic_count(word_len[order], k, rng)]
        wmask = np.zeros(word_len.shape[0], dtype=bool)
        wmask[chosen] = True
        mask = np.repeat(wmask, word_len)
        if pattern == "elastic" and chosen.size:
            L = word_len[chosen]
            extra = 2 + _uniform_int(rng, (prep.extra_frac * L).astype(np.int64) + 1, L.size)
            if max_len is not None:
                # from the first word that does not fit on, plain word masking
                extra[np.cumsum(extra) > max_len - n_full] = 0
            extra_at = word_starts[chosen] + L - 1
    return mask, extra_at, extra


def _letters_boundary(boundary: np.ndarray, real: np.ndarray, letter_idx: np.ndarray) -> np.ndarray:
    """The boundary plane of the letters alone: a letter followed by a lacuna that ends a
    word (``λόγο[.] καὶ``) ends its word too, so words do not glue across a removed gap."""
    b = boundary[letter_idx].copy()
    gap_ends = np.flatnonzero(real & ((boundary == BOUNDARY_WORD) | (boundary == BOUNDARY_SENTENCE)))
    if gap_ends.size:
        prev = letter_idx.searchsorted(gap_ends) - 1
        prev = prev[prev >= 0]
        fix = prev[(b[prev] == 0) | (b[prev] == BOUNDARY_UNKNOWN)]
        b[fix] = BOUNDARY_WORD
    return b


def _put_back(mask: np.ndarray, letter_idx: np.ndarray | None, n_full: int) -> np.ndarray:
    """A bool choice over the letters, as a bool ``(n_full,)`` over all slots (False at gaps)."""
    if letter_idx is None:
        return mask
    out = np.zeros(n_full, dtype=bool)
    out[letter_idx] = mask
    return out


def _put_back_chars(in_chars: np.ndarray, letter_idx: np.ndarray | None, full_chars: np.ndarray) -> np.ndarray:
    if letter_idx is None:
        return in_chars
    out = full_chars.copy()
    out[letter_idx] = in_chars
    return out


def reference_noise(planes: Any, rng: np.random.Generator, t: float = 0.30) -> Noised:
    """Fixed evaluation noise: iid masking at rate ``t``, every aux channel hidden.

    Each letter is masked with probability ``t``; boundary, dia and punct inputs are UNKNOWN
    everywhere (so their targets cover every recorded letter); the char weight is 1.0 at
    masked slots because the metrics use unweighted cross-entropy. ``pattern`` is
    ``"reference"``. ``planes`` as in :func:`noise_record`; returns a :class:`Noised` of ``n``
    slots.

    Raises ``ValueError`` for bad planes or ``t`` outside ``(0, 1]``.
    """
    if not 0 < t <= 1:
        raise ValueError(f"reference_noise t = {t!r} must be in (0, 1]")
    stack = _check_planes(planes)
    real = _real_lacuna(planes, stack)
    n = stack.shape[1]
    mask = rng.random(n) < t
    if real is not None:
        mask &= ~real  # a real lacuna is never a target (its letters are unknown)
    ws = _word_start(stack[1], rng)
    hidden = np.ones((4, n), dtype=bool)
    in_chars = np.where(mask, np.uint8(MASK), stack[0])
    return _assemble(stack, ws, t, "reference", in_chars, mask, mask, hidden, 1.0, real=real)


def mask_spans(planes: Any, spans: list[tuple[int, int]]) -> Noised:
    """Known-width lacunae at given places: letters ``[a, b)`` of each span become MASK slots.

    Every aux channel of the record is hidden (UNKNOWN), as in :func:`reference_noise`, so the
    model sees only the letters outside the spans. Char targets (weight 1.0) are the true
    letters of the spans, -100 elsewhere; the aux targets are all -100 (this noise scores
    letters only). ``planes`` as in :func:`noise_record`; spans are ``(start, end)`` letter
    indices, ``0 <= start < end <= n``, in any order (overlaps merge). ``pattern`` is
    ``"spans"`` and ``t`` the masked fraction. Returns a :class:`Noised` of ``n`` slots.

    Real-lacuna slots (``planes.lacuna > 0``) stay MASK inputs without a target, inside a
    span or not (their letters are unknown).

    Raises ``ValueError`` for bad planes or a span outside the record.
    """
    stack = _check_planes(planes)
    real = _real_lacuna(planes, stack)
    n = stack.shape[1]
    mask = np.zeros(n, dtype=bool)
    for a, b in spans:
        if not 0 <= a < b <= n:
            raise ValueError(f"mask_spans: span ({a}, {b}) is not inside the record of {n} letters")
        mask[a:b] = True
    if real is not None:
        mask &= ~real
    chars = np.where(mask, np.uint8(MASK), stack[0]).astype(np.uint8)
    tgt = np.where(mask, stack[0].astype(np.int16), np.int16(IGNORE_INDEX)).astype(np.int16)
    ignore = np.full(n, IGNORE_INDEX, dtype=np.int16)
    ws = _word_start(stack[1], np.random.default_rng(0)) if n else np.zeros(0, dtype=bool)
    return Noised(
        chars=chars,
        boundary=np.full(n, BOUNDARY_UNKNOWN, dtype=np.uint8),
        dia=np.full(n, DIA_UNKNOWN, dtype=np.uint8),
        punct=np.full(n, PUNCT_UNKNOWN, dtype=np.uint8),
        tgt_chars=tgt,
        tgt_boundary=ignore.copy(),
        tgt_dia=ignore.copy(),
        tgt_cap=ignore.copy(),
        tgt_punct=ignore.copy(),
        weight=mask.astype(np.float32),
        word_start=ws,
        t=float(mask.sum()) / max(1, n),
        pattern="spans",
    )
