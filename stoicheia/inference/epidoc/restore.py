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
from pathlib import Path
from typing import Any

from stoicheia.inference.epidoc.edition import read_edition
from stoicheia.inference.epidoc.outcomes import EpiDocResult, GapOutcome, Readings
from stoicheia.inference.epidoc.plan import Piece, plan_edition
from stoicheia.inference.epidoc.write_back import write_restorations

__all__ = ["gap_readings", "restore_epidoc"]


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
    **options: Any,
) -> None:
    """Decode one :class:`Piece` (its reading, made when it was planned: the piece is parsed
    once) and record what became of each of its gaps to fill in ``outcomes`` (the reason of a
    refusal, or the readings) and ``fills``."""
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
        o.status, o.reason = "restored", ""
        o.fill, o.prob = readings[0]
        o.alternatives = readings[1:]
        fills[o.index] = (readings[0][0], readings[0][1], readings[1:])


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
    on_step: Callable[[], None] | None = None,
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
    after each piece (a large file reports as it goes). ``on_step``: called after every
    forward pass of the decoder (the server's cancel check: an exception raised there stops
    the restoration and is raised to the caller).

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
    fills: dict[int, Readings] = {}  # outcome index -> reading
    done = 0
    if progress is not None and plan.to_fill:
        progress(0, plan.to_fill)
    for piece in plan.pieces:
        _restore_piece(
            loaded,
            piece,
            outcomes,
            fills,
            restore,
            RestoreError,
            top_k=top_k,
            beam=beam,
            unknown_width=unknown_width,
            about_margin=about_margin,
            window=window,
            progress=(lambda done, total: on_step()) if on_step is not None else None,
        )
        done += len(piece.fill)
        if progress is not None:
            progress(done, plan.to_fill)
    if not fills:
        return EpiDocResult(plan.source, plan.data, outcomes)
    return EpiDocResult(plan.source, write_restorations(plan, fills, loaded, top_k, when), outcomes)
