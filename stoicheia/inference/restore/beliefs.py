"""What the model believes about each gap of :func:`stoicheia.inference.restore.restore`.

For every gap, with the other gaps held at the best restoration:

* its own top-k (``Gap.alternatives``): a beam of iterative unmasking over that gap alone
  (:func:`~stoicheia.inference.restore.decoding.decode_window`), so the k fills are distinct
  and each is scored by the natural-log probability of its symbols as they were fixed. Fixing
  the slots in an order that depends only on what is fixed so far, each symbol drawn from its
  renormalised distribution, defines a proper distribution over whole fills; a fill's
  probability is the product along its one path, so the k probabilities sum to at most 1.
* for a gap of uncertain width, ``Gap.width_probs``: the mass the beam found at each width,
  plus the rest (1 minus that mass) spread by the BLANK predictions of one forward pass with
  the gap all MASK (:func:`~stoicheia.inference.restore.decoding.width_chain`); sums to 1.
* per letter of the best fill, ``Gap.letter_probs``: the probability the letter was fixed
  with in the whole-text decoding.
* with ``score_supplements``, for a re-predicted supplement, ``Gap.editor``: the editor's
  reading scored along the same decoding (each slot, taken in the model's order, fixed to the
  editor's letter) and ranked among the model's alternatives of the same width (at least 20).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from stoicheia.inference.restore.decoding import (
    BLANK,
    Hyp,
    decode_window,
    gap_logp,
    width_chain,
    window_around,
)
from stoicheia.inference.restore.reading import Alternative, EditorScore, Gap, InputStyle, Item
from stoicheia.inference.restore.rendering import finish
from stoicheia.text import alphabet as A
from stoicheia.text.encode import text_to_planes

#: alternatives a supplement's reading is ranked among, at least
EDITOR_RANK_POOL = 20


def _letters(a: np.ndarray) -> str:
    return "".join(A.LETTERS[int(s)] for s in a if 0 <= s < A.NUM_LETTERS)


def gap_beliefs(
    model: Any, items: list[Item], gaps: list[Gap], best: Hyp, *, k: int, window: int, respace: bool,
    style: InputStyle | None, score_supplements: bool = False, on_step: Callable[[], None] | None = None,
) -> None:
    """Fill ``letter_probs``, ``alternatives`` (``k`` per gap; none when ``k`` is 0),
    ``width_probs`` and ``editor`` of every gap in ``gaps`` (module docstring); ``best`` is the
    best whole-text hypothesis, ``window`` the slots the model sees at once."""
    for g in gaps:
        a = best.fill[g.index]
        slots = [j for j in range(g.slots) if 0 <= a[j] < A.NUM_LETTERS]
        g.letter_probs = [float(math.exp(best.lp[g.index][j])) if np.isfinite(best.lp[g.index][j]) else 1.0 for j in slots]
        scoring = score_supplements and g.kind == "supplement"
        pool = max(k, EDITOR_RANK_POOL) if scoring else k
        if pool < 1 and g.fixed_width:
            continue
        lo, hi = window_around(items, gaps, g.index, window)
        base = {i: v for i, v in best.fill.items() if i != g.index}
        alts: list[Hyp] = []
        if pool >= 1:
            alts = decode_window(model, items, gaps, base, [g.index], lo, hi, pool, respace, on_step=on_step)
            shown = alts[:k]
            if shown:
                printed = finish(model, items, gaps, [{**base, g.index: h.fill[g.index]} for h in shown], respace,
                                 [h.score for h in shown], style=style)
                g.alternatives = [
                    Alternative(r.printed[g.index], float(math.exp(h.score)), float(h.score), _letters(h.fill[g.index]))
                    for h, r in zip(shown, printed, strict=True)
                ]
        if not g.fixed_width:
            chain = width_chain(g, gap_logp(model, items, gaps, base, g.index, lo, hi, respace))
            if on_step is not None:
                on_step()
            mass: dict[int, float] = {}
            for h in alts:
                w = len(_letters(h.fill[g.index]))
                mass[w] = mass.get(w, 0.0) + math.exp(h.score)
            rest = max(0.0, 1.0 - sum(mass.values()))
            probs = {w: mass.get(w, 0.0) + rest * p for w, p in chain.items()}
            total = sum(probs.values())
            g.width_probs = {w: p / total for w, p in probs.items()}
        if scoring:
            g.editor = _editor_score(model, items, gaps, base, g, lo, hi, respace, alts, on_step)


def _editor_score(
    model: Any, items: list[Item], gaps: list[Gap], base: dict[int, np.ndarray], g: Gap, lo: int, hi: int, respace: bool,
    alts: list[Hyp], on_step: Callable[[], None] | None,
) -> EditorScore:
    """The editor's reading of supplement ``g`` scored along the model's decoding and ranked
    among ``alts`` (the model's alternatives, best first)."""
    letters = text_to_planes(g.read or "")[0].chars.astype(np.int64)
    target = np.full(g.slots, BLANK, dtype=np.int64)
    target[: len(letters)] = letters
    forced = decode_window(model, items, gaps, base, [g.index], lo, hi, 1, respace, force={g.index: target}, on_step=on_step)[0]
    lp = float(forced.score)
    reading = _letters(target)
    ours = [_letters(h.fill[g.index]) for h in alts]
    if reading in ours:
        rank = ours.index(reading) + 1
    else:
        rank = 1 + sum(1 for h in alts if h.score > lp)
    return EditorScore((g.read or "").strip(), float(math.exp(lp)), rank)


__all__ = ["EDITOR_RANK_POOL", "gap_beliefs"]
