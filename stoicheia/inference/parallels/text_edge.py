"""The stone's edge in the parallels (issue 31 §2): a gap with text on one side only, whose
parallels each give the word up to the context (:func:`~.search.gap_parallels` with
``to_word_end``), weighs a source ``exp(edge_gain)`` times more where its own text has an edge
there too: the word that opens (or closes) an inscription of the corpus before the words that
only follow the same context inside a text. ``edge_gain`` is ``fusion.json``'s
``parallels_edge_gain``, fitted on the selection half by ``stoicheia benchmark``
(:func:`stoicheia.inference.benchmark.parallels.fit_edge_gain`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np


def edge_weights(plain: np.ndarray, edge: np.ndarray, edge_gain: float) -> np.ndarray:
    """Float64 ``(n,)``: fills' weights at ``edge_gain`` from their ``plain`` and ``edge``
    parts (float ``(n,)`` each, at gain 0): ``plain + edge * exp(edge_gain)``; at gain 0 the
    plain part alone where a fill has no source at an edge, as the search summed it."""
    plain = np.asarray(plain, dtype=np.float64)
    edge = np.asarray(edge, dtype=np.float64)
    return np.where(edge > 0, plain + edge * float(np.exp(edge_gain)), plain)


def at_text_edge(index: Any, P: np.ndarray, W: np.ndarray, side: str) -> np.ndarray:
    """Bool ``(n,)``: whether each occurrence's fill (first slot ``P``, ``W`` letters, int64
    ``(n,)``) meets its own text's edge on the side away from the context matched: for a gap
    after the text (``side="l"``, context on the left) the fill ends its record or the letters
    before a lacuna of its edition; for a gap before the text (``side="r"``) it begins one.
    Records and lacunae are separated by the index's separator (0)."""
    text = index.text
    n = len(text)
    P = np.asarray(P, dtype=np.int64)
    if side == "l":
        end = P + np.asarray(W, dtype=np.int64)
        return (end >= n) | (text[np.minimum(end, n - 1)] == 0)
    return (P <= 0) | (text[np.maximum(P - 1, 0)] == 0)


def edge_part(
    index: Any,
    P: np.ndarray,
    W: np.ndarray,
    side: str,
    group: np.ndarray,
    term: np.ndarray,
    edge: np.ndarray,
) -> np.ndarray:
    """Split the sources' weights ``term`` (float ``(n,)``, one per independent source: its
    fill's first slot ``P``, width ``W``, fill ``group``) into the part at a text's edge
    (:func:`at_text_edge` on ``side``), added into ``edge`` (float ``(fills,)``, in place),
    and the rest, returned (float ``(n,)``, 0 where a source is at an edge)."""
    meets = at_text_edge(index, P, W, side)
    np.add.at(edge, group, np.where(meets, term, 0.0))
    return np.where(meets, 0.0, term)


def reweighted(found: Any, edge_gain: float) -> Any:
    """``found`` (a :class:`~.search.GapParallels`) with the sources that meet their own text's
    edge where a gap at the stone's edge does weighed ``exp(edge_gain)`` times (``edge_gain``
    >= 0, natural log): each fill's ``weight`` is ``plain_weight + edge_weight *
    exp(edge_gain)`` and its ``prob`` its share of the fills' weights. A copy (the fills copied
    too; the search's order, the evidence and the fills kept are unchanged); ``found`` itself
    when it is at that gain already. Raises ``ValueError`` for a negative or non-finite gain."""
    if not (edge_gain >= 0 and np.isfinite(edge_gain)):
        raise ValueError(f"edge gain {edge_gain!r} must be a number >= 0")
    if edge_gain == found.edge_gain:
        return found
    if not any(f.edge_weight for f in found.fills):
        return dataclasses.replace(found, edge_gain=float(edge_gain))
    fills = [dataclasses.replace(f) for f in found.fills]
    weight = edge_weights(
        # a fill without a source at an edge keeps its weight (made by hand: plain unset)
        np.array([f.plain_weight if f.edge_weight else f.weight for f in fills]),
        np.array([f.edge_weight for f in fills]),
        edge_gain,
    )
    total = float(weight.sum())
    for f, w in zip(fills, weight, strict=True):
        f.weight = float(w)
        f.prob = float(w / total) if total > 0 else 0.0
    return dataclasses.replace(found, fills=fills, edge_gain=float(edge_gain))


__all__ = ["at_text_edge", "edge_part", "edge_weights", "reweighted"]
