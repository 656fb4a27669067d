"""The benchmark's defaults, apart from the modules that use them: ``stoicheia benchmark
--help`` reads them without importing NumPy, torch or datasketch (``benchmarks/startup.py``
times the command line's start)."""

from __future__ import annotations

#: Jaccard similarity of 3-letter shingles from which a training text is a dev text's twin
#: (a near-duplicate: the same text under two numbers, a re-edition); why 0.75:
#: docs/measuring-restoration.md
TWIN_THRESHOLD = 0.75  # stoicheia.data.twins.TWIN_THRESHOLD, which convert uses (tested equal)

#: default weights of the ``fused3`` grid (3 x 3 points: a run on the demo model stays near
#: 15 minutes on 2 loaded cores; see docs/measuring-restoration.md)
FUSED3_NGRAM_WEIGHTS = (0.6, 0.8, 0.9)
FUSED3_PARALLELS_WEIGHTS = (0.3, 0.6, 0.9)
#: the weights (natural log) tried for a parallel that meets its own text's edge at a stone's
#: edge (``fit_edge_gain``, chosen on the selection half's one-sided gaps; 0: none)
EDGE_GAINS = (0.0, 1.0, 2.0, 3.0, 4.0)
#: the whole readings' grid (``fused`` with a parallels index), chosen on the selection half:
#: Λ's ceiling, the evidence at which Λ is half of it, the unattested-word penalty (nats), the
#: network's weight as a judge of whole fills (β; 0: not used)
READINGS_GRID = {
    "lam_max": (0.5, 0.7, 0.9),
    "half": (0.25, 1.0, 4.0),
    "unattested": (0.0, 1.0, 2.0),
    "judge": (0.0, 0.5, 1.0),
}
