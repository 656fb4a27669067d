"""Composer's periodic checkpoints, stopping the run cleanly when one cannot be written."""

from __future__ import annotations

from pathlib import Path

from composer.callbacks import CheckpointSaver
from composer.core import State
from composer.loggers import Logger
from composer.utils import checkpoint

from stoicheia.train.save_guard import collective_write


class GuardedCheckpointSaver(CheckpointSaver):
    """Composer's :class:`~composer.callbacks.CheckpointSaver` (``ep{E}-ba{B}-rank{R}.pt`` every
    ``save_interval``, ``latest-rank{R}.pt``, rotation, the checkpoint at the end of training),
    whose write goes through :func:`~stoicheia.train.save_guard.collective_write`: a full disk
    or a file size limit removes the half-written file, leaves ``latest`` on the last good
    checkpoint and raises :class:`~stoicheia.train.save_guard.CheckpointNotSaved` on every rank
    together (no rank waits at a barrier the failing one never reaches).

    Given to the ``Trainer`` in ``callbacks`` with the same ``folder`` as ``save_folder`` (the
    trainer then uses it instead of making its own; autoresume reads the same folder). Takes
    :class:`~composer.callbacks.CheckpointSaver`'s arguments."""

    def _save_checkpoint(self, state: State, logger: Logger) -> None:
        name = checkpoint.get_save_filename(
            state, self.filename.format(state, keep_placeholders=True)
        )
        before = self.symlink_count  # Composer counts it up right after save_checkpoint returns
        try:
            collective_write(
                lambda: super(GuardedCheckpointSaver, self)._save_checkpoint(state, logger),
                Path(name),
                Path(name),  # Composer writes in place: the half-written file is the file itself
                before_barrier=lambda: self.symlink_count == before,
            )
        except BaseException:
            self.all_saved_checkpoints_to_timestamp.pop(name, None)  # never rotate a removed file
            raise
