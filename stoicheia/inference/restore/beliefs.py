"""What the model believes about each gap of :func:`stoicheia.inference.restore.restore`.

Everything here comes from the same search that chose the restoration (:mod:`.gap_search`, one
forward pass per gap), so the first alternative of every gap is its fill in restoration #1:

* its own top-k (``Gap.alternatives``): the gap's candidates, distinct, each with its
  probability (:mod:`.gap_search`: the product of its steps, reweighted by the n-gram's score
  of the letters after the gap when fused); their probabilities sum to at most 1;
* for a gap of uncertain width, ``Gap.width_probs``: the probability of each width, summing
  to 1. With the model alone, from the BLANK predictions of the gap's forward pass
  (:func:`~stoicheia.inference.restore.decoding.width_chain`: the gap ends at slot ``w`` with
  probability ``prod_{j<w} (1 - b_j) * b_w``), the distribution the search draws its widths
  from. Fused with the n-gram, from the candidates the search kept (:func:`pool_widths`): the
  n-gram's letters and its score of the text after the gap move the width too, and printing
  the BLANK chain beside fills of another width told two stories (``width 8 94%`` above a
  fill of 3 letters). On the dev set's ``[---]`` gaps the fused search gets the length right
  27 % of the time, the BLANK chain's search 18 % (docs/measuring-restoration.md);
* per letter of the best fill, ``Gap.letter_probs``: the summed probability of the candidates
  the search kept that have that letter at that place (so at least the fill's own probability);
* with ``score_supplements``, for a re-predicted supplement, ``Gap.editor``: the editor's
  reading scored by the same search (:func:`~.gap_search.score_fill`), its probability on the
  scale of the candidates' (the same reweighting), and its rank among the candidates of the
  same width (at least 20 are kept).
"""

from __future__ import annotations

import math

import numpy as np

from stoicheia.inference.restore.decoding import Hyp, gap_context, symbols, width_chain
from stoicheia.inference.restore.gap_search import Candidate, Fusion, GapShape, score_fill
from stoicheia.inference.restore.gaps import Alternative, EditorScore, Gap, Item
from stoicheia.inference.restore.rendering import FillPrinter
from stoicheia.text import alphabet as A

#: alternatives a supplement's reading is ranked among, at least
EDITOR_RANK_POOL = 20


def gap_beliefs(
    items: list[Item],
    gaps: list[Gap],
    cands: dict[int, list[Candidate]],
    logps: dict[int, np.ndarray],
    best: Hyp,
    *,
    k: int,
    printer: FillPrinter,
    score_supplements: bool = False,
    fusion: Fusion | None = None,
    kept: set[int] | frozenset[int] = frozenset(),
) -> None:
    """Fill ``letter_probs``, ``alternatives`` (``k`` per gap; none when ``k`` is 0),
    ``width_probs`` and ``editor`` of every gap in ``gaps`` (module docstring) from the gaps'
    candidates ``cands`` and forward passes ``logps`` (:func:`~.decoding.decode_gaps`); ``best``
    is restoration #1. ``printer`` renders the alternatives with accents and capitals, one
    forward pass per gap around it (:class:`~.rendering.FillPrinter`). ``kept``: the gaps whose
    fill in ``best`` is the editor's reading (scored, kept): their ``letter_probs`` are the summed
    probabilities of the model's candidates that agree with the editor's letter at each place."""
    for g in gaps:
        a = best.fill[g.index]
        lp = best.lp[g.index]
        slots = [j for j in range(g.slots) if 0 <= a[j] < A.NUM_LETTERS]
        if g.index in kept:
            own = cands[g.index]
            g.letter_probs = [
                float(
                    min(
                        1.0, sum(c.prob for c in own if len(c.letters) > i and c.letters[i] == a[j])
                    )
                )
                for i, j in enumerate(slots)
            ]
        else:
            g.letter_probs = [float(math.exp(lp[j])) if np.isfinite(lp[j]) else 1.0 for j in slots]
        shown = cands[g.index][:k]
        if shown:
            fills = [symbols(g, c.letters) for c in shown]
            printer.render(g.index, fills)
            g.alternatives = [
                Alternative(
                    printer(g.index, f),
                    float(c.prob),
                    math.log(max(c.prob, 1e-300)),
                    c.text(),
                    [p.source.label() for p in (c.source.parallels if c.source else [])[:3]],
                )
                for c, f in zip(shown, fills, strict=True)
            ]
        if not g.fixed_width:
            fused = fusion is not None and fusion.ngram is not None
            fused = fused or (g.parallels is not None and g.parallels.prior is not None)
            # whole readings, the parallels or the n-gram alone: the widths of their candidates
            fused = fused or (
                fusion is not None
                and (fusion.readings is not None or fusion.decoder in ("parallels", "ngram"))
            )
            g.width_probs = (
                pool_widths(g, cands[g.index]) if fused else width_chain(g, logps[g.index])
            )
        if score_supplements and g.kind == "supplement":
            g.editor = _editor_score(items, gaps, best, g, cands[g.index], logps[g.index], fusion)


def pool_widths(g: Gap, cands: list[Candidate]) -> dict[int, float]:
    """``{width: probability}`` over ``g.min_letters..g.max_letters``: the summed probability of
    the search's kept candidates ``cands`` of each width, normalised to 1 (a width none of them
    has gets 0). Raises ``ValueError`` when ``cands`` is empty or has no probability."""
    out = {w: 0.0 for w in range(g.min_letters, g.max_letters + 1)}
    for c in cands:
        out[len(c.letters)] = out.get(len(c.letters), 0.0) + float(c.prob)
    total = sum(out.values())
    if not total > 0:
        raise ValueError(f"pool_widths: no candidate with a probability for gap {g.notation}")
    return {w: p / total for w, p in out.items()}


def _editor_score(
    items: list[Item],
    gaps: list[Gap],
    best: Hyp,
    g: Gap,
    cands: list[Candidate],
    logp: np.ndarray,
    fusion: Fusion | None,
) -> EditorScore:
    """The editor's reading of supplement ``g`` scored by the search and ranked among the
    candidates of the same width ``cands`` (best first)."""
    letters = g.read_letters
    n1 = fusion.history if fusion is not None else 0
    before = {i: v for i, v in best.fill.items() if i < g.index}
    left, right = gap_context(items, gaps, before, g.index, n1) if n1 else (None, None)
    shape = GapShape(g.min_letters, g.max_letters, g.fixed_width)
    prior = g.parallels.prior if g.parallels is not None else None
    lp = score_fill(logp, shape, letters, fusion, left, right, prior=prior)
    reading = A.spell(letters)
    ours = [c.text() for c in cands]
    same = [c.text() for c in cands if len(c.letters) == len(letters)]
    rank = (
        same.index(reading) + 1
        if reading in same
        else 1 + sum(1 for c in cands if len(c.letters) == len(letters) and c.score > lp)
    )
    if reading in ours:
        prob = cands[ours.index(reading)].prob
    else:  # the candidates' reweighting: prob = exp(score + shift), the same shift for all
        shift = math.log(max(cands[0].prob, 1e-300)) - cands[0].score
        prob = float(min(1.0, math.exp(lp + shift)))
    return EditorScore((g.read or "").strip(), prob, rank)


__all__ = ["EDITOR_RANK_POOL", "gap_beliefs"]
