"""The noise parameters: :class:`NoiseConfig`, validated into the sampler's form, and the
per-record corruption rate."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stoicheia.noise.patterns import PATTERNS
from stoicheia.noise.prepared import PreparedNoise, mean_rate, sample_t_prepared

__all__ = ["NoiseConfig", "ANCHORS", "HIDEABLE", "LOSS_WEIGHTS", "sample_t"]

#: Half-word anchors.
ANCHORS = ("end", "start", "middle")
#: Char-loss weightings of a masked slot (:attr:`NoiseConfig.loss_weight`).
LOSS_WEIGHTS = ("elbo", "uniform")
#: Auxiliary channels that have a model input (and so can be hidden); cap has none.
HIDEABLE = ("boundary", "dia", "punct")


def _default_weights() -> dict[str, float]:
    return {
        "span": 0.15,
        "word": 0.20,
        "elastic": 0.15,
        "iid": 0.15,
        "half_word": 0.20,
        "substitute": 0.15,
        "lacuna": 0.0,  # off by default: docs/noise.md
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
            raise ValueError(
                f"NoiseConfig.{name} has unknown {what} {k!r}; known: {', '.join(known)}"
            )
    values = [_finite_nonneg(f"{name}[{k!r}]", weights.get(k, 0.0)) for k in known]
    if sum(values) <= 0:
        raise ValueError(f"NoiseConfig.{name} weights are all zero; give at least one a weight > 0")
    return values


@dataclass
class NoiseConfig:
    """Parameters of :func:`noise_record`.

    Attributes:
        weights: mixture weight per pattern name (see :data:`PATTERNS`); need not sum to 1
            (they are normalised); a pattern left out has weight 0 (``lacuna``, lost stretches
            drawn as real editions show them, is left out by default: docs/noise.md).
        t_beta: ``(a, b)`` of the Beta distribution of the per-record rate ``t``.
        t_min, t_max: ``t`` is clipped to ``[t_min, t_max]``, ``0 < t_min <= t_max <= 1``
            (``t > 0`` because the loss weight is ``1/t``). ``t_min == t_max`` fixes ``t``.
        span_mean: mean of the geometric span length before the cap (letters, >= 1).
        span_max: span lengths are capped at this many letters (>= 1).
        half_word_anchor: probability of anchoring a half-word part at the word's ``end``,
            ``start`` or ``middle`` (normalised; a 2-letter word has no middle and redraws
            among end/start; a left-out anchor has weight 0).
        elastic_pad_max: an elastic word of ``L`` letters gets ``2 + u`` BLANK slots, ``u``
            uniform in ``0..elastic_pad_max`` (letters, integer >= 0), drawn independently of
            ``L``. Why independent: ``restore`` lays out a lacuna of at most ``H`` letters as
            ``H + 2`` slots whatever its true width, so the slot count must not tell the model
            the width. With padding proportional to ``L`` (``u <= 0.3 L``, the rule before
            2026-12) a 22-slot gap meant "15 to 20 letters", and every ``[---]`` came back at
            its maximum width. The default 20 is ``restore``'s default ``unknown_width``: given
            ``S`` slots, every width ``0..S-2`` is then equally likely from the layout alone.
        channel_known: per hideable channel (``boundary``, ``dia``, ``punct``; all three
            required), ``[p_fully_known, p_fully_unknown]`` (any 2-sequence; lists because
            OmegaConf cannot hold a dict of tuples), ``p_known + p_unknown <= 1``; the rest of
            the probability is "patchy": rate ``r ~ U(0,1)``, each position hidden with
            probability ``r``.
        loss_weight: the char-loss weight of a masked slot. ``"elbo"``: ``1/t``, the MDLM
            ELBO's (module docstring of :mod:`stoicheia.noise`). ``"uniform"``: ``1/E[t]``
            for every record (``E[t]`` of the clipped Beta, 3.0 for the default ``(2, 4)``),
            so the loss keeps the scale of a per-letter cross-entropy but a record drawn at a
            low rate no longer weighs up to ``1/t_min`` = 20 times more per letter: its few
            masked letters made the gradient noisy. On the demo's budget the uniform weight
            trained much faster (2026-12-01, 2 CPU cores, ``benchmarks/`` and README's
            figures); the model is then no longer trained on the ELBO, whose value
            ``evaluate`` does not report anyway (bits per character are unweighted).

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
    elastic_pad_max: int = 20
    channel_known: dict[str, list[float]] = field(default_factory=_default_channel_known)
    loss_weight: str = "elbo"

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check every field; raise ``ValueError`` naming the bad field and the fix.

        Errors: unknown pattern/anchor/channel name, negative or non-finite weight, all-zero
        weights, ``t_beta`` not two positive numbers, ``t_min``/``t_max`` outside
        ``0 < t_min <= t_max <= 1``, ``span_mean < 1``, ``span_max`` not an integer >= 1,
        ``elastic_pad_max`` not an integer >= 0, a channel probability outside ``[0, 1]``, a
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
                self.elastic_pad_max,
                tuple((k, tuple(v)) for k, v in self.channel_known.items()),
                self.loss_weight,
            )
        except (AttributeError, TypeError):
            return (object(),)  # malformed: never matches, so _prepare reports the error

    def prepared(self) -> PreparedNoise:
        """This configuration validated and in the form the sampler uses (cached while the
        fields do not change). Raises ``ValueError`` naming the bad field."""
        key = self._key()
        cached = self.__dict__.get("_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        prep = self._prepare()
        self.__dict__["_cache"] = (key, prep)
        return prep

    def _prepare(self) -> PreparedNoise:
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
        pm = self.elastic_pad_max
        if isinstance(pm, bool) or not isinstance(pm, (int, np.integer)) or pm < 0:
            raise ValueError(
                f"NoiseConfig.elastic_pad_max = {pm!r} must be an integer >= 0 (letters)"
            )
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
        if self.loss_weight not in LOSS_WEIGHTS:
            raise ValueError(
                f"NoiseConfig.loss_weight = {self.loss_weight!r}: must be one of "
                + ", ".join(LOSS_WEIGHTS)
                + " (elbo: 1/t per masked letter; uniform: 1/E[t] for every record)"
            )
        weight = 1.0 / mean_rate((ta, tb), t_min, t_max) if self.loss_weight == "uniform" else 0.0
        total_a = sum(pa)
        return PreparedNoise(
            pattern_cum=np.cumsum(pw / pw.sum()),
            last_pattern=int(np.flatnonzero(pw)[-1]),
            anchor=(pa[0] / total_a, pa[1] / total_a, pa[2] / total_a),
            t_beta=(ta, tb),
            t_min=t_min,
            t_max=t_max,
            span_p=1.0 / span_mean,
            span_max=int(sm),
            pad_max=int(pm),
            channel=tuple(channel),
            masked_weight=weight,
        )


def sample_t(rng: np.random.Generator, cfg: NoiseConfig) -> float:
    """Draw one corruption rate ``t ~ Beta(*cfg.t_beta)`` clipped to ``[cfg.t_min, cfg.t_max]``.

    Raises ``ValueError`` if ``cfg`` is invalid.
    """
    return sample_t_prepared(rng, cfg.prepared())
