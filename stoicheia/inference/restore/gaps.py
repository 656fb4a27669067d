"""The records of a restoration's gaps: :class:`Gap` (one stretch the model fills, read from
the input and then filled), :class:`Item` (one element of the working sequence), the gap's
own :class:`Alternative` fills and the :class:`EditorScore` of a scored supplement, and the
errors of a text that cannot be restored (:class:`RestoreError`, :class:`GapTooWideError`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stoicheia.text import alphabet as A
from stoicheia.text.leiden_segments import DOT_BELOW


class RestoreError(ValueError):
    """The text cannot be restored as given; the message says what to change."""


class GapTooWideError(RestoreError):
    """A lacuna wider than the model can fill (or than any lacuna the parser reads)."""


def _sig(p: float) -> float:
    """``p`` to 7 significant digits (so that ``log(prob)`` still matches ``logprob`` for a
    small probability, which a fixed number of decimals would round to 0)."""
    return float(f"{p:.7g}")


@dataclass
class Alternative:
    """One fill of one gap among the model's own top-k for that gap (the other gaps held at the
    best restoration): ``fill`` as printed (without brackets), ``logprob`` its natural-log
    probability under the decoding (the sum over its slots, :mod:`.decoding`), ``prob``
    ``exp(logprob)``; ``letters`` its base letters; ``sources`` the parallels that carry it."""

    fill: str
    prob: float
    logprob: float
    letters: str = ""
    #: the parallels that carry this fill (their labels, best first, at most 3); empty: none
    sources: list[str] = field(default_factory=list)


@dataclass
class EditorScore:
    """The editor's supplement scored by the model (``--score-supplements``): ``reading`` the
    editor's letters as typed, ``prob`` their probability under the decoding with the other gaps
    at the best restoration, ``rank`` 1-based among the model's alternatives of the same width
    (``k + 1`` when below all ``k`` of them and not among them)."""

    reading: str
    prob: float
    rank: int


@dataclass
class Gap:
    """One stretch the model fills: a lacuna, a re-predicted supplement or an uncertain letter.

    Read from the input: ``notation`` what the input had there, as typed (``input[start:end]``;
    the whole bracket ``[ - - - ]`` when the bracket holds only this gap, else the gap's part of
    it, e.g. ``---`` in ``[καὶ ---]``); ``bracketed``: the fill is printed in ``[ ]``: the
    notation holds its ``[ ]``, or it is the dots of a ``⟦ ⟧`` or ``⸢ ⸣``, which stay
    (``⟦[fill]⟧``); ``min_letters``/``max_letters``: the bounds of its width in letters;
    ``slots``: MASK slots it takes (``max_letters`` for a fixed width, else ``max_letters + 2``);
    ``read``: the letters visible to the model (an uncertain letter's reading, an editor's
    supplement), else ``None``; ``read_values``: for a supplement, the planes' values
    ``(chars, boundary, dia, cap, punct)`` of each of its letters as printed.

    Filled by :func:`stoicheia.inference.restore.restore`: ``fill`` the best fill as printed,
    ``letter_probs`` one probability per letter of it, ``alternatives`` the gap's own top-k
    (distinct, best first), ``width_probs`` ``{width: probability}`` summing to 1 for a gap of
    uncertain width (else ``None``), ``editor`` the supplement's score (else ``None``).
    """

    notation: str
    kind: str  # "lacuna" | "supplement" | "uncertain"
    min_letters: int
    max_letters: int
    slots: int
    read: str | None = None
    #: what the input says follows the gap: 1/2 a word/sentence break (a space or a stop
    #: after the bracket), 0 the next letter of the same word
    end_boundary: int = A.BOUNDARY_INTERNAL
    #: the punctuation typed right after the gap (UNKNOWN: left to the model, ``--respace``)
    end_punct: int = A.PUNCT_NONE
    start: int = 0
    end: int = 0
    bracketed: bool = False
    index: int = 0
    fill: str = ""
    letter_probs: list[float] = field(default_factory=list)
    alternatives: list[Alternative] = field(default_factory=list)
    width_probs: dict[int, float] | None = None
    editor: EditorScore | None = None
    read_values: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    #: set by restore: the Greek letters nearest the gap, on both sides, are all capitals
    #: (a capital stretch of a mixed text: its fills print in capitals); None: the text's style
    capitals: bool | None = None
    #: set by restore for a supplement scored but kept as printed: the model sees its letters
    #: and their marks wherever another gap is decoded or rendered
    held: bool = False
    #: bool ``(24,)``: the letters Greek allows as the gap's last letter where the text around
    #: it decides (:func:`letter_rules`); None: any. Only for a gap of known width
    last_letters: np.ndarray | None = None
    #: bool ``(24,)``: for a gap of uncertain width that is a whole word, the letters a fill
    #: of one letter may be (vowels: :func:`letter_rules`); None: any
    one_letter: np.ndarray | None = None
    #: a gap of unknown extent with text on one side only (a stone's edge: the start or end
    #: of the text, or of a line): ``"left"`` the text is on its left, ``"right"`` on its
    #: right; its parallels run to a word's end (:mod:`.parallels_fusion`). None: two-sided
    one_sided: str | None = None
    #: set by restore when a parallels index is open: the gap's parallels
    #: (:class:`stoicheia.inference.parallels.GapParallels`); None: no index
    parallels: Any = None

    @property
    def fixed_width(self) -> bool:
        return self.min_letters == self.max_letters and self.slots == self.max_letters

    @property
    def traces(self) -> bool:
        """Dots below on no letter (``̣ ̣ ̣``) or lost-letter ``+`` signs (``++``): illegible
        traces, filled as dotted letters."""
        return (
            self.kind == "lacuna"
            and not self.bracketed
            and (DOT_BELOW in self.notation or "+" in self.notation)
        )

    @property
    def read_letters(self) -> np.ndarray:
        """int64 ``(n,)``: a supplement's letter ids as the reading encoded them in the text
        (``read_values``), not encoded again."""
        return np.array([v[0] for v in self.read_values], dtype=np.int64)

    def to_json(self) -> dict[str, Any]:
        """The gap as in the restore JSON contract (docs/restoring.md)."""
        return {
            "index": self.index,
            "kind": self.kind,
            "notation": self.notation,
            "start": self.start,
            "end": self.end,
            "min_letters": self.min_letters,
            "max_letters": self.max_letters,
            "fill": self.fill,
            "letter_probs": [_sig(p) for p in self.letter_probs],
            "alternatives": [
                {"fill": a.fill, "prob": _sig(a.prob), "logprob": round(a.logprob, 6)}
                for a in self.alternatives
            ],
            "width_probs": None
            if self.width_probs is None
            else {str(w): _sig(p) for w, p in sorted(self.width_probs.items())},
            "editor": None
            if self.editor is None
            else {
                "reading": self.editor.reading,
                "prob": _sig(self.editor.prob),
                "rank": self.editor.rank,
            },
        } | (
            {}
            if self.parallels is None
            else {
                "parallels": self.parallels.to_json(),
                # letters of context searched before and after the gap: 0 on one side at a
                # stone's edge, where the page heads the parallels "before/after the gap"
                "parallels_context": [len(self.parallels.left), len(self.parallels.right)],
            }
        )


@dataclass
class Item:
    """One element of the working sequence: a known letter (planes values) or a gap index."""

    gap: int | None
    values: tuple[int, int, int, int, int] | None = None  # chars, boundary, dia, cap, punct


__all__ = ["Alternative", "EditorScore", "Gap", "GapTooWideError", "Item", "RestoreError"]
