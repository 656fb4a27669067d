"""What a run resumes from, settled before the trainer loads anything: the run folder made safe
to autoresume from (incomplete checkpoints set aside; with an object-store ``save_folder`` the
store's newest good checkpoint brought in), and the checkpoint the run will load, checked
(present, complete, of this model's shape) so that a wrong one stops every rank with one line
instead of failing inside Composer's load.

Collective where said: every rank calls those functions at the same point.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from composer.utils import dist

from stoicheia.checkpoint_files import missing_records, model_shapes, shape_mismatches, strip_ddp
from stoicheia.config import RunConfig
from stoicheia.train.checkpoints import CheckpointError, repair_checkpoint_folder
from stoicheia.train.object_store import StoreError, StoreFolder, is_remote, restore_run

log = logging.getLogger(__name__)


class CheckpointShapeError(ValueError):
    """The checkpoint a run would load was made by a model of another shape (the message names
    the checkpoint, the first differing parameters and the fix)."""


def raise_first(err: str | None, kind: type[Exception]) -> None:
    """Collective: raise ``kind`` on every rank if any rank has an error message."""
    errors = dist.all_gather_object(err) if dist.get_world_size() > 1 else [err]
    first = next((e for e in errors if e), None)
    if first:
        raise kind(first)


def prepare_run_folder(cfg: RunConfig, save_folder: str, run_folder: Path) -> None:
    """Make the local run folder safe to autoresume from (quarantine incomplete checkpoints,
    fix ``latest``); with an object-store ``save_folder``, on every node, also bring the
    store's newest good checkpoint and marker files into it (:func:`restore_run`).

    Collective; raises :class:`StoreError` on every rank if the store's checkpoints are
    unusable, and ``ValueError`` if the run has checkpoints but none is complete (see
    :func:`~stoicheia.train.checkpoints.repair_checkpoint_folder`)."""
    store_err = ckpt_err = None
    first = dist.get_local_rank() == 0 if is_remote(save_folder) else dist.get_global_rank() == 0
    if first:  # node disks are separate: with a store, each node restores its own copy
        try:
            repair_checkpoint_folder(run_folder, first_save=cfg.train.save_interval)
            if is_remote(save_folder) and cfg.train.autoresume:
                restore_run(StoreFolder.parse(save_folder), run_folder)
        except StoreError as e:
            store_err = str(e)
        except CheckpointError as e:
            if cfg.train.autoresume:
                ckpt_err = str(e)
            else:  # no autoresume: this run does not resume from its folder anyway
                log.warning("[checkpoint] %s", e)
    raise_first(store_err, StoreError)
    raise_first(ckpt_err, ValueError)


def check_load_path(cfg: RunConfig, run_folder: Path | None) -> None:
    """Raise ``ValueError`` if ``train.load_path`` is a local file that will be loaded (no
    checkpoint of this run to autoresume from) and is missing or incomplete."""
    load_path = cfg.train.load_path
    if not load_path or "://" in load_path:
        return  # object-store paths are checked where they are downloaded
    if cfg.train.autoresume and run_folder is not None and any(run_folder.glob("latest-rank*.pt")):
        return  # autoresume takes this run's own checkpoint and ignores load_path
    path = Path(load_path)
    if not path.is_file():
        raise ValueError(
            f"train.load_path={load_path}: no such file; give the path of a .pt checkpoint "
            "(e.g. a run's best.pt), or set train.load_path=null to start from scratch"
        )
    missing = missing_records(path)
    if missing != []:
        what = (
            f"lacks the tensor records {', '.join(missing[:3])}"
            if missing
            else "is not a complete torch checkpoint (truncated or corrupt)"
        )
        raise ValueError(
            f"train.load_path={load_path} {what}; give another checkpoint (the run's earlier "
            "ep*-ba*-rank0.pt, best.pt or pre_anneal.pt)"
        )


def checkpoint_to_load(cfg: RunConfig, run_folder: Path) -> Path | None:
    """The local checkpoint file the trainer will load: this run's own ``latest-rank0.pt``
    under autoresume (after :func:`prepare_run_folder`), else a local ``train.load_path``;
    ``None`` for a fresh run or an object-store ``load_path`` (downloaded by Composer)."""
    latest = Path(run_folder) / "latest-rank0.pt"
    if cfg.train.autoresume and latest.exists():
        return latest.resolve()
    load_path = cfg.train.load_path
    if load_path and "://" not in load_path and Path(load_path).is_file():
        return Path(load_path)
    return None


def check_model_shape(
    model: torch.nn.Module, checkpoint: Path | None, run_folder: Path, save_folder: str
) -> None:
    """Raise :class:`CheckpointShapeError` on every rank if ``checkpoint`` holds weights of
    another shape than ``model`` (compared name by name, before Composer loads it)."""
    if checkpoint is None:
        return
    saved = model_shapes(checkpoint)
    if saved is None:  # not readable as a Composer checkpoint: Composer's own load reports it
        return
    wanted = {strip_ddp(k): tuple(v.shape) for k, v in model.state_dict().items()}
    differs = shape_mismatches(saved, wanted)
    if not differs:
        return
    own = Path(checkpoint).parent.resolve() == Path(run_folder).resolve()
    fix = (
        f"use another run_name (or delete {save_folder}) to start a new run, or restore the "
        "model.* settings it was trained with"
        if own
        else "give a checkpoint of this model shape as train.load_path, or restore the model.* "
        "settings it was trained with"
    )
    shown = "; ".join(differs[:3]) + (
        f"; ... ({len(differs)} parameters differ)" if len(differs) > 3 else ""
    )
    raise CheckpointShapeError(
        f"the checkpoint {checkpoint} was made by a model of another shape ({shown}): {fix}"
    )
