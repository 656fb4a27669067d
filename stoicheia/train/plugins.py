"""Training plugins that sit beside the trainer: gradient guard, monitor, metric log.

* :class:`GradientGuard` (Algorithm): measures the global gradient norm, skips the optimizer
  update when it is not finite, otherwise clips it.
* :class:`TrainingMonitor` (Callback): per-batch loss terms, LR, gradient norm, letters per
  second and memory, to the loggers and (every ``log_every`` batches) to the console.
* :class:`JSONLLogger` (LoggerDestination): one JSON object per step in a ``.jsonl`` file.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import torch
from composer.core import Algorithm, Callback, Event, State
from composer.loggers import Logger, LoggerDestination


class GradientGuard(Algorithm):
    """Clip the global L2 gradient norm to ``clip_norm``; skip non-finite updates.

    Runs at ``AFTER_TRAIN_BATCH``, i.e. after backward of every micro-batch and after the
    DDP all-reduce, so every rank sees the same norm and takes the same decision. A skipped
    update sets every ``p.grad = None``: AdamW then leaves those parameters and their moments
    untouched (no weight decay either); the schedule and the batch counter still advance.
    The number of skipped updates is kept in ``state_dict``; :class:`TrainingMonitor` logs it
    (``train/skipped_updates``) with the norm (``train/grad_norm``) at the end of the batch,
    when the step counter has advanced.
    """

    def __init__(self, clip_norm: float | None = 1.0) -> None:
        self.clip_norm = clip_norm
        self.last_norm: float = float("nan")
        self.skipped = 0

    def match(self, event: Event, state: State) -> bool:
        return event == Event.AFTER_TRAIN_BATCH

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        params = [p for p in state.model.parameters() if p.grad is not None]
        if not params:
            return
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad.detach().float()) for p in params]))
        self.last_norm = float(norm)
        if not math.isfinite(self.last_norm):
            for p in state.model.parameters():
                p.grad = None
            self.skipped += 1
            print(f"[stoicheia] batch {int(state.timestamp.batch)}: non-finite gradient norm, update skipped ({self.skipped} so far)")
        elif self.clip_norm is not None and self.clip_norm > 0:
            scale = self.clip_norm / (self.last_norm + 1e-6)
            if scale < 1.0:
                for p in params:
                    p.grad.detach().mul_(scale)

    def state_dict(self) -> dict[str, Any]:
        return {"skipped": self.skipped}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.skipped = int(state.get("skipped", 0))


class TrainingMonitor(Callback):
    """Logs, per optimizer step: each loss term (mean over micro-batches), the LR, letters per
    second (non-padding slots of this device / wall seconds of the step, and times the world
    size for the whole job) and memory (GPU peak allocated, else process RSS, in GiB).
    Prints one console line every ``log_every`` batches and the metrics of every evaluation,
    next to ``unigram_bits`` (bits per letter of a letter-frequency model, the baseline that
    ``bits_per_char`` must beat).
    """

    def __init__(self, log_every: int = 10, guard: GradientGuard | None = None, unigram_bits: float | None = None) -> None:
        self.log_every = log_every
        self.unigram_bits = unigram_bits
        self.guard = guard
        self._t0 = 0.0
        self._terms: dict[str, float] = {}
        self._micro = 0
        self._letters = 0

    def batch_start(self, state: State, logger: Logger) -> None:
        self._t0 = time.perf_counter()
        self._terms, self._micro = {}, 0
        self._letters = int((state.batch["seg_id"] != 0).sum())

    def after_loss(self, state: State, logger: Logger) -> None:
        terms = getattr(state.model, "last_loss_terms", None) or {}
        for k, v in terms.items():
            self._terms[k] = self._terms.get(k, 0.0) + float(v)
        self._micro += 1

    def batch_end(self, state: State, logger: Logger) -> None:
        from composer.utils import dist

        seconds = max(time.perf_counter() - self._t0, 1e-9)
        lr = state.optimizers[0].param_groups[0]["lr"]
        metrics: dict[str, float] = {f"loss/{k}": v / max(1, self._micro) for k, v in self._terms.items()}
        metrics.update(
            {
                "train/lr": lr,
                "throughput/letters_per_sec_device": self._letters / seconds,
                "throughput/letters_per_sec": self._letters * dist.get_world_size() / seconds,
                "memory/gib": _memory_gib(),
            }
        )
        if self.guard is not None:
            metrics["train/grad_norm"] = self.guard.last_norm
            metrics["train/skipped_updates"] = float(self.guard.skipped)
        logger.log_metrics(metrics)
        step = int(state.timestamp.batch)
        if step % self.log_every == 0 or step == 1:
            gn = self.guard.last_norm if self.guard else float("nan")
            total = metrics.get("loss/total", float("nan"))
            print(
                f"[train] step {step:>6}  loss {total:.4f}  char {metrics.get('loss/char', float('nan')):.4f}  "
                f"lr {lr:.2e}  grad_norm {gn:.3f}  letters/s {metrics['throughput/letters_per_sec']:,.0f}  "
                f"mem {metrics['memory/gib']:.2f} GiB",
                flush=True,
            )

    def eval_end(self, state: State, logger: Logger) -> None:
        parts = []
        for label, metrics in state.eval_metrics.items():
            for name, metric in metrics.items():
                parts.append(f"{label}/{name} {float(metric.compute()):.4f}")
        if self.unigram_bits is not None and math.isfinite(self.unigram_bits):
            parts.append(f"(letter-unigram entropy of the training mix: {self.unigram_bits:.3f} bits)")
        print(f"[eval] step {int(state.timestamp.batch):>6}  " + "  ".join(parts), flush=True)


def _memory_gib() -> float:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.cuda.max_memory_allocated() / 2**30
    try:
        import psutil

        return psutil.Process(os.getpid()).memory_info().rss / 2**30
    except Exception:  # psutil missing: memory is not worth failing a run over
        return float("nan")


class JSONLLogger(LoggerDestination):
    """Appends one JSON object per step (``{"step": ..., name: value, ...}``) to ``path``.

    Only rank 0 writes. Values logged for the same step are merged into one line, written
    when a later step arrives or at close; the file is flushed every line so a killed run
    keeps everything but the step in flight.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._step: int | None = None
        self._row: dict[str, Any] = {}
        self._fh = None

    def _open(self):
        from composer.utils import dist

        if self._fh is None and dist.get_global_rank() == 0:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")
        return self._fh

    def log_metrics(self, metrics: dict[str, Any], step: int | None = None) -> None:
        if step != self._step:
            self._flush()
            self._step = step
        for k, v in metrics.items():
            if isinstance(v, torch.Tensor):
                v = v.item() if v.numel() == 1 else v.tolist()
            self._row[k] = v

    def _flush(self) -> None:
        if self._row and self._open() is not None:
            self._fh.write(json.dumps({"step": self._step, "time": time.time(), **self._row}, default=float) + "\n")
            self._fh.flush()
        self._row = {}

    def close(self, state: State, logger: Logger) -> None:
        self._flush()
        if self._fh is not None:
            self._fh.close()
            self._fh = None
