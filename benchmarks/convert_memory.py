"""Peak memory of ``stoicheia convert`` on one very long paragraph: is it bounded by the record
limit (``--max-record-letters``) rather than by the paragraph?

    nice -n 19 .venv/bin/python benchmarks/convert_memory.py [--sizes 0.01 10 30 60] \
        [--kind txt epidoc perseus conllu jsonl jsonl-line] [--tree]

For each size (MB of UTF-8 source) and kind it writes, in a temporary folder (never in the
repository), one source of that size: ``txt`` a ``.txt`` file with no blank line (one
record), ``epidoc`` an EpiDoc file whose edition is one ``<ab>`` (Greek with ``<supplied
reason="lost">``, ``<gap>`` and ``<lb/>`` every few words), ``perseus`` a Perseus TEI P4 file
(Beta Code) whose one ``<div1>`` is one ``<p>`` with a section milestone every few words (one
record with its citation lines), ``conllu`` a CoNLL-U file of one document (a sentence of a
few words with its token lines, repeated), ``jsonl`` a JSON Lines file of records of about
10,000 characters each (many records: the file is what grows), ``jsonl-line`` a JSON Lines
file of one record on one line (refused past ``MAX_JSONL_LINE_CHARS``, 16 M characters: the
row says so and gives the refusal's peak). The Greek is that of a real I.Sicily file (``--corpus``,
default ``$STOICHEIA_CORPUS`` or ``../shared/corpus``), repeated. ``stoicheia convert`` then
runs in a child process (one reader process, no parallels index) and the child's peak
resident set size is read from ``os.wait4`` (the child's own ``ru_maxrss``; the reader process
is the same process with ``--workers 1``).

Prints one line per run: kind, MB, records and parts (MDS samples) written, seconds, peak RSS
in MB, and the MB of peak above the smallest run's (0.01 MB by default: the imports, about
0.7 GB, most of it torch pulled in by ``streaming``) per MB of input. Bounded memory shows as
a peak that does not grow with the size.

``--tree`` (XML kinds): also, in another child that imports the conversion
(:mod:`stoicheia.data.shards`), the resident MB after the imports, then the file parsed as
the reader parses it (:func:`stoicheia.sources.epidoc._parse`,
:func:`stoicheia.sources.perseus_entities.parse_perseus_xml`): the MB the parsed tree keeps
(after the file's text is freed) and the parse's own peak, both above the imports, so that a
convert peak reads as imports + tree + the rest.
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


#: the same words in Beta Code, with a Perseus section milestone (a citation line)
_PERSEUS_UNIT = (
    "th=s pro\\s pa/ntas a)nqrw/pous eu)noi/as peiraqe/ntes kai\\ th=s a)nuperblh/tou "
    "xrhsto/thtos metasxo/ntes *domiti/ou *latrwnianou= tou= lampro/tatou e)panorqwtou= "
    'h( boulh\\ kai\\ o( dh=mos eu)noi/as xa/rin <milestone unit="section" n="{n}"/>\n'
)


def _conllu_unit() -> str:
    """A sentence of :data:`_WORDS` with its token lines (10 columns each)."""
    words = _WORDS.split()
    tokens = "".join(
        f"{i}\t{w}\t{w}\tX\t_\t_\t{0 if i == 1 else 1}\t{'root' if i == 1 else 'dep'}\t_\t_\n"
        for i, w in enumerate(words, 1)
    )
    return f"# text = {' '.join(words)}\n{tokens}\n"


def build(kind: str, mb: float, folder: Path) -> Path:
    """One source of about ``mb`` MB (module docstring)."""
    if kind == "perseus":
        return _build_perseus(mb, folder)
    if kind in ("conllu", "jsonl", "jsonl-line"):
        return _build_lines(kind, mb, folder)
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


def _build_perseus(mb: float, folder: Path) -> Path:
    unit_bytes = len(_PERSEUS_UNIT.format(n=1000).encode("utf-8"))
    n = int(mb * 1e6 / unit_bytes) + 1
    path = folder / "paragraph.xml"
    with open(path, "w", encoding="utf-8") as f:
        f.write(
            '<?xml version="1.0"?>\n<TEI.2><teiHeader><fileDesc><titleStmt>'
            "<title>Large (Greek). Machine readable text</title></titleStmt></fileDesc>"
            '</teiHeader><text lang="greek"><body><div1 type="book" n="1"><p>'
        )
        for k in range(1, n + 1):
            f.write(_PERSEUS_UNIT.format(n=k))
        f.write("</p></div1></body></text></TEI.2>\n")
    return path


def _build_lines(kind: str, mb: float, folder: Path) -> Path:
    import json

    if kind == "conllu":
        path, unit = folder / "paragraph-ud-train.conllu", _conllu_unit()
        with open(path, "w", encoding="utf-8") as f:
            for _ in range(int(mb * 1e6 / len(unit.encode("utf-8"))) + 1):
                f.write(unit)
        return path
    path = folder / "paragraph.jsonl"
    per_line = _WORDS * 50 if kind == "jsonl" else None  # about 10,000 characters a record
    with open(path, "w", encoding="utf-8") as f:
        if per_line is None:  # one record: its text written a piece at a time
            n = int(mb * 1e6 / len(_WORDS.encode("utf-8"))) + 1
            f.write('{"id": "1", "text": "')
            for _ in range(n):
                f.write(_WORDS)
            f.write('"}\n')
            return path
        line_bytes = len(per_line.encode("utf-8")) + 30
        for k in range(int(mb * 1e6 / line_bytes) + 1):
            f.write(json.dumps({"id": str(k), "text": per_line}, ensure_ascii=False) + "\n")
    return path


_TREE_PROBE = """
import gc, sys
from collections import Counter
from pathlib import Path
import stoicheia.data.shards  # what convert imports
from stoicheia.sources.epidoc import _parse
from stoicheia.sources.perseus_entities import parse_perseus_xml
from stoicheia.sources.record import read_utf8

def status(key):
    return int(next(x for x in open("/proc/self/status") if x.startswith(key)).split()[1])

gc.collect()
base = status("VmRSS:")
path = Path(sys.argv[1])
if sys.argv[2] == "perseus":
    tree, _ = parse_perseus_xml(read_utf8(path), str(path))
else:
    tree = _parse(path, Counter())
gc.collect()
print(base, status("VmRSS:"), status("VmHWM:"))
"""


def tree_mb(kind: str, mb: float) -> tuple[float, float, float]:
    """(MB resident after the imports, MB the parsed tree keeps above them, MB of the parse's
    peak above them)."""
    with tempfile.TemporaryDirectory(prefix="stoicheia-convert-mem-") as tmp:
        src = build(kind, mb, Path(tmp))
        out = subprocess.run(
            [_sys.executable, "-c", _TREE_PROBE, str(src), kind],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    base, rss, hwm = (int(x) / 1024 for x in out)
    return base, rss - base, hwm - base


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
        if proc.returncode != 0 and "a JSON Lines record longer than" in err:
            # a line past MAX_JSONL_LINE_CHARS is refused, not held: the peak of the refusal
            return {
                "kind": kind,
                "mb": size,
                "records": 0,
                "parts": 0,
                "seconds": seconds,
                "peak_mb": usage.ru_maxrss / 1024,
                "refused": True,
            }
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
    ap.add_argument(
        "--kind",
        nargs="+",
        choices=("txt", "epidoc", "perseus", "conllu", "jsonl", "jsonl-line"),
        default=["txt", "epidoc"],
    )
    ap.add_argument("--max-record-letters", type=int, default=2048)
    ap.add_argument("--tree", action="store_true", help="also the parsed tree's memory (XML kinds)")
    args = ap.parse_args()
    os.environ.setdefault("STOICHEIA_CORPUS", str(REPO.parent / "shared" / "corpus"))
    tree = args.tree and any(k in ("epidoc", "perseus") for k in args.kind)
    print(
        "kind       MB     records  parts     seconds  peak RSS MB  MB above smallest per MB"
        + ("  imports MB  tree MB  parse peak MB" if tree else "")
    )
    for kind in args.kind:
        base = None
        for mb in sorted(args.sizes):
            r = run(kind, mb, args.max_record_letters)
            base = r if base is None else base
            grow = (r["peak_mb"] - base["peak_mb"]) / (r["mb"] - base["mb"]) if r is not base else 0
            extra = ""
            if tree and kind in ("epidoc", "perseus"):
                base_mb, kept, peak = tree_mb(kind, mb)
                extra = f" {base_mb:11.0f} {kept:8.0f} {peak:14.0f}"
            print(
                f"{r['kind']:<10} {r['mb']:6.2f} {r['records']:8,} {r['parts']:8,} "
                f"{r['seconds']:9.1f} {r['peak_mb']:12.0f} {grow:24.1f}{extra}"
                + (
                    "  (refused: the line is longer than a JSON Lines record may be)"
                    if r.get("refused")
                    else ""
                ),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
