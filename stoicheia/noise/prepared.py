"""The noise parameters as the sampler uses them: validated, normalised, ready to draw from.

:class:`PreparedNoise` is made by :meth:`stoicheia.noise.config.NoiseConfig.prepared` and read
by the pattern functions (:mod:`stoicheia.noise.patterns`), the channel hiding
(:mod:`stoicheia.noise.assemble`) and the sampler: its own module, so that none of them
reaches into another's private names.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class PreparedNoise(NamedTuple):
    """A validated :class:`~stoicheia.noise.config.NoiseConfig` in the form the sampler and the
    pattern functions use
    (:meth:`NoiseConfig.prepared <stoicheia.noise.config.NoiseConfig.prepared>`)."""

    pattern_cum: np.ndarray  # (6,) float64 cumulative, normalised pattern probabilities
    last_pattern: int  # index of the last pattern with weight > 0
    anchor: tuple[float, float, float]  # (end, start, middle), normalised
    t_beta: tuple[float, float]
    t_min: float
    t_max: float
    span_p: float  # geometric success probability 1 / span_mean
    span_max: int
    pad_max: int  # elastic BLANK padding beyond the 2 slots: uniform 0..pad_max
    channel: tuple[tuple[float, float], ...]  # (p_known, p_unknown) per HIDEABLE channel
    masked_weight: float = 0.0  # 0: the ELBO's 1/t per masked slot; > 0: this for every t


def masked_weight(t: float, prep: PreparedNoise) -> float:
    """Char-loss weight of a masked slot of a record drawn at rate ``t``: ``1/t`` (the ELBO,
    ``loss_weight: elbo``) or the constant ``1/E[t]`` (``loss_weight: uniform``)."""
    return prep.masked_weight if prep.masked_weight > 0 else 1.0 / t


def mean_rate(t_beta: tuple[float, float], t_min: float, t_max: float) -> float:
    """``E[t]`` of ``t ~ Beta(a, b)`` clipped to ``[t_min, t_max]`` (a dimensionless rate),
    by the midpoint rule on 200,000 cells of ``[0, 1]`` (deterministic; error far below 1e-6 for
    ``a, b >= 1``)."""
    import math

    a, b = t_beta
    n = 200_000
    x = (np.arange(n) + 0.5) / n
    logpdf = (
        (a - 1) * np.log(x)
        + (b - 1) * np.log1p(-x)
        - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
    )
    pdf = np.exp(logpdf)
    pdf /= pdf.sum()  # exact normalisation on the grid (also for a, b < 1)
    return float((np.clip(x, t_min, t_max) * pdf).sum())


def sample_t_prepared(rng: np.random.Generator, prep: PreparedNoise) -> float:
    """One corruption rate ``t ~ Beta(*prep.t_beta)`` clipped to ``[prep.t_min, prep.t_max]``."""
    return float(min(max(rng.beta(*prep.t_beta), prep.t_min), prep.t_max))
