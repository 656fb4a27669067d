"""Benchmark: the parallels index (docs/parallels.md): build time and size, query time per gap,
and how both grow with the corpus (1/4, 1/2 and the whole of each tier's train records).

    .venv/bin/python benchmarks/parallels_index.py --shards data/shards [--gaps 200]
        [--checkpoint CKPT]

Prints figures; asserts nothing. For each share of the corpus it builds an index into a
temporary folder (``build_index(fraction=...)``, the same code as ``stoicheia index``), then
times :func:`stoicheia.inference.parallels.gap_parallels` on ``--gaps`` gaps cut from the
inscription dev set (``TIER/inscription_dev``, never indexed; the held-out ``val`` records if
there is none): a span of 1 to 10 letters hidden, up to 64 letters of context each side, asked
once at its known width and once as a gap of unknown width (1 to 20 letters), and counts the gaps
with a fill (``found``) and those whose best fill is the hidden text (parallels alone, top-1: a
rough figure; the benchmark command measures restoration properly). It also times
opening the index (memory mapping). With ``--checkpoint``, it times ``restore`` on the dev texts
with the index (parallels shown and fused at weight 0.5) and without it: the page's latency.
"""

from __future__ import annotations

import os as _os
import sys as _sys
from pathlib import Path as _Path

if not _os.environ.get("PYTHONPATH"):
    _sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def dev_records(shards: _Path) -> list[np.ndarray]:
    """Letter ids (MASK at lacunae) of the inscription dev set, else of the val records."""
    from stoicheia.data.eval_sets import read_split_records

    for split in ("inscription_dev", "val"):
        try:
            recs = read_split_records(shards, split)
        except FileNotFoundError:
            continue
        return [r.planes.chars.astype(np.int64) for r in recs if len(r.planes) >= 24]
    raise SystemExit(f"{shards}: no inscription_dev or val records to cut gaps from")


def gaps(records: list[np.ndarray], n: int, seed: int = 0) -> list[tuple]:
    """``n`` gaps: (left, right, width) with a hidden span of 1 to 10 letters."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        x = rng.choice(records)
        w = rng.randint(1, 10)
        if len(x) < w + 8:
            continue
        i = rng.randrange(4, len(x) - w - 3)
        if (x[i : i + w] >= 24).any():
            continue
        out.append((x[max(0, i - 64) : i], x[i + w : i + w + 64], w, x[i : i + w]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shards", default="data/shards")
    ap.add_argument("--gaps", type=int, default=200)
    ap.add_argument("--fractions", type=float, nargs="*", default=[0.25, 0.5, 1.0])
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument(
        "--accuracy", type=int, default=0, help="with --checkpoint: top-1 on this many dev gaps"
    )
    args = ap.parse_args()
    from stoicheia.data.parallels_index import build_index
    from stoicheia.inference.parallels import ParallelsIndex, gap_parallels

    shards = _Path(args.shards)
    test = gaps(dev_records(shards), args.gaps)
    print(f"{len(test)} gaps from the dev texts, widths 1-10, <= 64 context letters a side")
    print(
        "share  letters      build s  size MB  open ms  known-width ms (median/p90)  "
        "unknown-width ms (median/p90)  found  top-1 known/unknown width"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for frac in args.fractions:
            out = _Path(tmp) / f"ix{frac}"
            t0 = time.perf_counter()
            m = build_index(shards, out, progress=False, fraction=frac)
            build = time.perf_counter() - t0
            t0 = time.perf_counter()
            index = ParallelsIndex(out)
            opened = (time.perf_counter() - t0) * 1000
            known, unknown, found, right1, right_u = [], [], 0, 0, 0
            for left, right, w, truth in test:
                t0 = time.perf_counter()
                g = gap_parallels(index, left, right, (w,))
                known.append((time.perf_counter() - t0) * 1000)
                found += bool(g.fills)
                right1 += bool(g.fills) and np.array_equal(g.fills[0].letters, truth)
                t0 = time.perf_counter()
                u = gap_parallels(index, left, right, range(1, 21))
                unknown.append((time.perf_counter() - t0) * 1000)
                right_u += bool(u.fills) and np.array_equal(u.fills[0].letters, truth)

            def q(xs):
                xs = sorted(xs)
                return f"{statistics.median(xs):6.1f} / {xs[int(0.9 * (len(xs) - 1))]:6.1f}"

            print(
                f"{frac:5.2f}  {m['letters']:11,}  {build:7.1f}  {m['bytes'] / 1e6:7.0f}  "
                f"{opened:7.1f}  {q(known):>27}  {q(unknown):>30}  {found}/{len(test)}  "
                f"{right1}/{right_u} of {len(test)}"
            )
    if args.checkpoint:
        latency(args.checkpoint, shards)
    if args.checkpoint and args.accuracy:
        accuracy(args.checkpoint, shards, args.accuracy)


def accuracy(checkpoint: str, shards: _Path, n: int) -> None:
    """Top-1 exact fills of the network alone, the parallels fused at weights 0.3/0.6/0.9, on
    ``n`` spans of 4 to 10 letters hidden in the dev texts (known width). The weights are not
    chosen on these gaps; `stoicheia benchmark` does that properly."""
    import torch

    from stoicheia.inference.loading import load_model
    from stoicheia.inference.parallels import open_index
    from stoicheia.inference.restore import restore
    from stoicheia.inference.restore.gap_search import Fusion
    from stoicheia.text.alphabet import LETTERS

    torch.set_num_threads(2)
    model = load_model(checkpoint, device="cpu")
    index = open_index(str(shards / "parallels"))
    rng = random.Random(7)
    recs = [x for x in dev_records(shards) if len(x) >= 40]
    tasks = []
    while len(tasks) < n:
        x = rng.choice(recs)
        w = rng.randint(4, 10)
        i = rng.randrange(10, len(x) - w - 10)
        if (x[max(0, i - 40) : i + w + 40] >= 24).any():
            continue
        s = "".join(LETTERS[int(c)] for c in x[max(0, i - 40) : i + w + 40])
        a = i - max(0, i - 40)
        tasks.append((s[:a] + "[" + "." * w + "]" + s[a + w :], s[a : a + w]))
    decoders = [("network alone", Fusion(None, 0.0))] + [
        (f"network + parallels {v}", Fusion(None, 0.0, index, v)) for v in (0.3, 0.6, 0.9)
    ]
    for name, fusion in decoders:
        right = sum(
            restore(model, t, top_k=1, alternatives=0, fusion=fusion).restorations[0].fills[0]
            == truth
            for t, truth in tasks
        )
        print(f"top-1, {name}: {right}/{len(tasks)} ({right / len(tasks):.1%})")


def latency(checkpoint: str, shards: _Path) -> None:
    """Seconds per ``restore`` of ten dev texts with three gaps each, with and without parallels."""
    import torch

    from stoicheia.inference.loading import load_model
    from stoicheia.inference.parallels import open_index
    from stoicheia.inference.restore import restore
    from stoicheia.inference.restore.gap_search import Fusion
    from stoicheia.text.alphabet import LETTERS

    torch.set_num_threads(2)
    model = load_model(checkpoint, device="cpu")
    index = open_index(str(shards / "parallels"))
    rng = random.Random(1)
    texts = []
    for x in dev_records(shards)[:40]:
        if len(x) < 60 or (x >= 24).any():
            continue
        s = "".join(LETTERS[int(c)] for c in x[:200])
        for a in sorted(rng.sample(range(5, len(s) - 10, 12), 3), reverse=True):
            s = s[:a] + "[" + "." * 4 + "]" + s[a + 4 :]
        texts.append(s)
        if len(texts) == 10:
            break
    for name, fusion in (
        ("without parallels", Fusion(None, 0.0)),
        ("parallels shown, weight 0", Fusion(None, 0.0, index, 0.0)),
        ("parallels fused, weight 0.5", Fusion(None, 0.0, index, 0.5)),
    ):
        restore(model, texts[0], fusion=fusion)  # warm-up
        t0 = time.perf_counter()
        for t in texts:
            restore(model, t, fusion=fusion)
        print(f"restore, {name}: {(time.perf_counter() - t0) / len(texts) * 1000:.0f} ms per text")


if __name__ == "__main__":
    main()
