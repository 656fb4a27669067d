"""What Greek allows as a gap's letters where the letters typed around it decide
(:func:`letter_rules`): a consonant before an elision mark, a word break or a diphthong's first
vowel before a breathing, a vowel for a word of one letter.
"""

from __future__ import annotations

import numpy as np

from stoicheia.inference.restore.gaps import Gap, Item
from stoicheia.inference.restore.word_division import LONE_VOWELS
from stoicheia.text import alphabet as A
from stoicheia.text.orthography import DIPHTHONGS

#: the elision mark as scholars type it (right single quotation mark, apostrophe, modifier
#: letter apostrophe, Greek koronis/psili)
ELISION = frozenset("’'ʼ᾽᾿")
_VOWEL_IDS = np.array([c in A.VOWELS for c in A.LETTERS])
#: the vowels of a word of one letter (ὁ, ἡ, ἤ, ὦ, ἅ, ἕ; never ι or υ: word_division)
_LONE_IDS = np.array([c in LONE_VOWELS for c in A.LETTERS])
#: (first vowel, second vowel) of the diphthongs, whose second vowel takes the breathing
_DIPHTHONG_FIRST = {
    A.LETTERS.index(second): np.array([f + second in DIPHTHONGS for f in A.LETTERS])
    for second in "ιυ"
}


def _whole_word(text: str, items: list[Item], pos: int, g: Gap) -> bool:
    """Whether gap ``g`` (item ``pos``) stands between word breaks, no elision mark after it."""
    prev = items[pos - 1] if pos > 0 else None
    starts = prev is None or (
        prev.gap is None
        and prev.values is not None
        and prev.values[1] in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE)
    )
    ends = g.end_boundary in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE)
    return starts and ends and text[g.end : g.end + 1] not in ELISION


def letter_rules(text: str, items: list[Item], gaps: list[Gap]) -> None:
    """Set each gap of known width's ``last_letters`` (and ``end_boundary``) where the letters
    typed around it decide what Greek allows (in place):

    * before an elision mark (``δ’``, ``[..]’``) the last letter is a consonant: elision drops
      a vowel;
    * right before a letter of the same word that bears a breathing, the gap ends a word
      (``[...]ἐν``: its ``end_boundary`` becomes a word break), unless that letter is the ι or
      υ of a diphthong (``[.]ἱ``, ``ε̣ὐχὴν``): then the last letter is the diphthong's first
      vowel;
    * a word of one letter (a gap of one letter between word breaks, no elision mark after it)
      is a vowel of α ε η ο ω (ὁ, ἡ, ἤ, ὦ; never ι or υ); for a gap of uncertain width between
      word breaks, a fill of one letter (its ``one_letter``).
    """
    for pos, it in enumerate(items):
        if it.gap is None:
            continue
        g = gaps[it.gap]
        if not g.fixed_width:
            if g.min_letters <= 1 and _whole_word(text, items, pos, g):
                g.one_letter = _LONE_IDS  # ([---] alone was filled [ς])
            continue
        allowed = np.ones(A.NUM_LETTERS, bool)
        elided = text[g.end : g.end + 1] in ELISION
        if elided:
            allowed &= ~_VOWEL_IDS
        nxt = items[pos + 1] if pos + 1 < len(items) else None
        if (
            g.end_boundary == A.BOUNDARY_INTERNAL
            and nxt is not None
            and nxt.gap is None
            and nxt.values is not None
            and nxt.values[2] < A.NUM_DIA
            and A.dia_fields(nxt.values[2])[1] > 0
        ):
            if nxt.values[0] in _DIPHTHONG_FIRST:
                allowed &= _DIPHTHONG_FIRST[nxt.values[0]]
            else:
                g.end_boundary = A.BOUNDARY_WORD
        if g.max_letters == 1 and _whole_word(text, items, pos, g):
            allowed &= _LONE_IDS
        if not allowed.all() and allowed.any():
            g.last_letters = allowed


__all__ = ["ELISION", "letter_rules"]
