"""One MDS sample's planes: its plane columns back as :class:`~stoicheia.text.planes.Planes`
(:func:`decode_planes`), and a long record cut at word starts into the parts written as samples
(:func:`split_at_words`).

Apart from :mod:`stoicheia.data.shards` (which writes the shards and imports ``streaming``) so
that the readers of a sample (the parallels index build, the evaluation sets, the stream) need
only numpy for it, and the index build imports no module that imports it back.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from stoicheia.text.alphabet import PLANES
from stoicheia.text.planes import Planes


def decode_planes(sample: Mapping[str, bytes]) -> Planes:
    """Turn the plane columns of one MDS sample back into :class:`Planes` (uint8, shape (n,)).

    Raises ``ValueError`` naming the sample when the planes differ in length (a corrupt shard).
    """
    # shards written before the lacuna plane existed have no "lacuna" column: no real lacuna
    arrays = {
        name: np.frombuffer(sample[name], dtype=np.uint8)
        for name in PLANES
        if name != "lacuna" or name in sample
    }
    lengths = {len(a) for a in arrays.values()}
    if len(lengths) != 1:
        raise ValueError(
            f"sample {sample.get('id')!r}: planes of unequal lengths {sorted(lengths)}; the shard "
            "is corrupt, re-run convert"
        )
    return Planes(**arrays)


def split_at_words(planes: Planes, max_letters: int) -> list[Planes]:
    """Cut ``planes`` into consecutive parts of at most ``max_letters`` letters at word starts.

    No word is cut unless a single word is longer than ``max_letters`` (then it is cut hard,
    which real Greek never needs at the sizes used here). Every letter lands in exactly one
    part, in order. Raises ``ValueError`` if ``max_letters < 1``.
    """
    if max_letters < 1:
        raise ValueError(f"max_letters must be >= 1, got {max_letters}")
    n = len(planes)
    if n <= max_letters:
        return [planes]
    starts = planes.word_starts()
    parts = []
    begin = 0
    while n - begin > max_letters:
        limit = begin + max_letters
        # the last word start in (begin, limit]: cutting there keeps every word whole
        k = np.searchsorted(starts, limit, side="right") - 1
        cut = int(starts[k]) if k >= 0 and starts[k] > begin else limit
        parts.append(planes[begin:cut])
        begin = cut
    parts.append(planes[begin:])
    return parts


__all__ = ["decode_planes", "split_at_words"]
