"""Seconds per MB of ``restore --epidoc`` on large EpiDoc files: is the work linear in the size?

    .venv/bin/python benchmarks/epidoc_large.py [--model CKPT] [--source ISic001375.xml]
        [--sizes 0.02 0.04 0.08] [--plan-sizes 2 20] [--shape ab|textparts]

The large files are synthetic and built in a temporary folder (never in the repository): a
real I.Sicily file from ``--corpus`` (default ``$STOICHEIA_CORPUS`` or ``../shared/corpus``)
whose Greek edition is repeated until the file has the size asked for, either inside its one
``<ab>`` (``--shape ab``: one long edition, the case that never finished) or as that many
``<div type="textpart">`` (``--shape textparts``). Two measurements:

1. ``plan``: :func:`stoicheia.inference.epidoc_restore.plan_epidoc` (parse, read the Greek
   edition, locate every element in the bytes, plan every gap, cut the edition into pieces):
   all the file work, none of the model's, at ``--plan-sizes`` MB (default 2 and 20);
2. ``restore``: :func:`~stoicheia.inference.epidoc_restore.restore_epidoc` with the model
   (``--model``, default the demo's ``checkpoints/stoicheia-demo/best.pt``) at ``--sizes`` MB:
   the decoding, whose cost is per gap.

Prints one line per file: MB, gaps, pieces, seconds, seconds per MB (and per gap for
``restore``). Linear work shows as a flat seconds-per-MB column. Run it on a quiet machine
(it measures time); the restore rows take about 0.03-0.07 s per gap on a CPU with the demo
model (figures in docs/restoring-epidoc.md, "Large files").
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse
import os
import re
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def build(source: Path, mb: float, shape: str, out: Path) -> Path:
    """Write a file of about ``mb`` MB to ``out``: ``source`` with its edition's content
    repeated (module docstring). Raises ``ValueError`` for a source without a
    ``<div type="edition">`` holding an ``<ab>``."""
    data = source.read_bytes()
    m = re.search(rb'(<div type="edition"[^>]*>)(.*?)(</div>)', data, re.S)
    inner = re.search(rb"<ab>(.*)</ab>", m.group(2), re.S) if m else None
    if m is None or inner is None:
        raise ValueError(
            f'{source}: no <div type="edition"> with an <ab>; give another I.Sicily file (--source)'
        )
    body = m.group(2)
    if shape == "ab":
        n = int(mb * 1e6 / len(inner.group(1))) + 1
        new = body[: inner.start(1)] + inner.group(1) * n + body[inner.end(1) :]
    else:
        n = int(mb * 1e6 / len(body)) + 1
        new = b"".join(
            b'<div type="textpart" n="%d">' % i + body + b"</div>" for i in range(1, n + 1)
        )
    out.write_bytes(data[: m.start(2)] + new + data[m.end(2) :])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=str(REPO / "checkpoints" / "stoicheia-demo" / "best.pt"))
    ap.add_argument(
        "--corpus",
        default=os.environ.get("STOICHEIA_CORPUS", str(REPO.parent / "shared" / "corpus")),
    )
    ap.add_argument(
        "--source",
        default="ISic001375.xml",
        help="the I.Sicily file repeated (it has 3 gaps to fill)",
    )
    ap.add_argument("--shape", choices=("ab", "textparts"), default="ab")
    ap.add_argument(
        "--sizes",
        type=float,
        nargs="*",
        default=[0.02, 0.04, 0.08],
        help="MB, restored with the model",
    )
    ap.add_argument(
        "--plan-sizes",
        type=float,
        nargs="*",
        default=[2.0, 20.0],
        help="MB, planned only (no model)",
    )
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--beam", type=int, default=2)
    ap.add_argument("--unknown-width", type=int, default=4)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()

    from stoicheia.inference.epidoc_restore import plan_epidoc, restore_epidoc

    source = Path(args.corpus) / "isicily" / "inscriptions" / args.source
    if not source.is_file():
        print(
            f"epidoc_large: {source} not found; give --corpus (the shared corpus) and --source",
            file=_sys.stderr,
        )
        return 2
    window = 512
    loaded = None
    if args.sizes:
        from stoicheia.inference.loading import load_model

        loaded = load_model(args.model, device=args.device)
        window = int((loaded.config.get("data") or {}).get("seq_len") or 512)
    print(f"source {args.source}, shape {args.shape}, window {window} slots")
    print(f"{'what':8} {'MB':>6} {'gaps':>7} {'pieces':>7} {'seconds':>9} {'s/MB':>8} {'s/gap':>7}")
    with tempfile.TemporaryDirectory(prefix="epidoc_large-") as tmp:
        for mb in args.plan_sizes:
            f = build(source, mb, args.shape, Path(tmp) / f"plan-{mb}.xml")
            t0 = time.perf_counter()
            plan = plan_epidoc(f, window=window, unknown_width=args.unknown_width)
            dt = time.perf_counter() - t0
            size = len(plan.data) / 1e6
            print(
                f"{'plan':8} {size:6.2f} {len(plan.gaps):7d} {len(plan.pieces):7d} "
                f"{dt:9.2f} {dt / size:8.2f} {'':>7}",
                flush=True,
            )
            del plan
            f.unlink()
        if args.sizes:  # warm up (first forward passes, lazy imports) outside the timings
            restore_epidoc(
                loaded, source, top_k=args.top_k, beam=args.beam, unknown_width=args.unknown_width
            )
        for mb in args.sizes:
            f = build(source, mb, args.shape, Path(tmp) / f"restore-{mb}.xml")
            n_pieces = len(plan_epidoc(f, window=window, unknown_width=args.unknown_width).pieces)
            t0 = time.perf_counter()
            res = restore_epidoc(
                loaded, f, top_k=args.top_k, beam=args.beam, unknown_width=args.unknown_width
            )
            dt = time.perf_counter() - t0
            size = f.stat().st_size / 1e6
            n = len(res.gaps)
            print(
                f"{'restore':8} {size:6.2f} {n:7d} {n_pieces:7d} "
                f"{dt:9.2f} {dt / size:8.1f} {dt / max(n, 1):7.3f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
