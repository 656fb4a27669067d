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
    pattern functions use (:meth:`NoiseConfig.prepared <stoicheia.noise.config.NoiseConfig.prepared>`)."""

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


def sample_t_prepared(rng: np.random.Generator, prep: PreparedNoise) -> float:
    """One corruption rate ``t ~ Beta(*prep.t_beta)`` clipped to ``[prep.t_min, prep.t_max]``."""
    return float(min(max(rng.beta(*prep.t_beta), prep.t_min), prep.t_max))
