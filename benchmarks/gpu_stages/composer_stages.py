"""Stages ``shards``, ``train_path`` and ``train``: the training path as the recipe builds it,
through Composer. Imported only when Composer, streaming and omegaconf import (the driver asks the
``env`` stage first); everything else of the check runs without them.
"""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .core import on_gpu
from .record import Recorder

REPO = Path(__file__).resolve().parents[2]
#: The GPU configuration both stages train.
GPU_YAML = REPO / "yamls" / "stoicheia.yaml"
#: Tiny shapes of CPU runs (every stage in seconds; the same code paths).
CPU_OVERRIDES = [
    "model.d_model=32",
    "model.n_layers=2",
    "model.n_heads=2",
    "model.global_every=2",
    "model.char_window=16",
    "model.attn_impl=flex",
    "data.seq_len=128",
    "data.records_per_batch=4",
    "data.num_workers=0",
    "data.eval_rows=2",
    "data.eval_records=4",
    "train.micro_batch_rows=2",
    "train.global_batch_rows=null",
    "train.grad_accum=1",
    "train.compile=false",
    "train.precision=auto",
]


def batch_overrides(
    world: int, micro_batch_rows: int = 4, global_batch_rows: int = 64
) -> list[str]:
    """Overrides that let ``yamls/stoicheia.yaml`` (``global_batch_rows`` 64 of
    ``micro_batch_rows`` 4) train on ``world`` GPUs: none where 64 rows split evenly (1, 2, 4,
    8, 16 GPUs), else the nearest whole number of micro-batches per GPU
    (``global_batch_rows=null``, ``grad_accum`` = 64 / (4 x world) rounded, at least 1), so
    that 3, 5, 6 or 7 GPUs train too instead of stopping on the batch split."""
    if global_batch_rows % (micro_batch_rows * world) == 0:
        return []
    accum = max(1, round(global_batch_rows / (micro_batch_rows * world)))
    return ["train.global_batch_rows=null", f"train.grad_accum={accum}"]


def _present_tiers(shards: Path) -> list[str]:
    return sorted(p.name for p in shards.iterdir() if p.is_dir() and (p / "train").is_dir())


def data_overrides(shards: Path, run_dir: Path, name: str) -> list[str]:
    """The overrides both stages share: these shards (tiers they lack weighted 0, the anneal
    phases on the tiers present), one small held-out set, a run folder under ``run_dir``, no
    autoresume, no restoration example (its own compile)."""
    tiers = _present_tiers(shards)
    weights = ", ".join(f"{t}: 1.0" for t in tiers)
    return [
        f"run_name={name}",
        f"data.shard_root={shards}",
        *(f"data.tier_weights.{t}=0" for t in ("gold", "silver", "bronze") if t not in tiers),
        f"callbacks.anneal_data.phases=[[1.0, {{{weights}}}]]",
        "data.eval_records=16",
        "data.eval_sets=[holdout]",
        "train.decide_on=holdout/bits_per_char",
        f"train.save_folder={run_dir}/{{run_name}}",
        "train.autoresume=false",
        "callbacks.restoration_example=false",
    ]


def _synthetic_corpus(folder: Path) -> None:
    """Plain-text Greek of random syllables (speed figures only): two tiers of 60 files."""
    rng = random.Random(0)
    syllables = "λο γο σμε νο τα κα ι δε μη ποι ου ση τη ρι α ε θε ων ος ας ην".split()
    for tier in ("gold", "silver"):
        (folder / tier).mkdir(parents=True, exist_ok=True)
        for k in range(60):
            words = [
                "".join(rng.choice(syllables) for _ in range(rng.randint(1, 4)))
                for _ in range(rng.randint(200, 800))
            ]
            (folder / tier / f"work{k:03d}.txt").write_text(" ".join(words) + ".", "utf-8")


def find_shards(given: Path | None, work: Path) -> tuple[Path, str]:
    """Shards to train on and where they came from: ``given`` (``--shards``), else
    ``data/shards``, else a few works of the corpus (``../shared/corpus`` or ``shared/corpus``)
    converted into ``work/shards``, else synthetic Greek text converted there.

    Raises ``SystemExit`` when ``given`` holds no ``stats.json``.
    """
    for cand in [given, REPO / "data" / "shards"]:
        if cand is not None and (Path(cand) / "stats.json").exists():
            return Path(cand), "given" if cand == given else "data/shards"
    if given is not None:
        raise SystemExit(
            f"--shards {given}: no stats.json there; give an output of stoicheia convert"
        )
    from stoicheia.data.shards import convert

    target = work / "shards"
    if (target / "stats.json").exists():
        return target, "converted before"
    for corpus in (REPO.parent / "shared" / "corpus", REPO / "shared" / "corpus"):
        if (corpus / "perseus" / "Hesiod").is_dir():
            convert(
                {
                    "gold": [corpus / "perseus" / "Hesiod", corpus / "perseus" / "Homeric_Hymns"],
                    "silver": [corpus / "ud" / "grc_proiel-ud-dev.conllu"],
                },
                target,
                val_fraction=0.1,
                max_record_letters=2048,
                workers=1,
                progress=False,
            )
            return target, f"converted from {corpus} (Hesiod, Homeric Hymns, PROIEL dev)"
    _synthetic_corpus(work / "synthetic-text")
    convert(
        {t: [work / "synthetic-text" / t] for t in ("gold", "silver")},
        target,
        val_fraction=0.1,
        workers=1,
        progress=False,
    )
    return target, "synthetic Greek text (no corpus on this machine)"


def stage_shards(rec: Recorder, args: Any) -> bool:
    """The shards the Composer stages train on (:func:`find_shards`), made once, in one
    process, before a stage runs on several GPUs (whose processes would each convert)."""
    shards, source = find_shards(args.shards, Path(args.work))
    rec.put("path", str(shards))
    rec.put("from", source)
    return True


def _shards(rec: Recorder | None, args: Any) -> Path:
    shards, source = find_shards(args.shards, Path(args.work))
    if rec is not None:
        rec.put("shards", f"{shards} ({source})")
    return shards


def stage_train_path(rec: Recorder, args: Any) -> bool:
    """:func:`stoicheia.train.builder.build_trainer` on ``yamls/stoicheia.yaml`` (on a CPU the
    tiny shape), ``args.steps`` steps of ``Trainer.fit`` (DDP when launched on several GPUs),
    then one ``Trainer.eval``: build seconds, first step, step time, letters/s, MFU, peak
    memory, Dynamo's graphs. Only rank 0 records."""
    import torch
    from composer.core import Callback
    from composer.utils import dist

    from stoicheia.config import load_config
    from stoicheia.model import attention
    from stoicheia.train.builder import build_trainer
    from stoicheia.train.flops import batch_flops, peak_flops

    from .trunk import _dynamo_figures, _dynamo_watch

    rank0 = int(os.environ.get("RANK", "0")) == 0
    put = rec.put if rank0 else (lambda k, v: v)
    gpu = on_gpu(args.dry_run)
    watch = _dynamo_watch()
    steps = max(2, args.steps)
    shards = _shards(rec if rank0 else None, args)
    over = data_overrides(shards, Path(args.work) / "runs", "gpu-check-path")
    over += [
        f"train.max_steps={steps}",
        f"train.nominal_steps={steps}",
        "train.save_interval=1000000",
        f"train.log_every={steps}",
        "train.global_batch_rows=null",
        "train.grad_accum=1",
    ]
    over += ["train.device=gpu"] if gpu else [*CPU_OVERRIDES, "train.device=cpu"]
    cfg = load_config(GPU_YAML, over)

    class Clock(Callback):
        """Synchronised per-step wall times and letters, model FLOPs per step."""

        def __init__(self) -> None:
            self.times: list[float] = []
            self.letters: list[int] = []
            self.flops: list[float] = []
            self._t = 0.0

        def batch_start(self, state, logger) -> None:
            if gpu:
                torch.cuda.synchronize()
            self._t = time.perf_counter()
            model = state.model.module if hasattr(state.model, "module") else state.model
            self.letters.append(int((state.batch["seg_id"] != 0).sum()))
            self.flops.append(float(batch_flops(model, state.batch["seg_id"])))

        def batch_end(self, state, logger) -> None:
            if gpu:
                torch.cuda.synchronize()
            self.times.append(time.perf_counter() - self._t)
            if len(self.times) == 1:
                put("first_step_s", self.times[0])

    t_build = time.perf_counter()
    built = build_trainer(cfg)
    clock = Clock()
    built.trainer.state.callbacks.append(clock)
    put("build_s", time.perf_counter() - t_build)
    world = dist.get_world_size()
    put("config", "yamls/stoicheia.yaml" + ("" if gpu else " (tiny CPU shape)"))
    put("world_size", world)
    put("rows_x_T", [cfg.train.micro_batch_rows, cfg.data.seq_len])
    if gpu:
        torch.cuda.reset_peak_memory_stats()
    built.trainer.fit()
    rest = clock.times[1:] or clock.times
    med = statistics.median(rest)
    letters = statistics.mean(clock.letters[1:] or clock.letters)
    put("steps", len(clock.times))
    put("compile_s", clock.times[0] - med if cfg.train.compile else "skipped (CPU)")
    put("step_s_median", med)
    put("letters_per_s", world * letters / med)
    if gpu:
        put("peak_memory_gib", torch.cuda.max_memory_allocated() / 2**30)
        peak = peak_flops(torch.cuda.get_device_name(), "amp_bf16")
        fl = statistics.mean(clock.flops[1:] or clock.flops)
        put("mfu", fl / med / peak if peak else None)
    train_dynamo = put("train_dynamo", _dynamo_figures(watch))
    t0 = time.perf_counter()
    built.trainer.eval()
    if gpu:
        torch.cuda.synchronize()
    put("eval_s", time.perf_counter() - t0)
    put("all_dynamo", _dynamo_figures(watch))
    from torch.nn.attention.flex_attention import flex_attention

    cached = attention._compiled_flex
    put(
        "compiled_flex_cache",
        "empty"
        if cached is None
        else ("RAW flex_attention" if cached is flex_attention else "compiled"),
    )
    built.trainer.close()
    return cached is not flex_attention and train_dynamo["graph_breaks"] == 0


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text("utf-8", errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def stage_train(rec: Recorder, args: Any, limit_s: float) -> bool:
    """The recipe (``recipes/train.py``, through ``python -m stoicheia.launch`` on several
    GPUs) on ``yamls/stoicheia.yaml`` (on a CPU the tiny shape) for at most
    ``args.train_steps`` steps, stopped by SIGTERM (the preemption path: it saves the batch
    and exits 143) ``args.train_seconds`` after its first step or before ``limit_s`` runs
    out; then the checkpoint is exported with ``stoicheia export``. Passes when the recipe
    exited 0 or 143 and the export loads."""
    gpu = on_gpu(args.dry_run)
    start = time.monotonic()
    deadline = start + limit_s
    work = Path(args.work)
    run_dir, name = work / "runs", "gpu-check-train"
    shards = _shards(rec, args)
    n = getattr(args, "processes", 0) or (_gpus() if gpu else 1)
    extra = batch_overrides(n) if gpu else list(CPU_OVERRIDES)
    # on a GPU a short run that checkpoints (and evaluates) at its last step; on a CPU a long
    # one with checkpoints every 4 steps, which the SIGTERM ends
    steps = args.train_steps or (30 if gpu else 100000)
    over = data_overrides(shards, run_dir, name) + extra
    over += [f"train.nominal_steps={steps}", f"train.max_steps={steps}"]
    over += (
        [f"train.save_interval={steps}", "train.log_every=5"]
        if gpu
        else [
            "train.device=cpu",
            "train.save_interval=4",
            "train.log_every=2",
        ]
    )
    rec.put("config", "yamls/stoicheia.yaml" + ("" if gpu else " (tiny CPU shape)"))
    rec.put("overrides", extra + over[-4:])
    rec.put("processes", n)
    launch = [sys.executable, "-m", "stoicheia.launch", "-n", str(n)] if n > 1 else [sys.executable]
    cmd = [*launch, str(REPO / "recipes" / "train.py"), str(GPU_YAML), *over]
    log_path = work / "recipe.log"
    rec.put("recipe_log", str(log_path))
    # the SIGTERM's save and the export: loading torch and the checkpoint (about 1.6 GB of
    # weights at full size) take their time
    reserve = 120 if gpu else 75
    metrics = run_dir / name / "metrics.jsonl"
    with open(log_path, "w") as log_file:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT)
        status, stopped, first_step, seen = None, False, None, 0
        while status is None:
            status = proc.poll()
            now = time.monotonic()
            rows = [r for r in _jsonl(metrics) if "loss/total" in r]
            if rows and first_step is None:
                first_step = now
                rec.put("first_step_after_s", now - start)
            if len(rows) > seen:  # every logged step recorded as it comes
                seen = len(rows)
                last = rows[-1]
                keys = ("step", "loss/total", "throughput/letters_per_sec", "throughput/mfu")
                rec.put("last_logged", {k: last[k] for k in keys if k in last})
            stop_at = deadline - reserve
            if first_step is not None and args.train_seconds:
                stop_at = min(stop_at, first_step + args.train_seconds)
            if status is None and (
                (first_step is not None and now >= stop_at) or now >= deadline - 20
            ):
                break
            if status is None:
                time.sleep(0.5)
        if status is None:
            proc.send_signal(signal.SIGTERM)  # the launcher passes it on to its trainers
            stopped = True
            try:
                status = proc.wait(timeout=max(5.0, deadline - 15 - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                status = proc.wait()
    rec.put("train_s", time.monotonic() - start)
    rec.put("stopped_by_sigterm", stopped)
    rec.put("exit_status", status)
    evals = _jsonl(run_dir / name / "evals.jsonl")
    if evals:
        rec.put("last_eval", evals[-1])
    ckpt = run_dir / name / "latest-rank0.pt"
    if not ckpt.exists():
        rec.put("export", "no checkpoint to export")
        return False
    export = work / "export"
    ex = subprocess.run(
        [sys.executable, "-m", "stoicheia", "export", str(ckpt.resolve()), str(export)]
        + ["--overwrite", "--shards", str(shards)],
        cwd=REPO,
        capture_output=True,
        text=True,
        # at least a minute: loading torch and the checkpoint on a busy CPU takes that long
        timeout=max(60.0, deadline - time.monotonic()),
    )
    if ex.returncode != 0:
        rec.put("export", f"failed: {(ex.stderr or ex.stdout).strip()[-400:]}")
        return False
    rec.put("export", str(export))
    rec.put("export_bytes", sum(p.stat().st_size for p in export.rglob("*") if p.is_file()))
    return status in (0, 143)
