"""The words a restoration may print: no restored letter stands alone as a word Greek never
writes.

The boundary head decides, letter by letter, where the restored letters' words end; on its own
it may end a word after one consonant, which prints a word of one letter that Greek does not
have: a lone final sigma (``τοῦ [ς π]``, ``[ς καὶ κ]``), a lone ``π`` or ``κ``. The words of one
letter are (Smyth, *Greek Grammar* §§ 70-75 on elision; the article, §1118):

* a vowel of α ε η ο ω: the article ὁ, ἡ, the relative ὅ, ἥ, ἅ, ἤ "or", ὦ, the pronoun ἕ,
  ...; not ι or υ, which Greek never writes alone (no word of the Perseus and PROIEL treebanks'
  dev sets, ``../shared/corpus/ud``, is a lone ι or υ; of their 902 words of one letter 495
  are ο, 214 η, 45 ω, 24 α and 124 elided consonants);
* an elided particle or pronoun, which stands only before a word that begins with a vowel
  (elision drops a final vowel before one): δ’ (δέ), τ’ and θ’ (τε), γ’ (γε), μ’ (με). The
  planes carry no elision mark, so these print without their apostrophe. Not σ’ (σέ): a word
  of one σ prints as a final sigma, ``ς``, which no edition writes alone.

:func:`no_lone_consonants` removes, among the word breaks the head chose, those that leave a
restored letter alone as any other word: the break after it or the one before it, whichever
the head holds less likely (its log-probability of no break there is higher), until none is
left. A break the input gives (a typed space, the end of a bracket) is never removed, and a
letter the input gives is left as typed.

A fill taken whole from a parallel (:mod:`~.whole_readings`, the ``parallels`` decoder) prints
with its source's word division, not the head's: :func:`lone_in_parallel` tells where that
division, between the text's own breaks around the gap, leaves a restored letter alone as such
a word (``πρὸ [...]`` and ``πρὸς δὲ``: ``πρὸ [ς δὲ]``). Its first letter would have to join
the typed word before a typed space: the parallel disagrees with the text's word division, and
its fill is left out of the readings (counted: ``GapParallels.lone_words``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stoicheia.text import alphabet as A

#: the vowels Greek writes as a word of one letter (module docstring): not ι, υ
LONE_VOWELS = "αεηοω"
_VOWELS = frozenset(A.LETTERS.index(c) for c in LONE_VOWELS)
_ANY_VOWEL = A.VOWEL_IDS
#: consonants of one-letter elided words (before a vowel only): δ’ τ’ θ’ γ’ μ’
ELIDED = frozenset(A.LETTERS.index(c) for c in "δτθγμ")
_ENDS = (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE)


def lone_word_allowed(letter: int, next_letter: int | None) -> bool:
    """Whether Greek writes letter id ``letter`` as a word of one letter when the next word
    begins with letter id ``next_letter`` (``None``: no next word): a vowel of α ε η ο ω, or
    an elided consonant before a vowel (module docstring)."""
    if letter in _VOWELS:
        return True
    return letter in ELIDED and next_letter is not None and next_letter in _ANY_VOWEL


def no_lone_consonants(
    chans: list[tuple[int, int, int, int, int]],
    restored: list[bool],
    free: list[bool],
    log_boundary: np.ndarray,
) -> int:
    """Remove word breaks that leave a restored letter alone as a word Greek does not write
    (module docstring), in place on ``chans`` (per letter ``(char, boundary, dia, cap, punct)``;
    a removed break becomes ``BOUNDARY_INTERNAL`` with no punctuation). ``restored[i]``: letter
    ``i`` is the model's; ``free[i]``: the break after letter ``i`` was the head's choice;
    ``log_boundary``: float ``(n, >= 1)`` the boundary head's log-probabilities, column
    ``BOUNDARY_INTERNAL`` read. A letter at index 0 (the start of a window, which may be
    inside a word) is not judged. Returns the number of breaks removed."""
    n = len(chans)
    free = list(free)
    removed = 0
    changed = True
    while changed:
        changed = False
        for a in range(1, n):
            if not restored[a] or chans[a - 1][1] not in _ENDS or chans[a][1] not in _ENDS:
                continue
            nxt = chans[a + 1][0] if a + 1 < n else None
            if lone_word_allowed(chans[a][0], nxt):
                continue
            sides = [j for j in (a, a - 1) if free[j] and j + 1 < n]
            if not sides:
                continue
            j = max(sides, key=lambda j: float(log_boundary[j, A.BOUNDARY_INTERNAL]))
            c, _, d, cap, _ = chans[j]
            chans[j] = (c, A.BOUNDARY_INTERNAL, d, cap, A.PUNCT_NONE)
            free[j] = False
            removed += 1
            changed = True
    return removed


def lone_in_parallel(index: Any, found: Any, fill: Any) -> int | None:
    """The restored letter (its place in the fill, 0-based) that ``fill`` (a
    :class:`~stoicheia.inference.parallels.search.FillParallels` of ``found``, a
    :class:`~stoicheia.inference.parallels.search.GapParallels`) leaves alone as a word Greek
    does not write (:func:`lone_word_allowed`) when printed as its best parallel prints it (the
    parallel's word breaks inside the fill, ``index.flow``; the text's breaks before and after
    the gap, ``found.breaks``); None where it leaves none, or where it is not known: the text
    gives no word division (``found.breaks`` None), nothing stands before the gap, or the fill
    has no parallel to print from (it is then printed by the heads, :func:`no_lone_consonants`).
    """
    breaks = getattr(found, "breaks", None)
    pars = getattr(fill, "parallels", None)
    if breaks is None or not pars or index is None:
        return None
    letters = np.asarray(fill.letters, dtype=np.int64)
    w = len(letters)
    pos = int(pars[0].pos)
    flow = np.asarray(index.flow[pos : pos + w], dtype=np.int64) % 4
    left = np.asarray(breaks.left)
    before = [int(left[-1]) if len(left) else None] + [int(b) for b in flow[: w - 1]]
    after = [int(b) for b in flow[: w - 1]] + [int(breaks.end)]
    right = np.asarray(found.right)
    for i in range(w):
        if before[i] not in _ENDS or after[i] not in _ENDS:
            continue
        nxt = int(letters[i + 1]) if i + 1 < w else (int(right[0]) if len(right) else None)
        if not lone_word_allowed(int(letters[i]), nxt):
            return i
    return None


__all__ = ["ELIDED", "LONE_VOWELS", "lone_in_parallel", "lone_word_allowed", "no_lone_consonants"]
