"""Save the branch point of the run: the last peak-LR state, ``pre_anneal.pt``."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from composer.core import Callback, State
from composer.loggers import Logger

from stoicheia.train import run_files
from stoicheia.train.callbacks.anneal_control import AnnealControl

log = logging.getLogger(__name__)


class PreAnnealCheckpoint(Callback):
    """Once, at ``BATCH_CHECKPOINT`` of the anneal-start batch, save the full state as
    ``pre_anneal.pt`` in the run folder (and the object store, when ``save_folder`` is one).

    It holds weights, optimizer moments and data position at the end of the stable phase,
    so another anneal (other mix, other length) can start from it as a new run: see
    docs/plugins.md, "Another anneal from pre_anneal.pt".

    Args:
        control, run_folder, save_folder: injected.
    """

    def __init__(self, control: AnnealControl, run_folder: Path, save_folder: str) -> None:
        self.control = control
        self.run_folder = Path(run_folder)
        self.save_folder = save_folder
        self.saved_at: int | None = None

    def batch_checkpoint(self, state: State, logger: Logger) -> None:
        step = int(state.timestamp.batch)
        if self.saved_at is None and self.control.decided and step == self.control.anneal_start:
            path = run_files.save_named_checkpoint(
                state, logger, self.run_folder, self.save_folder, "pre_anneal"
            )
            self.saved_at = step
            log.info(
                "[anneal] step %d: saved the last peak-LR state as %s (the branch point for "
                "another anneal)",
                step,
                path,
            )

    def state_dict(self) -> dict[str, Any]:
        return {"saved_at": self.saved_at}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.saved_at = state.get("saved_at")
