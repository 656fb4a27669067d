"""The segments a Leiden reading is made of, and the errors of the notation.

:func:`stoicheia.text.leiden.parse_leiden` cuts a text into :class:`Text`, :class:`Lacuna`,
:class:`Editorial` and :class:`Comment` segments (frozen dataclasses, spans in the parsed
string); a fault in the notation is a :class:`LeidenError` (a too wide counted lacuna a
:class:`LacunaTooWideError`). Also here: the constants every reader of a reading uses
(:data:`DOT_BELOW`, :data:`MAX_LACUNA_WIDTH`, :data:`REASONS`) and the two helpers that build
a segment's text from the characters between its signs (:func:`strip_dots`: the dots below
into ``uncertain`` flags; :func:`marks_onto_next_letter`: marks typed right after an opening
bracket onto their letter).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = [
    "DOT_BELOW",
    "MAX_LACUNA_WIDTH",
    "REASONS",
    "Comment",
    "Editorial",
    "Lacuna",
    "LacunaTooWideError",
    "LeidenError",
    "Segment",
    "Text",
    "marks_onto_next_letter",
    "strip_dots",
]

#: Values of :attr:`Editorial.reason`.
REASONS = ("lost", "abbreviation", "omitted", "erased", "surplus", "partly_lost", "added")
#: The combining dot below (U+0323): an uncertain, damaged letter.
DOT_BELOW = "\u0323"

#: The widest lacuna, in letters, that a number in ``[ ]`` may give (``[.N.]``, ``[-ca.N-]``,
#: ``[N±M]``, ``[.a-b.]``). Editions count lost letters up to a few hundred (the widest in
#: ../shared/corpus is 915); a longer loss is counted in lines and written ``[---]``.
MAX_LACUNA_WIDTH = 10_000


class LeidenError(ValueError):
    """Leiden notation that cannot be read: unbalanced or nested brackets, an empty bracket,
    a lacuna of width 0, a bad ``N±M``.

    ``position`` is the 0-based character offset in the parsed string; ``str(error)`` reads
    ``"Leiden notation at character <position>: <message>"`` followed by the context.
    """

    def __init__(self, text: str, position: int, message: str) -> None:
        self.position = int(position)
        self.message = message
        lo = max(0, position - 15)
        context = text[lo : position + 15]
        super().__init__(f"Leiden notation at character {position}: {message} (near {context!r})")


class LacunaTooWideError(LeidenError):
    """A counted lacuna wider than :data:`MAX_LACUNA_WIDTH` letters; ``width`` is the widest
    reading in letters and ``notation`` the bracket as written."""

    def __init__(self, text: str, position: int, message: str, width: int, notation: str) -> None:
        super().__init__(text, position, message)
        self.width = width
        self.notation = notation


@dataclass(frozen=True)
class Text:
    """A run of text as read on the stone (letters, spaces, punctuation).

    ``text`` is NFC with the dots below removed; ``uncertain`` has one bool per code point
    of ``text`` (True for the code points of a letter written with a dot below).
    ``start``/``end``: the span in the parsed string (0-based, end exclusive).
    """

    text: str
    uncertain: tuple[bool, ...]
    start: int
    end: int


@dataclass(frozen=True)
class Lacuna:
    """Letters lost in the source, whose identity nobody knows.

    ``min_width``/``max_width`` in letters (``max_width is None``: unknown width, then
    ``min_width`` is 0, or the least width the notation states: ``[-min.2-]``);
    ``approximate`` is True when the editor's count is an estimate ("ca."), in which case
    ``min_width == max_width`` is that estimate.
    """

    min_width: int
    max_width: int | None
    approximate: bool
    start: int
    end: int

    @property
    def known_width(self) -> bool:
        """True for an exact width (``min_width == max_width`` and not approximate)."""
        return self.max_width == self.min_width and not self.approximate


@dataclass(frozen=True)
class Editorial:
    """Letters that an editorial sign marks; ``reason`` is one of :data:`REASONS`.

    ``"lost"``: supplied by the editor in a lacuna (``[ ]``); ``"abbreviation"``: the
    expansion of an abbreviation (``( )``); ``"omitted"``: left out by the scribe, added by
    the editor (``⟨ ⟩``); ``"erased"``: erased in antiquity but read (``⟦ ⟧``);
    ``"surplus"``: written in error by the scribe (``{ }``); ``"partly_lost"``: half brackets.
    ``text``/``uncertain``/``start``/``end`` as in :class:`Text`; the span includes the
    brackets, except for ``"lost"``, whose span is the supplement inside its ``[ ]``.
    """

    text: str
    reason: str
    uncertain: tuple[bool, ...]
    start: int
    end: int


@dataclass(frozen=True)
class Comment:
    """An editor's remark that is not text: ``(?)``, ``(!)``, ``(sic)``, ``vac.``."""

    text: str
    start: int
    end: int


Segment = Text | Lacuna | Editorial | Comment


def strip_dots(s: str) -> tuple[str, tuple[bool, ...], int]:
    """NFC ``s`` without dots below, the per-code-point uncertain flags, and the number of
    dots below that sat on no letter (illegible traces)."""
    if DOT_BELOW not in s and unicodedata.is_normalized("NFC", s):
        return s, (False,) * len(s), 0
    out: list[str] = []
    flags: list[bool] = []
    orphans = 0
    for cl in re.findall(
        r"[^\u0300-\u036f][\u0300-\u036f]*|[\u0300-\u036f]+", unicodedata.normalize("NFD", s)
    ):
        dotted = DOT_BELOW in cl
        body = cl.replace(DOT_BELOW, "")
        if dotted and (not body or not body[0].isalpha()):
            orphans += cl.count(DOT_BELOW)
            if body.strip():
                body_nfc = unicodedata.normalize("NFC", body)
                out.append(body_nfc)
                flags.extend([False] * len(body_nfc))
            continue
        nfc = unicodedata.normalize("NFC", body)
        out.append(nfc)
        flags.extend([dotted] * len(nfc))
    return "".join(out), tuple(flags), orphans


def marks_onto_next_letter(text: str, a: int, b: int) -> str:
    """``text[a:b]`` with the combining marks at its start moved after the letter that follows
    them (Unicode puts a mark after its letter: marks typed right after an opening bracket
    would otherwise join the letter before the bracket).

    A leading run that holds a dot below is left as it is (:func:`strip_dots` reports a dot
    on no letter). Raises :class:`LeidenError` at ``a`` when no letter follows the marks.
    """
    raw = text[a:b]
    k = 0
    while k < len(raw) and unicodedata.combining(raw[k]):
        k += 1
    if k == 0 or DOT_BELOW in raw[:k]:
        return raw
    if k < len(raw) and raw[k].isalpha():
        return raw[k] + raw[:k] + raw[k + 1 :]
    names = ", ".join(unicodedata.name(c, f"U+{ord(c):04X}").lower() for c in raw[:k])
    raise LeidenError(
        text,
        a,
        f"a combining mark ({names}) with no letter inside the bracket to sit on; "
        "type it after the letter it belongs to, or remove it",
    )
