"""Restore a damaged Greek text written in Leiden notation: ``stoicheia restore`` and :func:`restore`.

Reading. The text goes through the project's Leiden parser
(:func:`stoicheia.text.leiden.parse_leiden`) and encoder
(:func:`stoicheia.text.encode.encode_text`). Every lacuna becomes a *gap*:

* ``[...]``, ``[.5.]``: exactly N letters;
* ``[5±3]``, ``[.3-6.]``: between the two bounds; ``[-ca.5-]``: about N, read as
  ``N - m .. N + m`` with ``m = max(1, round(about_margin * N))``;
* ``[---]``: at least 1 and at most ``unknown_width`` letters.

A gap of uncertain width gets its *maximum* width plus 2 slots, all MASK, as the elastic
noise of training makes them (a word of L letters becomes L + 2 + u MASK slots whose targets
are the letters followed by BLANK); the model's BLANK ends the gap. Letters an editor
supplied (``[καὶ]``) are kept as text, or re-predicted as a gap of their width
(``supplements="repredict"``). Letters with a dot below (uncertain readings) stay visible to
the model but are decoded like gap slots, so the model may change them.

Decoding. Iterative unmasking, most confident first (as in masked-diffusion sampling, e.g.
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

Finishing. One more pass over the finished letters (BLANK slots removed) gives the restored
letters their word division, accents and breathings, capitals and punctuation from the
model's auxiliary heads; with ``respace=True`` every letter's channels are hidden from the
model and all of them come from the heads (for scriptio continua in capitals).

Windowing. A text longer than ``window`` slots (default: the row length the model was
trained on) is decoded window by window, left to right: each window holds a run of gaps
with context on both sides and sees the best restoration of the windows before it. The
top-k lists of the windows are then combined by the k best sums of their scores (an
approximation: a later window was decoded given the best of the earlier ones only).
"""

from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from stoicheia.text import alphabet as A
from stoicheia.text.encode import encode_text, text_to_planes
from stoicheia.text.leiden import (
    MAX_LACUNA_WIDTH,
    Editorial,
    Lacuna,
    LacunaTooWideError,
    LeidenError,
    Text,
    parse_leiden,
)
from stoicheia.text.planes import Planes
from stoicheia.text.render import planes_to_text

BLANK = A.BLANK
_SYMBOLS = A.NUM_LETTERS + 2  # head outputs scored: 24 letters, MASK (never allowed), BLANK


class RestoreError(ValueError):
    """The text cannot be restored as given; the message says what to change."""


class GapTooWideError(RestoreError):
    """A lacuna wider than the model can fill (or than any lacuna the parser reads)."""


@dataclass
class Gap:
    """One stretch the model fills: a lacuna, a re-predicted supplement or an uncertain letter.

    ``notation``: what the input had there; ``min_letters``/``max_letters``: the bounds of its
    width in letters; ``slots``: MASK slots it takes (``max_letters`` for a fixed width, else
    ``max_letters + 2``); ``read``: the letters visible to the model (an uncertain letter's
    reading, an editor's supplement when kept visible), else ``None``.
    """

    notation: str
    kind: str  # "lacuna" | "supplement" | "uncertain"
    min_letters: int
    max_letters: int
    slots: int
    read: str | None = None
    #: what the input says follows the gap: 1/2 a word/sentence break (a space or a stop
    #: after the bracket), 0 the next letter of the same word
    end_boundary: int = A.BOUNDARY_INTERNAL

    @property
    def fixed_width(self) -> bool:
        return self.min_letters == self.max_letters and self.slots == self.max_letters


@dataclass
class Restoration:
    """One restoration of the whole text.

    ``text``: the text with the restored letters in square brackets (Leiden for letters
    supplied by the editor) and changed uncertain letters marked with a dot below;
    ``marks``: a line as wide as ``text`` on screen with ``^`` under every restored letter;
    ``logprob``: natural-log score (module docstring); ``fills``: the letters of each gap, in
    order (``""`` never: a gap has at least one letter).
    """

    text: str
    marks: str
    logprob: float
    fills: list[str]


@dataclass
class RestoreResult:
    """What :func:`restore` returns: the input, its gaps, the restorations best first."""

    input: str
    gaps: list[Gap]
    restorations: list[Restoration]
    windows: int = 1
    notes: list[str] = field(default_factory=list)


# --- reading the input ----------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _letters_in(ch: str) -> int:
    """Letter slots the encoder gives one code point (0 or 1)."""
    return len(text_to_planes(ch)[0])


def _letter_flags(segments: list[Any]) -> tuple[list[bool], list[bool], list[int]]:
    """Per letter slot of the encoded text (not lacuna slots), in reading order: uncertain
    (dot below), supplied by an editor in ``[ ]``, and the index of its supplement (-1)."""
    uncertain: list[bool] = []
    supplied: list[bool] = []
    group: list[int] = []
    k = 0
    for seg in segments:
        if isinstance(seg, Text) or (isinstance(seg, Editorial) and seg.reason != "surplus"):
            is_sup = isinstance(seg, Editorial) and seg.reason == "lost"
            for ch, unc in zip(seg.text, seg.uncertain, strict=True):
                for _ in range(_letters_in(unicodedata.normalize("NFC", ch))):
                    uncertain.append(bool(unc))
                    supplied.append(is_sup)
                    group.append(k if is_sup else -1)
            if is_sup:
                k += 1
    return uncertain, supplied, group


def _gap_bounds(seg: Lacuna, unknown_width: int, about_margin: float) -> tuple[int, int]:
    if seg.max_width is None:
        return 1, unknown_width
    if seg.approximate:
        m = max(1, round(about_margin * seg.max_width))
        return max(1, seg.max_width - m), seg.max_width + m
    return seg.min_width, seg.max_width


@dataclass
class _Item:
    """One element of the working sequence: a known letter (planes values) or a gap index."""

    gap: int | None
    values: tuple[int, int, int, int, int] | None = None  # chars, boundary, dia, cap, punct


def check_options(*, unknown_width: int = 20, about_margin: float = 0.25, window: int | None = None) -> None:
    """Raise :class:`RestoreError` for an option out of range: ``unknown_width`` outside
    ``1..MAX_LACUNA_WIDTH`` letters, ``about_margin`` not a number in ``[0, 1]``, a negative
    ``window``."""
    if not isinstance(unknown_width, int) or not 1 <= unknown_width <= MAX_LACUNA_WIDTH:
        raise RestoreError(
            f"unknown_width={unknown_width!r}: a lacuna of unknown width holds 1 to {MAX_LACUNA_WIDTH:,} letters; "
            "give a whole number in that range (default 20)"
        )
    if not isinstance(about_margin, (int, float)) or not 0 <= about_margin <= 1:  # also refuses nan
        raise RestoreError(
            f"about_margin={about_margin!r}: [-ca.N-] is read as N ± max(1, round(margin × N)) letters; "
            "give a fraction from 0 to 1 (default 0.25)"
        )
    if window is not None and (not isinstance(window, int) or window < 0):
        raise RestoreError(f"window={window!r}: give the slots the model sees at once (>= 1), or 0 to refuse windowing")


def _gap_too_wide(seg: Lacuna, notation: str, lo: int, hi: int, slots: int, limit: int, why: str) -> GapTooWideError:
    """The error for a lacuna ``seg`` read as ``lo..hi`` letters in ``slots`` slots, more than
    ``limit`` slots (``why``: where the limit comes from)."""
    if seg.known_width:
        return GapTooWideError(
            f"the lacuna {notation!r} holds {hi:,} letters, more than the model can fill: at most {limit:,} letters "
            f"at once ({why}); restore a narrower lacuna"
        )
    if seg.max_width is None:
        fix = f"give --unknown-width {max(1, limit - 2)} or less"
    elif seg.approximate:
        fix = "give a smaller --about-margin or a narrower lacuna"
    else:
        fix = "give a narrower lacuna"
    return GapTooWideError(
        f"the lacuna {notation!r} may hold up to {hi:,} letters ({slots:,} slots with the 2 that BLANK may end), more "
        f"than the model can fill: at most {limit:,} slots at once ({why}); {fix}"
    )


def parse_input(
    text: str,
    *,
    supplements: str = "keep",
    unknown_width: int = 20,
    about_margin: float = 0.25,
    max_slots: int | None = None,
    limit_why: str = "",
) -> tuple[list[_Item], list[Gap]]:
    """The working sequence of ``text`` and its gaps (module docstring). Raises
    :class:`RestoreError` for notation the Leiden parser rejects (with the position; a
    counted width above :data:`~stoicheia.text.leiden.MAX_LACUNA_WIDTH` among them), an option
    out of range (:func:`check_options`), a text without Greek letters, nothing to restore,
    or a gap of more than ``max_slots`` slots (``limit_why`` says where that limit comes
    from); the widths are checked before any slot is made."""
    if supplements not in ("keep", "repredict"):
        raise RestoreError(f"supplements={supplements!r}: use 'keep' or 'repredict'")
    check_options(unknown_width=unknown_width, about_margin=about_margin)
    try:
        segments = parse_leiden(text)
    except LacunaTooWideError as err:
        limit = (
            f"more than the model can fill: at most {max_slots:,} letters at once ({limit_why})" if max_slots is not None
            else f"more than the {MAX_LACUNA_WIDTH:,} letters a counted lacuna may hold"
        )
        raise GapTooWideError(f"the lacuna {err.notation!r} holds up to {err.width:,} letters, {limit}; restore a narrower lacuna") from None
    except LeidenError as err:
        raise RestoreError(f"{err}; fix the brackets (see 'Restoring a text' in the README)") from None
    if max_slots is not None:
        for seg in segments:
            if isinstance(seg, Lacuna):
                lo, hi = _gap_bounds(seg, unknown_width, about_margin)
                slots = hi if (lo == hi and not seg.approximate and seg.max_width is not None) else hi + 2
                if slots > max_slots:
                    notation = text[max(0, seg.start - 1) : seg.end + 1].strip()
                    raise _gap_too_wide(seg, notation, lo, hi, slots, max_slots, limit_why)
    try:
        enc = encode_text(text, strict=True)
    except LeidenError as err:
        raise RestoreError(f"{err}; fix the brackets (see 'Restoring a text' in the README)") from None
    p = enc.planes
    letters = np.flatnonzero(p.lacuna == 0)
    if letters.size == 0:
        raise RestoreError(f"no Greek letter in {text!r}: give Greek text (Unicode, accented or not) with its lacunae")
    uncertain, supplied, group = _letter_flags(segments)
    if len(uncertain) != letters.size:
        raise RestoreError(
            f"internal: {letters.size} letters encoded but {len(uncertain)} read from the Leiden segments of {text!r}"
        )
    lacunae = [s for s in segments if isinstance(s, Lacuna)]
    items: list[_Item] = []
    gaps: list[Gap] = []
    li = 0  # letter index
    gi = 0  # lacuna index
    i = 0
    n = len(p)
    sup_gap: dict[int, int] = {}
    while i < n:
        if p.lacuna[i] > 0:
            seg = lacunae[gi]
            gi += 1
            width = 1 if seg.max_width is None else seg.max_width
            lo, hi = _gap_bounds(seg, unknown_width, about_margin)
            slots = hi if (lo == hi and not seg.approximate and seg.max_width is not None) else hi + 2
            last = int(p.boundary[i + width - 1])
            end_b = last if last in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE) or i + width == n else A.BOUNDARY_INTERNAL
            gaps.append(Gap(text[max(0, seg.start - 1) : seg.end + 1], "lacuna", lo, hi, slots, end_boundary=end_b))
            items.append(_Item(len(gaps) - 1))
            i += width
            continue
        vals = (int(p.chars[i]), int(p.boundary[i]), int(p.dia[i]), int(p.cap[i]), int(p.punct[i]))
        if supplied[li] and supplements == "repredict":
            g = group[li]
            if g not in sup_gap:
                seg = [s for s in segments if isinstance(s, Editorial) and s.reason == "lost"][g]
                w = sum(1 for x in group if x == g)
                last = int(p.boundary[letters[li + w - 1]])
                gaps.append(Gap(f"[{seg.text}]", "supplement", w, w, w, read=seg.text, end_boundary=last))
                sup_gap[g] = len(gaps) - 1
                items.append(_Item(len(gaps) - 1))
        elif uncertain[li]:
            gaps.append(Gap(A.LETTERS[vals[0]] + "\u0323", "uncertain", 1, 1, 1, read=A.LETTERS[vals[0]]))
            items.append(_Item(len(gaps) - 1, vals))
        else:
            items.append(_Item(None, vals))
        li += 1
        i += 1
    return items, gaps


# --- decoding --------------------------------------------------------------------------------


@dataclass
class _Hyp:
    fill: dict[int, np.ndarray]  # gap index -> symbols per slot (-1 open, 0..23, BLANK)
    score: float = 0.0

    def key(self) -> tuple:
        return tuple((g, a.tobytes()) for g, a in sorted(self.fill.items()))


def _allowed(gap: Gap, a: np.ndarray, j: int) -> np.ndarray:
    """Bool ``(26,)``: symbols allowed at slot ``j`` of ``gap`` given its assignment ``a``."""
    ok = np.zeros(_SYMBOLS, dtype=bool)
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


def _fix(gap: Gap, a: np.ndarray, j: int, sym: int) -> None:
    a[j] = sym
    if sym == BLANK:
        a[j + 1 :] = BLANK  # BLANK ends the gap


def _sequence(items: list[_Item], gaps: list[Gap], fill: dict[int, np.ndarray], respace: bool) -> tuple[dict[str, np.ndarray], list[tuple[int, int]]]:
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


def _forward(model: Any, rows: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Log-softmax outputs for equal-length rows (one per hypothesis), as numpy."""
    batch = {k: torch.from_numpy(np.concatenate([r[k] for r in rows])) for k in rows[0]}
    with torch.no_grad():
        out = model(batch)
    return {k: torch.log_softmax(v.float(), dim=-1).cpu().numpy() for k, v in out.items()}


def _decode_window(model: Any, items: list[_Item], gaps: list[Gap], base: dict[int, np.ndarray], open_gaps: list[int], lo: int, hi: int, beam: int, respace: bool) -> list[_Hyp]:
    """Beam of iterative unmasking over ``open_gaps``, the model seeing slots ``[lo, hi)``."""
    start = {g: np.full(gaps[g].slots, -1, dtype=np.int64) for g in open_gaps}
    for g in open_gaps:  # slots past the maximum exist only to be BLANK
        if not gaps[g].fixed_width:
            start[g][gaps[g].max_letters :] = BLANK
    hyps = [_Hyp({**base, **start})]
    while True:
        open_any = any((h.fill[g] == -1).any() for h in hyps for g in open_gaps)
        if not open_any:
            return hyps
        rows, wheres = [], []
        for h in hyps:
            seq, where = _sequence(items, gaps, h.fill, respace)
            rows.append({k: v[:, lo:hi] for k, v in seq.items()})
            wheres.append(where[lo:hi])
        logp = _forward(model, rows)["char"][:, :, :_SYMBOLS]
        new: dict[tuple, _Hyp] = {}
        for r, h in enumerate(hyps):
            best = None  # (confidence, slot, candidates)
            for s, (g, j) in enumerate(wheres[r]):
                if g not in start or h.fill[g][j] != -1:
                    continue
                ok = _allowed(gaps[g], h.fill[g], j)
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
                _fix(gaps[g], fill[g], j, int(sym))
                cand = _Hyp(fill, h.score + float(lp[sym]))
                k = cand.key()
                if k not in new or new[k].score < cand.score:
                    new[k] = cand
        hyps = sorted(new.values(), key=lambda x: -x.score)[:beam]


def _windows(items: list[_Item], gaps: list[Gap], window: int) -> list[tuple[list[int], int, int]]:
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


# --- output ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8192)
def _render_letter(c: int, b: int, d: int, cap: int, pu: int) -> str:
    last_b = b if b in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE) else A.BOUNDARY_INTERNAL
    one = Planes(*(np.array([v], np.uint8) for v in (c, last_b, d, cap, pu)))
    s = planes_to_text(one)
    return s + (" " if b in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE) else "")


def _width(s: str) -> int:
    return sum(1 for ch in s if not unicodedata.combining(ch))


def _finish(model: Any, items: list[_Item], gaps: list[Gap], fill: dict[int, np.ndarray], respace: bool, score: float) -> Restoration:
    """Render one full assignment with the auxiliary heads (module docstring, Finishing)."""
    letters: list[tuple[int, bool, bool, tuple | None]] = []  # char, restored, changed, input values
    gap_ends: dict[int, int] = {}  # letter index -> the boundary the input gives it (last letter of a gap)
    for it in items:
        if it.gap is None:
            letters.append((it.values[0], False, False, it.values))  # type: ignore[index]
            continue
        g = gaps[it.gap]
        for sym in fill[it.gap]:
            if 0 <= sym < A.NUM_LETTERS:
                if g.kind == "uncertain":
                    letters.append((int(sym), False, int(sym) != it.values[0], it.values))  # type: ignore[index]
                else:
                    letters.append((int(sym), True, False, None))
        if g.kind != "uncertain" and letters and letters[-1][1]:
            gap_ends[len(letters) - 1] = g.end_boundary
    chars = np.array([c for c, _, _, _ in letters], dtype=np.int64)
    hidden = [respace or v is None for _, _, _, v in letters]
    seq = {
        "chars": chars[None, :],
        "boundary": np.array([A.BOUNDARY_UNKNOWN if h else v[1] for h, (_, _, _, v) in zip(hidden, letters, strict=True)])[None, :],
        "dia": np.array([A.DIA_UNKNOWN if h else v[2] for h, (_, _, _, v) in zip(hidden, letters, strict=True)])[None, :],
        "punct": np.array([A.PUNCT_UNKNOWN if h else v[4] for h, (_, _, _, v) in zip(hidden, letters, strict=True)])[None, :],
    }
    out = _forward(model, [seq])
    pieces, marks = [], []
    n = len(letters)
    for i, (c, restored, changed, v) in enumerate(letters):
        if hidden[i]:
            b = int(out["boundary"][0, i].argmax())
            if i in gap_ends and not respace:
                b = gap_ends[i]  # the input says whether a word break follows the bracket
            d = int(out["dia"][0, i].argmax())
            cap = int(out["cap"][0, i].argmax())
            pu = int(out["punct"][0, i].argmax())
        else:
            b, d, cap, pu = v[1], v[2], v[3], v[4]  # type: ignore[index]
            cap = cap if cap != A.CAP_UNKNOWN else int(out["cap"][0, i].argmax())
        if i == n - 1 and b == A.BOUNDARY_UNKNOWN:
            b = A.BOUNDARY_INTERNAL
        s = _render_letter(c, b, d, cap, pu)
        core, tail = s.rstrip(" "), s[len(s.rstrip(" ")) :]
        if changed:
            core = unicodedata.normalize("NFC", core[0] + "\u0323" + core[1:]) if core else core
        opens = restored and (i == 0 or not letters[i - 1][1])
        closes = restored and (i == n - 1 or not letters[i + 1][1])
        # the bracket closes before the punctuation and the space that follow the letter
        letter_part = core
        punct_part = ""
        if closes and letter_part and not unicodedata.category(letter_part[-1]).startswith("L") and not unicodedata.combining(letter_part[-1]):
            letter_part, punct_part = letter_part[:-1], letter_part[-1]
        piece = ("[" if opens else "") + letter_part + ("]" if closes else "") + punct_part + tail
        pieces.append(piece)
        w = _width(letter_part)
        marks.append((" " if opens else "") + ("^" if restored else ("." if changed else " ")) * w + (" " if closes else "") + " " * _width(punct_part + tail))
    fills = []
    for gi, g in enumerate(gaps):
        if g.kind == "uncertain":
            continue
        fills.append("".join(A.LETTERS[int(s)] for s in fill[gi] if 0 <= s < A.NUM_LETTERS))
    return Restoration("".join(pieces).rstrip(), "".join(marks).rstrip(), score, fills)


def _combine(per_window: list[list[_Hyp]], k: int) -> list[tuple[dict[int, np.ndarray], float]]:
    from stoicheia.inference.decoding import kbest_independent

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


def restore(
    model: Any,
    text: str,
    *,
    top_k: int = 5,
    beam: int | None = None,
    respace: bool = False,
    supplements: str = "keep",
    unknown_width: int = 20,
    about_margin: float = 0.25,
    window: int | None = None,
    config: Any = None,
    device: str = "auto",
) -> RestoreResult:
    """Restore ``text`` (Leiden notation) with ``model`` (module docstring).

    ``model``: a :class:`~stoicheia.inference.loading.LoadedModel` or a path for
    :func:`~stoicheia.inference.loading.load_model` (checkpoint, run folder, URI or export;
    ``config``/``device`` are passed on). ``top_k``: restorations returned, best first (at most
    ``beam``, default ``max(top_k, 4)``). ``window``: slots the model sees at once (default the
    run's ``data.seq_len``; ``0`` refuses to window and raises for a longer text).

    Raises :class:`RestoreError` (a ``ValueError``) for unreadable notation (unbalanced or
    nested brackets, a width of 0 or above ``MAX_LACUNA_WIDTH``), an option out of range
    (:func:`check_options`, ``top_k``/``beam`` < 1), a text without Greek letters, a text
    with nothing to restore (no lacuna, no uncertain letter, no re-predicted supplement, and
    no ``respace``), a lacuna wider than the window (checked before any slot is made), or a
    text longer than the window when ``window=0``.
    """
    from stoicheia.inference.loading import LoadedModel, load_model

    if top_k < 1:
        raise RestoreError(f"top_k={top_k}: ask for at least 1 restoration")
    loaded = model if isinstance(model, LoadedModel) else load_model(model, config=config, device=device)
    beam = max(top_k, 4) if beam is None else beam
    if beam < top_k:
        raise RestoreError(f"beam={beam} is smaller than top_k={top_k}")
    check_options(unknown_width=unknown_width, about_margin=about_margin, window=window)
    trained = int((loaded.config.get("data") or {}).get("seq_len") or 512)
    win = trained if window is None else window
    why = (
        f"the window: the {trained}-slot rows the model was trained on" if window is None
        else f"--window {window}; the model was trained on {trained}-slot rows" if window
        else f"--window 0: one row of at most the {trained} slots the model was trained on"
    )
    items, gaps = parse_input(
        text, supplements=supplements, unknown_width=unknown_width, about_margin=about_margin,
        max_slots=win or trained, limit_why=why,
    )
    if not gaps and not respace:
        raise RestoreError(
            f"nothing to restore in {text!r}: no lacuna ([...], [.5.], [5±3], [---]), no uncertain letter (dot below); "
            "use --respace to predict word division, accents and punctuation"
        )
    total = sum(gaps[it.gap].slots if it.gap is not None else 1 for it in items)
    if win == 0:
        if total > trained:
            raise RestoreError(
                f"the text takes {total:,} slots, more than the {trained} the model was trained on, and --window 0 "
                "refuses windowing: leave --window out (or give a number of slots) to decode it window by window"
            )
        win = total
    result = RestoreResult(text, gaps, [])
    if not gaps:
        result.restorations = [_finish(loaded, items, gaps, {}, respace, 0.0)]
        return result
    plan = _windows(items, gaps, win)
    result.windows = len(plan)
    fixed: dict[int, np.ndarray] = {}
    per_window: list[list[_Hyp]] = []
    for open_gaps, lo, hi in plan:
        hyps = _decode_window(loaded, items, gaps, fixed, open_gaps, lo, hi, beam, respace)
        own = [_Hyp({g: h.fill[g] for g in open_gaps}, h.score) for h in hyps]
        per_window.append(own)
        fixed.update(own[0].fill)
    for fill, score in _combine(per_window, top_k):
        result.restorations.append(_finish(loaded, items, gaps, fill, respace, score))
    if len(plan) > 1:
        result.notes.append(f"decoded in {len(plan)} windows of at most {win} slots")
    return result


def restore_planes(model: Any, planes: Planes, spans: list[tuple[int, int]], beam: int = 1) -> list[str]:
    """Fill known-width lacunae at letters ``[a, b)`` of ``planes`` (the letters there are
    hidden, every aux channel of the record hidden, as in the reference evaluation) by the
    decoding of :func:`restore`; returns the best filling of each span.

    ``model``: any callable taking a batch dict of ``(B, T)`` int64 tensors (``chars``,
    ``boundary``, ``dia``, ``punct``) and returning the logits dict (a ``LoadedModel``, a
    ``CharBertEncoder`` or the Composer model), in eval mode, on the device the caller moves
    tensors to. Used by the training callback ``restoration_example``.
    """
    items: list[_Item] = []
    gaps: list[Gap] = []
    starts = {a: b for a, b in spans}
    i = 0
    while i < len(planes):
        if i in starts:
            w = starts[i] - i
            gaps.append(Gap(f"[{'.' * w}]", "lacuna", w, w, w))
            items.append(_Item(len(gaps) - 1))
            i = starts[i]
            continue
        c = int(planes.chars[i])
        items.append(_Item(None, (c, A.BOUNDARY_UNKNOWN, A.DIA_UNKNOWN, A.CAP_UNKNOWN, A.PUNCT_UNKNOWN)))
        i += 1
    total = sum(gaps[it.gap].slots if it.gap is not None else 1 for it in items)
    hyps = _decode_window(model, items, gaps, {}, list(range(len(gaps))), 0, total, beam, respace=False)
    best = hyps[0].fill
    return ["".join(A.LETTERS[int(s)] for s in best[g] if 0 <= s < A.NUM_LETTERS) for g in range(len(gaps))]


def format_result(result: RestoreResult) -> list[str]:
    """Lines for the console: the input, then each restoration with its log-probability and a
    line of ``^`` under the restored letters."""
    lines = [f"input     {result.input}"]
    for g in result.gaps:
        if g.kind == "lacuna" and not g.fixed_width:
            lines.append(f"  lacuna {g.notation.strip()}: {g.min_letters} to {g.max_letters} letters ({g.slots} slots, BLANK ends it)")
    for i, r in enumerate(result.restorations, 1):
        head = f"#{i} {r.logprob:8.3f}"
        lines.append(f"{head}  {r.text}")
        if r.marks.strip():
            lines.append(" " * (len(head) + 2) + r.marks)
    lines += [f"({n})" for n in result.notes]
    lines.append("log-probabilities in nats (natural log) of the restored letters; ^ restored, . changed reading")
    return lines


__all__ = [
    "Gap", "GapTooWideError", "Restoration", "RestoreError", "RestoreResult", "check_options", "format_result", "parse_input", "restore",
    "restore_planes",
]
