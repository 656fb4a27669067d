"""``train.loggers: [tensorboard]``: Composer's ``TensorboardLogger`` in the run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def tensorboard_logger(run_folder: Path, log_every: int = 10) -> Any:
    """Composer's ``TensorboardLogger`` writing event files to ``{run folder}/tensorboard``,
    flushed every ``train.log_every`` batches (view with ``tensorboard --logdir
    RUN_FOLDER/tensorboard``). Both arguments are injected by the run."""
    from composer.loggers import TensorboardLogger

    return TensorboardLogger(
        log_dir=str(Path(run_folder) / "tensorboard"), flush_interval=max(1, int(log_every))
    )
