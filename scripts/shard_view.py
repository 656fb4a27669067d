"""A view of converted shards with some tiers left out: the corpus as it was before those tiers
were added (``stoicheia add-corpus``), to benchmark on the same dev set what they add.

    .venv/bin/python scripts/shard_view.py data/shards data/views/before --leave-out iospe iip

The view is a folder holding a link to each kept tier's folder (``TIER -> ../../shards/TIER``,
relative: nothing is copied), a ``stats.json`` that is the shards' own less the left-out tiers
(under ``tiers`` and ``added_tiers``) and a parallels index built over the kept tiers only
(``VIEW/parallels``, :func:`stoicheia.data.parallels_index.build_index`). The inscription dev
set in ``stats.json`` is kept whole, the left-out tiers' dev inscriptions included: the
benchmark reads them from their EpiDoc files, so ``stoicheia benchmark RUN --shards VIEW``
restores the same gaps as on the shards and only what restores them changes: its n-gram
(:func:`stoicheia.inference.evaluate.train_ngram` counts the tiers present), its parallels
index and its contamination check (the training records of the tiers present). The network
itself is what it is; a view cannot take out what it was trained on.

``view.json`` records what the view is of and what it leaves out; a folder holding one is
replaced by the next call, any other existing folder is refused (nothing is overwritten).
Exit status 2 with one line on stderr for shards without ``stats.json``, a tier they do not hold
or an output folder that is not a view.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from stoicheia.data.add_tier import ADDED_TIERS
from stoicheia.data.corpus_stats import read_stats
from stoicheia.data.parallels_index import INDEX_DIR, IndexBuildError, build_index
from stoicheia.publish import atomic_write

#: the file that marks a folder as a view written by this script (and so replaceable)
VIEW_FILE = "view.json"


class ViewError(Exception):
    """The view cannot be made; the message names the folder or tier and the fix."""


def make_view(
    shards: str | Path,
    out: str | Path,
    leave_out: list[str],
    *,
    index: bool = True,
    progress: bool | str = False,
) -> dict:
    """Write the view of ``shards`` without the tiers ``leave_out`` into ``out`` (module
    docstring) and, with ``index``, build its parallels index. Returns ``view.json``'s content:
    ``{"shards", "left_out", "tiers", "dev_works", "index"}`` (``index``: the index manifest's
    ``letters``, ``records`` and ``per_tier``, or ``None`` without ``index``).

    Raises :class:`ViewError` for shards without ``stats.json``, a name in ``leave_out`` that is
    not one of their tiers, every tier left out, a kept tier without its folder, or an existing
    ``out`` that is not a view (no ``view.json``); :class:`IndexBuildError` from the index."""
    shards, out = Path(shards), Path(out)
    try:
        stats = read_stats(shards)
    except (FileNotFoundError, ValueError) as err:
        raise ViewError(f"{shards}: {err}") from None
    tiers = list(stats.get("tiers") or {})
    unknown = [t for t in leave_out if t not in tiers]
    if unknown:
        raise ViewError(
            f"{shards}: no tier {', '.join(unknown)}; its tiers are {', '.join(tiers) or 'none'}"
        )
    kept = [t for t in tiers if t not in leave_out]
    if not kept:
        raise ViewError(f"{shards}: every tier left out; leave at least one in")
    missing = [t for t in kept if not (shards / t).is_dir()]
    if missing:
        raise ViewError(
            f"{shards}: the tier folder(s) {', '.join(missing)} named in stats.json are missing; "
            "convert again or leave them out"
        )
    if out.resolve() == shards.resolve():
        raise ViewError(f"{out}: the view would replace the shards themselves; give another folder")
    if out.exists():
        if not (out / VIEW_FILE).is_file():
            raise ViewError(
                f"{out} exists and is not a view made by scripts/shard_view.py (no {VIEW_FILE}); "
                "give a new folder or remove it yourself"
            )
        shutil.rmtree(out)  # links, stats.json, view.json and the view's own index only
    out.mkdir(parents=True)
    for tier in kept:
        os.symlink(os.path.relpath((shards / tier).resolve(), out.resolve()), out / tier)
    view_stats = dict(stats)
    view_stats["tiers"] = {t: v for t, v in stats["tiers"].items() if t in kept}
    if stats.get(ADDED_TIERS):
        view_stats[ADDED_TIERS] = {
            t: v for t, v in stats[ADDED_TIERS].items() if t not in leave_out
        }
    atomic_write(out / "stats.json", json.dumps(view_stats, ensure_ascii=False, indent=1))
    record = {
        "shards": str(shards),
        "left_out": list(leave_out),
        "tiers": kept,
        "dev_works": len((stats.get("inscription_dev") or {}).get("works") or []),
        "index": None,
    }
    if index:
        m = build_index(out, out / INDEX_DIR, progress=progress)
        record["index"] = {k: m[k] for k in ("letters", "records", "per_tier")}
    atomic_write(out / VIEW_FILE, json.dumps(record, ensure_ascii=False, indent=1))
    return record


def main(argv: list[str] | None = None) -> int:
    """Entry point (module docstring); returns the exit status."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("shards", help="the converted corpus (the output folder of `stoicheia convert`)")
    p.add_argument("out", help="the view's folder (new, or a view made before: replaced)")
    p.add_argument(
        "--leave-out",
        nargs="+",
        default=[],
        metavar="TIER",
        help="the tiers the view leaves out (e.g. those `stoicheia add-corpus` added)",
    )
    p.add_argument(
        "--no-index",
        action="store_true",
        help="do not build the view's parallels index (benchmark it with --parallels '')",
    )
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    try:
        v = make_view(
            args.shards,
            args.out,
            args.leave_out,
            index=not args.no_index,
            progress=True if sys.stderr.isatty() else "lines",
        )
    except (ViewError, IndexBuildError, OSError) as err:
        print(f"shard_view: {err}", file=sys.stderr)
        return 2
    said = f"view {args.out} of {args.shards}: tiers {', '.join(v['tiers'])}"
    said += f"; left out {', '.join(v['left_out'])}" if v["left_out"] else "; none left out"
    said += f"; dev set kept whole ({v['dev_works']:,} inscriptions)"
    if v["index"]:
        per = ", ".join(f"{t} {x['letters']:,}" for t, x in v["index"]["per_tier"].items())
        said += f"; parallels index {v['index']['letters']:,} letters ({per})"
    print(f"{said} ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
