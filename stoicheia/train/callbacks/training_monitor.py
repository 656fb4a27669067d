"""Per-step training figures: loss terms, gradient norm, letters per second, memory.

The LR goes to the loggers through Composer's ``LRMonitor`` (``lr-AdamW/group0``); this
callback logs what Composer has no monitor for (loss terms, letters rather than rows per
second, CPU memory) and prints the console line."""

from __future__ import annotations

import logging
import os
import time

import torch
from composer.core import Callback, State
from composer.loggers import Logger
from composer.utils import dist

from stoicheia.train.algorithms.gradient_guard import GradientGuard

log = logging.getLogger(__name__)


class TrainingMonitor(Callback):
    """Logs, per optimizer step: each loss term (mean over micro-batches), letters per
    second (non-padding slots of this device / wall seconds of the step, and times the world
    size for the whole job) and memory (GPU peak allocated, else process RSS, in GiB).
    Prints one console line every ``log_every`` batches (rank 0). Evaluations are printed by
    :class:`~stoicheia.train.callbacks.eval_history.EvalHistory`.

    Args:
        log_every: batches between console lines (``train.log_every``, injected).
        guard: the run's :class:`GradientGuard`, if any (injected), for the gradient norm.
    """

    def __init__(self, log_every: int = 10, guard: GradientGuard | None = None) -> None:
        self.log_every = log_every
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
        # Under DDP the ComposerModel is wrapped: its attributes are on .module.
        model = state.model.module if hasattr(state.model, "module") else state.model
        terms = getattr(model, "last_loss_terms", None) or {}
        for k, v in terms.items():
            self._terms[k] = self._terms.get(k, 0.0) + float(v)
        self._micro += 1

    def batch_end(self, state: State, logger: Logger) -> None:
        seconds = max(time.perf_counter() - self._t0, 1e-9)
        lr = state.optimizers[0].param_groups[0]["lr"]
        metrics: dict[str, float] = {f"loss/{k}": v / max(1, self._micro) for k, v in self._terms.items()}
        metrics.update(
            {
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
            log.info(
                f"[train] step {step:>6}  loss {total:.4f}  char {metrics.get('loss/char', float('nan')):.4f}  "
                f"lr {lr:.2e}  grad_norm {gn:.3f}  letters/s {metrics['throughput/letters_per_sec']:,.0f}  "
                f"mem {metrics['memory/gib']:.2f} GiB"
            )


def _memory_gib() -> float:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.cuda.max_memory_allocated() / 2**30
    try:
        import psutil

        return psutil.Process(os.getpid()).memory_info().rss / 2**30
    except Exception:  # psutil missing: memory is not worth failing a run over
        return float("nan")


