"""Texts given to ``restore`` that are not Leiden Unicode Greek: XML markup and Beta Code.

:func:`refuse_foreign_input` runs before the Leiden parse (:func:`~.reading.read_input`). Each
refusal is one :class:`RestoreError` line that names what was seen and gives the fix:

* **XML markup** (:func:`find_markup`): a tag is ``<`` and a name, ``/``, ``?`` or ``!``,
  with its ``>``: ``<?xml ...?>``, ``<!DOCTYPE ...>``, ``<!-- -->``, ``</name>``,
  ``<name/>``, ``<name attr="v">``, ``<name attr="v"`` left open, and a bare ``<name>`` when
  ``</name>`` follows or ``name`` is an element of a TEI document (:data:`_TEI_NAMES`). Leiden's
  own ``< >`` (letters omitted by the scribe, ``<π>``, ``ἔδωκ<ε>``) holds Greek letters, so a
  tag is never one of them; a Latin look-alike there (``ἔδωκ<E>``) is no tag either. A whole
  document (``<?xml``, ``<!DOCTYPE``, ``<TEI>``, ``<text>``, ...) is sent to ``--epidoc``;
  elements inside a line (``<gap/>``, ``<supplied>``) are answered with the same line in
  Leiden, written by the EpiDoc reader (:func:`stoicheia.sources.epidoc_walk.unit_leiden`).
* **Beta Code** (:func:`beta_code_signs`): no Greek letter, and Latin letters with at least
  two of Beta Code's own signs, on a third of the words or more: an accent ``/ \\ =`` or a
  breathing ``) (`` after a vowel (a breathing also on ρ, ``r(``), ``*`` before a capital,
  ``|`` (iota subscript) after ``a h w``; one of them neither ``/`` nor ``|``, which may be
  line divisions (``co/niugi``); TLG capitals (``KAI\\ E)/DWKE``) alike. A Leiden
  parenthesis of Latin letters (``D(is)``, ``Aur(elius)``) is an expansion, not a breathing,
  so Latin is never taken for Beta Code: it gets the "no Greek letter" line. The Greek to give
  instead converts only the Beta Code (:func:`stoicheia.sources.betacode.beta_to_unicode`);
  the Leiden lacunae (``[---]``, ``[...]``, ``[5±3]``, ``[-ca.5-]``), dashes, numbers,
  ``vac.`` and a doubtful supplement's ``?]`` are kept as typed.
"""

from __future__ import annotations

import re
import unicodedata

from stoicheia.inference.restore.gaps import RestoreError

__all__ = ["beta_code_signs", "find_markup", "no_greek_letter", "quoted", "refuse_foreign_input"]

#: the longest input quoted whole in a message (characters); a longer one ends in "…"
QUOTE_LIMIT = 80

_GREEK = re.compile(r"[\u0370-\u03ff\u1f00-\u1fff]")

_NAME = r"[A-Za-z_][A-Za-z0-9_.:-]*"
_ATTR = r"\s+" + _NAME + r"\s*=\s*(?:\"[^\"<]*\"|'[^'<]*')"
#: an XML tag (module docstring); group "bare": the name of a ``<name>`` without attributes
_TAG = re.compile(
    r"<\?[A-Za-z][^<>]*\?>"  # <?xml version="1.0"?>
    r"|<!--.*?-->|<!\[CDATA\[.*?\]\]>|<![A-Z][^<>]*>"  # comment, CDATA, <!DOCTYPE ...>
    rf"|</{_NAME}\s*>"  # end tag
    rf"|<{_NAME}(?:{_ATTR})+\s*/?>|<{_NAME}\s*/>"  # with attributes, or empty
    rf"|<{_NAME}(?:{_ATTR})+"  # a tag with attributes left open (cut off)
    rf"|<(?P<bare>{_NAME})>",
    re.S,
)
#: elements of a TEI document read as tags when written bare (``<text>``): a Leiden ``< >``
#: never holds them (a single letter, ``<l>``, ``<p>``, is a tag only with its ``</l>``)
_TEI_NAMES = frozenset(
    "TEI TEI.2 teiHeader fileDesc titleStmt text body front back group div ab head lg "
    "seg supplied unclear gap del add expan abbr ex am choice reg orig sic corr surplus "
    "hi num name persName placeName foreign subst app lem rdg note certainty handShift "
    "milestone space lb cb pb".split()
)
#: the tags that make a document (to ``--epidoc``), not an element inside a line
_DOCUMENT = re.compile(r"<(?:\?xml|!DOCTYPE|/?(?:TEI|TEI\.2|teiHeader|text|body|div)\b)")


def quoted(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` in quotes for a message, whole up to ``limit`` characters (else cut, with
    "…"); written as typed (no backslash doubled) unless it holds a control character, a
    newline among them, when Python's ``repr`` shows it on one line."""
    s = text if len(text) <= limit else text[: limit - 1] + "…"
    if any(unicodedata.category(c) == "Cc" for c in s):
        return repr(s)
    return f"'{s}'" if "'" not in s else f'"{s}"' if '"' not in s else repr(s)


def find_markup(text: str) -> re.Match[str] | None:
    """The first XML tag in ``text`` (module docstring), or ``None``."""
    if "<" not in text:
        return None
    for m in _TAG.finditer(text):
        bare = m.group("bare")
        if bare is None or (len(bare) > 1 and bare in _TEI_NAMES) or f"</{bare}" in text:
            return m
    return None


def _line_as_leiden(text: str) -> str | None:
    """``text`` with each EpiDoc element written as Leiden (:func:`unit_leiden`), the text
    between the elements kept as typed; ``None`` when it is not well-formed XML content or the
    result is no Leiden the parser reads."""
    import copy
    from collections import Counter

    from lxml import etree

    from stoicheia.sources.epidoc_walk import EpiDocOptions, unit_leiden
    from stoicheia.text.leiden import parse_leiden
    from stoicheia.text.leiden_segments import LeidenError

    try:
        root = etree.fromstring(f'<ab xmlns="http://www.tei-c.org/ns/1.0">{text}</ab>')
    except (etree.XMLSyntaxError, ValueError):  # ValueError: a control character
        return None
    opts = EpiDocOptions(orig_case="as written")
    parts = [root.text or ""]
    for child in root:
        if isinstance(child.tag, str):
            unit = etree.Element(root.tag)
            one = copy.deepcopy(child)
            one.tail = None
            unit.append(one)
            leiden = unit_leiden(unit, "grc", opts, Counter())[0].strip()
            if not leiden and etree.QName(child).localname == "lb":
                leiden = "" if child.get("break") == "no" else " "
            parts.append(leiden)
        parts.append(child.tail or "")
    out = unicodedata.normalize("NFC", re.sub(r"[ \t]{2,}", " ", "".join(parts)).strip())
    try:
        parse_leiden(out)
    except LeidenError:
        return None
    return out if out else None


def _refuse_markup(text: str) -> None:
    """Raise :class:`RestoreError` for ``text`` holding XML markup (module docstring)."""
    tag = find_markup(text)
    if tag is None:
        return
    seen = f"{quoted(text)} holds XML markup (first tag {quoted(tag.group(0), 60)})"
    if _DOCUMENT.search(text):
        raise RestoreError(
            f"{seen}: restore reads a Leiden text, not an EpiDoc document; save the document "
            "to a file and run: stoicheia restore --epidoc FILE --out FOLDER "
            "(docs/restoring-epidoc.md)"
        )
    leiden = _line_as_leiden(text)
    rule = (
        '<gap .../> as [---] (extent="unknown") or [...] (one dot per lost letter), '
        '<supplied reason="lost">καὶ</supplied> as [καὶ] (docs/restore-notation.md)'
    )
    raise RestoreError(
        f"{seen}: restore reads Leiden notation, not EpiDoc elements; "
        + (f"give it as {quoted(leiden, 10**6)}" if leiden else f"write {rule}")
    )


_VOWELS = "aehiowuAEHIOWU"
#: Beta Code's own signs: a breathing after a vowel or on rho (accents may follow it), an
#: accent after a vowel (or its breathing or diaeresis), a capital's star, an iota subscript
_BETA_SIGN = re.compile(
    rf"(?<=[{_VOWELS}])[)(]|(?<=[rR])\(|(?<=[{_VOWELS})(+])[/\\=]"
    rf"|\*[)(/\\=|+]*[A-Za-z]"
    r"|(?<=[ahwAHW])\||(?<=[ahwAHW][/\\=)(])\||(?<=[ahwAHW][)(][/\\=])\|"
)
#: a Leiden parenthesis of Latin letters: the expansion of an abbreviation, ``D(is)``
_LATIN_EXPANSION = re.compile(r"\([A-Za-z]+\)")
_LATIN_WORD = re.compile(r"\S*[A-Za-z]\S*")


def beta_code_signs(text: str) -> int:
    """How many of Beta Code's own signs ``text`` holds (module docstring), or 0 when they
    are too few to call it Beta Code: fewer than two, only ``/`` and ``|``, on fewer than a
    third of its words with Latin letters, or any Greek letter in the text."""
    if _GREEK.search(text):
        return 0
    leiden = {i for m in _LATIN_EXPANSION.finditer(text) for i in (m.start(), m.end() - 1)}
    signs = [m.start() for m in _BETA_SIGN.finditer(text) if m.start() not in leiden]
    if len(signs) < 2 or all(text[s] in "/|" for s in signs):
        return 0  # "/" and "|" alone may be line divisions (co/niugi, ANNA|E)
    words = [(m.start(), m.end()) for m in _LATIN_WORD.finditer(text)]
    marked = sum(any(a <= s < b for s in signs) for a, b in words)
    return len(signs) if 3 * marked >= len(words) else 0


#: Leiden kept as typed in the Greek given for Beta Code: a lacuna's brackets (dots, dashes,
#: numbers, ca./min./max., ?, +), dash runs, numbers not part of a Beta code (s1, #2, [1),
#: vac., a doubtful supplement's ? and the editor's remarks (?) (!) (sic)
_LEIDEN_KEPT = re.compile(
    r"\[(?:[\s.\-–—…±+/?\d]|(?:ca|c|min|max|vacat|vac)\.?)+\]"
    r"|[-–—]+|(?<![sS#%@\[\]\"\d])\d+|\bvac(?:at|\.)?|\?(?=\])|\((?:\?|!|sic)\)"
)


def beta_as_greek(text: str) -> str:
    """``text`` with its Beta Code converted to Unicode Greek, piece by piece
    (:func:`~stoicheia.sources.betacode.beta_to_unicode`), whitespace and the Leiden of
    :data:`_LEIDEN_KEPT` kept as typed."""
    from stoicheia.sources.betacode import beta_to_unicode

    out: list[str] = []
    pos = 0
    for m in _LEIDEN_KEPT.finditer(text):
        out.append(_convert_words(text[pos : m.start()], beta_to_unicode))
        out.append(m.group(0))
        pos = m.end()
    out.append(_convert_words(text[pos:], beta_to_unicode))
    return unicodedata.normalize("NFC", "".join(out))


def _convert_words(s: str, convert) -> str:
    """``s`` with each run of non-space characters converted, its whitespace kept."""
    return "".join(p if not p or p.isspace() else convert(p) for p in re.split(r"(\s+)", s))


def _refuse_beta_code(text: str) -> None:
    """Raise :class:`RestoreError` for ``text`` in Beta Code (module docstring), naming it and
    giving the whole of it in Unicode Greek to paste instead: its ``)`` and ``(`` would
    otherwise be read as Leiden brackets and refused as such."""
    if not beta_code_signs(text):
        return
    raise RestoreError(
        f"{quoted(text)} looks like Beta Code (accents and breathings typed as / \\ = ) ( "
        f"after Latin letters): restore reads Unicode Greek; give it as "
        f"{quoted(beta_as_greek(text), 10**6)}"
    )


def refuse_foreign_input(text: str) -> None:
    """Raise :class:`RestoreError` for ``text`` holding XML markup or written in Beta Code
    (module docstring); return ``None`` for any other text (the Leiden parse judges it)."""
    _refuse_markup(text)
    _refuse_beta_code(text)


#: letters of other scripts that print like Greek ones (Cyrillic, Coptic)
_LOOKALIKE_SCRIPTS = re.compile("[\u0400-\u04ff\u2c80-\u2cff]")


def no_greek_letter(text: str, lacunae: bool) -> RestoreError:
    """The error for a ``text`` in which no Greek letter was read, saying what it holds
    instead: Latin letters (Beta Code?), letters of another script that print like Greek ones
    (named), or, for a text of lacunae alone (``lacunae``), that a lacuna is restored from the
    letters around it."""
    said = (
        f"no Greek letter in {text!r}: give Greek text (Unicode, accented or not) with its lacunae"
    )
    if re.search("[A-Za-z]", text):
        said += (
            "; Latin letters are not read (restore is for Greek; convert Beta Code to Unicode "
            "Greek first)"
        )
    others = sorted(set(_LOOKALIKE_SCRIPTS.findall(text)))
    if others:
        shown = " ".join(others[:8]) + (" ..." if len(others) > 8 else "")
        said += (
            f"; letters of another script are not read ({shown}): type the text in Greek letters"
        )
    elif lacunae and not re.search(r"[^\W\d_]", text):
        said += "; a lacuna is restored from the letters around it: give the text on either side"
    return RestoreError(said)
