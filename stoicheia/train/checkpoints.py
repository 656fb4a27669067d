"""Make a run folder safe to autoresume from.

Composer 0.32.1 writes a checkpoint file in place and then removes and re-creates the
``latest-rank{R}.pt`` symlink. A job killed in between leaves a truncated newest file, or no
symlink (autoresume then silently starts from scratch), or a symlink to a half-written file
(every later autoresume crashes). A kill during the tensor writes can even leave a zip that
opens, passes its CRC check and holds ``data.pkl`` but lacks some ``data/N`` tensor records
(loading fails with "failed locating file data/N").

:func:`~stoicheia.checkpoint_files.checkpoint_is_complete` (shared with inference) is the test
of a checkpoint: every member passes its CRC *and* every storage record that ``data.pkl``
names is present with its full size.
:func:`repair_checkpoint_folder` runs once before the trainer is built (global rank 0): it
moves incomplete checkpoints aside into ``corrupt/`` (nothing is deleted), points
``latest-rank{R}.pt`` at the newest complete checkpoint only, and refuses (raising
:class:`CheckpointError`) to let a run that had trained past its first checkpoint silently
start from scratch when none of its checkpoints is complete.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from pathlib import Path

from stoicheia.checkpoint_files import checkpoint_is_complete, missing_records, validate_checkpoint

log = logging.getLogger(__name__)

_NAME = re.compile(r"^ep(?P<epoch>\d+)-ba(?P<batch>\d+)-rank(?P<rank>\d+)\.pt(\.\d+)?$")
#: Full checkpoints kept under fixed names in the run folder (see run_files).
NAMED = ("best.pt", "pre_anneal.pt", "final.pt")
_PARTIAL = re.compile(r"^\.(?P<name>\w+)\.partial\.pt$")


__all__ = [
    "NAMED",
    "CheckpointError",
    "checkpoint_is_complete",
    "missing_records",
    "periodic_checkpoint",
    "repair_checkpoint_folder",
    "validate_checkpoint",
]


def periodic_checkpoint(name: str) -> tuple[int, int, int] | None:
    """``(epoch, batch, rank)`` of a periodic checkpoint file name ``ep{E}-ba{B}-rank{R}.pt``
    (also with a ``.N`` suffix given by the quarantine), else ``None``."""
    m = _NAME.match(name)
    return (int(m["epoch"]), int(m["batch"]), int(m["rank"])) if m else None


class CheckpointError(RuntimeError):
    """A run folder whose checkpoints cannot be resumed from (message names files and fix)."""


def _quarantine(f: Path, folder: Path, why: str, actions: list[str]) -> None:
    quarantine = folder / "corrupt"
    quarantine.mkdir(exist_ok=True)
    target = quarantine / f.name
    k = 1
    while target.exists():  # an earlier kill left one of the same name: keep both
        target = quarantine / f"{f.name}.{k}"
        k += 1
    shutil.move(str(f), target)
    actions.append(f"moved {why} {f} to {target} (it cannot be loaded)")


def repair_checkpoint_folder(folder: Path, first_save: int | None = None) -> list[str]:
    """Quarantine incomplete checkpoints in ``folder`` and fix the ``latest-rank{R}.pt`` links.

    Periodic checkpoints are the files ``ep{epoch}-ba{batch}-rank{rank}.pt``; per rank, the
    newest complete one becomes ``latest``, and the newer incomplete ones move to
    ``corrupt/`` (a warning names each). The named checkpoints (``best.pt``,
    ``pre_anneal.pt``, ``final.pt``) are checked too, and ``.NAME.partial.pt`` files left by
    a kill during their write are moved aside.

    When no complete periodic checkpoint is left for a rank but incomplete ones exist (in the
    folder or already in ``corrupt/``), autoresume would silently start the run from
    scratch. That is allowed only if the newest of them is at batch ``first_save`` or
    earlier (the run's first checkpoint, or a preemption checkpoint before it: a restart
    loses no more than a fallback would); otherwise :class:`CheckpointError` is raised.

    Returns one message per action taken (each also logged as a warning). Does nothing if
    the folder does not exist.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    actions: list[str] = []
    by_rank: dict[int, list[tuple[int, Path]]] = {}
    for f in folder.iterdir():
        m = _NAME.match(f.name)
        if m and f.name.endswith(".pt") and f.is_file() and not f.is_symlink():
            by_rank.setdefault(int(m["rank"]), []).append((int(m["batch"]), f))
        elif _PARTIAL.match(f.name) and f.is_file():
            _quarantine(f, folder, "partly written", actions)
        elif f.name in NAMED and f.is_file() and not checkpoint_is_complete(f):
            _quarantine(f, folder, "incomplete named checkpoint", actions)
    earlier: dict[int, int] = {}  # rank -> newest batch among files already in corrupt/
    if (folder / "corrupt").is_dir():
        for f in (folder / "corrupt").iterdir():
            m = _NAME.match(f.name)
            if m:
                earlier[int(m["rank"])] = max(earlier.get(int(m["rank"]), 0), int(m["batch"]))
    problems: list[str] = []
    for rank in sorted(set(by_rank) | set(earlier)):
        files = sorted(by_rank.get(rank, []))
        newest_ok: Path | None = None
        newest_bad = earlier.get(rank)
        for batch, f in reversed(files):
            missing = missing_records(f)
            if missing == []:
                newest_ok = f
                break
            newest_bad = max(newest_bad or 0, batch)
            why = (
                "incomplete checkpoint (lacks "
                f"{', '.join(missing[:3])}{'...' if len(missing) > 3 else ''})"
                if missing
                else "unreadable checkpoint"
            )
            _quarantine(f, folder, why, actions)
        link = folder / f"latest-rank{rank}.pt"
        if newest_ok is None:
            if link.is_symlink() or link.exists():
                link.unlink()
                actions.append(f"removed {link}: no complete checkpoint left for rank {rank}")
            if newest_bad is not None and (first_save is None or newest_bad > first_save):
                problems.append(f"rank {rank}: newest incomplete checkpoint at batch {newest_bad}")
            elif newest_bad is not None:
                actions.append(
                    f"rank {rank}: no complete checkpoint; the only one written (batch "
                    f"{newest_bad}) was incomplete: the run starts from batch 0"
                )
            continue
        if not link.is_symlink() or os.readlink(link) != newest_ok.name:
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(newest_ok.name)
            actions.append(f"pointed {link.name} at {newest_ok.name}")
    for a in actions:
        log.warning("[checkpoint] repair: %s", a)
    if problems:
        raise CheckpointError(
            f"no complete checkpoint in {folder} ({'; '.join(problems)}; the broken files are in "
            f"{folder / 'corrupt'}): the run cannot resume, and starting it from scratch would "
            f"lose its training. To start over anyway, move {folder} away (or use another "
            "run_name); to continue from another checkpoint, give it as train.load_path with a "
            "new run_name"
        )
    return actions
