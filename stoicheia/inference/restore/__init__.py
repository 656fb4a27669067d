"""Restore a damaged Greek text written in Leiden notation: ``stoicheia restore`` and
:func:`restore`.

:func:`restore` takes the steps in order, one module per job:

* read (:mod:`~stoicheia.inference.restore.reading`): the Leiden input read once into a
  :class:`Reading` (its parse, its encoding, its gaps and working sequence, its style), handed
  on to every later step; :mod:`.gap_widths` checks the widths, :mod:`.letter_rules` what
  Greek allows in a gap, :mod:`.input_style` how the input is written, and :mod:`.notes` says
  how it was read;
* decode (:mod:`~stoicheia.inference.restore.decoding`): the gaps decoded in input order, one
  forward pass each (:mod:`.gap_search`: a beam search fused with a letter n-gram and the
  parallels when given), and their candidates combined into whole-text restorations;
* render (:mod:`~stoicheia.inference.restore.rendering`): the fills printed with the auxiliary
  heads' accents, capitals and punctuation (:mod:`.channels`), spliced into the input so that
  the output equals the input outside the gaps (:mod:`.splicing`);
* believe (:mod:`~stoicheia.inference.restore.beliefs`): each gap's own alternatives, width and
  letter probabilities, and the editor's supplement scored.

:mod:`.console` prints a result as ``stoicheia restore`` does. This module holds the API:
:func:`restore`, :func:`restore_planes` and :class:`RestoreResult`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stoicheia.inference.restore.beliefs import EDITOR_RANK_POOL, gap_beliefs
from stoicheia.inference.restore.console import format_result
from stoicheia.inference.restore.decoders import DECODERS, check_decoder
from stoicheia.inference.restore.decoding import (
    Hyp,
    Window,
    combine,
    decode_gaps,
    plan_windows,
    symbols,
)
from stoicheia.inference.restore.gap_search import POOL, Candidate, Fusion
from stoicheia.inference.restore.gap_widths import check_options
from stoicheia.inference.restore.gaps import (
    Alternative,
    EditorScore,
    Gap,
    GapTooWideError,
    Item,
    RestoreError,
)
from stoicheia.inference.restore.input_style import InputStyle, input_style, near_capitals
from stoicheia.inference.restore.notes import decoding_notes, reading_notes, respace_note
from stoicheia.inference.restore.reading import (
    Reading,
    check_something_to_restore,
    parse_input,
    read_input,
    respace_items,
)
from stoicheia.inference.restore.rendering import (
    FillPrinter,
    Restoration,
    finish,
    parallel_printed,
)
from stoicheia.inference.restore.splicing import spliced_restoration
from stoicheia.text import alphabet as A
from stoicheia.text.planes import Planes


@dataclass
class RestoreResult:
    """What :func:`restore` returns: the input, its gaps (in input order, each with its best
    fill, alternatives, width and letter probabilities), the restorations best first."""

    input: str
    gaps: list[Gap]
    restorations: list[Restoration]
    windows: int = 1
    notes: list[str] = field(default_factory=list)
    #: the text was rebuilt from the planes (``respace`` or ``accents``): fills print lowercase
    #: with marks
    respace: bool = False

    def to_json(self) -> dict[str, Any]:
        """The restore JSON (docs/restoring.md): ``input``; ``gaps`` (:meth:`Gap.to_json`);
        ``restorations`` with ``text``, ``logprob``, ``fills`` (as printed, lined up with
        ``gaps``) and ``letters`` (base letters, lined up with ``gaps``); ``notes``."""
        return {
            "input": self.input,
            "gaps": [g.to_json() for g in self.gaps],
            "restorations": [
                {
                    "text": r.text,
                    "logprob": round(r.logprob, 6),
                    "fills": list(r.printed),
                    "letters": list(r.fills),
                }
                for r in self.restorations
            ],
            "notes": list(self.notes),
        }


class _Ticker:
    """Counts forward passes for a ``progress(done, total)`` callback; ``total`` is an upper
    bound (a BLANK ends a gap early), reached at the end."""

    def __init__(self, progress: Callable[[int, int], None] | None, total: int) -> None:
        self.progress, self.total, self.done = progress, max(1, total), 0

    def step(self) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(min(self.done, self.total - 1), self.total)

    def end(self) -> None:
        if self.progress is not None:
            self.progress(self.total, self.total)


@dataclass
class _Decoded:
    """What decoding hands on to rendering: each gap's candidates (``cands``) and forward pass
    (``logps``), the whole-text restorations (``chosen``, best first), and the editor's
    supplements held as printed (``held``: gap index -> their letters, int64)."""

    cands: dict[int, list[Candidate]]
    logps: dict[int, np.ndarray]
    chosen: list[Hyp]
    held: dict[int, np.ndarray]


def restore(
    model: Any,
    text: str | Reading,
    *,
    top_k: int = 5,
    beam: int | None = None,
    respace: bool = False,
    supplements: str = "keep",
    unknown_width: int = 20,
    about_margin: float = 0.25,
    window: int | None = None,
    config: Any = None,
    accents: bool = False,
    device: str = "auto",
    alternatives: int | None = None,
    score_supplements: bool = False,
    progress: Callable[[int, int], None] | None = None,
    fusion: Fusion | str | None = "auto",
    decoder: str | None = None,
) -> RestoreResult:
    """Restore ``text`` (Leiden notation) with ``model``: read, decode, render, believe (module
    docstring).

    ``text``: the text, or its :class:`Reading` already made by :func:`read_input` (the command
    line and the server read it before loading the model; made with ``supplements``,
    ``unknown_width`` and ``about_margin`` as given here, ``supplements="repredict"`` when
    ``score_supplements``). ``model``: a :class:`~stoicheia.inference.loading.LoadedModel` or
    a path for :func:`~stoicheia.inference.loading.load_model` (checkpoint, run folder, URI or
    export; ``config``/``device`` are passed on). ``top_k``: restorations returned, best first
    (at most ``beam``, default ``max(top_k, 4)``), distinct in at least one gap's letters.
    ``respace``: the whole text rebuilt from the planes with the model's word division (and
    its accents and punctuation where the input has none); ``accents``: the same, but the
    input's word division and punctuation are kept and only the accents and breathings come
    from the model (for a text typed with spaces but without marks).
    ``window``: slots the model sees at once (default the run's ``data.seq_len``; ``0`` refuses
    to window and raises for a longer text). ``alternatives``: each gap's own top-k (default
    ``top_k``; 0: none, and no width probabilities for a known width). ``score_supplements``:
    re-predict every editor's supplement ``[περὶ]`` and score the editor's reading
    (:mod:`.beliefs`). ``progress``: called as ``progress(done, total)`` after each forward
    pass. ``fusion``: the letter n-gram fused into the search (:mod:`.gap_search`): a
    :class:`Fusion`, ``None`` (the model alone) or ``"auto"`` (the ``ngram.npz`` beside the
    checkpoint, at the weight stored in it, when there is one, and the run's parallels index:
    :func:`~stoicheia.inference.restore.fusion_file.find_fusion`, whose notes on a part missing
    go to the result's). ``decoder``: ``fused``, ``parallels``, ``ngram`` or ``model``
    (:mod:`.decoders`; None: the fusion's, from ``fusion.json``, else ``fused``).

    Raises :class:`RestoreError` (a ``ValueError``) for unreadable notation (unbalanced or
    nested brackets, a width of 0 or above ``MAX_LACUNA_WIDTH``), an option out of range
    (:func:`check_options`, ``top_k``/``beam`` < 1, ``alternatives`` < 0), a reading made with
    other options, a text without Greek letters, a text with nothing to restore (no lacuna, no
    uncertain letter, no re-predicted or scored supplement, and no ``respace`` or ``accents``),
    both ``respace`` and ``accents`` (one keeps the word division the other predicts), a
    lacuna wider than the window (checked before any slot is made), or a text longer than the
    window when ``window=0``.
    """
    from stoicheia.inference.loading import LoadedModel, load_model

    if top_k < 1:
        raise RestoreError(f"top_k={top_k}: ask for at least 1 restoration")
    if respace and accents:
        raise RestoreError(
            "--respace predicts the word division and --accents keeps the input's: use one of them"
        )
    if alternatives is not None and alternatives < 0:
        raise RestoreError(f"alternatives={alternatives}: ask for 0 or more alternatives per gap")
    loaded = (
        model if isinstance(model, LoadedModel) else load_model(model, config=config, device=device)
    )
    beam = max(top_k, 4) if beam is None else beam
    if beam < top_k:
        raise RestoreError(f"beam={beam} is smaller than top_k={top_k}")
    check_options(unknown_width=unknown_width, about_margin=about_margin, window=window)
    view = Window.of(loaded, window)
    read_as = "repredict" if score_supplements else supplements
    reading = _read(text, view, read_as, unknown_width, about_margin)
    check_something_to_restore(reading, respace or accents, score_supplements)
    win = view.fitted(reading)
    result = RestoreResult(reading.text, reading.gaps, [], respace=respace or accents)
    result.notes += reading_notes(reading)
    items, style = _prepared(reading, respace, result.notes, accents)
    respace = respace or accents  # from here on: the text rebuilt through the heads
    if not reading.gaps:
        result.restorations = finish(loaded, items, [], [{}], respace, [0.0], style=style)
        return result
    k_alt = top_k if alternatives is None else alternatives
    plan = plan_windows(items, reading.gaps, win)  # refuses a lacuna wider than the window
    result.windows = len(plan)
    if decoder is not None:
        check_decoder(decoder)
    if isinstance(fusion, str):
        from stoicheia.inference.restore.fusion_file import find_fusion

        fusion = (
            find_fusion(loaded, decoder=decoder, notes=result.notes)
            if fusion == "auto"
            else find_fusion(loaded, fusion, decoder=decoder, notes=result.notes)
        )
    if decoder is None:
        decoder = fusion.decoder if fusion is not None else "fused"
    elif fusion is not None:
        fusion.decoder = decoder
    ticker = _Ticker(progress, len(reading.gaps) + 2)
    pool = max(beam, k_alt, EDITOR_RANK_POOL if score_supplements else 1, POOL)
    held = score_supplements and supplements == "keep"
    decoded = _decode(
        loaded, reading, items, win, pool, top_k, respace, fusion, held, ticker, decoder
    )
    printer = _render(loaded, reading, items, decoded, result, k_alt, style)
    ticker.step()
    _believe(reading, items, decoded, printer, k_alt, score_supplements, fusion)
    _score_held(reading.gaps, decoded, result)
    ticker.end()
    result.notes += decoding_notes(
        fusion, len(plan), win, bool(decoded.held), score_supplements, reading.gaps
    )
    return result


def _read(
    text: str | Reading, view: Window, supplements: str, unknown_width: int, about_margin: float
) -> Reading:
    """Step 1: the :class:`Reading` of ``text`` (made now, or checked against the options and
    the window when given)."""
    if not isinstance(text, Reading):
        reading = read_input(
            text,
            supplements=supplements,
            unknown_width=unknown_width,
            about_margin=about_margin,
            max_slots=view.slots or view.trained,
            limit_why=view.why,
        )
        reading.used = True
        return reading
    if text.used:
        raise RestoreError(
            "this reading was restored already (restore fills its gaps): read the text again"
        )
    made = (text.supplements, text.unknown_width, text.about_margin)
    if made != (supplements, unknown_width, about_margin):
        raise RestoreError(
            f"the reading was made with supplements, unknown_width, about_margin = {made}, "
            f"not {(supplements, unknown_width, about_margin)}: read the text with the options "
            "restore is given"
        )
    text.check_widths(view.slots or view.trained, view.why)
    text.used = True
    return text


def _prepared(
    reading: Reading, respace: bool, notes: list[str], accents: bool = False
) -> tuple[list[Item], InputStyle | None]:
    """The working sequence the model sees and the style its fills print in: with ``respace``
    (or ``accents``) the items of :func:`respace_items` (its note added to ``notes``) and no
    style (the fills print as the rebuilt text, lowercase with the heads' marks); else the
    reading's items and style, each gap in capitals where it sits in a capital stretch of a
    mixed text."""
    rebuilt = respace or accents
    for g in reading.gaps:
        g.capitals = None if rebuilt else near_capitals(reading.text, g.start, g.end)
    if not rebuilt:
        return reading.items, reading.style
    # the model predicts the word division (not with accents), and the accents and
    # punctuation where the input has none; the input's own are kept
    items, predicted = respace_items(
        reading.items, reading.gaps, reading.style, keep_division=accents
    )
    notes.append(respace_note(reading, predicted, "--accents" if accents else "--respace"))
    return items, None


def _decode(
    loaded: Any,
    reading: Reading,
    items: list[Item],
    win: int,
    pool: int,
    top_k: int,
    respace: bool,
    fusion: Fusion | None,
    held: bool,
    ticker: _Ticker,
    decoder: str = "fused",
) -> _Decoded:
    """Step 2: every gap decoded (``pool`` candidates each) and the ``top_k`` whole-text
    restorations combined; ``held``: the editor's supplements scored but kept in the text (the
    later gaps see them; else the model's fill replaces them)."""
    gaps = reading.gaps
    editor = {g.index: g.read_letters for g in gaps if held and g.kind == "supplement"}
    for gi in editor:
        gaps[gi].held = True
    cands, logps = decode_gaps(
        loaded,
        items,
        gaps,
        window=win,
        k=pool,
        respace=respace,
        fusion=fusion,
        on_step=ticker.step,
        hold=editor,
        decoder=decoder,
    )
    ranked = {g: ([Candidate(editor[g], 0.0, 1.0)] if g in editor else c) for g, c in cands.items()}
    return _Decoded(cands, logps, combine(gaps, ranked, top_k), editor)


def _render(
    loaded: Any,
    reading: Reading,
    items: list[Item],
    decoded: _Decoded,
    result: RestoreResult,
    k_alt: int,
    style: InputStyle | None,
) -> FillPrinter:
    """Step 3: ``result.restorations`` rendered, and each gap's ``fill`` set to its fill in
    restoration #1; returns the printer, which has rendered the gaps' alternatives too."""
    gaps, chosen = reading.gaps, decoded.chosen
    kept = {
        g: gaps[g].notation[1:-1] if gaps[g].bracketed else gaps[g].notation for g in decoded.held
    }
    printer = FillPrinter(loaded, items, gaps, chosen[0].fill, result.respace, style)
    if result.respace:  # every letter rendered: the whole text goes through the heads
        result.restorations = finish(
            loaded,
            items,
            gaps,
            [h.fill for h in chosen],
            True,
            [h.score for h in chosen],
            style=style,
            kept=kept,
        )
        for h, r in zip(chosen, result.restorations, strict=True):
            for gi in range(len(gaps)):
                if gi not in kept:
                    printer.remember(gi, h.fill[gi], r.printed[gi])
    else:  # each gap's fills (restorations' and alternatives') rendered in one window pass
        for gi, g in enumerate(gaps):
            index = g.parallels.index if g.parallels is not None else None
            for c in decoded.cands[gi] if index is not None and gi not in kept else []:
                # a fill the parallels carry prints as they print it
                shown = parallel_printed(index, c.source, g, style)
                if shown:
                    printer.remember(gi, symbols(g, c.letters), shown)
            if gi not in kept:
                printer.render(
                    gi,
                    [h.fill[gi] for h in chosen]
                    + [symbols(g, c.letters) for c in decoded.cands[gi][:k_alt]],
                )
        result.restorations = [
            spliced_restoration(reading.text, gaps, h.fill, printer, h.score, kept) for h in chosen
        ]
    for g, f in zip(gaps, result.restorations[0].printed, strict=True):
        g.fill = f
    return printer


def _believe(
    reading: Reading,
    items: list[Item],
    decoded: _Decoded,
    printer: FillPrinter,
    k_alt: int,
    score_supplements: bool,
    fusion: Fusion | None,
) -> None:
    """Step 4: each gap's alternatives, width and letter probabilities, and the editor's
    supplement scored (:func:`~stoicheia.inference.restore.beliefs.gap_beliefs`)."""
    gap_beliefs(
        items,
        reading.gaps,
        decoded.cands,
        decoded.logps,
        decoded.chosen[0],
        k=k_alt,
        printer=printer,
        score_supplements=score_supplements,
        fusion=fusion,
        kept=set(decoded.held),
    )


def _score_held(gaps: list[Gap], decoded: _Decoded, result: RestoreResult) -> None:
    """Each restoration's ``logprob`` with the editor's supplements it keeps as printed
    (``--score-supplements``) counted at their scores (``Gap.editor.prob``): the decoding held
    them at log-probability 0, and the whole reading printed, supplements included, is what
    ``#k``'s figure states (a reading scored at 64 % printed as 100 % otherwise)."""
    held = [
        math.log(max(gaps[g].editor.prob, 1e-300))
        for g in decoded.held
        if gaps[g].editor is not None
    ]
    if not held:
        return
    for r in result.restorations:
        r.logprob += sum(held)


def restore_planes(
    model: Any, planes: Planes, spans: list[tuple[int, int]], beam: int = 1
) -> list[str]:
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
        items.append(
            Item(None, (c, A.BOUNDARY_UNKNOWN, A.DIA_UNKNOWN, A.CAP_UNKNOWN, A.PUNCT_UNKNOWN))
        )
        i += 1
    total = sum(gaps[it.gap].slots if it.gap is not None else 1 for it in items)
    cands, _ = decode_gaps(model, items, gaps, window=max(total, 1), k=max(beam, 1), respace=False)
    return [cands[g][0].text() for g in range(len(gaps))]


__all__ = [
    "DECODERS",
    "Alternative",
    "EditorScore",
    "Fusion",
    "Gap",
    "GapTooWideError",
    "InputStyle",
    "Reading",
    "Restoration",
    "RestoreError",
    "RestoreResult",
    "check_options",
    "format_result",
    "input_style",
    "parse_input",
    "read_input",
    "restore",
    "restore_planes",
]
