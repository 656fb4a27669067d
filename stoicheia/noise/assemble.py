"""Planes in, slot arrays out: validation of the planes, hidden channels, and the assembly of
a :class:`stoicheia.noise.Noised` record (elastic expansion, real-lacuna slots)."""

from __future__ import annotations

from typing import Any

import numpy as np

from stoicheia.noise.prepared import PreparedNoise
from stoicheia.noise.record import Noised
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

# --------------------------------------------------------------------------------------------
# helpers

#: plane order inside the stacked (5, n) array: the three hideable channels, then cap, are
#: contiguous so that one vectorised pass handles all auxiliary channels.
_STACK_ORDER = ("chars", "boundary", "dia", "punct", "cap")
# chars may be MASK only at a real-lacuna slot (checked in real_lacuna)
_STACK_MAX = np.array([MASK, BOUNDARY_UNKNOWN, DIA_UNKNOWN, PUNCT_UNKNOWN, CAP_UNKNOWN])
#: UNKNOWN id of boundary, dia, punct, cap (rows 1..4 of the stack), shape (4, 1)
_AUX_UNKNOWN = np.array(
    [[BOUNDARY_UNKNOWN], [DIA_UNKNOWN], [PUNCT_UNKNOWN], [CAP_UNKNOWN]], dtype=np.uint8
)
_I16_IGNORE = np.int16(IGNORE_INDEX)


def check_planes(planes: Any) -> np.ndarray:
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


def real_lacuna(planes: Any, stack: np.ndarray) -> np.ndarray | None:
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
                f"plane 'lacuna' has id {int(lac[pos])} at slot {pos}; "
                f"valid ids are 0..{NUM_LACUNA - 1}"
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


def hidden_channels(n: int, prep: PreparedNoise, rng: np.random.Generator) -> np.ndarray:
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


def assemble_record(
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
    :func:`hidden_channels`; ``extra_at``/``extra``: last letter index of each elastic word and its
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


def letters_boundary(boundary: np.ndarray, real: np.ndarray, letter_idx: np.ndarray) -> np.ndarray:
    """The boundary plane of the letters alone: a letter followed by a lacuna that ends a
    word (``λόγο[.] καὶ``) ends its word too, so words do not glue across a removed gap."""
    b = boundary[letter_idx].copy()
    gap_ends = np.flatnonzero(
        real & ((boundary == BOUNDARY_WORD) | (boundary == BOUNDARY_SENTENCE))
    )
    if gap_ends.size:
        prev = letter_idx.searchsorted(gap_ends) - 1
        prev = prev[prev >= 0]
        fix = prev[(b[prev] == 0) | (b[prev] == BOUNDARY_UNKNOWN)]
        b[fix] = BOUNDARY_WORD
    return b


def put_back(mask: np.ndarray, letter_idx: np.ndarray | None, n_full: int) -> np.ndarray:
    """A bool choice over the letters, as a bool ``(n_full,)`` over all slots (False at gaps)."""
    if letter_idx is None:
        return mask
    out = np.zeros(n_full, dtype=bool)
    out[letter_idx] = mask
    return out


def put_back_chars(
    in_chars: np.ndarray, letter_idx: np.ndarray | None, full_chars: np.ndarray
) -> np.ndarray:
    """The char inputs of the whole record: ``full_chars`` (uint8 ``(n,)``) with the noised
    letters ``in_chars`` written back at ``letter_idx`` (``None``: ``in_chars`` is already
    whole)."""
    if letter_idx is None:
        return in_chars
    out = full_chars.copy()
    out[letter_idx] = in_chars
    return out
