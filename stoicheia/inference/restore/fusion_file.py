"""The letter n-gram a checkpoint is restored with: ``ngram.npz`` beside it.

``stoicheia benchmark CHECKPOINT --save-ngram`` writes ``ngram.npz`` into the checkpoint's
folder: the n-gram's counts (trained on the run's training shards) and the fusion weight that
did best on the inscription dev set (0 when the fusion did not help there). ``restore`` (the
CLI, the page, :func:`stoicheia.inference.restore.restore`) then fuses it in by default;
``--ngram PATH`` names another file, ``--ngram-weight W`` overrides the weight (0: the model
alone).

``fusion.json`` beside the checkpoint (:class:`FusionConfig`) holds the weights of the three
experts together: the n-gram's (overriding the one in ``ngram.npz``) and the parallels'
(:mod:`stoicheia.inference.parallels`), and where the parallels index is. Without it, or with a
parallels weight of 0, the parallels are found and shown but the search is today's.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from stoicheia.inference.ngram import load_ngram
from stoicheia.inference.restore.gap_search import Fusion
from stoicheia.inference.restore.gaps import RestoreError
from stoicheia.inference.run_paths import find_under_anchors, run_shards, shown

log = logging.getLogger(__name__)

#: the file name beside a checkpoint
NGRAM_FILE = "ngram.npz"
#: the fusion weights beside a checkpoint
FUSION_FILE = "fusion.json"


@dataclass
class FusionConfig:
    """The weights of the experts beside the network, stored in ``fusion.json``.

    ``ngram_weight``: the n-gram's weight in [0, 1] (``None``: the one stored in ``ngram.npz``);
    ``parallels_weight``: the parallels' interpolation weight ``v`` in [0, 1]
    (:mod:`stoicheia.inference.parallels.prior`; 0: the search is today's); ``parallels_index``:
    the index folder (``None``: the run's ``data.shard_root``/parallels, when it exists);
    ``chosen_on``: what the weights were chosen on, for the notes.
    """

    ngram_weight: float | None = None
    parallels_weight: float = 0.0
    parallels_index: str | None = None
    chosen_on: str = ""
    #: the whole readings' weights (:class:`~.whole_readings.ReadingWeights` as a dict: lam_max,
    #: half, unattested, chosen_on); None: the defaults
    readings: dict | None = None
    #: the decoder restore uses when none is asked for (``--decoder``): the one that won on
    #: the report half of the benchmark that wrote this file; None: ``fused``
    decoder: str | None = None
    #: the confidence floor of ``restore --epidoc`` and the page's EpiDoc restoration: the
    #: least probability of a reading written into an edition, chosen on the selection half so
    #: that what is written is right at least half the time
    #: (:func:`~stoicheia.inference.benchmark.floors.choose_floor`); None: 0 (everything
    #: written)
    min_probability: float | None = None
    #: the same for a gap of unknown extent (``extent="unknown"``, ``[---]``), chosen on the
    #: selection half's gaps of unknown extent; None: ``min_probability`` (a file written
    #: before the two floors)
    min_probability_unknown: float | None = None
    #: at a stone's edge, the weight (natural log, >= 0) of a parallel whose own text has an
    #: edge where the gap does (:func:`~stoicheia.inference.parallels.search.gap_parallels`),
    #: fitted on the selection half's one-sided gaps; 0: weighed like the others
    parallels_edge_gain: float = 0.0

    def __post_init__(self) -> None:
        from stoicheia.inference.restore.decoders import DECODERS
        from stoicheia.inference.restore.whole_readings import ReadingWeights

        try:
            ReadingWeights.from_json(self.readings)
        except (TypeError, ValueError) as err:
            raise RestoreError(f"{FUSION_FILE}: readings {self.readings!r}: {err}") from None
        if self.decoder is not None and self.decoder not in DECODERS:
            raise RestoreError(
                f"{FUSION_FILE}: decoder {self.decoder!r} is none of {', '.join(DECODERS)}"
            )
        for name in (
            "ngram_weight",
            "parallels_weight",
            "min_probability",
            "min_probability_unknown",
        ):
            v = getattr(self, name)
            if v is not None and not (
                isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0
            ):
                raise RestoreError(f"{FUSION_FILE}: {name} {v!r} must be a number in [0, 1]")
        g = self.parallels_edge_gain
        if not (
            isinstance(g, (int, float)) and not isinstance(g, bool) and 0.0 <= g < float("inf")
        ):
            raise RestoreError(
                f"{FUSION_FILE}: parallels_edge_gain {g!r} must be a number >= 0 (0: none)"
            )

    @classmethod
    def load(cls, path: str | Path) -> FusionConfig:
        """Read ``path``; raises :class:`RestoreError` naming the file for bad JSON or keys."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            return cls(**data)
        except (OSError, ValueError, TypeError) as err:
            raise RestoreError(
                f"{path}: not a fusion file ({err}); keys: ngram_weight, parallels_weight, "
                "parallels_index, chosen_on, readings, decoder, min_probability, "
                "min_probability_unknown, parallels_edge_gain"
            ) from None

    def save(self, path: str | Path) -> None:
        """Write ``path`` (JSON) whole or not at all: a full disk raises
        :class:`~stoicheia.publish.WriteError` and leaves the previous file, never half a one."""
        from stoicheia.publish import atomic_write

        atomic_write(path, json.dumps(asdict(self), indent=2) + "\n")


def beside(source: str) -> Path | None:
    """The ``ngram.npz`` path beside a checkpoint, a run folder or an export folder ``source``
    (a local path), else ``None`` (an object-store URI)."""
    if "://" in source:
        return None
    p = Path(source)
    return (p if p.is_dir() else p.parent) / NGRAM_FILE


def fusion_beside(source: str) -> Path | None:
    """The ``fusion.json`` beside a checkpoint, a run folder or an export folder ``source`` (a
    local path), or ``None`` when there is none (or ``source`` is an object-store URI)."""
    here = beside(source)
    path = here.with_name(FUSION_FILE) if here is not None else None
    return path if path is not None and path.is_file() else None


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int) -> tuple[Any, dict]:
    """:func:`load_ngram`, read once per file version (a page or a corpus run restores many
    texts)."""
    del mtime_ns  # part of the cache key only
    return load_ngram(path)


def find_fusion(
    loaded: Any,
    path: str | Path | None = None,
    weight: float | None = None,
    *,
    parallels: str | Path | None = None,
    parallels_weight: float | None = None,
    config: FusionConfig | None = None,
    decoder: str | None = None,
    notes: list[str] | None = None,
) -> Fusion | None:
    """The :class:`Fusion` for ``loaded`` (a :class:`~stoicheia.inference.loading.LoadedModel`):
    the n-gram file ``path`` (default :func:`beside` its source; a missing default file means no
    n-gram), at ``weight`` (default ``fusion.json``'s ``ngram_weight`` when its parallels are
    fused in, else the weight stored in the n-gram file, chosen for the n-gram alone); and the
    parallels index ``parallels`` (default ``fusion.json``'s, else the run's shards'
    ``parallels`` folder, when it exists; ``""``: none) at ``parallels_weight`` (default
    ``fusion.json``'s, else 0). ``config`` replaces ``fusion.json``. Paths of the run are found
    relative to the checkpoint, never to the current folder (:mod:`stoicheia.inference.run_paths`).
    ``decoder`` (:mod:`.decoders`; None: ``fusion.json``'s, else ``fused``) is set on the result
    as ``.decoder``: ``fused`` with an index ranks whole readings (``.readings``: fusion.json's
    weights, else the defaults; none with ``parallels_weight`` 0: the parallels shown, not
    fused); ``ngram`` and ``parallels`` load the n-gram whatever its weight (they use it
    alone); ``model`` leaves it out.

    ``notes``: where a part the restoration goes on without is said, one line each (no
    ``ngram.npz`` beside the checkpoint for a decoder that uses it; the index ``fusion.json``
    names is not there or does not open; an index built from other shards than the run's,
    which is then not used unless given as ``parallels``). Returns ``None`` for the model alone
    (no n-gram and no index). Raises :class:`RestoreError` naming the file when ``path`` or
    ``parallels`` is given and missing or unreadable, a weight is outside [0, 1], or the
    decoder is unknown."""
    from stoicheia.inference.restore.decoders import check_decoder
    from stoicheia.inference.restore.whole_readings import ReadingWeights

    if decoder is not None:
        check_decoder(decoder)
    if parallels_weight is not None and not 0.0 <= parallels_weight <= 1.0:
        raise RestoreError(
            f"--parallels-weight {parallels_weight}: give a weight in [0, 1] (0: shown, not fused)"
        )
    if weight is not None and not 0.0 <= weight <= 1.0:  # before any file is opened
        raise RestoreError(
            f"--ngram-weight {weight}: give a weight in [0, 1] (0: without the n-gram)"
        )
    said: list[str] = []
    fjson = None
    if config is None:
        fjson = fusion_beside(str(loaded.source))
        config = FusionConfig.load(fjson) if fjson is not None else FusionConfig()
    index = _open_parallels(loaded, parallels, config, fjson, said)
    pw = config.parallels_weight if parallels_weight is None else parallels_weight
    # fusion.json's n-gram weight was chosen together with its parallels weight: without the
    # parallels fused in, the n-gram's own weight (chosen for the n-gram alone) is the right one
    from_config = (
        weight is None
        and config.ngram_weight is not None
        and index is not None
        and (pw > 0 or (config.readings is not None and parallels_weight != 0.0))
    )
    if from_config:
        weight = config.ngram_weight
    # fusion.json's weight was chosen with the parallels' (their note says on what)
    how = "chosen with the parallels' weight" if config.chosen_on else "from fusion.json"
    decoder = decoder or config.decoder or "fused"
    if decoder in ("ngram", "parallels") and not weight:
        weight = 1.0  # the n-gram decodes alone (or backs the parallels off): its weight unused
    fusion = (
        None
        if decoder == "model"
        else _ngram_fusion(loaded, path, weight, how if from_config else None)
    )
    missing = beside(str(loaded.source))
    no_ngram = (
        decoder != "model"
        and path is None
        and weight != 0.0
        and missing is not None
        and not missing.exists()
    )

    def said_with(found: Fusion | None) -> Fusion | None:
        """``found``, its notes handed to ``notes`` (the n-gram's says what is fused)."""
        if no_ngram:
            said.append(without_ngram_note(found, weight))
        if notes is not None:
            notes.extend(n for n in dict.fromkeys(said) if n not in notes)
        return found

    if index is None:
        if fusion is not None:
            fusion.decoder = decoder
        return said_with(fusion)
    out = fusion or Fusion(None, 0.0)
    out.decoder = decoder
    out.parallels = index
    out.parallels_weight = float(pw) if decoder == "fused" else 0.0
    out.edge_gain = float(config.parallels_edge_gain)
    if out.edge_gain:
        out.parallels_source += (
            f"; at a stone's edge a parallel at its own text's edge weighs e^{out.edge_gain:g}"
        )
    chosen = config.chosen_on and parallels_weight is None
    out.parallels_source = f"{shown(index.folder, str(loaded.source))}, weight " + (
        "chosen on " + config.chosen_on if chosen else "given"
    )
    if decoder == "fused" and parallels_weight != 0.0:
        out.readings = ReadingWeights.from_json(config.readings) or ReadingWeights()
        r = out.readings
        # said once: the readings' weights are chosen with the parallels' on the same gaps
        said_above = chosen and bool(r.chosen_on) and r.chosen_on in (config.chosen_on or "")
        how = (
            ""
            if said_above
            else f" (chosen on {r.chosen_on})"
            if r.chosen_on
            else " (the defaults)"
        )
        out.parallels_source += (
            f"; whole readings at λ_max {r.lam_max:g}, half-evidence {r.half:g}, "
            + (f"unattested words −{r.unattested:g}" if r.unattested else "unattested words kept")
            + (f", the network judging whole fills at {r.judge:g}" if r.judge else "")
            + (", ranked by the fitted ranker" if r.ranker else "")
            + how
        )
    return said_with(out)


def without_ngram_note(fusion: Any, ngram_weight: float | None) -> str:
    """The note of a restoration decoded without the letter n-gram: asked for (``ngram_weight``
    0) or none beside the checkpoint. ``fusion``: the search's
    :class:`~stoicheia.inference.restore.gap_search.Fusion` or ``None``; "the model alone" only
    when no parallels are fused in either."""
    # the parallels count as used where they rank the fills: fused at a weight, weighed as
    # whole readings, or listed first by the parallels decoder (not merely listed at weight 0)
    par = (
        fusion is not None
        and fusion.parallels is not None
        and (
            fusion.parallels_weight > 0
            or getattr(fusion, "decoder", None) == "parallels"
            or getattr(fusion, "readings", None) is not None
        )
    )
    what = "the network and the parallels" if par else "the model alone"
    if ngram_weight == 0:
        return f"{what}, without the letter n-gram: --ngram-weight 0" + (
            "; with --parallels-weight 0 too, the model alone" if par else ""
        )
    return (
        f"{what}: no {NGRAM_FILE} beside the checkpoint; `stoicheia benchmark CHECKPOINT "
        "--save-fusion` writes one, which restore then fuses in"
    )


def _open_parallels(
    loaded: Any,
    given: str | Path | None,
    config: FusionConfig,
    fjson: Path | None,
    notes: list[str],
) -> Any:
    """The :class:`~stoicheia.inference.parallels.ParallelsIndex` to use, or ``None`` (what the
    restoration goes on without is said in ``notes``): ``given`` (``--parallels``: refused with
    :class:`RestoreError` when it does not open), else the index ``fusion.json`` names (relative
    to its folder; an older absolute path found again under the checkpoint's folders), else the
    run's ``data.shard_root``/parallels. An index whose provenance differs from the run's shards
    is said, and not used unless ``given``."""
    from stoicheia.data.parallels_layout import INDEX_DIR
    from stoicheia.inference.parallels.index import IndexError_, open_index

    source = str(loaded.source)
    config_data = getattr(loaded, "config", None) or {}
    if given is not None and str(given) == "":
        return None
    if given is not None:
        try:
            index = open_index(str(given))
        except (IndexError_, OSError, ValueError) as err:
            raise RestoreError(str(err)) from None
        _provenance(index, config_data, source, notes, given=True)
        return index
    if config.parallels_index:
        named = config.parallels_index
        where = Path(named)
        if not where.is_absolute() and fjson is not None:  # relative to fusion.json's folder
            where = Path(os.path.normpath(fjson.parent.absolute() / named))
        found = find_under_anchors(where, source, lambda p: (p / "manifest.json").is_file())
        if found is None:
            notes.append(
                f"no parallels: the index {FUSION_FILE} names ({_shown_named(named)}) is not "
                "there (the run folder moved, or the index was deleted); give --parallels DIR, "
                f"or build it with `stoicheia index SHARDS_DIR`"
            )
            return None
        try:
            index = open_index(str(found))
        except (IndexError_, OSError, ValueError) as err:
            notes.append(
                f"no parallels: the index {FUSION_FILE} names ({shown(found, source)}) does not "
                f"open ({_without_folder(str(err), found)}); rebuild it with "
                "`stoicheia index SHARDS_DIR`"
            )
            return None
        return index if _provenance(index, config_data, source, notes) else None
    root, shards = run_shards(config_data, source)
    if root is None:
        return None
    if shards is None or not (shards / INDEX_DIR / "manifest.json").exists():
        from stoicheia.inference.shipped import is_shipped, missing_index_note

        if is_shipped(source):  # the index cannot ship: one command builds it, once
            notes.append(missing_index_note())
            return None
        notes.append(
            f"no parallels: no index of the run's shards ({root}/{INDEX_DIR}) found from the "
            "checkpoint's folder; give --parallels DIR, or build it with `stoicheia index "
            "SHARDS_DIR`"
        )
        return None
    folder = shards / INDEX_DIR
    try:
        index = open_index(str(folder))
    except (IndexError_, OSError, ValueError) as err:
        notes.append(
            f"no parallels: the run's index ({shown(folder, source)}) does not open "
            f"({_without_folder(str(err), folder)}); rebuild it with `stoicheia index {root}`"
        )
        return None
    return index if _provenance(index, config_data, source, notes) else None


def _provenance(
    index: Any, config: dict, source: str, notes: list[str], given: bool = False
) -> bool:
    """Whether ``index`` may be used for the checkpoint ``source`` (its run's ``config``): an
    index built from other shards than the run's (:func:`~stoicheia.data.parallels_layout.
    same_shards`) is said in ``notes`` and refused, unless ``given`` (used, and said)."""
    from stoicheia.data.parallels_layout import same_shards, short

    root, shards = run_shards(config, source)
    if shards is None:
        return True  # the run's shards are not here: nothing to compare with
    same = same_shards(index.manifest, shards)
    if same is None or same:
        return True
    from stoicheia.data.parallels_layout import shards_provenance

    built = (index.manifest.get("shards") or {}).get("fingerprint")
    run = shards_provenance(shards)["fingerprint"]
    what = (
        f"the parallels index {shown(index.folder, source)} was built from other shards "
        f"({short(built)}) than the checkpoint's run was trained on ({root}: {short(run)})"
    )
    if given:
        notes.append(f"{what}: used as given (--parallels)")
        return True
    notes.append(
        f"no parallels: {what}, so it is not used; rebuild it with `stoicheia index {root}`, or "
        "give it with --parallels DIR to use it anyway"
    )
    return False


def _shown_named(named: str) -> str:
    """A path ``fusion.json`` names, for a note: relative as stored, else its last parts only
    (never the whole absolute path of a server)."""
    p = Path(named)
    return named if not p.is_absolute() else str(Path(*p.parts[-3:]))


def _without_folder(message: str, folder: Path) -> str:
    """An index error's message without the absolute folder it names (notes go to the page)."""
    return message.replace(str(folder), folder.name)


def _ngram_fusion(
    loaded: Any, path: str | Path | None = None, weight: float | None = None, how: str | None = None
) -> Fusion | None:
    """The n-gram part of :func:`find_fusion` (its behaviour before the parallels); ``how``:
    where ``weight`` came from, for the note (default: given, or the file's own); ``weight``
    already checked to be in [0, 1]."""
    if weight == 0.0:
        return None
    chosen = Path(path) if path is not None else beside(str(loaded.source))
    if chosen is None or not chosen.exists():
        if path is not None:
            raise RestoreError(
                f"{path}: no such n-gram file; "
                "write one with `stoicheia benchmark CHECKPOINT --save-fusion`"
            )
        return None
    try:
        ngram, meta = _load(str(chosen.resolve()), chosen.stat().st_mtime_ns)
    except ValueError as err:
        raise RestoreError(str(err)) from None
    w = float(meta.get("weight", 0.0)) if weight is None else weight
    if w <= 0.0:
        return None
    fusion = Fusion(ngram, w)
    if how is None:
        how = (
            "chosen on " + meta["chosen_on"] if "chosen_on" in meta and weight is None else "given"
        )
    fusion.source = f"{chosen.name}, weight {how}"
    return fusion


__all__ = [
    "FUSION_FILE",
    "NGRAM_FILE",
    "FusionConfig",
    "beside",
    "find_fusion",
    "fusion_beside",
    "without_ngram_note",
]
