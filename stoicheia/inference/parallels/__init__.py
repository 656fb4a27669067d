"""Parallels: restoring a gap from the corpus's own passages, as epigraphers do.

* :mod:`.index`: the memory-mapped suffix-array index of the training records
  (:mod:`stoicheia.data.parallels_index` builds it);
* :mod:`.search`: a gap's parallels and fills (two-sided, unbounded context; after Liu et al.
  2024, "Infini-gram");
* :mod:`.prior`: the fills as an expert of the gap search;
* :mod:`.passages`: the passages sharing the longest stretches with a text
  (``stoicheia parallels``).

``docs/parallels.md`` tells what they are, how they are found and fused, and their limits.
"""

from stoicheia.inference.parallels.index import ParallelsIndex, Source, open_index
from stoicheia.inference.parallels.prior import FillPrior
from stoicheia.inference.parallels.search import (
    FillParallels,
    GapParallels,
    Parallel,
    cut_context,
    gap_parallels,
)

__all__ = [
    "FillParallels",
    "FillPrior",
    "GapParallels",
    "Parallel",
    "ParallelsIndex",
    "Source",
    "cut_context",
    "gap_parallels",
    "open_index",
]
