"""Elision, crasis and spacing diacritics: the clusters read by their neighbours.

Most clusters of a text mean the same wherever they stand (:mod:`stoicheia.text.clusters`
tabulates them). A few depend on the letters around them, and :func:`resolve_context` reads
them after the table lookup: an apostrophe (elision after a letter, crasis between a vowel
and a consonant, a quotation mark elsewhere), a spacing ypogegrammeni (the iota subscript of
the letter before it), and spacing diacritics (the breathing of the vowel after them, the
crasis breathing of the vowel before them, an accent typed after its vowel, or elision).
"""

from __future__ import annotations

import collections

import numpy as np

from stoicheia.text import alphabet as A
from stoicheia.text.clusters import BREATHABLE, K_APOS, K_YPO

__all__ = ["resolve_context"]

_VOWELS = A.VOWEL_IDS
_LETTER_IS_BREATHABLE = np.zeros(A.NUM_LETTERS + A.NUM_LACUNA, bool)
_LETTER_IS_BREATHABLE[list(BREATHABLE)] = True
_SMOOTH_ONLY = A.dia_id(0, 1, 0, 0)  # the dia id of a smooth breathing alone


def _add_marks(dia: int, marks: int, dropped: collections.Counter) -> int:
    """The diacritic id ``dia`` with the fields of ``marks`` (a diacritic id) added where it has
    none; a field it already has keeps its first mark and counts ``extra_mark``."""
    cur = list(A.dia_fields(dia))
    for f, v in enumerate(A.dia_fields(marks)):
        if v:
            if cur[f]:
                dropped["extra_mark"] += 1
            else:
                cur[f] = v
    return A.dia_id(*cur)


def resolve_context(
    kind: np.ndarray,
    value: np.ndarray,
    sep: np.ndarray,
    is_letter: np.ndarray,
    letter_no: np.ndarray,
    chars: np.ndarray,
    dia: np.ndarray,
    dropped: collections.Counter,
) -> None:
    """Handle the clusters whose meaning depends on their neighbours (in place).

    * apostrophes: elision right after a letter, a quotation mark elsewhere;
    * spacing ypogegrammeni right after a letter: that letter's iota subscript
      (not a separator); elsewhere an unknown mark;
    * spacing diacritics: prefix marks of the following vowel or ρ when no letter
      precedes them ("᾿Αθῆναι"); a koronis/psili between a vowel and a consonant is the
      crasis breathing of that vowel ("κα᾽γώ" = κἀγώ, no word boundary); otherwise
      elision (psili/koronis alone) or unknown.
    """
    m = kind.shape[0]
    for j in np.flatnonzero(kind >= K_APOS).tolist():
        k = int(kind[j])
        after_letter = j > 0 and bool(is_letter[j - 1])
        if k == K_APOS:
            before_letter = j + 1 < m and bool(is_letter[j + 1])
            if after_letter and before_letter:
                # Crasis with the coronis typed as an apostrophe ("κα’γώ" = κἀγώ): a vowel
                # before, a consonant after, no space. Elision leaves a consonant before the
                # mark ("δ’", "ἀλλ’") or is followed by a vowel ("δι’ἐκείνων"), so it never
                # matches this pattern.
                li = int(letter_no[j])
                acc, br, io, di = (
                    A.dia_fields(int(dia[li])) if dia[li] < A.NUM_DIA else (0, 0, 0, 0)
                )
                if (
                    chars[li] in _VOWELS
                    and chars[li + 1] not in _VOWELS
                    and chars[li + 1] < A.NUM_LETTERS
                ):
                    if br == 0:
                        dia[li] = A.dia_id(acc, 1, io, di)
                    else:
                        dropped["extra_mark"] += 1
                    dropped["crasis"] += 1
                    sep[j] = False
                    continue
            dropped["elision" if after_letter else "punctuation_other"] += 1
        elif k == K_YPO:
            if after_letter:
                li = letter_no[j]
                acc, br, io, di = A.dia_fields(int(dia[li]))
                if io:
                    dropped["extra_mark"] += 1
                else:
                    dia[li] = A.dia_id(acc, br, 1, di)
            else:
                dropped["unknown_mark"] += 1
                sep[j] = True
        else:  # K_SPACING
            payload = int(value[j])
            before_letter = j + 1 < m and bool(is_letter[j + 1])
            if after_letter and before_letter and payload == _SMOOTH_ONLY:
                # Crasis written with a spacing koronis/psili after its vowel ("κα᾽γώ"):
                # a vowel before and a consonant after. Elision is always followed by a
                # vowel or a space ("δι᾽ἐκείνων"), so it cannot match this pattern.
                li = int(letter_no[j])
                acc, br, io, di = A.dia_fields(int(dia[li]))
                if chars[li] in _VOWELS and chars[li + 1] not in _VOWELS and br == 0:
                    dia[li] = A.dia_id(acc, 1, io, di)
                    sep[j] = False
                    continue
            if after_letter and payload != _SMOOTH_ONLY and A.dia_fields(payload)[1] == 0:
                # an accent, diaeresis or iota subscript typed as a spacing character after
                # its vowel ("τω῀ν", "τω~ν", "λο´γος"): that vowel's mark, inside the word
                li = int(letter_no[j])
                if chars[li] in _VOWELS and dia[li] < A.NUM_DIA:
                    dia[li] = _add_marks(int(dia[li]), payload, dropped)
                    sep[j] = False
                    dropped["spacing_mark"] += 1
                    continue
            if not after_letter and before_letter:
                li = letter_no[j] + 1
                if _LETTER_IS_BREATHABLE[chars[li]]:
                    dia[li] = _add_marks(int(dia[li]), payload, dropped)
                    continue
            dropped["elision" if payload == _SMOOTH_ONLY else "unknown_mark"] += 1
