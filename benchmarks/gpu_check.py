"""The first thing to run on a GPU machine: the GPU path measured in under 8 minutes, on a
bare machine too (torch and numpy are all it needs; Composer's stages run where Composer is).

    python3 benchmarks/gpu_check.py OUT                       # a GPU machine, any Python >= 3.10
    python3 benchmarks/gpu_check.py OUT --wheels wheels/      # + Composer's stack from wheels
    .venv/bin/python benchmarks/gpu_check.py OUT --dry-run    # the same stages, tiny, on a CPU

Installs nothing from a network. Each stage runs in a child process with its own wall-clock
limit (:data:`STAGES`; the last ones get what is left of ``--budget``); a stage that overruns is
killed and reported as ``overrun``, and the check goes on. Every figure is appended to
``OUT/figures.jsonl`` (flushed and synced) the moment it is measured, so a run stopped at any
point keeps what it measured; ``OUT/figures.json`` and ``OUT/figures.txt`` (also printed) are
rewritten after each stage. Logs, runs and the export go to ``--work`` (default ``OUT/work``).

Stages (torch and numpy only, :mod:`gpu_stages.core`, :mod:`gpu_stages.trunk`):

1. ``env``: device, versions, memory, peak bf16 rate, and whether Composer's stack imports.
2. ``flex_vs_sdpa``: FlexAttention against SDPA (same weights, float32), logits and
   gradients, at a row length that is a multiple of 128 and one that is not; on a GPU through
   the compiled trunk and the uncompiled call.
3. ``trunk_8``: the full-width trunk of ``yamls/stoicheia.yaml`` with 8 blocks, compiled,
   trained ``--steps`` steps on rows of 4 x 8,192: compile seconds per graph, steady step
   time (wall, GPU span, kernel time) and the MFU of each, peak memory, host syncs per step,
   the profiler's table of attention, GEMM and element-wise kernels; then the ``no_grad``
   evaluation graph.

Composer stages (run only when composer, streaming and omegaconf import; else reported as
``skipped (composer missing)``; :mod:`gpu_stages.composer_stages`):

4. ``shards``: ``--shards``, else ``data/shards``, else a few works of the corpus
   (``shared/corpus`` in the checkout or beside it), else synthetic Greek text, converted into
   ``WORK/shards`` once for the stages after it.
5. ``train_path``: ``build_trainer`` on ``yamls/stoicheia.yaml`` (DDP through
   ``python -m stoicheia.launch`` on several GPUs), ``--steps`` steps of ``Trainer.fit`` and
   one ``Trainer.eval``.
6. ``train``: the recipe on ``yamls/stoicheia.yaml`` at reduced steps, on every GPU, stopped by
   SIGTERM (the preemption path) or at its last step, its checkpoint exported.

Then, if time is left:

7. ``trunk_32``: stage 3 with all 32 blocks (with activation checkpointing if the card runs
   out of memory without).

``--dry-run`` (and any run without CUDA) runs every stage with tiny shapes on the CPU
(Dynamo with the eager backend instead of inductor; no host-sync count). Exit status 0 when
every stage passed or was skipped, 1 when one failed or overran.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

# Use the code of the checkout this script is in (the stoicheia package and gpu_stages), even
# where no environment installs it or an editable install points at another checkout.
_sys.path.insert(0, str(_Path(__file__).resolve().parent))
_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

from gpu_stages.record import Recorder, read_figures, text_report

REPO = Path(__file__).resolve().parents[1]

#: (stage, seconds on a GPU, seconds on a CPU, needs Composer), in the order they run; each
#: gets at most its seconds and at most what is left of the budget.
STAGES: tuple[tuple[str, float, float, bool], ...] = (
    ("env", 45, 120, False),
    ("flex_vs_sdpa", 75, 150, False),
    ("trunk_8", 150, 240, False),
    ("shards", 120, 300, True),
    ("train_path", 200, 300, True),
    ("train", 200, 300, True),
    ("trunk_32", 300, 240, False),
)
#: The budget's default: 8 minutes less a margin for start-up and the report.
DEFAULT_BUDGET_S = 460
#: A stage is skipped when less than this is left.
MIN_STAGE_S = 30
SKIPPED_NO_COMPOSER = "skipped (composer missing)"


# --- a child: one stage ----------------------------------------------------------------------


def run_child(args: argparse.Namespace) -> int:
    """Run stage ``args.stage``; its figures go to ``OUT/figures.jsonl``, last ``ok``. A
    failure is recorded as ``error`` (the traceback's end) and exits 1."""
    rank0 = int(os.environ.get("RANK", "0")) == 0
    rec = Recorder(args.out, args.stage, echo=True)
    try:
        ok = _dispatch(rec, args)
    except BaseException as err:
        if rank0:
            tail = traceback.format_exc().strip().splitlines()[-6:]
            rec.put("error", [f"{type(err).__name__}: {str(err)[:500]}", *tail])
        raise
    if rank0:
        rec.put("ok", bool(ok))
    return 0


def _dispatch(rec: Recorder, args: argparse.Namespace) -> bool:
    name = args.stage
    if name == "env":
        from gpu_stages.core import stage_env

        return stage_env(rec, args.dry_run)
    if name == "flex_vs_sdpa":
        from gpu_stages.core import stage_flex_vs_sdpa

        return stage_flex_vs_sdpa(rec, args.dry_run)
    if name.startswith("trunk_"):
        from gpu_stages.trunk import stage_trunk

        return stage_trunk(rec, args.dry_run, int(name.split("_")[1]), args.steps)
    if name == "shards":
        from gpu_stages.composer_stages import stage_shards

        return stage_shards(rec, args)
    if name == "train_path":
        from gpu_stages.composer_stages import stage_train_path

        return stage_train_path(rec, args)
    if name == "train":
        from gpu_stages.composer_stages import stage_train

        return stage_train(rec, args, args.limit)
    raise SystemExit(f"unknown stage {name!r}")


# --- the driver ------------------------------------------------------------------------------


def _child_command(name: str, args: argparse.Namespace, limit: float, gpus: int) -> list[str]:
    child = [str(Path(__file__).resolve()), "--stage", name, str(args.out)]
    child += ["--work", str(args.work), "--steps", str(args.steps), "--limit", str(limit)]
    child += ["--train-seconds", str(args.train_seconds), "--train-steps", str(args.train_steps)]
    if args.shards is not None:
        child += ["--shards", str(args.shards)]
    if args.dry_run:
        child.append("--dry-run")
    if args.processes:
        child += ["--processes", str(args.processes)]
    n = args.processes or gpus
    if name == "train_path" and n > 1:
        return [sys.executable, "-m", "stoicheia.launch", "-n", str(n), *child]
    return [sys.executable, *child]


def run_stage(name: str, args: argparse.Namespace, limit: float, gpus: int = 0) -> str:
    """Run stage ``name`` in a child process (its own process group) for at most ``limit``
    seconds; record and return its status: ``ok``, ``failed`` (exit status or its ``ok``
    figure false) or ``overrun`` (killed at the limit; its figures so far stay)."""
    rec = Recorder(args.out, name, echo=False)
    log_path = Path(args.work) / f"stage-{name}.log"
    t0 = time.monotonic()
    with open(log_path, "w") as log_file:
        proc = subprocess.Popen(
            _child_command(name, args, limit, gpus),
            cwd=REPO,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=args.child_env,
        )
        try:
            status = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            status = None
    rec.put("seconds", round(time.monotonic() - t0, 1))
    fig = read_figures(args.out).get(name, {})
    if status is None:
        result = "overrun"
        rec.put("limit_s", round(limit, 1))
    elif status == 0 and fig.get("ok") is True:
        result = "ok"
    else:
        result = "failed"
        rec.put("exit_status", status)
        if "error" not in fig:
            tail = log_path.read_text("utf-8", errors="replace").strip().splitlines()[-8:]
            rec.put("log_tail", tail)
    rec.put("log", str(log_path))
    rec.put("status", result)
    return result


def _composer_stack(args: argparse.Namespace) -> str:
    """``env``'s ``composer_stack`` figure, or (when ``env`` gave none) the same check in a
    child process."""
    got = read_figures(args.out).get("env", {}).get("composer_stack")
    if isinstance(got, str):
        return got
    code = "import composer, streaming, omegaconf, composer.trainer"
    try:
        run = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
            env=args.child_env,
        )
    except subprocess.TimeoutExpired:
        return "missing: importing composer took over 120 s"
    return "ok" if run.returncode == 0 else f"missing: {run.stderr.strip()[-300:]}"


def install_wheels(wheels: Path, work: Path) -> tuple[Path, list[str]]:
    """Install every ``*.whl`` of ``wheels`` into ``work/site`` with pip, offline and without
    their dependencies (``--no-index --no-deps``); returns the folder (to go first on the
    children's ``PYTHONPATH``) and the wheels' names. Raises ``SystemExit`` naming the folder
    when it holds no wheel or pip fails."""
    files = sorted(Path(wheels).glob("*.whl"))
    if not files:
        raise SystemExit(f"--wheels {wheels}: no .whl files there (docs/cluster.md says which)")
    site = work / "site"
    run = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
        + ["--no-compile", "--disable-pip-version-check", "--upgrade", "--target", str(site)]
        + [str(f) for f in files],
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        raise SystemExit(f"--wheels {wheels}: pip could not install them:\n{run.stderr[-1500:]}")
    return site, [f.name for f in files]


def _write_summary(out: Path) -> str:
    figures = read_figures(out)
    (out / "figures.json").write_text(json.dumps(figures, indent=1, ensure_ascii=False))
    text = text_report(figures)
    (out / "figures.txt").write_text(text, "utf-8")
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("out", type=Path, help="output folder: figures.jsonl, figures.json, figures.txt")
    p.add_argument("--work", type=Path, default=None, help="logs, runs, export (default OUT/work)")
    p.add_argument("--shards", type=Path, default=None, help="output of stoicheia convert")
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S, help="seconds for all stages")
    p.add_argument("--steps", type=int, default=10, help="training steps of trunk and train_path")
    p.add_argument(
        "--stages",
        default=",".join(s[0] for s in STAGES),
        help="comma-separated stages to run, in the order of the list (default: all)",
    )
    p.add_argument("--dry-run", action="store_true", help="tiny shapes on the CPU (tests)")
    p.add_argument(
        "--wheels",
        type=Path,
        default=None,
        help="folder of wheels (Composer's stack) installed offline into WORK/site first",
    )
    p.add_argument(
        "--train-seconds",
        type=float,
        default=0,
        help="stop the train stage this many seconds after its first step (default 0: at "
        "its last step or the end of its time)",
    )
    p.add_argument(
        "--train-steps",
        type=int,
        default=0,
        help="steps of the train stage (default 0: 30 on a GPU, until stopped on a CPU)",
    )
    p.add_argument(
        "--processes",
        type=int,
        default=0,
        help="processes of the train_path and train stages (default 0: one per GPU; on a CPU "
        "with --dry-run, 2 runs them as DDP over gloo)",
    )
    p.add_argument("--stage", help=argparse.SUPPRESS)
    p.add_argument("--limit", type=float, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    args.work = (args.work or args.out / "work").resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.stage:
        return run_child(args)

    start = time.monotonic()
    os.environ["GPU_CHECK_T0"] = str(time.time())
    (args.out / "figures.jsonl").unlink(missing_ok=True)
    rec = Recorder(args.out, "check", echo=False)
    env = dict(os.environ)
    if args.wheels is not None:
        site, names = install_wheels(args.wheels, args.work)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
        rec.put("wheels", names)
    args.child_env = env
    wanted = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = sorted(set(wanted) - {s[0] for s in STAGES})
    if unknown:
        p.error(
            f"--stages: unknown {', '.join(unknown)}; the stages are "
            + ", ".join(s[0] for s in STAGES)
        )
    rec.put("budget_s", args.budget)
    rec.put("out", str(args.out))
    rec.put("work", str(args.work))
    deadline = start + args.budget
    statuses = []
    for name, gpu_s, cpu_s, needs_composer in STAGES:
        if name not in wanted:
            continue
        figures = read_figures(args.out)
        env_fig = figures.get("env", {})
        gpu_run = bool(env_fig.get("gpus")) and not args.dry_run
        stage_rec = Recorder(args.out, name, echo=False)
        if needs_composer:
            stack = _composer_stack(args)
            if not stack.startswith("ok"):
                stage_rec.put("why", stack)
                stage_rec.put("status", SKIPPED_NO_COMPOSER)
                print(text_report({name: read_figures(args.out)[name]}), end="", flush=True)
                continue
        left = deadline - time.monotonic()
        if left < MIN_STAGE_S:
            stage_rec.put("status", f"skipped (no time left: {left:.0f} s)")
            statuses.append("skipped")
            continue
        limit = min(gpu_s if gpu_run else cpu_s, left)
        statuses.append(run_stage(name, args, limit, int(env_fig.get("gpus") or 0)))
        if name == "shards" and statuses[-1] == "ok":  # the next stages use them as given
            args.shards = Path(read_figures(args.out)["shards"]["path"])
        print(text_report({name: read_figures(args.out)[name]}), end="", flush=True)
        _write_summary(args.out)
    rec.put(
        "mode",
        "GPU" if read_figures(args.out).get("env", {}).get("gpus") and not args.dry_run else "CPU",
    )
    rec.put("total_s", round(time.monotonic() - start, 1))
    rec.put("status", "ok" if not {"failed", "overrun"} & set(statuses) else "failed")
    _write_summary(args.out)
    print(f"figures: {args.out / 'figures.txt'} (every figure as measured: figures.jsonl)")
    return 1 if {"failed", "overrun"} & set(statuses) else 0


if __name__ == "__main__":
    sys.exit(main())
