"""One MDS sample's plane columns back as :class:`~stoicheia.text.planes.Planes`.

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


__all__ = ["decode_planes"]
