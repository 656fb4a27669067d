"""Polytonic Greek Unicode text <-> five aligned letter planes.

A text of ``n`` Greek letters becomes five aligned ``np.uint8`` arrays of shape ``(n,)``
(ids in :mod:`stoicheia.text.alphabet`):

* ``chars``    0..23, the letter α..ω. ς, ϲ, Ϲ fold to σ; ϐ ϑ ϕ ϰ ϱ ϖ to β θ φ κ ρ π;
  also ϵ -> ε, ϴ -> Θ and ϒ -> Υ.
* ``boundary`` 0 word-internal, 1 word-final, 2 sentence-final (the letter carrying a full
  stop or question mark, and always the last letter of the record), 3 unknown.
* ``dia``      ``((accent*3 + breathing)*2 + iota_subscript)*2 + diaeresis`` in ``[0, 48)``,
  48 unknown (:func:`stoicheia.text.alphabet.dia_id`).
* ``cap``      1 if the letter is a capital (decided from the base code point), 2 unknown.
* ``punct``    the mark that FOLLOWS the letter: 0 none, 1 comma, 2 raised dot, 3 colon,
  4 full stop, 5 question mark, 6 unknown.

Reading (:func:`text_to_planes`) works on the canonical decomposition (NFD) of the text,
cut into clusters of one base character plus its combining marks; the marks of a
cluster are collected as a set, so every Unicode spelling of a letter (precomposed oxia
or tonos forms, NFC, NFD, marks in any order) gives the same planes. NFKC is never
applied (it would turn lunate ϲ into ς and spacing breathings into space + mark).

Dropped characters are counted by kind in a ``collections.Counter``:

* ``space`` whitespace (and U+200B zero-width space);
* ``punctuation_other`` punctuation and symbols we do not model (brackets, dashes,
  quotes, †, a ``'``/U+2019/U+02BC that does not follow a letter, ...);
* ``latin`` Latin letters; ``digit`` any Unicode number; ``archaic`` ϝ ϙ ϡ ϛ ϟ ϻ ϸ ͱ ͳ ͷ ϳ
  Ϳ and their capitals; ``other`` anything else (Coptic, other scripts, controls);
* ``unknown_mark`` combining marks we do not model (macron U+0304, breve U+0306, dot
  below U+0323, ...), marks on a non-letter base, and spacing diacritics that could not
  be attached to a letter;
* ``extra_mark`` a second accent/breathing/iota/diaeresis on one letter (the first one
  in NFD order is kept);
* ``elision`` an elision mark (U+2019, U+02BC, U+0027, U+1FBD, U+1FBF directly after a
  letter; a stray U+0313 on a consonant other than ρ, or with no letter under it). A
  U+1FBD/U+1FBF used as a combining mark is a smooth breathing instead: before a vowel
  or ρ with no letter before it (old-style capitals "᾿Αθῆναι"), or between a vowel and
  a consonant (crasis "κα᾽γώ"; elision is always followed by a vowel or a separator);
* ``punctuation_extra`` a modelled punctuation mark on a letter that already has one
  (the stronger by :data:`PUNCT_STRENGTH` survives); ``punctuation_orphan`` a modelled punctuation mark
  with no letter before it; ``format`` invisible format characters (category Cf: soft
  hyphen, ZWJ, BOM, ...), which do not separate words.

Word boundaries come only from separators between two letters: every dropped or
punctuation character except ``format`` ones, and elision. The shape of sigma plays no
part (a final ς inside a token does not end a word).
"""

from __future__ import annotations

import collections
import functools
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from stoicheia.text import alphabet as A

__all__ = [
    "Planes",
    "text_to_planes",
    "planes_to_text",
    "greek_fraction",
    "NormalisedRecord",
    "normalise_record",
    "PUNCT_STRENGTH",
]


# ----------------------------------------------------------------------------------------
# The container
# ----------------------------------------------------------------------------------------


@dataclass(eq=False)
class Planes:
    """Five aligned ``np.uint8`` arrays of shape ``(n,)``, one entry per Greek letter.

    Fields (ids in :mod:`stoicheia.text.alphabet`): ``chars`` 0..23, ``boundary`` 0..3,
    ``dia`` 0..48, ``cap`` 0..2, ``punct`` 0..6. The constructor checks shape and dtype
    (not the value ranges, to stay cheap) and raises ``TypeError``/``ValueError``.
    Equality (``==``) compares all five arrays element-wise and returns a ``bool``.
    """

    chars: np.ndarray
    boundary: np.ndarray
    dia: np.ndarray
    cap: np.ndarray
    punct: np.ndarray

    def __post_init__(self) -> None:
        n = None
        for name in A.PLANES:
            arr = getattr(self, name)
            if not isinstance(arr, np.ndarray) or arr.dtype != np.uint8 or arr.ndim != 1:
                raise TypeError(
                    f"Planes.{name} must be a 1-D np.uint8 array, got "
                    f"{type(arr).__name__} {getattr(arr, 'dtype', '')} "
                    f"shape {getattr(arr, 'shape', '')}; convert with np.asarray(x, np.uint8)"
                )
            if n is None:
                n = arr.shape[0]
            elif arr.shape[0] != n:
                raise ValueError(
                    f"Planes are not aligned: chars has {n} entries, {name} has {arr.shape[0]}"
                )

    def __len__(self) -> int:
        """Number of letters ``n``."""
        return int(self.chars.shape[0])

    def __getitem__(self, s: slice | np.ndarray) -> Planes:
        """Slice (or index with a 1-D int/bool array) all five planes alike.

        A slice returns views into the same memory. An int index raises ``TypeError``
        (one letter is ``p[i:i+1]``).
        """
        if not isinstance(s, (slice, np.ndarray)):
            raise TypeError(
                f"Planes index must be a slice or a 1-D array, got {type(s).__name__}; "
                "use p[i:i+1] for one letter"
            )
        return Planes(*(getattr(self, name)[s] for name in A.PLANES))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Planes):
            return NotImplemented
        return all(np.array_equal(getattr(self, k), getattr(other, k)) for k in A.PLANES)

    __hash__ = None  # type: ignore[assignment]  # mutable arrays: not hashable

    @classmethod
    def concat(cls, parts: list[Planes]) -> Planes:
        """Concatenate records along the letter axis (new arrays); ``[]`` gives :meth:`empty`."""
        if not parts:
            return cls.empty()
        return cls(*(np.concatenate([getattr(p, k) for p in parts]) for k in A.PLANES))

    @classmethod
    def empty(cls) -> Planes:
        """Planes of length 0."""
        return cls(*(np.zeros(0, np.uint8) for _ in A.PLANES))

    def to_dict(self) -> dict[str, np.ndarray]:
        """``{plane name: array}`` for storage, keys in ``alphabet.PLANES`` order (no copy)."""
        return {k: getattr(self, k) for k in A.PLANES}

    @classmethod
    def from_dict(cls, d: Mapping[str, np.ndarray]) -> Planes:
        """Inverse of :meth:`to_dict`; extra keys are ignored, a missing plane raises ``KeyError``.

        Arrays are converted with ``np.asarray(x, dtype=np.uint8)`` after checking that the
        values fit in ``[0, 255]`` (``ValueError`` otherwise).
        """
        arrs = []
        for k in A.PLANES:
            if k not in d:
                raise KeyError(f"Planes.from_dict: plane {k!r} missing (have {sorted(d)})")
            a = np.asarray(d[k])
            if a.dtype != np.uint8:
                if a.size and (a.min() < 0 or a.max() > 255):
                    raise ValueError(f"Planes.from_dict: plane {k!r} has values outside [0, 255]")
                a = a.astype(np.uint8)
            arrs.append(a)
        return cls(*arrs)

    def word_starts(self) -> np.ndarray:
        """``int64`` indices, shape ``(w,)``, of the letters that begin a word.

        Index 0 (if ``n > 0``) and every ``i`` with ``boundary[i-1]`` in (1, 2).
        ``BOUNDARY_UNKNOWN`` counts as word-internal.
        """
        n = len(self)
        if n == 0:
            return np.zeros(0, np.int64)
        b = self.boundary[:-1]
        ends = np.flatnonzero((b == A.BOUNDARY_WORD) | (b == A.BOUNDARY_SENTENCE))
        return np.concatenate([np.zeros(1, np.int64), ends.astype(np.int64) + 1])


# ----------------------------------------------------------------------------------------
# Character tables
# ----------------------------------------------------------------------------------------

#: base code point -> (letter id, is capital)
_LETTER: dict[str, tuple[int, int]] = {}
for _i, _ch in enumerate(A.LETTERS):
    _LETTER[_ch] = (_i, 0)
    _LETTER[chr(0x391 + _i + (1 if _i >= 17 else 0))] = (_i, 1)  # U+03A2 is unassigned
_SIGMA = A.LETTERS.index("σ")
_LETTER.update(
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
_CAPITALS = "".join(chr(0x391 + i + (1 if i >= 17 else 0)) for i in range(A.NUM_LETTERS))
assert _CAPITALS[_SIGMA] == "Σ" and _CAPITALS[-1] == "Ω"

#: letters that can carry a breathing: the seven vowels and ρ
_BREATHABLE = frozenset(A.LETTERS.index(c) for c in "αεηιουωρ")

_ARCHAIC = frozenset("ϝϜϙϘϟϞϛϚϡϠϻϺϸϷͱͰͳͲͷͶϳͿ")

# combining mark -> (field, value); field 0 accent, 1 breathing, 2 iota subscript, 3 diaeresis
_ACC, _BR, _IOTA, _DIAER = 0, 1, 2, 3
_MARK: dict[str, tuple[int, int]] = {
    "\u0301": (_ACC, 1),  # acute (oxia and tonos both decompose to it)
    "\u0341": (_ACC, 1),  # acute tone mark (NFD maps it to U+0301 anyway)
    "\u0300": (_ACC, 2),  # grave (varia)
    "\u0340": (_ACC, 2),
    "\u0342": (_ACC, 3),  # perispomeni
    "\u0302": (_ACC, 3),  # circumflex as Latin-style hat
    "\u0303": (_ACC, 3),  # circumflex as tilde
    "\u0313": (_BR, 1),  # psili / smooth
    "\u0343": (_BR, 1),  # koronis (NFD maps it to U+0313 anyway)
    "\u0314": (_BR, 2),  # dasia / rough
    "\u0345": (_IOTA, 1),  # ypogegrammeni
    "\u0308": (_DIAER, 1),
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

#: Rank used when several marks follow one letter: the highest rank survives.
#: Sentence-ending marks outrank pauses (a "." must not be lost to a following ","), and
#: the question mark outranks the full stop (it carries more information: ";." keeps ";").
#: The ids happen to be ordered weakest->strongest, so the rank is the id itself.
PUNCT_STRENGTH: dict[int, int] = {p: p for p in range(A.NUM_PUNCT)}

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
}
_SMOOTH_ONLY = A.dia_id(0, 1, 0, 0)

# cluster kinds; the order matters: kinds >= _K_PUNCT need the letter index of each cluster,
# kinds >= _K_APOS need their neighbours (see text_to_planes)
_K_LETTER, _K_SEP, _K_FORMAT, _K_PUNCT, _K_APOS, _K_SPACING, _K_YPO = range(7)

_COMBINING = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
#: one base character plus its combining marks (or a run of marks at the text start)
_CLUSTER_RE = re.compile(f"[^{_COMBINING}][{_COMBINING}]*|[{_COMBINING}]+", re.S)


def _char_kind(ch: str) -> str:
    """Drop kind of a single non-letter, non-punctuation character."""
    if ch.isspace() or ch == "\u200b":
        return "space"
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


def _classify(cl: str) -> tuple[int, int, int, tuple[tuple[str, int], ...]]:
    """Classify one NFD cluster: ``(kind, value, is_separator, static drops)``.

    ``value`` is, for a letter, ``((letter*48 + dia)*2 + cap)*2 + elided`` (``elided``: a
    stray U+0313 on a consonant ends the word after it); for punctuation the punct id;
    for a spacing diacritic its dia id; otherwise 0.
    """
    base, marks = cl[0], cl[1:]
    drops: collections.Counter = collections.Counter()
    if base in _LETTER:
        letter, cap = _LETTER[base]
        fields = [0, 0, 0, 0]
        elided = 0
        for m in marks:
            fv = _MARK.get(m)
            if fv is None:
                drops["unknown_mark"] += 1
                continue
            field, v = fv
            if field == _BR and v == 1 and letter not in _BREATHABLE:
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
        return _K_LETTER, value, 0, tuple(drops.items())
    if base in _PUNCT:
        _mark_drops(marks, drops)
        return _K_PUNCT, _PUNCT[base], 1, tuple(drops.items())
    if base in _APOSTROPHE:
        _mark_drops(marks, drops)
        return _K_APOS, 0, 1, tuple(drops.items())
    if base in _SPACING:
        fields = list(_SPACING[base])
        for m in marks:
            fv = _MARK.get(m)
            if fv is None:
                drops["unknown_mark"] += 1
            elif fields[fv[0]] == 0:
                fields[fv[0]] = fv[1]
            else:
                drops["extra_mark"] += 1
        return _K_SPACING, A.dia_id(*fields), 1, tuple(drops.items())
    if base == "\u037a":  # spacing ypogegrammeni: the iota subscript of the letter before
        _mark_drops(marks, drops)
        return _K_YPO, 0, 0, tuple(drops.items())
    kind = _char_kind(base)
    if kind == "unknown_mark":  # a run of marks at the very start of the text
        _mark_drops(cl, drops)
        return _K_SEP, 0, 1, tuple(drops.items())
    drops[kind] += 1
    _mark_drops(marks, drops)
    if kind == "format":
        return _K_FORMAT, 0, 0, tuple(drops.items())
    return _K_SEP, 0, 1, tuple(drops.items())


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
        kind, value, sep, drops = _classify(cl)
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


_INTERN = _Intern()

_VOWELS = frozenset(A.LETTERS.index(c) for c in "αεηιουω")
_LETTER_IS_BREATHABLE = np.zeros(A.NUM_LETTERS, bool)
_LETTER_IS_BREATHABLE[list(_BREATHABLE)] = True


# ----------------------------------------------------------------------------------------
# Text -> planes
# ----------------------------------------------------------------------------------------


def _check_known(known: Mapping[str, bool] | None) -> dict[str, bool]:
    out = dict.fromkeys(A.PLANES, True)
    if known is None:
        return out
    for k, v in known.items():
        if k not in out:
            raise ValueError(f"known: unknown plane {k!r}; planes are {A.PLANES}")
        out[k] = bool(v)
    if not out["chars"]:
        raise ValueError("known['chars'] must be True: the chars plane has no UNKNOWN id")
    return out


def text_to_planes(
    text: str, known: Mapping[str, bool] | None = None
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
    if not isinstance(text, str):
        raise TypeError(f"text_to_planes expects str, got {type(text).__name__}")
    kn = _check_known(known)
    dropped: collections.Counter = collections.Counter()
    clusters = _CLUSTER_RE.findall(unicodedata.normalize("NFD", text))
    if not clusters:
        return _fill_unknown(Planes.empty(), kn), dropped
    intern = _INTERN
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
    is_letter = kind == _K_LETTER
    m = ids.shape[0]

    lval = value[is_letter]
    cap = ((lval >> 1) & 1).astype(np.uint8)
    dia = ((lval >> 2) % A.NUM_DIA).astype(np.uint8)
    chars = ((lval >> 2) // A.NUM_DIA).astype(np.uint8)
    sep[is_letter] = (lval & 1).astype(bool)  # a stray U+0313 on a consonant ends the word
    n = int(lval.shape[0])
    kmax = int(kind.max())
    # index of the last letter at or before each cluster (-1 before the first letter)
    letter_no = np.cumsum(is_letter) - 1 if kmax >= _K_PUNCT else None

    if kmax >= _K_APOS:  # rare context-dependent clusters: small Python loop
        _resolve_context(kind, value, sep, is_letter, letter_no, chars, dia, dropped)

    # Punctuation: onto the last letter before the mark; keep the strongest.
    punct = np.zeros(n, np.uint8)
    if letter_no is not None:
        pmask = kind == _K_PUNCT
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
    planes = Planes(chars, boundary, dia, cap, punct)
    if not all(kn.values()):
        _fill_unknown(planes, kn)
    return planes, dropped


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
    for j in np.flatnonzero(kind >= _K_APOS).tolist():
        k = int(kind[j])
        after_letter = j > 0 and bool(is_letter[j - 1])
        if k == _K_APOS:
            dropped["elision" if after_letter else "punctuation_other"] += 1
        elif k == _K_YPO:
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
        else:  # _K_SPACING
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
            if not after_letter and before_letter:
                li = letter_no[j] + 1
                if _LETTER_IS_BREATHABLE[chars[li]]:
                    cur = list(A.dia_fields(int(dia[li])))
                    for f, v in enumerate(A.dia_fields(payload)):
                        if v:
                            if cur[f]:
                                dropped["extra_mark"] += 1
                            else:
                                cur[f] = v
                    dia[li] = A.dia_id(*cur)
                    continue
            dropped["elision" if payload == _SMOOTH_ONLY else "unknown_mark"] += 1


def _fill_unknown(p: Planes, kn: dict[str, bool]) -> Planes:
    """Overwrite (in place) every plane with ``kn[name] == False`` by its UNKNOWN id."""
    for name in A.PLANES[1:]:
        if not kn[name]:
            getattr(p, name)[:] = A.UNKNOWN[name]
    return p


# ----------------------------------------------------------------------------------------
# Planes -> text
# ----------------------------------------------------------------------------------------

_RENDER_PUNCT = ("", ",", "\u0387", ":", ".", "\u037e", "")
_MARK_CHARS = (
    ("", "\u0301", "\u0300", "\u0342"),  # accent
    ("", "\u0313", "\u0314"),  # breathing
)


@functools.lru_cache(maxsize=1)
def _letter_table() -> np.ndarray:
    """Object array of NFC letter strings indexed by ``((char*49 + dia)*2 + cap)*2 + final``."""
    out = []
    for c in range(A.NUM_LETTERS):
        for d in range(A.NUM_DIA + 1):
            for cap in (0, 1):
                for final in (0, 1):
                    base = _CAPITALS[c] if cap else A.LETTERS[c]
                    if final and c == _SIGMA and not cap:
                        base = "ς"
                    if d == A.DIA_UNKNOWN:
                        out.append(base)
                        continue
                    acc, br, io, di = A.dia_fields(d)
                    # Canonical order: diaeresis, breathing, accent (all class 230, so the
                    # order decides composition), then ypogegrammeni (class 240).
                    s = base + ("\u0308" if di else "") + _MARK_CHARS[1][br] + _MARK_CHARS[0][acc]
                    s += "\u0345" if io else ""
                    out.append(unicodedata.normalize("NFC", s))
    arr = np.empty(len(out), object)
    arr[:] = out
    return arr


def _check_range(p: Planes, name: str, limit: int) -> None:
    arr = getattr(p, name)
    if arr.size and int(arr.max()) > limit:
        i = int(np.flatnonzero(arr > limit)[0])
        raise ValueError(
            f"planes_to_text: {name}[{i}] = {int(arr[i])} is outside [0, {limit}] "
            "(noised/masked planes cannot be rendered; render the clean planes)"
        )


def planes_to_text(planes: Planes) -> str:
    """Render :class:`Planes` as polytonic Greek text.

    Letters are NFC (precomposed where Unicode has a form: base + diaeresis, breathing,
    accent, ypogegrammeni in canonical order, then NFC); capitals where ``cap == 1``;
    ς for a lowercase σ whose boundary is 1 or 2. After each letter comes its
    punctuation (comma ``,``, raised dot U+0387, colon ``:``, full stop ``.``, question
    mark U+037E), then a space if its boundary is 1 or 2, except after the last letter.
    UNKNOWN values render as none (no mark, lowercase, no space, no punctuation).

    The two Greek punctuation characters are emitted as U+0387 and U+037E even though
    NFC would replace them by U+00B7 and ``;``; :func:`text_to_planes` reads both.

    Round trip: ``text_to_planes(planes_to_text(p))[0] == p`` holds for planes with
    ``chars`` < 24, ``dia`` < 48, ``cap`` < 2, last boundary 2, boundary 2 exactly where
    punct is 4/5 or last, punct != 0 only where boundary >= 1, and no smooth breathing
    on a consonant other than ρ (text cannot tell that from elision, which is dropped).
    Raises ``ValueError`` if a value is outside its plane's id space (chars 0..23,
    boundary 0..3, dia 0..48, cap 0..2, punct 0..6).
    """
    n = len(planes)
    if n == 0:
        return ""
    _check_range(planes, "chars", A.NUM_LETTERS - 1)
    _check_range(planes, "boundary", A.BOUNDARY_UNKNOWN)
    _check_range(planes, "dia", A.DIA_UNKNOWN)
    _check_range(planes, "cap", A.CAP_UNKNOWN)
    _check_range(planes, "punct", A.PUNCT_UNKNOWN)
    ends = (planes.boundary == A.BOUNDARY_WORD) | (planes.boundary == A.BOUNDARY_SENTENCE)
    cap = (planes.cap == 1).astype(np.int64)
    key = ((planes.chars.astype(np.int64) * (A.NUM_DIA + 1) + planes.dia) * 2 + cap) * 2 + ends
    letters = _letter_table()[key].tolist()
    space = ends.copy()
    space[-1] = False
    suffix = np.array([p + s for p in _RENDER_PUNCT for s in ("", " ")], object)
    suffixes = suffix[planes.punct.astype(np.int64) * 2 + space].tolist()
    parts: list[str] = [""] * (2 * n)
    parts[0::2] = letters
    parts[1::2] = suffixes
    return "".join(parts)


# ----------------------------------------------------------------------------------------
# Records
# ----------------------------------------------------------------------------------------

#: drop kinds that count against a record being Greek (see :func:`greek_fraction`)
NON_GREEK_KINDS = ("latin", "digit", "archaic", "other")


def greek_fraction(counts: Mapping[str, int], n_letters: int) -> float:
    """Share of Greek letters among the record's "content" characters, in ``[0, 1]``.

    ``n_letters / (n_letters + latin + digit + archaic + other)``, with the kinds read
    from ``counts`` (the ``dropped`` Counter of :func:`text_to_planes`). Spaces,
    punctuation, elision, format characters and combining marks are not in the
    denominator: they say nothing about the language. Returns 0.0 when the denominator
    is 0 (no content at all).
    """
    denom = n_letters + sum(int(counts.get(k, 0)) for k in NON_GREEK_KINDS)
    return n_letters / denom if denom else 0.0


class NormalisedRecord(NamedTuple):
    """Result of :func:`normalise_record`.

    ``planes`` is ``None`` when the record is rejected; ``reject_reason`` is then
    ``"empty"`` (no Greek letter and no non-Greek content either) or ``"not_greek"``
    (greek_fraction < min_greek),
    else ``None``. ``dropped`` always holds the counts of dropped characters by kind.
    """

    planes: Planes | None
    dropped: collections.Counter
    reject_reason: str | None


def normalise_record(
    text: str, known: Mapping[str, bool] | None = None, min_greek: float = 0.95
) -> NormalisedRecord:
    """:func:`text_to_planes` plus the record filter.

    Rejects with ``"empty"`` when the text has no Greek letter and nothing that counts
    against it either (only spaces, punctuation, marks: the :func:`greek_fraction`
    denominator is 0), and with ``"not_greek"`` when :func:`greek_fraction` is below
    ``min_greek`` (so a Latin or English record with no Greek letter at all is
    ``"not_greek"``, not ``"empty"``). ``min_greek`` is a fraction in ``[0, 1]``
    (``ValueError`` outside it).
    """
    if not 0.0 <= min_greek <= 1.0:
        raise ValueError(f"min_greek must be a fraction in [0, 1], got {min_greek}")
    planes, dropped = text_to_planes(text, known)
    if len(planes) == 0:  # rejected even with min_greek == 0
        non_greek = any(dropped.get(k, 0) for k in NON_GREEK_KINDS)
        return NormalisedRecord(None, dropped, "not_greek" if non_greek else "empty")
    if greek_fraction(dropped, len(planes)) < min_greek:
        return NormalisedRecord(None, dropped, "not_greek")
    return NormalisedRecord(planes, dropped, None)
