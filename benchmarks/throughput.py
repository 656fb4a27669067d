"""Benchmark: data-pipeline letters per second per worker, the demo model's step time, and the
Composer trainer's overhead over a bare PyTorch loop.

    .venv/bin/python benchmarks/throughput.py [--shards data/shards] [--seq-len 8192] [--batches 20]
        [--rounds 6] [--round-steps 10] [--device auto]

Prints figures; asserts nothing. The data pipeline is measured in one process (num_workers=0),
so the reading, splitting, noising and packing all count against one core: that is the
throughput of one DataLoader worker (plus the main-process packing, which is a small part).
The step time is forward + backward + AdamW step of ``yamls/demo.yaml``'s model on packed
batches of the demo's shape, after warm-up steps.

The model runs on the GPU when there is one (``--device auto``; bf16 autocast, TF32, fused
AdamW: what the recipe does there; times taken after ``torch.cuda.synchronize()``), else on the
CPU in float32.

Composer overhead: the same batches (held in memory, so no data loading is timed) train two
copies of the demo model, one in a bare loop (forward, loss, backward, clip, AdamW step) and
one through a Composer ``Trainer`` (same optimizer, the recipe's ``GradientGuard`` for the
clipping, no callbacks or loggers: the framework alone), interleaved: each round runs
``--round-steps`` steps of the bare loop, then the same steps through
``trainer.fit(duration=...)``, so both see the same machine state. The ratio of the median
per-step wall times (Composer / bare) is printed; the goal is at most 1.05.
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
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from stoicheia.data.stream import NoisedRecordStream
    from stoicheia.noise import NoiseConfig

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


def train_stream(
    shards: Path, seq_len: int, noise: NoiseConfig, records_per_batch: int
) -> NoisedRecordStream:
    """The benchmarks' training stream: the gold and silver tiers of ``shards`` mixed 1:1
    (train split), noised with ``noise`` (a ``NoiseConfig``, noise seed 0), read
    ``records_per_batch`` records per worker batch."""
    from stoicheia.data.stream import NoisedRecordStream, make_streams

    return NoisedRecordStream(
        streams=make_streams(shards, {"gold": 1.0, "silver": 1.0}, "train"),
        seq_len=seq_len,
        noise=noise,
        noise_seed=0,
        batch_size=records_per_batch,
    )


def bench_data(shards: Path, seq_len: int, rows: int, batches: int) -> None:
    from stoicheia.data.loader import PackedLoader
    from stoicheia.noise import NoiseConfig

    ds = train_stream(shards, seq_len, NoiseConfig(), 16)
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
    print(
        f"  {letters / seconds:,.0f} letters/s per worker   row fill {letters / slots:.3f}   "
        f"{seconds / batches * 1e3:.1f} ms/batch"
    )


def pick_device(name: str) -> torch.device:
    """``auto``: CUDA when torch sees a GPU, else the CPU (TF32 matmuls on a GPU, as the recipe)."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name in ("gpu", "cuda"):
        if not torch.cuda.is_available():
            raise SystemExit("--device gpu: torch sees no CUDA device; use --device cpu")
        torch.backends.cuda.matmul.allow_tf32 = True
        return torch.device("cuda")
    return torch.device("cpu")


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def bench_step(shards: Path, steps: int, dev: torch.device) -> None:
    from stoicheia.config import batch_split, load_config
    from stoicheia.data.loader import PackedLoader
    from stoicheia.model.composer_model import StoicheiaModel
    from stoicheia.model.optim import param_groups

    cfg = load_config(REPO / "yamls" / "demo.yaml")
    torch.manual_seed(0)
    model = StoicheiaModel(cfg.model, aux_weight=cfg.train.aux_weight).to(dev)
    gpu = dev.type == "cuda"
    opt = torch.optim.AdamW(param_groups(model, cfg.train.weight_decay), lr=cfg.train.lr, fused=gpu)
    ds = train_stream(shards, cfg.data.seq_len, cfg.noise, cfg.data.records_per_batch)
    rows = cfg.train.micro_batch_rows * batch_split(cfg.train, 1)[0]
    batches = [
        {k: v.to(dev) for k, v in b.items()}
        for b in itertools.islice(iter(PackedLoader(ds, rows=rows)), steps + 3)
    ]
    times = []
    for k, batch in enumerate(batches):
        _sync(dev)
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=gpu):
            loss = model.loss(model(batch), batch)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        _sync(dev)
        if k >= 3:
            times.append(time.perf_counter() - t0)
    letters = statistics.mean(int((b["seg_id"] != 0).sum()) for b in batches[3:])
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"demo model ({n_params / 1e6:.2f} M parameters, {rows} x {cfg.data.seq_len} slots/step, "
        f"{torch.cuda.get_device_name() if gpu else f'{torch.get_num_threads()} CPU threads'}):"
    )
    print(
        f"  step time median {statistics.median(times) * 1e3:.0f} ms "
        f"(min {min(times) * 1e3:.0f}, max {max(times) * 1e3:.0f})"
        f"   {letters / statistics.median(times):,.0f} letters/s"
    )


def bench_composer_overhead(shards: Path, rounds: int, round_steps: int, dev: torch.device) -> None:
    import logging

    from composer import DataSpec, Trainer
    from composer.utils import dist

    from stoicheia.config import load_config
    from stoicheia.data.loader import PackedLoader
    from stoicheia.model.composer_model import StoicheiaModel
    from stoicheia.model.optim import param_groups
    from stoicheia.train.algorithms.gradient_guard import GradientGuard

    logging.getLogger("composer").setLevel(logging.ERROR)
    cfg = load_config(REPO / "yamls" / "demo.yaml")
    ds = train_stream(shards, cfg.data.seq_len, cfg.noise, cfg.data.records_per_batch)
    rows = cfg.train.micro_batch_rows * cfg.train.grad_accum
    total = (rounds + 1) * round_steps  # round 0 warms both paths up and is not counted
    batches = list(itertools.islice(iter(PackedLoader(ds, rows=rows)), total))

    gpu = dev.type == "cuda"

    def make():
        torch.manual_seed(0)
        model = StoicheiaModel(cfg.model, aux_weight=cfg.train.aux_weight).to(dev)
        opt = torch.optim.AdamW(
            param_groups(model, cfg.train.weight_decay), lr=cfg.train.lr, fused=gpu
        )
        return model, opt

    bare_model, bare_opt = make()
    comp_model, comp_opt = make()

    class _Batches(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return len(batches)

        def __getitem__(self, i: int):
            return batches[i]

    if not dist.is_initialized():
        dist.initialize_dist("gpu" if gpu else "cpu")
    loader = torch.utils.data.DataLoader(_Batches(), batch_size=None, shuffle=False)
    trainer = Trainer(
        model=comp_model,
        train_dataloader=DataSpec(
            loader, get_num_samples_in_batch=lambda b: int(b["seg_id"].shape[0])
        ),
        optimizers=comp_opt,
        max_duration=f"{total}ba",
        device="gpu" if gpu else "cpu",
        precision="amp_bf16" if gpu else "fp32",
        device_train_microbatch_size=cfg.train.micro_batch_rows,
        progress_bar=False,
        log_to_console=False,
        loggers=[],
        callbacks=[],
        algorithms=[
            GradientGuard(clip_norm=cfg.train.clip_norm)
        ],  # the recipe's clipping, as in the bare loop
        save_folder=None,
        seed=0,
    )

    def bare(steps: list[dict]) -> None:
        for batch in steps:
            batch = {k: v.to(dev, non_blocking=True) for k, v in batch.items()}
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=gpu):
                loss = bare_model.loss(bare_model(batch), batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(bare_model.parameters(), cfg.train.clip_norm)
            bare_opt.step()
            bare_opt.zero_grad(set_to_none=True)

    bare_t, comp_t = [], []
    for r in range(rounds + 1):
        chunk = batches[r * round_steps : (r + 1) * round_steps]
        _sync(dev)
        t0 = time.perf_counter()
        bare(chunk)
        _sync(dev)
        t1 = time.perf_counter()
        trainer.fit(duration=f"{round_steps}ba")
        _sync(dev)
        t2 = time.perf_counter()
        if r > 0:
            bare_t.append((t1 - t0) / round_steps)
            comp_t.append((t2 - t1) / round_steps)
    trainer.close()
    b, c = statistics.median(bare_t), statistics.median(comp_t)
    print(
        f"Composer trainer vs bare PyTorch loop, demo model, {rounds} interleaved rounds "
        f"of {round_steps} steps:"
    )
    print(
        f"  bare loop {b * 1e3:.0f} ms/step   Composer {c * 1e3:.0f} ms/step   "
        f"overhead ratio {c / b:.3f} (goal <= 1.05)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shards", type=Path, default=REPO / "data" / "shards")
    p.add_argument("--seq-len", type=int, default=8192)
    p.add_argument("--rows", type=int, default=4)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument(
        "--rounds",
        type=int,
        default=6,
        help="interleaved rounds of the Composer-overhead measurement",
    )
    p.add_argument("--round-steps", type=int, default=10, help="steps per round and per path")
    p.add_argument(
        "--only-overhead", action="store_true", help="measure only the Composer overhead"
    )
    p.add_argument(
        "--device",
        choices=["auto", "cpu", "gpu"],
        default="auto",
        help="where the model runs (auto: the GPU when there is one)",
    )
    args = p.parse_args()
    dev = pick_device(args.device)
    shards = ensure_shards(args.shards)
    if not args.only_overhead:
        bench_data(shards, args.seq_len, args.rows, args.batches)
        bench_step(shards, args.steps, dev)
    bench_composer_overhead(shards, args.rounds, args.round_steps, dev)


if __name__ == "__main__":
    main()
