"""A restoration written as an EpiDoc ``<ab>`` fragment (the page's "Copy as EpiDoc" button).

The input's Leiden notation is read with the project's parser
(:func:`stoicheia.text.leiden.parse_leiden`) and each sign becomes the element the EpiDoc
Guidelines give it (the inverse of the table in :mod:`stoicheia.sources.epidoc_walk`):

==========================  ====================================================================
lacuna filled by the model  ``<supplied reason="lost" cert="low" resp="#stoicheia">fill</supplied>``
``++`` (traces) filled      ``<supplied reason="illegible" cert="low" resp="#stoicheia">αὐ``:
                            the bare letters (restore prints them dotted, ``α̣ὐ̣``)
``[καὶ]`` kept               ``<supplied reason="lost">καὶ</supplied>`` (re-predicted: as a lacuna)
``α̣``                       ``<unclear>α</unclear>`` (the model's letter; ``cert="low"
                            resp="#stoicheia"`` when it differs from the reading)
``⟨ ⟩`` ``⟦ ⟧`` ``{ }``       ``<supplied reason="omitted">``, ``<del rend="erasure">``,
                            ``<surplus>``; the filled dots of ``⟦ ⟧`` or ``⸢ ⸣`` are a
                            ``<supplied reason="lost" ...>`` inside that element
``⸢ ⸣``                     ``<supplied reason="undefined" evidence="previouseditor">``
``α(ὐτοῦ)``                 ``α<ex>ὐτοῦ</ex>`` (inside ``<expan><abbr>``: left to the editor)
``vac.`` ``vac. 3``          ``<space extent="unknown" unit="character"/>``, ``<space quantity="3"
                            unit="character"/>`` (an uninscribed space; ``vac. ca. 3``:
                            ``precision="low"``)
``(?)`` ``(!)`` ``(sic)``    ``<note>`` holding the remark
a new line, ``|``            ``<lb n="N"/>`` (``|`` between two letters, no blank either side:
                            ``<lb n="N" break="no"/>``, the word runs on)
``- - - - - -`` (own line)  ``<lb n="N"/><gap reason="lost" extent="unknown" unit="line"/>``: the
                            Leiden for lost lines, dashes alone on a line (the restorer reads
                            them as text: no gap of letters)
==========================  ====================================================================
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any
from xml.sax.saxutils import escape

from stoicheia.text.leiden import parse_leiden
from stoicheia.text.leiden_segments import Comment, Editorial, Lacuna, Text

_RESP = 'cert="low" resp="#stoicheia"'
_WRAP = {
    "omitted": ('<supplied reason="omitted">', "</supplied>"),
    "erased": ('<del rend="erasure">', "</del>"),
    "surplus": ("<surplus>", "</surplus>"),
    "partly_lost": ('<supplied reason="undefined" evidence="previouseditor">', "</supplied>"),
    "abbreviation": ("<ex>", "</ex>"),
    "lost": ('<supplied reason="lost">', "</supplied>"),
}

#: the brackets whose dots are lost letters (``⟦...⟧``, ``⸢..υλῇ⸣``): opener -> (closer, reason)
_DOTTED = {
    "[[": ("]]", "erased"),
    "⟦": ("⟧", "erased"),
    "〚": ("〛", "erased"),
    **{o: (c, "partly_lost") for o, c in zip("⸢⌈⸤⌊˹", "⸣⌉⸥⌋˺", strict=True)},
}

#: a line division in running text: one or more ``|`` with the blanks around them
_BAR = re.compile(r"(\s*)\|+(\s*)")
#: the number of letters of a vacat (``vac. 3``, ``vac. ca. 3``, ``(vacat 3)``)
_VAC_N = re.compile(r"(ca\.?\s*)?(\d+)", re.I)


def _space(remark: str) -> str:
    """The ``<space>`` of a vacat remark (EpiDoc Guidelines, "Vacat")."""
    m = _VAC_N.search(remark)
    if m is None:
        return '<space extent="unknown" unit="character"/>'
    low = ' precision="low"' if m.group(1) else ""
    return f'<space quantity="{int(m.group(2))}" unit="character"{low}/>'


def _base(s: str) -> str:
    return "".join(
        c
        for c in unicodedata.normalize("NFD", s).lower()
        if unicodedata.category(c).startswith("L")
    )


#: a line holding only dashes (at least three, blanks between them allowed): lost lines
_LOST_LINE = re.compile(r"[\-\u2010-\u2015\u2212](?:\s*[\-\u2010-\u2015\u2212]){2,}")
LOST_LINE_GAP = '<gap reason="lost" extent="unknown" unit="line"/>'


class _Lines:
    """Text with ``<lb n="N"/>`` at each new line (the first line gets ``n="1"``); the rows
    (0-based, by new line) in ``lost`` are lost lines, written as :data:`LOST_LINE_GAP`."""

    def __init__(self, lost: set[int] | frozenset[int] = frozenset()) -> None:
        self.out: list[str] = ['<lb n="1"/>']
        self.line = 1
        self.row = 0
        self.lost = lost
        self.written: set[int] = set()

    def text(self, s: str) -> None:
        parts = s.split("\n")
        self._line(parts[0])
        for p in parts[1:]:
            self.line += 1
            self.row += 1
            self.out.append(f'\n<lb n="{self.line}"/>')
            self._line(p)

    def _line(self, s: str) -> None:
        """``s`` (no new line) with each ``|`` line division as an ``<lb/>``; without a blank on
        either side (a word broken across the lines) it gets ``break="no"``."""
        if self.row in self.lost:  # its dashes (in one piece or several): the gap, once
            if self.row not in self.written:
                self.written.add(self.row)
                self.out.append(LOST_LINE_GAP)
            return
        at = 0
        for m in _BAR.finditer(s):
            self.out.append(escape(s[at : m.start()]))
            self.line += 1
            joined = not m.group(1) and not m.group(2)
            self.out.append(
                f'<lb n="{self.line}" break="no"/>' if joined else f'\n<lb n="{self.line}"/>'
            )
            at = m.end()
        self.out.append(escape(s[at:]))


def in_input_style(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (the contract JSON) with every restoration's ``fills`` printed as the input
    prints its letters around each gap: for a ``respace`` result, whose fills are the model's
    lowercase, accented rendering, so that the ``<ab>`` fragment of a text in capitals does not
    mix the input's capitals with lowercase fills (``ΕΤΗ <supplied>ν ἀ</supplied> ΧΑΙΡΕ``): one
    case, the input's, as the fills of a restoration without ``respace`` are printed
    (:func:`stoicheia.inference.restore.input_style.styled`; a gap in a capital stretch of a
    mixed text in capitals, :func:`~stoicheia.inference.restore.input_style.near_capitals`)."""
    import dataclasses

    from stoicheia.inference.restore.input_style import input_style, near_capitals, styled

    text = data["input"]
    style = input_style(text)
    per_gap = []
    for g in data["gaps"]:
        near = near_capitals(text, g["start"], g["end"])
        per_gap.append(style if near is None else dataclasses.replace(style, capitals=near))
    out = dict(data)
    out["restorations"] = [
        {**r, "fills": [styled(f, per_gap[j]) for j, f in enumerate(r["fills"])]}
        for r in data["restorations"]
    ]
    return out


def epidoc_ab(data: dict[str, Any], restoration: int = 0) -> str:
    """The ``<ab>`` element of restoration ``restoration`` of ``data`` (the contract JSON of
    :meth:`stoicheia.inference.restore.RestoreResult.to_json`), as a string.

    Gaps are matched to the parser's segments in order of kind (the i-th lacuna gap is the
    i-th :class:`Lacuna`, the i-th uncertain gap the i-th letter with a dot below, the i-th
    supplement gap the i-th ``[ ]`` supplement). Raises ``IndexError`` for a ``restoration``
    out of range and :class:`~stoicheia.text.leiden_segments.LeidenError` for an input the parser
    refuses (the server only builds fragments of inputs it restored)."""
    text = data["input"].replace("\r\n", "\n").replace("\r", "\n")
    fills = data["restorations"][restoration]["fills"]
    by_kind: dict[str, list[int]] = {"lacuna": [], "uncertain": [], "supplement": []}
    for g in data["gaps"]:
        by_kind.setdefault(g["kind"], []).append(g["index"])
    nxt = {k: iter(v) for k, v in by_kind.items()}
    repredicted = bool(by_kind["supplement"])

    def fill_of(kind: str) -> tuple[str, dict | None]:
        gi = next(nxt[kind], None)
        if gi is None:
            return "", None
        return fills[gi], data["gaps"][gi]

    lines = _Lines(
        {i for i, row in enumerate(text.split("\n")) if _LOST_LINE.fullmatch(row.strip())}
    )
    at = 0
    inside = ""  # the close tag of the ⟦ ⟧ or ⸢ ⸣ with dots whose pieces are being written
    for seg in parse_leiden(text):
        # characters between segments are the [ ] of a lacuna or supplement: the element
        # replaces them
        if seg.start > at:
            between = re.sub(
                r"\[\s*|\s*\]", "", text[at : seg.start]
            )  # [ - - - ]: the blanks inside too
            lines.text(between)
        at = seg.end
        # a ⟦ ⟧ or ⸢ ⸣ holding dots is read in pieces (letters, lacunae): one element holds
        # them all, the lacunae's <supplied> inside it (⟦βο..ῇ⟧: <del>βο<supplied>υλ</supplied>ῇ)
        opener = next((o for o in _DOTTED if text.startswith(o, seg.start)), None)
        closer, reason = _DOTTED.get(opener or "", ("", ""))
        piece = opener is not None and (
            isinstance(seg, Lacuna) or not text.startswith(closer, seg.end - len(closer))
        )
        if piece and not inside:
            lines.out.append(_WRAP[reason][0])
            inside = _WRAP[reason][1]
        if inside and not isinstance(seg, (Lacuna, Text)):
            seg = Text(seg.text, seg.uncertain, seg.start, seg.end)  # letters of the element
            seg_in_element = True
        else:
            seg_in_element = False
        if isinstance(seg, Lacuna):
            fill, _ = fill_of("lacuna")
            if set(text[seg.start : seg.end]) == {"+"}:
                # ++ outside brackets: traces, whose fill restore prints dotted (α̣ὐ̣); in EpiDoc
                # the element says it, the letters are bare
                bare = unicodedata.normalize(
                    "NFC", unicodedata.normalize("NFD", fill).replace("\u0323", "")
                )
                lines.out.append(f'<supplied reason="illegible" {_RESP}>{escape(bare)}</supplied>')
            else:
                lines.out.append(f'<supplied reason="lost" {_RESP}>{escape(fill)}</supplied>')
        elif isinstance(seg, Comment):
            remark = seg.text.strip()
            lines.out.append(
                _space(remark) if "vac" in remark.lower() else f"<note>{escape(remark)}</note>"
            )
        elif isinstance(seg, Editorial) and seg.reason == "lost" and repredicted:
            fill, _ = fill_of("supplement")
            lines.out.append(f'<supplied reason="lost" {_RESP}>{escape(fill)}</supplied>')
        else:
            open_, close = _WRAP.get(getattr(seg, "reason", ""), ("", ""))
            lines.out.append(open_)
            chars = seg.text
            flags = seg.uncertain
            i = 0
            while i < len(chars):
                if flags[i] and unicodedata.category(chars[i]).startswith("L"):
                    j = i + 1
                    while j < len(chars) and unicodedata.combining(chars[j]):
                        j += 1
                    read = chars[i:j]
                    fill, _ = fill_of("uncertain")
                    if fill and _base(fill) != _base(read):
                        # <unclear> is the dot below: the letter goes in without it
                        plain = unicodedata.normalize(
                            "NFC", unicodedata.normalize("NFD", fill).replace("\u0323", "")
                        )
                        lines.out.append(f"<unclear {_RESP}>{escape(plain)}</unclear>")
                    else:
                        lines.out.append(f"<unclear>{escape(read)}</unclear>")
                    i = j
                    continue
                j = i
                while j < len(chars) and not (
                    flags[j] and unicodedata.category(chars[j]).startswith("L")
                ):
                    j += 1
                if isinstance(seg, Text) and not seg_in_element:
                    lines.text(chars[i:j])
                else:
                    lines.out.append(escape(chars[i:j]))
                i = j
            lines.out.append(close)
        if inside and any(text.startswith(c, at - len(c)) for c, _ in _DOTTED.values()):
            lines.out.append(inside)
            inside = ""
    if at < len(text):
        lines.text(re.sub(r"\[\s*|\s*\]", "", text[at:]))
    return '<ab xml:space="preserve">' + "".join(lines.out) + "</ab>"


__all__ = ["epidoc_ab", "in_input_style"]
