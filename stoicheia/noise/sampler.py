"""The sampler: :func:`noise_record` (training), :func:`reference_noise` and
:func:`mask_spans` (evaluation)."""

from __future__ import annotations

from typing import Any

import numpy as np

from stoicheia.noise.assemble import (
    assemble_record,
    check_planes,
    hidden_channels,
    letters_boundary,
    put_back,
    put_back_chars,
    real_lacuna,
)
from stoicheia.noise.config import NoiseConfig
from stoicheia.noise.patterns import PATTERN_FUNCTIONS, PATTERNS, Letters
from stoicheia.noise.prepared import masked_weight, sample_t_prepared
from stoicheia.noise.record import Noised
from stoicheia.noise.words import word_starts
from stoicheia.text.alphabet import BOUNDARY_UNKNOWN, DIA_UNKNOWN, IGNORE_INDEX, MASK, PUNCT_UNKNOWN

__all__ = ["mask_spans", "noise_record", "reference_noise"]


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
    prep = cfg.prepared()
    full = check_planes(planes)
    n_full = full.shape[1]
    if max_len is not None and n_full > max_len:
        raise ValueError(
            f"record has {n_full} letters > max_len={max_len}; split long records before noising"
        )
    real = real_lacuna(planes, full)
    t = sample_t_prepared(rng, prep)
    idx = int(prep.pattern_cum.searchsorted(rng.random(), side="right"))
    # float rounding of the cumulative sum could land past the last pattern with weight > 0
    pattern = PATTERNS[min(idx, prep.last_pattern)]
    ws = word_starts(full[1], rng)
    if real is None:
        stack, letter_idx = full, None
    else:
        # The patterns choose among the record's letters only: they run on the letters
        # with the real-lacuna slots taken out, and their choice is put back in place.
        letter_idx = np.flatnonzero(~real)
        stack = full[:, letter_idx]
        if letter_idx.size:
            stack[1] = letters_boundary(full[1], real, letter_idx)
    n = stack.shape[1]
    if n == 0:  # a part of a record that holds only lacuna slots: nothing to learn
        hidden = hidden_channels(n_full, prep, rng)
        zero = np.zeros(n_full, dtype=bool)
        return assemble_record(
            full, ws, t, pattern, full[0], zero, zero, hidden, masked_weight(t, prep), real=real
        )
    ws_l = ws if letter_idx is None else word_starts(stack[1], rng)
    choice = PATTERN_FUNCTIONS[pattern](Letters(stack, ws_l, n, n_full), t, prep, rng, max_len)
    corrupt = put_back(choice.corrupt, letter_idx, n_full)
    hidden = hidden_channels(n_full, prep, rng)
    if choice.substitution:
        in_chars = put_back_chars(choice.in_chars, letter_idx, full[0])
        return assemble_record(
            full, ws, t, pattern, in_chars, None, corrupt, hidden, 1.0, real=real
        )
    extra_at = choice.extra_at
    if extra_at is not None and letter_idx is not None:
        extra_at = letter_idx[extra_at]
    in_chars = np.where(corrupt, np.uint8(MASK), full[0])
    return assemble_record(
        full,
        ws,
        t,
        pattern,
        in_chars,
        corrupt,
        corrupt,
        hidden,
        masked_weight(t, prep),
        extra_at,
        choice.extra,
        real=real,
    )


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
    stack = check_planes(planes)
    real = real_lacuna(planes, stack)
    n = stack.shape[1]
    mask = rng.random(n) < t
    if real is not None:
        mask &= ~real  # a real lacuna is never a target (its letters are unknown)
    ws = word_starts(stack[1], rng)
    hidden = np.ones((4, n), dtype=bool)
    in_chars = np.where(mask, np.uint8(MASK), stack[0])
    return assemble_record(stack, ws, t, "reference", in_chars, mask, mask, hidden, 1.0, real=real)


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
    stack = check_planes(planes)
    real = real_lacuna(planes, stack)
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
    ws = word_starts(stack[1], np.random.default_rng(0)) if n else np.zeros(0, dtype=bool)
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
