"""Which diacritics a letter can carry where it stands: the rules of polytonic orthography.

A restored letter takes its accent, breathing, iota subscript and diaeresis from the model's
``dia`` head; the head scores each slot on its own, so its best guess can be a mark that Greek
never writes there (a grave on a consonant, ``ν̀``; a breathing inside a word, ``αἀ``). The
renderer picks the best mark among those :func:`possible_marks` allows. The rules (Smyth,
*Greek Grammar* §§ 9–14, 149–157, 4–5; the usage of modern editions):

* accents (acute, grave, circumflex) only on vowels; the circumflex never on ε or ο;
* a grave only on a word's last syllable: no vowel may follow it in the same word (the
  second vowel of a diphthong carries the accent, so ``καὶ``, ``τοὺς`` pass);
* a breathing only on a word's first vowel or on its second where the first two letters make a
  diphthong (``αἰ``, ``εὐ``, ``οὐ``, ``υἱ``, ...), and on an initial ρ (rough: ``ῥ``);
* the iota subscript only under α, η, ω; the diaeresis only on ι and υ.

Where the input does not say whether a word ends (boundary UNKNOWN, e.g. scriptio continua),
the rules that need it allow the mark, so nothing the text might hold is forbidden. Not
covered, and so never restored: the coronis of crasis (``κἀγώ``) and the smooth breathing of a
doubled ρ (``ῤῥ``), which look like breathings inside a word.
"""

from __future__ import annotations

import functools

import numpy as np

from stoicheia.text import alphabet as A

__all__ = ["possible_marks"]

_VOWELS = frozenset(A.LETTERS.index(c) for c in "αεηιουω")
_SHORT = frozenset(A.LETTERS.index(c) for c in "εο")
_IOTA_SUBSCRIPT = frozenset(A.LETTERS.index(c) for c in "αηω")
_DIAERESIS = frozenset(A.LETTERS.index(c) for c in "ιυ")
_RHO = A.LETTERS.index("ρ")
#: (first, second) letter ids of the diphthongs whose second vowel takes the breathing
_DIPHTHONGS = frozenset(
    (A.LETTERS.index(a), A.LETTERS.index(b))
    for a, b in ("αι", "ει", "οι", "υι", "αυ", "ευ", "ηυ", "ου", "ωυ")
)
_ENDS = (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE)


@functools.lru_cache(maxsize=1)
def _tables() -> dict[str, np.ndarray]:
    """Bool ``(NUM_LETTERS, NUM_DIA)`` tables: ``letter`` the marks a letter can carry somewhere,
    and the field masks over dia ids ``breathing``, ``grave`` (the ids with that mark)."""
    letter = np.zeros((A.NUM_LETTERS, A.NUM_DIA), bool)
    fields = [A.dia_fields(d) for d in range(A.NUM_DIA)]
    for c in range(A.NUM_LETTERS):
        for d, (acc, br, io, di) in enumerate(fields):
            ok = True
            if acc and (c not in _VOWELS or (acc == 3 and c in _SHORT)):
                ok = False
            if br and not (c in _VOWELS or (c == _RHO and br == 2)):
                ok = False
            if io and c not in _IOTA_SUBSCRIPT:
                ok = False
            if di and c not in _DIAERESIS:
                ok = False
            letter[c, d] = ok
    breathing = np.array([f[1] > 0 for f in fields])
    grave = np.array([f[0] == 2 for f in fields])
    return {"letter": letter, "breathing": breathing, "grave": grave}


def possible_marks(chars: np.ndarray, boundary: np.ndarray) -> np.ndarray:
    """Bool ``(n, NUM_DIA)``: True where letter ``i`` of ``chars`` can carry dia id ``d``.

    ``chars``: int ``(n,)`` letter ids 0..23 of a stretch of text in reading order (the start of
    the array is taken as the start of a word); ``boundary``: int ``(n,)`` the boundary after each
    letter (``BOUNDARY_INTERNAL``/``WORD``/``SENTENCE``/``UNKNOWN``). Every row allows dia id 0
    (no mark). Rules in the module docstring. Raises ``ValueError`` when the two arrays differ in
    length or a letter id is outside 0..23.
    """
    chars = np.asarray(chars, dtype=np.int64)
    boundary = np.asarray(boundary, dtype=np.int64)
    n = len(chars)
    if boundary.shape != chars.shape or chars.ndim != 1:
        raise ValueError(
            f"possible_marks: chars {chars.shape} and boundary {boundary.shape} must be (n,) alike"
        )
    if n and (chars.min() < 0 or chars.max() >= A.NUM_LETTERS):
        raise ValueError("possible_marks: letter ids must be in 0..23 (no MASK, BLANK or PAD)")
    t = _tables()
    out = t["letter"][chars].copy()
    ends = np.isin(boundary, _ENDS)
    unknown = boundary == A.BOUNDARY_UNKNOWN
    internal = ~(ends | unknown)  # letter i and i + 1 are in one word, for certain
    may_start = np.ones(n, bool)  # letter i may begin a word
    may_start[1:] = ~internal[:-1]
    second = np.zeros(n, bool)  # the second letter of a word that opens with a diphthong
    for i in range(1, n):
        pair = (int(chars[i - 1]), int(chars[i]))
        second[i] = may_start[i - 1] and not ends[i - 1] and pair in _DIPHTHONGS
    out[~(may_start | second)] &= ~t["breathing"]
    # a grave needs no vowel after it in its word: vowel_later[i] = internal[i] and
    # (vowel[i + 1] or vowel_later[i + 1])
    vowel = np.isin(chars, list(_VOWELS))
    vowel_later = np.zeros(n, bool)
    for i in range(n - 2, -1, -1):
        vowel_later[i] = internal[i] and (vowel[i + 1] or vowel_later[i + 1])
    out[vowel_later] &= ~t["grave"]
    return out
