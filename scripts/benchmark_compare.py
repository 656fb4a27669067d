"""Two runs of ``stoicheia benchmark`` on the same dev set, compared gap by gap: what changed
between them (a corpus added with ``stoicheia add-corpus``, another index, another n-gram), with
the paired cluster bootstrap of the benchmark (:mod:`stoicheia.inference.benchmark.bootstrap`:
the inscriptions resampled, both runs scored on the same resampled gaps).

    .venv/bin/python scripts/benchmark_compare.py benchmark/before benchmark/after --corpus=IIP

For each protocol both runs hold and each decoder both scored: top-1, top-20 and CER before and
after, and after − before with its 95 % interval (points), on the half of the dev set given
(``--half report``, the headline half; ``all`` for both) and, with ``--corpus``, that corpus's
inscriptions only; ``--without-twins`` leaves out the texts with a near-duplicate among the
training records of either run (the benchmark's contamination report). The gaps must be the
same in both (same shards' dev set, same ``--seed`` and ``--spans-per-text``); the script
refuses two runs whose gaps differ.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from stoicheia.inference.benchmark.bootstrap import gap_arrays, paired_differences
from stoicheia.inference.benchmark.scoring import pooled_figures


def _load(folder: str) -> dict:
    path = Path(folder) / "benchmark.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SystemExit(
            f"benchmark_compare: {path}: {err}; give a `stoicheia benchmark --out` folder"
        ) from None


def _key(row: dict) -> tuple:
    return (row.get("text"), row.get("start"), row.get("end"), row.get("truth"))


def compare(
    before: dict,
    after: dict,
    corpus: str | None,
    half: str,
    resamples: int,
    without_twins: bool = False,
) -> list[str]:
    """The lines of the comparison (module docstring). Raises ``SystemExit`` with the reason
    when the two runs' gaps differ."""
    lines = []
    for protocol in sorted(set(before["protocols"]) & set(after["protocols"])):
        b_rows = before["protocols"][protocol]["examples"]
        a_rows = after["protocols"][protocol]["examples"]
        if [_key(r) for r in b_rows] != [_key(r) for r in a_rows]:
            raise SystemExit(
                f"benchmark_compare: protocol {protocol}: the two runs restored other gaps; run "
                "both on the same shards' dev set with the same --seed and --spans-per-text"
            )
        keep = [
            i
            for i, r in enumerate(a_rows)
            if (half == "all" or r.get("half") == half)
            and not (without_twins and (r.get("twin") or b_rows[i].get("twin")))
            and (corpus is None or r.get("corpus") == corpus)
        ]
        if not keep:
            continue
        decoders = [
            d
            for d in after["protocols"][protocol]["decoders"]
            if d in before["protocols"][protocol]["decoders"]
        ]
        rows = [
            {
                "text": a_rows[i]["text"],
                "truth": a_rows[i]["truth"],
                **{f"{d}@before": b_rows[i][d] for d in decoders},
                **{f"{d}@after": a_rows[i][d] for d in decoders},
            }
            for i in keep
        ]
        pairs = [(f"{d}@after", f"{d}@before") for d in decoders]
        diffs = paired_differences(rows, pairs, resamples=resamples, seed=1234)
        n_ins = len({r["text"].split("#", 1)[0] for r in rows})
        lines.append(
            f"{protocol}: {len(rows):,} gaps of {n_ins} inscriptions ({half} half"
            f"{', ' + corpus if corpus else ''}"
            f"{', without the texts that have a training twin' if without_twins else ''}); "
            "after − before, 95 % paired-bootstrap interval"
        )
        for d in decoders:
            per = diffs[f"{d}@after-{d}@before"]

            was, now = (
                pooled_figures(*gap_arrays(rows, f"{d}@{w}")[:3], ks=[1, 20])
                for w in ("before", "after")
            )

            def pts(f: str, per: dict = per, was: dict = was, now: dict = now) -> str:
                x = per[f]
                told = f"{f} {100 * float(was[f]):.1f} -> {100 * float(now[f]):.1f}"
                if x["low"] is None:
                    return f"{told} ({100 * x['diff']:+.1f})"
                star = "*" if x["low"] > 0 or x["high"] < 0 else ""
                return (
                    f"{told} ({100 * x['diff']:+.1f} [{100 * x['low']:+5.1f}, "
                    f"{100 * x['high']:+5.1f}]{star})"
                )

            lines.append(f"  {d:<10} " + ";  ".join(pts(f) for f in ("top1", "top20", "cer")))
    return lines


def main(argv: list[str] | None = None) -> int:
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
    args = p.parse_args(argv)
    print(
        "\n".join(
            compare(
                _load(args.before),
                _load(args.after),
                args.corpus,
                args.half,
                args.resamples,
                args.without_twins,
            )
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
