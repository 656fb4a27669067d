"""``stoicheia benchmark``: restoration measured the way the field measures it.

The model restores gaps of texts it never trained on (the inscription dev set, see
:mod:`stoicheia.inference.benchmark.protocols` for the three protocols) with the product's
decoder (the one ``restore`` runs: one forward pass with the target's slots MASK, then the
search of :func:`stoicheia.inference.restore.gap_search.search_gap`, 20 candidates kept), a
letter n-gram (:class:`stoicheia.inference.ngram.LetterNgram`, trained on the training shards
as ``evaluate`` trains it) fills exactly the same gaps, and, with fusion weights, the model's
search fused with that n-gram ("fused"), its weight chosen on the selection half of the dev
set and reported on the other half (:mod:`.halves`, :mod:`.fusion`: a grid over named experts,
so that a third expert is one more axis). Scores: :mod:`.scoring`; views by half and without the
texts that have a training twin: :mod:`.views`, :mod:`.contamination`; whether a difference
between two decoders is larger than chance: :mod:`.bootstrap`; table, JSON and reliability plot:
:mod:`.report`.

Decoding a task. Only the target gap is decoded; every other lacuna of the text stays a
lacuna (MASK slots the model sees, never filled; it cuts the n-gram's context), uncertain
letters stay as read, the editor's other supplements stay as text. The model sees one window
of the trained row length (``data.seq_len``) centred on the target. Its candidates are the
search's, best first; the probability of the first is its share of the candidates the search
kept. The n-gram's candidates come from
:meth:`~stoicheia.inference.ngram.LetterNgram.topk_fill` (for an unknown width: every width
from 1 to ``unknown_width``, all ranked together); its probability is the first candidate's
share of the summed probabilities of its 64 best (the posterior over the candidates it found,
given the letters on both sides).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stoicheia.inference.benchmark.bootstrap import RESAMPLES, add_differences
from stoicheia.inference.benchmark.defaults import TWIN_THRESHOLD
from stoicheia.inference.benchmark.fusion import Decoder, FusedFamily, sweep_family
from stoicheia.inference.benchmark.halves import RULE, half_of, selection_tasks, split_halves
from stoicheia.inference.benchmark.protocols import Task, base_letters, read_dev_texts
from stoicheia.inference.benchmark.scoring import TOP_KS, GapScore, summarise
from stoicheia.inference.benchmark.tasks import build_tasks
from stoicheia.inference.ngram import LetterNgram
from stoicheia.inference.restore.gap_search import Fusion, GapShape
from stoicheia.inference.restore.gaps import Gap, Item

log = logging.getLogger(__name__)

#: Published figures on the same task, other corpora and far larger models (see the docs).
PUBLISHED = [
    {
        "system": "Ithaca (Assael et al., Nature 2022)",
        "corpus": "PHI Greek inscriptions, held out by the last digit of their number",
        "task": "hidden spans 1-10, known width",
        "cer": 0.263,
        "top1": 0.618,
        "top20": 0.783,
    },
    {
        "system": "instruction-tuned 8B language model",
        "corpus": "Ithaca's test set",
        "task": "hidden spans 1-10, known width",
        "cer": 0.205,
        "top1": 0.637,
        "top20": 0.830,
    },
    {
        "system": "Aeneas (Assael et al., Nature 2025)",
        "corpus": "Latin inscriptions",
        "task": "hidden spans, known width",
        "top20": 0.73,
    },
    {
        "system": "Aeneas (Assael et al., Nature 2025)",
        "corpus": "Latin inscriptions",
        "task": "hidden spans, unknown width",
        "top20": 0.58,
    },
]


@dataclass
class ModelDecoder:
    """The product's decoder on one target gap (module docstring). ``model``: a
    :class:`~stoicheia.inference.loading.LoadedModel`; ``k``: candidates returned (default the
    largest k, 20); ``unknown_width``: most letters of ``[---]`` (``restore``'s default 20);
    ``window``: slots seen (default ``data.seq_len``); ``fusion``: the n-gram fused into the
    search (None: the model alone).

    The forward pass of a task is kept (:meth:`prepared`), so that decoders made by
    :meth:`with_fusion` share it; :meth:`cached_seconds` gives its time, which
    :func:`run_tasks` adds to theirs."""

    model: Any
    k: int = max(TOP_KS)
    unknown_width: int = 20
    window: int | None = None
    fusion: Fusion | None = None
    cache: dict = field(default_factory=dict)
    parallels: Any = None

    def with_fusion(self, fusion: Fusion | None, parallels: Any = None) -> ModelDecoder:
        """The same decoder and cache with another fusion; ``parallels``: a
        :class:`~.parallels.ParallelsCache` that holds each gap's parallels (searched
        once for every weight; ``None``: searched by each call)."""
        return ModelDecoder(
            self.model, self.k, self.unknown_width, self.window, fusion, self.cache, parallels
        )

    def parsed(self, task: Task) -> tuple[list[Item], list[Gap], int]:
        """The task's items, gaps and the index of its target gap (no forward pass):
        :func:`parse_task`."""
        return parse_task(task, self.unknown_width)

    def prepared(
        self, task: Task
    ) -> tuple[np.ndarray, GapShape, int, list[Item], list[Gap], float]:
        """The target's forward pass, shape, gap index, items and gaps (cached), and the seconds
        it took."""
        key = (task.protocol, task.text_id, task.start, task.input)
        if key not in self.cache:
            from stoicheia.inference.restore.decoding import gap_logp, window_around

            t0 = time.perf_counter()
            trained = int((self.model.config.get("data") or {}).get("seq_len") or 512)
            items, gaps, g = self.parsed(task)
            lo, hi = window_around(items, gaps, g, self.window or trained)
            logp = gap_logp(self.model, items, gaps, {}, g, lo, hi, False)
            shape = GapShape(gaps[g].min_letters, gaps[g].max_letters, gaps[g].fixed_width)
            self.cache[key] = (logp, shape, g, items, gaps, time.perf_counter() - t0)
        logp, shape, g, items, gaps, seconds = self.cache[key]
        return logp, shape, g, items, gaps, seconds

    def cached_seconds(self, task: Task) -> float:
        """The seconds of the task's forward pass, when it was made by another decoder."""
        got = self.cache.get((task.protocol, task.text_id, task.start, task.input))
        return got[-1] if got is not None and self.fusion is not None else 0.0

    def __call__(self, task: Task) -> tuple[list[str], float]:
        """The task's candidates by ``restore``'s own decoder
        (:func:`~stoicheia.inference.restore.decoders.gap_candidates`): ``model`` without a
        fusion, else ``fused`` (whole readings when ``fusion.readings`` is set, the parallels
        letter by letter at ``fusion.parallels_weight`` otherwise)."""
        import dataclasses

        from stoicheia.inference.restore.decoders import gap_candidates

        logp, _, g, items, gaps, _ = self.prepared(task)
        fusion = self.fusion
        if fusion is None:
            cands = gap_candidates("model", logp, items, gaps, {}, g, self.k, None)
            return [c.text() for c in cands], cands[0].prob if cands else 0.0
        found = None
        if fusion.parallels is not None and self.parallels is not None:
            found = self.parallels.found(task)  # searched once for every weight
            if fusion.readings is None and fusion.parallels_weight > 0 and found.fills:
                from stoicheia.inference.parallels.prior import FillPrior

                found = dataclasses.replace(
                    found, prior=FillPrior(found.fills, fusion.parallels_weight)
                )
        if fusion.readings is not None:  # the fit re-ranks one case per gap and n-gram weight
            cands = self.case(task, found).ranked(fusion.readings, self.k)
        else:
            cands = gap_candidates("fused", logp, items, gaps, {}, g, self.k, fusion, found=found)
        return [c.text() for c in cands], cands[0].prob if cands else 0.0

    def case(self, task: Task, found: Any = None) -> Any:
        """The task's :class:`~stoicheia.inference.restore.whole_readings.ReadingCase` under
        this decoder's fusion (whole readings), made once per gap, n-gram weight and edge gain
        and kept in the cache (the fit of the weights and of the ranker re-rank it);
        ``found`` its parallels when searched already."""
        from stoicheia.inference.restore.decoders import gap_candidates

        fusion = self.fusion
        gain = getattr(self.parallels, "edge_gain", 0.0)
        key = ("case", task.protocol, task.text_id, task.start, task.input, fusion.weight, gain)
        case = self.cache.get(key)
        if case is None:
            if found is None and self.parallels is not None:
                found = self.parallels.found(task)
            logp, _, g, items, gaps, _ = self.prepared(task)
            hold: dict = {}
            gap_candidates(
                "fused", logp, items, gaps, {}, g, self.k, fusion, found=found, cache=hold
            )
            case = self.cache[key] = hold["case"]
        return case


def parse_task(task: Task, unknown_width: int = 20) -> tuple[list[Item], list[Gap], int]:
    """A task's items, gaps and the index of its target gap, read as ``restore`` reads a text.
    Raises ``ValueError`` for notation the reader refuses, ``AssertionError`` for a target that
    is not where the task says."""
    from stoicheia.inference.restore.reading import parse_input

    # no width limit: another lacuna of the edition may be wider than the window ([.600.]);
    # only the window around the target is seen, and the target holds at most 22 slots
    items, gaps = parse_input(task.input, supplements="keep", unknown_width=unknown_width)
    lacunae = [i for i, g in enumerate(gaps) if g.kind == "lacuna"]
    g = lacunae[task.target]
    at = [i for i in lacunae if getattr(gaps[i], "start", None) == task.start]
    if at and at[0] != g:
        raise AssertionError(
            f"the target of {task.text_id} at {task.start} is gap {at[0]}, not lacuna {task.target}"
        )
    return items, gaps, g


@dataclass
class NgramDecoder:
    """The n-gram baseline on the same gaps (module docstring); ``k``: candidates returned,
    ``pool``: candidates its probability is normalised over."""

    ngram: LetterNgram
    k: int = max(TOP_KS)
    unknown_width: int = 20
    pool: int = 64

    def __call__(self, task: Task) -> tuple[list[str], float]:
        """The task's candidates by ``restore --decoder ngram``
        (:func:`~stoicheia.inference.restore.decoders.gap_candidates`): every width the
        notation gives (never the truth's), the fills ranked together."""
        from stoicheia.inference.restore.decoders import ngram_candidates

        items, gaps, g = parse_task(task, self.unknown_width)
        cands = ngram_candidates(self.ngram, items, gaps, {}, g, self.k, self.pool)
        return [c.text() for c in cands], cands[0].prob if cands else 0.0


def run_tasks(
    decoders: dict[str, Decoder],
    tasks: dict[str, list[Task]],
    progress: Callable[[str, int, int], None] | None = None,
) -> dict:
    """Every decoder on every task of every protocol. Returns ``{protocol: {"gaps": n,
    "decoders": {name: figures of :func:`~.scoring.summarise` plus "seconds" and
    "restorations_per_second", "failed"}, "examples": [per gap: text id, offsets, truth, and per
    decoder its top-1, rank, probability and 5 best]}}``. A task a decoder cannot decode (a
    ``ValueError``, e.g. notation it refuses) scores as a wrong answer with probability 0, is
    counted in ``failed`` and its message kept in the gap's entry: nothing is dropped.
    ``progress(label, done, total)`` is called after each gap."""
    out: dict[str, Any] = {}
    for protocol, ts in tasks.items():
        per: dict[str, Any] = {}
        rows = [{"text": t.text_id, "start": t.start, "end": t.end, "truth": t.truth} for t in ts]
        for name, dec in decoders.items():
            scores = []
            seconds = 0.0
            failed = 0
            for i, t in enumerate(ts):
                t0 = time.perf_counter()
                error = None
                try:
                    cands, prob = dec(t)
                except ValueError as err:
                    cands, prob, error = [], 0.0, str(err)
                    failed += 1
                    log.warning(
                        "[benchmark] %s: %s could not restore the gap at %d of %s: %s",
                        protocol,
                        name,
                        t.start,
                        t.text_id,
                        err,
                    )
                seconds += (
                    time.perf_counter()
                    - t0
                    + (dec.cached_seconds(t) if hasattr(dec, "cached_seconds") else 0.0)
                )
                letters = list(
                    dict.fromkeys(base_letters(c) for c in cands)
                )  # distinct, order kept
                s = GapScore(t.truth, tuple(letters), min(1.0, max(0.0, prob)), t.known_width)
                scores.append(s)
                rows[i][name] = {
                    "top1": s.top1,
                    "rank": s.rank,
                    "prob": s.prob,
                    "best5": list(s.candidates[:5]),
                }
                if error is not None:
                    rows[i][name]["error"] = error
                if progress is not None:
                    progress(f"{protocol} · {name}", i + 1, len(ts))
            figures = summarise(scores)
            figures["seconds"] = seconds
            figures["restorations_per_second"] = len(ts) / seconds if seconds > 0 else None
            figures["failed"] = failed
            per[name] = figures
        out[protocol] = {"gaps": len(ts), "decoders": per, "examples": rows}
    return out


def ngram_family(model_decoder: ModelDecoder, ngram: LetterNgram, weights: list[float]):
    """Today's fused decoder as a :class:`~.fusion.FusedFamily`: ``"fused"``, the
    model's search with ``ngram`` fused in, one axis ``"ngram"`` over ``weights``."""
    return FusedFamily(
        "fused",
        {"ngram": tuple(weights)},
        lambda w: model_decoder.with_fusion(Fusion(ngram, w["ngram"])),
    )


def benchmark(
    model: Any,
    shard_root: str | Path,
    *,
    protocols: list[str],
    spans_per_text: int = 3,
    seed: int = 1234,
    max_texts: int | None = None,
    sample: int | None = None,
    ngram: LetterNgram | None = None,
    unknown_width: int = 20,
    epidoc_root: str | Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    fusion_weights: list[float] | None = None,
    bootstrap: int = RESAMPLES,
    twin_threshold: float | None = TWIN_THRESHOLD,
    decoders: dict[str, Callable[[ModelDecoder], Decoder]] | None = None,
    families: list[Callable[[ModelDecoder], FusedFamily]] | None = None,
    fits: list[Callable[[ModelDecoder, dict[str, list[Task]]], tuple[str, dict]]] | None = None,
) -> dict:
    """The benchmark of ``model`` (and of ``ngram`` when given) on the inscription dev set of
    ``shard_root`` (module docstring); ``epidoc_root``: read the EpiDoc files from this folder
    (the tier's folder, e.g. ``../shared/corpus/isicily``) instead of the paths ``stats.json``
    recorded at conversion (shards converted on another machine).

    ``fusion_weights``: with an ``ngram``, the model's search fused with it
    (:mod:`~stoicheia.inference.restore.gap_search`) at each weight, on the gaps of the
    selection half only (:mod:`.halves`); the weight with the best mean top-1 over
    the protocols (then the lowest mean CER, then the smaller weight) is chosen and the decoder
    ``"fused"`` at that weight restores every gap. ``decoders``: more decoders by name, each
    made from the model's decoder (e.g. ``{"parallels": lambda md: ParallelsDecoder(...)}``);
    ``families``: more fused decoders whose weights are chosen the same way, each a function
    of the model's decoder returning a :class:`~.fusion.FusedFamily` (e.g.
    ``"fused3"`` over the axes ``ngram`` and ``parallels``); a family whose chosen point gives
    the network's judgement of whole fills a weight (an axis ``judge``, > 0) gets the row
    ``"<name> without judge"`` too, the same point with ``judge`` 0, compared with it
    (:func:`~.bootstrap.pairs_for`); one whose chosen point gives the network a weight (an
    axis ``ngram`` below 1) gets ``"<name> without network"``, the same point with ``ngram``
    1 (and ``judge`` 0): the same search on the n-gram's letters and widths alone. A family
    with a ``refine`` (the whole readings' ranker, :func:`~.parallels.fit_readings_ranker`)
    fitted at its chosen point replaces its row, the point's own decoder kept as ``"<name>
    without ranker"``; the rows without judge and without network are the mixture's, without
    the ranker. ``fits``:
    weights fitted on the selection half before the families' sweeps, each a function of the
    model's decoder and the selection half's tasks returning ``(name, figures)``, kept in the
    result's ``fits`` (e.g. :func:`~.parallels.fit_edge_gain`, the stone's edge's gain, which
    every decoder of the parallels then uses).
    ``twin_threshold``: measure the dev texts' near-duplicates among the training records
    (:mod:`.contamination`; None: not measured, no text counts as a twin). ``bootstrap``:
    resamples of the paired bootstrap intervals (:func:`~.bootstrap.add_differences`, seeded
    with ``seed``; 0: none). ``sample``: the inscriptions of an even sample of the dev set only
    (:func:`~.protocols.read_dev_texts`).

    Returns ``{"corpus": {...}, "halves": {"rule", "selection": [inscriptions], "report":
    [...], "gaps": {protocol: {half: n}}}, "protocols": (see :func:`run_tasks`; each gap's
    entry with its ``half`` and ``twin``, each protocol with its ``views``, see
    :mod:`.views`), "settings": {...}, "published": PUBLISHED, "fusion": {name:
    {"axes", "sweep", "chosen", "chosen_on"}} (with fused decoders), "contamination": {...}
    (with ``twin_threshold``), "bootstrap": {...} (with ``bootstrap``)}``. Raises
    :class:`~.protocols.BenchmarkError` (no dev set, a missing EpiDoc file, an
    unknown protocol, no gap at all)."""
    from stoicheia.data.corpus_stats import read_stats
    from stoicheia.inference.benchmark.protocols import BenchmarkError
    from stoicheia.inference.benchmark.views import add_views
    from stoicheia.text.encode import encode_text

    counts: Counter = Counter()
    texts = read_dev_texts(
        shard_root, max_texts=max_texts, sample=sample, counts=counts, epidoc_root=epidoc_root
    )
    tasks = build_tasks(texts, protocols, spans_per_text, seed, counts)
    if not any(tasks.values()):
        raise BenchmarkError(
            f"no gap to restore in the {len(texts)} texts of the inscription dev set of "
            f"{shard_root}"
        )
    contamination = None
    if twin_threshold is not None:
        from stoicheia.inference.benchmark.contamination import measure

        try:
            contamination = measure(texts, shard_root, twin_threshold)
        except FileNotFoundError as err:
            raise BenchmarkError(f"{err} (or give --twin-threshold 0 to leave it out)") from None
    twins = set(contamination["dev_texts_with_twin"]) if contamination else set()
    selection = selection_tasks(tasks)
    model_decoder = ModelDecoder(model, unknown_width=unknown_width)
    decs: dict[str, Decoder] = {"model": model_decoder}
    if ngram is not None:
        decs["ngram"] = NgramDecoder(ngram, unknown_width=unknown_width)
    for name, make in (decoders or {}).items():
        decs[name] = make(model_decoder)
    fams = [make(model_decoder) for make in families or []]
    if ngram and fusion_weights and not any(f.name == "fused" for f in fams):
        # today's fused (network + n-gram); a family named "fused" given (the whole readings,
        # with a parallels index: .parallels.readings_family) takes its place
        fams.insert(0, ngram_family(model_decoder, ngram, fusion_weights))
    fitted: dict[str, Any] = {}
    for fit in fits or []:
        name, figures = fit(model_decoder, selection)
        fitted[name] = figures
    fusion: dict[str, Any] = {}
    if fams and not any(selection.values()):
        raise BenchmarkError(
            f"no gap in the selection half of the {len(texts)} dev texts read from {shard_root}, "
            "so no fusion weight can be chosen: give more texts (--max-texts) or no fusion "
            "(--fusion-weights '')"
        )
    for fam in fams:
        fusion[fam.name] = sweep_family(fam, selection, run_tasks, progress)
        chosen = fusion[fam.name]["chosen"]
        decs[fam.name] = fam.make(chosen)
        refined = fam.refine(chosen, selection) if fam.refine is not None else None
        if refined is not None:  # the ranker, fitted at the chosen point on the selection half
            decs[f"{fam.name} without ranker"] = decs[fam.name]
            decs[fam.name], fusion[fam.name]["ranker"] = refined
        if chosen.get("judge"):  # what the network's judgement adds, measured on the report half
            decs[f"{fam.name} without judge"] = fam.make({**chosen, "judge": 0.0})
        if chosen.get("ngram", 1.0) < 1.0:  # what the network adds to the chosen search
            without = {**chosen, "ngram": 1.0, **({"judge": 0.0} if "judge" in chosen else {})}
            decs[f"{fam.name} without network"] = fam.make(without)
    results = run_tasks(decs, tasks, progress)
    dev = read_stats(Path(shard_root)).get("inscription_dev", {})
    # each text's corpus (I.Sicily, IOSPE, ...: the EpiDoc header's, kept by convert)
    corpus_of_work = {w["work"]: w["corpus"] for w in dev.get("works", []) if w.get("corpus")}
    corpus_of_text = {t.id: corpus_of_work.get(t.work) for t in texts}
    for res in results.values():
        for row in res["examples"]:
            row["half"] = half_of(row["text"])
            row["twin"] = row["text"] in twins
            if corpus_of_text.get(row["text"]):
                row["corpus"] = corpus_of_text[row["text"]]
    halves = split_halves(t.id for t in texts)
    corpus = {
        "shards": str(shard_root),
        "set": "inscription dev set",
        "digits": dev.get("digits", []),
        "inscriptions": len({t.work for t in texts}),
        # inscriptions per corpus
        "per_corpus": dict(
            Counter(corpus_of_work.get(w) or "unknown" for w in {t.work for t in texts})
        ),
        "texts": len(texts),
        "letters": sum(
            int((encode_text(t.text).planes.lacuna == 0).sum()) for t in texts
        ),  # supplements included
        "left_out": dict(counts.most_common()),
    }
    result = {
        "corpus": corpus,
        "halves": {
            "rule": RULE,
            **halves,
            "gaps": {
                p: {h: sum(1 for r in res["examples"] if r["half"] == h) for h in halves}
                for p, res in results.items()
            },
        },
        "settings": {
            "protocols": protocols,
            "spans_per_text": spans_per_text,
            "seed": seed,
            "max_texts": max_texts,
            "sample": sample,
            "unknown_width": unknown_width,
            "candidates": max(TOP_KS),
            "top_k": list(TOP_KS),
            "fusion_weights": list(fusion_weights or []),
            "bootstrap": bootstrap,
            "twin_threshold": twin_threshold,
        },
        "protocols": results,
        "published": PUBLISHED,
        **({"fusion": fusion} if fusion else {}),
        **({"fits": fitted} if fitted else {}),
        **({"contamination": contamination} if contamination else {}),
    }
    return add_differences(add_views(result), bootstrap, seed)


__all__ = [
    "PUBLISHED",
    "Decoder",
    "ModelDecoder",
    "NgramDecoder",
    "benchmark",
    "ngram_family",
    "parse_task",
    "run_tasks",
]
