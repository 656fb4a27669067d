"""Aligned letter planes -> polytonic Greek text (real lacunae in Leiden notation)."""

from __future__ import annotations

import functools
import unicodedata

import numpy as np

from stoicheia.text import alphabet as A
from stoicheia.text.planes import Planes

__all__ = ["planes_to_text"]

_SIGMA = A.LETTERS.index("σ")
_RENDER_PUNCT = ("", ",", "\u0387", ":", ".", "\u037e", "")
_MARK_CHARS = (
    ("", "\u0301", "\u0300", "\u0342"),  # accent
    ("", "\u0313", "\u0314"),  # breathing
)


@functools.lru_cache(maxsize=1)
def _letter_table() -> np.ndarray:
    """Object array of NFC letter strings indexed by ``((char*49 + dia)*2 + cap)*2 + final``."""
    out = []
    for c in range(A.NUM_LETTERS):
        for d in range(A.NUM_DIA + 1):
            for cap in (0, 1):
                for final in (0, 1):
                    base = A.CAPITALS[c] if cap else A.LETTERS[c]
                    if final and c == _SIGMA and not cap:
                        base = "ς"
                    if d == A.DIA_UNKNOWN:
                        out.append(base)
                        continue
                    acc, br, io, di = A.dia_fields(d)
                    # Canonical order: diaeresis, breathing, accent (all class 230, so the
                    # order decides composition), then ypogegrammeni (class 240).
                    s = base + ("\u0308" if di else "") + _MARK_CHARS[1][br] + _MARK_CHARS[0][acc]
                    s += "\u0345" if io else ""
                    out.append(unicodedata.normalize("NFC", s))
    arr = np.empty(len(out), object)
    arr[:] = out
    return arr


def _check_range(p: Planes, name: str, limit: int) -> None:
    arr = getattr(p, name)
    if arr.size and int(arr.max()) > limit:
        i = int(np.flatnonzero(arr > limit)[0])
        raise ValueError(
            f"planes_to_text: {name}[{i}] = {int(arr[i])} is outside [0, {limit}] "
            "(noised/masked planes cannot be rendered; render the clean planes)"
        )


def planes_to_text(planes: Planes) -> str:
    """Render :class:`Planes` as polytonic Greek text, real lacunae in Leiden notation.

    Real-lacuna slots (``lacuna > 0``) render as Leiden, read back by
    :func:`stoicheia.text.encode.encode_text`: a run of known-width slots as ``[...]`` (one
    dot each), a run of estimated-width slots as ``[-ca.N-]``, each unknown-width stand-in
    as ``[---]``; a run ends where a word break follows (its punctuation and space follow
    the bracket).

    Letters are NFC (precomposed where Unicode has a form: base + diaeresis, breathing,
    accent, ypogegrammeni in canonical order, then NFC); capitals where ``cap == 1``;
    ς for a lowercase σ whose boundary is 1 or 2. After each letter comes its
    punctuation (comma ``,``, raised dot U+0387, colon ``:``, full stop ``.``, question
    mark U+037E), then a space if its boundary is 1 or 2, except after the last letter.
    UNKNOWN values render as none (no mark, lowercase, no space, no punctuation).

    The two Greek punctuation characters are emitted as U+0387 and U+037E even though
    NFC would replace them by U+00B7 and ``;``; :func:`text_to_planes` reads both.

    Round trip: ``text_to_planes(planes_to_text(p))[0] == p`` holds for planes with
    ``chars`` < 24, ``dia`` < 48, ``cap`` < 2, last boundary 2, boundary 2 exactly where
    punct is 4/5 or last, punct != 0 only where boundary >= 1, and no smooth breathing
    on a consonant other than ρ (text cannot tell that from elision, which is dropped).
    Raises ``ValueError`` if a value is outside its plane's id space (chars 0..23,
    boundary 0..3, dia 0..48, cap 0..2, punct 0..6).
    """
    n = len(planes)
    if n == 0:
        return ""
    lac = planes.lacuna
    has_lacuna = bool(lac.any())
    _check_range(planes, "lacuna", A.NUM_LACUNA - 1)
    chars = planes.chars
    if has_lacuna:
        chars = np.where(lac > 0, 0, chars).astype(np.uint8)
        bad = (lac > 0) & (planes.chars != A.MASK)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"planes_to_text: lacuna slot {i} has chars {int(planes.chars[i])}, not MASK"
            )
    if int(chars.max()) > A.NUM_LETTERS - 1:
        _check_range(
            Planes(chars, planes.boundary, planes.dia, planes.cap, planes.punct),
            "chars",
            A.NUM_LETTERS - 1,
        )
    _check_range(planes, "boundary", A.BOUNDARY_UNKNOWN)
    _check_range(planes, "dia", A.DIA_UNKNOWN)
    _check_range(planes, "cap", A.CAP_UNKNOWN)
    _check_range(planes, "punct", A.PUNCT_UNKNOWN)
    ends = (planes.boundary == A.BOUNDARY_WORD) | (planes.boundary == A.BOUNDARY_SENTENCE)
    cap = (planes.cap == 1).astype(np.int64)
    key = ((chars.astype(np.int64) * (A.NUM_DIA + 1) + planes.dia) * 2 + cap) * 2 + ends
    letters = _letter_table()[key].tolist()
    if has_lacuna:
        _lacuna_strings(lac, ends, letters)
    space = ends.copy()
    space[-1] = False
    suffix = np.array([p + s for p in _RENDER_PUNCT for s in ("", " ")], object)
    suffixes = suffix[planes.punct.astype(np.int64) * 2 + space].tolist()
    parts: list[str] = [""] * (2 * n)
    parts[0::2] = letters
    parts[1::2] = suffixes
    return "".join(parts)


def _lacuna_strings(lac: np.ndarray, ends: np.ndarray, letters: list[str]) -> None:
    """Overwrite (in place) the strings of the lacuna slots with their Leiden form."""
    idx = np.flatnonzero(lac > 0).tolist()
    n = lac.shape[0]
    k = 0
    while k < len(idx):
        i = idx[k]
        v = int(lac[i])
        if v == A.LACUNA_UNKNOWN:
            letters[i] = "[---]"
            k += 1
            continue
        j = i  # the run: same value, no word break inside
        while j + 1 < n and int(lac[j + 1]) == v and not ends[j]:
            j += 1
        width = j - i + 1
        if v == A.LACUNA_LOST:
            for q in range(i, j + 1):
                letters[q] = "."
            letters[i] = "[" + letters[i]
            letters[j] = letters[j] + "]"
        else:
            letters[i] = f"[-ca.{width}-]"
            for q in range(i + 1, j + 1):
                letters[q] = ""
        k += width
