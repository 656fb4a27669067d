"""Per-step training figures: loss terms, gradient norm, letters per second, MFU, memory, ETA.

The LR goes to the loggers through Composer's ``LRMonitor`` (``lr-AdamW/group0``); this
callback logs what Composer has no monitor for (loss terms, letters rather than rows per
second, model FLOPs utilisation from the model shape, CPU memory) and prints the console
line with the run's progress and the estimated time to its end."""

from __future__ import annotations

import collections
import logging
import math
import os
import time
from typing import Any

import torch
from composer.core import Callback, State
from composer.loggers import Logger
from composer.utils import dist

from stoicheia.train.algorithms.gradient_guard import GradientGuard
from stoicheia.train.flops import flops_per_letter, peak_flops

log = logging.getLogger(__name__)


class TrainingMonitor(Callback):
    """Logs, per optimizer step: each loss term (mean over micro-batches), letters per
    second (non-padding slots of this device / wall seconds of the batches, over a window of
    the last ``speed_window`` batches as Composer's ``SpeedMonitor`` does, so that one slow or
    fast batch does not make the figure swing; times the world size for the whole job), on a GPU of :data:`stoicheia.train.flops.PEAK_FLOPS` the model
    FLOPs utilisation ``throughput/mfu`` (letters/s per device x training FLOPs per letter,
    :func:`~stoicheia.train.flops.flops_per_letter`, / the device's peak), and memory (GPU
    peak allocated, else process RSS, in GiB). Prints one console line every ``log_every``
    batches (rank 0) with the progress towards the run's end (the anneal end once decided,
    else ``train.nominal_steps``) and an ETA from the wall time of the last 50 batches
    (evaluations and checkpoints included). Evaluations are printed by
    :class:`~stoicheia.train.callbacks.eval_history.EvalHistory`.

    Args:
        log_every: batches between console lines (``train.log_every``, injected).
        guard: the run's :class:`GradientGuard`, if any (injected), for the gradient norm.
        control: the run's ``AnnealControl`` (injected), for the end of the run.
        speed_window: batches in the letters-per-second window (evaluations and checkpoint
            writes are not counted: the time of a batch runs from its start to its end).
    """

    def __init__(
        self,
        log_every: int = 10,
        guard: GradientGuard | None = None,
        control: Any = None,
        speed_window: int = 50,
    ) -> None:
        if not (isinstance(speed_window, int) and speed_window >= 1):
            raise ValueError(f"speed_window must be a whole number >= 1, got {speed_window!r}")
        self.log_every = log_every
        self._speed: collections.deque[tuple[int, float]] = collections.deque(maxlen=speed_window)
        self.guard = guard
        self.control = control
        self._t0 = 0.0
        self._terms: dict[str, float] = {}
        self._micro = 0
        self._letters = 0
        self._flops: float | None = None  # per letter, at the first batch's row length
        self._peak: float | None = None
        self._ends: collections.deque[tuple[int, float]] = collections.deque(maxlen=51)

    def fit_start(self, state: State, logger: Logger) -> None:
        self._ends.clear()
        self._speed.clear()
        if torch.cuda.is_available() and state.device.type == "gpu":
            precision = str(getattr(state.precision, "value", state.precision))
            name = torch.cuda.get_device_name()
            self._peak = peak_flops(name, precision)
            if self._peak is None and dist.get_global_rank() == 0:
                log.info(
                    "[train] model FLOPs utilisation is not logged: no peak FLOP rate for %r in stoicheia.train.flops",
                    name,
                )

    def batch_start(self, state: State, logger: Logger) -> None:
        if self._flops is None:
            model = state.model.module if hasattr(state.model, "module") else state.model
            self._flops = flops_per_letter(model, int(state.batch["seg_id"].shape[-1]))
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
        metrics: dict[str, float] = {
            f"loss/{k}": v / max(1, self._micro) for k, v in self._terms.items()
        }
        self._speed.append((self._letters, seconds))
        per_device = sum(n for n, _ in self._speed) / max(sum(t for _, t in self._speed), 1e-9)
        metrics.update(
            {
                "throughput/letters_per_sec_device": per_device,
                "throughput/letters_per_sec": per_device * dist.get_world_size(),
                "memory/gib": _memory_gib(),
            }
        )
        if self._flops is not None:
            metrics["throughput/flops_per_letter"] = self._flops
            if self._peak:
                metrics["throughput/mfu"] = (
                    metrics["throughput/letters_per_sec_device"] * self._flops / self._peak
                )
        if self.guard is not None:
            metrics["train/grad_norm"] = self.guard.last_norm
            metrics["train/skipped_updates"] = float(self.guard.skipped)
        step = int(state.timestamp.batch)
        self._ends.append((step, time.perf_counter()))
        end = self._end()
        eta = self._eta(step, end)
        if eta is not None:
            metrics["time/eta_seconds"] = eta
        logger.log_metrics(metrics)
        if step % self.log_every == 0 or step == 1:
            gn = self.guard.last_norm if self.guard else float("nan")
            total = metrics.get("loss/total", float("nan"))
            mfu = f"  mfu {metrics['throughput/mfu']:.1%}" if "throughput/mfu" in metrics else ""
            log.info(
                f"[train] step {step:>6}  loss {total:.4f}  char {metrics.get('loss/char', float('nan')):.4f}  "
                f"lr {lr:.2e}  grad_norm {gn:.3f}  letters/s {metrics['throughput/letters_per_sec']:,.0f}{mfu}  "
                f"mem {metrics['memory/gib']:.2f} GiB"
            )
            if end is not None:
                pct = min(step / end, 1.0) if end else 1.0
                log.info(f"[progress] step {step}/{end} ({pct:.0%}), ETA {format_seconds(eta)}")

    def _end(self) -> int | None:
        """The batch the run is expected to end at: the anneal end once decided, else the
        nominal end (``nominal_steps``; a stall or an extension moves it)."""
        c = self.control
        if c is None:
            return None
        if c.decided:
            return int(c.anneal_end)
        return int(c.shape.nominal_steps)

    def _eta(self, step: int, end: int | None) -> float | None:
        """Seconds until ``end`` at the mean wall time per batch of the recent batches."""
        if end is None or len(self._ends) < 2:
            return None
        (s0, t0), (s1, t1) = self._ends[0], self._ends[-1]
        if s1 <= s0:
            return None
        return max(0, end - step) * (t1 - t0) / (s1 - s0)


def format_seconds(seconds: float | None) -> str:
    """``h:mm:ss`` (or ``?`` when unknown)."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _memory_gib() -> float:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.cuda.max_memory_allocated() / 2**30
    try:
        import psutil

        return psutil.Process(os.getpid()).memory_info().rss / 2**30
    except Exception:  # psutil missing: memory is not worth failing a run over
        return float("nan")
