"""Fusion weights chosen on the selection half: a grid over named experts.

A fused decoder weighs several experts (today the network and the letter n-gram; a
``parallels`` expert adds an axis). A :class:`FusedFamily` names the decoder (its row in the
table, e.g. ``"fused"``), its axes (``{"ngram": (0, 0.2, ..., 1)}``, one per weighted expert)
and how to make the decoder at one point of the grid. :func:`sweep_family` restores the gaps
of the **selection** half (:mod:`.halves`) at every point of the grid (the cartesian
product of the axes) and :func:`choose_point` picks the point with the best mean top-1 over the
protocols, then the lowest mean CER, then the smallest weights (the simpler decoder), in that
order. Only the selection half's gaps enter the choice: the report half's figures cannot move
it (``tests/test_benchmark_halves.py`` changes report-half answers and checks that).

A second family is one more entry, e.g. ``FusedFamily("fused3", {"ngram": (...), "parallels":
(...)}, make)`` with ``make(weights)`` returning the decoder that fuses all three at
``weights["ngram"]`` and ``weights["parallels"]``; the benchmark then gives its row, its
sweep and its intervals against the n-gram and against ``fused`` without further change.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stoicheia.inference.benchmark.protocols import Task

#: A decoder: a task -> its candidates (best first) and the probability of the first.
Decoder = Callable[[Task], tuple[list[str], float]]


@dataclass(frozen=True)
class FusedFamily:
    """A fused decoder with weights to choose. ``name``: its row in the table (``"fused"``);
    ``axes``: ``{expert: weights}``, each weight a float (the grid is their product, in the
    order given); ``make(weights)``: the decoder at ``{expert: weight}``; ``refine``: a fit
    made at the chosen point on the selection half (the field's comment).

    Raises ``ValueError`` for no axis or an axis without a weight."""

    name: str
    axes: Mapping[str, Sequence[float]]
    make: Callable[[dict[str, float]], Decoder]
    #: a second fit at the chosen point (the whole readings' ranker): ``refine(chosen,
    #: selection)`` returns ``(decoder, figures)`` (the decoder to report and what the fit
    #: found) or None to keep ``make(chosen)``
    refine: Callable[[dict[str, float], dict[str, list[Task]]], Any] | None = None

    def __post_init__(self) -> None:
        if not self.axes or any(len(w) == 0 for w in self.axes.values()):
            raise ValueError(
                f"fused decoder {self.name!r}: every expert needs at least one weight "
                f"({dict(self.axes)})"
            )

    def points(self) -> list[dict[str, float]]:
        """Every point of the grid, ``{expert: weight}``, the last axis varying fastest."""
        names = list(self.axes)
        return [
            dict(zip(names, map(float, combo), strict=True))
            for combo in itertools.product(*(self.axes[n] for n in names))
        ]


def point_label(weights: Mapping[str, float]) -> str:
    """``"ngram=0.8"`` or ``"ngram=0.8,parallels=0.5"``: a point of the grid as text."""
    return ",".join(f"{k}={v:g}" for k, v in weights.items())


def choose_point(sweep: Sequence[dict]) -> dict[str, float]:
    """The chosen weights of a sweep (module docstring): ``sweep`` is a list of ``{"weights":
    {expert: w}, "figures": {protocol: {"top1", "cer", ...}}}``. Protocols without a gap
    (no ``top1``) are left out of the means. Raises ``ValueError`` for an empty sweep or one
    without a gap at all."""
    if not sweep:
        raise ValueError("choose_point: no point swept")

    def key(entry: dict) -> tuple:
        figs = [f for f in entry["figures"].values() if "top1" in f]
        if not figs:
            raise ValueError("choose_point: no gap in the selection half to choose weights on")
        return (
            round(float(np.mean([f["top1"] for f in figs])), 9),
            -round(float(np.mean([f["cer"] for f in figs])), 9),
            -round(float(sum(entry["weights"].values())), 9),
        )

    return dict(max(sweep, key=key)["weights"])


def sweep_family(
    family: FusedFamily,
    selection: dict[str, list[Task]],
    run: Callable[..., dict],
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Restore the ``selection`` tasks (``{protocol: [Task]}``, the selection half only) at every
    point of ``family``'s grid with ``run`` (:func:`~stoicheia.inference.benchmark.run.run_tasks`)
    and choose the weights (:func:`choose_point`). ``progress(label, done, total)``: the sweep
    reports as one task. Returns ``{"axes": {expert: [w]}, "sweep": [{"weights", "figures":
    {protocol: {"gaps", "top1", "cer"}}}], "chosen": {expert: w}, "chosen_on": "<n> gaps of the
    selection half ..."}``."""
    points = family.points()
    n_all = len(points) * sum(len(t) for t in selection.values())
    count = [0]

    def one_bar(label: str, done: int, total: int) -> None:
        count[0] += 1
        if progress is not None:
            progress(f"{family.name} sweep ({len(points)} points)", count[0], n_all)

    entries = []
    for weights in points:
        label = point_label(weights)
        res = run({label: family.make(weights)}, selection, one_bar)
        entries.append(
            {
                "weights": weights,
                "figures": {
                    p: {
                        k: r["decoders"][label][k]
                        for k in ("gaps", "top1", "cer")
                        if k in r["decoders"][label]
                    }
                    for p, r in res.items()
                },
            }
        )
    gaps = sum(len(t) for t in selection.values())
    inscriptions = len({t.text_id.split("#", 1)[0] for ts in selection.values() for t in ts})
    return {
        "axes": {k: [float(w) for w in v] for k, v in family.axes.items()},
        "sweep": entries,
        "chosen": choose_point(entries),
        "chosen_on": f"{gaps:,} gaps of the selection half of the inscription dev set "
        f"({inscriptions:,} inscriptions)",
    }


__all__ = ["Decoder", "FusedFamily", "choose_point", "point_label", "sweep_family"]
