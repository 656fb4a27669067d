"""Plan the restoration of an EpiDoc file before any model runs: which gaps are filled, which
are left, and the pieces of the Greek edition the decoder is given.

**Which gaps are filled.** A ``<gap reason="lost" unit="character">`` with a readable width
(``quantity``, ``atLeast``/``atMost``, ``precision="low"``, ``extent="unknown"``), not wider than
the model's window. Left as they are, and counted by reason:

* ``lines``: ``unit="line"`` (or another unit than characters): whole lines lost. The text
  is cut there: the letters on either side are not neighbours, so the parts on either side
  are restored separately;
* ``too wide``: more slots than the model's window (cut there too);
* ``illegible``: ``reason`` other than ``lost`` (traces of letters, not a loss), and
  ``width unreadable`` (a broken ``quantity``/``atLeast``/``atMost``): these stay lacunae in
  the text the model sees (it fills them as context) but are not written.

A gap the decoder refuses (the part it stands in has no Greek letter, say) is counted
``refused`` with the decoder's message. The letters with a dot below (``<unclear>``) are given
to the model as read: an EpiDoc restoration fills lacunae and never changes a reading.

**Pieces.** A part (the whole edition, or a stretch between lost lines) longer than the
model's window is cut at word breaks into pieces of at most the window, restored one by one
(:mod:`.pieces`: the work grows linearly with the file, where one call over a whole long
edition grew with its square).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lxml import etree

from stoicheia.inference.epidoc.byte_spans import ElementSpan
from stoicheia.inference.epidoc.edition import Edition, read_edition
from stoicheia.inference.epidoc.outcomes import GapOutcome
from stoicheia.inference.epidoc.pieces import pieces
from stoicheia.sources.epidoc_gap import MAX_GAP_LETTERS
from stoicheia.text.leiden_segments import Lacuna

__all__ = ["EpiDocPlan", "Piece", "plan_epidoc"]


def _strip_dots(s: str) -> str:
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", s).replace("\u0323", ""))


@dataclass
class _Plan:
    kind: str  # "fill" | "context" | "cut"
    reason: str = ""
    slots: int = 0  # slots the decoder gives it (0 for a cut)


def _plan(
    el: etree._Element | None,
    lac: Lacuna,
    opts: dict[str, Any],
    max_slots: int,
) -> _Plan:
    """What to do with one lacuna (module docstring): ``fill`` it, keep it as ``context`` (a
    lacuna the model sees but whose letters are not written), or ``cut`` the text there. Its
    width is read from the reader's :class:`Lacuna` as the decoder reads it (the notation is
    not parsed again: the piece's one reading is made once, :func:`_reading`)."""
    from stoicheia.inference.restore.gap_widths import gap_bounds, gap_slots

    unit = (
        "character" if el is None else (el.get("unit") or "character").strip().rstrip(">")
    )  # as the reader reads it
    if unit != "character":
        return _Plan("cut", "lines" if unit == "line" else f"unit {unit}")
    lo, hi = gap_bounds(lac, opts["unknown_width"], opts["about_margin"])
    if hi < 1:
        return _Plan("cut", "width unreadable")  # [0]: no letter to restore
    slots = gap_slots(lac, lo, hi)
    if slots > max_slots:
        return _Plan("cut", "too wide")
    if el is None:
        return _Plan("context", slots=slots)
    qty = (el.get("quantity") or "").strip()
    if qty.isdigit() and int(qty) > MAX_GAP_LETTERS:  # the reader writes it as [---]
        return _Plan("cut", "too wide")
    if (el.get("reason") or "").strip() != "lost":
        return _Plan("context", (el.get("reason") or "").strip() or "no reason", slots)
    if (
        lac.max_width is None
        and lac.min_width == 0  # [-min.N-] (atLeast alone) has a readable least width
        and (el.get("extent") or "").strip() != "unknown"
    ):
        return _Plan("context", "width unreadable", slots)
    return _Plan("fill", slots=slots)


@dataclass
class Piece:
    """One call of the decoder: ``text`` (Leiden, dots below removed), and for each of its
    lacunae in order the index of its :class:`GapOutcome` (``None`` for a lacuna the reader
    made of other markup); ``fill``: the outcomes among them to fill; ``reading``: the text's
    one :class:`~stoicheia.inference.restore.Reading`, handed to the decoder (or the
    :class:`~stoicheia.inference.restore.RestoreError` the text gave, said for its gaps)."""

    text: str
    lacunae: list[int | None]
    fill: list[int]
    reading: Any = None


def _reading(text: str, opts: dict[str, Any], window: int) -> Any:
    """The :class:`~stoicheia.inference.restore.Reading` of a piece's ``text``, made with the
    options the decoder is given, or the ``RestoreError`` it raises."""
    from stoicheia.inference.restore import RestoreError, read_input

    try:
        return read_input(text, **opts, max_slots=window, limit_why="the model's window")
    except RestoreError as err:
        return err


@dataclass
class EpiDocPlan:
    """What :func:`~.restore.restore_epidoc` will do with a file, decided before any model runs
    (:func:`plan_epidoc`): ``gaps`` one :class:`GapOutcome` per ``<gap>`` (``"left"`` with its
    reason, or ``"refused"`` until a piece restores it), ``pieces`` the decoder's calls, in
    order; ``to_fill`` the gaps to fill. ``data``/``doc``/``spans``/``gap_spans``: the bytes,
    the parsed tree, every element's byte span and each gap's."""

    source: str
    data: bytes
    doc: Any
    spans: dict[Any, ElementSpan]
    gaps: list[GapOutcome]
    gap_spans: dict[int, ElementSpan]
    pieces: list[Piece]

    @property
    def to_fill(self) -> int:
        """Gaps the pieces are to fill."""
        return sum(len(p.fill) for p in self.pieces)


def plan_epidoc(
    path_or_xml: str | bytes | Path,
    *,
    window: int = 512,
    unknown_width: int = 20,
    about_margin: float = 0.25,
) -> EpiDocPlan:
    """Read an EpiDoc file and plan its restoration (module docstring): each gap's fate, and
    the pieces of the Greek edition the decoder is given, each at most ``window`` slots where
    a word break allows (:mod:`.pieces`). No model runs.
    Linear in the size of the file. ``path_or_xml``, ``unknown_width``, ``about_margin``: as
    for :func:`~.restore.restore_epidoc`; ``window``: the slots the model sees at once.

    Raises :class:`~.outcomes.EpiDocRestoreError` as :func:`~.restore.restore_epidoc` does (a
    file it refuses)."""
    return plan_edition(
        read_edition(path_or_xml),
        window=window,
        unknown_width=unknown_width,
        about_margin=about_margin,
    )


def plan_edition(
    edition: Edition,
    *,
    window: int,
    unknown_width: int,
    about_margin: float,
) -> EpiDocPlan:
    """:func:`plan_epidoc` for an edition already read (:func:`~.edition.read_edition`)."""
    spans = edition.spans
    opts = {"unknown_width": unknown_width, "about_margin": about_margin}
    outcomes: list[GapOutcome] = []
    gap_spans: dict[int, ElementSpan] = {}
    out: list[Piece] = []
    for unit in edition.units:
        plans: list[_Plan] = []
        owner: list[int | None] = []  # lacuna of the unit -> its outcome
        for el, lac in zip(unit.elements, unit.lacunae, strict=True):
            notation = unit.text[lac.start - 1 : lac.end + 1]
            plan = _plan(el, lac, opts, window)
            plans.append(plan)
            if el is None:
                owner.append(None)
                continue
            sp = spans[el]
            owner.append(len(outcomes))
            gap_spans[len(outcomes)] = sp
            outcomes.append(
                GapOutcome(
                    len(outcomes),
                    el.sourceline or 0,
                    sp.start,
                    sp.end,
                    notation.strip(),
                    "left" if plan.kind != "fill" else "refused",
                    plan.reason,
                )
            )
        # the parts between the cuts, each with its lacunae (indices into this unit)
        parts: list[tuple[int, int, list[int]]] = []
        a, members = 0, []
        for k, (lac, plan) in enumerate(zip(unit.lacunae, plans, strict=True)):
            if plan.kind == "cut":
                parts.append((a, lac.start - 1, members))
                a, members = lac.end + 1, []
            else:
                members.append(k)
        parts.append((a, len(unit.text), members))
        for lo, hi, members in parts:
            if not any(plans[k].kind == "fill" for k in members):
                continue
            # a part longer than the window is restored piece by piece (.pieces)
            lacs = {unit.lacunae[k].start: (unit.lacunae[k].end, plans[k].slots) for k in members}
            at = 0  # members are in text order: the first one not yet in a piece
            for a, b in pieces(unit.text, lo, hi, lacs, window):
                inside = []
                while at < len(members) and unit.lacunae[members[at]].start < b:
                    inside.append(members[at])
                    at += 1
                fill = [owner[k] for k in inside if plans[k].kind == "fill"]
                if fill:
                    text = _strip_dots(unit.text[a:b]).strip()
                    lacunae = [owner[k] for k in inside]
                    out.append(Piece(text, lacunae, fill, _reading(text, opts, window)))  # type: ignore[arg-type]
    return EpiDocPlan(edition.name, edition.data, edition.doc, spans, outcomes, gap_spans, out)
