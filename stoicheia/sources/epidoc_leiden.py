"""The Leiden text of an EpiDoc edition, written piece by piece.

The element walk (:mod:`stoicheia.sources.epidoc_walk`) hands :class:`LeidenPieces` each
stretch of text with its Leiden *kind* (``"lost"``, ``"omitted"``, ``"erased"``, ``"surplus"``,
``"partly_lost"``, ``"abbreviation"``, or ``None`` for plain text), or Leiden already written
(a lacuna, :data:`RAW`). :meth:`LeidenPieces.leiden` joins the pieces: each run of one kind goes
between its brackets (``[ ]``, ``⟨ ⟩``, ``⟦ ⟧``, ``{ }``, ``⸢ ⸣``, ``( )``), dashes typed as a
supplement become a lacuna of unknown width, scribal apostrophes are resolved once the letters
on both sides are known, and whitespace is collapsed to single word spaces.

Brackets typed as characters in the XML text would be read as Leiden: they are removed and
counted ``literal_bracket`` (``\\`` too, the opening sign of ``\\ /``), and ``+`` (a run of
them is a lacuna in Leiden) ``literal_plus``.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["APOSTROPHE", "RAW", "LeidenPieces", "dot_below", "greek_letters"]

_BRACKET_CHARS = re.compile("[\\[\\](){}<>⟨⟩⟦⟧〈〉〚〛⸢⸣⌈⌉⸤⸥⌊⌋˹˺\u0323\\\\]")
#: "+" typed in the XML text: Leiden would read a run of them as lost letters (EpiDoc writes a
#: loss as <gap>, a cross as <g>); removed and counted ``literal_plus``
_PLUS = re.compile("\\+")
_WS = re.compile(r"\s+")
#: Leiden brackets by kind (see stoicheia.text.leiden)
_BRACKETS = {
    "lost": ("[", "]"),
    "omitted": ("⟨", "⟩"),
    "erased": ("⟦", "⟧"),
    "surplus": ("{", "}"),
    "partly_lost": ("⸢", "⸣"),
    "abbreviation": ("(", ")"),
}
_SPECIAL_IN_SQUARE = re.compile("([.\\d\\-\u2010-\u2015\u2212]+)")
#: dashes typed inside <supplied reason="lost"> ("— —", a legacy I.Sicily encoding of a
#: lacuna of unknown width): spaces between the dashes belong to the run
_DASHES_IN_SQUARE = re.compile("([\\-\u2010-\u2015\u2212](?:\\s*[\\-\u2010-\u2015\u2212])*)")
#: the kind of a piece that is Leiden already (a lacuna)
RAW = "\x00"
#: hyphens that divide a word at a line end (before an <lb/>)
_HYPHENS = frozenset("-\u00ad\u2010\u2011=\u2e17\u2e40")
#: stand-in for <g type="apostrophe"/>, resolved by LeidenPieces.leiden once both sides are known
APOSTROPHE = "\ue0f1"
#: characters skipped when looking for the letter beside an apostrophe: Leiden brackets
#: and the dot below
_SKIP = frozenset("[](){}<>⟨⟩⟦⟧〈〉〚〛⸢⸣⌈⌉⸤⸥⌊⌋˹˺\u0323")


@dataclass
class LeidenPieces:
    """Collects ``(text, kind)`` pieces; :meth:`leiden` joins them into Leiden text.

    ``counts``: what was removed or resolved on the way (``literal_bracket``, ``literal_plus``,
    ``hyphen_joined``, ``supplied_dashes_lacuna``, ``apostrophe``, ``apostrophe_in_word``)."""

    counts: Counter
    pieces: list[tuple[str, str | None]] = field(default_factory=list)
    #: where each line of the edition begins (``<lb/>``): (index into ``pieces``, its label)
    line_starts: list[tuple[int, str]] = field(default_factory=list)

    def line(self, label: str) -> None:
        """A new line of the edition begins here, its printed number ``label``."""
        self.line_starts.append((len(self.pieces), label))

    def take(self, sub: LeidenPieces, letters: Callable[[str], str]) -> None:
        """Append the pieces (and line starts) of ``sub``, ``letters`` applied to the text of
        each piece that is not Leiden already (a dot below, lower case)."""
        base = len(self.pieces)
        for s, k in sub.pieces:
            self.pieces.append((s, k) if k == RAW else (letters(s), k))
        self.line_starts.extend((base + i, label) for i, label in sub.line_starts)

    def _keep_line_starts(self) -> None:
        """After pieces were removed at the end: no line starts past the end."""
        n = len(self.pieces)
        self.line_starts = [(min(i, n), label) for i, label in self.line_starts]

    def lines(self) -> list[tuple[str | None, str]]:
        """The Leiden text line by line: ``(label, text)`` per line of the edition, in order,
        each text written as :meth:`leiden` writes the whole (its brackets closed within the
        line: ``[ab`` ``cd]`` across a line end are ``[ab]`` and ``[cd]``, the same letters);
        the text before the first ``<lb/>``, if any, has the label ``None``. An empty list
        when the edition has no ``<lb/>``."""
        if not self.line_starts:
            return []
        edges: list[tuple[int, str | None]] = [(0, None), *self.line_starts]
        out: list[tuple[str | None, str]] = []
        for k, (i, label) in enumerate(edges):
            j = edges[k + 1][0] if k + 1 < len(edges) else len(self.pieces)
            # counted once, by leiden() over the whole: a throwaway counter here
            text = LeidenPieces(Counter(), self.pieces[i:j]).leiden()
            if label is not None or text:
                out.append((label, text))
        return out

    def text(self, s: str | None, kind: str | None, in_w: bool) -> None:
        if not s:
            return
        if "+" in s:
            s, k = _PLUS.subn("", s)
            self.counts["literal_plus"] += k
        if _BRACKET_CHARS.search(s):
            s, k = _BRACKET_CHARS.subn("", s)
            self.counts["literal_bracket"] += k
        self.pieces.append((s, kind))

    def raw(self, s: str) -> None:
        self.pieces.append((s, RAW))

    def strip_trailing_space(self) -> None:
        """Drop layout whitespace before ``<lb break="no"/>`` (the word goes on)."""
        while self.pieces:
            s, kind = self.pieces[-1]
            if kind == RAW:
                return
            t = s.rstrip()
            if t:
                self.pieces[-1] = (t, kind)
                return
            self.pieces.pop()
            self._keep_line_starts()

    def line_end_hyphen(self) -> bool:
        """At a ``<lb/>``: if the text before it ends in a letter and a hyphen (``χρη-``, a
        word divided at the line end in the legacy way), remove the hyphen and the layout
        whitespace and return True (the word goes on across the line, like ``break="no"``)."""
        k = len(self.pieces) - 1
        while k >= 0 and self.pieces[k][1] != RAW and not self.pieces[k][0].strip():
            k -= 1
        if k < 0 or self.pieces[k][1] == RAW:
            return False
        s, kind = self.pieces[k]
        t = s.rstrip()
        if not t or t[-1] not in _HYPHENS:
            return False
        before = t[:-1] or (self.pieces[k - 1][0] if k > 0 and self.pieces[k - 1][1] != RAW else "")
        if not before or not (before[-1].isalpha() or unicodedata.combining(before[-1])):
            return False
        del self.pieces[k + 1 :]
        if t[:-1]:
            self.pieces[k] = (t[:-1], kind)
        else:
            del self.pieces[k]
        self._keep_line_starts()
        self.counts["hyphen_joined"] += 1
        return True

    @staticmethod
    def _bracket(body: str, kind: str) -> str:
        if not body.strip():
            return body
        lead = body[: len(body) - len(body.lstrip())]
        trail = body[len(body.rstrip()) :]
        o, c = _BRACKETS[kind]
        return lead + o + _WS.sub(" ", body.strip()) + c + trail

    def leiden(self) -> str:
        """The pieces joined into Leiden text: runs of a kind between its brackets, the
        apostrophes resolved, whitespace runs made single spaces, stripped."""
        return _single_spaces(self.joined(self.counts, self.counts))

    def joined(self, dash_counts: Counter, apostrophe_counts: Counter) -> str:
        """:meth:`leiden` before its whitespace is collapsed and stripped: what dashes typed
        as a supplement became is counted in ``dash_counts``, the apostrophes in
        ``apostrophe_counts`` (:mod:`stoicheia.sources.epidoc_stream` joins the pieces a
        stretch at a time and keeps the two apart, so that they are counted in the order
        the whole's :meth:`leiden` counts them)."""
        out: list[str] = []
        i = 0
        p = self.pieces
        while i < len(p):
            s, kind = p[i]
            if kind is None or kind == RAW:
                out.append(s)
                i += 1
                continue
            j = i
            buf = []
            while j < len(p) and p[j][1] == kind:
                buf.append(p[j][0])
                j += 1
            body = "".join(buf)
            if kind == "lost":
                # dashes typed as the supplement ("— —") are a lacuna of unknown width
                for piece in _DASHES_IN_SQUARE.split(body):
                    if _DASHES_IN_SQUARE.fullmatch(piece):
                        dash_counts["supplied_dashes_lacuna"] += 1
                        out.append("[---]")
                        continue
                    # '.' and digits inside [ ] are Leiden widths: punctuation that the
                    # editor supplied goes outside the brackets ("[. ὅσον]" -> ". [ὅσον]")
                    for part in _SPECIAL_IN_SQUARE.split(piece):
                        out.append(
                            self._bracket(part, kind)
                            if part and not _SPECIAL_IN_SQUARE.fullmatch(part)
                            else part
                        )
            else:
                out.append(self._bracket(body, kind))
            i = j
        text = "".join(out)
        if APOSTROPHE in text:
            text = _apostrophes(text, apostrophe_counts)
        return text


def _apostrophes(text: str, counts: Counter) -> str:
    """Resolve the ``<g type="apostrophe"/>`` stand-ins: inside a word (a letter on both
    sides, Leiden brackets between allowed) the scribe's apostrophe between two letters
    (``Ἀπολ’λωνίου``) is no word break and no letter: removed (counted
    ``apostrophe_in_word``); elsewhere it is the apostrophe U+2019 (elision after a letter)."""
    # slices between the stand-ins, not a list of characters (one object per letter)
    out: list[str] = []
    last, k = 0, text.find(APOSTROPHE)
    while k >= 0:
        out.append(text[last:k])
        a = k - 1
        while a >= 0 and (text[a] in _SKIP or text[a] == APOSTROPHE):
            a -= 1
        b = k + 1
        while b < len(text) and (text[b] in _SKIP or text[b] == APOSTROPHE):
            b += 1
        before = a >= 0 and (text[a].isalpha() or unicodedata.combining(text[a]) > 0)
        after = b < len(text) and text[b].isalpha()
        if before and after:
            counts["apostrophe_in_word"] += 1
        else:
            counts["apostrophe"] += 1
            out.append("\u2019")
        last, k = k + 1, text.find(APOSTROPHE, k + 1)
    out.append(text[last:])
    return "".join(out)


#: characters of a long text whose whitespace :func:`_single_spaces` collapses at a time
_SPACES_PIECE = 1 << 16


def _single_spaces(text: str) -> str:
    """``_WS.sub(" ", text).strip()``, a long text a piece of about :data:`_SPACES_PIECE`
    characters at a time, cut between two characters that are not whitespace (so that no run
    of whitespace is cut): ``re.sub`` over a whole edition of one long ``<ab>`` held a string
    object per word, about 18 bytes per character (benchmarks/convert_memory.py)."""
    if len(text) <= _SPACES_PIECE:
        return _WS.sub(" ", text).strip()
    out, start, n = [], 0, len(text)
    while start < n:
        p = min(start + _SPACES_PIECE, n)
        while p < n and (text[p].isspace() or text[p - 1].isspace()):
            p += 1
        out.append(_WS.sub(" ", text[start:p]))
        start = p
    return "".join(out).strip()


def greek_letters(s: str) -> int:
    """The Greek letters of ``s`` (base letters after NFD: accents and breathings are not
    letters)."""
    return sum(
        1 for c in unicodedata.normalize("NFD", s) if "\u0370" <= c <= "\u03ff" and c.isalpha()
    )


def dot_below(s: str) -> str:
    """Put a dot below (U+0323) on every letter of ``s`` (Leiden for an uncertain letter)."""
    out = []
    for c in unicodedata.normalize("NFC", s):
        out.append(c + "\u0323" if c.isalpha() else c)
    return "".join(out)
