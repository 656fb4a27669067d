"""Remove streaming's shared memory left behind by killed runs, and only that.

``StreamingDataset`` keeps its coordination state in POSIX shared memory
(``/dev/shm/NNNNNN_<name>``, NNNNNN a per-dataset prefix) and file locks
(``/tmp/streaming/.../NNNNNN_*``). A SIGKILLed run leaves them behind, and a later dataset
that lands on the same prefix fails or waits forever. streaming's own
``clean_stale_shared_memory()`` removes *every* such segment on the machine, including
those of other jobs still running on the same node (SLURM often packs several jobs on one
node), so it is not used here.

:func:`clean_stale_streaming_shm` removes a segment only when no live process has it
mapped: every open ``SharedMemory`` is an ``mmap`` of its ``/dev/shm`` file, so a segment
that no ``/proc/PID/maps`` names belongs to no running dataset.
"""

from __future__ import annotations

import logging
import os
import random
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

_SEGMENT = re.compile(r"^\d{6}_")
T = TypeVar("T")


def _mapped_shm_files(proc: Path) -> set[str] | None:
    """Names of ``/dev/shm`` files mapped by any process whose maps we can read, or None
    without a ``/proc``."""
    if not proc.is_dir():
        return None
    mapped: set[str] = set()
    for pid_dir in proc.iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            with open(pid_dir / "maps", encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    i = line.find("/dev/shm/")
                    if i >= 0:
                        mapped.add(line[i + len("/dev/shm/") :].strip().removesuffix(" (deleted)"))
        except (FileNotFoundError, ProcessLookupError):
            continue  # the process ended while we looked
        except PermissionError:
            # Another user's process (or a protected init): its segments are another user's
            # files in /dev/shm, which the sticky bit stops us from unlinking anyway.
            continue
    return mapped


def clean_stale_streaming_shm(shm_dir: Path = Path("/dev/shm"), proc: Path = Path("/proc")) -> list[str]:
    """Unlink streaming segments in ``shm_dir`` that no live process maps; return their names.

    Does nothing (returns ``[]``) where ``/proc`` is missing (e.g. macOS): then nothing is
    known to be stale. Segments of other users are never removed (not ours to unlink).
    """
    if not shm_dir.is_dir():
        return []
    candidates = [p for p in shm_dir.iterdir() if _SEGMENT.match(p.name)]
    if not candidates:
        return []
    mapped = _mapped_shm_files(proc)
    if mapped is None:
        return []
    removed = []
    for path in candidates:
        if path.name not in mapped:
            try:
                os.unlink(path)
                removed.append(path.name)
            except (FileNotFoundError, PermissionError):
                continue
    if removed:
        log.info("[data] removed %d stale streaming shared-memory segments left by killed runs", len(removed))
    return removed


def retry_prefix_race(make: Callable[[], T], attempts: int = 5) -> T:
    """``make()`` (which builds a ``StreamingDataset``), retried when it loses streaming's
    shared-memory prefix race.

    streaming picks the first free prefix ``NNNNNN`` and then creates ``/dev/shm/NNNNNN_locals``;
    a run starting on the same machine at the same moment (another job on the node) can take
    that prefix in between, and the create fails with ``FileExistsError``. Another try picks
    the next free prefix. Only in a single process: with several ranks the ranks pass
    barriers inside streaming, so one rank cannot retry alone (the error is raised as is).
    """
    import torch.distributed as tdist

    for k in range(attempts):
        try:
            return make()
        except FileExistsError as err:
            name = os.path.basename(str(err.filename or ""))
            alone = not (tdist.is_available() and tdist.is_initialized()) or tdist.get_world_size() == 1
            if k == attempts - 1 or not alone or not _SEGMENT.match(name):
                raise
            log.warning("[data] streaming shared-memory prefix %s was taken by another process meanwhile; trying the next one", name)
            time.sleep(0.05 * (k + 1) + random.random() * 0.1)
    raise AssertionError("unreachable")


def stop_prefix_probe_leak() -> None:
    """Make streaming's shared-memory prefix search release what it opens.

    To find a free prefix, streaming 0.13 attaches the ``/dev/shm`` segments of every
    existing prefix (``streaming.base.shared.prefix._check_and_find``) with ``atexit``
    clean-up registered, so each probe stays open (a file descriptor and a mapping) until the
    process exits: a process that builds datasets again and again (tests, notebooks, one
    trainer after another) ran out of file descriptors (``Errno 24`` after ~20,000). Segments
    that module only *attaches* (``create=False``) are now opened without the ``atexit`` hook
    and closed when dropped; the segments it creates keep theirs. Idempotent.
    """
    from streaming.base.shared import prefix
    from streaming.base.shared.memory import SharedMemory

    if getattr(prefix.SharedMemory, "_stoicheia", False):
        return

    def shared_memory(name=None, create=None, size=0, auto_cleanup=True):
        return SharedMemory(name, create, size, auto_cleanup=auto_cleanup and create is not False)

    shared_memory._stoicheia = True  # type: ignore[attr-defined]
    prefix.SharedMemory = shared_memory
