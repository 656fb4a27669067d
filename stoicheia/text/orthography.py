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

__all__ = ["DIPHTHONGS", "choose_marks", "possible_marks"]

_VOWELS = A.VOWEL_IDS
_SHORT = frozenset(A.LETTERS.index(c) for c in "εο")
_IOTA_SUBSCRIPT = frozenset(A.LETTERS.index(c) for c in "αηω")
_DIAERESIS = frozenset(A.LETTERS.index(c) for c in "ιυ")
_RHO = A.LETTERS.index("ρ")
_UPSILON = A.LETTERS.index("υ")
#: (first, second) letter ids of the diphthongs whose second vowel takes the breathing
#: the diphthongs whose second vowel takes the breathing (``αἰ``, ``εὐ``)
DIPHTHONGS = ("αι", "ει", "οι", "υι", "αυ", "ευ", "ηυ", "ου", "ωυ")
_DIPHTHONGS = frozenset((A.LETTERS.index(a), A.LETTERS.index(b)) for a, b in DIPHTHONGS)
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


#: (grave ids, the acute ids with the same other marks)
_ACUTE_OF_GRAVE = (
    np.array([d for d in range(A.NUM_DIA) if A.dia_fields(d)[0] == 2]),
    np.array(
        [A.dia_id(1, *A.dia_fields(d)[1:]) for d in range(A.NUM_DIA) if A.dia_fields(d)[0] == 2]
    ),
)


def _words(boundary: np.ndarray) -> list[tuple[int, int]]:
    """``[start, end)`` of each run of letters joined by certain ``BOUNDARY_INTERNAL``."""
    out, start = [], 0
    for i, b in enumerate(boundary.tolist()):
        if b != A.BOUNDARY_INTERNAL:
            out.append((start, i + 1))
            start = i + 1
    if start < len(boundary):
        out.append((start, len(boundary)))
    return out


def choose_marks(
    chars: np.ndarray, boundary: np.ndarray, punct: np.ndarray, dia: np.ndarray, logp: np.ndarray
) -> np.ndarray:
    """Int ``(n,)`` dia ids: ``dia`` where it is ``>= 0`` (a letter whose marks are known), and for
    each ``-1`` the marks of highest ``logp`` that Greek writes there.

    ``chars``, ``boundary``, ``punct``: int ``(n,)`` planes of a stretch of text in reading
    order; ``logp``: float ``(n, NUM_DIA)`` log-probabilities of the ``dia`` head. Besides
    :func:`possible_marks`, for the letters chosen here:

    * no accent or breathing on the first vowel of a diphthong (``καί``, ``αἰ``);
    * at most one accent per word (a word is a run of letters joined by a certain
      ``BOUNDARY_INTERNAL``): none where a known letter of the word has one, else the accent
      on the one letter (or on none) that gives the word's letters the highest summed ``logp``;
    * a grave only on a word that another word follows without punctuation (before a
      punctuation mark and at the end of a text the accent of the last syllable stays acute),
      and there an acute on the last syllable turns grave (``τὸν λόγον``; an enclitic after
      it, which keeps the acute, is not provided for);
    * a word that certainly starts at a vowel gets its breathing on it, or on the diphthong's
      second vowel (``αἰ``), rough on an initial υ (``ὑπό``); an initial ρ takes the rough
      breathing (``ῥ``).

    Smyth, *Greek Grammar* §§ 9–14 (breathings), 154–157 (the grave), 149 (one accent a
    word; enclitics, which give a word a second accent, are not provided for). Raises
    ``ValueError`` as :func:`possible_marks`, or when ``logp`` is not ``(n, NUM_DIA)``.
    """
    chars = np.asarray(chars, dtype=np.int64)
    boundary = np.asarray(boundary, dtype=np.int64)
    punct = np.asarray(punct, dtype=np.int64)
    dia = np.asarray(dia, dtype=np.int64).copy()
    n = len(chars)
    if logp.shape != (n, A.NUM_DIA):
        raise ValueError(f"choose_marks: logp {logp.shape} must be (n, {A.NUM_DIA}) with n = {n}")
    todo = dia < 0
    if not todo.any():
        return dia
    logp = np.array(logp, dtype=np.float64)  # one copy: graves are folded into acutes below
    t = _tables()
    allowed = possible_marks(chars, boundary)
    fields = [A.dia_fields(d) for d in range(A.NUM_DIA)]
    accent = np.array([f[0] > 0 for f in fields])
    rough = np.array([f[1] == 2 for f in fields])
    # the first vowel of a diphthong takes no accent or breathing: they go on the second
    # (καί, αἰ), unless a typed diaeresis on the second splits them (ἀΐδιος). Diphthongs pair
    # the vowels left to right and never overlap: in αυι the υ closes αυ and the ι stands
    # alone (αὐΐαχος), so the υ, which bears the word's breathing, is not also taken for the
    # first vowel of υι (that left it no mark at all, and -inf - -inf, a NaN, below)
    closes_pair = np.zeros(n, bool)
    for i in range(n - 1):
        if closes_pair[i] or boundary[i] != A.BOUNDARY_INTERNAL:
            continue
        if (int(chars[i]), int(chars[i + 1])) not in _DIPHTHONGS:
            continue
        nd = int(dia[i + 1])
        if 0 <= nd < A.NUM_DIA and fields[nd][3]:
            continue  # a typed diaeresis: two syllables
        closes_pair[i + 1] = True
        if todo[i]:
            allowed[i] &= ~(accent | t["breathing"])
    for a, e in _words(boundary):
        last = e - 1
        # a grave needs a word after it, with no punctuation between
        open_end = boundary[last] in (A.BOUNDARY_WORD, A.BOUNDARY_UNKNOWN) and punct[last] in (
            A.PUNCT_NONE,
            A.PUNCT_UNKNOWN,
        )
        if not open_end:
            allowed[a:e] &= ~t["grave"]
            # the head's grave on the last syllable means an accent there: acute here
            ult = [i for i in range(a, e) if not any(int(c) in _VOWELS for c in chars[i + 1 : e])]
            for i in ult:
                logp[i, _ACUTE_OF_GRAVE[1]] = np.logaddexp(
                    logp[i, _ACUTE_OF_GRAVE[1]], logp[i, _ACUTE_OF_GRAVE[0]]
                )
        starts = a == 0 or boundary[a - 1] in _ENDS  # the word certainly starts at a
        if starts and e > a:
            c0 = int(chars[a])
            pair = e > a + 1 and (c0, int(chars[a + 1])) in _DIPHTHONGS
            bearer = a + 1 if pair else a
            if pair and not todo[a] and dia[a] < A.NUM_DIA and t["breathing"][dia[a]]:
                bearer = a  # the known first vowel has it (a diaeresis apart: ἀΐδιος)
            if c0 == _RHO and todo[a]:
                allowed[a] &= rough
            elif c0 in _VOWELS:
                if todo[bearer]:  # an initial υ (or υι) is always rough: ὑπό, υἱός
                    allowed[bearer] &= rough if c0 == _UPSILON else t["breathing"]
                for i in range(a, min(a + 2, e)):
                    if i != bearer and todo[i]:
                        allowed[i] &= ~t["breathing"]
        word = np.arange(a, e)
        mine = word[todo[a:e]]
        if not len(mine):
            continue
        known_accent = any(accent[dia[i]] for i in word if not todo[i] and dia[i] < A.NUM_DIA)
        masked = np.where(allowed[mine], logp[mine], -np.inf)
        none = np.where(accent[None, :], -np.inf, masked)
        best_none = none.max(axis=1)
        with_acc = np.where(accent[None, :], masked, -np.inf)
        best_acc = with_acc.max(axis=1)
        choice = None  # the letter (index into mine) that takes the word's accent
        if not known_accent:
            # what an accent gains on each letter: +inf where only accented marks are left,
            # -inf where none is (never inf - inf)
            gain = np.where(np.isfinite(best_acc), np.inf, -np.inf)
            np.subtract(best_acc, best_none, out=gain, where=np.isfinite(best_none))
            k = int(np.argmax(gain))
            if np.isfinite(gain[k]) and gain[k] > 0:
                choice = k
        # an acute on the last syllable becomes grave before another word (τὸν λόγον)
        followed = boundary[last] == A.BOUNDARY_WORD and punct[last] == A.PUNCT_NONE
        for k, i in enumerate(mine):
            row = with_acc[k] if k == choice else none[k]
            if not np.isfinite(row).any():  # nothing left (cannot happen: dia 0 is allowed)
                row = masked[k]
            dia[i] = int(np.argmax(row))
            acc, br, io, di = fields[dia[i]]
            if acc == 1 and followed and not any(int(c) in _VOWELS for c in chars[i + 1 : e]):
                dia[i] = A.dia_id(2, br, io, di)
    return dia
