"""The restore result as the JSON of the contract that ``stoicheia restore --json``, the EpiDoc
writer and this server share (``input``, ``gaps``, ``restorations``, ``notes``; see
``docs/restoration-page.md``).

:func:`result_to_json` is the one place the server turns a
:class:`~stoicheia.inference.restore.RestoreResult` into that shape. When the result has its
own ``to_json()`` (the inference package's serialiser) that is used as it is; otherwise the
fields the result does not carry yet are *estimated from its top-k restorations*: a
restoration's weight is ``exp(logprob)`` renormalised over the k returned, a letter's
probability is the weight of the restorations that agree with the best fill at that letter,
a gap's alternatives are its distinct fills with their summed weights, and the width
distribution is the summed weight per fill length. A note in ``notes`` says so.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

_BRACKETED = re.compile(r"\[([^\[\]]*)\]")
ESTIMATED_NOTE = (
    "letter probabilities, per-gap alternatives and width distributions are estimated from the "
    "top-k restorations (each weighted by exp(logprob), renormalised over the k)"
)


def _logsumexp(values: list[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def _base_letters(s: str) -> list[str]:
    """The base letters of ``s`` (NFD, marks, spaces and punctuation removed), lower case."""
    return [
        c
        for c in unicodedata.normalize("NFD", s).lower()
        if unicodedata.category(c).startswith("L")
    ]


def _find_uncertain(text: str, letter: str, at: int) -> tuple[int, int] | None:
    """The first letter ``letter`` (any case, any accents) with a dot below (U+0323, among
    the combining marks after it) in ``text`` from ``at``: ``(start, end)`` with its marks."""
    for i in range(at, len(text)):
        base = unicodedata.normalize("NFD", text[i])[0].lower()
        if base != letter.lower():
            continue
        j = i + 1
        while j < len(text) and unicodedata.combining(text[j]):
            j += 1
        if "\u0323" in text[i + 1 : j]:
            return i, j
    return None


def _bracketed(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` widened over blanks to the ``[`` and ``]`` around it, when both are
    there: the reader's notation of ``[ - - - ]`` is only its inside (``- - -``), and the span
    must cover the brackets, or the restored text would keep them around its own ``[fill]``."""
    i = start
    while i > 0 and text[i - 1].isspace():
        i -= 1
    j = end
    while j < len(text) and text[j].isspace():
        j += 1
    if i > 0 and text[i - 1] == "[" and j < len(text) and text[j] == "]":
        return i - 1, j + 1
    return start, end


def _offsets(text: str, gaps: list[Any]) -> list[tuple[int, int]]:
    """``[(start, end), ...]``: where each gap's notation stands in ``text``, searched left to
    right: a lacuna or supplement verbatim (else in NFC), an uncertain letter as typed (its
    ``notation`` is the lower-case letter and a dot below; the text may have a capital and
    accents). A notation not found gets an empty span at the cursor."""
    out = []
    at = 0
    for g in gaps:
        n = g.notation.strip()
        found = None
        if g.kind == "uncertain":
            found = _find_uncertain(text, n[0], at)
        else:
            for form in (n, unicodedata.normalize("NFC", n)):
                i = text.find(form, at)
                if i >= 0:
                    found = (i, i + len(form))
                    break
        if found is None:
            out.append((at, at))
            continue
        if g.kind == "lacuna" and not n.startswith("["):
            found = _bracketed(text, *found)
        out.append(found)
        at = found[1]
    return out


def _outside_brackets(text: str) -> list[str]:
    """The letters of ``text`` outside ``[ ]``, each with its combining marks (NFC, dot below
    removed), in order."""
    out: list[str] = []
    depth = 0
    for ch in unicodedata.normalize("NFD", text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif depth == 0 and unicodedata.category(ch).startswith("L"):
            out.append(ch)
        elif depth == 0 and unicodedata.combining(ch) and out and ch != "\u0323":
            out[-1] += ch
    return [unicodedata.normalize("NFC", c) for c in out]


def _uncertain_fills(result: Any, restoration: Any) -> dict[int, str]:
    """``{gap index: letter}``: how ``restoration`` reads each uncertain letter (its text keeps
    the input's letters outside brackets in order; the working sequence of
    :func:`~stoicheia.inference.restore.parse_input` says which of them are uncertain)."""
    from stoicheia.inference.restore import RestoreError, parse_input

    if not any(g.kind == "uncertain" for g in result.gaps):
        return {}
    repredicted = any(g.kind == "supplement" for g in result.gaps)
    try:
        items, _ = parse_input(result.input, supplements="repredict" if repredicted else "keep")
    except RestoreError:
        return {}
    letters = _outside_brackets(restoration.text)
    out: dict[int, str] = {}
    k = 0
    for it in items:
        is_uncertain = it.gap is not None and result.gaps[it.gap].kind == "uncertain"
        if it.gap is not None and not is_uncertain:
            continue
        if k >= len(letters):
            return {}  # the text does not line up with the input: keep the readings
        if is_uncertain:
            out[it.gap] = letters[k]
        k += 1
    return out if k == len(letters) else {}


def _printed_fills(restoration: Any, n_bracketed: int) -> list[str] | None:
    """The fills of the non-uncertain gaps as printed in ``restoration.text`` (with accents,
    breathings and word breaks from the model's heads), or ``None`` when the brackets of the
    text do not line up with the gaps."""
    runs = _BRACKETED.findall(restoration.text)
    if len(runs) != n_bracketed:
        return None
    return [r.strip() for r in runs]


def result_to_json(result: Any) -> dict[str, Any]:
    """The contract JSON of ``result`` (a ``RestoreResult``): a dict of plain types.

    Keys: ``input`` (str), ``gaps`` (list of dicts: ``index``, ``kind``, ``notation``,
    ``start``/``end`` (character offsets in ``input``), ``min_letters``/``max_letters``,
    ``fill``, ``letter_probs`` (one float in [0, 1] per base letter of ``fill``),
    ``alternatives`` (``fill``, ``prob``, ``logprob`` natural log), ``width_probs``
    (``{"N": P}``, summing to 1, or ``None`` for a fixed width), ``editor``), ``restorations``
    (``text``, ``logprob`` in nats, ``fills`` aligned with ``gaps``) and ``notes``.
    Uses ``result.to_json()`` when it exists (module docstring)."""
    if hasattr(result, "to_json"):
        data = result.to_json()
        return data if isinstance(data, dict) else dict(data)
    gaps = list(result.gaps)
    rests = list(result.restorations)
    own = [i for i, g in enumerate(gaps) if g.kind != "uncertain"]  # what Restoration.fills covers
    # weights of the k restorations: exp(logprob) renormalised (log-sum-exp for stability)
    lps = [float(r.logprob) for r in rests]
    norm = _logsumexp(lps) if lps else 0.0
    log_weights = [lp - norm for lp in lps]
    weights = [math.exp(lw) for lw in log_weights]
    # each restoration's fill of every gap, aligned with gaps (an uncertain letter: its reading)
    fills: list[list[str]] = []
    for r in rests:
        printed = _printed_fills(r, len(own))
        row = [g.read or "" for g in gaps]
        for k, gi in enumerate(own):
            bare = r.fills[k] if k < len(r.fills) else ""
            shown = printed[k] if printed is not None else bare
            # the printed fill must spell the same letters as the decoded one, else the bare letters
            row[gi] = shown if _base_letters(shown) == _base_letters(bare) else bare
        for gi, letter in _uncertain_fills(result, r).items():
            if _base_letters(letter):
                row[gi] = letter
        fills.append(row)
    spans = _offsets(result.input, gaps)
    out_gaps = []
    for gi, g in enumerate(gaps):
        best = fills[0][gi] if fills else ""
        best_letters = _base_letters(best)
        probs = []
        for li, letter in enumerate(best_letters):
            agree = sum(
                w
                for w, row in zip(weights, fills, strict=True)
                if li < len(_base_letters(row[gi])) and _base_letters(row[gi])[li] == letter
            )
            probs.append(round(agree, 6))
        members: dict[str, list[float]] = {}
        for lw, row in zip(log_weights, fills, strict=True):
            members.setdefault(row[gi], []).append(lw)
        alts = {
            f: _logsumexp(lws) for f, lws in members.items()
        }  # log space: no -inf for a tiny weight
        alternatives = [
            {"fill": f, "prob": round(math.exp(lp), 6), "logprob": round(lp, 6)}
            for f, lp in sorted(alts.items(), key=lambda kv: -kv[1])
        ]
        width_probs = None
        if g.min_letters != g.max_letters or not g.fixed_width:
            width_probs = {}
            for w, row in zip(weights, fills, strict=True):
                n = str(len(_base_letters(row[gi])))
                width_probs[n] = round(width_probs.get(n, 0.0) + w, 6)
            width_probs = dict(sorted(width_probs.items(), key=lambda kv: int(kv[0])))
        start, end = spans[gi]
        out_gaps.append(
            {
                # the notation as typed (the input's own characters), where it was found
                "index": gi,
                "kind": g.kind,
                "notation": result.input[start:end] if end > start else g.notation.strip(),
                "start": start,
                "end": end,
                "min_letters": int(g.min_letters),
                "max_letters": int(g.max_letters),
                "fill": best,
                "letter_probs": probs,
                "alternatives": alternatives,
                "width_probs": width_probs,
                "editor": None,
            }
        )
    out_rests = []
    for r, row in zip(rests, fills, strict=True):
        # the contract's text: the input with each gap's notation replaced by its fill in Leiden
        pieces, at = [], 0
        for gi, (start, end) in enumerate(spans):
            if end <= start:
                continue
            pieces.append(result.input[at:start])
            pieces.append(f"[{row[gi]}]" if gaps[gi].kind != "uncertain" else row[gi] + "\u0323")
            at = end
        pieces.append(result.input[at:])
        out_rests.append({"text": "".join(pieces), "logprob": float(r.logprob), "fills": row})
    notes = list(getattr(result, "notes", []) or [])
    if gaps:
        notes.append(ESTIMATED_NOTE)
    return {"input": result.input, "gaps": out_gaps, "restorations": out_rests, "notes": notes}


__all__ = ["ESTIMATED_NOTE", "result_to_json"]
