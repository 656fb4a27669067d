"""Peak memory of ``stoicheia convert`` on one very long paragraph: is it bounded by the record
limit (``--max-record-letters``) rather than by the paragraph?

    nice -n 5 .venv/bin/python benchmarks/convert_memory.py [--sizes 0.01 10 30 60] \
        [--kind txt epidoc]

For each size (MB of UTF-8 text) and kind it writes, in a temporary folder (never in the
repository), one source holding a single paragraph of that size: ``txt`` a ``.txt`` file with
no blank line (one record), ``epidoc`` an EpiDoc file whose edition is one ``<ab>`` (Greek
with ``<supplied reason="lost">``, ``<gap>`` and ``<lb/>`` every few words). The paragraph is
built from the Greek of a real I.Sicily file (``--corpus``, default ``$STOICHEIA_CORPUS`` or
``../shared/corpus``), repeated. ``stoicheia convert`` then runs in a child process (one
reader process, no parallels index) and the child's peak resident set size is read from
``os.wait4`` (the child's own ``ru_maxrss``; the reader process is the same process with
``--workers 1``).

Prints one line per run: kind, MB, records and parts (MDS samples) written, seconds, peak RSS
in MB, and the MB of peak above the smallest run's (0.01 MB by default: the imports, about
0.7 GB, most of it torch pulled in by ``streaming``) per MB of input. Bounded memory shows as
a peak that does not grow with the size.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: an I.Sicily edition's words (ISic000811), with the markup the EpiDoc paragraph repeats
_WORDS = (
    "τῆς πρὸς πάντας ἀνθρώπους εὐνοίας πειραθέντες καὶ τῆς ἀνυπερβλήτου χρηστότητος "
    "μετασχόντες Δομιτίου Λατρωνιανοῦ τοῦ λαμπροτάτου ἐπανορθωτοῦ ἡ βουλὴ καὶ ὁ δῆμος "
    "εὐνοίας χάριν "
)
_EPIDOC_UNIT = (
    '<lb/>[τ]ῆς πρὸς πάντας ἀνθρώπ<supplied reason="lost">ους</supplied> εὐνοίας '
    'πειραθέντε<gap reason="lost" quantity="1" unit="character"/> καὶ τῆς ἀνυπερβλήτου '
    "χρηστότητος μετασχόντες Δομιτίου Λατρωνιανοῦ τοῦ λαμπροτάτου ἐπανορθωτοῦ ἡ βουλὴ καὶ ὁ "
    "δῆμος εὐνοίας χάριν\n"
).replace("[τ]", "τ")


def build(kind: str, mb: float, folder: Path) -> Path:
    """One source of about ``mb`` MB holding one paragraph (module docstring)."""
    unit = _WORDS if kind == "txt" else _EPIDOC_UNIT
    n = int(mb * 1e6 / len(unit.encode("utf-8"))) + 1
    if kind == "txt":
        path = folder / "paragraph.txt"
        with open(path, "w", encoding="utf-8") as f:
            for _ in range(n):
                f.write(unit)
            f.write("\n")
        return path
    path = folder / "paragraph.xml"
    with open(path, "w", encoding="utf-8") as f:
        f.write(
            '<?xml version="1.0" encoding="UTF-8"?>\n<TEI xmlns="http://www.tei-c.org/ns/1.0">'
            "<teiHeader><fileDesc><titleStmt><title>large</title></titleStmt></fileDesc>"
            '</teiHeader><text><body><div type="edition" xml:lang="grc"><ab>'
        )
        for _ in range(n):
            f.write(unit)
        f.write("</ab></div></body></text></TEI>\n")
    return path


def run(kind: str, mb: float, max_letters: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="stoicheia-convert-mem-") as tmp:
        tmp = Path(tmp)
        src = build(kind, mb, tmp)
        size = src.stat().st_size / 1e6
        out = tmp / "shards"
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [
                _sys.executable,
                "-m",
                "stoicheia.cli",
                "convert",
                f"bronze={src}",
                "--out",
                str(out),
                "--workers",
                "1",
                "--val-fraction",
                "0",
                "--no-parallels-index",
                "--max-record-letters",
                str(max_letters),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=REPO,
        )
        err = proc.stderr.read().decode("utf-8", "replace")
        # wait4: the resource use of this child alone (ru_maxrss in KiB on Linux)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"convert failed ({kind}, {mb} MB):\n{err[-2000:]}")
        stats = json.loads((out / "stats.json").read_text(encoding="utf-8"))
        tier = stats["tiers"]["bronze"]
        return {
            "kind": kind,
            "mb": size,
            "records": sum(tier["records_kept"].values()),
            "parts": sum(tier.get("samples_written", {}).values()),
            "seconds": seconds,
            "peak_mb": usage.ru_maxrss / 1024,
        }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[0.01, 10, 30, 60])
    ap.add_argument("--kind", nargs="+", choices=("txt", "epidoc"), default=["txt", "epidoc"])
    ap.add_argument("--max-record-letters", type=int, default=2048)
    args = ap.parse_args()
    os.environ.setdefault("STOICHEIA_CORPUS", str(REPO.parent / "shared" / "corpus"))
    print("kind    MB     records  parts     seconds  peak RSS MB  MB above smallest per MB")
    for kind in args.kind:
        base = None
        for mb in sorted(args.sizes):
            r = run(kind, mb, args.max_record_letters)
            base = r if base is None else base
            grow = (r["peak_mb"] - base["peak_mb"]) / (r["mb"] - base["mb"]) if r is not base else 0
            print(
                f"{r['kind']:<7} {r['mb']:6.2f} {r['records']:8,} {r['parts']:8,} "
                f"{r['seconds']:9.1f} {r['peak_mb']:12.0f} {grow:24.1f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
