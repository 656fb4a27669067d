"""Where the files beside a checkpoint are, wherever its run folder lies and wherever a command
is run from.

A run names its shards by the path it was trained with (``data.shard_root``, usually relative
to the folder training ran in: ``data/shards``), and ``fusion.json`` names the parallels index
(relative to its own folder since this version; older files hold an absolute path). Nothing is
looked up relative to the current folder: the same command gives the same restoration from any
folder. A path is looked for under these *anchors*, nearest first (:func:`anchors`):

1. the checkpoint's folder (the run folder, or an export folder) and each folder above it
   (``checkpoints/stoicheia-demo/best.pt`` -> ``checkpoints/stoicheia-demo``,
   ``checkpoints``, the checkout, ...);
2. the checkout the ``stoicheia`` package is imported from (the folder holding its
   ``pyproject.toml``), where ``stoicheia convert``, ``scripts/demo.sh`` and ``stoicheia
   parallels --build`` put ``data/shards``; for an installed package without a checkout, the
   user cache where ``stoicheia parallels --build`` puts it
   (:func:`stoicheia.inference.shipped.cache_root`).

An absolute path is used where it exists, unless the same tail (``data/shards/parallels``)
lies under an anchor: a run folder copied or moved with its checkout finds its own index, not
the old folder's (:func:`find_under_anchors`).

Paths shown in notes (:func:`shown`) are never absolute: they are relative to the folder that
holds both the checkpoint's folder and the path (``data/shards/parallels`` for the demo run),
so that the server's notes do not tell its folders and the notes do not change with the
current folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

#: tails of an absolute path tried under the anchors (``data/shards/parallels``: 3)
MAX_TAIL = 4


def checkout_root() -> Path | None:
    """The checkout the ``stoicheia`` package is imported from (the folder above the package
    holding ``pyproject.toml``), or ``None`` for an installed package."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() else None


def checkpoint_folder(source: str) -> Path | None:
    """The folder of a local checkpoint, run folder or export folder ``source`` (absolute), or
    ``None`` for an object-store URI."""
    if "://" in source:
        return None
    p = _absolute(source)
    return p if p.is_dir() else p.parent


def _absolute(path: str | Path) -> Path:
    """``path`` made absolute and lexically normal (``a/../b`` -> ``b``; links not followed)."""
    return Path(os.path.normpath(Path(path).absolute()))


def anchors(source: str | None) -> list[Path]:
    """The folders a relative path of the run is looked for under, nearest first (module
    docstring): the checkpoint's folder and every folder above it but the file system's root,
    then the checkout of the package, then the folder ``stoicheia parallels --build`` builds
    under (:func:`~stoicheia.inference.shipped.cache_root`: ``$STOICHEIA_HOME``, the checkout,
    or for an installed package the user cache). For the shipped model that last folder comes
    first."""
    from stoicheia.inference.shipped import cache_root, is_shipped

    out: list[Path] = []
    here = checkpoint_folder(source) if source else None
    if here is not None:
        out += [here, *(p for p in here.parents if p.parent != p)]
    for root in (checkout_root(), cache_root()):
        if root is not None and root not in out:
            out.append(root)
    if source and is_shipped(source):  # the shipped model: where `parallels --build` builds
        built = cache_root()
        return [built, *(a for a in out if a != built)]
    return out


def find_under_anchors(
    path: str | Path, source: str | None, is_it: Callable[[Path], bool]
) -> Path | None:
    """The folder ``path`` names for the checkpoint ``source``: for a relative path the first
    ``ANCHOR/path`` that ``is_it``; for an absolute one the nearest anchor holding one of its
    tails (longest first, at most :data:`MAX_TAIL` parts) that ``is_it``, else the path itself
    when ``is_it``. ``None`` when nothing is found."""
    p = Path(path)
    if not p.is_absolute():
        p = Path(os.path.normpath(p))
        for a in anchors(source):
            if is_it(a / p):
                return a / p
        return None
    p = _absolute(p)
    parts = p.parts[1:]
    for a in anchors(source):
        for n in range(min(MAX_TAIL, len(parts) - 1), 0, -1):
            candidate = a.joinpath(*parts[-n:])
            if is_it(candidate):
                return candidate
    return p if is_it(p) else None


def shown(path: str | Path, source: str | None) -> str:
    """``path`` as a note shows it: relative to the deepest folder holding both it and the
    checkpoint's folder (``data/shards/parallels``), never absolute (module docstring)."""
    target = _absolute(path)
    here = checkpoint_folder(source) if source else None
    base = None
    if here is not None:
        try:
            common = Path(os.path.commonpath([str(here), str(target)]))
            base = common if common.parent != common else here
        except ValueError:  # another drive
            base = None
    if base is None:
        return target.name
    rel = os.path.relpath(target, base)
    return target.name if rel == "." else rel


def stored(path: str | Path, folder: str | Path) -> str:
    """``path`` as ``fusion.json`` in ``folder`` stores it: relative to ``folder``
    (``../../data/shards/parallels``), so that the run folder can move with what it names;
    absolute only where no relative path exists (another drive)."""
    try:
        return os.path.relpath(_absolute(path), _absolute(folder))
    except ValueError:
        return str(_absolute(path))


def run_shards(config: dict | None, source: str | None) -> tuple[str | None, Path | None]:
    """The run's ``data.shard_root`` as recorded in ``config`` and where it is found for the
    checkpoint ``source`` (a folder holding ``stats.json``), or ``(None, None)`` / ``(root,
    None)`` when the run names none / it is not found."""
    root = ((config or {}).get("data") or {}).get("shard_root")
    if not root or "://" in str(root):
        return None, None
    return str(root), find_under_anchors(root, source, lambda p: (p / "stats.json").is_file())


def run_index(path: str | Path) -> Path | None:
    """The parallels index of the checkpoint or run folder ``path`` (a ``.pt`` file, or a folder
    holding ``fusion.json`` or the run's ``config.json``), read without loading the model:
    ``fusion.json``'s ``parallels_index`` (relative to its folder), else the run's
    ``data.shard_root``/parallels, each found as :func:`find_under_anchors` finds it; ``None``
    when ``path`` is no checkpoint or run folder or its index is not found."""
    here = checkpoint_folder(str(path))
    if here is None:
        return None

    def is_index(p: Path) -> bool:
        return (p / "manifest.json").is_file()

    def read(name: str) -> dict:
        try:
            data = json.loads((here / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    named = read("fusion.json").get("parallels_index")
    if isinstance(named, str) and named:
        where = Path(named) if Path(named).is_absolute() else _absolute(here / named)
        found = find_under_anchors(where, str(path), is_index)
        if found is not None:
            return found
    _, shards = run_shards(read("config.json"), str(path))
    return shards / "parallels" if shards is not None and is_index(shards / "parallels") else None


__all__ = [
    "MAX_TAIL",
    "anchors",
    "checkout_root",
    "checkpoint_folder",
    "find_under_anchors",
    "run_index",
    "run_shards",
    "shown",
    "stored",
]
