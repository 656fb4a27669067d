"""``stoicheia index SHARDS_DIR``: build the parallels index of an already converted corpus
(:func:`stoicheia.data.parallels_index.build_index`; ``stoicheia convert`` builds it too)."""

from __future__ import annotations

import argparse
import sys
import time

from stoicheia.commands.common import fail


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``index`` on the ``stoicheia`` sub-command parsers."""
    p = subparsers.add_parser(
        "index",
        help="build the parallels index (suffix array of the train records) of converted shards",
    )
    p.add_argument("shards", metavar="SHARDS_DIR", help="output folder of `stoicheia convert`")
    p.add_argument("--out", default=None, help="index folder (default SHARDS_DIR/parallels)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build the index and print its size; returns 0, or 2 after one line on stderr."""
    from pathlib import Path

    from stoicheia.data.parallels_index import INDEX_DIR, IndexBuildError, build_index

    t0 = time.perf_counter()
    try:
        m = build_index(args.shards, args.out, progress=True if sys.stderr.isatty() else "lines")
    except IndexBuildError as err:
        return fail("index", str(err))
    except OSError as err:  # a read-only shards folder, a full disk
        from stoicheia.publish import WriteError

        fix = "" if isinstance(err, WriteError) else "; give --out a folder you can write to"
        return fail("index", f"{err}{fix}")  # a WriteError names its own fix
    out = Path(args.out) if args.out else Path(args.shards) / INDEX_DIR
    tiers = ", ".join(f"{t} {v['letters']:,}" for t, v in m["per_tier"].items())
    print(
        f"indexed {m['letters']:,} letters of {m['records']:,} train records ({tiers}); kept out: "
        f"{m['kept_out']['val_works']} val works, {m['kept_out']['inscription_dev_works']} dev "
        f"inscriptions and every val record; {m['bytes'] / 1e6:.0f} MB in {out} "
        f"({time.perf_counter() - t0:.1f} s)"
    )
    return 0
