"""The decoders a user chooses (``--decoder``), one gap at a time, for ``restore`` and the
benchmark alike: the benchmark's rows of the same names call :func:`gap_candidates` as
``restore`` does, so what a row measures is what the choice prints.

* ``fused`` (the default): the network and the n-gram in one beam search
  (:func:`~.gap_search.search_gap`), and the parallels' fills competing with its candidates as
  whole readings (:mod:`.whole_readings`) when a parallels index is open, the network judging
  each whole fill at the weight ``fusion.readings.judge``;
* ``parallels``: the parallels' fills by their share of the parallels' weights (which weigh
  the context matched, word breaks that agree and independent sources; ties in the index's
  order, :mod:`~stoicheia.inference.parallels.search`), then, where they run out, the n-gram's
  candidates (the back-off; without an n-gram, the network's);
* ``ngram``: the letter n-gram alone (:meth:`~stoicheia.inference.ngram.LetterNgram.topk_fill`
  at every width the gap allows);
* ``model``: the network alone.

Every decoder keeps to the letter rules of the gap (:func:`allowed`): a fill of a width the gap
takes, a vowel for a word of one letter, a consonant before an elision mark.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from stoicheia.inference.restore.gap_search import (
    POOL,
    Candidate,
    Fusion,
    GapShape,
    score_fill,
    search_gap,
)
from stoicheia.inference.restore.gaps import Gap, Item, RestoreError
from stoicheia.text import alphabet as A

#: the choices of ``--decoder``, the default first
DECODERS = ("fused", "parallels", "ngram", "model")


def check_decoder(decoder: str) -> str:
    """``decoder`` when it is one of :data:`DECODERS`, else :class:`RestoreError`."""
    if decoder not in DECODERS:
        raise RestoreError(
            f"--decoder {decoder!r}: choose one of {', '.join(DECODERS)} (default fused)"
        )
    return decoder


def gap_shape(gap: Gap) -> GapShape:
    """The search's :class:`GapShape` of ``gap``."""
    return GapShape(gap.min_letters, gap.max_letters, gap.fixed_width, gap.one_letter)


def allowed(gap: Gap, letters: np.ndarray) -> bool:
    """Whether ``gap`` takes the fill ``letters`` (int ids): its width, a vowel for a word of
    one letter (``gap.one_letter``), the last letters the text allows (``gap.last_letters``)."""
    n = len(letters)
    if not gap.min_letters <= n <= gap.max_letters or n == 0:
        return False
    if n == 1 and gap.one_letter is not None and not gap.one_letter[int(letters[0])]:
        return False
    return not (gap.last_letters is not None and not gap.last_letters[int(letters[-1])])


def ruled(gap: Gap, logp: np.ndarray) -> np.ndarray:
    """``logp`` (float ``(slots, >= 26)``) with the letters the text forbids at the gap's last
    slot set to ``-inf`` (``gap.last_letters``; a copy when changed)."""
    if gap.last_letters is None:
        return logp
    out = np.array(logp, copy=True)
    out[gap.slots - 1, : A.NUM_LETTERS][~gap.last_letters] = -np.inf
    return out


def ngram_candidates(
    ngram: Any,
    items: list[Item],
    gaps: list[Gap],
    fill: dict[int, np.ndarray],
    g: int,
    k: int,
    pool: int = 64,
) -> list[Candidate]:
    """The n-gram's ``k`` best fills of gap ``g`` over every width it allows, best first: per
    width :meth:`~stoicheia.inference.ngram.LetterNgram.topk_fill` (``pool`` each), a fill's
    score its best log-probability, its probability its share of the ``pool`` best (the
    posterior over the fills found, given the letters on both sides). ``fill``: the other
    gaps' fills seen as letters (an open gap cuts the context)."""
    from stoicheia.inference.restore.decoding import gap_context

    gap = gaps[g]
    left, right = gap_context(items, gaps, fill, g, ngram.order - 1)
    found: dict[str, float] = {}
    for w in range(max(gap.min_letters, 1), gap.max_letters + 1):
        for text, lp in ngram.topk_fill(left, w, right, k=pool, beam=pool):
            found[text] = max(lp, found.get(text, -math.inf))
    rows = []
    for text, lp in sorted(found.items(), key=lambda kv: -kv[1]):
        letters = np.array([A.LETTERS.index(c) for c in text], dtype=np.int64)
        if allowed(gap, letters):
            rows.append((letters, lp))
        if len(rows) == pool:
            break
    if not rows:
        return []
    scores = np.array([lp for _, lp in rows])
    probs = np.exp(scores - np.logaddexp.reduce(scores))
    found_all = [Candidate(a, float(s), float(p)) for (a, s), p in zip(rows, probs, strict=True)]
    return with_letter_probs(found_all)[:k]


def with_letter_probs(cands: list[Candidate]) -> list[Candidate]:
    """``cands`` (best first) with ``letter_probs`` set where it is missing: per letter of a
    candidate, the summed ``prob`` of the candidates in ``cands`` that have the same letter at
    the same place (at least its own ``prob``; at most 1), as the beam search and the whole
    readings give theirs (``docs/restoring.md``, "Letter probabilities"). Without it a
    decoder's fill is shown as sure letter by letter (probability 1) whatever its probability.
    The same list, changed in place."""
    if not cands:
        return cands
    width = max(len(c.letters) for c in cands)
    table = np.full((len(cands), width), -1, dtype=np.int64)
    for i, c in enumerate(cands):
        table[i, : len(c.letters)] = c.letters
    probs = np.array([c.prob for c in cands], dtype=np.float64)
    for c in cands:
        if c.letter_probs is None:
            marginal = [probs[table[:, j] == c.letters[j]].sum() for j in range(len(c.letters))]
            c.letter_probs = np.minimum(np.array(marginal, dtype=np.float64), 1.0)
    return cands


def gap_candidates(
    decoder: str,
    logp: np.ndarray | None,
    items: list[Item],
    gaps: list[Gap],
    fill: dict[int, np.ndarray],
    g: int,
    k: int,
    fusion: Fusion | None,
    found: Any = None,
    cache: dict | None = None,
) -> list[Candidate]:
    """Gap ``g``'s ``k`` best candidates by ``decoder`` (module docstring), best first.

    ``logp``: float ``(slots, >= 26)`` the network's forward pass for the gap
    (:func:`~.decoding.gap_logp`; only ``ngram`` and ``parallels`` with an n-gram do without);
    ``fill``: the other gaps' fills (int symbol arrays; an open gap cuts the contexts);
    ``fusion``: the n-gram (and its weight), the parallels index and the whole readings'
    weights (``fusion.readings``); ``found``: the gap's parallels when searched already (else
    searched here when ``fusion`` has an index); ``cache``: a dict in which ``fused`` keeps
    the gap's :class:`~.whole_readings.ReadingCase` under ``"case"`` (the benchmark's fit
    re-ranks it). Raises :class:`RestoreError` for an unknown decoder, ``ValueError`` where a
    decoder needs the forward pass and ``logp`` is None."""
    check_decoder(decoder)
    gap = gaps[g]
    fusion = fusion or Fusion(None, 0.0)
    if found is None and fusion.parallels is not None and decoder in ("fused", "parallels"):
        from stoicheia.inference.restore.parallels_fusion import gap_parallels_for

        found = gap_parallels_for(fusion, items, gaps, fill, g, prior=fusion.readings is None)
    if decoder == "ngram":
        if fusion.ngram is None:
            raise RestoreError(
                "--decoder ngram: no n-gram beside the checkpoint; write one with "
                "`stoicheia benchmark CHECKPOINT --save-fusion`, or give --ngram PATH"
            )
        return ngram_candidates(fusion.ngram, items, gaps, fill, g, k)
    if decoder == "parallels":
        return _parallels_first(logp, items, gaps, fill, g, k, fusion, found)
    if logp is None:
        raise ValueError(f"decoder {decoder}: the network's forward pass is needed")
    logp = ruled(gap, logp)
    shape = gap_shape(gap)
    if decoder == "model":
        return _kept(gap, search_gap(logp, shape, k))
    n1 = fusion.history
    from stoicheia.inference.restore.decoding import gap_context

    left, right = gap_context(items, gaps, fill, g, n1) if n1 else (None, None)
    if fusion.readings is None:  # the parallels letter by letter (fused3), or none
        prior = found.prior if found is not None else None
        return _kept(gap, search_gap(logp, shape, k, fusion, left, right, prior=prior))
    from stoicheia.inference.restore.reading_ranker import reading_kind
    from stoicheia.inference.restore.whole_readings import judge_scores, reading_case

    base = _kept(gap, search_gap(logp, shape, max(k, POOL), fusion, left, right))
    case = reading_case(
        base,
        found,
        score=lambda a: score_fill(logp, shape, a, fusion, left, right),
        allowed=lambda a: allowed(gap, a),
        index=fusion.parallels,
        # the network judges every candidate from the pass the search read (no pass added)
        judge=lambda fills: judge_scores(logp, shape, fills),
        kind=reading_kind(shape.fixed, found),
    )
    if cache is not None:
        cache["case"] = case
    return case.ranked(fusion.readings, k)


def _kept(gap: Gap, cands: list[Candidate]) -> list[Candidate]:
    """The search's candidates the gap takes (:func:`allowed`, a finite score): the search keeps
    letters the rules forbid at probability 0, which are never offered."""
    return [c for c in cands if np.isfinite(c.score) and allowed(gap, c.letters)]


def _parallels_first(
    logp: np.ndarray | None,
    items: list[Item],
    gaps: list[Gap],
    fill: dict[int, np.ndarray],
    g: int,
    k: int,
    fusion: Fusion,
    found: Any,
) -> list[Candidate]:
    """The ``parallels`` decoder (module docstring): the fills of ``found`` by their share of
    the parallels' weights (ties in the index's order), that share their probability, then the
    back-off's candidates with their probability times the mass the fills listed leave. The
    letters' probabilities are summed over the first ``max(k, POOL)`` of them (as the search
    keeps at least ``POOL``), so that they do not change with ``k``; the first ``k`` are
    returned."""
    gap = gaps[g]
    shown, k = k, max(k, POOL)
    out: list[Candidate] = []
    seen: set[bytes] = set()
    # by share, the order restore's whole-text ranking prints (the index's order, context
    # first, breaks ties): on the demo's dev sample the same top-1 within 5 gaps of 460
    fills = found.fills if found is not None else []
    for f in sorted(fills, key=lambda f: -f.prob):
        a = np.asarray(f.letters, dtype=np.int64)
        if not allowed(gap, a) or a.tobytes() in seen:
            continue
        if f.lone_letter is not None:  # πρὸ [ς δὲ]: left out, counted in found.lone_words
            continue
        seen.add(a.tobytes())
        c = Candidate(a, math.log(max(f.prob, 1e-300)), float(f.prob))
        c.source = f
        out.append(c)
        if len(out) == k:
            return with_letter_probs(out)[:shown]
    if fusion.ngram is not None:
        more = ngram_candidates(fusion.ngram, items, gaps, fill, g, k)
    elif logp is not None:
        more = _kept(gap, search_gap(ruled(gap, logp), gap_shape(gap), k))
    else:
        more = []
    left = max(0.0, 1.0 - sum(c.prob for c in out)) if out else 1.0
    for c in more:
        if c.letters.tobytes() in seen:
            continue
        seen.add(c.letters.tobytes())
        p = c.prob * left
        out.append(Candidate(c.letters, math.log(max(p, 1e-300)), p, c.steps))
        if len(out) == k:
            break
    return with_letter_probs(out)[:shown]


__all__ = [
    "DECODERS",
    "allowed",
    "check_decoder",
    "gap_candidates",
    "gap_shape",
    "ngram_candidates",
    "ruled",
    "with_letter_probs",
]
