"""The confidence floors of ``restore --epidoc``: chosen on the selection half, checked on the
report half.

A reading is written into an edition only when its probability reaches a floor; below it the
``<gap>`` stays and the readings are proposed (docs/restoring.md). A gap of known width and a
gap of unknown extent (``extent="unknown"``, ``[---]``: the protocols ``unknown`` and ``edge``)
get a floor each, because the decoders' probabilities mean different things there: a fill of
unknown extent must also guess its length, and at the same probability it is right less often.

:func:`choose_floor` picks, for one decoder and one kind of gap, the least floor of
:data:`FLOORS` at which the selection half's gaps that would be written are right (top-1) at
least half the time, with the lower end of the 95 % Wilson interval (Wilson 1927), not the
share itself, at or above one half: the share is taken from few gaps and the report half is
another sample. :func:`written_lines` gives, for the summary, what that floor writes on the
report half (gaps written, share right, its interval), the figure issue 31 asks of written
fills of unknown extent.
"""

from __future__ import annotations

import math

__all__ = [
    "FLOORS",
    "KNOWN_WIDTH",
    "NONE_WRITTEN",
    "UNKNOWN_EXTENT",
    "choose_floor",
    "choose_floors",
    "written",
    "written_lines",
    "wilson_interval",
]

#: the confidence floors tried, probabilities 0 to 0.95 in steps of 0.05
FLOORS = tuple(round(0.05 * i, 2) for i in range(0, 20))
#: the floor kept when gaps exist but no floor of :data:`FLOORS` writes readings right half the
#: time: 1, at which ``restore --epidoc`` writes none and proposes every reading
NONE_WRITTEN = 1.0
#: the benchmark's protocols of gaps of known width, and of unknown extent (``[---]``)
KNOWN_WIDTH = ("hidden", "supplements")
UNKNOWN_EXTENT = ("unknown", "edge")
#: the normal quantile of a two-sided 95 % interval
_Z95 = 1.959963984540054


def wilson_interval(right: int, n: int, z: float = _Z95) -> tuple[float, float]:
    """The Wilson score interval of a share ``right / n`` (fractions 0 to 1; default 95 %):
    ``(p + z²/2n ± z √(p(1-p)/n + z²/4n²)) / (1 + z²/n)`` (Wilson, JASA 22, 1927). ``(0, 1)``
    for ``n == 0``. Raises ``ValueError`` for ``right`` outside ``[0, n]``."""
    if not 0 <= right <= n:
        raise ValueError(f"{right} right of {n}: give 0 <= right <= n")
    if n == 0:
        return 0.0, 1.0
    p = right / n
    d = 1 + z * z / n
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - margin) / d), min(1.0, (centre + margin) / d)


def _rows(result: dict, decoder: str, protocols: tuple[str, ...], half: str) -> list[dict]:
    """The ``decoder``'s results (``{"prob", "rank", ...}``) on the gaps of ``half`` of the
    ``protocols`` of a benchmark result."""
    return [
        r[decoder]
        for p in protocols
        for r in ((result.get("protocols") or {}).get(p) or {}).get("examples") or []
        if r.get("half") == half and decoder in r
    ]


def written(rows: list[dict], floor: float) -> tuple[int, int]:
    """``(right, written)``: of the ``rows`` (a decoder's results, ``{"prob", "rank"}``), those
    whose first reading is at least ``floor`` probable (written; none at a floor of 1, as in
    :meth:`~stoicheia.inference.epidoc.restore.Floors.writes`), and of them those right."""
    above = [r for r in rows if float(r["prob"]) >= floor and floor < 1.0]
    return sum(r["rank"] == 1 for r in above), len(above)


def choose_floor(
    result: dict,
    decoder: str,
    protocols: tuple[str, ...] = KNOWN_WIDTH + UNKNOWN_EXTENT,
    precision: float = 0.5,
) -> float | None:
    """The confidence floor of ``restore --epidoc`` for ``decoder`` on the gaps of
    ``protocols``: the least of :data:`FLOORS` at which the selection half's gaps written
    (first reading at least that probable) are right with the lower end of their 95 % Wilson
    interval at least ``precision``; :data:`NONE_WRITTEN` when no floor reaches it; None when
    the selection half has no such gap (a result without halves, or without the protocols)."""
    rows = _rows(result, decoder, protocols, "selection")
    if not rows:
        return None
    for floor in FLOORS:
        right, n = written(rows, floor)
        if n and wilson_interval(right, n)[0] >= precision:
            return floor
    return NONE_WRITTEN


def choose_floors(result: dict, decoder: str) -> dict[str, float | None]:
    """Both floors of ``decoder`` (:func:`choose_floor`): ``{"known": P, "unknown": P}``, for
    the gaps of known width and of unknown extent; what ``fusion.json`` keeps as
    ``min_probability`` and ``min_probability_unknown``."""
    return {
        "known": choose_floor(result, decoder, KNOWN_WIDTH),
        "unknown": choose_floor(result, decoder, UNKNOWN_EXTENT),
    }


def written_lines(result: dict, decoder: str, floors: dict[str, float | None]) -> list[str]:
    """The summary's lines on what ``restore --epidoc`` would write with ``decoder`` at the
    ``floors`` (``{"known": P, "unknown": P}``, chosen on the selection half): per kind of gap,
    on the report half, the gaps written, the share of them right and its 95 % Wilson interval.
    No line for a kind without a floor or without report-half gaps."""
    lines = []
    for kind, protocols, label in (
        ("known", KNOWN_WIDTH, "gaps of known width"),
        ("unknown", UNKNOWN_EXTENT, "gaps of unknown extent [---]"),
    ):
        floor = floors.get(kind)
        rows = _rows(result, decoder, protocols, "report")
        if floor is None or not rows:
            continue
        right, n = written(rows, floor)
        lo, hi = wilson_interval(right, n)
        share = f"{100 * right / n:.1f}% right [{100 * lo:.1f}, {100 * hi:.1f}]" if n else "none"
        lines.append(f"  {label}: floor {floor:g}, {n:,} of {len(rows):,} written, {share}")
    if lines:
        lines.insert(
            0,
            f"written by restore --epidoc ({decoder}, its floors chosen on the selection half so "
            "that what is written is right at least half the time), report half:",
        )
    return lines
