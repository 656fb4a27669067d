"""Letters of other scripts typed in Greek text, read as the Greek letters they stand for.

Editions and their digitisations type Greek with look-alike letters of other scripts: a Latin
``o`` or ``A`` inside a Greek word, a Cyrillic ``о`` or a Coptic ``ⲁ``, and the epigraphers'
Latin ``h`` for the archaic aspirate (heta). This module holds those tables and reads them:

* :func:`read_heta` -- ``h``/``H``/U+210E before a vowel or ρ at the start of a word: the
  rough breathing of that letter (``hο`` = ὁ), counted ``heta``;
* :func:`read_latin_runs` -- a run of Latin letters touching a Greek letter: the Greek letters
  of :data:`LATIN_LOOKALIKES` (``latin_lookalike``), or dropped without splitting the word
  (``latin``, ``latin_in_word``);
* :func:`read_script_runs` -- a run of Cyrillic/Coptic look-alikes touching a Greek letter:
  the Greek letters of :data:`SCRIPT_LOOKALIKES` (``script_lookalike``);
* :func:`fold_lookalikes` -- the same decisions, one character for one, for code that counts
  letters character by character.

The counts are the ones :mod:`stoicheia.text.encode` documents; the pass that calls the
readers is :func:`stoicheia.text.prepass.prepass`.
"""

from __future__ import annotations

import collections
import re
import unicodedata

from stoicheia.text.clusters import LACUNA_CHARS, LETTER_OF

__all__ = [
    "GREEK_BASE",
    "LATIN_LOOKALIKES",
    "SCRIPT_LOOKALIKES",
    "fold_lookalikes",
    "read_heta",
    "read_latin_runs",
    "read_script_runs",
]

_LATIN_RUN = re.compile("[A-Za-z\u210e]+")
#: the heta (archaic aspirate) that epigraphers transcribe as Latin h (or U+210E) before a
#: vowel or ρ at the start of a word: the rough breathing of that letter ("hο" = ὁ)
_HETA = re.compile("(^|[^\\w\u0300-\u036f])[hH\u210e]([αεηιουωρΑΕΗΙΟΥΩΡ])")
#: Latin letters that look like a Greek letter (read as that letter inside a Greek word)
LATIN_LOOKALIKES = {
    "A": "Α",
    "B": "Β",
    "E": "Ε",
    "H": "Η",
    "I": "Ι",
    "K": "Κ",
    "M": "Μ",
    "N": "Ν",
    "O": "Ο",
    "P": "Ρ",
    "T": "Τ",
    "X": "Χ",
    "Y": "Υ",
    "Z": "Ζ",
    "o": "ο",
    "v": "ν",
}
#: The base characters (NFD) of the Greek letters the encoder reads.
GREEK_BASE = frozenset(c for c in LETTER_OF if c not in LACUNA_CHARS)

# Coptic letters are Greek letters in another script (Unicode names them ALFA, VIDA, ...):
# their Greek letter, read from the Unicode names rather than listed by hand.
_COPTIC_NAMES = {
    "ALFA": "α",
    "VIDA": "β",
    "GAMMA": "γ",
    "DALDA": "δ",
    "EIE": "ε",
    "ZATA": "ζ",
    "HATE": "η",
    "THETHE": "θ",
    "IAUDA": "ι",
    "KAPA": "κ",
    "LAULA": "λ",
    "MI": "μ",
    "NI": "ν",
    "KSI": "ξ",
    "O": "ο",
    "PI": "π",
    "RO": "ρ",
    "SIMA": "ϲ",
    "TAU": "τ",
    "UA": "υ",
    "FI": "φ",
    "KHI": "χ",
    "PSI": "ψ",
    "OOU": "ω",
}


def _coptic_lookalikes() -> dict[str, str]:
    out = {}
    for cp in range(0x2C80, 0x2CB2):
        name = unicodedata.name(chr(cp), "")
        for case in ("SMALL", "CAPITAL"):
            prefix = f"COPTIC {case} LETTER "
            if name.startswith(prefix) and name[len(prefix) :] in _COPTIC_NAMES:
                g = _COPTIC_NAMES[name[len(prefix) :]]
                out[chr(cp)] = (
                    g.upper()
                    if case == "CAPITAL" and g != "ϲ"
                    else ("Ϲ" if case == "CAPITAL" else g)
                )
    return out


#: Cyrillic and Coptic letters that print as a Greek letter (the Cyrillic ones drawn from
#: Greek, or the same shape as the Latin look-alikes): read as that Greek letter inside a
#: Greek word (touching a Greek letter), counted ``script_lookalike``. A word wholly in
#: Cyrillic or Coptic stays what it is (``other``): a Coptic text is not Greek.
SCRIPT_LOOKALIKES = {
    "А": "Α",
    "В": "Β",
    "Г": "Γ",
    "Е": "Ε",
    "Н": "Η",
    "І": "Ι",
    "К": "Κ",
    "М": "Μ",
    "О": "Ο",
    "П": "Π",
    "Р": "Ρ",
    "С": "Ϲ",
    "Т": "Τ",
    "У": "Υ",
    "Ф": "Φ",
    "Х": "Χ",
    "о": "ο",
    "р": "ρ",
    "с": "ϲ",
    "х": "χ",
    "к": "κ",
    "п": "π",
    "т": "τ",
    "ф": "φ",
    "Ѳ": "Θ",
    "ѳ": "θ",
    "Ѵ": "Υ",
    "ѵ": "υ",
    "Ѯ": "Ξ",
    "ѯ": "ξ",
    "Ѱ": "Ψ",
    "ѱ": "ψ",
    **_coptic_lookalikes(),
}
_SCRIPT_RUN = re.compile("[" + "".join(SCRIPT_LOOKALIKES) + "]+")
_HAS_SCRIPT = re.compile("[\u0400-\u04ff\u2c80-\u2cff]")


def read_heta(s: str, dropped: collections.Counter) -> str:
    """``s`` (NFD) with each heta (``h``, ``H`` or U+210E before a vowel or ρ at the start of a
    word) made the rough breathing of that letter, counted ``heta`` in ``dropped``; a capital
    ``H`` makes its vowel the capital (``Hερμῆς`` = Ἑρμῆς)."""
    if not ("h" in s or "H" in s or "\u210e" in s) or not _HETA.search(s):
        return s
    s, k = _HETA.subn(
        lambda m: (
            m.group(1) + (m.group(2).upper() if m.group(0)[-2] == "H" else m.group(2)) + "\u0314"
        ),
        s,
    )
    dropped["heta"] += k
    return s


def read_latin_runs(s: str, dropped: collections.Counter) -> str:
    """``s`` (NFD) with each run of Latin letters that touches a Greek letter read by
    :func:`_latin_in_word` (counted in ``dropped``); other Latin runs stay."""
    if not _LATIN_RUN.search(s):
        return s
    return _LATIN_RUN.sub(lambda m: _latin_in_word(m, s, dropped), s)


def read_script_runs(s: str, dropped: collections.Counter) -> str:
    """``s`` (NFD) with each run of Cyrillic/Coptic look-alikes that touches a Greek letter
    read as the Greek letters (counted ``script_lookalike`` in ``dropped``)."""
    if not _HAS_SCRIPT.search(s):
        return s
    return _SCRIPT_RUN.sub(lambda m: _script_in_word(m, s, dropped), s)


def fold_lookalikes(text: str) -> str:
    """``text`` with each look-alike that the encoder reads as a Greek letter replaced by that
    letter, one character for one (same length, so offsets into ``text`` stay valid): a run of
    Latin look-alikes (:data:`LATIN_LOOKALIKES`) or of Cyrillic/Coptic ones
    (:data:`SCRIPT_LOOKALIKES`) touching a Greek letter, as :func:`encode_text` decides it (a
    heta ``h`` before a vowel at the start of a word stays: it is a breathing). For code that
    counts the letters of a text character by character (a lone ``o`` is Latin, the ``o`` of
    ``ἐνπέραμo`` a Greek omicron)."""
    bases = "".join((unicodedata.normalize("NFD", c) or c)[0] for c in text)
    work = list(bases)
    for m in _HETA.finditer(bases):
        work[m.end() - 2] = "\u0314"  # not part of a Latin run; not a letter
    work_s = "".join(work)
    out = list(text)

    def greek(i: int, step: int) -> bool:
        while 0 <= i < len(work_s) and unicodedata.combining(work_s[i]):
            i += step
        return 0 <= i < len(work_s) and work_s[i] in GREEK_BASE

    for rx, table in ((_LATIN_RUN, LATIN_LOOKALIKES), (_SCRIPT_RUN, SCRIPT_LOOKALIKES)):
        for m in rx.finditer(work_s):
            run = m.group()
            after = (
                work_s[m.end() : m.end() + 1] in GREEK_BASE
            )  # as the encoder: the very next character
            if (greek(m.start() - 1, -1) or after) and all(c in table for c in run):
                out[m.start() : m.end()] = [table[c] for c in run]
    return "".join(out)


def _script_in_word(m: re.Match, s: str, dropped: collections.Counter) -> str:
    """A run of Cyrillic/Coptic look-alikes touching a Greek letter: the Greek letters."""
    i = m.start() - 1
    while i >= 0 and unicodedata.combining(s[i]):
        i -= 1
    if not ((i >= 0 and s[i] in GREEK_BASE) or s[m.end() : m.end() + 1] in GREEK_BASE):
        return m.group()
    dropped["script_lookalike"] += len(m.group())
    return "".join(SCRIPT_LOOKALIKES[c] for c in m.group())


def _latin_in_word(m: re.Match, s: str, dropped: collections.Counter) -> str:
    """A Latin run touching a Greek letter (no space): look-alikes become Greek, others go."""
    run = m.group()
    i = m.start() - 1
    while i >= 0 and unicodedata.combining(s[i]):
        i -= 1
    before = i >= 0 and s[i] in GREEK_BASE
    after = s[m.end() : m.end() + 1] in GREEK_BASE
    if not (before or after):
        return run
    if run and all(c in LATIN_LOOKALIKES for c in run):
        dropped["latin_lookalike"] += len(run)
        return "".join(LATIN_LOOKALIKES[c] for c in run)
    dropped["latin"] += len(run)
    dropped["latin_in_word"] += len(run)
    return ""
