"""Which child of an EpiDoc ``<choice>`` is the edition's reading text.

TEI's ``<choice>`` groups alternative encodings of one place of the text; the EpiDoc
Guidelines use it for these, and the reading text (what the EpiDoc stylesheets print in the
edition, the rest going to the apparatus) is:

==========================================  =====================================================
children                                    reading text
==========================================  =====================================================
``<sic>`` / ``<corr>``                      the correction (``<sic>`` with option
(an error of the scribe, corrected)         ``choice="original"``)
``<orig>`` / ``<reg>``                      the regularised form (``<orig>`` with option
(a spelling, regularised)                   ``choice="original"``)
``<abbr>`` / ``<expan>``                    the expansion (``<abbr>`` with option
(an abbreviation, expanded)                 ``expansions="abbreviated"``)
``<unclear>`` / ``<unclear>`` ...           the first, read as uncertain (its letters with a dot
(letters the editor cannot tell apart:      below): one uncertain reading, never both glued
``κ`` or ``χ``)                             together and never nothing
``<seg>`` / ``<seg>`` ... (or other         the first, its letters uncertain (dot below): the
elements: alternative readings of a         editor offers more than one reading of the place
stretch)
==========================================  =====================================================

The readings left out are counted ``reading_left_out:<name>`` by the reader, as for
``<app>``; the alternatives ``choice_alternatives``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PAIRED", "Choice", "choose"]

#: the children of the paired uses of ``<choice>`` (error, regularisation, abbreviation)
PAIRED = frozenset({"sic", "corr", "orig", "reg", "abbr", "expan"})


@dataclass(frozen=True)
class Choice:
    """The reading of one ``<choice>``: ``pick`` the index (among the element children given)
    of the child read as the text, ``None`` when there is none (an empty ``<choice>``);
    ``alternatives``: the children are alternative readings of one place (``<unclear>``,
    ``<seg>``...), so the reading is uncertain; ``left_out``: the indices of the others."""

    pick: int | None
    alternatives: bool
    left_out: tuple[int, ...]


def choose(
    names: list[str], *, choice: str = "regularised", expansions: str = "expanded"
) -> Choice:
    """The reading of a ``<choice>`` whose element children have the local ``names`` (in
    document order), under the EpiDoc reader's options ``choice`` (``"regularised"`` or
    ``"original"``) and ``expansions`` (``"expanded"`` or ``"abbreviated"``); see the module
    docstring. Raises ``ValueError`` for another option value."""
    if choice not in ("regularised", "original"):
        raise ValueError(f"choice={choice!r}: use 'regularised' or 'original'")
    if expansions not in ("expanded", "abbreviated"):
        raise ValueError(f"expansions={expansions!r}: use 'expanded' or 'abbreviated'")
    if not names:
        return Choice(None, False, ())
    if any(n in PAIRED for n in names):
        prefer = (
            ("reg", "corr", "expan", "orig", "sic", "abbr")
            if choice == "regularised"
            else ("orig", "sic", "reg", "corr", "expan", "abbr")
        )
        if expansions == "abbreviated":
            prefer = tuple(p for p in prefer if p != "expan") + ("expan",)
        pick = next(names.index(p) for p in prefer if p in names)
        return Choice(pick, False, tuple(i for i in range(len(names)) if i != pick))
    # alternative readings of one place: the first is the reading text, uncertain
    return Choice(0, True, tuple(range(1, len(names))))
