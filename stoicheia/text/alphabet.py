"""The six letter planes: their id spaces, shared by every module.

A text of ``n`` letter slots becomes six aligned ``uint8`` arrays of shape ``(n,)``
(see :mod:`stoicheia.text.planes`). This module only names the ids, so that the readers,
the noising, the model and the metrics agree on them.
"""

from __future__ import annotations

from collections.abc import Iterable

#: The 24 letters of the classical alphabet, in order; index = ``chars`` id.
LETTERS = "αβγδεζηθικλμνξοπρστυφχψω"
NUM_LETTERS = 24
#: The seven vowels, and their ``chars`` ids.
VOWELS = "αεηιουω"
VOWEL_IDS = frozenset(LETTERS.index(c) for c in VOWELS)
#: Their capitals (U+0391..U+03A9 without the unassigned U+03A2).
CAPITALS = "".join(chr(0x391 + i + (1 if i >= 17 else 0)) for i in range(NUM_LETTERS))

# --- chars plane (model input ids 0..26, target ids 0..25) -------------------------------
MASK = 24  #: input id of a hidden letter; also the stored ``chars`` of a real-lacuna slot
BLANK = 25  #: target id of an elastic slot that holds no letter (unknown-width lacuna)
PAD = 26  #: input id of a padding position (never a target)
NUM_CHAR_INPUTS = 27
NUM_CHAR_TARGETS = 26  # 24 letters + MASK id unused as target + BLANK; head has 27 outputs

# --- boundary plane -----------------------------------------------------------------------
BOUNDARY_INTERNAL = 0
BOUNDARY_WORD = 1  #: last letter of a word
BOUNDARY_SENTENCE = 2  #: last letter of a sentence (and of every record)
BOUNDARY_UNKNOWN = 3  #: not recorded by the source, or hidden by the noising
NUM_BOUNDARY = 3

# --- diacritics plane: ((accent*3 + breathing)*2 + iota_subscript)*2 + diaeresis ---------
ACCENTS = ("none", "acute", "grave", "circumflex")
BREATHINGS = ("none", "smooth", "rough")
NUM_DIA = 48
DIA_UNKNOWN = 48

# --- capitalisation plane -----------------------------------------------------------------
NUM_CAP = 2
CAP_UNKNOWN = 2

# --- punctuation plane: the mark that follows the letter ---------------------------------
PUNCT_NONE = 0
PUNCT_COMMA = 1
PUNCT_RAISED_DOT = 2  #: ano teleia, U+0387 / U+00B7
PUNCT_COLON = 3
PUNCT_FULL_STOP = 4
PUNCT_QUESTION = 5  #: U+037E, ';', '?', '!'
NUM_PUNCT = 6
PUNCT_UNKNOWN = 6

# --- lacuna plane: slots of a *real* lacuna (a gap in the source itself) ----------------
LACUNA_NONE = 0  #: a letter that the source has
LACUNA_LOST = 1  #: one lost letter of a lacuna of known width (one slot per letter)
#: one slot per letter of a lacuna whose width is an estimate: ``ca. N`` gives N slots, a
#: range ``a..b`` gives ``b`` slots (the model may fill the excess with BLANK)
LACUNA_ABOUT = 2
#: the stand-in of a lacuna of unknown width (``[---]``, ``<gap extent="unknown"/>``, lost
#: lines): ONE slot stands for the whole gap; a restorer extends it with BLANK-able slots
LACUNA_UNKNOWN = 3
NUM_LACUNA = 4

PLANES = ("chars", "boundary", "dia", "cap", "punct", "lacuna")
#: The id that marks a plane value as not recorded, per plane (chars has none).
UNKNOWN = {
    "boundary": BOUNDARY_UNKNOWN,
    "dia": DIA_UNKNOWN,
    "cap": CAP_UNKNOWN,
    "punct": PUNCT_UNKNOWN,
}

IGNORE_INDEX = -100  #: target value that the losses and metrics skip


def dia_id(accent: int, breathing: int, iota_subscript: int, diaeresis: int) -> int:
    """Pack the four diacritic fields into one ``dia`` id in ``[0, 48)``.

    ``accent`` in 0..3 (none/acute/grave/circumflex), ``breathing`` in 0..2
    (none/smooth/rough), ``iota_subscript`` and ``diaeresis`` in 0..1.
    Formula: ``((accent*3 + breathing)*2 + iota_subscript)*2 + diaeresis``.
    """
    return ((accent * 3 + breathing) * 2 + iota_subscript) * 2 + diaeresis


def dia_fields(dia: int) -> tuple[int, int, int, int]:
    """Inverse of :func:`dia_id`: ``(accent, breathing, iota_subscript, diaeresis)``.

    Raises ``ValueError`` if ``dia`` is outside ``[0, 48)``.
    """
    if not 0 <= dia < NUM_DIA:
        raise ValueError(f"diacritics id {dia} outside [0, {NUM_DIA})")
    diaeresis = dia % 2
    iota = (dia // 2) % 2
    breathing = (dia // 4) % 3
    accent = dia // 12
    return accent, breathing, iota, diaeresis


def spell(ids: Iterable[int]) -> str:
    """The base letters (lower case, medial sigma) of letter ids ``ids`` (ints or an int array
    in ``[0, NUM_LETTERS)``), as one string: how fills, candidates and truths are compared.
    Raises ``IndexError`` for an id outside ``LETTERS``."""
    return "".join(LETTERS[int(i)] for i in ids)
