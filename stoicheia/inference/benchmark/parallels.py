"""The parallels in the benchmark: a ``parallels`` row and a ``fused3`` family.

With a parallels index (:mod:`stoicheia.inference.parallels`, built beside the shards by
``stoicheia convert`` or ``stoicheia index``), ``stoicheia benchmark`` adds two decoders to the
model, the n-gram and ``fused``:

* ``parallels``: the parallels alone (:class:`ParallelsDecoder`). The gap's fills by their
  share of the weights the two-sided search of
  :func:`~stoicheia.inference.parallels.gap_parallels` gives them (ties in its order: context
  matched, then independent sources, then tier), as ``restore`` prints them; where they run
  out (nothing long enough matched, or fewer than ``k`` fills) the n-gram's candidates
  follow, so a gap without a parallel is the n-gram's (the back-off of issue 22). Its
  probability is the first fill's share of the fills' weights (``FillParallels.prob``), or
  the n-gram's when no fill was found.
* ``fused3``: the network, the n-gram and the parallels in one search
  (:func:`~stoicheia.inference.restore.gap_search.search_gap` with the parallels'
  :class:`~stoicheia.inference.parallels.prior.FillPrior`), a
  :class:`~.fusion.FusedFamily` with two axes, ``ngram`` and ``parallels``, whose
  point is chosen on the selection half only (:func:`~.fusion.sweep_family`).

The context both read is the one ``restore`` reads
(:func:`~stoicheia.inference.restore.parallels_fusion.parallel_context`: at most 64 letters a
side, cut at another lacuna or an uncertain letter); the gap's parallels do not depend on the
weights, so they are searched once per gap (:meth:`ParallelsCache.found`) and shared by the
row, every point of the sweep and the chosen ``fused3``.

:func:`best_fused` picks, among the fused decoders, the one ``restore`` should use (the best
mean top-1 over the protocols on the selection half, then the lowest CER, then the simpler:
``fused`` before ``fused3``); :func:`fusion_config` turns it into the
:class:`~stoicheia.inference.restore.fusion_file.FusionConfig` written beside the checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# the fused3 grid's default weights (kept where --help reads them without NumPy)
from stoicheia.inference.benchmark.defaults import (
    EDGE_GAINS,
    FUSED3_NGRAM_WEIGHTS,
    FUSED3_PARALLELS_WEIGHTS,
)
from stoicheia.inference.benchmark.floors import choose_floors
from stoicheia.inference.benchmark.fusion import FusedFamily
from stoicheia.inference.benchmark.protocols import Task


@dataclass
class ParallelsCache:
    """The parallels of each task's target gap, searched once. ``model_decoder``: the
    benchmark's :class:`~stoicheia.inference.benchmark.run.ModelDecoder` (its parse of the task);
    ``index``: a :class:`~stoicheia.inference.parallels.ParallelsIndex`."""

    model_decoder: Any
    index: Any
    cache: dict = field(default_factory=dict)
    #: the weight (natural log) of a parallel meeting its own text's edge at a stone's edge
    #: (:func:`fit_edge_gain` sets it; ``fusion.json``'s ``parallels_edge_gain``)
    edge_gain: float = 0.0

    def found(self, task: Task) -> Any:
        """The :class:`~stoicheia.inference.parallels.search.GapParallels` of ``task``'s target
        (``prior`` unset) at :attr:`edge_gain`, as ``restore`` finds them with that gain.
        Raises ``ValueError`` where the task's notation cannot be read."""
        from stoicheia.inference.restore.gap_search import Fusion
        from stoicheia.inference.restore.parallels_fusion import gap_parallels_for

        key = (task.protocol, task.text_id, task.start, task.input)
        if key not in self.cache:
            items, gaps, g = self.model_decoder.parsed(task)
            self.cache[key] = gap_parallels_for(
                Fusion(None, 0.0, self.index, 0.0), items, gaps, {}, g
            )
        if not self.edge_gain:
            return self.cache[key]
        at = (key, self.edge_gain)
        if at not in self.cache:  # searched at gain 0 once, reweighted (as the search does)
            self.cache[at] = self.cache[key].reweighted(self.edge_gain)
        return self.cache[at]


@dataclass
class ParallelsDecoder:
    """The parallels alone, backing off to ``ngram`` (module docstring). ``ngram``: a
    :class:`~stoicheia.inference.benchmark.run.NgramDecoder` or ``None`` (no back-off: a gap
    without a parallel has no candidate); ``k``: candidates returned."""

    parallels: ParallelsCache
    ngram: Any = None
    k: int = 20

    def __call__(self, task: Task) -> tuple[list[str], float]:
        """The task's candidates by ``restore --decoder parallels``
        (:func:`~stoicheia.inference.restore.decoders.gap_candidates`)."""
        from stoicheia.inference.restore.decoders import gap_candidates
        from stoicheia.inference.restore.gap_search import Fusion

        found = self.parallels.found(task)
        items, gaps, g = self.parallels.model_decoder.parsed(task)
        ngram = self.ngram.ngram if self.ngram is not None else None
        fusion = Fusion(ngram, 1.0 if ngram is not None else 0.0, self.parallels.index, 0.0)
        cands = gap_candidates("parallels", None, items, gaps, {}, g, self.k, fusion, found=found)
        return [c.text() for c in cands], cands[0].prob if cands else 0.0


def fused3_family(
    model_decoder: Any,
    ngram: Any,
    parallels: ParallelsCache,
    ngram_weights: tuple[float, ...] = FUSED3_NGRAM_WEIGHTS,
    parallels_weights: tuple[float, ...] = FUSED3_PARALLELS_WEIGHTS,
) -> FusedFamily:
    """``fused3``: the model's search with ``ngram`` (a
    :class:`~stoicheia.inference.ngram.LetterNgram`) and the parallels of ``parallels`` fused in,
    over the axes ``ngram`` and ``parallels`` (weights in [0, 1]; module docstring)."""
    from stoicheia.inference.restore.gap_search import Fusion

    def make(weights: dict[str, float]):
        fusion = Fusion(ngram, weights["ngram"], parallels.index, weights["parallels"])
        return model_decoder.with_fusion(fusion, parallels)

    return FusedFamily(
        "fused3", {"ngram": tuple(ngram_weights), "parallels": tuple(parallels_weights)}, make
    )


def readings_family(
    model_decoder: Any,
    ngram: Any,
    parallels: ParallelsCache,
    ngram_weights: tuple[float, ...],
    grid: dict[str, tuple[float, ...]] | None = None,
    ranker: bool = True,
) -> FusedFamily:
    """``fused`` with a parallels index: ``restore --decoder fused``, the whole readings
    (:mod:`stoicheia.inference.restore.whole_readings`), over the axes ``ngram`` (the n-gram's
    weight in the search) and the mixture's ``lam_max``, ``half``, ``unattested`` and
    ``judge`` (the network's weight as a judge of whole fills; ``grid``, default
    :data:`~.defaults.READINGS_GRID`; a grid without ``judge`` leaves it at 0). This is the
    fit of the whole readings' weights: the point is chosen on the selection half only
    (:func:`~.fusion.sweep_family`); each gap's search and its candidates are made once per
    n-gram weight and re-ranked at every other point (:meth:`ModelDecoder.__call__`), so the
    grid costs little beyond the n-gram axis. With ``ranker``, the ranker is then fitted at
    the chosen point (:func:`fit_readings_ranker`), again on the selection half only."""
    from stoicheia.inference.benchmark.defaults import READINGS_GRID
    from stoicheia.inference.restore.gap_search import Fusion
    from stoicheia.inference.restore.whole_readings import ReadingWeights

    grid = dict(grid or READINGS_GRID)

    def make(weights: dict[str, float], coef: dict[str, float] | None = None):
        fusion = Fusion(ngram, weights["ngram"], parallels.index, 0.0)
        fusion.readings = ReadingWeights(
            weights["lam_max"],
            weights["half"],
            weights["unattested"],
            judge=weights.get("judge", 0.0),
            ranker=coef,
        )
        return model_decoder.with_fusion(fusion, parallels)

    def refine(chosen: dict[str, float], selection: dict[str, list[Task]]):
        return fit_readings_ranker(make, chosen, selection)

    return FusedFamily(
        "fused", {"ngram": tuple(ngram_weights), **grid}, make, refine if ranker else None
    )


def fit_readings_ranker(
    make: Any, chosen: dict[str, float], selection: dict[str, list[Task]]
) -> tuple[Any, dict] | None:
    """The whole readings' ranker (:mod:`stoicheia.inference.restore.reading_ranker`) fitted on
    the ``selection`` tasks at the ``chosen`` weights, one per kind of gap
    (:data:`~stoicheia.inference.restore.reading_ranker.KINDS`; :func:`~.ranker_fit.
    fit_ranker`), and the decoder ``make(chosen, ranker)`` that ranks with it, with ``{"kinds":
    {kind: {"coef", "gaps", "truth_among", "log_likelihood", "steps", "selection_top1":
    {"mixture", "ranker"}, "kept"}}, "coef": {kind: coef}}``. A kind's ranker is kept only
    where it is ahead of the mixture in top-1 on that kind's selection gaps; None (the mixture
    kept for all) where no kind's is."""
    from stoicheia.inference.benchmark.ranker_fit import (
        choice_rows,
        fit_ranker,
        top1_share,
        truth_index,
    )
    from stoicheia.inference.restore.reading_ranker import KINDS, ranked_probabilities

    decoder = make(chosen)
    weights = decoder.fusion.readings
    by_kind: dict[str, list] = {k: [] for k in KINDS}
    for tasks in selection.values():
        for task in tasks:
            case = decoder.case(task)
            if len(case.letters):
                m = case.mixture(weights)
                by_kind[case.kind].append((case, m, truth_index(case, task.truth)))
    kinds: dict[str, dict] = {}
    for kind, cases in by_kind.items():
        if not cases:
            continue
        coef, figures = fit_ranker([choice_rows(c, m, t) for c, m, t in cases])
        ranker = {kind: coef}
        figures["selection_top1"] = {
            "mixture": top1_share((m, t) for _, m, t in cases),
            "ranker": top1_share((ranked_probabilities(ranker, c, m), t) for c, m, t in cases),
        }
        figures["kept"] = figures["selection_top1"]["ranker"] > figures["selection_top1"]["mixture"]
        figures["coef"] = coef
        kinds[kind] = figures
    kept = {k: f["coef"] for k, f in kinds.items() if f["kept"]}
    if not kept:
        return None
    return make(chosen, kept), {"kinds": kinds, "coef": kept}


def fit_edge_gain(
    parallels: ParallelsCache,
    decoder: Any,
    selection: dict[str, list[Task]],
    gains: tuple[float, ...] = EDGE_GAINS,
) -> dict:
    """Fit the weight of a parallel that meets its own text's edge at a stone's edge
    (:func:`~stoicheia.inference.parallels.search.gap_parallels`' ``edge_gain``) on the
    **selection** half's gaps with text on one side only (``selection``: ``{protocol:
    [Task]}``, the selection half alone): ``decoder`` (the ``parallels`` row,
    :class:`ParallelsDecoder` on ``parallels``) restores them at each of ``gains``, and the
    gain with the best top-1, then the most lengths right, then the smallest, is kept in
    ``parallels.edge_gain`` for every decoder after it. Without such a gap the gain stays 0.
    Returns ``{"gains": [g], "figures": {g: {"gaps", "top1", "length_right"}}, "chosen": g,
    "chosen_on": "..."}``."""
    from stoicheia.inference.benchmark.run import run_tasks

    edge = {}
    for protocol, ts in selection.items():
        kept = []
        for t in ts:
            try:
                items, gaps, g = parallels.model_decoder.parsed(t)
            except ValueError:
                continue  # the decoders count it as failed; nothing to fit on
            if gaps[g].one_sided is not None:
                kept.append(t)
        if kept:
            edge[protocol] = kept
    n = sum(len(ts) for ts in edge.values())
    figures: dict[str, dict] = {}
    if n:
        for gain in gains:
            parallels.edge_gain = float(gain)
            res = run_tasks({"parallels": decoder}, edge)
            rows = [r for p in res.values() for r in p["examples"]]
            figures[f"{gain:g}"] = {
                "gaps": n,
                "top1": sum(r["parallels"]["rank"] == 1 for r in rows) / n,
                "length_right": sum(
                    r["parallels"]["top1"] is not None
                    and len(r["parallels"]["top1"]) == len(r["truth"])
                    for r in rows
                )
                / n,
            }

    def key(g: float) -> tuple:
        f = figures[f"{g:g}"]
        return (round(f["top1"], 9), round(f["length_right"], 9), -g)

    chosen = max(gains, key=key) if figures else 0.0
    parallels.edge_gain = float(chosen)
    inscriptions = len({t.text_id.split("#", 1)[0] for ts in edge.values() for t in ts})
    return {
        "gains": [float(g) for g in gains],
        "figures": figures,
        "chosen": float(chosen),
        "chosen_on": f"{n:,} gaps with text on one side only of the selection half "
        f"({inscriptions:,} inscriptions)",
    }


def best_fused(fusion: dict[str, dict]) -> str | None:
    """The fused decoder ``restore`` should use, among ``fusion`` (a benchmark result's
    ``fusion``: ``{name: {"sweep", "chosen", ...}}``): the best mean top-1 over the protocols of
    its chosen point on the selection half, then the lowest mean CER, then the order given
    (``fused`` before ``fused3``). ``None`` for no fused decoder."""

    def key(item: tuple[int, str]) -> tuple:
        i, name = item
        fam = fusion[name]
        entry = next(e for e in fam["sweep"] if e["weights"] == fam["chosen"])
        figs = [f for f in entry["figures"].values() if "top1" in f]
        top1 = sum(f["top1"] for f in figs) / max(len(figs), 1)
        cer = sum(f["cer"] for f in figs) / max(len(figs), 1)
        return (round(top1, 9), -round(cer, 9), -i)

    names = list(enumerate(fusion))
    return max(names, key=key)[1] if names else None


def fusion_config(
    result: dict, index_folder: str | Path | None, beside: str | Path | None = None
) -> Any:
    """The :class:`~stoicheia.inference.restore.fusion_file.FusionConfig` of a benchmark result:
    the weights of :func:`best_fused` (no fused decoder: the model alone, n-gram weight 0), the
    index folder (relative to ``beside``, the folder ``fusion.json`` is written to, so that the
    run folder can move with it; absolute when ``beside`` is ``None``; ``None`` without an
    index) and what they were chosen on."""
    from stoicheia.inference.restore.fusion_file import FusionConfig
    from stoicheia.inference.run_paths import stored

    fusion = result.get("fusion") or {}
    name = best_fused(fusion)
    if name is None:
        return FusionConfig(0.0, 0.0, None, "no fusion weights tried")
    chosen = fusion[name]["chosen"]
    point = ", ".join(f"{k} {v:g}" for k, v in chosen.items())
    on = f"{name} ({point}), {fusion[name]['chosen_on']}"
    readings = None
    if "lam_max" in chosen:  # the whole readings (readings_family)
        readings = {
            "lam_max": float(chosen["lam_max"]),
            "half": float(chosen["half"]),
            "unattested": float(chosen["unattested"]),
            "judge": float(chosen.get("judge", 0.0)),
            "chosen_on": fusion[name]["chosen_on"],
        }
        if fusion[name].get("ranker"):  # fitted at the chosen point (fit_readings_ranker)
            readings["ranker"] = {k: dict(c) for k, c in fusion[name]["ranker"]["coef"].items()}
    winner = report_winner(result)
    floors = choose_floors(result, winner or "fused")
    return FusionConfig(
        ngram_weight=float(chosen.get("ngram", 0.0)),
        parallels_weight=float(chosen.get("parallels", 0.0)),
        parallels_index=(
            None
            if not index_folder
            else stored(index_folder, beside)
            if beside is not None
            else str(Path(index_folder).resolve())
        ),
        chosen_on=on,
        readings=readings,
        decoder=winner,
        min_probability=floors["known"],
        min_probability_unknown=floors["unknown"],
        parallels_edge_gain=float(
            ((result.get("fits") or {}).get("parallels_edge") or {}).get("chosen", 0.0)
        ),
    )


def report_winner(result: dict) -> str | None:
    """The decoder ``restore`` uses by default: of the rows ``restore --decoder`` offers
    (``fused``, ``parallels``, ``ngram``, ``model``), the best mean top-1 over the protocols
    on the report half (then the lowest mean CER, then that order). None when the result has
    no report-half view."""
    from stoicheia.inference.restore.decoders import DECODERS

    scores = {}
    for name in DECODERS:
        figs = []
        for res in (result.get("protocols") or {}).values():
            view = ((res.get("views") or {}).get("report") or {}).get("decoders", {}).get(name)
            if view and "top1" in view:
                figs.append(view)
        if figs:
            scores[name] = (
                round(sum(f["top1"] for f in figs) / len(figs), 9),
                -round(sum(f["cer"] for f in figs) / len(figs), 9),
                -DECODERS.index(name),
            )
    return max(scores, key=scores.get) if scores else None


__all__ = [
    "FUSED3_NGRAM_WEIGHTS",
    "FUSED3_PARALLELS_WEIGHTS",
    "ParallelsCache",
    "ParallelsDecoder",
    "best_fused",
    "fit_edge_gain",
    "fused3_family",
    "fusion_config",
    "readings_family",
    "report_winner",
]
