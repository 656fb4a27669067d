"""Choose the demo's model size and batch shape by a small measured sweep.

    .venv/bin/python benchmarks/demo_sweep.py [--shards data/shards] [--budget-min 10]
        [--only NAME ...]

Every configuration below trains the demo recipe (``yamls/demo.yaml`` plus its overrides) from
scratch within the same wall-clock budget (default 10 minutes of training on this machine):

1. a calibration run of ``--calib-steps`` steps measures the seconds per step (evaluations and
   checkpoints included, as in the real run); all calibrations run first, back to back;
2. ``train.nominal_steps`` is set so that the longest run (its anneal may start up to
   ``max_steps - nominal_steps`` batches late) fits the budget: ``max_steps = 1.2 * nominal``,
   a checkpoint + evaluation every ``nominal / 20`` steps (24 in the longest run), so
   ``nominal = floor((budget - 24 * evaluation seconds) / (1.2 * step seconds))``;
3. the run trains to its end and its best held-out ``dev/bits_per_char`` (from ``best.json``)
   and its wall time are recorded.

Prints one table row per configuration (and writes ``sweep.json`` in ``--out``); the lowest
held-out bits per character wins. Run it alone on the machine (it measures time). This is
long: about (budget + calibration) x configurations.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: The first sweep's grid (2026-12-01, fp32 only), kept so its table can be reproduced
#: (``--grid fp32``). Sizes around the demo of that day (128 x 4, T = 512, 8 rows).
_D128 = ["model.d_model=128", "model.n_heads=4"]
FP32_CONFIGS: dict[str, list[str]] = {
    "d128-L4-T512-r8": [*_D128],
    "d96-L4-T512-r8": [],
    "d192-L4-T512-r8": ["model.d_model=192", "model.n_heads=6"],
    "d128-L6-T512-r8": [*_D128, "model.n_layers=6"],
    "d64-L4-T512-r8": ["model.d_model=64", "model.n_heads=4"],
}

_BF16 = ["train.precision=amp_bf16"]
_D192 = ["model.d_model=192", "model.n_heads=6"]
#: The sweep with bf16 allowed (issue 24 section 2): width, depth, rows and sequence length, and
#: the learning rate, around the hint that width 192 in bf16 runs at the fp32 demo's letters/s.
#: ``fp32-d96-L4`` is ``yamls/demo.yaml`` unchanged (the demo before this sweep).
BF16_CONFIGS: dict[str, list[str]] = {
    "fp32-d96-L4": [],
    "bf16-d96-L4": [*_BF16],
    "bf16-d128-L4": [*_BF16, *_D128],
    "bf16-d128-L6": [*_BF16, *_D128, "model.n_layers=6"],
    "bf16-d192-L4": [*_BF16, *_D192],
    "bf16-d192-L4-lr1e-3": [*_BF16, *_D192, "train.lr=1e-3"],
    "bf16-d192-L4-lr3e-3": [*_BF16, *_D192, "train.lr=3e-3"],
    "bf16-d192-L4-T256-r16": [
        *_BF16,
        *_D192,
        "data.seq_len=256",
        "train.micro_batch_rows=16",
        "train.global_batch_rows=16",
        "model.char_window=64",
    ],
    "bf16-d256-L4": [*_BF16, "model.d_model=256", "model.n_heads=8"],
    "bf16-d96-L4-lr1e-3": [*_BF16, "train.lr=1e-3"],
    "bf16-d96-L4-lr3e-3": [*_BF16, "train.lr=3e-3"],
    "bf16-d128-L4-lr1e-3": [*_BF16, *_D128, "train.lr=1e-3"],
    "bf16-d128-L4-lr1e-3-T256-r16": [
        *_BF16,
        *_D128,
        "train.lr=1e-3",
        "data.seq_len=256",
        "train.micro_batch_rows=16",
        "train.global_batch_rows=16",
        "model.char_window=64",
    ],
    "bf16-d96-L4-T256-r16": [
        *_BF16,
        "data.seq_len=256",
        "train.micro_batch_rows=16",
        "train.global_batch_rows=16",
        "model.char_window=64",
    ],
}
GRIDS = {"bf16": BF16_CONFIGS, "fp32": FP32_CONFIGS}


def run(cmd: list[str], log: Path, threads: int | None = None) -> tuple[int, float]:
    """Run ``cmd`` in the repository with its output in ``log``; ``threads`` sets
    ``OMP_NUM_THREADS`` (torch's intra-op threads). Returns (exit status, wall seconds)."""
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    t0 = time.perf_counter()
    with open(log, "w", encoding="utf-8") as fh:
        rc = subprocess.call(cmd, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT, env=env)
    return rc, time.perf_counter() - t0


def calibrate(name: str, base: list[str], steps: int, out: Path) -> tuple[float, float] | None:
    """Time one configuration: ``(seconds per training step, seconds per evaluation +
    checkpoint)``, from a ``steps``-batch run that evaluates and saves every ``steps // 3``
    batches. The step time is the median gap between consecutive logged batches; the
    evaluation time is the mean excess of the gaps that hold an evaluation (over 3x the
    median). None if the run failed."""
    calib = f"sweep-{name}-calib"
    shutil.rmtree(out / calib, ignore_errors=True)
    rc, _ = run(
        [
            *base,
            f"run_name={calib}",
            f"train.nominal_steps={steps}",
            f"train.max_steps={steps}",
            f"train.save_interval={max(1, steps // 3)}",
            "callbacks.auto_anneal=false",
        ],
        out / f"{calib}.log",
    )
    if rc != 0:
        print(f"{name}: calibration failed (exit {rc}); see {out / f'{calib}.log'}", flush=True)
        return None
    rows_ = [json.loads(x) for x in (out / calib / "metrics.jsonl").read_text().splitlines()]
    at = {r["step"]: r["time"] for r in rows_ if "loss/total" in r}  # one row per batch
    times = [at[k] for k in sorted(at)]
    gaps = [
        b - a for a, b in zip(times[1:-1], times[2:], strict=True)
    ]  # the first batch carries start-up
    step = statistics.median(gaps)
    spikes = [g - step for g in gaps if g > 3 * step]
    return step, (sum(spikes) / len(spikes) if spikes else 0.0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shards", default="data/shards")
    p.add_argument(
        "--budget-min",
        type=float,
        default=10.0,
        help="training wall time per configuration on the idle machine, minutes",
    )
    p.add_argument("--calib-steps", type=int, default=30)
    p.add_argument("--out", default="checkpoints/sweep")
    p.add_argument("--grid", choices=sorted(GRIDS), default="bf16")
    p.add_argument("--only", nargs="+", help="run only these configurations")
    p.add_argument(
        "--parallel",
        type=int,
        default=1,
        help="long runs at once (after the calibrations, which run alone); their step counts "
        "are fixed by the calibration, so sharing the cores changes their wall time only",
    )
    p.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS of each long run")
    p.add_argument(
        "--calibration",
        nargs="+",
        metavar="NAME:STEP_S:EVAL_S",
        help="take a configuration's seconds per step and per evaluation from an earlier "
        "calibration instead of measuring them (one of the same shape: a learning rate does not "
        "change the step time), e.g. when the machine is busy now",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the long runs in --out from their newest checkpoints (autoresume) "
        "instead of starting them again; give the same --calibration so the step counts match",
    )
    args = p.parse_args()
    configs = GRIDS[args.grid]
    if args.only and (unknown := sorted(set(args.only) - set(configs))):
        p.error(f"unknown configuration(s) {unknown}; known: {sorted(configs)}")
    out = REPO / args.out
    out.mkdir(parents=True, exist_ok=True)
    composer = str(REPO / ".venv" / "bin" / "composer")
    names = [n for n in configs if not args.only or n in args.only]

    def base(name: str) -> list[str]:
        return [
            composer,
            "recipes/train.py",
            "yamls/demo.yaml",
            f"data.shard_root={args.shards}",
            *configs[name],
            f"train.save_folder={args.out}/{{run_name}}",
        ]

    # All calibrations first, alone and back to back: the step counts are fixed from them, so
    # the long runs after them give the same result however busy the machine is by then.
    per_step, per_eval = {}, {}
    given = {}
    for spec in args.calibration or []:
        try:
            name, step_s, eval_s = spec.split(":")
            given[name] = (float(step_s), float(eval_s))
        except ValueError:
            p.error(f"--calibration {spec!r}: write NAME:SECONDS_PER_STEP:SECONDS_PER_EVALUATION")
    for name in names:
        t = given.get(name) or calibrate(name, base(name), args.calib_steps, out)
        if t is not None:
            per_step[name], per_eval[name] = t
            print(
                f"{name:<26} {t[0]:6.3f} s/step, {t[1]:5.1f} s/evaluation (calibration)", flush=True
            )

    def long_run(name: str) -> dict:
        # the longest run: max_steps = 1.2 x nominal batches and 24 evaluations + checkpoints
        nominal = max(
            50, math.floor((args.budget_min * 60 - 24 * per_eval[name]) / (per_step[name] * 1.2))
        )
        interval = max(10, nominal // 20)
        run_name = f"sweep-{name}"
        if not args.resume:
            shutil.rmtree(out / run_name, ignore_errors=True)
        rc, seconds = run(
            [
                *base(name),
                f"run_name={run_name}",
                f"train.nominal_steps={nominal}",
                f"train.max_steps={int(nominal * 1.2)}",
                f"train.save_interval={interval}",
            ],
            out / f"{run_name}.log",
            args.threads,
        )
        folder = out / run_name
        best, anneal = (
            json.loads((folder / f).read_text()) if (folder / f).exists() else {}
            for f in ("best.json", "anneal.json")
        )
        row = {
            "config": name,
            "overrides": configs[name],
            "seconds_per_step": per_step[name],
            "seconds_per_evaluation": per_eval[name],
            "nominal_steps": nominal,
            "exit": rc,
            "wall_minutes": seconds / 60,
            "threads": args.threads,
            "anneal": anneal,
            "best_step": best.get("step"),
            "best_dev_bits_per_char": best.get("value"),
        }
        print(
            f"{name:<26} {per_step[name]:6.3f} s/step  {nominal:5d} steps  "
            f"{seconds / 60:5.1f} min wall  best {best.get('metric', '?')} "
            f"{best.get('value', float('nan')):.4f} at step {best.get('step')}",
            flush=True,
        )
        return row

    rows: list[dict] = []
    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        for row in pool.map(long_run, list(per_step)):
            rows.append(row)
            (out / "sweep.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    done = [r for r in rows if r["best_dev_bits_per_char"] is not None]
    if done:
        win = min(done, key=lambda r: r["best_dev_bits_per_char"])
        print(
            f"lowest held-out bits/char: {win['config']} ({win['best_dev_bits_per_char']:.4f}); "
            f"overrides {win['overrides']}"
        )
    return 0 if done else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    _sys.exit(main())
