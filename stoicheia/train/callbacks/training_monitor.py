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
import torch.nn.functional as F
from composer.core import Callback, State
from composer.loggers import Logger
from composer.utils import dist

from stoicheia.text.alphabet import IGNORE_INDEX
from stoicheia.train.algorithms.gradient_guard import GradientGuard
from stoicheia.train.flops import batch_flops, peak_flops

log = logging.getLogger(__name__)


class TrainingMonitor(Callback):
    """Logs, per optimizer step: each loss term (mean over micro-batches), letters per
    second (non-padding slots of this device / wall seconds of the batches, over a window of
    the last ``speed_window`` batches as Composer's ``SpeedMonitor`` does, so that one slow or
    fast batch does not make the figure swing; times the world size for the whole job), on a
    GPU of :data:`stoicheia.train.flops.PEAK_FLOPS` the model FLOPs utilisation
    ``throughput/mfu`` (model FLOPs of the window's batches, counted per document by
    :func:`~stoicheia.train.flops.batch_flops`, / their seconds / the device's peak), and
    memory (GPU peak allocated, else process RSS, in GiB). Prints one console line every
    ``log_every`` batches (rank 0) with the progress towards the run's end (the anneal end once
    decided, else ``train.nominal_steps``) and an ETA from the wall time of the last 50
    batches (evaluations and checkpoints included). Evaluations are printed by
    :class:`~stoicheia.train.callbacks.eval_history.EvalHistory`.

    **Compute and wall figures.** ``throughput/letters_per_sec`` and ``throughput/mfu`` count
    the seconds from the start of a batch (after it came from the loader) to its end: the
    model's speed. ``throughput/letters_per_sec_wall`` and ``throughput/mfu_wall`` count from
    the moment the batch was asked of the loader (Composer's ``BEFORE_DATALOADER``), so the
    packing and any wait for the workers are inside them: what the run really gets.
    ``throughput/loader_share`` is the share of the wall seconds spent getting the batches
    (``1 - compute / wall``). Evaluations and checkpoint writes are in neither.

    **No host-device sync per step.** Loss terms, letter and FLOP counts stay tensors on the
    device and are summed there; they are read (one sync) only at the batches that are
    logged. With ``every_step`` false (the default on a GPU) those are every ``log_every``
    batches (and batch 1): each logged line then holds the means over the batches since the
    last one. With ``every_step`` true (the default on a CPU, where reading a value costs
    nothing) every batch is logged, as before. The letters-per-second window ends at a logged
    (synced) batch, so the device's queued work is inside it.

    **The training bits per character** (``metrics/train/bits_per_char``, the unweighted char
    cross-entropy of :class:`~stoicheia.model.metrics.BitsPerChar`, summed over the ranks) is
    computed here, on the logged batches only: Composer's own train metric runs an extra metric
    update on every micro-batch and computes and all-gathers it (a device sync) after every
    batch, so this callback empties ``state.train_metrics`` at ``fit_start``. Like Composer's,
    the figure describes the logged batch (all its micro-batches), not the batches between.

    Args:
        log_every: batches between console lines (``train.log_every``, injected).
        guard: the run's :class:`GradientGuard`, if any (injected), for the gradient norm.
        control: the run's ``AnnealControl`` (injected), for the end of the run.
        speed_window: batches in the letters-per-second window (evaluations and checkpoint
            writes are not counted: the time of a batch runs from its start to its end).
        every_step: log every batch (``True``) or every ``log_every`` batches (``False``);
            ``None``: ``False`` on a GPU, ``True`` on a CPU.
    """

    def __init__(
        self,
        log_every: int = 10,
        guard: GradientGuard | None = None,
        control: Any = None,
        speed_window: int = 50,
        every_step: bool | None = None,
    ) -> None:
        if not (isinstance(speed_window, int) and speed_window >= 1):
            raise ValueError(f"speed_window must be a whole number >= 1, got {speed_window!r}")
        if every_step is not None and not isinstance(every_step, bool):
            raise ValueError(f"every_step must be true, false or null, got {every_step!r}")
        self.log_every = log_every
        self.every_step = every_step
        # (letters, model FLOPs, seconds) per batch; counts are device tensors until read
        # (letters, model FLOPs, compute seconds, wall seconds) per batch
        self._speed: collections.deque[tuple[Any, Any, float, float]] = collections.deque(
            maxlen=speed_window
        )
        self.guard = guard
        self.control = control
        self._t0 = 0.0
        self._fetch0: float | None = None  # when the batch's fetch from the loader began
        self._terms: dict[str, torch.Tensor] = {}  # sums since the last logged batch
        self._micro = 0
        self._letters: torch.Tensor | None = None
        self._batch_flops: torch.Tensor | None = None
        self._peak: float | None = None
        self._ends: collections.deque[tuple[int, float]] = collections.deque(maxlen=51)
        self.syncs = 0  # batches whose figures were read from the device (logged batches)
        self._bpc: list[torch.Tensor] = []  # [nats, supervised letters] of the logged batch

    def fit_start(self, state: State, logger: Logger) -> None:
        self._ends.clear()
        self._speed.clear()
        self._bpc = []
        # the train bits/char is computed here on logged batches (class docstring)
        state.train_metrics = {}
        on_gpu = torch.cuda.is_available() and state.device.type == "gpu"
        if self.every_step is None:
            self.every_step = not on_gpu
        if on_gpu:
            precision = str(getattr(state.precision, "value", state.precision))
            name = torch.cuda.get_device_name()
            self._peak = peak_flops(name, precision)
            if self._peak is None and dist.get_global_rank() == 0:
                log.info(
                    "[train] model FLOPs utilisation is not logged: no peak FLOP rate for %r in "
                    "stoicheia.train.flops",
                    name,
                )

    def before_dataloader(self, state: State, logger: Logger) -> None:
        self._fetch0 = time.perf_counter()

    def batch_start(self, state: State, logger: Logger) -> None:
        model = state.model.module if hasattr(state.model, "module") else state.model
        seg = state.batch["seg_id"]
        self._t0 = time.perf_counter()
        self._letters = (seg != 0).sum()
        self._batch_flops = batch_flops(model, seg)

    def after_forward(self, state: State, logger: Logger) -> None:
        # the batch being trained is the next one; only logged batches feed the train metric
        if not self._logged(int(state.timestamp.batch) + 1):
            return
        outputs, batch = state.outputs, state.batch
        if not isinstance(outputs, dict) or "char" not in outputs or "tgt_chars" not in batch:
            return
        with torch.no_grad():
            logits, target = outputs["char"].detach(), batch["tgt_chars"]
            nats = F.cross_entropy(
                logits.reshape(-1, logits.shape[-1]).float(),
                target.reshape(-1),
                ignore_index=IGNORE_INDEX,
                reduction="sum",
            ).double()
            count = (target != IGNORE_INDEX).sum().double()
        if self._bpc:
            self._bpc = [self._bpc[0] + nats, self._bpc[1] + count]
        else:
            self._bpc = [nats, count]

    def after_loss(self, state: State, logger: Logger) -> None:
        # Under DDP the ComposerModel is wrapped: its attributes are on .module.
        model = state.model.module if hasattr(state.model, "module") else state.model
        terms = getattr(model, "last_loss_terms", None) or {}
        for k, v in terms.items():
            v = v.detach().float()
            self._terms[k] = self._terms[k] + v if k in self._terms else v
        self._micro += 1

    def _logged(self, step: int) -> bool:
        return bool(self.every_step) or step % self.log_every == 0 or step == 1

    def batch_end(self, state: State, logger: Logger) -> None:
        now = time.perf_counter()
        seconds = max(now - self._t0, 1e-9)
        fetch0 = self._fetch0 if self._fetch0 is not None else self._t0
        self._fetch0 = None
        self._speed.append((self._letters, self._batch_flops, seconds, max(now - fetch0, seconds)))
        step = int(state.timestamp.batch)
        self._ends.append((step, time.perf_counter()))
        if not self._logged(step):
            return
        # the one read of the device's figures since the last logged batch
        names = sorted(self._terms)
        pending = [i for i, s in enumerate(self._speed) if isinstance(s[0], torch.Tensor)]
        tensors = [self._terms[k].double() for k in names]
        for i in pending:
            tensors += [self._speed[i][0].double(), self._speed[i][1].double()]
        guard_norm = self.guard.norm_tensor() if self.guard is not None else None
        if guard_norm is not None:
            tensors.append(guard_norm.double())
        bpc = self._bpc
        self._bpc = []
        if bpc:
            # the one collective of the train metric, on logged batches only (every rank logs
            # the same batches)
            pair = torch.stack(bpc)
            if dist.get_world_size() > 1:
                dist.all_reduce(pair, reduce_operation="SUM")
            tensors += [pair[0], pair[1]]
        values = torch.stack(tensors).tolist() if tensors else []
        self.syncs += 1
        train_bits = None
        if bpc:
            nats, count = values[-2:]
            values = values[:-2]
            train_bits = nats / count / math.log(2) if count else float("nan")
        terms = dict(zip(names, values[: len(names)], strict=True))
        rest = values[len(names) :]
        for j, i in enumerate(pending):
            self._speed[i] = (rest[2 * j], rest[2 * j + 1], *self._speed[i][2:])
        grad_norm = rest[-1] if guard_norm is not None else float("nan")
        micro = max(1, self._micro)
        self._terms, self._micro = {}, 0
        lr = state.optimizers[0].param_groups[0]["lr"]
        metrics: dict[str, float] = {f"loss/{k}": v / micro for k, v in terms.items()}
        letters = sum(s[0] for s in self._speed)
        flops = sum(s[1] for s in self._speed)
        secs = max(sum(s[2] for s in self._speed), 1e-9)
        wall = max(sum(s[3] for s in self._speed), 1e-9)
        per_device = letters / secs
        metrics.update(
            {
                "throughput/letters_per_sec_device": per_device,
                "throughput/letters_per_sec": per_device * dist.get_world_size(),
                "throughput/letters_per_sec_wall": letters / wall * dist.get_world_size(),
                "throughput/loader_share": max(0.0, 1.0 - secs / wall),
                "memory/gib": _memory_gib(),
            }
        )
        if letters:
            metrics["throughput/flops_per_letter"] = flops / letters
            if self._peak:
                metrics["throughput/mfu"] = flops / secs / self._peak
                metrics["throughput/mfu_wall"] = flops / wall / self._peak
        if train_bits is not None:
            metrics["metrics/train/bits_per_char"] = train_bits
        if self.guard is not None:
            metrics["train/grad_norm"] = grad_norm
            metrics["train/skipped_updates"] = float(self.guard.skipped_count())
        end, latest = self._end(step)
        eta = self._eta(step, end)
        if eta is not None:
            metrics["time/eta_seconds"] = eta
        logger.log_metrics(metrics)
        if step % self.log_every == 0 or step == 1:
            total = metrics.get("loss/total", float("nan"))
            mfu = (
                f"  mfu {metrics['throughput/mfu']:.1%} (wall {metrics['throughput/mfu_wall']:.1%})"
                if "throughput/mfu" in metrics
                else ""
            )
            log.info(
                f"[train] step {step:>6}  loss {total:.4f}  char "
                f"{metrics.get('loss/char', float('nan')):.4f}  lr {lr:.2e}  grad_norm "
                f"{grad_norm:.3f}  letters/s {metrics['throughput/letters_per_sec']:,.0f} (wall "
                f"{metrics['throughput/letters_per_sec_wall']:,.0f}){mfu}  "
                f"mem {metrics['memory/gib']:.2f} GiB"
            )
            if end is not None:
                pct = min(step / end, 1.0) if end else 1.0
                at = " at the latest" if latest else ""
                log.info(f"[progress] step {step}/{end}{at} ({pct:.0%}), ETA {format_seconds(eta)}")

    def _end(self, step: int) -> tuple[int | None, bool]:
        """The batch the run is expected to end at, and whether that is only its latest end:
        the anneal end once decided; before the planned anneal start the nominal end
        (``nominal_steps``; a stall moves it); past it, with the stable phase extended, the
        end of an anneal starting at the cap (``max_steps``: the latest end)."""
        c = self.control
        if c is None:
            return None, False
        if c.decided:
            return int(c.anneal_end), False
        if step > c.shape.planned_anneal_start:
            return int(c.anneal_end), True
        return int(c.shape.nominal_steps), False

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
