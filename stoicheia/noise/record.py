"""The result of noising one record: :class:`Noised`."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

__all__ = ["Noised"]


@dataclass
class Noised:
    """One noised record of ``M >= n`` slots; every array has shape ``(M,)``.

    Attributes:
        chars: uint8 input ids, letters 0..23 or MASK (24); BLANK is never an input.
        boundary, dia, punct: uint8 inputs, UNKNOWN (3 / 48 / 6) where hidden.
        tgt_chars: int16 target, letter 0..23 or BLANK (25), -100 where not supervised.
        tgt_boundary, tgt_dia, tgt_cap, tgt_punct: int16 aux targets, -100 where not supervised.
        weight: float32 char-loss weight per slot (``1/t`` at masked slots, 1.0 everywhere for
            substitution records, 0 where ``tgt_chars`` is -100).
        word_start: bool, True at the first slot of each word of the original record (a safe
            split point when packing records into rows); slot 0 is True in a full record.
        t: the corruption rate of the record.
        pattern: the pattern name (one of :data:`PATTERNS`, or ``"reference"``).
    """

    chars: np.ndarray
    boundary: np.ndarray
    dia: np.ndarray
    punct: np.ndarray
    tgt_chars: np.ndarray
    tgt_boundary: np.ndarray
    tgt_dia: np.ndarray
    tgt_cap: np.ndarray
    tgt_punct: np.ndarray
    weight: np.ndarray
    word_start: np.ndarray
    t: float
    pattern: str

    def __len__(self) -> int:
        """Number of slots ``M``."""
        return int(self.chars.shape[0])

    def __getitem__(self, s: slice) -> Noised:
        """Slice every array with ``s`` (used to split a record across packed rows).

        Raises ``TypeError`` for anything but a slice (an integer index would drop the axis).
        """
        if not isinstance(s, slice):
            raise TypeError(f"Noised can only be sliced (got {type(s).__name__}); use rec[a:b]")
        kw = {}
        for f in fields(self):
            v = getattr(self, f.name)
            kw[f.name] = v[s] if isinstance(v, np.ndarray) else v
        return Noised(**kw)
