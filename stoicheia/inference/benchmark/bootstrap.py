"""Is a decoder's lead over the n-gram larger than chance? Paired bootstrap intervals.

For each protocol of a :func:`~stoicheia.inference.benchmark.run.benchmark` result and each pair
of decoders of :func:`pairs_for` (every decoder against the n-gram, and every other decoder
against ``fused``, today's network + n-gram: fused − n-gram, model − n-gram, model − fused;
a ``parallels`` or ``fused3`` row gets both comparisons as soon as it is in the result), the
difference of the two decoders' top-1, top-20 and CER on the same gaps, with a 95 %
percentile interval from a paired bootstrap, on the whole protocol and on each length band of
:data:`BANDS` (1-3, 4-6, 7-10 letters, and 4-10 together):

* **resampling unit**: the inscription (the EpiDoc file, the text id before ``#``). The gaps of
  one inscription share its formulae, its hand and its state, so they are not independent; the
  inscriptions are drawn with replacement (as many as there are) and every gap of each drawn
  inscription is taken, as often as it was drawn: the cluster bootstrap (Davison & Hinkley
  1997, "Bootstrap Methods and their Application", sec. 3.8; Field & Welsh 2007, "Bootstrapping
  clustered data", J. R. Stat. Soc. B 69). Resampling gaps one by one would make the
  intervals too narrow.
* **paired**: each resample scores both decoders on the same gaps and takes the difference,
  as Koehn (2004, "Statistical Significance Tests for Machine Translation Evaluation", EMNLP)
  compares two systems on resampled test sets; the correlation of the two decoders (they miss
  the same hard gaps) cancels out.
* **figures**: recomputed on each resample exactly as the benchmark defines them
  (:func:`~stoicheia.inference.benchmark.scoring.pooled_figures`): CER is the resample's summed
  edit distance over its summed truth letters, not a mean of per-gap ratios.
* **interval**: the 2.5th and 97.5th percentiles of the resampled differences (the percentile
  interval, Efron & Tibshirani 1993, "An Introduction to the Bootstrap", ch. 13), from
  ``resamples`` (default 1,000) draws of a generator seeded with the seed and the protocol's
  name: the same intervals on every run and machine.

A difference whose interval excludes 0 is larger than the resampling of these inscriptions
explains; one whose interval holds 0 is not shown to be a difference. The interval speaks of
other inscriptions like these (the same protocol, the same decoders). Where the result has the
two halves of the dev set (:mod:`.halves`; the fusion weights chosen on the
selection half), the intervals are given for each of its views (:mod:`.views`:
the report half, the report half without the texts that have a training twin, the selection
half), never for all gaps together (the fused row there would include the gaps its weights
were chosen on); a result written before the halves existed gets them on all its gaps, as
before (its fused weight was chosen on those same gaps: an upper estimate).

Everything comes from the per-gap ``examples`` of the result (truth, each decoder's top-1 and
rank), so an existing ``benchmark.json`` is enough: :func:`add_differences`, and
:func:`~stoicheia.inference.benchmark.rewrite.rewrite_folder` for a whole folder
(``scripts/benchmark_intervals.py FOLDER``).
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Iterable

import numpy as np

from stoicheia.inference.benchmark.protocols import inscription_of
from stoicheia.inference.benchmark.scoring import edit_distance, pooled_figures
from stoicheia.inference.benchmark.views import rows_of

log = logging.getLogger(__name__)

#: The reference decoders every other decoder is compared with, in this order: the letter
#: n-gram, then today's fused decoder (network + n-gram).
REFERENCES = ("ngram", "fused")
#: what names a decoder as an ablation of another: ``"fused without judge"`` is ``fused`` with
#: the network's judge weight at 0, compared with ``fused`` only (:func:`pairs_for`)
ABLATION = " without "
#: The length bands of the intervals: the table's three, and the long gaps together.
BANDS = ((1, 3), (4, 6), (7, 10), (4, 10))
#: The figures compared (top-20 only where the benchmark kept 20 candidates; ``length_right``
#: added on a protocol of gaps of unknown width).
FIGURES = ("top1", "top20", "cer")
LENGTH = "length_right"
LEVEL = 0.95
RESAMPLES = 1000
#: Resamples weighed at a time (a float64 matrix of CHUNK x gaps: 6.5 MB for 814 gaps).
CHUNK = 1000


def pairs_for(decoders: Iterable[str]) -> list[tuple[str, str]]:
    """The pairs ``(a, b)`` compared as ``a − b`` among ``decoders`` (names): every decoder
    against each of :data:`REFERENCES` that is present, fused decoders (names starting with
    ``fused``) first, then the others in the order given; a reference is not compared again
    with an earlier one (``fused − n-gram``, never ``n-gram − fused``). ``["model", "ngram",
    "fused"]`` gives fused − n-gram, model − n-gram, model − fused. An ablation, a decoder
    named ``"<a> without <part>"`` (:data:`ABLATION`; the benchmark's ``fused without judge``),
    is compared with ``a`` only, as ``a − ablation`` (what the part adds), after the others."""
    names = list(dict.fromkeys(decoders))
    ablations = [n for n in names if ABLATION in n and n.split(ABLATION, 1)[0] in names]
    names = [n for n in names if n not in ablations]
    order = sorted(names, key=lambda n: (not n.startswith("fused"), names.index(n)))
    out = []
    for i, ref in enumerate(REFERENCES):
        if ref not in names:
            continue
        out += [(d, ref) for d in order if d != ref and d not in REFERENCES[:i]]
    return out + [(n.split(ABLATION, 1)[0], n) for n in ablations]


def gap_arrays(
    examples: list[dict], decoder: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per gap of ``examples`` (a protocol's ``examples`` of a benchmark result): truth letters,
    edit distance of ``decoder``'s top-1 to the truth, rank of the truth (0: absent), letters
    of the top-1, each an int64 array of shape ``(n,)``. Raises ``ValueError`` naming the gap
    where an entry lacks the truth or the decoder's ``top1``/``rank``."""
    letters, dist, ranks, top1 = [], [], [], []
    for i, row in enumerate(examples):
        got = row.get(decoder)
        if (
            "truth" not in row
            or not isinstance(got, dict)
            or "top1" not in got
            or "rank" not in got
        ):
            raise ValueError(
                f"gap {i} ({row.get('text', '?')} at {row.get('start', '?')}) has no truth "
                f"or no top1/rank of {decoder}"
            )
        letters.append(len(row["truth"]))
        dist.append(edit_distance(got["top1"], row["truth"]))
        ranks.append(int(got["rank"] or 0))
        top1.append(len(got["top1"]))
    return (
        np.array(letters, dtype=np.int64),
        np.array(dist, dtype=np.int64),
        np.array(ranks, dtype=np.int64),
        np.array(top1, dtype=np.int64),
    )


def _pooled(arrays: tuple, figures: tuple[str, ...], ks: list[int], weights=None) -> dict:
    """:func:`~.scoring.pooled_figures` of :func:`gap_arrays`' arrays, with ``length_right``
    where ``figures`` asks for it."""
    letters, dist, ranks, top1 = arrays
    length = top1 if LENGTH in figures else None
    return pooled_figures(letters, dist, ranks, weights=weights, ks=ks, top1_letters=length)


def paired_differences(
    examples: list[dict],
    pairs: list[tuple[str, str]],
    figures: tuple[str, ...] = FIGURES,
    resamples: int = RESAMPLES,
    seed: int = 0,
    level: float = LEVEL,
) -> dict:
    """The paired cluster bootstrap (module docstring) on one protocol's ``examples``.

    ``pairs``: ``(a, b)`` decoder names for ``a − b``; ``figures``: of ``top1``, ``top5``,
    ``top20``, ``cer``, ``length_right``; ``resamples`` >= 1; ``seed``: of the generator (give
    each protocol its own); ``level``: of the interval, in (0, 1). Returns ``{"a-b": {figure:
    {"diff", "low", "high"}}}``, fractions (a share or CER of ``a`` minus that of ``b``, in [-1,
    1] for shares; CER > 0: ``a`` makes more errors); ``low``/``high`` are ``None`` where the
    gaps come from a single inscription (nothing to resample). Raises ``ValueError`` for no gap,
    bad options or an incomplete gap (:func:`gap_arrays`)."""
    if not examples:
        raise ValueError("paired_differences: no gap")
    if resamples < 1 or not 0 < level < 1:
        raise ValueError(
            f"paired_differences: resamples {resamples} (give >= 1), level {level} (in (0, 1))"
        )
    ks = sorted({int(f[3:]) for f in figures if f.startswith("top")})
    names = {n for pair in pairs for n in pair}
    arrays = {n: gap_arrays(examples, n) for n in sorted(names)}
    units = [inscription_of(str(row.get("text", ""))) for row in examples]
    index = {u: j for j, u in enumerate(dict.fromkeys(units))}
    unit_of_gap = np.array([index[u] for u in units], dtype=np.int64)
    n_units = len(index)
    rng = np.random.default_rng(seed)
    diffs: dict[tuple[str, str, str], list[np.ndarray]] = {
        (a, b, f): [] for a, b in pairs for f in figures
    }
    for first in range(0, resamples, CHUNK):  # a (CHUNK, gaps) weight matrix at a time
        rows = min(CHUNK, resamples - first)
        # counts[r, j]: how often inscription j is drawn in resample r (n_units draws with
        # replacement)
        drawn = rng.integers(0, n_units, size=(rows, n_units))
        counts = np.zeros((rows, n_units), dtype=np.float64)
        np.add.at(counts, (np.arange(rows)[:, None], drawn), 1.0)
        weights = counts[:, unit_of_gap]  # (rows, n): each gap counts as often as its inscription
        boot = {n: _pooled(arrays[n], figures, ks, weights) for n in arrays}
        for a, b, f in diffs:
            diffs[a, b, f].append(boot[a][f] - boot[b][f])
    whole = {n: _pooled(arrays[n], figures, ks) for n in arrays}
    tail = 100 * (1 - level) / 2
    out: dict = {}
    for a, b in pairs:
        per: dict = {}
        for f in figures:
            drawn_diffs = np.concatenate(diffs[a, b, f])
            low, high = (
                np.percentile(drawn_diffs, [tail, 100 - tail]) if n_units > 1 else (None, None)
            )
            per[f] = {
                "diff": whole[a][f] - whole[b][f],
                "low": None if low is None else float(low),
                "high": None if high is None else float(high),
            }
        out[f"{a}-{b}"] = per
    return out


def _protocol_seed(seed: int, protocol: str) -> list[int]:
    """A generator seed of its own per protocol (stable across runs, unlike ``hash``)."""
    return [int(seed), zlib.crc32(protocol.encode("utf-8"))]


def _differences(
    examples: list[dict],
    pairs: list[tuple[str, str]],
    figures: tuple[str, ...],
    resamples: int,
    seed: int,
    label: str,
    level: float,
) -> tuple[dict, dict]:
    """The differences of ``pairs`` on ``examples`` and on each band of :data:`BANDS` that
    has a gap: ``(differences, {band: differences})``; the generator of each seeded with
    ``seed`` and ``label`` (and the band)."""
    whole = paired_differences(
        examples, pairs, figures, resamples, _protocol_seed(seed, label), level
    )
    bands = {}
    for lo, hi in BANDS:
        rows = [r for r in examples if lo <= len(r["truth"]) <= hi]
        if rows:
            bands[f"{lo}-{hi}"] = paired_differences(
                rows, pairs, figures, resamples, _protocol_seed(seed, f"{label}|{lo}-{hi}"), level
            )
    return whole, bands


def add_differences(
    result: dict, resamples: int = RESAMPLES, seed: int | None = None, level: float = LEVEL
) -> dict:
    """Add the paired bootstrap intervals (module docstring) to a benchmark result, in place.

    For each pair of :func:`pairs_for` among the decoders that ran, on each protocol: where
    the protocol has ``views`` (:func:`~.views.add_views`; a result with the
    halves), ``views[v]["differences"]`` and ``views[v]["band_differences"][band]`` for each
    view (see :func:`paired_differences`); otherwise ``differences`` and
    ``band_differences`` of the protocol itself, over all its gaps (a result written before
    the halves; the whole protocol's generator seeded as it was then). Then
    ``result["bootstrap"] = {"resamples", "seed", "level", "unit", "inscriptions": {protocol:
    n}}``; top-20 only where the result kept 20 candidates. ``resamples`` 0 leaves the result
    as it is; ``seed`` defaults to the result's ``settings.seed``. Returns ``result``.

    Before resampling, the figures of every decoder are recomputed from the examples and must
    equal those recorded: raises ``ValueError`` (naming the protocol, decoder and figure) when
    they do not (a result edited by hand or written by another version), or when a protocol
    has no ``examples`` or fewer than its gaps. A protocol or view without a gap gets no
    differences (and no count in ``inscriptions``)."""
    if resamples == 0:
        return result
    seed = int((result.get("settings") or {}).get("seed", 0) if seed is None else seed)
    candidates = int((result.get("settings") or {}).get("candidates", 20))
    figures = tuple(f for f in FIGURES if not f.startswith("top") or int(f[3:]) <= candidates)
    units: dict[str, int] = {}
    for protocol, res in result["protocols"].items():
        examples = res.get("examples")
        if examples is None or len(examples) != res.get("gaps"):
            raise ValueError(
                f"protocol {protocol} has no per-gap examples to resample; run the benchmark again"
            )
        decs = res.get("decoders", {})
        pairs = pairs_for(decs)
        if not pairs or not examples:  # no pair to compare, or a protocol without a gap
            continue
        ks = [int(f[3:]) for f in figures if f.startswith("top")]
        # gaps of unknown width: how often the length is right, compared as the others are
        figs = figures + ((LENGTH,) if any(LENGTH in d for d in decs.values()) else ())
        for name in sorted({n for pair in pairs for n in pair}):
            again = _pooled(gap_arrays(examples, name), figs, ks)
            for f in figs:
                if not np.isclose(again[f], decs[name][f], rtol=1e-9, atol=1e-12):
                    raise ValueError(
                        f"{protocol}: the examples give {name}'s {f} as {again[f]:.6f}, the result "
                        f"records {decs[name][f]:.6f}; the file was edited or written by another "
                        "version: run the benchmark again"
                    )
        views = res.get("views")
        if views:
            for view, got in views.items():
                rows = rows_of(examples, view)
                if not rows:
                    continue
                got["differences"], got["band_differences"] = _differences(
                    rows, pairs, figs, resamples, seed, f"{protocol}|{view}", level
                )
        else:
            res["differences"] = paired_differences(
                examples, pairs, figs, resamples, _protocol_seed(seed, protocol), level
            )
            res["band_differences"] = _differences(
                examples, pairs, figs, resamples, seed, protocol, level
            )[1]
        units[protocol] = len({inscription_of(str(r.get("text", ""))) for r in examples})
        log.info(
            "[benchmark] %s: bootstrap over %d inscriptions, %d resamples",
            protocol,
            units[protocol],
            resamples,
        )
    result["bootstrap"] = {
        "resamples": resamples,
        "seed": seed,
        "level": level,
        "unit": "inscription (the text id before '#'), every gap of each drawn inscription",
        "inscriptions": units,
    }
    return result


__all__ = [
    "BANDS",
    "FIGURES",
    "LEVEL",
    "REFERENCES",
    "RESAMPLES",
    "add_differences",
    "gap_arrays",
    "paired_differences",
    "ABLATION",
    "pairs_for",
]
