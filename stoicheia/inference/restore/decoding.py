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

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from stoicheia.inference.restore.reading import Gap, Item, RestoreError
from stoicheia.text import alphabet as A

BLANK = A.BLANK
SYMBOLS = A.NUM_LETTERS + 2  # head outputs scored: 24 letters, MASK (never allowed), BLANK


@dataclass
class Hyp:
    """One hypothesis of the beam: ``fill`` gap index -> int64 ``(slots,)`` symbols (-1 open,
    0..23 a letter, ``BLANK``); ``score`` the sum of the natural-log probabilities of its fixed
    symbols; ``lp`` gap index -> float ``(slots,)`` the log-probability each slot was fixed with
    (``nan`` for slots fixed by no decision of their own: BLANK after BLANK, the slots past the
    maximum width)."""

    fill: dict[int, np.ndarray]
    score: float = 0.0
    lp: dict[int, np.ndarray] = field(default_factory=dict)

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


def forward(model: Any, rows: list[dict[str, np.ndarray]], heads: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
    """Float32 ``(B, T, V)`` log-softmax outputs of the ``heads`` asked for (default all) for
    equal-length rows (one per hypothesis), as numpy. The log-softmax is taken in numpy: on a
    busy CPU, torch's small per-head ops cost more in thread hand-offs than the arithmetic."""
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


def _allowed_rows(gap: Gap, a: np.ndarray, js: np.ndarray) -> np.ndarray:
    """Bool ``(len(js), SYMBOLS)``: :func:`allowed_symbols` at the slots ``js`` of ``gap`` at once."""
    ok = np.zeros((len(js), SYMBOLS), dtype=bool)
    if gap.fixed_width:
        ok[:, : A.NUM_LETTERS] = True
        return ok
    blanks = np.flatnonzero(a == BLANK)
    first_blank = int(blanks[0]) if blanks.size else len(a)
    letters = np.flatnonzero((a >= 0) & (a < A.NUM_LETTERS))
    last_letter = int(letters[-1]) if letters.size else -1
    ok[:, : A.NUM_LETTERS] = ((js < gap.max_letters) & (js <= first_blank))[:, None]
    ok[:, BLANK] = (js >= gap.min_letters) & (js >= last_letter)
    return ok


def decode_window(
    model: Any, items: list[Item], gaps: list[Gap], base: dict[int, np.ndarray], open_gaps: list[int], lo: int, hi: int,
    beam: int, respace: bool, *, force: dict[int, np.ndarray] | None = None, on_step: Callable[[], None] | None = None,
) -> list[Hyp]:
    """Beam of iterative unmasking over ``open_gaps``, the model seeing slots ``[lo, hi)``
    (module docstring); the other gaps hold their symbols in ``base``. Returns at most ``beam``
    distinct finished hypotheses, best first.

    The rows are built once; a step writes only the open gaps' letters into a copy, and all
    hypotheses of the beam go through the model in one batch.

    ``force``: gap -> target symbols ``(slots,)``: the slots are visited in the same order (the
    most confident first) but each is fixed to its target, so the one hypothesis returned scores
    that reading under the decoding (``beam`` is then 1). ``on_step``: called after every
    forward pass (progress)."""
    start = {g: np.full(gaps[g].slots, -1, dtype=np.int64) for g in open_gaps}
    for g in open_gaps:  # slots past the maximum exist only to be BLANK
        if not gaps[g].fixed_width:
            start[g][gaps[g].max_letters :] = BLANK
    lps = {g: np.full(gaps[g].slots, np.nan) for g in open_gaps}
    seq, where = model_inputs(items, gaps, {**base, **start}, respace)
    seq = {k: v[:, lo:hi] for k, v in seq.items()}
    pos: dict[int, np.ndarray] = {g: np.zeros(gaps[g].slots, dtype=np.int64) for g in open_gaps}
    for s, (g, j) in enumerate(where[lo:hi]):
        if g in pos:
            pos[g][j] = s
    shown = {}  # what an open slot shows the model: MASK, or an uncertain letter's reading
    for g in open_gaps:
        shown[g] = seq["chars"][0, pos[g]].copy()
    hyps = [Hyp({**base, **start}, 0.0, lps)]
    if force is not None:
        beam = 1
    while True:
        if not any((h.fill[g] == -1).any() for h in hyps for g in open_gaps):
            return hyps
        rows = []
        for h in hyps:
            chars = seq["chars"].copy()
            for g in open_gaps:
                a = h.fill[g]
                chars[0, pos[g]] = np.where((a >= 0) & (a < A.NUM_LETTERS), a, shown[g])
            rows.append({**seq, "chars": chars})
        logp = forward(model, rows, ("char",))["char"][:, :, :SYMBOLS]
        if on_step is not None:
            on_step()
        new: dict[tuple, Hyp] = {}
        for r, h in enumerate(hyps):
            best = None  # (confidence, gap, slot, candidates)
            for g in open_gaps:
                a = h.fill[g]
                js = np.flatnonzero(a == -1)
                if not js.size:
                    continue
                ok = _allowed_rows(gaps[g], a, js)
                lp = np.where(ok, logp[r, pos[g][js]], -np.inf)
                lp = lp - np.logaddexp.reduce(lp, axis=1, keepdims=True)
                conf = lp.max(axis=1)
                i = int(conf.argmax())
                if best is None or conf[i] > best[0]:
                    best = (float(conf[i]), g, int(js[i]), lp[i])
            if best is None:
                new.setdefault(tuple(h.fill[g].tobytes() for g in open_gaps), h)
                continue
            _, g, j, lp = best
            syms = [int(force[g][j])] if force is not None else np.argsort(-lp, kind="stable")[:beam]
            for sym in syms:
                if not np.isfinite(lp[sym]):
                    if force is not None:
                        raise RestoreError(f"internal: the reading forced on gap {gaps[g].notation!r} breaks its shape at slot {j}")
                    break
                fill = dict(h.fill)
                fill[g] = h.fill[g].copy()
                fix_symbol(gaps[g], fill[g], j, int(sym))
                lpd = dict(h.lp)
                lpd[g] = h.lp[g].copy()
                lpd[g][j] = float(lp[sym])
                cand = Hyp(fill, h.score + float(lp[sym]), lpd)
                k = tuple(fill[x].tobytes() for x in open_gaps)
                if k not in new or new[k].score < cand.score:
                    new[k] = cand
        hyps = sorted(new.values(), key=lambda x: -x.score)[:beam]


def gap_logp(model: Any, items: list[Item], gaps: list[Gap], base: dict[int, np.ndarray], g: int, lo: int, hi: int, respace: bool) -> np.ndarray:
    """Float ``(slots, SYMBOLS)``: the model's log-probabilities at each slot of gap ``g`` with
    all of its slots MASK, the other gaps at ``base``, the model seeing slots ``[lo, hi)``
    (one forward pass)."""
    fill = dict(base)
    fill[g] = np.full(gaps[g].slots, -1, dtype=np.int64)
    seq, where = model_inputs(items, gaps, fill, respace)
    logp = forward(model, [{k: v[:, lo:hi] for k, v in seq.items()}], ("char",))["char"][0, :, :SYMBOLS]
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


def combine_windows(per_window: list[list[Hyp]], k: int) -> list[Hyp]:
    """The ``k`` best whole-text hypotheses from the windows' top lists (each window's
    hypotheses hold only its own gaps), by the k best sums of their scores
    (:func:`kbest_independent`), best first."""
    width = max(len(w) for w in per_window)
    scores = np.full((len(per_window), width), -np.inf)
    for i, w in enumerate(per_window):
        scores[i, : len(w)] = [h.score for h in w]
    out = []
    for ids, total in kbest_independent(scores, k):
        if not np.isfinite(total):
            break
        fill: dict[int, np.ndarray] = {}
        lp: dict[int, np.ndarray] = {}
        for i, j in enumerate(ids):
            fill.update(per_window[i][int(j)].fill)
            lp.update(per_window[i][int(j)].lp)
        out.append(Hyp(fill, total, lp))
    return out


__all__ = [
    "BLANK", "SYMBOLS", "Hyp", "allowed_symbols", "combine_windows", "decode_window", "fix_symbol", "forward", "gap_logp",
    "kbest_independent", "model_inputs", "plan_windows", "slot_range", "width_chain", "window_around",
]
