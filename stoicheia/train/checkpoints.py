"""Make a local checkpoint folder safe to autoresume from after a kill.

Composer 0.32.1 writes a checkpoint file in place and then removes and re-creates the
``latest-rank{R}.pt`` symlink. A job killed in between leaves a truncated newest file, or no
symlink (autoresume then silently starts from scratch), or a symlink to a half-written file
(every later autoresume crashes). :func:`repair_checkpoint_folder` runs once before the
trainer is built: it moves corrupt checkpoint files aside into ``corrupt/`` (nothing is
deleted) and points ``latest-rank{R}.pt`` at the newest complete checkpoint.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import zipfile
from pathlib import Path

log = logging.getLogger(__name__)

_NAME = re.compile(r"^ep(?P<epoch>\d+)-ba(?P<batch>\d+)-rank(?P<rank>\d+)\.pt$")


def checkpoint_is_complete(path: Path) -> bool:
    """True if ``path`` is a readable torch zip checkpoint whose every member passes its CRC.

    Reads the whole file once (no unpickling). A truncated or half-written file fails.
    """
    try:
        with zipfile.ZipFile(path) as zf:
            return zf.testzip() is None and any(n.endswith("data.pkl") for n in zf.namelist())
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return False


def repair_checkpoint_folder(folder: Path) -> list[str]:
    """Quarantine corrupt checkpoints in ``folder`` and fix the ``latest-rank{R}.pt`` links.

    Returns one message per action taken (also printed). Does nothing if the folder does not
    exist. Checkpoints are the files named ``ep{epoch}-ba{batch}-rank{rank}.pt``.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    actions: list[str] = []
    by_rank: dict[int, list[tuple[int, Path]]] = {}
    for f in folder.iterdir():
        m = _NAME.match(f.name)
        if m and f.is_file() and not f.is_symlink():
            by_rank.setdefault(int(m["rank"]), []).append((int(m["batch"]), f))
    for rank, files in sorted(by_rank.items()):
        files.sort()
        newest_ok: Path | None = None
        for _batch, f in reversed(files):
            if checkpoint_is_complete(f):
                newest_ok = f
                break
            quarantine = folder / "corrupt"
            quarantine.mkdir(exist_ok=True)
            target = quarantine / f.name
            k = 1
            while target.exists():  # an earlier kill left one of the same name: keep both
                target = quarantine / f"{f.name}.{k}"
                k += 1
            shutil.move(str(f), target)
            actions.append(f"moved incomplete checkpoint {f} to {quarantine}/ (it cannot be loaded)")
        link = folder / f"latest-rank{rank}.pt"
        if newest_ok is None:
            if link.is_symlink() or link.exists():
                link.unlink()
                actions.append(f"removed {link}: no complete checkpoint left for rank {rank}")
            continue
        if not link.is_symlink() or os.readlink(link) != newest_ok.name:
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(newest_ok.name)
            actions.append(f"pointed {link.name} at {newest_ok.name}")
    for a in actions:
        log.warning("[checkpoint] repair: %s", a)
    return actions
