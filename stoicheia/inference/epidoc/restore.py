"""Restore the lacunae of an EpiDoc file: :func:`restore_epidoc` (``stoicheia restore
--epidoc``).

The file is read and planned first (:mod:`.edition`, :mod:`.plan`: a file it refuses is said
before a model is loaded), then each piece is decoded by
:func:`stoicheia.inference.restore.restore`, the decoder of the text form, on the Leiden text of
the piece (the whole edition, or a stretch between lost lines, cut at word breaks where it is
longer than the model's window), and the readings are written back (:mod:`.write_back`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stoicheia.inference.epidoc.edition import read_edition
from stoicheia.inference.epidoc.outcomes import EpiDocResult, GapOutcome, Readings
from stoicheia.inference.epidoc.plan import Piece, plan_edition
from stoicheia.inference.epidoc.write_back import write_restorations

__all__ = ["Floors", "default_floors", "gap_readings", "restore_epidoc"]


@dataclass(frozen=True)
class Floors:
    """The confidence floors of ``restore --epidoc`` (probabilities in [0, 1]): ``known`` for a
    gap of known or approximate width, ``unknown`` for one of unknown extent (``[---]``:
    ``extent="unknown"``, a lost line, a width given in cm), whose fills must also guess their
    length and are right less often at the same probability."""

    known: float = 0.0
    unknown: float = 0.0

    def of(self, notation: str) -> float:
        """The floor of a gap written ``notation`` in Leiden (``[---]``: unknown extent)."""
        return self.unknown if "---" in notation else self.known

    def writes(self, notation: str, prob: float) -> bool:
        """Whether a reading of probability ``prob`` is written into a gap written ``notation``:
        at least its floor, and a floor of 1 writes none (every reading proposed; a decoder
        with one candidate gives it 1)."""
        floor = self.of(notation)
        return prob >= floor and floor < 1.0

    def describe(self) -> str:
        """``0.35``, or ``0.35 (0.5 for gaps of unknown extent)`` where the two differ."""
        if self.unknown == self.known:
            return f"{self.known:g}"
        return f"{self.known:g} ({self.unknown:g} for gaps of unknown extent)"


def gap_readings(result: Any, j: int) -> list[tuple[str, float]]:
    """Readings of gap ``j`` of a :class:`~stoicheia.inference.restore.RestoreResult`, the one to
    write first: ``[(letters as printed, probability)]``.

    The adapter between the decoder's result and the EpiDoc writer, kept in one place: the
    gap's fill in the best restoration (``Gap.fill``, with the accents, breathings and word
    breaks the model printed), then its other alternatives (``Gap.alternatives``), each with the
    probability the decoder gives it (the one ``restore`` prints and the page shows). The first
    alternative is the fill itself (one search decides both); its probability is the fill's.
    """
    g = result.gaps[j]
    alts = list(g.alternatives)
    first = alts[0].prob if alts else 1.0
    rest = [(a.fill, float(a.prob)) for a in alts[1:] if a.fill != g.fill]
    return [(g.fill, float(first)), *rest]


def _restore_piece(
    loaded: Any,
    piece: Piece,
    outcomes: list[GapOutcome],
    fills: dict[int, Readings],
    restore: Any,
    restore_error: type,
    proposals: dict[int, Readings] | None = None,
    sources: dict[int, list[str]] | None = None,
    floors: Floors | None = None,
    **options: Any,
) -> None:
    """Decode one :class:`Piece` (its reading, made when it was planned: the piece is parsed
    once) and record what became of each of its gaps to fill in ``outcomes`` (the reason of a
    refusal, or the readings) and ``fills``; a gap whose best reading has a probability below
    its floor (``floors``, by the gap's extent) is left (its readings in ``proposals``);
    ``sources``: the parallels that carry a written reading."""
    floors = floors or Floors()
    try:
        if isinstance(piece.reading, restore_error):
            raise piece.reading
        result = restore(loaded, piece.reading or piece.text, **options)
    except restore_error as err:
        for i in piece.fill:
            outcomes[i].reason = str(err)
        return
    lac_gaps = [j for j, g in enumerate(result.gaps) if g.kind == "lacuna"]
    if len(lac_gaps) != len(piece.lacunae) or len(lac_gaps) != len(result.gaps):
        for i in piece.fill:
            outcomes[
                i
            ].reason = f"internal: {len(result.gaps)} gaps decoded for {len(piece.lacunae)} lacunae"
        return
    for j, i in enumerate(piece.lacunae):
        if i is None or i not in piece.fill:
            continue
        readings = gap_readings(result, j)
        o = outcomes[i]
        o.fill, o.prob = readings[0]
        o.alternatives = readings[1:]
        if not floors.writes(o.notation, o.prob):  # too weak: the <gap> stays, readings proposed
            floor = floors.of(o.notation)
            o.status = "left"
            # one reason for every gap so left (the summary counts gaps by reason); the gap's
            # own probability is in o.prob
            o.reason = f"below the confidence floor --min-probability {floor:g}, readings proposed"
            if proposals is not None:
                proposals[o.index] = (readings[0][0], readings[0][1], readings[1:])
            continue
        o.status, o.reason = "restored", ""
        fills[o.index] = (readings[0][0], readings[0][1], readings[1:])
        alts = result.gaps[j].alternatives
        if sources is not None and alts and alts[0].sources:
            sources[o.index] = list(alts[0].sources)


def restore_epidoc(
    model: Any,
    path_or_xml: str | bytes | Path,
    *,
    top_k: int = 5,
    beam: int | None = None,
    unknown_width: int = 20,
    about_margin: float = 0.25,
    window: int | None = None,
    when: str | None = None,
    config: Any = None,
    device: str = "auto",
    progress: Callable[[int, int], None] | None = None,
    on_step: Callable[[int, int, int, int], None] | None = None,
    min_probability: float | None = None,
    decoder: str | None = None,
) -> EpiDocResult:
    """Fill the lacunae of the Greek edition of one EpiDoc file (module docstring).

    ``model``: a :class:`~stoicheia.inference.loading.LoadedModel` or a path for
    :func:`~stoicheia.inference.loading.load_model` (``config``/``device`` passed on).
    ``path_or_xml``: a file path, or the XML itself (``bytes``, or a ``str`` starting with
    ``<``). ``top_k``, ``beam``, ``unknown_width`` (letters of an ``extent="unknown"`` gap at
    most), ``about_margin`` and ``window`` (slots) are those of
    :func:`~stoicheia.inference.restore.restore`. ``when``: the date of the ``<change>``
    (default today, UTC, ``YYYY-MM-DD``). ``progress``: called as ``progress(done, total)``
    with the gaps to fill (``total``) and those decided so far, once before decoding and
    after each piece (a large file reports as it goes). ``on_step``: called as
    ``on_step(done, total, piece, pieces)`` after every forward pass of the decoder, with the
    passes done and planned of the piece being decoded (``restore``'s ``progress`` count), that
    piece (from 1) and the pieces of the file (the server's progress bar and cancel check: an
    exception raised there stops the restoration and is raised to the caller).
    ``min_probability``: the confidence floor in [0, 1], for every gap (None: ``fusion.json``'s
    floors, :func:`default_floors`, one for gaps of known width and one for gaps of unknown
    extent, chosen by the benchmark so that what is written is right at least half the time on
    the selection half, else 0): a gap whose best reading is less probable keeps its
    ``<gap>``, its readings written after it as proposals (``<certainty>`` entries), and counts
    as left. ``decoder``: ``restore``'s ``--decoder``
    (None: its default).

    Returns an :class:`EpiDocResult`: the restored bytes (the input bytes unchanged when no
    gap was restored) and the outcome of every gap. Raises :class:`~.outcomes.EpiDocRestoreError` (a
    ``ValueError``) for a file that is not UTF-8, malformed XML, not TEI P5, without a primary
    edition, without Greek, or without a ``<titleStmt>``; and
    :class:`~stoicheia.inference.restore.RestoreError` for an option out of range.
    """
    from stoicheia.inference.loading import LoadedModel, load_model
    from stoicheia.inference.restore import RestoreError, check_options, restore

    check_options(unknown_width=unknown_width, about_margin=about_margin, window=window)
    if top_k < 1 or (beam is not None and beam < top_k):
        raise RestoreError(f"top_k={top_k}, beam={beam}: give top_k >= 1 and beam >= top_k")
    edition = read_edition(path_or_xml)  # a file it refuses is said before a model is loaded
    loaded = (
        model if isinstance(model, LoadedModel) else load_model(model, config=config, device=device)
    )
    trained = int((loaded.config.get("data") or {}).get("seq_len") or 512)
    plan = plan_edition(
        edition, window=window or trained, unknown_width=unknown_width, about_margin=about_margin
    )
    outcomes = plan.gaps
    if min_probability is not None and not 0.0 <= min_probability <= 1.0:
        raise RestoreError(
            f"--min-probability {min_probability}: give a probability in [0, 1] (0: write all)"
        )
    floors = (
        default_floors(loaded)
        if min_probability is None
        else Floors(float(min_probability), float(min_probability))
    )
    fills: dict[int, Readings] = {}  # outcome index -> reading
    proposals: dict[int, Readings] = {}  # below the floor: proposed, not written
    sources: dict[int, list[str]] = {}
    done = 0
    if progress is not None and plan.to_fill:
        progress(0, plan.to_fill)
    for number, piece in enumerate(plan.pieces, start=1):
        ticks = _piece_ticks(on_step, number, len(plan.pieces))
        _restore_piece(
            loaded,
            piece,
            outcomes,
            fills,
            restore,
            RestoreError,
            proposals,
            sources,
            floors,
            top_k=top_k,
            beam=beam,
            unknown_width=unknown_width,
            about_margin=about_margin,
            window=window,
            progress=ticks,
            decoder=decoder,
        )
        done += len(piece.fill)
        if progress is not None:
            progress(done, plan.to_fill)
    if not fills and not proposals:
        return EpiDocResult(plan.source, plan.data, outcomes)
    xml = write_restorations(
        plan,
        fills,
        loaded,
        top_k,
        when,
        proposals=proposals,
        sources=sources,
        floor=floors.describe(),
    )
    return EpiDocResult(plan.source, xml, outcomes)


def _piece_ticks(
    on_step: Callable[[int, int, int, int], None] | None, piece: int, pieces: int
) -> Callable[[int, int], None] | None:
    """``restore``'s ``progress(done, total)`` for piece ``piece`` of ``pieces``: calls
    ``on_step(done, total, piece, pieces)`` (``None`` without an ``on_step``)."""
    if on_step is None:
        return None
    return lambda done, total: on_step(done, total, piece, pieces)


def default_floors(loaded: Any) -> Floors:
    """The confidence floors ``fusion.json`` beside the checkpoint of ``loaded`` names
    (``min_probability``, and ``min_probability_unknown`` for gaps of unknown extent, chosen by
    ``stoicheia benchmark --save-fusion``; a file without the second uses the first for both),
    else 0 for both (everything written)."""
    from stoicheia.inference.restore.fusion_file import FusionConfig, fusion_beside

    path = fusion_beside(str(getattr(loaded, "source", "")))
    if path is None:
        return Floors()
    config = FusionConfig.load(path)
    known = float(config.min_probability) if config.min_probability is not None else 0.0
    unknown = config.min_probability_unknown
    return Floors(known, float(unknown) if unknown is not None else known)
