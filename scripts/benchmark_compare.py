"""Two runs of ``stoicheia benchmark`` on the same dev set, compared gap by gap: what changed
between them (a corpus added with ``stoicheia add-corpus``, another index, another n-gram), with
the paired cluster bootstrap of the benchmark (:mod:`stoicheia.inference.benchmark.compare`:
the inscriptions resampled, both runs scored on the same resampled gaps).

    .venv/bin/python scripts/benchmark_compare.py benchmark/before benchmark/after --corpus=IIP
    .venv/bin/python scripts/benchmark_compare.py benchmark/before benchmark/after --per-corpus

For each protocol both runs hold and each decoder both scored: top-1, top-20 and CER before and
after, and after − before with its 95 % interval (points), on the half of the dev set given
(``--half report``, the headline half; ``all`` for both) and, with ``--corpus``, that corpus's
inscriptions only; ``--without-twins`` leaves out the texts with a near-duplicate among the
training records of either run (the benchmark's contamination report). ``--per-corpus`` prints
instead one Markdown table of one figure (``--figure``, default top-1) with a row per protocol
and corpus (I.Sicily, IOSPE, IGCyr, I.Cret., IIP, any other the runs hold, then all of them) and
a column per decoder (``--decoders``, default all both scored). The gaps must be the same in
both (same shards' dev set, same ``--seed`` and ``--spans-per-text``); the script refuses two
runs whose gaps differ (exit status 2 with one line on stderr, as for a folder without
``benchmark.json``).
"""

from __future__ import annotations

import argparse
import sys

from stoicheia.inference.benchmark.compare import (
    FIGURES,
    CompareError,
    compare,
    load,
    per_corpus_table,
)


def main(argv: list[str] | None = None) -> int:
    """Entry point (module docstring); returns the exit status."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", help="the first run's --out folder")
    p.add_argument("after", help="the second run's --out folder")
    p.add_argument("--corpus", help="one corpus's inscriptions only (IIP, I.Sicily, IOSPE, ...)")
    p.add_argument("--half", choices=("report", "selection", "all"), default="report")
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument(
        "--without-twins",
        action="store_true",
        help="leave out the texts that have a training twin in either run (contamination.tsv)",
    )
    p.add_argument(
        "--per-corpus",
        action="store_true",
        help="one Markdown table: a row per protocol and corpus (and all), a column per decoder",
    )
    p.add_argument(
        "--figure",
        choices=FIGURES,
        default="top1",
        help="the figure of the --per-corpus table (default top1; cer: lower is better)",
    )
    p.add_argument(
        "--decoders",
        nargs="+",
        metavar="DECODER",
        help="the --per-corpus table's columns (e.g. ngram parallels; default all both scored)",
    )
    args = p.parse_args(argv)
    if args.resamples < 1:
        p.error(f"--resamples {args.resamples}: give at least 1")
    if args.per_corpus and args.corpus:
        p.error("--per-corpus gives every corpus; leave out --corpus")
    try:
        before, after = load(args.before), load(args.after)
        if args.per_corpus:
            lines = per_corpus_table(
                before,
                after,
                args.half,
                args.resamples,
                args.figure,
                args.decoders,
                args.without_twins,
            )
        else:
            lines = compare(
                before, after, args.corpus, args.half, args.resamples, args.without_twins
            )
    except CompareError as err:
        print(f"benchmark_compare: {err}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
