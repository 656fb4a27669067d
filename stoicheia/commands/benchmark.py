"""``stoicheia benchmark CHECKPOINT --out DIR``: restoration on the inscription dev set beside a
letter n-gram (:mod:`stoicheia.inference.benchmark`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stoicheia.cli_args import float_in, fusion_weights, int_in, out_dir_problem
from stoicheia.commands.common import fail, load, model_args, ngram_args
from stoicheia.inference.benchmark.defaults import (
    FUSED3_NGRAM_WEIGHTS,
    FUSED3_PARALLELS_WEIGHTS,
    READINGS_GRID,
    TWIN_THRESHOLD,
)
from stoicheia.text.leiden_segments import MAX_LACUNA_WIDTH


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchmark`` on the ``stoicheia`` sub-command parsers."""
    p = subparsers.add_parser(
        "benchmark",
        help="restoration benchmark on the inscription dev set (hidden spans, editors' "
        "supplements, unknown width, the stone's edge), the n-gram beside the model",
    )
    model_args(p)
    p.add_argument(
        "--shards",
        help="the converted corpus: its stats.json names the inscription dev set (convert "
        "--inscription-dev-digit 4), its train split trains the n-gram (default: the run's "
        "data.shard_root)",
    )
    p.add_argument(
        "--out",
        required=True,
        help="folder for benchmark.json, benchmark.txt (the table) and reliability.png",
    )
    p.add_argument(
        "--protocols",
        nargs="+",
        choices=("hidden", "supplements", "unknown", "edge"),
        default=["hidden", "supplements", "unknown", "edge"],
        help="hidden: spans of intact text as [....]; supplements: each editor's supplement as "
        "[....]; unknown: the hidden spans as [---]; edge: the stone's edge, the first and the "
        "last word of each text (1-10 letters, intact) as [---] with text on one side only "
        "(default: all four)",
    )
    p.add_argument(
        "--spans-per-text",
        type=int_in(1, 1000, meaning=" spans (default 3)"),
        default=3,
        help="hidden spans per text (default 3)",
    )
    p.add_argument(
        "--seed",
        type=int_in(0, 2**63 - 1, meaning=" (a seed)"),
        default=1234,
        help="seed of the hidden spans (default 1234)",
    )
    p.add_argument(
        "--max-texts",
        type=int_in(1, meaning=" texts"),
        help="only the first texts of the dev set (default all)",
    )
    p.add_argument(
        "--sample",
        type=int_in(1, meaning=" inscriptions"),
        help="only this many inscriptions of the dev set, drawn evenly from all of it (every "
        "corpus and both halves in proportion; the same on every machine): a quicker look, as "
        "the demo takes (default all)",
    )
    p.add_argument(
        "--epidoc-root",
        help="read the dev inscriptions' EpiDoc files from this folder (the tier's, e.g. "
        "../shared/corpus/isicily) instead of the paths stats.json recorded at conversion",
    )
    p.add_argument(
        "--unknown-width",
        type=int_in(10, MAX_LACUNA_WIDTH, meaning=" letters (default 20)"),
        default=20,
        help="most letters of a [---] gap, for model and n-gram alike (default 20, as restore)",
    )
    ngram_args(p)
    p.add_argument(
        "--fusion-weights",
        type=fusion_weights,
        default=[0.0, 0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0],
        help="n-gram weights at which the model's search is fused with the n-gram "
        "(comma-separated, in [0, 1]; the best on the selection half of the dev set is reported "
        "on the other half as 'fused'; default 0,0.2,0.4,0.6,0.7,0.8,0.9,1; '' for none)",
    )
    p.add_argument(
        "--twin-threshold",
        type=float_in(0.0, 1.0),
        default=TWIN_THRESHOLD,
        help="Jaccard similarity (3-letter shingles) at which a dev text and a training record "
        "are twins (near-duplicates; listed in contamination.tsv, figures given without them; "
        f"default {TWIN_THRESHOLD}; 0: not measured)",
    )
    p.add_argument(
        "--parallels",
        default=None,
        metavar="INDEX",
        help="parallels index folder (stoicheia index): adds the rows 'parallels' (alone, "
        "backing off to the n-gram) and 'fused3' (network + n-gram + parallels; default: "
        "SHARDS/parallels when it exists; '' for none); --save-fusion stores it in fusion.json "
        "relative to the checkpoint's folder",
    )
    p.add_argument(
        "--fused3-weights",
        type=_fused3_weights,
        default=(FUSED3_NGRAM_WEIGHTS, FUSED3_PARALLELS_WEIGHTS),
        metavar="NGRAM/PARALLELS",
        help="fused3's grid, chosen on the selection half: n-gram weights / parallels weights, "
        f"each comma-separated in [0, 1] (default {','.join(map(str, FUSED3_NGRAM_WEIGHTS))}/"
        f"{','.join(map(str, FUSED3_PARALLELS_WEIGHTS))})",
    )
    p.add_argument(
        "--readings-grid",
        type=_readings_grid,
        default=None,
        metavar="AXIS=W,W;...",
        help="the whole readings' grid (fused with a parallels index), chosen on the selection "
        "half: axes lam_max, half, unattested, judge, each given replacing its default "
        "(default "
        + ";".join(f"{k}={','.join(f'{w:g}' for w in v)}" for k, v in READINGS_GRID.items())
        + "), e.g. 'judge=0.5' to measure the network's judgement at one weight",
    )
    p.add_argument(
        "--save-fusion",
        "--save-ngram",
        dest="save_fusion",
        action="store_true",
        help="write the n-gram to ngram.npz and the weights of the best fused decoder (fused or "
        "fused3, on the selection half) with the index path to fusion.json beside the "
        "checkpoint: restore, the page and restore --epidoc then use them by default "
        "(--save-ngram: the same)",
    )
    p.add_argument(
        "--bootstrap",
        type=int_in(0, 100_000, meaning=" resamples (default 1000; 0: none)"),
        default=1000,
        help="resamples of the inscriptions for the 95%% intervals of fused - n-gram and "
        "model - n-gram (paired bootstrap, seeded with --seed; default 1000; 0: none). For an "
        "older --out folder: scripts/benchmark_intervals.py FOLDER",
    )
    p.set_defaults(func=run)


def _fused3_weights(value: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``"0.6,0.8/0.3,0.6"`` -> ``((0.6, 0.8), (0.3, 0.6))``; raises ``ArgumentTypeError``."""
    parts = value.split("/")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(
            f"{value!r}: give n-gram weights / parallels weights, e.g. 0.6,0.8/0.3,0.6"
        )
    ngram, par = (tuple(fusion_weights(x)) for x in parts)
    if not ngram or not par:
        raise argparse.ArgumentTypeError(f"{value!r}: each axis needs at least one weight")
    return ngram, par


def _readings_grid(value: str) -> dict[str, tuple[float, ...]]:
    """``"judge=0.5;lam_max=0.7"`` -> the whole readings' grid, the axes not given at their
    defaults (:data:`~stoicheia.inference.benchmark.defaults.READINGS_GRID`); raises
    ``ArgumentTypeError`` for an unknown axis, a weight that is not a number >= 0 or an axis
    without a weight."""
    grid = dict(READINGS_GRID)
    for part in filter(None, (x.strip() for x in value.split(";"))):
        axis, eq, weights = part.partition("=")
        axis = axis.strip()
        if not eq or axis not in READINGS_GRID:
            raise argparse.ArgumentTypeError(
                f"{part!r}: give AXIS=W,W with AXIS one of {', '.join(READINGS_GRID)}"
            )
        try:
            ws = tuple(float(w) for w in weights.split(",") if w.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r}: weights are numbers") from None
        if not ws or any(not w >= 0 for w in ws):
            raise argparse.ArgumentTypeError(f"{part!r}: give at least one weight, each >= 0")
        if (axis == "lam_max" and max(ws) > 1) or (axis == "half" and min(ws) <= 0):
            raise argparse.ArgumentTypeError(f"{part!r}: lam_max is in [0, 1], half is > 0")
        grid[axis] = ws
    return grid


def _parallels_index(args: argparse.Namespace, shards: str):
    """The index to benchmark (``--parallels``, else SHARDS/parallels when built) or ``None``;
    raises ``ValueError`` with the message for a given folder that is not an index."""
    from stoicheia.inference.parallels.index import IndexError_, open_index

    if args.parallels == "":
        return None
    folder = Path(args.parallels) if args.parallels else Path(shards) / "parallels"
    if args.parallels is None and not (folder / "manifest.json").exists():
        return None
    try:
        return open_index(str(folder))
    except (IndexError_, OSError) as err:
        raise ValueError(
            f"--parallels {folder}: {err}; build it with `stoicheia index SHARDS`"
        ) from None


def run(args: argparse.Namespace) -> int:
    """Run the benchmark of ``args``, print its table and write its outputs; returns the exit status
    (0, or 2 after one line on stderr)."""
    from stoicheia.inference.benchmark.protocols import BenchmarkError
    from stoicheia.inference.benchmark.report import format_table, write_outputs
    from stoicheia.inference.benchmark.run import benchmark
    from stoicheia.inference.evaluate import train_ngram

    problem = out_dir_problem(args.out)
    if problem:
        return fail("benchmark", f"--out {problem}")
    if args.shards and not Path(args.shards).is_dir():
        return fail(
            "benchmark",
            f"--shards {args.shards!r}: no such folder; give the output folder of "
            "`stoicheia convert`",
        )
    model = load(args, "benchmark")
    data = model.config.get("data", {})
    shards = args.shards
    if not shards:  # the run's, found from the checkpoint's folder (not the current one)
        from stoicheia.inference.run_paths import run_shards

        root, found = run_shards(model.config, str(model.source))
        shards = str(found) if found is not None else root
    if not shards or not Path(shards).is_dir():
        return fail(
            "benchmark",
            f"the run's shards ({shards or 'data.shard_root unset'}) are not here; "
            "give --shards DIR",
        )
    ngram = ngram_info = None
    if args.ngram_order:
        try:
            ngram, ngram_info = train_ngram(
                shards, data.get("tier_weights"), args.ngram_order, args.ngram_letters
            )
            print(
                f"n-gram baseline: order {args.ngram_order}, "
                f"{sum(ngram_info['letters'].values()):,} training letters of {shards}"
            )
        except FileNotFoundError as err:
            return fail(
                "benchmark", f"n-gram baseline: {err}; give --ngram-order 0 to leave it out"
            )
    try:
        index = _parallels_index(args, shards)
    except ValueError as err:
        return fail("benchmark", str(err))
    decoders: dict = {}
    families: list = []
    fits: list = []
    if index is not None:
        from stoicheia.inference.benchmark.parallels import (
            ParallelsCache,
            ParallelsDecoder,
            fit_edge_gain,
            fused3_family,
            readings_family,
        )
        from stoicheia.inference.benchmark.run import NgramDecoder

        print(
            f"parallels: {index.folder} ({index.records:,} training records, "
            f"{index.manifest['letters']:,} letters)"  # restore's count: separators left out
        )
        caches: dict = {}

        def cache_of(md):
            return caches.setdefault(id(md), ParallelsCache(md, index))

        back_off = NgramDecoder(ngram, unknown_width=args.unknown_width) if ngram else None
        decoders["parallels"] = lambda md: ParallelsDecoder(cache_of(md), back_off)
        # the stone's edge: the weight of a parallel at its own text's edge, fitted first (on
        # the selection half), then used by every decoder of the parallels
        fits.append(
            lambda md, selection: (
                "parallels_edge",
                fit_edge_gain(cache_of(md), ParallelsDecoder(cache_of(md), back_off), selection),
            )
        )
        if ngram is not None and args.fusion_weights:
            # fused = restore's default decoder: the whole readings, their weights fitted here
            families.append(
                lambda md: readings_family(
                    md, ngram, cache_of(md), tuple(args.fusion_weights), args.readings_grid
                )
            )
        if ngram is not None:
            families.append(lambda md: fused3_family(md, ngram, cache_of(md), *args.fused3_weights))
    from rich.progress import Progress

    with Progress(disable=not sys.stderr.isatty(), transient=True) as bar:
        tasks: dict = {}

        def progress(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done)
            if (
                done == total
            ):  # a line per protocol and decoder, also where no bar is drawn (a log file)
                bar.console.print(f"{label}: {total:,} gaps restored")

        try:
            result = benchmark(
                model,
                shards,
                protocols=args.protocols,
                spans_per_text=args.spans_per_text,
                seed=args.seed,
                max_texts=args.max_texts,
                sample=args.sample,
                ngram=ngram,
                unknown_width=args.unknown_width,
                epidoc_root=args.epidoc_root,
                progress=progress,
                fusion_weights=args.fusion_weights,
                bootstrap=args.bootstrap,
                twin_threshold=args.twin_threshold or None,
                decoders=decoders or None,
                families=families or None,
                fits=fits or None,
            )
        except BenchmarkError as err:
            return fail("benchmark", str(err))
    result["model"] = {
        "source": model.source,
        "kind": model.kind,
        "step": model.step,
        "run_name": model.config.get("run_name"),
    }
    if ngram_info:
        result["ngram"] = ngram_info
    if index is not None:
        result["parallels"] = {
            "index": str(Path(index.folder).resolve()),
            "records": index.records,
            "letters": len(index),
        }
    print("\n".join(format_table(result)))
    paths = write_outputs(result, args.out)
    print(f"wrote {', '.join(map(str, paths))}")
    if args.save_fusion:
        from stoicheia.inference.benchmark.parallels import fusion_config
        from stoicheia.inference.ngram import save_ngram
        from stoicheia.inference.restore.fusion_file import FUSION_FILE, beside

        target = beside(str(model.source))
        fusion = (result.get("fusion") or {}).get("fused") or {}
        weight = float((fusion.get("chosen") or {}).get("ngram", 0.0))
        if ngram is None or target is None:
            return fail(
                "benchmark",
                "--save-ngram needs the n-gram (--ngram-order 1..6) and a local checkpoint",
            )
        save_ngram(
            ngram,
            target,
            weight=weight,
            chosen_on=fusion.get("chosen_on", "no fusion weights tried"),
            trained_on=ngram_info,
            checkpoint=str(model.source),
            step=model.step,
        )
        print(
            f"wrote {target}: the n-gram, at weight {weight:g} for the network and the n-gram "
            "alone (chosen on the selection half; restore uses it when no parallels are fused in)"
        )
        config = fusion_config(
            result, index.folder if index is not None else None, beside=target.parent
        )
        config.save(target.with_name(FUSION_FILE))
        print(
            f"wrote {target.with_name(FUSION_FILE)}: "
            + (
                f"restore weighs the n-gram {config.ngram_weight:g} and the parallels' fills as "
                f"whole readings (λ_max {config.readings['lam_max']:g}, half-evidence "
                f"{config.readings['half']:g}, "
                + (
                    f"unattested words −{config.readings['unattested']:g}"
                    if config.readings["unattested"]
                    else "unattested words kept"
                )
                + (
                    f", the network judging whole fills at {config.readings['judge']:g})"
                    if config.readings.get("judge")
                    else ", the network not judging whole fills)"
                )
                if config.readings
                else f"with the parallels fused in, restore weighs the n-gram "
                f"{config.ngram_weight:g} and the parallels {config.parallels_weight:g}"
                if config.parallels_weight > 0
                else "restore shows the parallels under each gap, not fused in"
            )
            + f" (chosen on {config.chosen_on})"
            + (
                f"; at a stone's edge a parallel at its own text's edge weighs "
                f"e^{config.parallels_edge_gain:g}"
                if config.parallels_edge_gain
                else ""
            )
            + "; its default decoder: "
            f"{config.decoder or 'fused'} (the best on the report half); restore --epidoc "
            + (
                f"writes readings of probability {config.min_probability:g} or more"
                + (
                    f" ({config.min_probability_unknown:g} for gaps of unknown extent)"
                    if config.min_probability_unknown is not None
                    and config.min_probability_unknown != config.min_probability
                    else ""
                )
                + " (right at least half the time on the selection half), and proposes the others"
                if config.min_probability is not None
                else "writes every reading (no gap of the selection half to choose a floor on)"
            )
        )
    return 0
