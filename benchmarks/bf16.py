"""Benchmark: fp32 against bf16 autocast on the CPU: training letters/s per width and depth,
inference forward time, and the loss curves of both over a few hundred steps.

    .venv/bin/python benchmarks/bf16.py [--shards data/shards] [--shapes 96x4,192x4,256x4,192x8]
        [--threads 1] [--rounds 3] [--round-steps 1] [--curve-steps 300] [--curve-width 64]
        [--curve-depth 4] [--curve-seq-len 256] [--out benchmarks/results]
        [--plot docs/img/bf16_loss.png] [--skip-speed] [--skip-training] [--skip-curves]
        [--inference-rounds 9]

Prints figures and tables; asserts nothing. ``--threads``: torch's CPU threads (default: what
torch has, printed). On a shared machine, 1 thread measures what one core computes: with 2
threads on 2 busy cores, every operation waits for the descheduled thread, which hides the
arithmetic (the same reason as ``stoicheia.inference.loading.inference_threads``).

1. **Training speed.** For every ``WIDTHxDEPTH`` of ``--shapes`` (heads of 32 dimensions, the
   demo's other settings: 512-slot rows, 8 rows per step, local window 128), two copies of one
   model (same init) train on the same real packed batches, one in fp32 and one under bf16 autocast
   (``StoicheiaModel(cpu_bf16=True)``, what ``train.precision=amp_bf16`` runs on a CPU):
   forward, loss, backward, gradient clipping, AdamW step. They are interleaved: each round runs
   ``--round-steps`` fp32 steps then as many bf16 steps, so a busy machine slows both alike;
   round 0 warms up and is not counted. Letters/s = real letters per batch / median step time.
2. **Inference speed.** The forward pass alone (``no_grad``, eval mode), interleaved likewise,
   at the evaluation's shape (8 rows x 512 slots) and at a restoration's (1 row x 256 slots),
   with the largest difference between the fp32 and bf16 char log-probabilities.
3. **Loss curves.** ``--curve-steps`` steps of the ``--curve-width`` x ``--curve-depth`` model
   (8 rows of ``--curve-seq-len`` slots) from the same init on the same batches (lr 2e-3, 4 %
   linear warm-up, then constant; clip 1, weight decay 0.1, AdamW betas 0.9/0.95) in fp32, in
   bf16, and in fp32 again from another init seed (the seed-to-seed noise the bf16 difference
   is judged against); bits/char on 48 dev records (iid masking at t = 0.15, eval seed 0)
   every ``--eval-every`` steps, each model in its own precision.
   Written to ``OUT/bf16_curves.json`` and plotted to ``--plot``.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

# Use the code of the checkout this script is in, even where the shared virtual environment's
# editable install points at another checkout.
_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))
_sys.path.insert(0, str(_Path(__file__).resolve().parent))

import argparse  # noqa: E402
import copy  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _model(width: int, depth: int, seed: int, cpu_bf16: bool, window: int = 128):
    from stoicheia.model.composer_model import StoicheiaModel
    from stoicheia.model.config import EncoderConfig

    torch.manual_seed(seed)
    cfg = EncoderConfig(
        d_model=width, n_layers=depth, n_heads=max(1, width // 32), char_window=window
    )
    return StoicheiaModel(cfg, aux_weight=0.1, cpu_bf16=cpu_bf16)


def _optimizer(model, lr: float = 2e-3):
    from stoicheia.model.optim import param_groups

    return torch.optim.AdamW(param_groups(model, 0.1), lr=lr, betas=(0.9, 0.95), eps=1e-8)


def _step(model, opt, batch) -> float:
    loss = model.loss(model(batch), batch)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return float(model.last_loss_terms["char"])


def _batches(shards: Path, n: int, seq_len: int = 512, rows: int = 8):
    from throughput import train_stream

    from stoicheia.data.loader import PackedLoader
    from stoicheia.noise import NoiseConfig

    ds = train_stream(shards, seq_len, NoiseConfig(loss_weight="uniform"), 8)
    return list(itertools.islice(iter(PackedLoader(ds, rows=rows)), n))


def bench_training(shards: Path, shapes, rounds: int, round_steps: int) -> list[dict]:
    batches = _batches(shards, (rounds + 1) * round_steps)
    letters = statistics.mean(int((b["seg_id"] != 0).sum()) for b in batches)
    rows = []
    print(
        f"training step (forward, loss, backward, clip, AdamW), 8 x 512 slots, "
        f"{torch.get_num_threads()} threads, {rounds} interleaved rounds of {round_steps} steps:"
    )
    print(
        f"  {'width':>5} {'depth':>5} {'params':>8} "
        f"{'fp32 letters/s':>15} {'bf16 letters/s':>15} {'bf16/fp32':>9}"
    )
    for width, depth in shapes:
        pair = {}
        for bf in (False, True):
            m = _model(width, depth, 0, bf)
            pair[bf] = (m, _optimizer(m))
        times: dict[bool, list[float]] = {False: [], True: []}
        for r in range(rounds + 1):
            chunk = batches[r * round_steps : (r + 1) * round_steps]
            for bf in (False, True):
                m, opt = pair[bf]
                t0 = time.perf_counter()
                for b in chunk:
                    _step(m, opt, b)
                if r > 0:
                    times[bf].append((time.perf_counter() - t0) / len(chunk))
        fp, bf = (letters / statistics.median(times[k]) for k in (False, True))
        n_params = sum(p.numel() for p in pair[False][0].parameters())
        rows.append({"width": width, "depth": depth, "params": n_params, "fp32": fp, "bf16": bf})
        print(
            f"  {width:5d} {depth:5d} {n_params / 1e6:7.2f}M "
            f"{fp:15,.0f} {bf:15,.0f} {bf / fp:8.2f}x",
            flush=True,
        )
    return rows


def bench_inference(shards: Path, shapes, rounds: int) -> list[dict]:
    big = _batches(shards, 1)[0]
    small = {k: v[:1, :256] for k, v in big.items()}
    out = []
    print(f"inference forward (no_grad, eval), {rounds} interleaved rounds:")
    print(
        f"  {'width':>5} {'depth':>5} {'shape':>7} {'fp32 ms':>8} {'bf16 ms':>8} "
        f"{'bf16/fp32 speed':>15} {'max |dlogp|':>11}"
    )
    for width, depth in shapes:
        fp = _model(width, depth, 0, False).eval()
        bf = copy.deepcopy(fp)
        bf.cpu_bf16 = True
        for label, batch in (("8x512", big), ("1x256", small)):
            times: dict[bool, list[float]] = {False: [], True: []}
            with torch.no_grad():
                for r in range(rounds + 1):
                    for flag, m in ((False, fp), (True, bf)):
                        t0 = time.perf_counter()
                        logits = m(batch)["char"]
                        if r > 0:
                            times[flag].append(time.perf_counter() - t0)
                        if r == 0:
                            if flag:
                                lb = logits.log_softmax(-1)
                            else:
                                lf = logits.log_softmax(-1)
            sup = batch["seg_id"] != 0
            diff = float((lf - lb).abs()[sup].max())
            a, b = (statistics.median(times[k]) * 1e3 for k in (False, True))
            out.append(
                {
                    "width": width,
                    "depth": depth,
                    "shape": label,
                    "fp32_ms": a,
                    "bf16_ms": b,
                    "max_abs_dlogp": diff,
                }
            )
            print(
                f"  {width:5d} {depth:5d} {label:>7} {a:8.1f} {b:8.1f} {a / b:14.2f}x {diff:11.4f}",
                flush=True,
            )
    return out


def _dev_batches(shards: Path, seq_len: int):
    from stoicheia.data.eval_batches import build_eval_batches
    from stoicheia.data.eval_sets import read_eval_sets

    sets = read_eval_sets(shards, {"gold": 1.0, "silver": 1.0}, ["dev", "holdout"], 48)
    name = "dev" if "dev" in sets else "holdout"
    return name, build_eval_batches(sets[name], seq_len, 8, 0.15, 0)


def _bits(model, batches) -> float:
    from stoicheia.model.metrics import BitsPerChar

    metric = BitsPerChar()
    model.eval()
    with torch.no_grad():
        for b in batches:
            metric.update(model(b)["char"], b["tgt_chars"])
    model.train()
    return float(metric.compute())


def loss_curves(
    shards: Path,
    steps: int,
    width: int,
    depth: int,
    seq_len: int,
    eval_every: int,
    out: Path,
    plot: Path,
) -> dict:
    batches = _batches(shards, steps, seq_len)
    dev_name, dev = _dev_batches(shards, seq_len)
    warm = max(1, round(0.04 * steps))
    runs = {"fp32": (0, False), "bf16": (0, True), "fp32 (init seed 1)": (1, False)}
    curves: dict[str, dict[str, list]] = {}
    print(
        f"loss curves: d_model {width} x {depth} layers, {steps} steps of 8 x {seq_len} slots, "
        f"{dev_name} bits/char every {eval_every} steps"
    )
    t_all = time.perf_counter()
    for name, (seed, bf) in runs.items():
        m = _model(width, depth, seed, bf)
        opt = _optimizer(m)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm))
        c: dict[str, list] = {"step": [], "train_bits": [], "eval_step": [], "dev_bits": []}
        t0 = time.perf_counter()
        for s, b in enumerate(batches, 1):
            c["step"].append(s)
            c["train_bits"].append(_step(m, opt, b) / math.log(2))
            sched.step()
            if s % eval_every == 0 or s == steps:
                c["eval_step"].append(s)
                c["dev_bits"].append(_bits(m, dev))
        c["seconds"] = time.perf_counter() - t0  # type: ignore[assignment]
        curves[name] = c
        print(
            f"  {name:20s} final {dev_name} bits/char {c['dev_bits'][-1]:.4f}   "
            "train bits/char, mean of the last 50 steps "
            f"{statistics.mean(c['train_bits'][-50:]):.4f}   "
            f"{c['seconds']:.0f} s",
            flush=True,
        )
    f, b, g = (curves[k]["dev_bits"] for k in ("fp32", "bf16", "fp32 (init seed 1)"))
    d_bf = [abs(x - y) for x, y in zip(f, b, strict=True)]
    d_seed = [abs(x - y) for x, y in zip(f, g, strict=True)]
    late = len(f) // 2
    summary = {
        "dev_set": dev_name,
        "width": width,
        "depth": depth,
        "steps": steps,
        "seq_len": seq_len,
        "max_abs_dev_bits_bf16_vs_fp32_second_half": max(d_bf[late:]),
        "max_abs_dev_bits_seed1_vs_seed0_second_half": max(d_seed[late:]),
        "threads": torch.get_num_threads(),
        "wall_seconds": time.perf_counter() - t_all,
    }
    print(
        f"  |bf16 - fp32| {dev_name} bits/char over the second half: max "
        f"{summary['max_abs_dev_bits_bf16_vs_fp32_second_half']:.4f}; "
        "|fp32 seed 1 - fp32 seed 0|: max "
        f"{summary['max_abs_dev_bits_seed1_vs_seed0_second_half']:.4f}"
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "bf16_curves.json").write_text(
        json.dumps({"summary": summary, "curves": curves}, indent=1), encoding="utf-8"
    )
    _plot(curves, summary, plot)
    print(f"  wrote {out / 'bf16_curves.json'} and {plot}")
    return summary


def _plot(curves: dict, summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    styles = {"fp32": "-", "bf16": "--", "fp32 (init seed 1)": ":"}
    for name, c in curves.items():
        k = 10  # moving mean of the per-step training loss
        tb = c["train_bits"]
        smooth = [statistics.mean(tb[max(0, i - k + 1) : i + 1]) for i in range(len(tb))]
        ax1.plot(c["step"], smooth, styles[name], label=name)
        ax2.plot(c["eval_step"], c["dev_bits"], styles[name], marker="o", ms=3, label=name)
    ax1.set(xlabel="step", ylabel="train loss (bits/char, mean of 10 steps)", title="training")
    ax2.set(
        xlabel="step",
        ylabel=f"{summary['dev_set']} bits/char",
        title=f"{summary['dev_set']} set (d_model {summary['width']} x {summary['depth']})",
    )
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    from throughput import ensure_shards

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shards", type=Path, default=REPO / "data" / "shards")
    p.add_argument("--shapes", default="96x4,192x4,256x4,192x8", help="WIDTHxDEPTH,...")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--round-steps", type=int, default=1)
    p.add_argument("--curve-steps", type=int, default=300)
    p.add_argument("--curve-width", type=int, default=64)
    p.add_argument("--curve-depth", type=int, default=4)
    p.add_argument("--curve-seq-len", type=int, default=256)
    p.add_argument("--eval-every", type=int, default=25)
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    p.add_argument("--plot", type=Path, default=REPO / "docs" / "img" / "bf16_loss.png")
    p.add_argument("--skip-speed", action="store_true", help="only the loss curves")
    p.add_argument("--skip-training", action="store_true", help="no training-speed table")
    p.add_argument(
        "--inference-rounds", type=int, default=None, help="rounds of the inference table"
    )
    p.add_argument("--skip-curves", action="store_true", help="only the speed tables")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from stoicheia.model.precision import choose_precision, cpu_bf16_units

    cpu = cpu_bf16_units()
    print(f"CPU: {cpu.model}; bf16 instructions: {cpu.flag or 'none'}; torch {torch.__version__}")
    print(f"train.precision=auto here: {choose_precision('auto', 'cpu').reason}")
    shards = ensure_shards(args.shards)
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    if not args.skip_speed:
        if not args.skip_training:
            bench_training(shards, shapes, args.rounds, args.round_steps)
        bench_inference(shards, shapes, args.inference_rounds or 3 * args.rounds)
    if not args.skip_curves:
        loss_curves(
            shards,
            args.curve_steps,
            args.curve_width,
            args.curve_depth,
            args.curve_seq_len,
            args.eval_every,
            args.out,
            args.plot,
        )


if __name__ == "__main__":
    main()
