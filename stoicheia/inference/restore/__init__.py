"""Restore a damaged Greek text written in Leiden notation: ``stoicheia restore`` and :func:`restore`.

One module per job:

* :mod:`~stoicheia.inference.restore.reading`: the Leiden input read into gaps and a working
  sequence (:func:`parse_input`, :func:`check_options`, :class:`Gap`, the errors);
* :mod:`~stoicheia.inference.restore.decoding`: the gaps decoded in input order, one forward
  pass each, and the combination of their candidates into whole-text restorations;
* :mod:`~stoicheia.inference.restore.gap_search`: one gap's candidates from its forward pass,
  a beam search fused with a letter n-gram when one is given;
* :mod:`~stoicheia.inference.restore.rendering`: a finished assignment rendered as text (the
  auxiliary heads' accents, capitals, punctuation), spliced into the input so that the output
  equals the input outside the gaps, and the console lines;
* :mod:`~stoicheia.inference.restore.beliefs`: each gap's own alternatives, width and letter
  probabilities, and the editor's supplement scored.

This module holds the API: :func:`restore`, :func:`restore_planes` and :class:`RestoreResult`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stoicheia.inference.restore.beliefs import EDITOR_RANK_POOL, gap_beliefs
from stoicheia.inference.restore.decoding import combine, decode_gaps, plan_windows, symbols
from stoicheia.inference.restore.gap_search import POOL, Candidate, Fusion
from stoicheia.inference.restore.reading import (
    Alternative,
    EditorScore,
    Gap,
    GapTooWideError,
    InputStyle,
    Item,
    RestoreError,
    check_options,
    input_style,
    near_capitals,
    parse_input,
    respace_items,
)
from stoicheia.inference.restore.rendering import (
    FillPrinter,
    Restoration,
    finish,
    format_result,
    spliced_restoration,
)
from stoicheia.text import alphabet as A
from stoicheia.text.clusters import CONTROLS
from stoicheia.text.encode import encode_text, text_to_planes
from stoicheia.text.leiden_segments import DOT_BELOW
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
    #: the text was rebuilt from the planes (``respace``): fills print lowercase with marks
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


#: the editor's and the stone's signs that ``--respace``, which rebuilds the text from the
#: planes, does not print (a note says so when the input has any outside its gaps)
EDITORIAL_SIGNS = frozenset("[]()⟦⟧{}⟨⟩⸢⸣|/\\❦⁝⁞⁙‖’'ʼ\n" + DOT_BELOW)


#: a word of Latin capitals that all look like Greek ones, touching no other letter: the encoder
#: reads it as Latin and leaves it out (the Latin A I of ΚΕΙ[..]AI)
_GREEK_LETTER = re.compile("[\u0370-\u03ff\u1f00-\u1fff]")
_LATIN_CAPITALS = re.compile(r"(?<![^\W\d_])[ABEZHIKMNOPTXY]+(?![^\W\d_])")


def _reading_notes(text: str, gaps: list[Gap]) -> list[str]:
    """Notes on how ``text`` was read where a scholar may have meant otherwise: words of Latin
    capitals that look Greek (left out of what the model sees), and ``[…]`` (three letters)."""
    notes = []
    dropped = encode_text(text).dropped
    if dropped.get("other"):
        foreign = "".join(
            dict.fromkeys(
                c
                for c in text
                if unicodedata.category(c).startswith("L")
                and not unicodedata.name(c, "").startswith(("GREEK", "LATIN"))
            )
        )
        notes.append(
            f"left out, not Greek: {dropped['other']} letter(s) of another script ({foreign[:20]})"
        )
    if dropped.get("control"):
        codes = ", ".join(dict.fromkeys(f"U+{ord(c):04X}" for c in text if c in CONTROLS))
        notes.append(
            f"left out: {dropped['control']} control character(s) ({codes[:40]}), no word break"
        )
    mixed = [w for w in text.split() if re.search("[A-Za-z]", w) and _GREEK_LETTER.search(w)]
    if dropped.get("latin_in_word") and mixed:
        notes.append(
            f"left out: Latin letters inside Greek words ({', '.join(dict.fromkeys(mixed))}); "
            "type them in Greek letters if they are Greek"
        )
    latin = list(dict.fromkeys(_LATIN_CAPITALS.findall(text)))
    if latin:
        notes.append(
            f"left out as Latin, not read as Greek: {', '.join(latin)} (every letter of them looks "
            "like a Greek capital: if they are Greek, type them in Greek letters)"
        )
    ellipsis = [g.notation for g in gaps if "…" in g.notation]
    if ellipsis:
        notes.append(
            f"{ellipsis[0]} is read as a lacuna of 3 letters per '…' (three dots); type [---] for a "
            "lacuna of unknown width"
        )
    return notes


def _and(words: list[str]) -> str:
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


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
    alternatives: int | None = None,
    score_supplements: bool = False,
    progress: Callable[[int, int], None] | None = None,
    fusion: Fusion | str | None = "auto",
) -> RestoreResult:
    """Restore ``text`` (Leiden notation) with ``model`` (module docstring).

    ``model``: a :class:`~stoicheia.inference.loading.LoadedModel` or a path for
    :func:`~stoicheia.inference.loading.load_model` (checkpoint, run folder, URI or export;
    ``config``/``device`` are passed on). ``top_k``: restorations returned, best first (at most
    ``beam``, default ``max(top_k, 4)``), distinct in at least one gap's letters. ``window``:
    slots the model sees at once (default the run's ``data.seq_len``; ``0`` refuses to window and
    raises for a longer text). ``alternatives``: each gap's own top-k (default ``top_k``; 0:
    none, and no width probabilities for a known width). ``score_supplements``: re-predict every
    editor's supplement ``[περὶ]`` and score the editor's reading (:mod:`.beliefs`).
    ``progress``: called as ``progress(done, total)`` after each forward pass. ``fusion``: the
    letter n-gram fused into the search (:mod:`.gap_search`): a :class:`Fusion`, ``None`` (the
    model alone) or ``"auto"`` (the ``ngram.npz`` beside the checkpoint, at the weight stored in
    it, when there is one: :func:`~stoicheia.inference.restore.fusion_file.find_fusion`).

    Raises :class:`RestoreError` (a ``ValueError``) for unreadable notation (unbalanced or
    nested brackets, a width of 0 or above ``MAX_LACUNA_WIDTH``), an option out of range
    (:func:`check_options`, ``top_k``/``beam`` < 1, ``alternatives`` < 0), a text without Greek
    letters, a text with nothing to restore (no lacuna, no uncertain letter, no re-predicted or
    scored supplement, and no ``respace``), a lacuna wider than the window (checked before any
    slot is made), or a text longer than the window when ``window=0``.
    """
    from stoicheia.inference.loading import LoadedModel, load_model

    if top_k < 1:
        raise RestoreError(f"top_k={top_k}: ask for at least 1 restoration")
    if alternatives is not None and alternatives < 0:
        raise RestoreError(f"alternatives={alternatives}: ask for 0 or more alternatives per gap")
    loaded = (
        model if isinstance(model, LoadedModel) else load_model(model, config=config, device=device)
    )
    beam = max(top_k, 4) if beam is None else beam
    if beam < top_k:
        raise RestoreError(f"beam={beam} is smaller than top_k={top_k}")
    check_options(unknown_width=unknown_width, about_margin=about_margin, window=window)
    trained = int((loaded.config.get("data") or {}).get("seq_len") or 512)
    win = trained if window is None else window
    why = (
        f"the window: the {trained}-slot rows the model was trained on"
        if window is None
        else f"--window {window}; the model was trained on {trained}-slot rows"
        if window
        else f"--window 0: one row of at most the {trained} slots the model was trained on"
    )
    items, gaps = parse_input(
        text,
        supplements="repredict" if score_supplements else supplements,
        unknown_width=unknown_width,
        about_margin=about_margin,
        max_slots=win or trained,
        limit_why=why,
    )
    if not gaps and not respace:
        erased = re.search(r"(\[\[|⟦|〚)[\s.\-–—…]+(\]\]|⟧|〛)", text)
        raise RestoreError(
            f"nothing to restore in {text!r}: no lacuna ([...], [.5.], [5±3], [---]), no uncertain letter (dot below)"
            + (", no editor's supplement [καὶ] to score" if score_supplements else "")
            + (
                f" ({erased.group(0)} is an erasure, kept as printed: restore fills lacunae in "
                "single brackets [...])"
                if erased
                else ""
            )
            + "; use --respace to predict word division, accents and punctuation"
        )
    total = sum(gaps[it.gap].slots if it.gap is not None else 1 for it in items)
    if win == 0:
        if total > trained:
            raise RestoreError(
                f"the text takes {total:,} slots, more than the {trained} the model was trained on, and --window 0 "
                "refuses windowing: leave --window out (or give a number of slots) to decode it window by window"
            )
        win = total
    # --respace rebuilds the whole text, fills included, from the planes: lowercase with the
    # heads' marks, so the gaps' fills print as in the restorations and not in the input's style
    style = None if respace else input_style(text)
    for g in gaps:  # a capital stretch of a mixed text is filled in capitals
        g.capitals = None if respace else near_capitals(text, g.start, g.end)
    result = RestoreResult(text, gaps, [], respace=respace)
    result.notes += _reading_notes(text, gaps)
    if respace:
        # the model predicts the word division, and the accents and punctuation where the
        # input has none; the input's own are kept
        items, predicted = respace_items(items, gaps, input_style(text))
        rest = text
        for g in sorted(gaps, key=lambda g: -g.start):
            rest = rest[: g.start] + rest[g.end :]
        dropped = sorted({ch for ch in rest if ch in EDITORIAL_SIGNS})
        if any(g.kind == "uncertain" for g in gaps) and DOT_BELOW not in dropped:
            dropped.append(DOT_BELOW)  # a kept uncertain letter prints without its dot
        names = {
            DOT_BELOW: "dots below",
            "\n": "line breaks",
            "’": "elision marks ’",
            "'": "'",
            "ʼ": "ʼ",
        }
        shown = " ".join(names.get(ch, ch) for ch in dropped)
        kept = [x for x in ("accents", "punctuation") if x not in predicted]
        note = f"--respace rebuilds the text from the planes, in lower case, with the model's {_and(predicted)}"
        if kept:
            note += f"; the input's {_and(kept)} kept"
        if dropped:
            note += (
                f"; the input's {shown} are not in it, only the restored letters are in brackets"
            )
        result.notes.append(note)
    if not gaps:
        result.restorations = finish(loaded, items, gaps, [{}], respace, [0.0], style=style)
        return result
    k_alt = top_k if alternatives is None else alternatives
    plan = plan_windows(items, gaps, win)  # refuses a lacuna wider than the window
    result.windows = len(plan)
    if isinstance(fusion, str):
        from stoicheia.inference.restore.fusion_file import find_fusion

        fusion = find_fusion(loaded) if fusion == "auto" else find_fusion(loaded, fusion)
    ticker = _Ticker(progress, len(gaps) + 2)
    pool = max(beam, k_alt, EDITOR_RANK_POOL if score_supplements else 1, POOL)
    # --score-supplements alone scores the editor's supplements and keeps them in the text (the
    # later gaps see them); with supplements="repredict" the model's fill replaces them
    editor = {
        g.index: text_to_planes(g.read or "")[0].chars.astype(np.int64)
        for g in gaps
        if score_supplements and supplements == "keep" and g.kind == "supplement"
    }
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
    )
    ranked = {g: ([Candidate(editor[g], 0.0, 1.0)] if g in editor else c) for g, c in cands.items()}
    chosen = combine(gaps, ranked, top_k)
    kept = {g: gaps[g].notation[1:-1] if gaps[g].bracketed else gaps[g].notation for g in editor}
    printer = FillPrinter(loaded, items, gaps, chosen[0].fill, respace, style)
    if respace:  # every letter rendered: the whole text goes through the heads
        result.restorations = finish(
            loaded,
            items,
            gaps,
            [h.fill for h in chosen],
            respace,
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
            if gi not in kept:
                printer.render(
                    gi,
                    [h.fill[gi] for h in chosen]
                    + [symbols(g, c.letters) for c in cands[gi][:k_alt]],
                )
        result.restorations = [
            spliced_restoration(text, gaps, h.fill, printer, h.score, kept) for h in chosen
        ]
    ticker.step()
    for g, f in zip(gaps, result.restorations[0].printed, strict=True):
        g.fill = f
    gap_beliefs(
        items,
        gaps,
        cands,
        logps,
        chosen[0],
        k=k_alt,
        printer=printer,
        score_supplements=score_supplements,
        fusion=fusion,
        kept=set(editor),
    )
    ticker.end()
    if fusion is not None and fusion.ngram is not None:
        result.notes.append(
            f"fused with a letter {fusion.ngram.order}-gram at weight {fusion.weight:g} ({fusion.source})"
        )
    if fusion is not None and fusion.parallels is not None:
        result.notes.append(
            f"parallels from {fusion.parallels.manifest['letters']:,} letters of training text, "
            + (
                f"fused at weight {fusion.parallels_weight:g} ({fusion.parallels_source})"
                if fusion.parallels_weight > 0
                else "shown, not fused (parallels weight 0)"
            )
        )
    if len(plan) > 1:
        result.notes.append(f"each gap decoded in a window of at most {win} slots around it")
    if editor:
        result.notes.append(
            "editor's supplements kept as printed, each scored against the model's readings of its width (--score-supplements)"
        )
    elif score_supplements and any(g.kind == "supplement" for g in gaps):
        result.notes.append(
            "editor's supplements hidden from the model and re-predicted, to score them (--score-supplements)"
        )
    return result


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
    "Alternative",
    "EditorScore",
    "Fusion",
    "Gap",
    "GapTooWideError",
    "InputStyle",
    "Restoration",
    "RestoreError",
    "RestoreResult",
    "check_options",
    "format_result",
    "input_style",
    "parse_input",
    "restore",
    "restore_planes",
]
