"""Word division in the parallels' search: where the text's word breaks and a parallel's
disagree (:class:`WordBreaks`), and where a parallel's word ends (:func:`word_end_widths`, for a
gap at the stone's edge). The index keeps each letter's boundary (``flow.npy``, the boundary
after the letter: ``stoicheia.text.alphabet``'s ``BOUNDARY_*``), so matching stays on letters
and word division ranks the matches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from stoicheia.text import alphabet as A

#: a source's weight is divided by exp(BREAK_COST) per word break of its passage that
#: disagrees with the text's (a parallel that runs across a word the context does not have)
BREAK_COST = 2.0

_KNOWN = (A.BOUNDARY_INTERNAL, A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE)


def _is_break(b: np.ndarray) -> np.ndarray:
    return (b == A.BOUNDARY_WORD) | (b == A.BOUNDARY_SENTENCE)


@dataclass(frozen=True)
class WordBreaks:
    """The word division a text gives around a gap, to compare with a parallel's: ``left`` int
    ``(n,)`` the boundary after each letter of the left context (``stoicheia.text.alphabet``'s
    ``BOUNDARY_*``; its last entry is the break, or not, between the text and the gap),
    ``end`` the boundary after the gap's last letter, ``right`` int ``(m,)`` the boundary after
    each letter of the right context. ``BOUNDARY_UNKNOWN`` where the text does not say
    (scriptio continua)."""

    left: np.ndarray
    end: int
    right: np.ndarray

    def fitted(self, n_left: int, n_right: int) -> WordBreaks:
        """Aligned with a context cut to its last ``n_left`` and first ``n_right`` letters
        (:func:`cut_context`)."""
        lb = np.asarray(self.left, dtype=np.int64)
        return WordBreaks(lb[len(lb) - n_left :], self.end, np.asarray(self.right)[:n_right])

    def disagreements(
        self, index: Any, P: np.ndarray, W: np.ndarray, A_: np.ndarray, B_: np.ndarray
    ) -> np.ndarray:
        """Int64 per occurrence (fill at slot ``P`` of ``W`` letters, ``A_``/``B_`` letters of
        context matched): the word breaks, over the matched context and at the fill's end, where
        both the text and the passage say whether a word ends and they differ."""
        flow = index.flow
        n = len(flow)
        out = np.zeros(len(P), dtype=np.int64)

        def compare(mask: np.ndarray, pos: np.ndarray, mine: int) -> None:
            if mine not in _KNOWN or not mask.any():
                return
            at = np.clip(pos[mask], 0, n - 1)
            theirs = flow[at].astype(np.int64) % 4
            mine_breaks = mine in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE)
            differ = (theirs != A.BOUNDARY_UNKNOWN) & (_is_break(theirs) != mine_breaks)
            out[np.flatnonzero(mask)] += differ

        for k in range(len(self.left)):
            compare(A_ > k, P - 1 - k, int(self.left[len(self.left) - 1 - k]))
        compare(W > 0, P + W - 1, int(self.end))
        for k in range(len(self.right)):
            compare(B_ > k, P + W + k, int(self.right[k]))
        return out


def word_end_widths(index: Any, at: np.ndarray, most: int, step: int) -> np.ndarray:
    """Int64 per slot of ``at``: with ``step`` +1, the letters from ``at`` up to and including
    the first one whose word ends (its boundary a word or sentence end); with ``step`` -1, the
    letters before ``at`` back to the last word end before them. 0 where no such end is
    recorded within ``most`` letters (an unknown boundary first; a separator, a lacuna or the
    index's start end a word as a break does)."""
    text, flow = index.text, index.flow
    n = len(text)
    out = np.zeros(len(at), dtype=np.int64)
    idx = np.arange(len(at))
    pos = np.asarray(at, dtype=np.int64) if step > 0 else np.asarray(at, dtype=np.int64) - 1
    for k in range(most + (0 if step > 0 else 1)):
        if step < 0 and k > 0:  # the index's first slot: its word starts the text, as after a
            out[idx[pos == -1]] = k  # separator
        ok = (pos >= 0) & (pos < n)
        idx, pos = idx[ok], pos[ok]
        if not len(idx):
            break
        letter = text[pos] > 0
        b = flow[pos].astype(np.int64) % 4
        if step > 0:
            ends = letter & _is_break(b)
            out[idx[ends]] = k + 1
            go = letter & (b == A.BOUNDARY_INTERNAL)
        elif k == 0:  # the fill's last letter: its own break is the gap's end's
            go = letter
        else:  # a separator, or a letter that ends the word before: the fill starts after it
            ends = ~letter | _is_break(b)
            out[idx[ends]] = k
            go = letter & (b == A.BOUNDARY_INTERNAL)
        idx, pos = idx[go], pos[go] + step
    return out


__all__ = ["BREAK_COST", "WordBreaks", "word_end_widths"]
