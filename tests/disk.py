"""A real small file system for the full-disk tests: a tmpfs mounted for one test (as root).

``small_disk(size)`` mounts a tmpfs of ``size`` on a fresh folder and unmounts it afterwards;
where mounting is not permitted (not root, no CAP_SYS_ADMIN) the test is skipped with the
reason. ``fill(folder)`` writes one file until the file system is full and returns it (remove
it to free the space again)."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_disk(base: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted on a new folder under ``base``; unmounted at the end."""
    mnt = Path(base) / f"disk-{uuid.uuid4().hex[:8]}"
    mnt.mkdir(parents=True)
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        mnt.rmdir()
        pytest.skip(
            f"cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): {proc.stderr.strip()}; "
            "the full-disk tests need a real small file system"
        )
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        with contextlib.suppress(OSError):
            mnt.rmdir()


def fill(folder: Path, leave: int = 0) -> Path:
    """Write ``folder/.filler`` until the file system is full (less ``leave`` bytes); returns it."""
    path = Path(folder) / ".filler"
    st = os.statvfs(folder)
    want = max(0, st.f_bavail * st.f_frsize - leave)
    with open(path, "wb") as fh:
        try:
            while want > 0:
                n = min(want, 1 << 16)
                fh.write(b"\0" * n)
                want -= n
            fh.flush()
        except OSError as err:
            assert err.errno == errno.ENOSPC, err
    return path


def leftovers(folder: Path) -> list[str]:
    """Half-written files under ``folder``: ``.partial`` names, ``*.partial`` folders."""
    return sorted(
        str(p.relative_to(folder))
        for p in Path(folder).rglob("*")
        if ".partial" in p.name and p.name != ".filler"
    )
