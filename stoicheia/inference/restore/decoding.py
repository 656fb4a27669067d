"""Decoding the gaps of :func:`stoicheia.inference.restore.restore`: beam of iterative unmasking, windows.

Iterative unmasking, most confident first (as in masked-diffusion sampling, e.g.
Sahoo et al. 2024, MDLM, and the confidence-ordered unmasking of Chang et al. 2022, MaskGIT):
each step runs the encoder on every hypothesis of the beam, takes the open slot whose most
likely allowed symbol is the most probable, and fixes it. The allowed symbols keep a gap of
uncertain width in the trained shape, letters then BLANK: BLANK only at or after the gap's
minimum letter count and before no fixed letter, a letter only before the maximum and after
no fixed BLANK; a BLANK fills the rest of its gap with BLANK. With ``beam > 1`` each
hypothesis expands into its best ``beam`` symbols at that slot and the ``beam`` best distinct
assignments survive; a restoration's score is the sum of the natural-log probabilities of the
symbols as they were fixed (renormalised over the allowed symbols). The ``top_k`` best
distinct restorations are returned.

Windowing. A text longer than ``window`` slots (default: the row length the model was
trained on) is decoded window by window, left to right: each window holds a run of gaps
with context on both sides and sees the best restoration of the windows before it. The
top-k lists of the windows are then combined by the k best sums of their scores
(:func:`kbest_independent`; an approximation: a later window was decoded given the best of
the earlier ones only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from stoicheia.inference.restore.reading import Gap, Item, RestoreError
from stoicheia.text import alphabet as A

BLANK = A.BLANK
SYMBOLS = A.NUM_LETTERS + 2  # head outputs scored: 24 letters, MASK (never allowed), BLANK


@dataclass
class Hyp:
    fill: dict[int, np.ndarray]  # gap index -> symbols per slot (-1 open, 0..23, BLANK)
    score: float = 0.0

    def key(self) -> tuple:
        return tuple((g, a.tobytes()) for g, a in sorted(self.fill.items()))


def allowed_symbols(gap: Gap, a: np.ndarray, j: int) -> np.ndarray:
    """Bool ``(26,)``: symbols allowed at slot ``j`` of ``gap`` given its assignment ``a``."""
    ok = np.zeros(SYMBOLS, dtype=bool)
    if gap.fixed_width:
        ok[: A.NUM_LETTERS] = True
        return ok
    later_letter = bool(((a[j + 1 :] >= 0) & (a[j + 1 :] < A.NUM_LETTERS)).any())
    earlier_blank = bool((a[:j] == BLANK).any())
    if j < gap.max_letters and not earlier_blank:
        ok[: A.NUM_LETTERS] = True
    if j >= gap.min_letters and not later_letter:
        ok[BLANK] = True
    return ok


def fix_symbol(gap: Gap, a: np.ndarray, j: int, sym: int) -> None:
    a[j] = sym
    if sym == BLANK:
        a[j + 1 :] = BLANK  # BLANK ends the gap


def model_inputs(items: list[Item], gaps: list[Gap], fill: dict[int, np.ndarray], respace: bool) -> tuple[dict[str, np.ndarray], list[tuple[int, int]]]:
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
            c, b, d, _, pu = it.values  # type: ignore[misc]
            chars.append(c)
            bnd.append(A.BOUNDARY_UNKNOWN if respace else b)
            dia.append(A.DIA_UNKNOWN if respace else d)
            punct.append(A.PUNCT_UNKNOWN if respace else pu)
            where.append((-1, -1))
            continue
        g = gaps[it.gap]
        a = fill.get(it.gap)
        for j in range(g.slots):
            sym = -1 if a is None else int(a[j])
            if g.kind == "uncertain":
                chars.append(sym if 0 <= sym < A.NUM_LETTERS else it.values[0])  # type: ignore[index]
                b, d, pu = (A.BOUNDARY_UNKNOWN, A.DIA_UNKNOWN, A.PUNCT_UNKNOWN) if respace else (it.values[1], it.values[2], it.values[4])  # type: ignore[index]
            else:
                chars.append(sym if 0 <= sym < A.NUM_LETTERS else A.MASK)
                b, d, pu = A.BOUNDARY_UNKNOWN, A.DIA_UNKNOWN, A.PUNCT_UNKNOWN
            bnd.append(b)
            dia.append(d)
            punct.append(pu)
            where.append((it.gap, j))
    arrays = {"chars": chars, "boundary": bnd, "dia": dia, "punct": punct}
    return {k: np.asarray(v, dtype=np.int64)[None, :] for k, v in arrays.items()}, where


def forward(model: Any, rows: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Log-softmax outputs for equal-length rows (one per hypothesis), as numpy."""
    batch = {k: torch.from_numpy(np.concatenate([r[k] for r in rows])) for k in rows[0]}
    with torch.no_grad():
        out = model(batch)
    return {k: torch.log_softmax(v.float(), dim=-1).cpu().numpy() for k, v in out.items()}


def decode_window(model: Any, items: list[Item], gaps: list[Gap], base: dict[int, np.ndarray], open_gaps: list[int], lo: int, hi: int, beam: int, respace: bool) -> list[Hyp]:
    """Beam of iterative unmasking over ``open_gaps``, the model seeing slots ``[lo, hi)``."""
    start = {g: np.full(gaps[g].slots, -1, dtype=np.int64) for g in open_gaps}
    for g in open_gaps:  # slots past the maximum exist only to be BLANK
        if not gaps[g].fixed_width:
            start[g][gaps[g].max_letters :] = BLANK
    hyps = [Hyp({**base, **start})]
    while True:
        open_any = any((h.fill[g] == -1).any() for h in hyps for g in open_gaps)
        if not open_any:
            return hyps
        rows, wheres = [], []
        for h in hyps:
            seq, where = model_inputs(items, gaps, h.fill, respace)
            rows.append({k: v[:, lo:hi] for k, v in seq.items()})
            wheres.append(where[lo:hi])
        logp = forward(model, rows)["char"][:, :, :SYMBOLS]
        new: dict[tuple, Hyp] = {}
        for r, h in enumerate(hyps):
            best = None  # (confidence, slot, candidates)
            for s, (g, j) in enumerate(wheres[r]):
                if g not in start or h.fill[g][j] != -1:
                    continue
                ok = allowed_symbols(gaps[g], h.fill[g], j)
                lp = np.where(ok, logp[r, s], -np.inf)
                lp = lp - np.logaddexp.reduce(lp[ok])
                conf = float(lp.max())
                if best is None or conf > best[0]:
                    best = (conf, g, j, lp)
            if best is None:
                new.setdefault(h.key(), h)
                continue
            _, g, j, lp = best
            for sym in np.argsort(-lp, kind="stable")[:beam]:
                if not np.isfinite(lp[sym]):
                    break
                fill = {k: v.copy() for k, v in h.fill.items()}
                fix_symbol(gaps[g], fill[g], j, int(sym))
                cand = Hyp(fill, h.score + float(lp[sym]))
                k = cand.key()
                if k not in new or new[k].score < cand.score:
                    new[k] = cand
        hyps = sorted(new.values(), key=lambda x: -x.score)[:beam]


def plan_windows(items: list[Item], gaps: list[Gap], window: int) -> list[tuple[list[int], int, int]]:
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
                f"the lacuna {gaps[spans[i][0]].notation!r} takes {span} slots, more than the window of {window}: "
                "give a larger window (--window) or a smaller --unknown-width"
            )
        lo = max(0, a - (window - span) // 2)
        hi = min(total, lo + window)
        lo = max(0, hi - window)
        out.append(([g for g, _, _ in spans[i : j + 1]], lo, hi))
        i = j + 1
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


def combine_windows(per_window: list[list[Hyp]], k: int) -> list[tuple[dict[int, np.ndarray], float]]:
    width = max(len(w) for w in per_window)
    scores = np.full((len(per_window), width), -np.inf)
    for i, w in enumerate(per_window):
        scores[i, : len(w)] = [h.score for h in w]
    out = []
    for ids, total in kbest_independent(scores, k):
        if not np.isfinite(total):
            break
        fill: dict[int, np.ndarray] = {}
        for i, j in enumerate(ids):
            fill.update(per_window[i][int(j)].fill)
        out.append((fill, total))
    return out


__all__ = [
    "BLANK", "SYMBOLS", "Hyp", "allowed_symbols", "combine_windows", "decode_window", "fix_symbol", "forward", "kbest_independent",
    "model_inputs", "plan_windows",
]
