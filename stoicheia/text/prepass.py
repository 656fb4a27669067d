"""The string-level pass over a text before it is cut into clusters.

:func:`prepass` takes the NFD text and fixes, each counted by kind in ``dropped`` (the kinds
:mod:`stoicheia.text.encode` documents), what is decided on the string rather than on a
letter: the καί ligature (``kai_ligature``), the editor's omission dots (``omission``), signs
typed inside a word (``in_word_sign``), a smooth breathing on ρ that is an elision mark,
marks typed before a capital (``mark_before_capital``), and the letters of other scripts read
as Greek (:mod:`stoicheia.text.lookalikes`: ``heta``, ``latin_lookalike``, ``latin``,
``script_lookalike``).
"""

from __future__ import annotations

import collections
import re

from stoicheia.text.clusters import KAI_LIGATURES, LETTER_OF, OMISSION_CHAR
from stoicheia.text.lookalikes import read_heta, read_latin_runs, read_script_runs

__all__ = ["prepass"]

_MARKS = "\u0300-\u036f"
_RHO_PSILI = re.compile(f"([ρΡϱ][{_MARKS}]*)")
_MARKS_BEFORE_CAPITAL = re.compile(
    "(^|\\s)([\u0300\u0301\u0308\u0313\u0314\u0340-\u0343\u0345]+)([\u0391-\u03a9])"
)
_LETTER_CLASS = "".join(sorted(LETTER_OF))  # inside [...] of a regex: no sign to escape
#: Signs typed inside a word that never end it (letters directly on both sides): line
#: division ``|`` ``/`` ``¦`` ``‖`` (``Διονύ|σιος``), correction brackets ``«»`` (``ἐ«π»ί``),
#: the double hyphen ``=`` ``⸗``; hyphens inside such a run too (``πο-|τῷ``).
_IN_WORD_SIGNS = re.compile(
    f"(?<=[{_LETTER_CLASS}\u0300-\u036f])"
    "[\\-\u2010\u2011]*[|/\u00a6\u2016«»=\u2e17\u2e40][\\-\u2010\u2011|/\u00a6\u2016«»=\u2e17\u2e40]*"
    f"(?=[{_LETTER_CLASS}])"
)
#: A run of two or more dots (spaces between allowed) or an ellipsis character outside the
#: brackets: the editor's mark of omitted text, a word boundary and not a full stop.
_OMISSION = re.compile("\\.(?:[ \u00a0\u2009\u202f]*\\.)+|[\u2025\u2026]")


def prepass(s: str, dropped: collections.Counter) -> str:
    """``s`` (an NFD string) with the string-level fixes made, each counted by kind in
    ``dropped`` (the kinds of the module docstring). Returns a new ``str``; the length may
    change (a ligature gives three letters, signs inside a word go)."""
    if "\u03d7" in s or "\u03cf" in s:
        for lig, word in KAI_LIGATURES.items():
            if lig in s:
                dropped["kai_ligature"] += s.count(lig)
                s = s.replace(lig, word)
    if "." in s or "\u2026" in s or "\u2025" in s:
        s, k = _OMISSION.subn(OMISSION_CHAR, s)
        if k:
            dropped["omission"] += k
    s, k = _IN_WORD_SIGNS.subn("", s)
    if k:
        dropped["in_word_sign"] += k
    if "\u0313" in s and ("ρ" in s or "Ρ" in s or "ϱ" in s):
        s = _RHO_PSILI.sub(lambda m: _rho_elision(m, s), s)
    if "\u0313" in s or "\u0314" in s or "\u0301" in s or "\u0342" in s or "\u0300" in s:
        s, k = _MARKS_BEFORE_CAPITAL.subn(lambda m: m.group(1) + m.group(3) + m.group(2), s)
        if k:
            dropped["mark_before_capital"] += k
    s = read_heta(s, dropped)
    s = read_latin_runs(s, dropped)
    s = read_script_runs(s, dropped)
    return s


def _rho_elision(m: re.Match, s: str) -> str:
    """ρ with U+0313 not followed by ρ: the mark is elision (``παῤ`` = παρ’)."""
    cl = m.group(1)
    if "\u0313" not in cl:
        return cl
    nxt = s[m.end() : m.end() + 1]
    if nxt in ("ρ", "Ρ", "ϱ"):
        return cl  # ῤῥ: the smooth breathing of a double rho
    return cl.replace("\u0313", "") + "\u2019"
