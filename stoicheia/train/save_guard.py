"""A checkpoint that cannot be written stops the run cleanly, on every rank at once.

Composer's ``save_checkpoint`` (used by its ``CheckpointSaver`` for the periodic checkpoints and
by :func:`~stoicheia.train.run_files.save_named_checkpoint` for ``best.pt``, ``pre_anneal.pt``,
``final.pt``) writes the file on global rank 0 while every other rank waits at a barrier. A full
disk or a file size limit makes torch raise on rank 0 before that barrier: left alone, rank 0
ends in a traceback, the other ranks wait at the barrier until the distributed timeout, and a
file of several MB stays half-written.

:func:`collective_write` runs such a write on every rank: on rank 0 it turns the failure into
one line (:func:`stoicheia.publish.write_failure`: the path and the cause), removes the
half-written file, meets the other ranks at the barrier they wait at, and then all ranks agree
(one ``all_gather_object``) and raise :class:`CheckpointNotSaved` together. The run ends as a
SIGTERM ends it (:mod:`stoicheia.train.run`): exit status 143, its ``latest`` link untouched, so
the last good checkpoint is the one the same command resumes from once space is freed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from stoicheia.publish import write_failure

T = TypeVar("T")


class CheckpointNotSaved(RuntimeError):
    """A checkpoint could not be written (full disk, quota, file size limit); raised on every
    rank together. ``str()`` is one line: ``cannot save checkpoint PATH (CAUSE)``; ``fix`` what
    to do (free some space, raise the file size limit)."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


def last_good_checkpoint(folder: Path) -> str | None:
    """The name ``latest-rank0.pt`` in ``folder`` points at (the newest complete periodic
    checkpoint; a failed write never moves it), or ``None``."""
    link = Path(folder) / "latest-rank0.pt"
    return os.readlink(link) if link.is_symlink() else None


def agree(failure: str | None) -> str | None:
    """Collective: the first rank's failure message (or ``None``), the same on every rank."""
    from composer.utils import dist

    found = dist.all_gather_object(failure) if dist.get_world_size() > 1 else [failure]
    return next((f for f in found if f), None)


def collective_write(
    write: Callable[[], T],
    path: Path,
    partial: Path,
    *,
    before_barrier: Callable[[], bool],
) -> T:
    """Run ``write`` (a collective checkpoint write of ``path``, written as ``partial``) on
    every rank; returns what it returns.

    If it fails for want of space or past a size limit (:func:`~stoicheia.publish.write_failure`)
    and ``before_barrier()`` says the failure came before Composer's barrier that ends the
    write, the half-written ``partial`` is removed and this rank meets the others at that
    barrier (a failure after it, an upload's staging copy say, leaves the whole file); then
    every rank raises :class:`CheckpointNotSaved` with the failing rank's one line. Other
    exceptions propagate as they are. Every rank must call it (it ends with one
    ``all_gather_object``)."""
    failure: str | None = None
    result: T | None = None
    try:
        result = write()
    except Exception as err:
        found = write_failure(err, path, partial)
        if found is None:
            raise
        failure = f"cannot save checkpoint {path} ({found.cause})\n{found.fix}"
        if before_barrier():  # the write itself failed: its file is half-written
            from composer.utils import dist

            Path(partial).unlink(missing_ok=True)
            dist.barrier()  # the barrier the other ranks wait at inside Composer's save_checkpoint
    agreed = agree(failure)
    if agreed is not None:
        raise CheckpointNotSaved(*agreed.split("\n", 1))
    return result  # type: ignore[return-value]
