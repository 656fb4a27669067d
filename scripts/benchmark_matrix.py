"""What each tier adds to restoration, corpus by corpus: ``stoicheia benchmark`` run once on the
shards with every tier and once on a view of them without each tier (``scripts/shard_view.py``),
all on the same dev set, compared gap by gap (:mod:`stoicheia.inference.benchmark.compare`).

    .venv/bin/python scripts/benchmark_matrix.py benchmark/all \\
        iospe=benchmark/without-iospe iip=benchmark/without-iip --decoder parallels

Per protocol both runs hold, one Markdown table: a row per tier left out (``NAME=FOLDER``, the
run without it), a column per corpus scored (I.Sicily, IOSPE, IGCyr, I.Cret., IIP, any other,
then all); each cell the run with every tier minus the run without that tier, in points of the
figure (``--figure``, default top-1; CER: lower is better, so a gain is negative), with its 95 %
paired-bootstrap interval over the inscriptions (``*``: it excludes 0). The diagonal is what a
corpus adds for its own region, the rest what it adds for the others. Exit status 2 with one
line on stderr for a folder without ``benchmark.json`` or runs whose gaps differ.
"""

from __future__ import annotations

import argparse
import sys

from stoicheia.inference.benchmark.compare import (
    FIGURES,
    CompareError,
    load,
    matrix_table,
    protocols,
)


def _named(value: str) -> tuple[str, str]:
    name, sep, folder = value.partition("=")
    if not sep or not name or not folder:
        raise argparse.ArgumentTypeError(
            f"{value!r}: give NAME=FOLDER, the tier left out and the run without it "
            "(e.g. iip=benchmark/without-iip)"
        )
    return name, folder


def main(argv: list[str] | None = None) -> int:
    """Entry point (module docstring); returns the exit status."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("full", help="the --out folder of the run on the shards with every tier")
    p.add_argument(
        "without",
        nargs="+",
        type=_named,
        metavar="NAME=FOLDER",
        help="a tier left out and the --out folder of the run on the view without it",
    )
    p.add_argument(
        "--decoder",
        default="parallels",
        help="the decoder whose figure the cells give (default parallels; ngram, fused3, ...)",
    )
    p.add_argument("--figure", choices=FIGURES, default="top1", help="default top1")
    p.add_argument("--half", choices=("report", "selection", "all"), default="report")
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument(
        "--without-twins",
        action="store_true",
        help="leave out the texts that have a training twin in either run (contamination.tsv)",
    )
    args = p.parse_args(argv)
    if args.resamples < 1:
        p.error(f"--resamples {args.resamples}: give at least 1")
    names = [n for n, _ in args.without]
    if len(set(names)) != len(names):
        p.error(f"a tier named twice among {', '.join(names)}")
    try:
        full = load(args.full)
        without = {n: load(f) for n, f in args.without}
        out: list[str] = []
        for protocol in protocols(full, next(iter(without.values()))):
            if out:
                out.append("")
            out += matrix_table(
                full,
                without,
                protocol,
                args.decoder,
                args.half,
                args.resamples,
                args.figure,
                args.without_twins,
            )
    except CompareError as err:
        print(f"benchmark_matrix: {err}", file=sys.stderr)
        return 2
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
