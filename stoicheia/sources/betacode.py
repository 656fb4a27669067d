"""Beta Code -> NFC Unicode Greek, around the ``betacode`` package (PyPI ``betacode==1.1``).

Letters, breathings, accents, iota subscript, diaeresis and capitals (``*)/ai+di`` -> Ἄϊδι)
are converted by :func:`betacode.conv.beta_to_uni`. Measured on the Perseus files, this module
fixes what the library gets wrong or does not know (each fix is tested in
``tests/test_sources.py``; the counted ones go to ``counts``):

Library errors
  * ``'`` after ``a``/``i``/``u`` is read as a *breve* key (``a'`` -> ᾱ); ``&`` after them as
    a *macron*. We hide ``'`` (elision, U+2019) from the library, and ``&...$`` Latin spans
    are removed before conversion (:func:`strip_latin_spans`), never transliterated.
  * grave + iota subscript (``a\\|``, ``h\\|``, ``w\\|``) are missing from its table (ὴ| instead
    of ῂ): converted here.
  * its final-sigma rule overrides explicit ``s1``/``s2`` and makes a sigma before ``]`` or
    ``>`` final inside a word (``e)/la[s]en``). Sigmas are recomputed (:func:`fix_sigmas`);
    ``s1`` (medial), ``s2``/``j`` (final) are kept as written; ``s3`` is lunate ϲ.
Beta Code the library passes through untouched
  * ``#`` alone is the numeral sign (keraia, U+0374), ``#1`` ϟ, ``#2`` ϛ, ``#3`` ϙ, ``#5`` ϡ
    (TLG Beta Code manual; ``e)n #2# i(storiw=n`` in Polybius is "in book 6"). Other ``#N``
    (symbols) -> a space, counted ``beta_symbol_code``.
  * ``%`` is the crux † (``%N`` other critical signs -> a space, ``beta_symbol_code``);
    ``@N`` and ``^`` are page-layout codes (dropped, ``beta_format_code``); ``"N`` are quote
    variants -> ``"``; ``[1 ]1`` ( ), ``[2 ]2`` ⟨ ⟩, ``[3 ]3`` { }, ``[4 ]4`` ⟦ ⟧.
  * ``?`` after a letter is the editorial under-dot (uncertain letter, U+0323), never a
    question mark (that is ``;``).
  * any other ASCII digit is an editor's line/note number, never Greek: dropped (``digit``).
Source slips, repaired per token (``repaired_*`` counts)
  * a breathing/accent before a lowercase vowel at the start of a token is a capital whose
    ``*`` was lost (``)en de\\`` -> Ἐν δὲ, Strabo) -- unless a lone ``(``/``)`` precedes a
    vowel that has its own breathing: that is a parenthesis (``(ou) ga\\r`` -> (οὐ γὰρ).
  * accents before ``*`` (``=*)iris``), and a breathing before ``*`` + a vowel that has
    none (``)*indoi\\``), are moved after it; ``R)*R(`` (Hippocrates) is ῤῥ.
  * a ``)`` ending a token after a consonant other than ``n``/``s`` is an elision mark
    (``a)ll)``, ``kat)``, ``par)`` in Dio Chrysostom, Arrian, Lucian) -> U+2019; after a vowel of
    a word that already has a consonant and an accent or breathing it is a closing
    parenthesis (``diedi/dou),``), never a breathing on the last vowel.
Characters that are not Beta Code
  * ``:`` becomes U+00B7 and ``;`` stays U+003B: they are the NFC forms of the Greek ano
    teleia U+0387 and question mark U+037E (which canonically decompose to them), so NFC
    text cannot hold U+0387/U+037E; what matters is that the Beta colon never becomes ``:``.
  * U+2027 (ano teleia in the Hippocratic files) -> U+00B7; U+1FC0 (a spacing circumflex
    typed after a letter) -> ``=``; other spacing Greek diacritics (U+1FBD..U+1FFE, U+0384/5,
    OCR debris in Athenaeus) and U+FFFD are dropped (``stray_char``).

Conversion is per whitespace-separated token with a cache, so the 75 MB Perseus corpus
converts in well under a minute although the library walks a trie character by character.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Mapping

from betacode.conv import beta_to_uni

__all__ = [
    "ELISION",
    "EDITORIAL_MARKS",
    "beta_to_unicode",
    "strip_latin_spans",
    "fix_sigmas",
]

ELISION = "\u2019"  #: right single quotation mark, the Unicode elision mark
UNDERDOT = "\u0323"  #: combining dot below: an uncertain letter

#: Characters that do not interrupt a word for the final-sigma rule: editorial brackets,
#: half brackets and cruces (``ἔλα[σ]εν`` keeps a medial sigma).
EDITORIAL_MARKS = "[]<>\u27e8\u27e9\u27e6\u27e7\u2e22\u2e23\u2020\u2021"

# Private-use markers that the library copies untouched (it copies any unknown character).
_MEDIAL = "\ue0f0"  # explicit medial sigma (s1)
_FINAL = "\ue0f1"  # explicit final sigma (s2, j)
_APOS = "\ue0f2"  # elision, kept away from the library's a'/i'/u' breve keys
_RPAR = "\ue0f3"  # a closing parenthesis that the library would read as a breathing
_MARKERS = {ord(_MEDIAL): "σ", ord(_FINAL): "ς", ord(_APOS): ELISION, ord(_RPAR): ")"}

_NUMERAL_CODES = {"": "\u0374", "1": "\u03df", "2": "\u03db", "3": "\u03d9", "5": "\u03e1"}
_BRACKET_CODES = {
    "[1": "(",
    "]1": ")",
    "[2": "\u27e8",
    "]2": "\u27e9",
    "[3": "{",
    "]3": "}",
    "[4": "\u27e6",
    "]4": "\u27e7",
}
_STRAY = "\ufffd\u0384\u0385\u1fbd-\u1fbf\u1fc1\u1fcd-\u1fcf\u1fdd-\u1fdf\u1fed-\u1fef\u1ffd\u1ffe"

# One pass over the raw Beta Code for everything the library must not see. Alternatives are
# tried left to right at each position, so 's1', '#12', '[1' win over the bare digit rule.
_PRE = re.compile(
    r"#(\d*)|%(\d*)|@\d*|\^|\"\d+|[\[\]]\d+|[sS][123]|j|'|\?|\d+|[\u2027\u1fc0" + _STRAY + "]"
)

_LETTER = r"[^\W\d_]"  # any Unicode letter (Greek letters after conversion)
_WORDISH = rf"(?:{_LETTER}|[\u0300-\u036f{_MEDIAL}{_FINAL}{_APOS}])"
_MARKS = f"[{re.escape(EDITORIAL_MARKS)}]*"
_SIGMA_MEDIAL = re.compile(rf"[σς](?={_MARKS}{_WORDISH})")
_SIGMA_FINAL = re.compile(rf"σ(?!{_MARKS}{_WORDISH})")
_WS = re.compile(r"\s+")
_LATIN = re.compile(r"&[^$]*(\$|\Z)")

# Token repairs (see the module docstring).
_DOUBLE_RHO = re.compile(r"([rR]\))\*([rR]\()")
_GRAVE_IOTA = re.compile(r"(?<!\*)([ahwAHW])(?:\\\||\|\\)")
_GRAVE_IOTA_CHAR = {"a": "\u1fb2", "h": "\u1fc2", "w": "\u1ff2"}
_DIA_BEFORE_STAR = re.compile(r"^([^A-Za-z*]*?)([)(/\\=+]+)\*")
_LEAD = re.compile(r"^([^A-Za-z*)(/\\=+|]*)([)(/\\=]+)([aehiowurAEHIOWUR])")
_VOWEL = re.compile(r"[aehiowurAEHIOWUR]")
_OWN_BREATHING = re.compile(r"[aehiowurAEHIOWUR]{1,2}[/\\=+]*[)(]")
_TRAIL = re.compile(r"^(.*?)([A-Za-z])([/\\=+|]*)([)(])([^A-Za-z*)(/\\=+|]*)$", re.S)
_CONSONANT = re.compile(r"[b-df-hj-np-tv-zB-DF-HJ-NP-TV-Z]")
_MARKED = re.compile(r"[/\\=)(]")
_NON_BETA = re.compile(r"[^A-Za-z*)(/\\=+|]")
_ELIDABLE = frozenset("bdgklmpqtfxcr")  # Beta letters an elided word can end in

_CACHE: dict[str, tuple[str, tuple[str, ...]]] = {}
_CACHE_MAX = 2_000_000


def strip_latin_spans(text: str, counts: Counter[str] | None = None) -> str:
    """Remove Beta Code Latin spans ``&...$`` from ``text`` (one Perseus text node).

    A span runs from ``&`` to the next ``$``, or to the end of ``text`` when no ``$`` follows
    (counted as ``latin_unterminated``: a text node is the largest unit we trust, so an
    unclosed span never eats the rest of a record). The span becomes a space, so the Greek
    on both sides never glues into one word. ``counts`` (optional) receives ``latin_span``
    and ``latin_chars`` (characters removed).
    """
    if "&" not in text:
        return text

    def cut(m: re.Match[str]) -> str:
        if counts is not None:
            counts["latin_span"] += 1
            counts["latin_chars"] += len(m.group(0))
            if not m.group(1):
                counts["latin_unterminated"] += 1
        return " "

    return _LATIN.sub(cut, text)


def _pre(m: re.Match[str], counts: Counter[str] | None) -> str:
    s = m.group(0)
    c = s[0]
    out: str
    key = ""
    if c == "#":
        out = _NUMERAL_CODES.get(m.group(1), " ")
        key = "" if m.group(1) in _NUMERAL_CODES else "beta_symbol_code"
    elif c == "%":
        out, key = ("\u2020", "") if not m.group(2) else (" ", "beta_symbol_code")
    elif c in "@^":
        out, key = "", "beta_format_code"
    elif c == '"':
        out = '"'
    elif c in "[]":
        out = _BRACKET_CODES.get(s, c)
        key = "" if s in _BRACKET_CODES else "beta_symbol_code"
    elif c in "sS":  # s3 (lunate) is left to the library
        out = s if s[1] == "3" else _MEDIAL if s[1] == "1" else _FINAL
    elif c == "j":
        out = _FINAL
    elif c == "'":
        out = _APOS
    elif c == "?":
        out = UNDERDOT
    elif c.isdigit():
        out, key = "", "digit"
    elif c == "\u2027":
        out = "\u00b7"
    elif c == "\u1fc0":
        out = "="
    else:
        out, key = "", "stray_char"
    if key and counts is not None:
        counts[key] += 1
    return out


def _repair(tok: str) -> tuple[str, tuple[str, ...]]:
    """Fix the source slips of one Beta Code token; return it and the repairs made."""
    fixes: list[str] = []
    if ")*" in tok:
        tok, n = _DOUBLE_RHO.subn(r"\1\2", tok)
        fixes += ["repaired_double_rho"] * n
    if "|" in tok:
        tok = _GRAVE_IOTA.sub(lambda m: _GRAVE_IOTA_CHAR[m.group(1).lower()], tok)
    m = _DIA_BEFORE_STAR.match(tok)
    # accents before '*' are always misplaced; a lone breathing only when the capital is a
    # vowel without its own breathing ('(*filokth/ths' is a parenthesis, ')*indoi\' is not)
    if m and (
        any(ch in m.group(2) for ch in "/\\=+")
        or (_VOWEL.match(tok, m.end()) and not _OWN_BREATHING.match(tok, m.end()))
    ):
        tok = m.group(1) + "*" + m.group(2) + tok[m.end() :]
        fixes.append("repaired_mark_before_star")
    m = _LEAD.match(tok)
    if m:
        dia = m.group(2)
        if any(ch in dia for ch in "/\\=") or not _OWN_BREATHING.match(tok, m.start(3)):
            tok = m.group(1) + "*" + tok[m.start(2) :]
            fixes.append("repaired_capital")
    m = _TRAIL.match(tok)
    if m:
        head, letter, acc, br, tail = m.groups()
        low = letter.lower()
        word = _NON_BETA.split(head)[-1]  # the word's own letters (not a glued neighbour)
        if low in "aehiowu":
            # only ')' can close a parenthesis; a final '(' is the breathing of a glued word
            if br == ")" and _CONSONANT.search(word) and (acc or _MARKED.search(word)):
                tok = head + letter + acc + _RPAR + tail
                fixes.append("repaired_parenthesis")
        elif br == ")" and not acc and low in _ELIDABLE:
            tok = head + letter + _APOS + tail
            fixes.append("repaired_elision")
    return tok, tuple(fixes)


def _convert_token(token: str, counts: Counter[str] | None) -> str:
    hit = _CACHE.get(token)
    if hit is None:
        fixed, fixes = _repair(token)
        hit = (beta_to_uni(fixed), fixes)
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[token] = hit
    if hit[1] and counts is not None:
        counts.update(hit[1])
    return hit[0]


def fix_sigmas(text: str) -> str:
    """Set every ``σ``/``ς`` in converted text to its medial or final form.

    A sigma is final iff the next character, after skipping :data:`EDITORIAL_MARKS`, is not a
    letter, a combining mark or the private-use elision marker that stands for Beta ``'``
    while converting (``σ’`` is the elided ``σε``: medial, as the library also writes it); a
    real U+2019 is a closing quotation mark (``&rsquo;``) and ends the word. Input and output
    are Unicode strings of equal length.
    """
    text = _SIGMA_MEDIAL.sub("σ", text)
    return _SIGMA_FINAL.sub("ς", text)


def beta_to_unicode(
    beta: str,
    expand: Mapping[int, str] | None = None,
    counts: Counter[str] | None = None,
    *,
    repairs: Counter[str] | None = None,
) -> str:
    """Convert a Beta Code string (Latin spans already removed) to NFC Unicode Greek.

    ``expand`` maps the code points of placeholder characters (private-use characters that
    stand for SGML entities, see :mod:`stoicheia.sources.perseus`) to their expansion; they
    pass through the library untouched and are expanded before the sigma rule, so ``&lpar;``
    can never become a rough breathing. Whitespace runs become one space; the result is
    stripped. ``counts`` (optional) receives the keys named in the module docstring, the
    token repairs (``repaired_*``) in ``repairs`` if given (a text converted in pieces keeps
    them apart to count them in the order of the whole).
    Raises nothing: characters outside Beta Code are copied.
    """
    beta = _PRE.sub(lambda m: _pre(m, counts), beta)
    fixes = repairs if repairs is not None else counts
    text = " ".join(_convert_token(t, fixes) for t in _WS.split(beta) if t)
    if expand:
        text = _WS.sub(" ", text.translate(expand)).strip()
    text = fix_sigmas(text).translate(_MARKERS)
    return unicodedata.normalize("NFC", text)
