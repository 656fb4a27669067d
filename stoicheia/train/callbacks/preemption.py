"""Save and stop at the next batch boundary when the job is told to end (SIGTERM, Ctrl-C)."""

from __future__ import annotations

import logging
import signal
import time
from typing import Any

import torch
from composer.core import Callback, State
from composer.loggers import Logger
from composer.utils import dist

from stoicheia.train.callbacks.anneal_control import AnnealControl
from stoicheia.train.exit_status import ExitCode

log = logging.getLogger(__name__)

#: Exit status after a SIGTERM (:attr:`ExitCode.PREEMPTED`); scripts/slurm_chain.sh reads it as
#: "preempted, resume in the next job".
PREEMPTED_EXIT = ExitCode.PREEMPTED


class Preemption(Callback):
    """On SIGTERM (what SLURM sends at preemption, ``scancel`` and the time limit) or SIGINT
    (Ctrl-C, sent by the terminal to every process of the job), save a checkpoint at the end
    of the batch in progress and stop, so a stopped job loses at most the batch it was in, not
    up to ``train.save_interval`` batches.

    The signal handler only sets a flag (the signal's number). At every ``BATCH_END`` the ranks
    agree on it with one ``all_reduce(MAX)`` of a 1-element int tensor (saving is collective:
    one rank alone saving would hang the others), so a signal that reached any rank stops all
    of them at the same batch, and all of them know which signal it was. The plugin then calls
    ``state.stop_training()``: Composer's checkpoint saver writes ``ep{E}-ba{B}-rank{R}.pt``
    and moves ``latest`` at that ``BATCH_CHECKPOINT`` (its interval fires at the end of
    training), the evaluation scheduled for that batch (if any) still runs, so the resumed run
    is bit-identical to an uninterrupted one. The recipe then exits with
    :meth:`ExitCode.for_signal` (130 after SIGINT, 143 after SIGTERM) unless the run completed
    at that batch.

    **One collective per batch.** The run's loader (:class:`~stoicheia.data.loader.PackedLoader`)
    already runs one all-reduce per batch (its end-of-epoch flag); the plugin hands it the
    signal flag, which rides in the same all-reduce, so a batch costs one collective, not two,
    and it runs on CPU tensors (a gloo group under NCCL), so no rank waits for its GPU to
    drain. The flag agreed when batch ``B`` was fetched is acted on at the end of batch ``B``:
    a signal that arrives while a batch trains stops the run at the end of the next one (the
    same batch on every rank). With one process, or a loader that ran no collective for the
    batch, the plugin reads its own flag / runs its own all-reduce as before.

    Time to exit after the signal: the rest of the batch in progress, plus that batch's
    evaluation if one is due, plus one checkpoint write. The handler is installed at
    ``INIT`` and the previous one restored at ``close``; a second signal while stopping
    changes nothing.

    Args:
        signals: names of the signals that stop the run (default ``["SIGTERM", "SIGINT"]``;
            add ``"SIGUSR1"`` for clusters configured with ``--signal=USR1@...``).
        control: injected (a run that completes at the signal's batch exits 0, not 143).
        loader: the run's training loader (injected), whose per-batch collective carries
            the flag.
    """

    def __init__(
        self, control: AnnealControl, signals: list[str] | None = None, loader: Any = None
    ) -> None:
        names = list(signals) if signals is not None else ["SIGTERM", "SIGINT"]
        self.signals: list[signal.Signals] = []
        for name in names:
            try:
                self.signals.append(signal.Signals[str(name).upper()])
            except KeyError:
                raise ValueError(
                    f"signals: unknown signal {name!r} (e.g. SIGTERM, SIGUSR1)"
                ) from None
            if self.signals[-1] in (signal.SIGKILL, signal.SIGSTOP):
                raise ValueError(f"signals: {name} cannot be caught")
        self.control = control
        self.received: signal.Signals | None = None  # the signal this rank got first
        self.agreed: signal.Signals | None = (
            None  # the signal the ranks stopped on (the highest number)
        )
        self.received_at: float | None = None
        self.stopped_at: int | None = None
        self._previous: dict[signal.Signals, Any] = {}
        self.loader = loader
        self._seen_collectives = 0
        self.own_collectives = 0  # batches that needed an all-reduce of their own
        if loader is not None and hasattr(loader, "signal_source"):
            loader.signal_source = self._signal_number

    @property
    def stopped(self) -> bool:
        """True once the run stopped on a signal (a checkpoint of its last batch was saved)."""
        return self.stopped_at is not None

    @property
    def exit_code(self) -> ExitCode:
        """The exit status of a run stopped by the signal the ranks agreed on."""
        return ExitCode.for_signal(self.agreed or self.received or signal.SIGTERM)

    def _signal_number(self) -> int:
        return int(self.received) if self.received is not None else 0

    def _agreed_flag(self, state: State) -> int:
        """The signal number the ranks agree on for this batch (0: none); see the class
        docstring for which collective carries it."""
        if dist.get_world_size() == 1:
            return self._signal_number()
        runs = getattr(self.loader, "collectives", None)
        if runs is not None and runs > self._seen_collectives:
            self._seen_collectives = runs
            return int(self.loader.agreed_signal)
        flag = state.device.tensor_to_device(
            torch.tensor([self._signal_number()], dtype=torch.int32)
        )
        dist.all_reduce(flag, reduce_operation="MAX")  # collective: all ranks stop together
        self.own_collectives += 1
        return int(flag.item())

    def _handle(self, signum: int, frame: Any) -> None:
        if self.received is None:
            self.received = signal.Signals(signum)
            self.received_at = time.monotonic()

    def request(self, sig: signal.Signals = signal.SIGTERM) -> None:
        """Act as if ``sig`` had been received (tests, tools)."""
        self._handle(int(sig), None)

    def init(self, state: State, logger: Logger) -> None:
        import threading

        if threading.current_thread() is not threading.main_thread():
            log.warning(
                "[preempt] the trainer is not in the main thread: no signal handler, a SIGTERM "
                "ends it without a checkpoint"
            )
            return
        for sig in self.signals:
            self._previous[sig] = signal.signal(sig, self._handle)

    def batch_end(self, state: State, logger: Logger) -> None:
        flag = self._agreed_flag(state)
        if flag and self.stopped_at is None:
            self.agreed = signal.Signals(flag)
            self.stopped_at = int(state.timestamp.batch)
            if not self.control.complete:
                # Composer's saver writes the checkpoint at this BATCH_CHECKPOINT
                state.stop_training()

    def fit_end(self, state: State, logger: Logger) -> None:
        if self.stopped_at is None or self.control.complete:
            return
        from composer.callbacks import CheckpointSaver

        saved = [
            c.saved_checkpoints[-1]
            for c in state.callbacks
            if isinstance(c, CheckpointSaver) and c.saved_checkpoints
        ]
        what = (
            self.received.name
            if self.received is not None
            else f"another rank's {self.agreed.name}"
        )
        waited = (
            f" {time.monotonic() - self.received_at:.1f} s after it"
            if self.received_at is not None
            else ""
        )
        log.info(
            "[preempt] step %d: %s received; saved %s%s; exiting with status %d (run the same "
            "command to resume)",
            self.stopped_at,
            what,
            saved[-1] if saved else "no checkpoint (no save_folder?)",
            waited,
            self.exit_code,
        )

    def close(self, state: State, logger: Logger) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
        self._previous = {}
