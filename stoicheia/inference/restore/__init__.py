"""Restore a damaged Greek text written in Leiden notation: ``stoicheia restore`` and :func:`restore`.

One module per job:

* :mod:`~stoicheia.inference.restore.reading`: the Leiden input read into gaps and a working
  sequence (:func:`parse_input`, :func:`check_options`, :class:`Gap`, the errors);
* :mod:`~stoicheia.inference.restore.decoding`: the beam of iterative unmasking over the gaps,
  window by window, and the combination of the windows' top-k lists;
* :mod:`~stoicheia.inference.restore.rendering`: a finished assignment rendered as text (the
  auxiliary heads' accents, capitals, punctuation) and the console lines.

This module holds the API: :func:`restore`, :func:`restore_planes` and :class:`RestoreResult`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stoicheia.inference.restore.decoding import Hyp, combine_windows, decode_window, plan_windows
from stoicheia.inference.restore.reading import (
    Gap,
    GapTooWideError,
    Item,
    RestoreError,
    check_options,
    parse_input,
)
from stoicheia.inference.restore.rendering import Restoration, finish, format_result
from stoicheia.text import alphabet as A
from stoicheia.text.planes import Planes


@dataclass
class RestoreResult:
    """What :func:`restore` returns: the input, its gaps, the restorations best first."""

    input: str
    gaps: list[Gap]
    restorations: list[Restoration]
    windows: int = 1
    notes: list[str] = field(default_factory=list)


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
        result.restorations = [finish(loaded, items, gaps, {}, respace, 0.0)]
        return result
    plan = plan_windows(items, gaps, win)
    result.windows = len(plan)
    fixed: dict[int, np.ndarray] = {}
    per_window: list[list[Hyp]] = []
    for open_gaps, lo, hi in plan:
        hyps = decode_window(loaded, items, gaps, fixed, open_gaps, lo, hi, beam, respace)
        own = [Hyp({g: h.fill[g] for g in open_gaps}, h.score) for h in hyps]
        per_window.append(own)
        fixed.update(own[0].fill)
    for fill, score in combine_windows(per_window, top_k):
        result.restorations.append(finish(loaded, items, gaps, fill, respace, score))
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
    items: list[Item] = []
    gaps: list[Gap] = []
    starts = {a: b for a, b in spans}
    i = 0
    while i < len(planes):
        if i in starts:
            w = starts[i] - i
            gaps.append(Gap(f"[{'.' * w}]", "lacuna", w, w, w))
            items.append(Item(len(gaps) - 1))
            i = starts[i]
            continue
        c = int(planes.chars[i])
        items.append(Item(None, (c, A.BOUNDARY_UNKNOWN, A.DIA_UNKNOWN, A.CAP_UNKNOWN, A.PUNCT_UNKNOWN)))
        i += 1
    total = sum(gaps[it.gap].slots if it.gap is not None else 1 for it in items)
    hyps = decode_window(model, items, gaps, {}, list(range(len(gaps))), 0, total, beam, respace=False)
    best = hyps[0].fill
    return ["".join(A.LETTERS[int(s)] for s in best[g] if 0 <= s < A.NUM_LETTERS) for g in range(len(gaps))]


__all__ = [
    "Gap", "GapTooWideError", "Restoration", "RestoreError", "RestoreResult", "check_options", "format_result", "parse_input", "restore",
    "restore_planes",
]
