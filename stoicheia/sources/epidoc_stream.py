"""An EpiDoc unit's Leiden text and lines a stretch at a time, for ``stoicheia convert``: the
lxml tree is held, and beyond it the walk's pieces since the last place the text could be cut
and since the start of the edition's line being read (not the whole unit's text twice, as
:func:`~stoicheia.sources.epidoc_walk.unit_lines` builds it). A unit with no ``<lb/>``
element has no lines: its pieces are forgotten once in the text, whatever its length.

:class:`UnitStream` walks a unit as :func:`~stoicheia.sources.epidoc_walk.unit_lines` does
(the same :class:`~stoicheia.sources.epidoc_walk.EditionWalker`, pausing after each element)
and, every :data:`FLUSH_PIECES` pieces, gives out what can no longer change:

* the text up to the last *cut*: a place between two pieces written as they stand (plain text
  or Leiden already written, never inside a run of supplied, erased... letters, which go
  between one pair of brackets) where the text before ends in a character that is not
  whitespace and the text after begins with whitespace. Joining, resolving the scribal
  apostrophes (their neighbours are whitespace on both sides of a cut), collapsing whitespace
  and NFC give the same text on the parts and on the whole;
* the lines (``<lb/>``) whose pieces are all written: each is joined alone, as
  :meth:`~stoicheia.sources.epidoc_leiden.LeidenPieces.lines` does.

Pieces near the end are not final: an ``<lb break="no"/>`` or a hyphen before an ``<lb/>``
removes the whitespace written before it back to the last letter or lacuna, and may change
that piece; everything before it is final.

The text and the lines are two iterators fed by the one walk (what one has not yet read
waits in a queue). The walk's counts go to the reader's ``counts`` once, when a walk of the
unit ends, in the order :func:`~stoicheia.sources.epidoc_walk.unit_lines` and
:func:`~stoicheia.sources.epidoc.read_epidoc` make them (``most_common`` keeps that order for
ties in ``stats.json``).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, deque
from collections.abc import Callable, Iterator

from lxml import etree

from .epidoc_leiden import RAW, LeidenPieces
from .epidoc_tei import TEI_NS
from .epidoc_walk import EditionWalker, EpiDocOptions

__all__ = ["FLUSH_PIECES", "UnitStream"]

#: the line break element, ``<lb/>``
_LB = "{" + TEI_NS + "}lb"

#: pieces the walk writes between two looks for what can be given out
FLUSH_PIECES = 4096

#: the whitespace that ``re.sub(r"\s+", " ", s)`` changes: runs of two or more, or one that is
#: not a space (matching only these, a text of single spaces is no list of one string a word)
_WS_TO_SPACE = re.compile(r"\s\s+|[^\S ]")


class UnitStream:
    """One walk of one unit (an edition or text part, ``skip`` its nested parts read on their
    own) as :meth:`text` (the NFC Leiden text in chunks that read one after the other are
    :func:`~stoicheia.sources.epidoc_walk.unit_lines`' text; no empty chunk) and :meth:`lines`
    (its lines, the same tuples). ``lower``: both lower-cased (a diplomatic edition, as
    :func:`~stoicheia.sources.epidoc.read_epidoc` does). ``on_end(walk_counts)`` is called
    once, when the walk ends, with the walk's counts and the characters of its text (the
    reader merges them)."""

    def __init__(
        self,
        unit: etree._Element,
        lang: str | None,
        opts: EpiDocOptions,
        skip: frozenset,
        lower: bool,
        on_end: Callable[[Counter, int], object],
    ) -> None:
        self.walk_counts: Counter = Counter()
        self.dash_counts: Counter = Counter()
        self.apostrophe_counts: Counter = Counter()
        self.em = LeidenPieces(self.walk_counts)
        self.steps = EditionWalker(opts, self.walk_counts, skip=skip)._children(
            unit, self.em, None, lang, False
        )
        self.lower = lower
        self.on_end = on_end
        self.texts: deque[str] = deque()
        self.line_queue: deque[tuple[str | None, str]] = deque()
        self.done = False
        self.t = 0  # the pieces before it are in the text given out
        self.seg = 0  # the open line's first piece
        self.label: str | None = None  # the open line's label
        self.any_line = False  # an <lb/> met: the unit has lines
        # no <lb/> anywhere under the unit: it will have no lines, so the pieces of its one
        # open line are never needed (the text is cut at word breaks and forgotten alone)
        self.no_lb = next(unit.iter(_LB), None) is None
        self.starts_taken = 0  # em.line_starts taken into lines
        self.first = True  # nothing but whitespace given out yet: strip it
        self.chars = 0  # characters of text given out
        self.next_look = FLUSH_PIECES

    # the two readers ------------------------------------------------------------------------

    def text(self) -> Iterator[str]:
        """The text's chunks, walking on as they are read."""
        while True:
            while self.texts:
                yield self.texts.popleft()
            if self.done:
                return
            self._advance()

    def lines(self) -> Iterator[tuple[str | None, str]]:
        """The lines ``(label, text)``, walking on as they are read (an edition without any
        ``<lb/>`` has none, known only at its end, unless it has no ``<lb/>`` element at all:
        then it is known at once, without walking the text ahead and queueing it)."""
        while not self.no_lb:
            while self.line_queue:
                yield self.line_queue.popleft()
            if self.done:
                return
            self._advance()

    def drain(self) -> None:
        """Walk to the end, dropping what nobody read."""
        while not self.done:
            self._advance()
            self.texts.clear()
            self.line_queue.clear()
        self.texts.clear()
        self.line_queue.clear()

    # the walk -------------------------------------------------------------------------------

    def _advance(self) -> None:
        """Walk on until something is given out or the walk ends."""
        em = self.em
        for _ in self.steps:
            if len(em.pieces) >= self.next_look:
                self._give(final=False)
                self.next_look = len(em.pieces) + FLUSH_PIECES
                if self.texts or self.line_queue:
                    return
        self._give(final=True)
        self.done = True
        self.steps = iter(())
        counts = Counter()
        for c in (self.walk_counts, self.dash_counts, self.apostrophe_counts):
            counts.update(c)
        self.on_end(counts, self.chars)

    def _frozen(self) -> int:
        """The pieces before this index can no longer change (module docstring)."""
        p = self.em.pieces
        k = len(p) - 1
        while k >= 0 and p[k][1] != RAW and not p[k][0].strip():
            k -= 1
        return max(k, 0)

    def _give(self, final: bool) -> None:
        em = self.em
        p = em.pieces
        end = len(p) if final else self._frozen()
        # lines: each line whose pieces are all final
        starts = em.line_starts
        while self.starts_taken < len(starts) and starts[self.starts_taken][0] <= end:
            i, label = starts[self.starts_taken]
            self._line(self.seg, i)  # the text before the first <lb/> is the None line
            self.any_line = True
            self.seg, self.label = i, label
            self.starts_taken += 1
        if final and self.any_line:
            self._line(self.seg, len(p))
        # text: up to the last cut before the end (all of it at the end)
        cut = len(p) if final else self._last_cut(end)
        if cut > self.t:
            self._text(self.t, cut, final)
            self.t = cut
        elif final:
            self._text(self.t, self.t, final)
        # forget the pieces nobody needs any more
        drop = self.t if self.no_lb else min(self.t, self.seg)
        if drop and not final:
            del p[:drop]
            self.t -= drop
            self.seg = max(self.seg - drop, 0)  # a unit without <lb/> has no open line
            em.line_starts = [(i - drop, label) for i, label in starts[self.starts_taken :]]
            self.starts_taken = 0

    def _line(self, a: int, b: int) -> None:
        """Give out the line of pieces ``a`` to ``b`` (its label the open line's), as
        :meth:`LeidenPieces.lines` writes it (the ``None`` line only if it holds text)."""
        text = unicodedata.normalize("NFC", LeidenPieces(Counter(), self.em.pieces[a:b]).leiden())
        if self.lower:
            text = text.lower()
        if self.label is not None or text:
            self.line_queue.append((self.label, text))

    def _last_cut(self, end: int) -> int:
        """The last cut (module docstring) between ``self.t`` and ``end``, else ``self.t``."""
        p = self.em.pieces
        for c in range(end - 1, self.t, -1):
            s, kind = p[c]
            before, kind_before = p[c - 1]
            if (
                kind is None
                and s[:1].isspace()
                and kind_before in (None, RAW)
                and before
                and not before[-1].isspace()
            ):
                return c
        return self.t

    def _text(self, a: int, b: int, final: bool) -> None:
        """Give out the text of pieces ``a`` to ``b`` (``final``: the last)."""
        piece = LeidenPieces(self.walk_counts, self.em.pieces[a:b])
        s = _WS_TO_SPACE.sub(" ", piece.joined(self.dash_counts, self.apostrophe_counts))
        if self.first:
            s = s.lstrip()
            self.first = not s
        if final:
            s = s.rstrip()
        s = unicodedata.normalize("NFC", s)
        if self.lower:
            s = s.lower()
        if s:
            self.chars += len(s)
            self.texts.append(s)
