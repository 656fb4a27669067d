"""Keep the run's configuration with its checkpoints, so a checkpoint can be used on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from composer.core import Callback, State
from composer.loggers import Logger
from composer.utils import dist

from stoicheia.train import run_files

CONFIG_FILE = "config.json"


class RunRecord(Callback):
    """Always on. Its ``state_dict`` holds the whole run configuration (a plain dict, as
    :func:`stoicheia.config.to_dict` makes it), so every checkpoint (periodic, ``best.pt``,
    ``final.pt``) carries the model shape, the tier mix and the noise it was trained with;
    :func:`stoicheia.inference.loading.load_model` reads it from there. At ``INIT`` rank 0 also
    writes it to ``config.json`` in the run folder (for ``stoicheia report`` and for readers of
    the folder).

    On resume the configuration of the *running* job is kept (the loaded one is the old
    job's; a resumed job may legitimately change e.g. ``train.log_every``).
    """

    def __init__(self, config: dict[str, Any], run_folder: Path | None = None) -> None:
        self.config = config
        self.run_folder = Path(run_folder) if run_folder is not None else None

    def init(self, state: State, logger: Logger) -> None:
        if self.run_folder is not None and dist.get_global_rank() == 0:
            run_files.write_json(self.run_folder, CONFIG_FILE, self.config)

    def state_dict(self) -> dict[str, Any]:
        return {"version": 1, "config": self.config}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass  # the running job's configuration is the one that counts (class docstring)
