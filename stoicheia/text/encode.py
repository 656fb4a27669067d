"""Polytonic Greek Unicode text (with Leiden notation) -> aligned letter planes.

:func:`encode_text` is what every reader's text goes through (via
:func:`stoicheia.text.filter.normalise_record`): it parses the Leiden notation with
:func:`stoicheia.text.leiden.parse_leiden` and encodes letters, lacunae and editorial
letters; :func:`text_to_planes` is the Leiden-blind core (brackets are punctuation).

Reading works on the canonical decomposition (NFD) of the text, cut into clusters of one
base character plus its combining marks (:mod:`stoicheia.text.clusters`); the marks of a
cluster are read by kind (accent, breathing, iota subscript, diaeresis; one of each per
letter), so every Unicode spelling of a letter (precomposed oxia or tonos forms, NFC, NFD,
marks in any order) gives the same planes. Two marks of one kind on a letter are never
merged silently: see ``extra_mark``. NFKC is never applied (it
would turn lunate ϲ into ς and spacing breathings into space + mark). ς, ϲ, Ϲ fold to σ;
ϐ ϑ ϕ ϰ ϱ ϖ to β θ φ κ ρ π; also ϵ -> ε, ϴ -> Θ and ϒ -> Υ.

Dropped characters are counted by kind in a ``collections.Counter``:

* ``space`` whitespace (and U+200B zero-width space);
* ``punctuation_other`` punctuation and symbols we do not model (brackets outside Leiden
  reading, dashes, quotes, †, a ``'``/U+2019/U+02BC that does not follow a letter, ...);
* ``latin`` Latin letters; ``digit`` any Unicode number; ``archaic`` ϝ ϙ ϡ ϛ ϟ ϻ ϸ ͱ ͳ ͷ ϳ
  Ϳ and their capitals; ``other`` anything else (Coptic, other scripts);
* ``numeral_sign`` the Greek numeral sign (keraia U+0374, which NFC turns into U+02B9, U+02B9
  and U+2032 alike; U+0375 lower numeral sign): not counted against the record being Greek;
* ``heta`` Latin ``h`` (or U+210E) before a vowel or ρ at the start of a word, the
  epigraphers' transcription of the archaic aspirate: the rough breathing of that letter
  (``hο`` = ὁ, ``hιαρὸν`` = ἱαρὸν); inside a word it is a Latin letter in a word (below);
* ``latin_lookalike`` a Latin letter typed inside a Greek word that looks like a Greek one
  (``A B E H I K M N O P T X Y Z o v``): read as the Greek letter; other Latin letters inside
  a Greek word are dropped (``latin``) without splitting the word;
* ``unknown_mark`` combining marks we do not model (macron U+0304, breve U+0306, ...),
  spacing macrons and overlines (U+00AF, U+02C9, U+203E: numeral and abbreviation strokes,
  which do not split a word),
  marks on a non-letter base, and spacing diacritics that could not be attached to a letter;
* ``mark_before_capital`` combining breathings/accents typed before a capital (after a
  space or at the start): moved onto the capital (``"\u0313Αθῆναι"`` = Ἀθῆναι);
* ``extra_mark`` a second mark of a kind the letter already has: stacked accents (acute +
  grave, the same accent typed twice), two breathings, two iotas, two diaereses. The first
  one in NFD order is kept (for marks of one kind that is the order typed: NFD reorders
  only marks of different combining classes) and each other one is counted here;
  :func:`encode_text` with ``strict=True`` (restore input) refuses such a letter instead;
* ``elision`` an elision mark (U+2019, U+02BC, U+0027, U+1FBD, U+1FBF directly after a
  letter; a stray U+0313 on a consonant, on ρ not followed by ρ (``παῤ`` = παρ’; ``ῤῥ``
  stays), or with no letter under it). A U+1FBD/U+1FBF used as a combining mark is a smooth
  breathing instead: before a vowel or ρ with no letter before it (old-style capitals
  "᾿Αθῆναι");
* ``crasis`` a coronis typed as U+1FBD/U+1FBF or as an apostrophe between a vowel and a
  consonant (``κα’γώ`` = κἀγώ): the smooth breathing of that vowel, no word boundary;
* ``in_word_sign`` a sign typed inside a word with letters directly on both sides: line
  division ``|`` ``/`` ``¦`` ``‖`` (``Διονύ|σιος``), correction brackets ``«»``
  (``Διο«ν»ύσιος``), the double hyphen ``=`` ``⸗`` (with any hyphens beside them): removed,
  no word break; between words (a space beside it) such a sign separates as before;
* ``omission`` a run of two or more dots outside the brackets (spaces between allowed:
  ``. . .``) or an ellipsis ``…`` ``‥``: the editor's mark of omitted text, a word boundary
  with no punctuation (a single ``.`` is a full stop);
* ``compat_letter`` a compatibility spelling of a letter (the micro sign ``µ``, the
  mathematical and double-struck Greek letters, modifier and subscript letters: every code
  point that Unicode decomposes by compatibility to one letter, see
  :func:`stoicheia.text.clusters.compat_letter`): read as that letter;
* ``kai_ligature`` the καί ligature ϗ (Ϗ): expanded to the three letters ``καί``;
* ``script_lookalike`` a Cyrillic or Coptic letter that prints as a Greek one (``о`` ``с``
  ``х``, ``ⲁ`` ...) inside a Greek word: read as that Greek letter (see
  :data:`SCRIPT_LOOKALIKES`); a whole word in Cyrillic or Coptic stays ``other``;
* ``spacing_mark`` an accent, diaeresis or iota subscript typed as a spacing character right
  after its vowel (``τω῀ν``, ``τω~ν``, ``λο´γος``): that vowel's mark, no word break. Marks
  typed with a look-alike code point are that mark: the circumflex as U+0342, U+0302,
  U+0303, U+0311 (inverted breve) or spacing U+1FC0, U+02DC, ``~``, ``^``, U+02C6; the acute
  as U+0301, U+0341, spacing U+00B4, U+0384, U+02CA; the grave as U+0300, U+0340, spacing
  `````, U+02CB; the rough breathing as U+0314, U+0312, spacing U+1FFE, U+02BD, U+02BB; the
  smooth as U+0313, U+0343, U+0315; the iota subscript as U+0345, U+0328 (ogonek), U+037A,
  U+02DB; any other spacing character that Unicode decomposes to a space plus such marks too;
* ``punctuation_extra`` a modelled punctuation mark on a letter that already has one
  (the stronger by :data:`PUNCT_STRENGTH` survives); ``punctuation_orphan`` a modelled
  punctuation mark with no letter before it; ``format`` invisible format characters
  (category Cf: soft hyphen, ZWJ, BOM, ...), which do not separate words; ``control`` control
  characters (C0, DEL, C1) other than the whitespace ones (tab, line feed, vertical tab, form
  feed, carriage return, U+0085): debris of a conversion, dropped without a word break and
  not counted against the record being Greek.

Word boundaries come only from separators between two letters: every dropped or
punctuation character except ``format`` and ``control`` ones, and elision. The shape of sigma plays no
part (a final ς inside a token does not end a word). Leiden signs never separate words.
"""

from __future__ import annotations

import collections
import re
import unicodedata
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from stoicheia.text import alphabet as A
from stoicheia.text.clusters import (
    BREATHABLE,
    BREATHING,
    CLUSTER_RE,
    INTERN,
    K_APOS,
    K_LETTER,
    K_PUNCT,
    K_YPO,
    KAI_LIGATURES,
    LACUNA_CHARS,
    LETTER_OF,
    MARK_OF,
    OMISSION_CHAR,
)
from stoicheia.text.leiden import (
    Editorial,
    Lacuna,
    LacunaTooWideError,
    LeidenError,
    Text,
    parse_leiden,
)
from stoicheia.text.planes import Planes

__all__ = [
    "text_to_planes",
    "encode_text",
    "fold_lookalikes",
    "Encoded",
    "KNOWN_PLANES",
    "PUNCT_STRENGTH",
]

#: The planes a source may declare unrecorded (``known``); the lacuna plane is always known.
KNOWN_PLANES = ("chars", "boundary", "dia", "cap", "punct")

#: Rank used when several marks follow one letter: the highest rank survives.
#: Sentence-ending marks outrank pauses (a "." must not be lost to a following ","), and
#: the question mark outranks the full stop (it carries more information: ";." keeps ";").
#: The ids happen to be ordered weakest->strongest, so the rank is the id itself.
PUNCT_STRENGTH: dict[int, int] = {p: p for p in range(A.NUM_PUNCT)}

_VOWELS = frozenset(A.LETTERS.index(c) for c in "αεηιουω")
_LETTER_IS_BREATHABLE = np.zeros(A.NUM_LETTERS + A.NUM_LACUNA, bool)
_LETTER_IS_BREATHABLE[list(BREATHABLE)] = True
_SMOOTH_ONLY = A.dia_id(0, 1, 0, 0)  # the dia id of a smooth breathing alone
_STAND_IN = {v: k for k, v in LACUNA_CHARS.items()}
_HAS_STAND_IN = re.compile("[" + "".join(LACUNA_CHARS) + OMISSION_CHAR + "]")
_MARKS = "\u0300-\u036f"
_RHO_PSILI = re.compile(f"([ρΡϱ][{_MARKS}]*)")
_MARKS_BEFORE_CAPITAL = re.compile(
    "(^|\\s)([\u0300\u0301\u0308\u0313\u0314\u0340-\u0343\u0345]+)([\u0391-\u03a9])"
)
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
_GREEK_BASE = frozenset(c for c in LETTER_OF if c not in LACUNA_CHARS)

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


def _prepass(s: str, dropped: collections.Counter) -> str:
    """String-level fixes on the NFD text before clustering (each counted, see module doc)."""
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
    if ("h" in s or "H" in s or "\u210e" in s) and _HETA.search(s):
        # a capital H makes its vowel the capital ("Hερμῆς" = Ἑρμῆς)
        s, k = _HETA.subn(
            lambda m: (
                m.group(1)
                + (m.group(2).upper() if m.group(0)[-2] == "H" else m.group(2))
                + "\u0314"
            ),
            s,
        )
        dropped["heta"] += k
    if _LATIN_RUN.search(s):
        s = _LATIN_RUN.sub(lambda m: _latin_in_word(m, s, dropped), s)
    if _HAS_SCRIPT.search(s):
        s = _SCRIPT_RUN.sub(lambda m: _script_in_word(m, s, dropped), s)
    return s


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
        return 0 <= i < len(work_s) and work_s[i] in _GREEK_BASE

    for rx, table in ((_LATIN_RUN, LATIN_LOOKALIKES), (_SCRIPT_RUN, SCRIPT_LOOKALIKES)):
        for m in rx.finditer(work_s):
            run = m.group()
            after = (
                work_s[m.end() : m.end() + 1] in _GREEK_BASE
            )  # as the encoder: the very next character
            if (greek(m.start() - 1, -1) or after) and all(c in table for c in run):
                out[m.start() : m.end()] = [table[c] for c in run]
    return "".join(out)


def _script_in_word(m: re.Match, s: str, dropped: collections.Counter) -> str:
    """A run of Cyrillic/Coptic look-alikes touching a Greek letter: the Greek letters."""
    i = m.start() - 1
    while i >= 0 and unicodedata.combining(s[i]):
        i -= 1
    if not ((i >= 0 and s[i] in _GREEK_BASE) or s[m.end() : m.end() + 1] in _GREEK_BASE):
        return m.group()
    dropped["script_lookalike"] += len(m.group())
    return "".join(SCRIPT_LOOKALIKES[c] for c in m.group())


def _rho_elision(m: re.Match, s: str) -> str:
    """ρ with U+0313 not followed by ρ: the mark is elision (``παῤ`` = παρ’)."""
    cl = m.group(1)
    if "\u0313" not in cl:
        return cl
    nxt = s[m.end() : m.end() + 1]
    if nxt in ("ρ", "Ρ", "ϱ"):
        return cl  # ῤῥ: the smooth breathing of a double rho
    return cl.replace("\u0313", "") + "\u2019"


def _latin_in_word(m: re.Match, s: str, dropped: collections.Counter) -> str:
    """A Latin run touching a Greek letter (no space): look-alikes become Greek, others go."""
    run = m.group()
    i = m.start() - 1
    while i >= 0 and unicodedata.combining(s[i]):
        i -= 1
    before = i >= 0 and s[i] in _GREEK_BASE
    after = s[m.end() : m.end() + 1] in _GREEK_BASE
    if not (before or after):
        return run
    if run and all(c in LATIN_LOOKALIKES for c in run):
        dropped["latin_lookalike"] += len(run)
        return "".join(LATIN_LOOKALIKES[c] for c in run)
    dropped["latin"] += len(run)
    dropped["latin_in_word"] += len(run)
    return ""


def _check_known(known: Mapping[str, bool] | None) -> dict[str, bool]:
    out = dict.fromkeys(KNOWN_PLANES, True)
    if known is None:
        return out
    for k, v in known.items():
        if k not in out:
            raise ValueError(f"known: unknown plane {k!r}; planes are {KNOWN_PLANES}")
        out[k] = bool(v)
    if not out["chars"]:
        raise ValueError("known['chars'] must be True: the chars plane has no UNKNOWN id")
    return out


def text_to_planes(
    text: str, known: Mapping[str, bool] | None = None
) -> tuple[Planes, collections.Counter]:
    """Normalise polytonic Greek ``text`` into :class:`Planes`, reading no Leiden notation.

    Brackets and the other editorial signs are dropped as ``punctuation_other`` and separate
    words here; :func:`encode_text` reads them as Leiden instead (what the readers use).
    The details are in :func:`_text_to_planes`; its docstring applies. ``lacuna`` is all 0.
    """
    if not isinstance(text, str):
        raise TypeError(f"text_to_planes expects str, got {type(text).__name__}")
    dropped: collections.Counter = collections.Counter()
    if _HAS_STAND_IN.search(text):
        text = _HAS_STAND_IN.sub("\ufffd", text)
    return _text_to_planes(text, known, dropped)


def _text_to_planes(
    text: str, known: Mapping[str, bool] | None, dropped: collections.Counter
) -> tuple[Planes, collections.Counter]:
    """Normalise polytonic Greek ``text`` (NFC, NFD or mixed) into :class:`Planes`.

    Returns ``(planes, dropped)``: ``planes`` has one entry per Greek letter (arrays of
    dtype ``uint8``, shape ``(n,)``); ``dropped`` counts everything that took no letter
    position, by kind (see the module docstring). The order of combining marks does not
    matter; capitalisation comes from the base letter's code point.

    Punctuation goes on the last letter before it, even across spaces or dropped
    characters; if several marks land on one letter the strongest by
    :data:`PUNCT_STRENGTH` survives and each other one counts as ``punctuation_extra``.
    ``boundary`` is 2 on letters with a full stop or question mark and on the last
    letter, 1 on any other letter followed by a separator before the next letter.

    ``known`` maps plane names to whether the source records that plane (missing names
    default to ``True``); an unrecorded plane is filled with ``alphabet.UNKNOWN[name]``.
    When ``punct`` is unrecorded, sentence ends are only set at the record end (the
    boundary of a letter with a full stop becomes 1). Raises ``ValueError`` for an
    unknown plane name or ``known['chars'] == False`` and ``TypeError`` if ``text`` is
    not a ``str``.
    """
    kn = _check_known(known)
    clusters = CLUSTER_RE.findall(_prepass(unicodedata.normalize("NFD", text), dropped))
    if not clusters:
        return _fill_unknown(Planes.empty(), kn), dropped
    intern = INTERN
    ids = np.fromiter(map(intern.__getitem__, clusters), np.int32, len(clusters))
    t_kind, t_value, t_sep, t_drops = intern.tables()

    # Static drops: per distinct cluster, times its number of occurrences.
    bc = np.bincount(ids, minlength=t_kind.shape[0])
    for gid in np.flatnonzero(t_drops[: bc.shape[0]] & (bc > 0)).tolist():
        mult = int(bc[gid])
        for k, v in intern.drops[gid]:
            dropped[k] += v * mult

    kind = t_kind[ids]
    value = t_value[ids]
    sep = t_sep[ids]
    is_letter = kind == K_LETTER
    m = ids.shape[0]

    lval = value[is_letter]
    cap = ((lval >> 1) & 1).astype(np.uint8)
    dia = ((lval >> 2) % A.NUM_DIA).astype(np.uint8)
    chars = ((lval >> 2) // A.NUM_DIA).astype(np.uint8)
    sep[is_letter] = (lval & 1).astype(bool)  # a stray U+0313 on a consonant ends the word
    n = int(lval.shape[0])
    kmax = int(kind.max())
    # index of the last letter at or before each cluster (-1 before the first letter)
    letter_no = np.cumsum(is_letter) - 1 if kmax >= K_PUNCT else None

    if kmax >= K_APOS:  # rare context-dependent clusters: small Python loop
        _resolve_context(kind, value, sep, is_letter, letter_no, chars, dia, dropped)

    # Punctuation: onto the last letter before the mark; keep the strongest.
    punct = np.zeros(n, np.uint8)
    if letter_no is not None:
        pmask = kind == K_PUNCT
        pidx = letter_no[pmask]
        if pidx.size:
            pval = value[pmask].astype(np.uint8)
            n_orphan = int(np.count_nonzero(pidx < 0))  # pidx is sorted: orphans first
            if n_orphan:
                dropped["punctuation_orphan"] += n_orphan
                pidx, pval = pidx[n_orphan:], pval[n_orphan:]
            if pidx.size:
                # PUNCT_STRENGTH is the identity on ids, so the strongest is the maximum id.
                np.maximum.at(punct, pidx, pval)
                extra = int(pidx.size - 1 - np.count_nonzero(np.diff(pidx)))
                if extra:
                    dropped["punctuation_extra"] += extra

    boundary = np.zeros(n, np.uint8)
    if n:
        # A letter is word-final if a separator lies between it and the next letter
        # (its own elision flag included).
        pos = np.flatnonzero(is_letter)
        cs = np.zeros(m + 1, np.int32)
        np.cumsum(sep, out=cs[1:])
        boundary[:-1][cs[pos[1:]] > cs[pos[:-1]]] = A.BOUNDARY_WORD
        if kn["punct"]:  # unrecorded punctuation: sentence ends only at the record end
            boundary[punct >= A.PUNCT_FULL_STOP] = A.BOUNDARY_SENTENCE
        boundary[-1] = A.BOUNDARY_SENTENCE
    lacuna = np.zeros(n, np.uint8)
    if n and int(chars.max()) >= A.NUM_LETTERS:
        # stand-ins of real-lacuna slots (written by encode_text): MASK + the lacuna value
        slot = chars >= A.NUM_LETTERS
        lacuna[slot] = chars[slot] - (A.NUM_LETTERS - 1)
        chars[slot] = A.MASK
    planes = Planes(chars, boundary, dia, cap, punct, lacuna)
    if not all(kn.values()):
        _fill_unknown(planes, kn)
    if n and lacuna.any():
        slot = lacuna > 0
        dia[slot] = A.DIA_UNKNOWN
        cap[slot] = A.CAP_UNKNOWN
        boundary[slot & (boundary == A.BOUNDARY_INTERNAL)] = A.BOUNDARY_UNKNOWN
    return planes, dropped


def _add_marks(dia: int, marks: int, dropped: collections.Counter) -> int:
    """The diacritic id ``dia`` with the fields of ``marks`` (a diacritic id) added where it has
    none; a field it already has keeps its first mark and counts ``extra_mark``."""
    cur = list(A.dia_fields(dia))
    for f, v in enumerate(A.dia_fields(marks)):
        if v:
            if cur[f]:
                dropped["extra_mark"] += 1
            else:
                cur[f] = v
    return A.dia_id(*cur)


def _resolve_context(
    kind: np.ndarray,
    value: np.ndarray,
    sep: np.ndarray,
    is_letter: np.ndarray,
    letter_no: np.ndarray,
    chars: np.ndarray,
    dia: np.ndarray,
    dropped: collections.Counter,
) -> None:
    """Handle the clusters whose meaning depends on their neighbours (in place).

    * apostrophes: elision right after a letter, a quotation mark elsewhere;
    * spacing ypogegrammeni right after a letter: that letter's iota subscript
      (not a separator); elsewhere an unknown mark;
    * spacing diacritics: prefix marks of the following vowel or ρ when no letter
      precedes them ("᾿Αθῆναι"); a koronis/psili between a vowel and a consonant is the
      crasis breathing of that vowel ("κα᾽γώ" = κἀγώ, no word boundary); otherwise
      elision (psili/koronis alone) or unknown.
    """
    m = kind.shape[0]
    for j in np.flatnonzero(kind >= K_APOS).tolist():
        k = int(kind[j])
        after_letter = j > 0 and bool(is_letter[j - 1])
        if k == K_APOS:
            before_letter = j + 1 < m and bool(is_letter[j + 1])
            if after_letter and before_letter:
                # Crasis with the coronis typed as an apostrophe ("κα’γώ" = κἀγώ): a vowel
                # before, a consonant after, no space. Elision leaves a consonant before the
                # mark ("δ’", "ἀλλ’") or is followed by a vowel ("δι’ἐκείνων"), so it never
                # matches this pattern.
                li = int(letter_no[j])
                acc, br, io, di = (
                    A.dia_fields(int(dia[li])) if dia[li] < A.NUM_DIA else (0, 0, 0, 0)
                )
                if (
                    chars[li] in _VOWELS
                    and chars[li + 1] not in _VOWELS
                    and chars[li + 1] < A.NUM_LETTERS
                ):
                    if br == 0:
                        dia[li] = A.dia_id(acc, 1, io, di)
                    else:
                        dropped["extra_mark"] += 1
                    dropped["crasis"] += 1
                    sep[j] = False
                    continue
            dropped["elision" if after_letter else "punctuation_other"] += 1
        elif k == K_YPO:
            if after_letter:
                li = letter_no[j]
                acc, br, io, di = A.dia_fields(int(dia[li]))
                if io:
                    dropped["extra_mark"] += 1
                else:
                    dia[li] = A.dia_id(acc, br, 1, di)
            else:
                dropped["unknown_mark"] += 1
                sep[j] = True
        else:  # K_SPACING
            payload = int(value[j])
            before_letter = j + 1 < m and bool(is_letter[j + 1])
            if after_letter and before_letter and payload == _SMOOTH_ONLY:
                # Crasis written with a spacing koronis/psili after its vowel ("κα᾽γώ"):
                # a vowel before and a consonant after. Elision is always followed by a
                # vowel or a space ("δι᾽ἐκείνων"), so it cannot match this pattern.
                li = int(letter_no[j])
                acc, br, io, di = A.dia_fields(int(dia[li]))
                if chars[li] in _VOWELS and chars[li + 1] not in _VOWELS and br == 0:
                    dia[li] = A.dia_id(acc, 1, io, di)
                    sep[j] = False
                    continue
            if after_letter and payload != _SMOOTH_ONLY and A.dia_fields(payload)[1] == 0:
                # an accent, diaeresis or iota subscript typed as a spacing character after
                # its vowel ("τω῀ν", "τω~ν", "λο´γος"): that vowel's mark, inside the word
                li = int(letter_no[j])
                if chars[li] in _VOWELS and dia[li] < A.NUM_DIA:
                    dia[li] = _add_marks(int(dia[li]), payload, dropped)
                    sep[j] = False
                    dropped["spacing_mark"] += 1
                    continue
            if not after_letter and before_letter:
                li = letter_no[j] + 1
                if _LETTER_IS_BREATHABLE[chars[li]]:
                    dia[li] = _add_marks(int(dia[li]), payload, dropped)
                    continue
            dropped["elision" if payload == _SMOOTH_ONLY else "unknown_mark"] += 1


def _fill_unknown(p: Planes, kn: dict[str, bool]) -> Planes:
    """Overwrite (in place) every plane with ``kn[name] == False`` by its UNKNOWN id."""
    for name in KNOWN_PLANES[1:]:
        if not kn[name]:
            getattr(p, name)[:] = A.UNKNOWN[name]
    return p


class Encoded(NamedTuple):
    """Result of :func:`encode_text`.

    ``planes`` (:class:`Planes`, all six planes; may be empty), ``dropped`` (characters that
    took no slot, by kind, as for :func:`text_to_planes`) and ``leiden`` (what the Leiden
    notation held, counted: ``lacunae``, ``lacuna_slots`` (slots with ``lacuna`` 1 or 2),
    ``lacunae_unknown_width`` (stand-in slots), ``supplied_letters`` (letters supplied in a
    ``[ ]``), ``expansion_letters``, ``omitted_letters``, ``erased_letters``,
    ``partly_lost_letters``, ``added_letters`` (``\\ /``: added above the line), ``surplus_letters`` (dropped: not part of the text),
    ``uncertain_letters`` (dots below), ``editorial_comments``, ``leiden_repaired``,
    ``lacuna_too_wide``: a counted lacuna above ``MAX_LACUNA_WIDTH`` letters, read as ``[---]``).
    """

    planes: Planes
    dropped: collections.Counter
    leiden: collections.Counter


def _count_letters(s: str) -> int:
    return sum(1 for c in unicodedata.normalize("NFD", s) if c in _GREEK_BASE)


#: editorial letters kept as text, by reason -> the count key
_KEPT = {
    "lost": "supplied_letters",
    "abbreviation": "expansion_letters",
    "omitted": "omitted_letters",
    "erased": "erased_letters",
    "partly_lost": "partly_lost_letters",
    "added": "added_letters",
}


def encode_text(
    text: str, known: Mapping[str, bool] | None = None, *, strict: bool = False
) -> Encoded:
    """Encode ``text`` with its Leiden notation into six planes (see :class:`Encoded`).

    Leiden meaning (signs in :mod:`stoicheia.text.leiden`): a lacuna of known width becomes
    one slot per lost letter (``lacuna`` 1), of estimated width (``ca. N``, ``a..b``) N or b
    slots (``lacuna`` 2), of unknown width one stand-in slot (``lacuna`` 3); every lacuna slot
    has ``chars`` MASK. Letters in ``[ ]``, ``( )``, ``⟨ ⟩``, ``⟦ ⟧``, ``⸢ ⸣`` are kept as
    letters where they stand (and in ``\\ /``, added above the line), with no word break at the signs (``ἔλα[σ]εν`` is one word);
    letters in ``{ }`` (surplus) are left out, also without a word break; dots below are
    removed (the letters counted uncertain); comments (``(?)``, ``vac.``) separate words.

    ``strict=True`` raises :class:`stoicheia.text.leiden.LeidenError` for notation that
    cannot be read; ``strict=False`` (the readers) repairs it by dropping the offending
    bracket character or combining mark (or, for any other fault, every bracket sign of the
    text), counts ``leiden_repaired`` and goes on. ``known`` as in :func:`text_to_planes`.
    """
    if not isinstance(text, str):
        raise TypeError(f"encode_text expects str, got {type(text).__name__}")
    dropped: collections.Counter = collections.Counter()
    leiden: collections.Counter = collections.Counter()
    if _HAS_STAND_IN.search(text):
        text = _HAS_STAND_IN.sub("\ufffd", text)
    if strict:
        stacked = _stacked_mark(text)
        if stacked is not None:
            raise LeidenError(
                text,
                stacked[0],
                f"a letter with two {stacked[1]}; keep the one meant (the converter keeps the first "
                "and counts extra_mark)",
            )
    segs = _parse(text, strict, leiden)
    out: list[str] = []
    for seg in segs:
        if isinstance(seg, Text):
            out.append(seg.text)
            if any(seg.uncertain):
                leiden["uncertain_letters"] += _count_letters(
                    "".join(c for c, u in zip(seg.text, seg.uncertain, strict=True) if u)
                )
        elif isinstance(seg, Lacuna):
            leiden["lacunae"] += 1
            if seg.max_width is None:
                out.append(_STAND_IN[A.LACUNA_UNKNOWN])
                leiden["lacunae_unknown_width"] += 1
            elif seg.known_width:
                out.append(_STAND_IN[A.LACUNA_LOST] * seg.max_width)
                leiden["lacuna_slots"] += seg.max_width
            else:
                out.append(_STAND_IN[A.LACUNA_ABOUT] * seg.max_width)
                leiden["lacuna_slots"] += seg.max_width
        elif isinstance(seg, Editorial):
            n = _count_letters(seg.text)
            if any(seg.uncertain):
                leiden["uncertain_letters"] += _count_letters(
                    "".join(c for c, u in zip(seg.text, seg.uncertain, strict=True) if u)
                )
            if seg.reason == "surplus":
                leiden["surplus_letters"] += n
                continue
            leiden[_KEPT[seg.reason]] += n
            out.append(seg.text)
        else:  # Comment: an editor's remark or an uninscribed space, a word break
            leiden["editorial_comments"] += 1
            out.append(" ")
    planes, dropped = _text_to_planes("".join(out), known, dropped)
    return Encoded(planes, dropped, leiden)


_MARK_KINDS = ("accents", "breathings", "iota subscripts", "diaereses")


def _stacked_mark(text: str) -> tuple[int, str] | None:
    """The first letter of ``text`` with two marks of one kind (what ``extra_mark`` counts
    inside one letter): ``(0-based position of the character holding the second mark,
    "accents (combining acute accent and combining grave accent)")``, or ``None``."""
    letter: tuple[int, int] | None = None
    seen: dict[int, str] = {}
    for i, ch in enumerate(text):
        for c in unicodedata.normalize("NFD", ch):
            if not unicodedata.combining(c):
                letter, seen = LETTER_OF.get(c), {}
                continue
            fv = MARK_OF.get(c)
            if letter is None or fv is None:
                continue
            field, value = fv
            if field == BREATHING and value == 1 and letter[0] not in BREATHABLE:
                continue  # a smooth breathing on a consonant is the elision mark
            name = unicodedata.name(c, f"U+{ord(c):04X}").lower()
            if field in seen:
                return i, f"{_MARK_KINDS[field]} ({seen[field]} and {name})"
            seen[field] = name
    return None


_BRACKET_SIGNS = re.compile("[\\[\\](){}<>⟨⟩⟦⟧〈〉〚〛\u2329\u232a⸢⸣⌈⌉⸤⸥⌊⌋˹˺]")


def _parse(text: str, strict: bool, leiden: collections.Counter) -> list:
    for _ in range(len(text) + 1):
        try:
            return parse_leiden(text)
        except LacunaTooWideError as err:
            if strict:
                raise
            # a loss too long to count (a typo or a whole column): kept as a loss of unknown
            # width, never joined across; the bracket's other contents go with it
            at = text.rfind(err.notation, 0, err.position + len(err.notation))
            if at < 0:
                at = text.rfind("[", 0, err.position + 1)
                end = text.find("]", err.position)
                err.notation = text[max(0, at) : end + 1 if end >= 0 else len(text)]
                at = max(0, at)
            leiden["lacuna_too_wide"] += 1
            text = text[:at] + "[---]" + text[at + len(err.notation) :]
        except LeidenError as err:
            if strict:
                raise
            leiden["leiden_repaired"] += 1
            p = err.position
            if 0 <= p < len(text) and (
                _BRACKET_SIGNS.match(text, p) or unicodedata.combining(text[p])
            ):
                # the bracket sign at fault, or a combining mark that has no letter to sit on
                text = text[:p] + text[p + 1 :]
            else:
                text = _BRACKET_SIGNS.sub("", text)
    return parse_leiden(_BRACKET_SIGNS.sub("", text))  # unreachable in practice
