"""An EpiDoc ``<gap>`` as a Leiden lacuna.

==================================  ===========================================================
``<gap unit="character"             ``[....]`` one lost letter per dot: a real lacuna of known
quantity="N"/>``                    width (``reason="illegible"`` too: the letters are unknown)
``precision="low"`` (+ N)           ``[-ca.N-]``: about N; ``atLeast``/``atMost`` ``[.a-b.]``;
                                    ``atLeast`` alone ``[-min.a-]``, ``atMost`` alone
                                    ``[-max.b-]``
``extent="unknown"``                ``[---]``: unknown width (also a unit such as ``cm``:
                                    counted ``gap_unit:<unit>``)
no readable width                   ``[---]``, an unknown width, counted by what was wrong:
                                    ``gap_quantity_unreadable`` (``quantity`` not a whole
                                    number > 0: ``"lots"``, ``"0"``, ``"3.5"``),
                                    ``gap_range_unreadable`` (``atLeast``/``atMost`` not a
                                    pair of whole numbers 0 < low <= high),
                                    ``gap_width_unstated`` (no width attribute and no
                                    ``extent``), ``gap_extent:<value>`` (a misspelt ``extent``)
wider than ``MAX_GAP_LETTERS``      ``[---]``, counted ``gap_too_wide`` (a typo or a whole
(10,000)                            column: too long to count; the Leiden parser's limit)
``unit="charcter"``, ``"char"``     read as ``character`` (a misspelling seen in IIP and
                                    IGCyr), counted ``gap_unit_read_as_character:<unit>``
``unit="line"``                     `` [---] `` between word breaks: a lost line has unknown
                                    width (counted ``gap_lines``)
==================================  ===========================================================
"""

from __future__ import annotations

import re
from collections import Counter

from lxml import etree

__all__ = ["MAX_GAP_LETTERS", "gap_leiden", "whole_number"]

#: The widest gap written as counted letters: stoicheia.text.leiden_segments.MAX_LACUNA_WIDTH (not
#: imported: sources sit upstream of text).
MAX_GAP_LETTERS = 10_000
_WHOLE = re.compile(r"[0-9]+")
#: a misspelt unit="character" (seen in IIP and IGCyr): "char", "charcter", "characteρ", ...
_MISSPELT_CHARACTER = re.compile(r"(?i)char[a-zρ]{0,7}|letters?")


def whole_number(s: str | None) -> int | None:
    """``s`` as a whole number > 0 (surrounding spaces allowed), else ``None``."""
    if s is None or not _WHOLE.fullmatch(s.strip()):
        return None
    return int(s) or None


def gap_leiden(el: etree._Element, counts: Counter[str]) -> str:
    """The Leiden lacuna of one ``<gap>`` element (see the module docstring), its kind and what
    was wrong with its width counted in ``counts`` (``gaps`` for every gap)."""
    unit = (el.get("unit") or "character").strip().rstrip(">")
    counts["gaps"] += 1
    if unit == "line":
        counts["gap_lines"] += 1
        return " [---] "
    if unit != "character" and _MISSPELT_CHARACTER.fullmatch(unit):
        # "charcter", "char", "characteρ" (a Greek rho): the letters are counted all the same
        counts[f"gap_unit_read_as_character:{unit}"] += 1
        unit = "character"
    if unit != "character":
        counts[f"gap_unit:{unit}"] += 1
        return "[---]"
    extent, qty = el.get("extent"), el.get("quantity")
    if qty is None and extent and extent.strip().isdigit():  # extent="7": a count misplaced
        qty = extent
    lo, hi = el.get("atLeast"), el.get("atMost")
    n = whole_number(qty)
    a, b = whole_number(lo), whole_number(hi)
    if max(n or 0, b or 0) > MAX_GAP_LETTERS:  # a typo or a whole column: too long to count
        counts["gap_too_wide"] += 1
        return "[---]"
    if n:
        if el.get("precision") in ("low", "medium"):
            return f"[-ca.{n}-]"
        else:
            return "[" + "." * n + "]"
    if a and b and a <= b:
        return f"[.{a}-{b}.]"
    if a and hi is None:  # atLeast alone: at least a letters, open-ended
        return f"[-min.{a}-]"
    if b and lo is None:  # atMost alone: 1 to b letters
        return f"[-max.{b}-]"
    # no readable width: a lacuna of unknown width, counted by what was wrong with it
    if qty is not None:
        counts["gap_quantity_unreadable"] += 1
    if lo is not None or hi is not None:
        counts["gap_range_unreadable"] += 1
    if qty is None and lo is None and hi is None and extent != "unknown":
        counts["gap_width_unstated" if extent is None else f"gap_extent:{extent}"] += 1
    return "[---]"
