"""The container of a record's aligned letter planes.

A text of ``n`` letter slots is six aligned ``np.uint8`` arrays of shape ``(n,)`` (ids in
:mod:`stoicheia.text.alphabet`):

* ``chars``    0..23, the letter α..ω (folded forms: see :mod:`stoicheia.text.encode`);
  ``MASK`` (24) at a real-lacuna slot, whose letter nobody knows.
* ``boundary`` 0 word-internal, 1 word-final, 2 sentence-final (the letter carrying a full
  stop or question mark, and always the last slot of the record), 3 unknown.
* ``dia``      ``((accent*3 + breathing)*2 + iota_subscript)*2 + diaeresis`` in ``[0, 48)``,
  48 unknown (:func:`stoicheia.text.alphabet.dia_id`).
* ``cap``      1 if the letter is a capital (decided from the base code point), 2 unknown.
* ``punct``    the mark that FOLLOWS the letter: 0 none, 1 comma, 2 raised dot, 3 colon,
  4 full stop, 5 question mark, 6 unknown.
* ``lacuna``   0 a letter the source has; 1 a lost letter of a lacuna of known width (one
  slot per letter); 2 a slot of a lacuna of estimated width (``ca. N``: N slots; ``a..b``:
  b slots); 3 the one-slot stand-in for a lacuna of unknown width. At a slot with
  ``lacuna > 0``: ``chars`` MASK, ``dia`` and ``cap`` unknown, ``boundary`` 1/2 when a word
  or sentence break follows the gap and unknown otherwise, ``punct`` as read.

The jobs around it: :mod:`stoicheia.text.encode` (text, with Leiden notation, -> planes),
:mod:`stoicheia.text.render` (planes -> text), :mod:`stoicheia.text.filter` (the record
filter), :mod:`stoicheia.text.leiden` (the Leiden parser).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from stoicheia.text import alphabet as A

__all__ = ["Planes"]


@dataclass(eq=False)
@dataclass(eq=False)
class Planes:
    """Six aligned ``np.uint8`` arrays of shape ``(n,)``, one entry per letter slot.

    Fields (ids in :mod:`stoicheia.text.alphabet`): ``chars`` 0..23 (``MASK`` = 24 at a
    real-lacuna slot), ``boundary`` 0..3, ``dia`` 0..48, ``cap`` 0..2, ``punct`` 0..6,
    ``lacuna`` 0..3 (0 = a letter the source has). ``lacuna`` may be left out (``None``):
    it is then all zeros. The constructor checks shape and dtype (not the value ranges,
    to stay cheap) and raises ``TypeError``/``ValueError``. Equality (``==``) compares all
    six arrays element-wise and returns a ``bool``.
    """

    chars: np.ndarray
    boundary: np.ndarray
    dia: np.ndarray
    cap: np.ndarray
    punct: np.ndarray
    lacuna: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.lacuna is None and isinstance(self.chars, np.ndarray):
            self.lacuna = np.zeros(self.chars.shape[:1], np.uint8)
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
        """Slice (or index with a 1-D int/bool array) all six planes alike.

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

    def n_letters(self) -> int:
        """Number of slots that hold a letter of the source (``lacuna == 0``)."""
        return int(np.count_nonzero(self.lacuna == 0))

    def to_dict(self) -> dict[str, np.ndarray]:
        """``{plane name: array}`` for storage, keys in ``alphabet.PLANES`` order (no copy)."""
        return {k: getattr(self, k) for k in A.PLANES}

    @classmethod
    def from_dict(cls, d: Mapping[str, np.ndarray]) -> Planes:
        """Inverse of :meth:`to_dict`; extra keys are ignored, a missing plane raises ``KeyError``
        (shards written before the lacuna plane existed lack it: re-run ``stoicheia convert``).

        Arrays are converted with ``np.asarray(x, dtype=np.uint8)`` after checking that the
        values fit in ``[0, 255]`` (``ValueError`` otherwise).
        """
        arrs = []
        for k in A.PLANES:
            if k not in d:
                raise KeyError(
                    f"Planes.from_dict: plane {k!r} missing (have {sorted(d)}); data written "
                    "before that plane existed must be converted again with `stoicheia convert`"
                )
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
