"""One parallel of a gap: the passage that supplies a fill, and how it prints (``--json``, the
page, the console: the matched context between ``⟪ ⟫``, the fill between ``⸢ ⸣``)."""

from __future__ import annotations

from dataclasses import dataclass

from stoicheia.inference.parallels.index import ParallelsIndex, Source


@dataclass
class Parallel:
    """One passage that supplies a fill: ``pos`` the slot of the fill's first letter, ``width``
    letters, ``left``/``right`` the context letters matched on each side, ``source``."""

    pos: int
    width: int
    left: int
    right: int
    source: Source

    def to_json(self, index: ParallelsIndex, fill: str, margin: int = 25) -> dict:
        """The parallel for ``--json`` and the page: the source, what it ``supplies``, and the
        passage as printed in five ``pieces``: text before, left context matched, the fill,
        right context matched, text after (:meth:`passage` joins them with marks)."""
        r0, r1 = index.record_span(self.source.record_index)
        a = max(r0, self.pos - self.left - margin)
        b = min(r1, self.pos + self.width + self.right + margin)
        q = self.pos + self.width
        pieces = index.printed_parts(a, b, [self.pos - self.left, self.pos, q, q + self.right])
        return {
            "tier": self.source.tier,
            "work": self.source.work,
            "record": self.source.record,
            "label": self.source.label(),
            "line": self.source.line,
            "url": self.source.url,
            "record_index": self.source.record_index,
            "at": [self.pos - self.left - r0, q + self.right - r0],
            "letters_matched": [self.left, self.right],
            "supplies": pieces[2].strip() or fill,
            "pieces": pieces,
            "passage": passage(pieces, a > r0, b < r1),
        }


def passage(pieces: list[str], cut_before: bool, cut_after: bool) -> str:
    """The five pieces of :meth:`Parallel.to_json` as one line: the matched context between
    ``⟪ ⟫``, the fill between ``⸢ ⸣``, ``…`` where the record goes on."""
    before, ml, fill, mr, after = pieces
    s = before + (f"⟪{ml.rstrip()}⟫" + (" " if ml.endswith(" ") else "") if ml else "")
    s += f"⸢{fill.rstrip()}⸣" + (" " if fill.endswith(" ") else "")
    s += (f"⟪{mr.rstrip()}⟫" + (" " if mr.endswith(" ") else "") if mr else "") + after
    return ("… " if cut_before else "") + s.strip() + (" …" if cut_after else "")


__all__ = ["Parallel", "passage"]
