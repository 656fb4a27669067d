"""Add the paired bootstrap intervals to a benchmark folder written before they existed.

`stoicheia benchmark` writes them itself (`--bootstrap 1000`, the default); for an older
`--out` folder (or to resample again) this reads its `benchmark.json` (the per-gap examples: no
decoder runs again), adds every decoder against the n-gram and against fused with their 95 %
intervals, per length band too (`stoicheia.inference.benchmark.bootstrap`), on the report half
and its other views where the folder has the halves, on all gaps where it predates them, and
writes `benchmark.json`, `benchmark.txt`, `summary.txt`, `reliability.png` (and
`contamination.tsv` where the twins were measured) again, into the folder or `--out`:

    .venv/bin/python scripts/benchmark_intervals.py benchmark/stoicheia-demo
    .venv/bin/python scripts/benchmark_intervals.py benchmark/stoicheia-demo \\
        --out /tmp/intervals --bootstrap 5000

It prints the table's difference lines. Exit status 2 with one line on stderr for a folder
without a readable benchmark result.
"""

from __future__ import annotations

import argparse
import json
import sys

from stoicheia.inference.benchmark.bootstrap import RESAMPLES
from stoicheia.inference.benchmark.report import PROTOCOL_NAMES, difference_lines
from stoicheia.inference.benchmark.rewrite import rewrite_folder


def main(argv: list[str] | None = None) -> int:
    """Entry point (module docstring); returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="the --out folder of `stoicheia benchmark`")
    parser.add_argument("--out", help="write the outputs here instead of into FOLDER")
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=RESAMPLES,
        help=f"resamples of the inscriptions (default {RESAMPLES:,})",
    )
    parser.add_argument(
        "--seed", type=int, help="seed of the resamples (default: the benchmark's --seed)"
    )
    args = parser.parse_args(argv)
    if not 1 <= args.bootstrap <= 100_000:
        print(
            f"benchmark_intervals: --bootstrap {args.bootstrap}: give 1 to 100,000 resamples",
            file=sys.stderr,
        )
        return 2
    try:
        paths = rewrite_folder(args.folder, args.out, args.bootstrap, args.seed)
    except (ValueError, OSError) as err:
        print(f"benchmark_intervals: {err}", file=sys.stderr)
        return 2
    result = json.loads(paths[0].read_text(encoding="utf-8"))
    lines = []
    for protocol, res in result["protocols"].items():
        shown = (res.get("views") or {}).get("report")  # the headline: the report half
        where = f", report half {shown['gaps']:,}" if shown else ""
        lines += [
            f"{PROTOCOL_NAMES.get(protocol, protocol)}: {res['gaps']:,} gaps{where}",
            *difference_lines(shown or res),
        ]
    print("\n".join([*lines, f"wrote {', '.join(map(str, paths))}"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
