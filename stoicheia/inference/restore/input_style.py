"""The input's style, for printing fills as the input prints its letters: capitals or lower
case, with or without accents and breathings, words spaced or in scriptio continua
(:class:`InputStyle`, :func:`input_style`, :func:`styled`), and whether a gap sits in a
capital stretch of a mixed text (:func:`near_capitals`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from stoicheia.text.leiden_segments import DOT_BELOW

_GREEK = re.compile("[\u0370-\u03ff\u1f00-\u1fff]")


@dataclass(frozen=True)
class InputStyle:
    """How the input is written, for printing fills in its style: ``capitals`` (no lower-case
    Greek letter: fills in capitals without marks), ``accented`` (some Greek letter bears an
    accent, breathing, diaeresis or iota subscript: else fills without marks), ``spaced`` (words
    divided by spaces: else fills without spaces, as scriptio continua)."""

    capitals: bool
    accented: bool
    spaced: bool


def input_style(text: str) -> InputStyle:
    """The :class:`InputStyle` of ``text`` (Leiden notation; the brackets' insides count too)."""
    nfd = unicodedata.normalize("NFD", text)
    lower = upper = accented = False
    greek_base = False
    for ch in nfd:
        if unicodedata.combining(ch):
            accented |= greek_base and ch != DOT_BELOW
            continue
        greek_base = bool(_GREEK.match(ch)) and ch.isalpha()
        lower |= greek_base and ch.islower()
        upper |= greek_base and ch.isupper()
    return InputStyle(upper and not lower, accented, bool(re.search(r"\S\s+\S", text.strip())))


#: Greek letters read on each side of a gap to decide whether it sits in a capital stretch
NEAR_LETTERS = 8


def _nearest_word(chars: Any, near: int) -> list[str]:
    """The Greek letters of the nearest word in ``chars`` (read away from a gap): up to the
    first space after a letter, across brackets and signs, at most ``near``."""
    got: list[str] = []
    for ch in chars:
        if ch.isspace() and got:
            break
        if ch.isalpha() and _GREEK.match(ch):
            got.append(ch)
            if len(got) == near:
                break
    return got


def near_capitals(text: str, start: int, end: int, near: int = NEAR_LETTERS) -> bool | None:
    """Whether the Greek letters of the words nearest ``text[start:end]`` on each side (at
    most ``near`` each, across brackets and signs) are all capitals: a gap in a capital stretch
    of a mixed text (a heading, a name in diplomatic capitals). A gap inside a word follows
    that word's letters alone (the ones on the sides the gap touches). ``None`` when no Greek
    letter is near."""
    # a gap inside a word (no space between it and the letters on a side) follows that word:
    # ΚΑΤΑ[.......] | Φαβία, Φαχθοβάρ [..]ΑΧ
    inside = _word_part(reversed(text[:start]), near) + _word_part(text[end:], near)
    # a lone letter (an abbreviation, a numeral: ἀνδρῶν Λ [---]) says nothing of the stretch
    seen = inside or [
        ch
        for word in (_nearest_word(reversed(text[:start]), near), _nearest_word(text[end:], near))
        if len(word) > 1
        for ch in word
    ]
    if not seen:
        return None
    return all(ch.isupper() for ch in seen)


def _word_part(chars: Any, near: int) -> list[str]:
    """The Greek letters (at most ``near``) of ``chars`` before the first space: the rest of the
    word a gap sits in, read away from it."""
    got: list[str] = []
    for ch in chars:
        if ch.isspace() or len(got) == near:
            break
        if ch.isalpha() and _GREEK.match(ch):
            got.append(ch)
    return got


def styled(s: str, style: InputStyle | None) -> str:
    """``s`` (rendered Greek) in the input's ``style``: marks only where the input has them
    (a dot below is kept), capitals in a capital text, no spaces in scriptio continua."""
    if style is None:
        return s
    if style.capitals or not style.accented:
        s = "".join(
            ch
            for ch in unicodedata.normalize("NFD", s)
            if not unicodedata.combining(ch) or ch == DOT_BELOW
        )
    if style.capitals:
        s = s.upper()
    if not style.spaced:
        s = s.replace(" ", "")
    return unicodedata.normalize("NFC", s)


__all__ = ["NEAR_LETTERS", "InputStyle", "input_style", "near_capitals", "styled"]
