"""Skip optimizer updates with a non-finite gradient; abort a run that keeps producing them."""

from __future__ import annotations

import logging
import math
from typing import Any

import torch
from composer.core import Algorithm, Event, State
from composer.loggers import Logger

log = logging.getLogger(__name__)


class TrainingDiverged(RuntimeError):
    """Raised after ``max_consec_skips`` consecutive non-finite gradients: the run stops
    without saving the diverged state (the last checkpoint stays the newest)."""


class GradientGuard(Algorithm):
    """Clip the global L2 gradient norm to ``clip_norm``; skip non-finite updates.

    Runs at ``AFTER_TRAIN_BATCH``, i.e. after backward of every micro-batch and after the
    DDP all-reduce, so every rank sees the same norm and takes the same decision. A skipped
    update sets every ``p.grad = None``: AdamW then leaves those parameters and their moments
    untouched (no weight decay either); the schedule and the batch counter still advance.
    After ``max_consec_skips`` consecutive skips it raises :class:`TrainingDiverged` before
    the batch ends, so no checkpoint of the diverged state is written; the recipe then exits
    with status 3 and writes ``diverged.json``.

    **Without a host sync** (when the optimizer is a fused ``torch.optim.AdamW``/``Adam``, the
    GPU default of the recipe): the norm, the clip factor and the skip decision stay on the
    device. The skip is handed to the fused kernel as its ``found_inf`` flag (the flag
    ``torch.amp.GradScaler`` uses; the kernel then leaves the parameters, the moments and
    the step count untouched, exactly as ``p.grad = None`` does), and the skip counters are
    device tensors, read every ``log_every`` batches: a run that diverged stops at the first
    such check after ``max_consec_skips`` consecutive skips (its weights were never updated
    with a non-finite gradient, so the checkpoints in between are good). With another
    optimizer (the CPU default) the norm is read at every batch, as above.

    The number of skipped updates is kept in ``state_dict``; ``TrainingMonitor`` logs it
    (``train/skipped_updates``) with the norm (``train/grad_norm``).

    Args:
        clip_norm: maximum global gradient norm (``train.clip_norm``, injected); ``None`` or
            0 disables clipping.
        max_consec_skips: consecutive non-finite updates tolerated (0: never abort).
        log_every: batches between reads of the device counters in the sync-free mode
            (``train.log_every``, injected).
    """

    def __init__(
        self, clip_norm: float | None = 1.0, max_consec_skips: int = 25, log_every: int = 10
    ) -> None:
        if max_consec_skips < 0:
            raise ValueError(
                f"gradient_guard.max_consec_skips must be >= 0, got {max_consec_skips}"
            )
        self.clip_norm = clip_norm
        self.max_consec_skips = int(max_consec_skips)
        self.log_every = max(1, int(log_every))
        self._norm: torch.Tensor | None = None
        self.skipped = 0
        self.consecutive = 0
        # sync-free mode: counts not yet added to skipped / consecutive
        self._skipped_t: torch.Tensor | None = None
        self._consec_t: torch.Tensor | None = None

    @property
    def last_norm(self) -> float:
        """The last batch's global gradient norm (reads the device: one sync)."""
        return float(self._norm) if self._norm is not None else float("nan")

    def norm_tensor(self) -> torch.Tensor | None:
        """The last batch's global gradient norm as a 0-dim device tensor (no sync)."""
        return self._norm

    def skipped_count(self) -> int:
        """Skipped updates so far (reads the device counters in the sync-free mode)."""
        self._settle(None)
        return self.skipped

    def match(self, event: Event, state: State) -> bool:
        return event == Event.AFTER_TRAIN_BATCH

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        params = [p for p in state.model.parameters() if p.grad is not None]
        opt = state.optimizers[0] if state.optimizers else None
        fused = _fused(opt)
        if fused:
            opt.found_inf = None  # type: ignore[union-attr]
        if not params:
            return
        grads = [p.grad.detach() for p in params]
        norm = torch.linalg.vector_norm(
            torch.stack([n.float() for n in torch._foreach_norm(grads)])
        )
        self._norm = norm
        if fused:
            self._apply_on_device(norm, grads, opt, int(state.timestamp.batch))
            return
        last = float(norm)
        step = int(state.timestamp.batch)
        if not math.isfinite(last):
            for p in state.model.parameters():
                p.grad = None
            self.skipped += 1
            self.consecutive += 1
            log.warning(
                "[guard] batch %d: non-finite gradient norm, update skipped (%d in a row, %d in "
                "all)",
                step,
                self.consecutive,
                self.skipped,
            )
            self._check_diverged(step)
            return
        self.consecutive = 0
        if self.clip_norm is not None and self.clip_norm > 0:
            scale = self.clip_norm / (last + 1e-6)
            if scale < 1.0:
                for p in params:
                    p.grad.detach().mul_(scale)

    def _apply_on_device(
        self, norm: torch.Tensor, grads: list[torch.Tensor], opt: Any, step: int
    ) -> None:
        """The sync-free guard: clip and skip decided on the device (class docstring)."""
        bad = (~torch.isfinite(norm)).float()
        opt.found_inf = bad  # the fused kernel skips the whole update where it is 1
        if self.clip_norm is not None and self.clip_norm > 0:
            scale = torch.clamp(self.clip_norm / (norm + 1e-6), max=1.0)
            torch._foreach_mul_(grads, torch.where(bad > 0, torch.ones_like(scale), scale))
        if self._skipped_t is None:
            self._skipped_t = torch.zeros((), device=norm.device)
            self._consec_t = torch.full((), float(self.consecutive), device=norm.device)
        self._skipped_t += bad
        self._consec_t = (self._consec_t + bad) * bad
        if step % self.log_every == 0:
            self._settle(step)

    def _settle(self, step: int | None) -> None:
        """Move the device counters into ``skipped`` / ``consecutive`` (one sync); at a batch
        ``step``, warn about new skips and stop a diverged run."""
        if self._skipped_t is None:
            return
        new, consec = (int(x) for x in torch.stack([self._skipped_t, self._consec_t]).tolist())
        self._skipped_t.zero_()
        self.skipped += new
        self.consecutive = consec
        if step is None:
            return
        if new:
            log.warning(
                "[guard] batches %d-%d: %d non-finite gradient norm(s), update(s) skipped (%d in a "
                "row, %d in all)",
                max(1, step - self.log_every + 1),
                step,
                new,
                self.consecutive,
                self.skipped,
            )
        self._check_diverged(step)

    def _check_diverged(self, step: int) -> None:
        if self.max_consec_skips and self.consecutive >= self.max_consec_skips:
            raise TrainingDiverged(
                f"{self.consecutive} consecutive non-finite gradients up to batch {step}: the run "
                "diverged. No checkpoint of this state was written; lower train.lr (or raise "
                "train.warmup_frac) and run the same command again to resume from the last good "
                "checkpoint"
            )

    def state_dict(self) -> dict[str, Any]:
        self._settle(None)
        return {"skipped": self.skipped, "consecutive": self.consecutive}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.skipped = int(state.get("skipped", 0))
        self.consecutive = int(state.get("consecutive", 0))
        self._skipped_t = self._consec_t = None


def _fused(opt: Any) -> bool:
    """Whether ``opt`` is a torch Adam/AdamW whose every group runs the fused kernel (which
    honours ``found_inf``)."""
    return isinstance(opt, torch.optim.Adam) and all(
        g.get("fused") for g in getattr(opt, "param_groups", [])
    )
