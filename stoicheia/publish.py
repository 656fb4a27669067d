"""Publishing an output folder whole: written as ``OUT.partial``, then renamed to ``OUT``.

``convert`` (shards) and ``export`` (a model folder) both write this way, so a Ctrl-C, a kill
or a full disk leaves the old ``OUT`` (or none), never a mixture of two outputs.
"""

from __future__ import annotations

import shutil
from pathlib import Path


def partial_folder(out: Path) -> Path:
    """A fresh, empty ``OUT.partial`` beside ``out`` (an old one, left by a killed run, is removed)."""
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def publish_folder(tmp: Path, out: Path) -> None:
    """Replace ``out`` by the complete folder ``tmp``: the old ``out`` is moved aside to
    ``OUT.old`` only now, after the new one is whole, and removed after the rename."""
    old = out.with_name(out.name + ".old")
    if out.exists():
        shutil.rmtree(old, ignore_errors=True)
        out.rename(old)
    tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)
