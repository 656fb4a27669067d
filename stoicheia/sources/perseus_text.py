"""A Perseus division's Beta Code as Unicode Greek, whole (:func:`unicode_text`) or a piece at
a time (:func:`unicode_chunks`: the same text, for a division too long to convert whole), and
its citation points (:func:`cite_parts`).

The conversion is :func:`stoicheia.sources.betacode.beta_to_unicode` (around the ``betacode``
library) with what :mod:`stoicheia.sources.perseus` adds: a word hyphenated at a line end is
joined (``hyphen_joined``), a Beta Code acute left on a consonant is the numeral sign
(``numeral_sign_from_acute``), and ``!`` inside square brackets is a lost letter
(``lost_letter_mark``).

**In pieces.** The Beta Code is cut after a whitespace character whose run of whitespace does
not follow a ``-`` (so never inside a hyphen joined across a line end). On such a cut every
step works alike on the parts and on the whole: the Beta Code codes and the tokens hold no
whitespace, the tokens are joined by one space (the parts' texts are joined by one space, an
empty one left out, as the whole's whitespace is collapsed and stripped), the final-sigma rule
and the numeral sign look only at the neighbours within a word, and NFC does not compose across
a space. Only ``[...!...]`` can span a cut: what follows a ``!`` inside a ``[`` not yet closed
waits for the next bracket (a ``]`` makes its ``!`` lost letters, a ``[`` leaves them).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping

from .betacode import beta_to_unicode
from .perseus_walk import CITE

__all__ = ["PIECE_CHARS", "cite_parts", "unicode_chunks", "unicode_text"]

#: characters of Beta Code converted at a time by :func:`unicode_chunks` (at least: a piece
#: ends at the next place it can be cut)
PIECE_CHARS = 1 << 16

_HYPHEN = re.compile(r"(?<=[A-Za-z=/\\|)(+])-[ \t]*\n\s*(?=[A-Za-z*])")
#: Lost letters written as '!' in Beta Code inside square brackets ('[!!!]')
_LOST_MARKS = re.compile(r"\[[^\[\]]*!+[^\[\]]*\]")
#: '/' left after a Greek consonant by the Beta Code conversion: the numeral sign
_STRAY_ACUTE = re.compile("(?<=[βγδζθκλμνξπρσςτφχψΒΓΔΖΘΚΛΜΝΞΠΡΣΤΦΧΨ])/")
#: a place to cut the Beta Code: after the first whitespace character of a run that does not
#: follow a hyphen (the cut is after the match)
_CUT = re.compile(r"[^\s-]\s")
_BRACKET = re.compile(r"[\[\]]")


def unicode_text(beta: str, expand: Mapping[int, str] | None, counts: Counter[str]) -> str:
    """The Unicode text of a division's Beta Code (module docstring): NFC, words separated by
    one space, no space at either end. ``expand``: the file's entity placeholders
    (:class:`~stoicheia.sources.perseus_entities.EntityTable`). Raises nothing."""
    text = _convert(beta, expand, counts)
    if "!" in text and "[" in text:
        text = _LOST_MARKS.sub(lambda m: _lost_marks(m, counts), text)
    return text


def unicode_chunks(
    beta: Iterable[str], expand: Mapping[int, str] | None, counts: Counter[str]
) -> Iterator[str]:
    """:func:`unicode_text` of the Beta Code given as chunks (``beta``, read as the text is
    read), as chunks of text (none empty) that read one after the other are that text, with
    the same counts (made in the same order, when the last chunk is read); converted about
    :data:`PIECE_CHARS` characters at a time, cut as the module docstring says (a piece
    without such a place grows until one comes)."""
    # each step's counts apart, added in the order of the steps once the text is read, as
    # the steps over the whole text make them
    steps: list[Counter[str]] = [Counter() for _ in range(5)]
    lost = _LostMarks(steps[4])
    started = False
    for piece in _pieces(beta):
        text = _convert(piece, expand, *steps[:4])
        if not text:
            continue
        out = lost.feed(" " + text if started else text)
        started = True
        if out:
            yield out
    out = lost.end()
    for step in steps:
        counts.update(step)
    if out:
        yield out


def cite_parts(beta: Iterable[str]) -> Iterator[tuple[str | None, str | None]]:
    """The Beta Code chunks ``beta`` taken apart at the citation points
    (:data:`~stoicheia.sources.perseus_walk.CITE`): ``(text, None)`` for text (never empty),
    ``(None, n)`` for a citation point, in order; a point cut across two chunks is whole."""
    carry = ""
    for chunk in beta:
        s = carry + chunk if carry else chunk
        start = s.rfind("\x03")
        if start >= 0 and s.find("\x04", start) < 0:
            s, carry = s[:start], s[start:]
        else:
            carry = ""
        parts = CITE.split(s)
        for i, part in enumerate(parts):
            if i % 2:
                yield None, part
            elif part:
                yield part, None
    if carry:  # never written by the walk (its points are whole): kept as text
        yield carry, None


def _pieces(beta: Iterable[str]) -> Iterator[str]:
    """The chunks re-cut into pieces of at least :data:`PIECE_CHARS` characters, each (but
    the last) ending at a cut of the module docstring."""
    held: list[str] = []
    n = 0
    for chunk in beta:
        held.append(chunk)
        n += len(chunk)
        if n < PIECE_CHARS:
            continue
        s = "".join(held)
        cut = _last_cut(s)
        if cut:
            yield s[:cut]
            s = s[cut:]
        held, n = [s], len(s)
    if n:
        yield "".join(held)


def _last_cut(s: str) -> int:
    """The last cut in ``s`` (the index after its whitespace character), else 0."""
    window = 4096
    while True:
        start = max(0, len(s) - window)
        found = list(_CUT.finditer(s, start))
        if found:
            return found[-1].end()
        if start == 0:
            return 0
        window *= 8


def _convert(
    beta: str,
    expand: Mapping[int, str] | None,
    counts: Counter[str],
    beta_counts: Counter[str] | None = None,
    repairs: Counter[str] | None = None,
    numerals: Counter[str] | None = None,
) -> str:
    """The conversion before the lost letters: hyphens joined, Beta Code, numeral signs (each
    step's counts in ``counts``, or in the next counter given)."""
    beta = _HYPHEN.sub(lambda m: _count(counts, "hyphen_joined"), beta)
    beta_counts = beta_counts if beta_counts is not None else counts
    text = beta_to_unicode(beta, expand, beta_counts, repairs=repairs)
    if "/" in text:
        counts = numerals if numerals is not None else counts
        # an acute that Beta Code could not put on a consonant ("<add>lb/</add>" in
        # Dionysius) is the numeral sign of a numeral letter (λβʹ), never a letter
        # division inside a word
        text, k = _STRAY_ACUTE.subn("\u02b9", text)  # U+0374 in NFC
        counts["numeral_sign_from_acute"] += k
    return text


class _LostMarks:
    """``[...!...]`` over text given in chunks, as :data:`_LOST_MARKS` on the whole: every
    ``!`` between a ``[`` and the next bracket, if that is a ``]``, is a lost letter. Gives
    out the text as far as it is final: all but what follows the first ``!`` inside a ``[``
    not yet closed (the other characters there never change)."""

    def __init__(self, counts: Counter[str]) -> None:
        self.counts = counts
        self.carry = ""  # from the first '!' inside an open bracket
        self.open = False  # inside a '[' at the start of the carry (or of the next text)

    def feed(self, text: str) -> str:
        s = self.carry + text if self.carry else text
        out: list[str] = []
        i = 0
        for m in _BRACKET.finditer(s):
            j = m.start()
            inside = s[i:j]
            if self.open and s[j] == "]" and "!" in inside:
                self.counts["lost_letter_mark"] += inside.count("!")
                inside = inside.replace("!", ".")
            out.append(inside)
            i = j
            self.open = s[j] == "["
        tail = s[i:]
        bang = tail.find("!") if self.open else -1
        if bang >= 0:
            out.append(tail[:bang])
            self.carry = tail[bang:]
        else:
            out.append(tail)
            self.carry = ""
        return "".join(out)

    def end(self) -> str:
        out, self.carry = self.carry, ""
        return out


def _lost_marks(m: re.Match[str], counts: Counter[str]) -> str:
    """``[!!!]``: each '!' inside square brackets is a lost letter, written as a Leiden dot."""
    counts["lost_letter_mark"] += m.group().count("!")
    return m.group().replace("!", ".")


def _count(counts: Counter[str], key: str) -> str:
    counts[key] += 1
    return ""
