"""The gaps of every protocol of the restoration benchmark over the texts of the dev set: the
span protocols and the supplements (:mod:`.protocols`) and the stone's edge (:mod:`.edge`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from stoicheia.inference.benchmark.edge import edge_tasks
from stoicheia.inference.benchmark.protocols import (
    PROTOCOLS,
    BenchmarkError,
    DevText,
    Task,
    span_tasks,
    supplement_tasks,
)


def build_tasks(
    texts: Iterable[DevText],
    protocols: Iterable[str],
    spans_per_text: int,
    seed: int,
    counts: Counter | None = None,
) -> dict[str, list[Task]]:
    """The tasks of each protocol over ``texts`` (in text order). Raises :class:`BenchmarkError`
    for an unknown protocol."""
    protocols = list(protocols)
    bad = [p for p in protocols if p not in PROTOCOLS]
    if bad:
        raise BenchmarkError(f"unknown protocol(s) {bad}; the protocols are {', '.join(PROTOCOLS)}")
    out: dict[str, list[Task]] = {p: [] for p in protocols}
    for dev in texts:
        for p in protocols:
            if p == "supplements":
                out[p] += supplement_tasks(dev, counts)
            elif p == "edge":
                out[p] += edge_tasks(dev, counts)
            else:
                # the counts of the spans are the same for both span protocols: counted once
                out[p] += span_tasks(
                    dev,
                    spans_per_text,
                    seed,
                    p,
                    counts if p == "hidden" or "hidden" not in protocols else None,
                )
    return out


__all__ = ["build_tasks"]
