"""Start-up times of the commands that should answer at once (issue 14 §3): ``stoicheia --help``,
``stoicheia status``, ``recipes/train.py --help`` and configuration errors (a key typo, a plugin
option typo, a batch that cannot be split over 2 processes, missing shards), each run
``--repeat`` times in a fresh process; prints the median wall seconds and whether Composer or
torch was imported (it should not be for any of these).

    .venv/bin/python benchmarks/startup.py [--run-folder checkpoints/stoicheia-demo] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = str(REPO / ".venv" / "bin" / "python")

PROBE = """
import runpy, sys
argv = sys.argv[1:]
sys.argv = argv
try:
    if argv[0].endswith(".py"):
        runpy.run_path(argv[0], run_name="__main__")
    else:
        runpy.run_module(argv[0], run_name="__main__")
except SystemExit:
    pass
heavy = [m for m in ("torch", "composer") if m in sys.modules]
print("HEAVY=" + (",".join(heavy) or "-"), file=sys.stderr)
"""


def _time(cmd: list[str], env: dict[str, str], repeat: int) -> tuple[float, str]:
    times, heavy = [], "?"
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [PYTHON, "-c", PROBE, *cmd], cwd=REPO, env=env, capture_output=True, text=True
        )
        times.append(time.perf_counter() - t0)
        heavy = next(
            (line[6:] for line in proc.stderr.splitlines() if line.startswith("HEAVY=")), "?"
        )
    return statistics.median(times), heavy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--run-folder",
        help="a run folder for `stoicheia status` (default: a one-line metrics.jsonl)",
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["PYTHONPATH"] = str(REPO)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.run_folder) if args.run_folder else Path(tmp) / "run"
        if not args.run_folder:
            folder.mkdir()
            (folder / "metrics.jsonl").write_text(
                '{"step": 1, "time": 0, "loss/total": 3.0}\n', encoding="utf-8"
            )
        cases = [
            ("stoicheia --help", ["stoicheia", "--help"], {}),
            ("stoicheia status", ["stoicheia", "status", str(folder)], {}),
            ("recipes/train.py --help", ["recipes/train.py", "--help"], {}),
            ("config typo", ["recipes/train.py", "yamls/demo.yaml", "train.sav_interval=3"], {}),
            (
                "plugin option typo",
                ["recipes/train.py", "yamls/demo.yaml", "callbacks.auto_anneal.stall_windw=3"],
                {},
            ),
            (
                "batch not splittable over 2",
                [
                    "recipes/train.py",
                    "yamls/demo.yaml",
                    "train.global_batch_rows=6",
                    "train.grad_accum=null",
                    "train.micro_batch_rows=2",
                ],
                {"WORLD_SIZE": "2", "RANK": "0"},
            ),
            (
                "shards missing",
                ["recipes/train.py", "yamls/demo.yaml", f"data.shard_root={tmp}/none"],
                {},
            ),
        ]
        print(f"{'command':<30} {'median s':>9}  imports torch/composer")
        for name, cmd, extra in cases:
            seconds, heavy = _time(cmd, {**env, **extra}, args.repeat)
            print(f"{name:<30} {seconds:>9.2f}  {heavy}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
