"""What each Unicode character is to the encoder: letter tables and cluster classes.

Used by :mod:`stoicheia.text.encode`. A text is cut into clusters of one base character
plus its combining marks (after NFD, :data:`CLUSTER_RE`); :func:`classify` decides each
distinct cluster once (:data:`INTERN` caches the answer module-wide). The tables name every
code point that real Greek files hold and that the encoder reads as something other than
"drop and separate words" (see the encode module docstring for the kinds).
"""

from __future__ import annotations

import collections
import re
import unicodedata

import numpy as np

from stoicheia.text import alphabet as A

__all__ = [
    "LETTER_OF",
    "MARK_OF",
    "BREATHABLE",
    "ACCENT",
    "BREATHING",
    "IOTA_SUBSCRIPT",
    "DIAERESIS",
    "LACUNA_CHARS",
    "OMISSION_CHAR",
    "NUMERAL_SIGNS",
    "KAI_LIGATURES",
    "CLUSTER_RE",
    "INTERN",
    "K_LETTER",
    "K_SEP",
    "K_FORMAT",
    "K_PUNCT",
    "K_APOS",
    "K_SPACING",
    "K_YPO",
    "classify",
    "compat_letter",
]

#: base code point -> (letter id, is capital)
LETTER_OF: dict[str, tuple[int, int]] = {}
for _i, _ch in enumerate(A.LETTERS):
    LETTER_OF[_ch] = (_i, 0)
    LETTER_OF[chr(0x391 + _i + (1 if _i >= 17 else 0))] = (_i, 1)  # U+03A2 is unassigned
_SIGMA = A.LETTERS.index("σ")
LETTER_OF.update(
    {
        "ς": (_SIGMA, 0),
        "ϲ": (_SIGMA, 0),  # U+03F2 lunate sigma
        "Ϲ": (_SIGMA, 1),  # U+03F9
        "ϐ": (A.LETTERS.index("β"), 0),
        "ϑ": (A.LETTERS.index("θ"), 0),
        "ϴ": (A.LETTERS.index("θ"), 1),  # U+03F4 capital theta symbol
        "ϕ": (A.LETTERS.index("φ"), 0),
        "ϰ": (A.LETTERS.index("κ"), 0),
        "ϱ": (A.LETTERS.index("ρ"), 0),
        "ϖ": (A.LETTERS.index("π"), 0),
        "ϵ": (A.LETTERS.index("ε"), 0),  # U+03F5 lunate epsilon
        "ϒ": (A.LETTERS.index("υ"), 1),  # U+03D2 upsilon with hook (ϓ ϔ decompose to it)
    }
)
assert A.CAPITALS[_SIGMA] == "Σ" and A.CAPITALS[-1] == "Ω"

#: Stand-in characters for real-lacuna slots, written only by
#: :func:`stoicheia.text.encode.encode_text` (private-use code points, so no real text
#: holds them: ``text_to_planes`` turns any such character of its input into U+FFFD).
#: Each is a "letter" with id ``NUM_LETTERS + lacuna value - 1`` until the encoder turns
#: it into ``MASK`` plus the lacuna plane value.
LACUNA_CHARS = {"\ue000": A.LACUNA_LOST, "\ue001": A.LACUNA_ABOUT, "\ue002": A.LACUNA_UNKNOWN}
for _c, _v in LACUNA_CHARS.items():
    LETTER_OF[_c] = (A.NUM_LETTERS + _v - 1, 0)

#: Private-use stand-in for an omission (a run of dots, an ellipsis), written only by the
#: encoder's pre-pass: a word boundary that is neither punctuation nor a counted space.
OMISSION_CHAR = "\ue003"

#: letter ids that can carry a breathing: the seven vowels and ρ
BREATHABLE = frozenset(A.LETTERS.index(c) for c in "αεηιουωρ")

_ARCHAIC = frozenset("ϝϜϙϘϟϞϛϚϡϠϻϺϸϷͱͰͳͲͷͶϳͿ")

#: The Greek numeral sign (keraia) in all its spellings: U+0374, which NFC turns into
#: U+02B9 MODIFIER LETTER PRIME, U+02B9 itself and U+2032 PRIME are handled alike: a
#: separator (it ends the number), counted ``numeral_sign``, never against the record being
#: Greek. U+0375 (lower numeral sign, before thousands) is not a separator: it belongs to the
#: number that follows.
_OVERLINES = frozenset("\u00af\u02c9\u203e")
NUMERAL_SIGNS = frozenset("\u0374\u02b9\u2032\u0375")

#: The four mark fields of a letter (the order of :func:`stoicheia.text.alphabet.dia_id`'s
#: arguments): accent, breathing, iota subscript, diaeresis.
ACCENT, BREATHING, IOTA_SUBSCRIPT, DIAERESIS = 0, 1, 2, 3
#: combining mark -> (field, value): the field above, the value as in ``dia_id`` (accent 1
#: acute, 2 grave, 3 circumflex; breathing 1 smooth, 2 rough; iota and diaeresis 1)
MARK_OF: dict[str, tuple[int, int]] = {
    "\u0301": (ACCENT, 1),  # acute (oxia and tonos both decompose to it)
    "\u0341": (ACCENT, 1),  # acute tone mark (NFD maps it to U+0301 anyway)
    "\u0300": (ACCENT, 2),  # grave (varia)
    "\u0340": (ACCENT, 2),
    "\u0342": (ACCENT, 3),  # perispomeni
    "\u0302": (ACCENT, 3),  # circumflex as Latin-style hat
    "\u0303": (ACCENT, 3),  # circumflex as tilde
    "\u0313": (BREATHING, 1),  # psili / smooth
    "\u0343": (BREATHING, 1),  # koronis (NFD maps it to U+0313 anyway)
    "\u0314": (BREATHING, 2),  # dasia / rough
    "\u0345": (IOTA_SUBSCRIPT, 1),  # ypogegrammeni
    "\u0308": (DIAERESIS, 1),
    # look-alikes that fonts and keyboards put in the place of a Greek mark (the encoder reads
    # them as that mark; they have no Unicode decomposition to it):
    "\u0311": (ACCENT, 3),  # inverted breve: the round circumflex of most Greek fonts
    "\u0315": (BREATHING, 1),  # comma above right: a smooth breathing set beside the letter
    "\u0312": (BREATHING, 2),  # turned comma above (the shape of the rough breathing, like ‘)
    "\u0328": (IOTA_SUBSCRIPT, 1),  # ogonek: an iota subscript's hook (OCR, Latin keyboards)
}

#: modelled punctuation, after NFD (U+0387 -> U+00B7 and U+037E -> ';' under NFD)
_PUNCT: dict[str, int] = {
    ",": A.PUNCT_COMMA,
    "\u00b7": A.PUNCT_RAISED_DOT,
    "\u0387": A.PUNCT_RAISED_DOT,
    ":": A.PUNCT_COLON,
    ".": A.PUNCT_FULL_STOP,
    ";": A.PUNCT_QUESTION,
    "\u037e": A.PUNCT_QUESTION,
    "?": A.PUNCT_QUESTION,
    "!": A.PUNCT_QUESTION,
}

#: apostrophes: elision directly after a letter, otherwise a quote (punctuation_other)
_APOSTROPHE = frozenset("'\u2019\u02bc")

#: spacing diacritics: (accent, breathing, iota, diaeresis) fields. Directly after a letter
#: they are elision (psili/koronis) or unknown marks; before a vowel/ρ with no letter
#: before them they are that letter's marks (old-style capitals "᾿Α").
_SPACING: dict[str, tuple[int, int, int, int]] = {
    "\u1fbd": (0, 1, 0, 0),  # koronis
    "\u1fbf": (0, 1, 0, 0),  # psili (U+1FCD-F decompose to U+1FBF + accent)
    "\u1ffe": (0, 2, 0, 0),  # dasia (U+1FDD-F decompose to U+1FFE + accent)
    "\u1fc0": (3, 0, 0, 0),  # perispomeni
    "\u0384": (1, 0, 0, 0),  # tonos
    "\u00b4": (1, 0, 0, 0),  # acute accent (U+1FFD oxia decomposes to it)
    "\u00a8": (0, 0, 0, 1),  # diaeresis (U+0385, U+1FC1, U+1FED, U+1FEE decompose to it + accent)
    # spacing look-alikes with no Unicode decomposition to a Greek mark (the ones that have
    # one, such as U+02DC small tilde = space + U+0303, are found by _spacing_fields)
    "\u02bd": (0, 2, 0, 0),  # modifier letter reversed comma: rough breathing
    "\u02bb": (0, 2, 0, 0),  # modifier letter turned comma: rough breathing
    "\u0060": (2, 0, 0, 0),  # grave accent (U+1FEF varia decomposes to it)
    "\u02cb": (2, 0, 0, 0),  # modifier letter grave accent
    "\u02ca": (1, 0, 0, 0),  # modifier letter acute accent
    "\u005e": (3, 0, 0, 0),  # circumflex accent typed as ASCII ^
    "\u02c6": (3, 0, 0, 0),  # modifier letter circumflex accent
    "\u007e": (3, 0, 0, 0),  # circumflex typed as ASCII ~
}

#: Cluster kinds (the first item of :func:`classify`'s answer): a letter, a separator, an
#: invisible format character, modelled punctuation, an apostrophe, a spacing diacritic, a
#: spacing iota subscript (U+037A). The order matters: kinds >= ``K_PUNCT`` need the letter
#: index of each cluster, kinds >= ``K_APOS`` need their neighbours (see
#: :func:`stoicheia.text.encode.text_to_planes`).
K_LETTER, K_SEP, K_FORMAT, K_PUNCT, K_APOS, K_SPACING, K_YPO = range(7)

_COMBINING = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
#: One cluster: one base character plus its combining marks (or a run of marks at the
#: text start); ``CLUSTER_RE.findall(nfd_text)`` cuts a text.
CLUSTER_RE = re.compile(f"[^{_COMBINING}][{_COMBINING}]*|[{_COMBINING}]+", re.S)


#: The kai ligature (U+03D7, capital U+03CF) stands for a whole word: expanded by the encoder.
KAI_LIGATURES = {"\u03d7": "και\u0301", "\u03cf": "Και\u0301"}


def compat_letter(base: str) -> str | None:
    """The Greek letter (NFD, with its marks) that ``base`` is a compatibility spelling of, or
    ``None``.

    Read from the Unicode Character Database, not a list: every code point whose
    decomposition is tagged (``<compat>``, ``<font>``, ``<super>``, ``<sub>``, ``<wide>``,
    ...) and whose NFKD is one letter of the alphabet plus combining marks: the micro sign
    U+00B5 (μ), the mathematical Greek alphabets (U+1D6A8..U+1D7C9), the double-struck
    ℼ ℽ ℾ ℿ, the modifier letters ᵝ ᵞ ᵟ ᵠ ᵡ ᶿ, the subscripts ᵦ ᵧ ᵨ ᵩ ᵪ. (Squared units such
    as ㎛ hold a Latin letter too and are not letters.)
    """
    dec = unicodedata.decomposition(base)
    if not dec.startswith("<"):
        return None
    k = unicodedata.normalize("NFKD", base)
    if (
        k[0] in LETTER_OF
        and k[0] not in LACUNA_CHARS
        and all(unicodedata.combining(c) for c in k[1:])
    ):
        return k
    return None


def _spacing_fields(base: str) -> tuple[int, int, int, int] | None:
    """Mark fields of a spacing diacritic: :data:`_SPACING`, else a code point that Unicode
    decomposes to a space plus marks we model (U+02DC small tilde = a circumflex, U+02DB
    ogonek = an iota subscript); ``None`` otherwise."""
    if base in _SPACING:
        return _SPACING[base]
    if base == "\u037a":  # spacing ypogegrammeni: its own kind (the iota of the letter before)
        return None
    dec = unicodedata.decomposition(base)
    if not dec.startswith("<compat> 0020 "):
        return None
    fields = [0, 0, 0, 0]
    for m in unicodedata.normalize("NFKD", base)[1:]:
        fv = MARK_OF.get(m)
        if fv is None or fields[fv[0]]:
            return None
        fields[fv[0]] = fv[1]
    return fields[0], fields[1], fields[2], fields[3]


#: The control characters (C0 U+0000..U+001F, DEL, C1 U+0080..U+009F) that are not Unicode
#: White_Space (tab, line feed, vertical tab, form feed, carriage return and next line U+0085
#: separate words): debris of a conversion, dropped as ``control`` without a word break.
CONTROLS = frozenset(
    chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)] if chr(c) not in "\t\n\x0b\x0c\r\x85"
)


def _char_kind(ch: str) -> str:
    """Drop kind of a single non-letter, non-punctuation character."""
    if ch in CONTROLS:
        return "control"
    if ch.isspace() or ch == "\u200b":
        return "space"
    if ch in NUMERAL_SIGNS:
        return "numeral_sign"
    if ch in _ARCHAIC:
        return "archaic"
    cat = unicodedata.category(ch)
    if cat[0] == "N":
        return "digit"
    if cat[0] in "PS":
        return "punctuation_other"
    if cat == "Cf":
        return "format"
    if cat[0] == "L" and "LATIN" in unicodedata.name(ch, ""):
        return "latin"
    if cat[0] == "M":
        return "unknown_mark"
    return "other"


def _mark_drops(marks: str, drops: collections.Counter) -> None:
    """Count combining marks that sit on a non-letter (a stray U+0313 is elision)."""
    for m in marks:
        drops["elision" if m == "\u0313" else "unknown_mark"] += 1


def classify(cl: str) -> tuple[int, int, int, tuple[tuple[str, int], ...]]:
    """Classify one NFD cluster: ``(kind, value, is_separator, static drops)``.

    ``value`` is, for a letter, ``((letter*48 + dia)*2 + cap)*2 + elided`` (``elided``: a
    stray U+0313 on a consonant ends the word after it); for punctuation the punct id;
    for a spacing diacritic its dia id; otherwise 0.
    """
    base, marks = cl[0], cl[1:]
    drops: collections.Counter = collections.Counter()
    if base == OMISSION_CHAR:
        _mark_drops(marks, drops)
        return K_SEP, 0, 1, tuple(drops.items())
    if base not in LETTER_OF and base not in _PUNCT and base not in _APOSTROPHE:
        alt = compat_letter(base)
        if alt is not None:  # a compatibility spelling of a letter: that letter
            kind, value, sep, alt_drops = classify(alt + marks)
            return kind, value, sep, (*alt_drops, ("compat_letter", 1))
    if base in LETTER_OF:
        letter, cap = LETTER_OF[base]
        fields = [0, 0, 0, 0]
        elided = 0
        for m in marks:
            fv = MARK_OF.get(m)
            if fv is None:
                drops["unknown_mark"] += 1
                continue
            field, v = fv
            if field == BREATHING and v == 1 and letter not in BREATHABLE:
                # A smooth breathing cannot sit on a consonant other than ρ: it is the
                # elision mark written as a combining comma above ("ἀλλ̓").
                elided = 1
                drops["elision"] += 1
            elif fields[field] == 0:
                fields[field] = v
            else:
                drops["extra_mark"] += 1
        dia = A.dia_id(*fields)
        value = ((letter * A.NUM_DIA + dia) * 2 + cap) * 2 + elided
        return K_LETTER, value, 0, tuple(drops.items())
    if base in _PUNCT:
        _mark_drops(marks, drops)
        return K_PUNCT, _PUNCT[base], 1, tuple(drops.items())
    if base in _APOSTROPHE:
        _mark_drops(marks, drops)
        return K_APOS, 0, 1, tuple(drops.items())
    spacing = _spacing_fields(base)
    if spacing is not None:
        fields = list(spacing)
        for m in marks:
            fv = MARK_OF.get(m)
            if fv is None:
                drops["unknown_mark"] += 1
            elif fields[fv[0]] == 0:
                fields[fv[0]] = fv[1]
            else:
                drops["extra_mark"] += 1
        return K_SPACING, A.dia_id(*fields), 1, tuple(drops.items())
    if base == "\u037a":  # spacing ypogegrammeni: the iota subscript of the letter before
        _mark_drops(marks, drops)
        return K_YPO, 0, 0, tuple(drops.items())
    kind = _char_kind(base)
    if base in _OVERLINES:  # a numeral/abbreviation stroke: no letter, no word break
        drops["unknown_mark"] += 1
        _mark_drops(marks, drops)
        return K_FORMAT, 0, 0, tuple(drops.items())
    if base == "\u0375":  # lower numeral sign: part of the number after it
        drops[kind] += 1
        _mark_drops(marks, drops)
        return K_FORMAT, 0, 0, tuple(drops.items())
    if kind == "unknown_mark":  # a run of marks at the very start of the text
        _mark_drops(cl, drops)
        return K_SEP, 0, 1, tuple(drops.items())
    drops[kind] += 1
    _mark_drops(marks, drops)
    if kind in ("format", "control"):
        return K_FORMAT, 0, 0, tuple(drops.items())
    return K_SEP, 0, 1, tuple(drops.items())


class _Intern(dict):
    """NFD cluster -> small int id, classifying each new cluster once (module-wide cache).

    The per-id attributes live in growing Python lists; :meth:`tables` returns them as
    numpy arrays, rebuilt only when new clusters were seen.
    """

    def __init__(self) -> None:
        super().__init__()
        self.kind: list[int] = []
        self.value: list[int] = []
        self.sep: list[int] = []
        self.drops: list[tuple[tuple[str, int], ...]] = []
        self._np: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def __missing__(self, cl: str) -> int:
        kind, value, sep, drops = classify(cl)
        gid = len(self.kind)
        self.kind.append(kind)
        self.value.append(value)
        self.sep.append(sep)
        self.drops.append(drops)
        self[cl] = gid
        self._np = None
        return gid

    def tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(kind int8, value int32, sep bool, has_drops bool)``, each of shape ``(ids,)``."""
        t = self._np
        if t is None or t[0].shape[0] != len(self.kind):
            t = (
                np.array(self.kind, np.int8),
                np.array(self.value, np.int32),
                np.array(self.sep, bool),
                np.array([bool(d) for d in self.drops], bool),
            )
            self._np = t
        return t


#: NFD cluster -> id, with the answer of :func:`classify` for each id (see :class:`_Intern`);
#: shared by every encoder call of the process.
INTERN = _Intern()
