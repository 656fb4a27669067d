"""The first thing to run on a GPU machine: the GPU path checked end to end in under 8 minutes.

    .venv/bin/python benchmarks/gpu_check.py OUT [--shards data/shards] [--budget 470]
    .venv/bin/python benchmarks/gpu_check.py OUT --dry-run      # the same stages, tiny, on a CPU

Installs nothing and needs no network: it runs on the environment that is there (see
docs/cluster.md for bringing one to a machine without network). Each stage runs in a child
process with a wall-clock limit; a stage that overruns is killed, reported as ``overrun`` and
skipped, and the script goes on with the next. Stages:

1. ``env``: device, torch / CUDA / Composer versions, GPU memory, the number of GPUs.
2. ``flex_vs_sdpa``: the encoder with ``attn_impl: flex`` against ``sdpa`` (same weights) in
   float32, logits and gradients, at a row length that is a multiple of 128 (FlexAttention's
   tile) and one that is not; on a GPU through the compiled trunk and through the uncompiled
   call (the cached compiled FlexAttention).
3. ``train_path``: the training path exactly as the recipe builds it:
   :func:`stoicheia.train.builder.build_trainer` on ``yamls/stoicheia.yaml`` (the full model;
   compiled trunk, bf16, fused AdamW, the plugins; DDP through ``python -m stoicheia.launch``
   when there are several GPUs), a few steps of ``Trainer.fit``: compile time (first step
   minus the median), step time, letters/s, MFU (:func:`stoicheia.train.flops.batch_flops`),
   peak memory, Dynamo's graph breaks, graphs and recompiles (``torch._dynamo`` counters and
   its ``recompiles`` log); then one ``no_grad`` evaluation at two batch sizes (Composer's
   ``Trainer.eval`` at ``data.eval_rows`` rows, and one row through the model), and the
   ``_compiled_flex`` cache checked afterwards (it must not hold the raw ``flex_attention``).
4. ``train``: trains a model with the recipe (``recipes/train.py``, several GPUs through the
   launcher) for the minutes left: ``yamls/base.yaml`` where it exists, else
   ``yamls/demo.yaml`` widened for a GPU (:data:`GPU_TRAIN_OVERRIDES`: d_model 256, 4 layers,
   FlexAttention, rows of 2,048 letters, compiled; its export is about 13 MB). At the
   deadline it gets SIGTERM (the preemption path: it saves the batch and exits 143); the
   checkpoint is exported (``stoicheia export``) into ``OUT/export`` (must stay under 16 MB).

Figures go to ``OUT/figures.json`` and ``OUT/figures.txt`` (also printed). Exit status 0 when
every stage passed or was skipped, 1 when one failed or overran. ``--dry-run`` (and any run
without CUDA) uses tiny shapes on the CPU and skips ``torch.compile`` (reported as skipped:
inductor's CPU FlexAttention template does not build with more than one thread, and compiling
takes minutes on a CPU).

Shards: ``--shards``, else ``data/shards``, else a few works of the corpus (``../shared/corpus``
or ``shared/corpus``) converted into ``OUT/shards``, else synthetic Greek text converted there
(figures of speed only).
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

# Use the code of the checkout this script is in, even where the shared virtual environment's
# editable install points at another checkout.
_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse
import json
import logging
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

#: Seconds per stage (the last stage, ``train``, gets what is left of the budget).
STAGE_LIMITS = {"env": 60, "flex_vs_sdpa": 120, "train_path": 240}
#: The budget's default: 8 minutes less a margin for start-up and the report.
DEFAULT_BUDGET_S = 460
#: ``yamls/demo.yaml`` made a GPU model for the ``train`` stage when ``yamls/base.yaml`` is
#: missing: 3.3 M parameters (float32 export about 13 MB < 16 MB).
GPU_TRAIN_OVERRIDES = [
    "model.d_model=256",
    "model.n_layers=4",
    "model.n_heads=4",
    "model.char_window=128",
    "model.attn_impl=flex",
    "data.seq_len=2048",
    "data.num_workers=2",
    "train.micro_batch_rows=16",
    "train.global_batch_rows=null",
    "train.grad_accum=1",
    "train.compile=true",
    "train.save_interval=200",
    "train.log_every=50",
]
#: Tiny shapes of ``--dry-run`` / CPU runs (every stage, a few seconds each).
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
    "train.micro_batch_rows=2",
    "train.global_batch_rows=null",
    "train.grad_accum=1",
    "train.compile=false",
    "train.precision=auto",
]
EXPORT_LIMIT_BYTES = 16 * 2**20


# --- helpers -----------------------------------------------------------------------------


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _present_tiers(shards: Path) -> list[str]:
    return sorted(p.name for p in shards.iterdir() if p.is_dir() and (p / "train").is_dir())


def _data_overrides(shards: Path, run_dir: Path, name: str) -> list[str]:
    """The overrides every stage's configuration shares: these shards (tiers they lack
    weighted 0, the anneal phases on the tiers present), one held-out set, a run folder under
    OUT, no autoresume."""
    tiers = _present_tiers(shards)
    weights = ", ".join(f"{t}: 1.0" for t in tiers)
    out = [
        f"run_name={name}",
        f"data.shard_root={shards}",
        *(f"data.tier_weights.{t}=0" for t in ("gold", "silver", "bronze") if t not in tiers),
        f"callbacks.anneal_data.phases=[[1.0, {{{weights}}}]]",
        "data.eval_records=16",
        "data.eval_sets=[holdout]",
        "train.decide_on=holdout/bits_per_char",
        f"train.save_folder={run_dir}/{{run_name}}",
        "train.autoresume=false",
    ]
    return out


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


def find_shards(given: Path | None, out: Path) -> tuple[Path, str]:
    """Shards to use and where they came from (module docstring)."""
    for cand in [given, REPO / "data" / "shards"]:
        if cand is not None and (Path(cand) / "stats.json").exists():
            return Path(cand), "given" if cand == given else "data/shards"
    if given is not None:
        raise SystemExit(
            f"--shards {given}: no stats.json there; give an output of stoicheia convert"
        )
    from stoicheia.data.shards import convert

    target = out / "shards"
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
    _synthetic_corpus(out / "synthetic-text")
    convert(
        {t: [out / "synthetic-text" / t] for t in ("gold", "silver")},
        target,
        val_fraction=0.1,
        workers=1,
        progress=False,
    )
    return target, "synthetic Greek text (no corpus on this machine)"


class _Recompiles(logging.Handler):
    """Counts Dynamo's ``Recompiling function`` log records (the ``recompiles`` artifact)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.reasons: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if "Recompiling function" in msg:
            self.reasons.append(msg.strip().splitlines()[0][:300])


def _dynamo_watch() -> _Recompiles:
    import torch

    torch._logging.set_logs(recompiles=True)
    handler = _Recompiles()
    for name in ("torch._dynamo", "torch"):
        logging.getLogger(name).addHandler(handler)
    return handler


def _dynamo_figures(handler: _Recompiles) -> dict[str, Any]:
    from torch._dynamo.utils import counters

    return {
        "graph_breaks": sum(counters["graph_break"].values()),
        "graph_break_reasons": sorted(counters["graph_break"])[:10],
        "graphs": int(counters["stats"]["unique_graphs"]),
        "recompiles": len(handler.reasons),
        "recompile_reasons": handler.reasons[:10],
    }


# --- stages (each runs in a child process; returns its figures) ----------------------------


def stage_env(args: argparse.Namespace) -> dict[str, Any]:
    import composer
    import torch

    fig: dict[str, Any] = {
        "torch": torch.__version__,
        "composer": composer.__version__,
        "python": sys.version.split()[0],
        "cuda_available": torch.cuda.is_available(),
        "gpus": _gpus(),
        "cpu_count": os.cpu_count(),
    }
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        fig |= {
            "device": torch.cuda.get_device_name(0),
            "cuda": torch.version.cuda,
            "capability": f"{p.major}.{p.minor}",
            "memory_gib": round(p.total_memory / 2**30, 1),
            "bf16": torch.cuda.is_bf16_supported(),
        }
        from stoicheia.train.flops import peak_flops

        fig["peak_bf16_tflops"] = (peak_flops(fig["device"], "amp_bf16") or 0) / 1e12 or None
    return fig


def stage_flex_vs_sdpa(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from stoicheia.model import attention
    from stoicheia.model.composer_model import loss_terms
    from stoicheia.model.config import EncoderConfig
    from stoicheia.model.encoder import CharBertEncoder

    gpu = torch.cuda.is_available() and not args.dry_run
    dev = torch.device("cuda" if gpu else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = False  # a float32 comparison
    shape = dict(d_model=256, n_layers=2, n_heads=4, char_window=256, global_every=2)
    if not gpu:
        shape = dict(d_model=32, n_layers=2, n_heads=2, char_window=16, global_every=2)
    lengths = (2048, 2000) if gpu else (256, 200)
    torch.manual_seed(0)
    sdpa = CharBertEncoder(EncoderConfig(**shape, attn_impl="sdpa")).to(dev)
    results: dict[str, Any] = {"lengths": list(lengths), "device": str(dev)}
    ok = True
    for T in lengths:
        batch = _random_rows(2, T, dev, seed=T)
        real = batch["seg_id"] != 0
        for mode in ("compiled", "uncompiled") if gpu else ("uncompiled",):
            flex = CharBertEncoder(EncoderConfig(**shape, attn_impl="flex")).to(dev)
            flex.load_state_dict(sdpa.state_dict())
            if mode == "compiled":
                flex.compile_trunk()
            grads = []
            outs = []
            for m in (sdpa, flex):
                m.zero_grad(set_to_none=True)
                out = m(batch)
                loss_terms(out, batch, 0.1)["total"].backward()
                outs.append(out)
                grads.append([p.grad.detach().clone() for p in m.parameters()])
            logit = max(float((outs[0][k] - outs[1][k])[real].abs().max()) for k in outs[0])
            grad = max(float((a - b).abs().max()) for a, b in zip(*grads, strict=True))
            good = logit < 1e-3 and grad < 1e-3
            ok &= good
            results[f"T{T}_{mode}"] = {
                "max_logit_diff": logit,
                "max_grad_diff": grad,
                "ok": good,
            }
    cached = attention._compiled_flex
    from torch.nn.attention.flex_attention import flex_attention

    results["compiled_flex_cache"] = (
        "empty"
        if cached is None
        else ("RAW flex_attention" if cached is flex_attention else "compiled")
    )
    ok &= cached is not flex_attention
    results["ok"] = ok
    if not gpu:
        results["compile"] = "skipped (CPU)"
    return results


def _random_rows(rows: int, T: int, dev: Any, seed: int) -> dict[str, Any]:
    """Packed rows of random letters: documents of 30..T/2 letters, padding at the end."""
    import torch

    from stoicheia.text.alphabet import IGNORE_INDEX, MASK, PAD

    g = torch.Generator().manual_seed(seed)
    seg = torch.zeros(rows, T, dtype=torch.int32)
    pos = torch.zeros(rows, T, dtype=torch.int32)
    for r in range(rows):
        at, doc, end = 0, 1, T - int(torch.randint(0, T // 8, (1,), generator=g))
        while at < end:
            n = min(int(torch.randint(30, max(31, T // 2), (1,), generator=g)), end - at)
            seg[r, at : at + n] = doc
            pos[r, at : at + n] = torch.arange(n, dtype=torch.int32)
            at, doc = at + n, doc + 1
    letters = torch.randint(0, 24, (rows, T), generator=g)
    masked = (torch.rand(rows, T, generator=g) < 0.3) & (seg != 0)
    chars = torch.where(masked, torch.full_like(letters, MASK), letters)
    chars[seg == 0] = PAD
    ign = torch.full_like(letters, IGNORE_INDEX)
    batch = {
        "chars": chars,
        "seg_id": seg,
        "pos": pos,
        "tgt_chars": torch.where(masked, letters, ign),
        "tgt_boundary": ign,
        "tgt_dia": ign,
        "tgt_cap": ign,
        "tgt_punct": ign,
        "weight": masked.float() / 0.3,
    }
    return {k: v.to(dev) for k, v in batch.items()}


def stage_train_path(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from composer.core import Callback
    from composer.utils import dist

    from stoicheia.config import load_config
    from stoicheia.model import attention
    from stoicheia.train.builder import build_trainer
    from stoicheia.train.flops import batch_flops, peak_flops

    gpu = torch.cuda.is_available() and not args.dry_run
    watch = _dynamo_watch()
    steps = args.steps
    over = _data_overrides(Path(args.shards), Path(args.out) / "runs", "gpu-check-path")
    over += [
        f"train.max_steps={steps}",
        f"train.nominal_steps={steps}",
        "train.save_interval=1000000",
        f"train.log_every={steps}",
        "train.global_batch_rows=null",
        "train.grad_accum=1",
        "callbacks.restoration_example=false",
    ]
    if gpu:
        over += [f"data.eval_rows={4}", "train.device=gpu"]
    else:
        over += [*CPU_OVERRIDES, "train.device=cpu"]
    cfg = load_config(REPO / "yamls" / "stoicheia.yaml", over)

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

    t_build = time.perf_counter()
    built = build_trainer(cfg)
    clock = Clock()
    built.trainer.state.callbacks.append(clock)
    build_s = time.perf_counter() - t_build
    if gpu:
        torch.cuda.reset_peak_memory_stats()
    built.trainer.fit()
    world = dist.get_world_size()
    rest = clock.times[1:] or clock.times
    med = statistics.median(rest)
    fig: dict[str, Any] = {
        "config": "yamls/stoicheia.yaml" + (" (tiny CPU shape)" if not gpu else ""),
        "world_size": world,
        "ddp": world > 1,
        "model": {
            k: getattr(cfg.model, k) for k in ("d_model", "n_layers", "n_heads", "attn_impl")
        },
        "rows_x_T": [cfg.train.micro_batch_rows, cfg.data.seq_len],
        "steps": len(clock.times),
        "build_s": round(build_s, 2),
        "first_step_s": round(clock.times[0], 2),
        "compile_s": round(clock.times[0] - med, 2) if cfg.train.compile else "skipped (CPU)",
        "step_s_median": round(med, 4),
        "letters_per_s_device": round(statistics.mean(clock.letters[1:] or clock.letters) / med),
        "letters_per_s": round(world * statistics.mean(clock.letters[1:] or clock.letters) / med),
        "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if gpu else None,
    }
    if gpu:
        peak = peak_flops(torch.cuda.get_device_name(), "amp_bf16")
        fl = statistics.mean(clock.flops[1:] or clock.flops)
        fig["model_tflops_per_s_device"] = round(fl / med / 1e12, 1)
        fig["mfu"] = round(fl / med / peak, 3) if peak else None
    fig["train_dynamo"] = _dynamo_figures(watch)
    # one no_grad evaluation at two batch sizes: Composer's evaluation (data.eval_rows rows,
    # the last batch padded to them), then one row through the model
    model = built.model
    from torch._dynamo.utils import counters

    graphs_before = int(counters["stats"]["unique_graphs"])
    evals = {}
    t0 = time.perf_counter()
    built.trainer.eval()
    if gpu:
        torch.cuda.synchronize()
    evals[f"{cfg.data.eval_rows}_rows_composer_eval_s"] = round(time.perf_counter() - t0, 2)
    batch = next(iter(built.eval_batches.values()))[0]
    one = {k: v[:1].to(next(model.parameters()).device) for k, v in batch.items()}
    model.eval()
    with torch.no_grad():
        for k in range(2):
            if gpu:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=gpu):
                model(one)
            if gpu:
                torch.cuda.synchronize()
            evals[f"1_row_forward_{'first' if k == 0 else 'second'}_s"] = round(
                time.perf_counter() - t0, 3
            )
    evals["graphs_added"] = int(counters["stats"]["unique_graphs"]) - graphs_before
    if gpu:
        evals["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    fig["eval"] = evals
    fig["all_dynamo"] = _dynamo_figures(watch)
    from torch.nn.attention.flex_attention import flex_attention

    cached = attention._compiled_flex
    fig["compiled_flex_cache"] = (
        "empty"
        if cached is None
        else ("RAW flex_attention" if cached is flex_attention else "compiled")
    )
    fig["ok"] = cached is not flex_attention and fig["train_dynamo"]["graph_breaks"] == 0
    built.trainer.close()
    if dist.get_global_rank() != 0:
        return {}
    return fig


def _first_step_logged(metrics: Path) -> bool:
    """Whether the run's ``metrics.jsonl`` holds a training batch's row yet."""
    try:
        return "loss/total" in metrics.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def stage_train(args: argparse.Namespace, deadline: float) -> dict[str, Any]:
    """Runs in the parent: the recipe in a child process until ``deadline``, then SIGTERM,
    then the export."""
    import torch

    gpu = torch.cuda.is_available() and not args.dry_run
    base = REPO / "yamls" / "base.yaml"
    run_dir = Path(args.out) / "runs"
    name = "gpu-check-train"
    if base.exists():
        config, extra = base, []
    else:
        config, extra = (
            REPO / "yamls" / "demo.yaml",
            (GPU_TRAIN_OVERRIDES if gpu else CPU_OVERRIDES),
        )
    over = _data_overrides(Path(args.shards), run_dir, name) + list(extra)
    over += ["train.nominal_steps=100000", "train.max_steps=200000"]
    if not gpu:
        over += ["train.device=cpu", "train.save_interval=4", "train.log_every=2"]
    n = _gpus() if gpu else 1
    launch = [sys.executable, "-m", "stoicheia.launch", "-n", str(n)] if n > 1 else [sys.executable]
    cmd = [*launch, str(REPO / "recipes" / "train.py"), str(config), *over]
    log_path = Path(args.out) / "recipe.log"
    reserve = 75  # the SIGTERM's save, the export (loading torch and the checkpoint)
    t0 = time.monotonic()
    with open(log_path, "w") as log_file:
        proc = subprocess.Popen(
            cmd, cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
        # SIGTERM only once the run trains (its preemption handler is installed by then and the
        # save has a batch to keep): at the deadline, or --train-seconds after the first step
        status, stopped, first_step = None, False, None
        while status is None:
            status = proc.poll()
            now = time.monotonic()
            if first_step is None and _first_step_logged(run_dir / name / "metrics.jsonl"):
                first_step = now
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
            os.killpg(proc.pid, signal.SIGTERM)
            stopped = True
            try:
                status = proc.wait(timeout=max(5.0, deadline - 15 - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                status = proc.wait()
    fig: dict[str, Any] = {
        "first_step_after_s": None if first_step is None else round(first_step - t0, 1),
        "config": str(config.relative_to(REPO)) + ("" if base.exists() else " + overrides"),
        "overrides": list(extra),
        "train_s": round(time.monotonic() - t0, 1),
        "stopped_by_sigterm": stopped,
        "exit_status": status,
        "log": str(log_path),
    }
    folder = run_dir / name
    rows = _jsonl(folder / "metrics.jsonl")
    train_rows = [r for r in rows if "loss/total" in r]
    if train_rows:
        last = train_rows[-1]
        fig["steps"] = int(last.get("step", 0))
        for k in ("loss/total", "throughput/letters_per_sec", "throughput/mfu", "memory/gib"):
            if k in last:
                fig[k] = round(float(last[k]), 4)
    evals = _jsonl(folder / "evals.jsonl")
    if evals:
        fig["last_eval"] = evals[-1]
    export = Path(args.out) / "export"
    ckpt = folder / "latest-rank0.pt"
    if not ckpt.exists():
        fig["export"] = "no checkpoint to export"
        fig["ok"] = False
        return fig
    ex = subprocess.run(
        [
            sys.executable,
            "-m",
            "stoicheia",
            "export",
            str(ckpt.resolve()),
            str(export),
            "--overwrite",
            "--shards",
            str(args.shards),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        # at least a minute: loading torch and the checkpoint on a busy CPU takes that long
        timeout=max(60.0, deadline - time.monotonic()),
    )
    if ex.returncode != 0:
        fig["export"] = f"failed: {(ex.stderr or ex.stdout).strip()[-400:]}"
        fig["ok"] = False
        return fig
    size = sum(p.stat().st_size for p in export.rglob("*") if p.is_file())
    fig["export"] = str(export)
    fig["export_bytes"] = size
    fig["ok"] = status in (0, 143) and size < EXPORT_LIMIT_BYTES
    return fig


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


STAGES = {"env": stage_env, "flex_vs_sdpa": stage_flex_vs_sdpa, "train_path": stage_train_path}


# --- the driver ----------------------------------------------------------------------------


def run_stage(name: str, args: argparse.Namespace, limit: float) -> dict[str, Any]:
    """Run stage ``name`` in a child process (several through the launcher for
    ``train_path`` on several GPUs) with a wall-clock ``limit``; its figures, or why none."""
    result = Path(args.out) / f"stage-{name}.json"
    result.unlink(missing_ok=True)
    child = [
        str(Path(__file__).resolve()),
        "--stage",
        name,
        str(args.out),
        "--shards",
        str(args.shards),
        "--steps",
        str(args.steps),
    ] + (["--dry-run"] if args.dry_run else [])
    n = _gpus() if not args.dry_run else 0
    if name == "train_path" and n > 1:
        cmd = [sys.executable, "-m", "stoicheia.launch", "-n", str(n), *child]
    else:
        cmd = [sys.executable, *child]
    t0 = time.monotonic()
    log_path = Path(args.out) / f"stage-{name}.log"
    with open(log_path, "w") as log_file:
        proc = subprocess.Popen(
            cmd, cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            status = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if not result.exists():
                return {"status": "overrun", "limit_s": round(limit, 1), "log": str(log_path)}
            status = 0  # its figures were written; only the interpreter's exit ran late
    seconds = round(time.monotonic() - t0, 1)
    if status != 0 or not result.exists():
        tail = log_path.read_text("utf-8", errors="replace").strip().splitlines()[-8:]
        return {"status": "failed", "exit_status": status, "seconds": seconds, "log_tail": tail}
    fig = json.loads(result.read_text())
    fig["status"] = "ok" if fig.get("ok", True) else "failed"
    fig["seconds"] = seconds
    return fig


def _text(figures: dict[str, Any]) -> str:
    lines = []
    for stage, fig in figures.items():
        lines.append(f"[{fig.get('status', '?')}] {stage}")
        for k, v in fig.items():
            if k != "status":
                lines.append(f"    {k}: {json.dumps(v, ensure_ascii=False)}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("out", type=Path, help="output folder (figures, logs, the trained export)")
    p.add_argument("--shards", type=Path, default=None, help="output of stoicheia convert")
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S, help="seconds for all stages")
    p.add_argument("--steps", type=int, default=8, help="training steps of the train_path stage")
    p.add_argument("--dry-run", action="store_true", help="tiny shapes on the CPU (tests)")
    p.add_argument(
        "--train-seconds",
        type=float,
        default=0,
        help="stop the last stage's training this many seconds after its first step "
        "(default 0: at the end of the budget)",
    )
    p.add_argument("--stage", choices=sorted(STAGES), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.stage:  # a child: one stage, its figures into OUT/stage-NAME.json (rank 0)
        fig = STAGES[args.stage](args)
        if fig:
            (args.out / f"stage-{args.stage}.json").write_text(json.dumps(fig, indent=1))
        return 0
    start = time.monotonic()
    deadline = start + args.budget
    args.shards, source = find_shards(args.shards, args.out)
    figures: dict[str, Any] = {
        "check": {
            "status": "ok",
            "mode": "dry-run (CPU)" if args.dry_run or not _gpus() else "GPU",
            "shards": str(args.shards),
            "shards_from": source,
            "budget_s": args.budget,
        }
    }
    for name, limit in STAGE_LIMITS.items():
        if figures["check"]["mode"] != "GPU":
            limit *= 2  # a CPU (often a shared one) imports and runs the tiny shapes slowly
        left = deadline - time.monotonic()
        if left < 10:
            figures[name] = {"status": "skipped", "why": "no time left"}
            continue
        figures[name] = run_stage(name, args, min(limit, left))
    if deadline - time.monotonic() > 100:
        try:
            fig = stage_train(args, deadline)
            fig["status"] = "ok" if fig.get("ok") else "failed"
        except Exception as err:  # reported, not raised: the figures so far are kept
            fig = {"status": "failed", "error": f"{type(err).__name__}: {err}"}
        figures["train"] = fig
    else:
        figures["train"] = {"status": "skipped", "why": "less than 100 s left"}
    figures["check"]["total_s"] = round(time.monotonic() - start, 1)
    (args.out / "figures.json").write_text(json.dumps(figures, indent=1, ensure_ascii=False))
    text = _text(figures)
    (args.out / "figures.txt").write_text(text, "utf-8")
    print(text, end="")
    bad = [n for n, f in figures.items() if f.get("status") in ("failed", "overrun")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
