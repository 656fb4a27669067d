"""Which order of the parallels' fills the ``parallels`` decoder should print first: the
search's (context matched first, :mod:`stoicheia.inference.parallels.search`) or their share
of the parallels' weights (what restore's whole-text ranking prints first).

For every gap of the benchmark's protocols on the dev sample that has at least one fill the
gap takes, counts per half whether the first fill of each order is the truth (base letters,
as the benchmark scores). No network is loaded.

    .venv/bin/python benchmarks/parallels_order.py data/shards --sample 80
"""

from __future__ import annotations

import argparse
from collections import Counter

from stoicheia.inference.benchmark.halves import half_of
from stoicheia.inference.benchmark.parallels import ParallelsCache
from stoicheia.inference.benchmark.protocols import base_letters, read_dev_texts
from stoicheia.inference.benchmark.run import ModelDecoder
from stoicheia.inference.benchmark.tasks import build_tasks
from stoicheia.inference.parallels import ParallelsIndex
from stoicheia.inference.restore.decoders import allowed
from stoicheia.text import alphabet as A


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shards", help="converted shards with the inscription dev set and an index")
    ap.add_argument("--sample", type=int, default=80, help="dev inscriptions (as the demo)")
    ap.add_argument("--protocols", nargs="+", default=["hidden", "supplements", "unknown"])
    args = ap.parse_args()
    texts = read_dev_texts(args.shards, sample=args.sample)
    tasks = build_tasks(texts, args.protocols, 3, 1234)
    md = ModelDecoder(model=None)
    cache = ParallelsCache(md, ParallelsIndex(f"{args.shards}/parallels"))
    print("protocol   half       gaps  search's order  by share  first fills differ")
    for protocol, ts in tasks.items():
        n: Counter = Counter()
        for t in ts:
            try:
                found = cache.found(t)
            except ValueError:  # notation the decoders refuse: scored wrong for every order
                continue
            _, gaps, g = md.parsed(t)
            fills = [
                f
                for f in found.fills
                if allowed(gaps[g], f.letters) and getattr(f, "lone_letter", None) is None
            ]
            if not fills:
                continue
            half = half_of(t.text_id)
            truth = base_letters(t.truth)
            first = base_letters("".join(A.LETTERS[i] for i in fills[0].letters))
            top = max(fills, key=lambda f: f.prob)
            share = base_letters("".join(A.LETTERS[i] for i in top.letters))
            n[half, "gaps"] += 1
            n[half, "search"] += first == truth
            n[half, "share"] += share == truth
            n[half, "differ"] += first != share
        for half in ("selection", "report"):
            print(
                f"{protocol:<10} {half:<10} {n[half, 'gaps']:>4}  {n[half, 'search']:>14}  "
                f"{n[half, 'share']:>8}  {n[half, 'differ']:>19}"
            )


if __name__ == "__main__":
    main()
