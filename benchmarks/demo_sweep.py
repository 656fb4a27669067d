"""Choose the demo's model size and batch shape by a small measured sweep.

    .venv/bin/python benchmarks/demo_sweep.py [--shards data/shards] [--budget-min 10] [--only NAME ...]

Every configuration below trains the demo recipe (``yamls/demo.yaml`` plus its overrides) from
scratch within the same wall-clock budget (default 10 minutes of training on this machine):

1. a calibration run of ``--calib-steps`` steps measures the seconds per step (evaluations and
   checkpoints included, as in the real run); all calibrations run first, back to back;
2. ``train.nominal_steps`` is set so that the whole run (its anneal may start up to
   ``max_steps - nominal_steps`` batches late) fits the budget: ``nominal = floor(budget /
   (step seconds * 1.2))``, ``max_steps = 1.2 * nominal``, a checkpoint + evaluation every
   ``nominal / 20`` steps;
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
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: name -> overrides of yamls/demo.yaml. Sizes around the demo's (128 x 4, T = 512, 8 rows).
CONFIGS: dict[str, list[str]] = {
    "d128-L4-T512-r8": [],
    "d96-L4-T512-r8": ["model.d_model=96", "model.n_heads=4"],
    "d192-L4-T512-r8": ["model.d_model=192", "model.n_heads=6"],
    "d128-L6-T512-r8": ["model.n_layers=6"],
    "d128-L4-T256-r16": ["data.seq_len=256", "train.micro_batch_rows=16", "model.char_window=64"],
    "d128-L4-T1024-r4": ["data.seq_len=1024", "train.micro_batch_rows=4"],
    "d128-L4-T512-r8-lr3e-3": ["train.lr=3e-3"],
}


def run(cmd: list[str], log: Path) -> tuple[int, float]:
    t0 = time.perf_counter()
    with open(log, "w", encoding="utf-8") as fh:
        rc = subprocess.call(cmd, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT)
    return rc, time.perf_counter() - t0


def calibrate(name: str, base: list[str], steps: int, out: Path) -> float | None:
    """Seconds per training step of one configuration (evaluations and checkpoints included),
    measured over the last two thirds of a ``steps``-batch run; None if the run failed."""
    calib = f"sweep-{name}-calib"
    shutil.rmtree(out / calib, ignore_errors=True)
    rc, _ = run(
        [*base, f"run_name={calib}", f"train.nominal_steps={steps}", f"train.max_steps={steps}",
         f"train.save_interval={max(1, steps // 3)}", "callbacks.auto_anneal=false"],
        out / f"{calib}.log",
    )
    if rc != 0:
        print(f"{name}: calibration failed (exit {rc}); see {out / f'{calib}.log'}", flush=True)
        return None
    rows_ = [json.loads(x) for x in (out / calib / "metrics.jsonl").read_text().splitlines()]
    times = [r["time"] for r in rows_ if "loss/total" in r]
    return (times[-1] - times[len(times) // 3]) / max(1, len(times) - 1 - len(times) // 3)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shards", default="data/shards")
    p.add_argument("--budget-min", type=float, default=10.0, help="training wall time per configuration, minutes")
    p.add_argument("--calib-steps", type=int, default=30)
    p.add_argument("--out", default="checkpoints/sweep")
    p.add_argument("--only", nargs="+", help="run only these configurations")
    args = p.parse_args()
    if args.only and (unknown := sorted(set(args.only) - set(CONFIGS))):
        p.error(f"unknown configuration(s) {unknown}; known: {sorted(CONFIGS)}")
    out = REPO / args.out
    out.mkdir(parents=True, exist_ok=True)
    composer = str(REPO / ".venv" / "bin" / "composer")
    names = [n for n in CONFIGS if not args.only or n in args.only]

    def base(name: str) -> list[str]:
        return [composer, "recipes/train.py", "yamls/demo.yaml", f"data.shard_root={args.shards}", *CONFIGS[name],
                f"train.save_folder={args.out}/{{run_name}}"]

    # All calibrations first, back to back: the step counts are fixed from them, so the long
    # runs after them give the same result even if the machine is busier by then.
    per_step = {}
    for name in names:
        t = calibrate(name, base(name), args.calib_steps, out)
        if t is not None:
            per_step[name] = t
            print(f"{name:<26} {t:6.3f} s/step (calibration)", flush=True)
    rows = []
    for name in per_step:
        nominal = max(50, math.floor(args.budget_min * 60 / (per_step[name] * 1.2)))
        interval = max(10, nominal // 20)
        run_name = f"sweep-{name}"
        shutil.rmtree(out / run_name, ignore_errors=True)
        rc, seconds = run(
            [*base(name), f"run_name={run_name}", f"train.nominal_steps={nominal}",
             f"train.max_steps={int(nominal * 1.2)}", f"train.save_interval={interval}"],
            out / f"{run_name}.log",
        )
        best = json.loads((out / run_name / "best.json").read_text()) if (out / run_name / "best.json").exists() else {}
        row = {
            "config": name, "overrides": CONFIGS[name], "seconds_per_step": per_step[name], "nominal_steps": nominal,
            "exit": rc, "train_minutes": seconds / 60, "best_step": best.get("step"),
            "best_dev_bits_per_char": best.get("value"),
        }
        rows.append(row)
        print(
            f"{name:<26} {per_step[name]:6.3f} s/step  {nominal:5d} steps  {seconds / 60:5.1f} min  "
            f"best {best.get('metric', '?')} {best.get('value', float('nan')):.4f} at step {best.get('step')}",
            flush=True,
        )
        (out / "sweep.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    done = [r for r in rows if r["best_dev_bits_per_char"] is not None]
    if done:
        win = min(done, key=lambda r: r["best_dev_bits_per_char"])
        print(f"lowest held-out bits/char: {win['config']} ({win['best_dev_bits_per_char']:.4f}); overrides {win['overrides']}")
    return 0 if done else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    _sys.exit(main())
