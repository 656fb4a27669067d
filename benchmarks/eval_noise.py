"""Benchmark: how much an evaluation set's bits/char moves with the evaluation's own randomness
(which letters the reference noise masks), for a fixed checkpoint, against the auto-anneal's
``stall_eps``.

    .venv/bin/python benchmarks/eval_noise.py CHECKPOINT [OTHER_CHECKPOINT] [--shards data/shards]
        [--set dev] [--records 48,192] [--seeds 8] [--threads 1]

Prints figures; asserts nothing. A run evaluates one fixed masking draw (``data.eval_seed``)
at every evaluation, so an unchanged model gives the same value each time; what the draw
adds is a sampling error of the estimate, fixed for the run. For each size in ``--records``
(the first N records of the set, as ``data.eval_records`` takes them) the script evaluates
CHECKPOINT under ``--seeds`` masking draws (seeds 0, 1, ...; the run's ``data.eval_t``,
``data.seq_len`` and ``data.eval_rows``) and prints the mean, the standard deviation and the
range of bits/char over the draws. With OTHER_CHECKPOINT (e.g. the evaluation before), it also
evaluates that one under the same draws and prints the spread over draws of the paired
difference (CHECKPOINT - OTHER): how far one draw's measured improvement can be from the
improvement averaged over draws, which is what a stall decision with a fixed draw reads.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _bits(model, batches) -> float:
    from stoicheia.model.metrics import BitsPerChar

    metric = BitsPerChar()
    for b in batches:
        metric.update(model(b)["char"], b["tgt_chars"])
    return float(metric.compute())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint")
    p.add_argument("other", nargs="?", default=None)
    p.add_argument("--shards", type=Path, default=REPO / "data" / "shards")
    p.add_argument("--set", default="dev", help="evaluation set (holdout, dev, all)")
    p.add_argument("--records", default="48,192", help="set sizes, comma-separated")
    p.add_argument("--seeds", type=int, default=8, help="masking draws per size")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    from stoicheia.data.eval_batches import build_eval_batches
    from stoicheia.data.eval_sets import read_eval_sets
    from stoicheia.inference.loading import load_model

    models = [
        load_model(c, device="cpu", precision="fp32") for c in (args.checkpoint, args.other) if c
    ]
    torch.set_num_threads(args.threads)
    data = models[0].config["data"]
    sizes = [int(x) for x in args.records.split(",")]
    sets = read_eval_sets(args.shards, data["tier_weights"], [args.set], max(sizes))
    records = sets[args.set]
    steps = ", ".join(f"step {m.step}" for m in models)
    print(
        f"{args.set} set: {len(records)} records read; {steps}; t = {data['eval_t']}, "
        f"{data['eval_rows']} x {data['seq_len']} slots per batch; "
        f"the run's own draw: seed {data['eval_seed']}"
    )
    for n in sizes:
        if n > len(records):
            print(f"  {n} records: the set has only {len(records)}; skipped")
            continue
        values: list[list[float]] = [[] for _ in models]
        masked = []
        t0 = time.perf_counter()
        for seed in range(args.seeds):
            batches = build_eval_batches(
                records[:n], data["seq_len"], data["eval_rows"], data["eval_t"], seed
            )
            masked.append(sum(int((b["tgt_chars"] >= 0).sum()) for b in batches))
            with torch.no_grad():
                for k, m in enumerate(models):
                    values[k].append(_bits(m, batches))
        v = values[0]
        print(
            f"  {n:4d} records (~{statistics.mean(masked):,.0f} masked letters): bits/char over "
            f"{args.seeds} draws: mean {statistics.mean(v):.4f}  sd {statistics.stdev(v):.4f}  "
            f"range {max(v) - min(v):.4f}   ({time.perf_counter() - t0:.0f} s)"
        )
        if len(models) == 2:
            d = [a - b for a, b in zip(values[0], values[1], strict=True)]
            print(
                f"       paired difference step {models[0].step} - step {models[1].step}: mean "
                f"{statistics.mean(d):+.4f}  sd {statistics.stdev(d):.4f}  "
                f"range {max(d) - min(d):.4f}"
            )


if __name__ == "__main__":
    main()
