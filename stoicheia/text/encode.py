"""Polytonic Greek Unicode text (with Leiden notation) -> aligned letter planes.

:func:`encode_text` is what every reader's text goes through (via
:func:`stoicheia.text.filter.normalise_record`): it parses the Leiden notation with
:func:`stoicheia.text.leiden.parse_leiden` and encodes letters, lacunae and editorial
letters; :func:`text_to_planes` is the Leiden-blind core (brackets are punctuation).

The steps of the core, each in its module: the string-level pass on the NFD text
(:func:`stoicheia.text.prepass.prepass`, with the letters of other scripts read as Greek by
:mod:`stoicheia.text.lookalikes`), the table lookup of each cluster
(:mod:`stoicheia.text.clusters`), the clusters read by their neighbours (elision, crasis,
spacing diacritics: :func:`stoicheia.text.elision.resolve_context`), then the planes
(here: punctuation onto its letter, word and sentence boundaries, lacuna slots).

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
punctuation character except ``format`` and ``control`` ones, and elision. The shape of sigma
plays no part (a final ς inside a token does not end a word). Leiden signs never separate
words.
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
    LACUNA_CHARS,
    LETTER_OF,
    MARK_OF,
    OMISSION_CHAR,
)
from stoicheia.text.elision import resolve_context
from stoicheia.text.leiden import parse_leiden, parse_leiden_lenient
from stoicheia.text.leiden_segments import Editorial, Lacuna, LeidenError, Text
from stoicheia.text.lookalikes import GREEK_BASE
from stoicheia.text.planes import Planes
from stoicheia.text.prepass import prepass

__all__ = [
    "text_to_planes",
    "encode_text",
    "drop_stacked_marks",
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

_STAND_IN = {v: k for k, v in LACUNA_CHARS.items()}
_HAS_STAND_IN = re.compile("[" + "".join(LACUNA_CHARS) + OMISSION_CHAR + "]")


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
    clusters = CLUSTER_RE.findall(prepass(unicodedata.normalize("NFD", text), dropped))
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
        resolve_context(kind, value, sep, is_letter, letter_no, chars, dia, dropped)

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
    ``partly_lost_letters``, ``added_letters`` (``\\ /``: added above the line),
    ``surplus_letters`` (dropped: not part of the text), ``uncertain_letters`` (dots below),
    ``editorial_comments``, ``leiden_repaired``, ``lacuna_too_wide``: a counted lacuna above
    ``MAX_LACUNA_WIDTH`` letters, read as ``[---]``).
    """

    planes: Planes
    dropped: collections.Counter
    leiden: collections.Counter


def _count_letters(s: str) -> int:
    return sum(1 for c in unicodedata.normalize("NFD", s) if c in GREEK_BASE)


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
    letters where they stand (and in ``\\ /``, added above the line), with no word break at
    the signs (``ἔλα[σ]εν`` is one word); letters in ``{ }`` (surplus) are left out, also
    without a word break; dots below are removed (the letters counted uncertain); comments
    (``(?)``, ``vac.``) separate words.

    ``strict=True`` raises :class:`stoicheia.text.leiden_segments.LeidenError` for notation
    that cannot be read; ``strict=False`` (the readers) repairs it with
    :func:`stoicheia.text.leiden.parse_leiden_lenient` (dropping the offending bracket
    character or combining mark, or, for any other fault, every bracket sign of the text),
    counts ``leiden_repaired`` and goes on. ``known`` as in :func:`text_to_planes`.
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
                f"a letter with two {stacked[1]}; keep the one meant "
                "(the converter keeps the first and counts extra_mark)",
            )
    segs = parse_leiden(text) if strict else parse_leiden_lenient(text, leiden)
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


def drop_stacked_marks(text: str) -> tuple[str, int]:
    """``text`` with the second (third...) mark of one kind on a letter removed, as the
    converter does (it keeps the first and counts ``extra_mark``): ``Χρο͂͂`` (two perispomeni)
    becomes ``Χρο͂``. Returns ``(text, marks removed)``. Only free-standing combining
    characters are removed (a precomposed character starts a letter, so it never holds the
    second mark of one); the rest of ``text``, Leiden signs included, is unchanged, so the
    result reads with ``encode_text(strict=True)`` where only stacked marks stopped it."""
    removed = 0
    while (hit := _stacked_mark(text)) is not None:
        i = hit[0]
        if not unicodedata.combining(text[i]):  # cannot happen (docstring); never loop forever
            break
        text = text[:i] + text[i + 1 :]
        removed += 1
    return text, removed


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
