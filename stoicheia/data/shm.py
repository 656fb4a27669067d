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

Two jobs starting at the same moment on one node race for streaming's prefix: every rank
scans ``/dev/shm`` for the first free prefix on its own, then the node's first rank creates
``NNNNNN_locals``. A rank of the other job that scans in between picks the same prefix (its
leader then fails with ``FileExistsError``) or a different one from its own leader (streaming's
"Internal error: shared memory registered does not match"), and the multi-rank job dies.
:func:`retry_prefix_race` closes the window without changing streaming: the node's first rank
of a job takes a node-wide lock (:func:`prefix_lock`, ``flock`` on a file in the temporary
folder streaming uses for its own file locks), every rank of the job waits until it holds it,
the dataset is built, and the lock is released once the job's segments exist. Another job's
ranks scan only after that, so they see the prefix taken. The cleaner takes the same lock, so
it never removes a segment created but not yet mapped.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

_SEGMENT = re.compile(r"^\d{6}_")
#: The node-wide lock file (in the folder of streaming's own ``NNNNNN_*_filelock`` files).
LOCK_NAME = "stoicheia_streaming_prefix.lock"


def _lock_path() -> Path:
    return Path(tempfile.gettempdir()) / LOCK_NAME


def _open_lock() -> int:
    path = _lock_path()
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)  # flock needs no write access
    with contextlib.suppress(OSError):
        os.fchmod(fd, 0o666)  # other users' jobs on the node take it too (fails if not ours: fine)
    return fd


@contextlib.contextmanager
def prefix_lock() -> Iterator[None]:
    """Hold the node-wide lock around streaming's shared-memory prefix (blocking ``flock``;
    released when the block ends or the process dies). Without ``fcntl`` (Windows): no lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    fd = _open_lock()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _try_lock() -> int | None:
    """The lock's file descriptor if it was free (now held), else ``None`` (non-blocking)."""
    import fcntl

    fd = _open_lock()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except BlockingIOError:
        os.close(fd)
        return None


def _release(fd: int | None) -> None:
    if fd is None:
        return
    import fcntl

    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


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


def clean_stale_streaming_shm(
    shm_dir: Path = Path("/dev/shm"), proc: Path = Path("/proc")
) -> list[str]:
    """Unlink streaming segments in ``shm_dir`` that no live process maps; return their names.

    Does nothing (returns ``[]``) where ``/proc`` is missing (e.g. macOS): then nothing is
    known to be stale. Segments of other users are never removed (not ours to unlink).
    """
    if not shm_dir.is_dir():
        return []
    # Under the prefix lock: a segment another job has just created but not yet mapped is
    # mapped by nobody for a moment; it must not be taken for a stale one.
    with prefix_lock():
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
        log.info(
            "[data] removed %d stale streaming shared-memory segments left by killed runs",
            len(removed),
        )
    return removed


def _job_holds_lock(multi: bool, leader: bool) -> int | None:
    """Take the prefix lock for the whole job: the first rank of each node tries it without
    waiting, and the ranks agree (all-gather) whether every node's first rank got it; if not,
    those that got it let go and all try again after a short random pause. (Waiting in a
    blocking lock could deadlock two multi-node jobs that each hold one node's lock.)
    Returns the held lock's descriptor on the ranks that hold one, else ``None``."""
    import torch.distributed as tdist

    delay = 0.02
    while True:
        fd = _try_lock() if leader else None
        ok = fd is not None or not leader
        if multi:
            votes: list[bool | None] = [None] * tdist.get_world_size()
            tdist.all_gather_object(votes, ok)
            ok = all(votes)
        if ok:
            return fd
        _release(fd)
        time.sleep(delay + random.random() * delay)
        delay = min(delay * 2, 1.0)


def retry_prefix_race(make: Callable[[], T], attempts: int = 5) -> T:
    """``make()`` (which builds a ``StreamingDataset``; every rank of the job calls this
    together, as streaming's constructor requires) while the job holds the node-wide prefix
    lock (module docstring), so that a job starting at the same moment on the node cannot take
    the same shared-memory prefix or make this job's ranks disagree on theirs.

    A ``FileExistsError`` on a streaming segment that still happens (a process outside this
    project building a dataset meanwhile) is retried in a single process; with several ranks
    it is raised as is (the ranks pass barriers inside streaming, so one cannot retry alone).
    """
    import torch.distributed as tdist

    multi = tdist.is_available() and tdist.is_initialized() and tdist.get_world_size() > 1
    leader = int(os.environ.get("LOCAL_RANK", "0")) == 0
    for k in range(attempts):
        fd = _job_holds_lock(multi, leader) if os.name == "posix" else None
        try:
            return make()
        except FileExistsError as err:
            name = os.path.basename(str(err.filename or ""))
            if k == attempts - 1 or multi or not _SEGMENT.match(name):
                raise
            log.warning(
                "[data] streaming shared-memory prefix %s was taken by another process meanwhile; "
                "trying the next one",
                name,
            )
        finally:
            _release(fd)
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
