"""Decoding the gaps of :func:`stoicheia.inference.restore.restore`, gap by gap.

The gaps are decoded in input order. For each gap one forward pass of the encoder sees the
gap's slots as MASK in a window of the text centred on it (at most ``window`` slots, default
the row length the model was trained on), the gaps before it filled with their best fill and
the gaps after it still MASK; :func:`~stoicheia.inference.restore.gap_search.search_gap` turns
that pass's log-probabilities (fused with a letter n-gram when one is given) into the gap's
candidates, best first. The whole-text restorations are the ``k`` best combinations of the
gaps' candidates by the sum of their scores (:func:`kbest_independent`; an approximation: a
later gap was decoded given the best fill of the earlier ones only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from stoicheia.inference.restore.cancel import check_cancelled
from stoicheia.inference.restore.decoders import gap_candidates
from stoicheia.inference.restore.gap_search import Candidate, Fusion, context
from stoicheia.inference.restore.gaps import Gap, Item, RestoreError
from stoicheia.inference.restore.parallels_fusion import gap_parallels_for
from stoicheia.text import alphabet as A

BLANK = A.BLANK
SYMBOLS = A.NUM_LETTERS + 2  # head outputs scored: 24 letters, MASK (never allowed), BLANK


@dataclass
class Hyp:
    """One restoration of the open gaps: ``fill`` gap index -> int64 ``(slots,)`` symbols (0..23
    a letter, ``BLANK`` after the last letter of a gap of uncertain width); ``score`` the sum over
    the gaps of the natural log of their fill's probability (:mod:`.gap_search`); ``lp`` gap
    index -> float ``(slots,)`` the natural log of each letter's probability
    (``Candidate.letter_probs``; ``nan`` at BLANK slots)."""

    fill: dict[int, np.ndarray]
    score: float = 0.0
    lp: dict[int, np.ndarray] = field(default_factory=dict)


def model_inputs(
    items: list[Item], gaps: list[Gap], fill: dict[int, np.ndarray], respace: bool
) -> tuple[dict[str, np.ndarray], list[tuple[int, int]]]:
    """Model inputs ``(1, T)`` arrays for the working sequence and, per slot, ``(gap, j)`` or
    ``(-1, -1)`` for a known letter."""
    chars, bnd, dia, punct, where = [], [], [], [], []
    for it in items:
        if it.gap is None or (it.gap not in fill and gaps[it.gap].kind != "uncertain"):
            if it.gap is not None:  # a gap of a later window, not open yet: MASK slots
                for j in range(gaps[it.gap].slots):
                    chars.append(A.MASK)
                    bnd.append(A.BOUNDARY_UNKNOWN)
                    dia.append(A.DIA_UNKNOWN)
                    punct.append(A.PUNCT_UNKNOWN)
                    where.append((it.gap, j))
                continue
            c, b, d, _, pu = it.values  # type: ignore[misc]  # respace_items' UNKNOWNs
            chars.append(c)
            bnd.append(b)
            dia.append(d)
            punct.append(pu)
            where.append((-1, -1))
            continue
        g = gaps[it.gap]
        a = fill.get(it.gap)
        for j in range(g.slots):
            sym = -1 if a is None else int(a[j])
            if g.kind == "uncertain":
                chars.append(sym if 0 <= sym < A.NUM_LETTERS else it.values[0])  # type: ignore[index]
                b, d, pu = it.values[1], it.values[2], it.values[4]  # type: ignore[index]
            elif g.held and 0 <= sym < A.NUM_LETTERS and not respace:
                # a supplement kept as printed, seen by another gap: its letters with its marks
                _, b, d, _, pu = g.read_values[j]
                chars.append(sym)
            else:
                chars.append(sym if 0 <= sym < A.NUM_LETTERS else A.MASK)
                b, d, pu = A.BOUNDARY_UNKNOWN, A.DIA_UNKNOWN, A.PUNCT_UNKNOWN
            bnd.append(b)
            dia.append(d)
            punct.append(pu)
            where.append((it.gap, j))
    arrays = {"chars": chars, "boundary": bnd, "dia": dia, "punct": punct}
    return {k: np.asarray(v, dtype=np.int64)[None, :] for k, v in arrays.items()}, where


def forward(
    model: Any, rows: list[dict[str, np.ndarray]], heads: tuple[str, ...] | None = None
) -> dict[str, np.ndarray]:
    """Float32 ``(B, T, V)`` log-softmax outputs of the ``heads`` asked for (default all) for
    equal-length rows (one per hypothesis), as numpy. The log-softmax is taken in numpy: on a
    busy CPU, torch's small per-head ops cost more in thread hand-offs than the arithmetic.
    Calls :func:`~stoicheia.inference.restore.cancel.check_cancelled` first (a cancelled
    restoration stops before its next pass)."""
    check_cancelled()
    batch = {k: torch.from_numpy(np.concatenate([r[k] for r in rows])) for k in rows[0]}
    with torch.no_grad():
        out = model(batch)
    res = {}
    for k, v in out.items():
        if heads is not None and k not in heads:
            continue
        x = v.float().cpu().numpy()
        m = x.max(axis=-1, keepdims=True)
        res[k] = x - (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))
    return res


def gap_logp(
    model: Any,
    items: list[Item],
    gaps: list[Gap],
    base: dict[int, np.ndarray],
    g: int,
    lo: int,
    hi: int,
    respace: bool,
) -> np.ndarray:
    """Float ``(slots, SYMBOLS)``: the model's log-probabilities at each slot of gap ``g`` with
    all of its slots MASK, the other gaps at ``base``, the model seeing slots ``[lo, hi)``
    (one forward pass)."""
    fill = dict(base)
    fill[g] = np.full(gaps[g].slots, -1, dtype=np.int64)
    seq, where = model_inputs(items, gaps, fill, respace)
    logp = forward(model, [{k: v[:, lo:hi] for k, v in seq.items()}], ("char",))["char"][
        0, :, :SYMBOLS
    ]
    rows = [s for s, (gg, _) in enumerate(where[lo:hi]) if gg == g]
    return logp[rows]


def width_chain(gap: Gap, logp: np.ndarray) -> dict[int, float]:
    """``{width: probability}`` over ``min_letters..max_letters`` from the BLANK predictions
    ``logp`` (float ``(slots, SYMBOLS)``, :func:`gap_logp`): the gap ends at slot ``w`` (its
    first BLANK) with probability ``prod_{j<w} (1 - b_j) * b_w``, ``b_j`` the probability of
    BLANK at slot ``j`` renormalised over the symbols allowed there (letters and BLANK), ``b``
    at the maximum width 1 (BLANK is forced there). Sums to 1."""
    out: dict[int, float] = {}
    survive = 1.0
    for w in range(gap.min_letters, gap.max_letters + 1):
        if w >= gap.max_letters:
            end = 1.0
        else:
            row = logp[w]
            allowed = np.concatenate([row[: A.NUM_LETTERS], row[BLANK : BLANK + 1]])
            end = float(np.exp(row[BLANK] - np.logaddexp.reduce(allowed)))
        out[w] = survive * end
        survive *= 1.0 - end
    total = sum(out.values())
    return {w: p / total for w, p in out.items()}


def slot_range(items: list[Item], gaps: list[Gap], g: int) -> tuple[int, int]:
    """``[first, end)`` slot of gap ``g`` in the working sequence."""
    pos = 0
    for it in items:
        w = gaps[it.gap].slots if it.gap is not None else 1
        if it.gap == g:
            return pos, pos + w
        pos += w
    raise KeyError(g)


def window_around(items: list[Item], gaps: list[Gap], g: int, window: int) -> tuple[int, int]:
    """``[lo, hi)``: at most ``window`` slots of the working sequence centred on gap ``g``."""
    total = sum(gaps[it.gap].slots if it.gap is not None else 1 for it in items)
    a, b = slot_range(items, gaps, g)
    if total <= window:
        return 0, total
    lo = max(0, a - (window - (b - a)) // 2)
    hi = min(total, lo + window)
    return max(0, hi - window), hi


def plan_windows(
    items: list[Item], gaps: list[Gap], window: int
) -> list[tuple[list[int], int, int]]:
    """``[(gap indices, lo, hi), ...]``: runs of gaps that fit in ``window`` slots with context."""
    spans = []  # (gap, first slot, end slot)
    pos = 0
    for it in items:
        w = gaps[it.gap].slots if it.gap is not None else 1
        if it.gap is not None:
            spans.append((it.gap, pos, pos + w))
        pos += w
    total = pos
    if total <= window:
        return [([g for g, _, _ in spans], 0, total)]
    margin = window // 8
    out = []
    i = 0
    while i < len(spans):
        a = spans[i][1]
        j = i
        while j + 1 < len(spans) and spans[j + 1][2] - a <= window - 2 * margin:
            j += 1
        span = spans[j][2] - a
        if span > window:
            raise RestoreError(
                f"the lacuna {gaps[spans[i][0]].notation!r} takes {span} slots, "
                f"more than the window of {window}: "
                "give a larger window (--window) or a smaller --unknown-width"
            )
        lo = max(0, a - (window - span) // 2)
        hi = min(total, lo + window)
        lo = max(0, hi - window)
        out.append(([g for g, _, _ in spans[i : j + 1]], lo, hi))
        i = j + 1
    return out


def gap_context(
    items: list[Item], gaps: list[Gap], fill: dict[int, np.ndarray], g: int, n1: int
) -> tuple[np.ndarray, np.ndarray]:
    """The letters beside gap ``g`` for the n-gram (:func:`~.gap_search.context`): int64 ``(n1,)``
    before it and at most ``n1`` after it. Known letters and the letters of the gaps in ``fill``
    count (BLANK slots do not); an open gap cuts the context (as a lacuna)."""
    before: list[int] = []
    after: list[int] = []
    side = before
    for it in items:
        if it.gap == g:
            side = after
            continue
        if it.gap is None:
            side.append(int(it.values[0]))  # type: ignore[index]
        elif it.gap in fill:
            side.extend(int(s) for s in fill[it.gap] if 0 <= s < A.NUM_LETTERS)
        elif gaps[it.gap].kind == "uncertain":
            side.append(int(it.values[0]))  # type: ignore[index]
        else:
            side.append(A.MASK)
        if (
            side is after and len(after) > n1 + gaps[it.gap].slots
            if it.gap is not None
            else len(after) > n1 + 20
        ):
            break
    return context(np.asarray(before, dtype=np.int64), n1, "left"), context(
        np.asarray(after, dtype=np.int64), n1, "right"
    )


def symbols(gap: Gap, letters: np.ndarray) -> np.ndarray:
    """Int64 ``(slots,)``: a fill's letters, then BLANK up to the gap's slots."""
    out = np.full(gap.slots, BLANK, dtype=np.int64)
    out[: len(letters)] = letters
    return out


def decode_gaps(
    model: Any,
    items: list[Item],
    gaps: list[Gap],
    *,
    window: int,
    k: int,
    respace: bool,
    fusion: Fusion | None = None,
    on_step: Callable[[], None] | None = None,
    hold: dict[int, np.ndarray] | None = None,
    decoder: str = "fused",
) -> tuple[dict[int, list[Candidate]], dict[int, np.ndarray]]:
    """Each gap's ``k`` best candidates (module docstring), in input order. Returns
    ``(candidates, logps)``: gap index -> candidates best first, and gap index -> the forward pass's
    float ``(slots, SYMBOLS)`` log-probabilities. ``on_step`` is called after each forward pass.
    ``hold``: gap index -> letter ids that every other gap, before or after it, sees there instead
    of its best fill (an editor's supplement that is scored but kept as printed). ``decoder``:
    which candidates (:mod:`.decoders`: ``fused``, ``parallels``, ``ngram``, ``model``)."""
    fusion = fusion or Fusion(None, 0.0)
    # a held supplement is printed text: the gaps before it see its letters too, not MASK
    best: dict[int, np.ndarray] = {g: symbols(gaps[g], a) for g, a in (hold or {}).items()}
    cands: dict[int, list[Candidate]] = {}
    logps: dict[int, np.ndarray] = {}
    for g in range(len(gaps)):
        gap = gaps[g]
        lo, hi = window_around(items, gaps, g, window)
        logp = gap_logp(model, items, gaps, best, g, lo, hi, respace)
        if gap.last_letters is not None:  # what Greek allows there (reading.letter_rules)
            logp = logp.copy()
            logp[gap.slots - 1, : A.NUM_LETTERS][~gap.last_letters] = -np.inf
        if on_step is not None:
            on_step()
        if fusion.parallels is not None:  # the gap's parallels, and their prior when fused
            gap.parallels = gap_parallels_for(
                fusion, items, gaps, best, g, prior=fusion.readings is None
            )
        found = gap_candidates(decoder, logp, items, gaps, best, g, k, fusion, found=gap.parallels)
        if not found:  # no candidate (the parallels and the n-gram found none): the network's
            found = gap_candidates("model", logp, items, gaps, best, g, k, fusion)
        cands[g], logps[g] = found, logp
        best[g] = symbols(gap, hold[g] if hold and g in hold else found[0].letters)
    return cands, logps


def as_hyp(gaps: list[Gap], chosen: dict[int, Candidate]) -> Hyp:
    """A :class:`Hyp` of one candidate per gap."""
    fill, lp, score = {}, {}, 0.0
    for g, c in chosen.items():
        fill[g] = symbols(gaps[g], c.letters)
        lp[g] = np.full(gaps[g].slots, np.nan)
        per = c.letter_probs if c.letter_probs is not None else c.steps
        if per is not None:
            lp[g][: len(c.letters)] = np.log(np.maximum(per, 1e-300))
        score += float(np.log(max(c.prob, 1e-300)))
    return Hyp(fill, score, lp)


def combine(gaps: list[Gap], cands: dict[int, list[Candidate]], k: int) -> list[Hyp]:
    """The ``k`` best whole-text restorations from the gaps' candidates by the sum of the natural
    logs of their probabilities (:func:`kbest_independent`; within a gap the same order as their
    search scores), best first; distinct in at least one gap's letters."""
    order = sorted(cands)
    width = max(len(c) for c in cands.values())
    table = np.full((len(order), width), -np.inf)
    for i, g in enumerate(order):
        table[i, : len(cands[g])] = [np.log(max(c.prob, 1e-300)) for c in cands[g]]
    out = []
    for ids, total in kbest_independent(table, k):
        if not np.isfinite(total):
            break
        out.append(as_hyp(gaps, {g: cands[g][int(j)] for g, j in zip(order, ids, strict=True)}))
    return out


def kbest_independent(logp: np.ndarray, k: int) -> list[tuple[np.ndarray, float]]:
    """The ``k`` highest-scoring sequences when the slots are scored independently.

    ``logp``: float ``(L, V)`` log-probabilities of ``V`` symbols at each of ``L`` slots. A
    sequence ``s`` scores ``sum_i logp[i, s_i]``. Beam search keeping the ``k`` best prefixes is
    exact here: the ``k`` best sequences of length ``i + 1`` all extend one of the ``k`` best of
    length ``i`` (a prefix outside the top ``k`` has ``k`` better prefixes, each of which, with
    the same continuation, makes a better sequence). Returns ``[(ids int64 (L,), score), ...]``,
    at most ``k``, distinct, sorted by decreasing score (ties: lower ids first).
    """
    logp = np.asarray(logp, dtype=np.float64)
    if logp.ndim != 2:
        raise ValueError(f"kbest_independent: logp must be (L, V), got shape {logp.shape}")
    if k < 1:
        raise ValueError(f"kbest_independent: k must be >= 1, got {k}")
    L, V = logp.shape
    seqs = np.zeros((1, 0), dtype=np.int64)
    scores = np.zeros(1)
    for i in range(L):
        cand = scores[:, None] + logp[i][None, :]
        best = np.argsort(-cand, axis=None, kind="stable")[:k]
        rows, sym = np.divmod(best, V)
        seqs = np.concatenate([seqs[rows], sym[:, None]], axis=1)
        scores = cand.reshape(-1)[best]
    return [(seqs[j], float(scores[j])) for j in range(len(scores))]


@dataclass(frozen=True)
class Window:
    """The slots the model sees at once (``slots``; 0: one window, refused past ``trained``),
    the row length it was trained on, and where the limit comes from (for the errors)."""

    slots: int
    trained: int
    why: str

    @classmethod
    def of(cls, loaded: Any, window: int | None) -> Window:
        """The window of ``loaded`` (a loaded model: its ``config``) for the ``window`` option
        (None: the trained row length)."""
        trained = int((loaded.config.get("data") or {}).get("seq_len") or 512)
        why = (
            f"the window: the {trained}-slot rows the model was trained on"
            if window is None
            else f"--window {window}; the model was trained on {trained}-slot rows"
            if window
            else f"--window 0: one row of at most the {trained} slots the model was trained on"
        )
        return cls(trained if window is None else window, trained, why)

    def fitted(self, reading: Any) -> int:
        """The window's slots for ``reading`` (a :class:`~.reading.Reading`): with
        ``--window 0`` the whole text, refused when longer than the trained rows."""
        if self.slots:
            return self.slots
        total = reading.slots
        if total > self.trained:
            raise RestoreError(
                f"the text takes {total:,} slots, more than the {self.trained} the model was "
                "trained on, and --window 0 refuses windowing: leave --window out (or give a "
                "number of slots) to decode it window by window"
            )
        return total


__all__ = [
    "Window",
    "BLANK",
    "SYMBOLS",
    "Hyp",
    "as_hyp",
    "combine",
    "decode_gaps",
    "forward",
    "gap_context",
    "gap_logp",
    "kbest_independent",
    "model_inputs",
    "plan_windows",
    "slot_range",
    "symbols",
    "width_chain",
    "window_around",
]
