"""Benchmark: data-pipeline letters per second per worker, and the demo model's step time.

    .venv/bin/python benchmarks/throughput.py [--shards data/shards] [--seq-len 8192] [--batches 20]

Prints figures; asserts nothing. The data pipeline is measured in one process (num_workers=0),
so the reading, splitting, noising and packing all count against one core: that is the
throughput of one DataLoader worker (plus the main-process packing, which is a small part).
The step time is forward + backward + AdamW step of ``yamls/demo.yaml``'s model on packed
batches of the demo's shape, after warm-up steps.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

# Use the code of the checkout this script is in, even where the shared virtual environment's
# editable install points at another checkout.
_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse
import itertools
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]


def ensure_shards(shards: Path | None) -> Path:
    if shards is not None and (shards / "stats.json").exists():
        return shards
    from stoicheia.data.shards import convert

    corpus = Path(os.environ.get("STOICHEIA_CORPUS", REPO.parent / "shared" / "corpus"))
    out = Path(tempfile.mkdtemp(prefix="stoicheia-bench-")) / "shards"
    print(f"(no shards given: converting Hesiod + Homeric Hymns + PROIEL into {out})")
    convert(
        {
            "gold": [corpus / "perseus" / "Hesiod", corpus / "perseus" / "Homeric_Hymns"],
            "silver": [corpus / "ud" / "grc_proiel-ud-dev.conllu"],
        },
        out,
        workers=1,
        progress=False,
    )
    return out


def bench_data(shards: Path, seq_len: int, rows: int, batches: int) -> None:
    from stoicheia.data.loader import PackedLoader
    from stoicheia.data.stream import NoisedRecordStream, make_streams
    from stoicheia.noise import NoiseConfig

    ds = NoisedRecordStream(
        streams=make_streams(shards, {"gold": 1.0, "silver": 1.0}, "train"),
        seq_len=seq_len,
        noise=NoiseConfig(),
        noise_seed=0,
        batch_size=16,
    )
    loader = PackedLoader(ds, rows=rows, num_workers=0)
    it = iter(loader)
    next(it)  # open shards, warm caches
    letters = slots = 0
    t0 = time.perf_counter()
    for batch in itertools.islice(it, batches):
        letters += int((batch["seg_id"] != 0).sum())
        slots += batch["seg_id"].numel()
    seconds = time.perf_counter() - t0
    print(f"data pipeline, T={seq_len}, {rows} rows/batch, {batches} batches, 1 process:")
    print(f"  {letters / seconds:,.0f} letters/s per worker   row fill {letters / slots:.3f}   {seconds / batches * 1e3:.1f} ms/batch")


def bench_step(shards: Path, steps: int) -> None:
    from stoicheia.config import batch_split, load_config
    from stoicheia.data.loader import PackedLoader
    from stoicheia.data.stream import NoisedRecordStream, make_streams
    from stoicheia.model.composer_model import StoicheiaModel
    from stoicheia.model.optim import param_groups

    cfg = load_config(REPO / "yamls" / "demo.yaml")
    torch.manual_seed(0)
    model = StoicheiaModel(cfg.model, aux_weight=cfg.train.aux_weight)
    opt = torch.optim.AdamW(param_groups(model, cfg.train.weight_decay), lr=cfg.train.lr)
    ds = NoisedRecordStream(
        streams=make_streams(shards, {"gold": 1.0, "silver": 1.0}, "train"),
        seq_len=cfg.data.seq_len,
        noise=cfg.noise,
        noise_seed=0,
        batch_size=cfg.data.records_per_batch,
    )
    rows = cfg.train.micro_batch_rows * batch_split(cfg.train, 1)[0]
    batches = list(itertools.islice(iter(PackedLoader(ds, rows=rows)), steps + 3))
    times = []
    for k, batch in enumerate(batches):
        t0 = time.perf_counter()
        loss = model.loss(model(batch), batch)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if k >= 3:
            times.append(time.perf_counter() - t0)
    letters = statistics.mean(int((b["seg_id"] != 0).sum()) for b in batches[3:])
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"demo model ({n_params / 1e6:.2f} M parameters, {rows} x {cfg.data.seq_len} slots/step, "
        f"{torch.get_num_threads()} threads):"
    )
    print(
        f"  step time median {statistics.median(times) * 1e3:.0f} ms (min {min(times) * 1e3:.0f}, max {max(times) * 1e3:.0f})"
        f"   {letters / statistics.median(times):,.0f} letters/s"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shards", type=Path, default=REPO / "data" / "shards")
    p.add_argument("--seq-len", type=int, default=8192)
    p.add_argument("--rows", type=int, default=4)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--steps", type=int, default=10)
    args = p.parse_args()
    shards = ensure_shards(args.shards)
    bench_data(shards, args.seq_len, args.rows, args.batches)
    bench_step(shards, args.steps)


if __name__ == "__main__":
    main()
