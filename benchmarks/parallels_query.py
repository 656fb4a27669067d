"""Time and memory of one ``stoicheia parallels`` query, as a user runs it: a fresh process
(``python -m stoicheia parallels TEXT --index DIR``), ``--repeat`` times; prints the median and
the worst wall seconds, the peak resident memory (MB, the query process's own ``VmHWM`` of
``/proc/self/status``: its ``ru_maxrss`` would count the parent's memory at the fork) and
whether torch, streaming or transformers was imported (none should be: the search needs numpy
and the index). Target (issue 33): under 1 s and under 200 MB on the demo's
index.

    .venv/bin/python benchmarks/parallels_query.py --repeat 5   # --index DIR: another index

Without ``--index`` it uses the checkout's ``data/shards/parallels`` (the demo's); when that is
missing it converts a small real corpus (``--corpus``: Homer and Hesiod of Perseus as gold, the
first 300 I.Sicily inscriptions as bronze) into a temporary folder and queries its index,
printing its size, so that the figures say what they were measured on.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = str(REPO / ".venv" / "bin" / "python")
#: a formula of the decrees, found in the inscriptions and in the orators
QUERY = "ἔδοξε τῆι βουλῆι καὶ τῶι δήμωι"  # noqa: RUF001 (Greek letters)

PROBE = """
import runpy, sys
sys.argv = ["stoicheia", *sys.argv[1:]]
try:
    runpy.run_module("stoicheia", run_name="__main__")
except SystemExit as stop:
    code = stop.code
heavy = [m for m in ("torch", "streaming", "transformers", "composer") if m in sys.modules]
print("HEAVY=" + (",".join(heavy) or "-"), file=sys.stderr)
# this process's own peak (VmHWM): ru_maxrss would count the parent's memory at the fork
hwm = [x for x in open("/proc/self/status") if x.startswith("VmHWM:")]
print("HWM_KB=" + (hwm[0].split()[1] if hwm else "0"), file=sys.stderr)
sys.exit(code)
"""


def _query(index: Path, text: str) -> tuple[float, float, str, int]:
    """One query in a fresh process: (wall seconds, peak RSS MB, heavy modules, passages)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [PYTHON, "-c", PROBE, "parallels", text, "--index", str(index), "--json"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"the query failed ({proc.returncode}): {err.strip()}")
    heavy = next((x[6:] for x in err.splitlines() if x.startswith("HEAVY=")), "?")
    hwm_kb = next((int(x[7:]) for x in err.splitlines() if x.startswith("HWM_KB=")), 0)
    passages = len(json.loads(out)["passages"])
    return wall, hwm_kb / 1024, heavy, passages


def _small_index(corpus: Path, folder: Path) -> Path:
    """Convert Homer, Hesiod and 300 I.Sicily inscriptions into ``folder``; its index."""
    from stoicheia.data.shards import convert

    isic = sorted((corpus / "isicily" / "inscriptions").glob("ISic*.xml"))[:300]
    t0 = time.perf_counter()
    convert(
        {"gold": [corpus / "perseus" / "Homer", corpus / "perseus" / "Hesiod"], "bronze": isic},
        folder,
        val_fraction=0.05,
        workers=2,
        progress=False,
    )
    print(f"converted a small real corpus in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return folder / "parallels"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, help="index folder (default: the demo's)")
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--text", default=QUERY, help=f"the query (default {QUERY!r})")
    parser.add_argument(
        "--build",
        type=Path,
        help="where to convert the small corpus when the demo's index is missing (kept; "
        "default: a temporary folder, removed); an index already there is reused",
    )
    args = parser.parse_args()
    index = args.index or REPO / "data" / "shards" / "parallels"
    with tempfile.TemporaryDirectory(prefix="stoicheia-pq-") as tmp:
        if args.index is None and not (index / "manifest.json").exists():
            folder = args.build or Path(tmp) / "shards"
            if (folder / "parallels" / "manifest.json").exists():
                index = folder / "parallels"
            else:
                print(f"{index} missing: building a small one", file=sys.stderr)
                index = _small_index(args.corpus, folder)
        man = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
        size = sum(f.stat().st_size for f in index.iterdir()) / 1e6
        print(
            f"index {index}: {man['letters']:,} letters of {man['records']:,} records, "
            f"{size:.0f} MB on disk"
        )
        _query(index, args.text)  # the page cache warm, as for a user's second query
        runs = [_query(index, args.text) for _ in range(args.repeat)]
    walls = [r[0] for r in runs]
    rss = max(r[1] for r in runs)
    print(
        f"stoicheia parallels {args.text!r}: median {statistics.median(walls):.2f} s, "
        f"worst {max(walls):.2f} s over {args.repeat} runs; peak RSS {rss:.0f} MB; "
        f"{runs[0][3]} passages; imported: {runs[0][2]}"
    )
    print(
        f"target: under 1 s ({'met' if max(walls) < 1 else 'NOT met'}), under 200 MB "
        f"({'met' if rss < 200 else 'NOT met'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
