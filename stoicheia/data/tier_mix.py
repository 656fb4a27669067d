"""Tier weights in letters: from the shares of letters a mix should read to the record
proportions streaming samples by, and how often each tier is read over a planned run.

``data.tier_weights`` (and every anneal phase's mix) give each tier's share of the **letters**
trained on, normalised over the tiers with a positive weight. Streaming's ``Stream.proportion``
counts records (MDS samples), and records differ in length by tier (a UD treebank document of
about 2,500 letters, an inscription of about 50), so a record proportion is not a letter share.
With ``L_t`` the mean letters per sample of tier ``t`` (``stats.json``: ``letters.train /
samples_written.train``), sampling tier ``t`` with proportion ``p_t ∝ s_t / L_t`` gives it
``p_t L_t / Σ_u p_u L_u = s_t`` of the letters read, in expectation over the records drawn
(:func:`record_proportions`); every letter of a record is packed and trained on
(:mod:`stoicheia.data.packing`), so the shares hold in the rows too.

:func:`plan_reads` turns the mixes of a run and the letter slots planned for each into what
each tier gives: its share of the run's letters, its letters, and how many times it is read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: A tier read more than this many times over the planned run is warned about. Repeating data
#: up to about 4 epochs is worth nearly as much as new data, beyond it the value of a repeat
#: falls quickly (Muennighoff et al. 2023, "Scaling Data-Constrained Language Models", fig. 3).
DEFAULT_MAX_READS = 4.0


@dataclass(frozen=True)
class TierSize:
    """One tier's train split: ``letters`` (Greek letters kept) and ``samples`` (MDS samples:
    records, or parts of long records)."""

    letters: int
    samples: int

    @property
    def letters_per_sample(self) -> float:
        """Mean letters per MDS sample (letters / samples)."""
        return self.letters / self.samples


def tier_sizes(stats: Mapping[str, Any], split: str = "train") -> dict[str, TierSize]:
    """Letters and samples of each tier's ``split`` from a ``stats.json`` dict (tiers with at
    least one sample only)."""
    out = {}
    for tier, entry in (stats.get("tiers") or {}).items():
        letters = int((entry.get("letters") or {}).get(split, 0))
        samples = int((entry.get("samples_written") or {}).get(split, 0))
        if samples > 0:
            out[tier] = TierSize(letters, samples)
    return out


def read_tier_sizes(stats_root: str | Path, split: str = "train") -> dict[str, TierSize]:
    """:func:`tier_sizes` of ``stats_root/stats.json``. Raises ``FileNotFoundError`` naming the
    file and the fix."""
    from stoicheia.data.corpus_stats import read_stats

    return tier_sizes(read_stats(Path(stats_root)), split)


def letter_shares(weights: Mapping[str, float]) -> dict[str, float]:
    """The weights normalised over the tiers with a positive weight (shares of letters, sum 1).
    Raises ``ValueError`` for a negative, non-finite or all-zero set of weights."""
    if any(not math.isfinite(float(w)) or float(w) < 0 for w in weights.values()):
        raise ValueError(f"tier weights must be finite numbers >= 0, got {dict(weights)}")
    active = {t: float(w) for t, w in weights.items() if float(w) > 0}
    if not active:
        raise ValueError(
            f"every tier weight is 0: {dict(weights)}; give at least one tier a positive weight"
        )
    total = sum(active.values())
    return {t: w / total for t, w in active.items()}


def record_proportions(
    weights: Mapping[str, float], sizes: Mapping[str, TierSize], where: str = "stats.json"
) -> dict[str, float]:
    """Streaming proportions (per record, sum 1) that read the tiers in the letter shares
    ``weights`` (normalised over positive weights): ``p_t ∝ s_t / L_t``, ``L_t`` the tier's
    mean letters per sample. A mix of one tier needs no sizes.

    Raises ``ValueError`` for bad weights, and a ``ValueError`` naming ``where`` and the fix
    when a tier of the mix has no size (no samples or no letters in the split).
    """
    shares = letter_shares(weights)
    if len(shares) == 1:
        return dict.fromkeys(shares, 1.0)
    missing = [t for t in shares if t not in sizes or sizes[t].letters <= 0]
    if missing:
        raise ValueError(
            f"{where} gives no train letters for tier(s) {', '.join(missing)}, so their share of "
            "letters cannot be turned into a record proportion: convert the shards again with "
            "`stoicheia convert` (it writes letters and samples per tier), or set their weight "
            "to 0 in data.tier_weights"
        )
    raw = {t: s / sizes[t].letters_per_sample for t, s in shares.items()}
    total = sum(raw.values())
    return {t: v / total for t, v in raw.items()}


@dataclass(frozen=True)
class TierReads:
    """What one tier gives over a planned run: ``share`` of all letter slots planned,
    ``letters_read`` (slots), ``letters`` in the tier, and ``reads`` = letters_read / letters
    (how many times the tier is read; 0.5 = half of it)."""

    tier: str
    share: float
    letters_read: float
    letters: int
    reads: float


def plan_reads(
    mixes: Sequence[tuple[Mapping[str, float], float]], sizes: Mapping[str, TierSize]
) -> list[TierReads]:
    """Each tier's letters read over a run made of ``mixes``: ``(weights, letter slots)`` per
    mix (a mix's weights are letter shares; its slots are the letters it is planned to read).
    Tiers in the order first met; a tier missing from ``sizes`` counts 0 letters (reads inf).
    """
    read: dict[str, float] = {}
    for weights, slots in mixes:
        for tier, share in letter_shares(weights).items():
            read[tier] = read.get(tier, 0.0) + share * float(slots)
    total = sum(read.values()) or 1.0
    out = []
    for tier, n in read.items():
        letters = sizes[tier].letters if tier in sizes else 0
        out.append(TierReads(tier, n / total, n, letters, n / letters if letters else math.inf))
    return out
