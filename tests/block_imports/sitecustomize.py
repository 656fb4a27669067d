"""A machine without some packages, on this one: put this folder first on ``PYTHONPATH`` and
every Python process started with that environment (children, DataLoader workers, the
launcher's trainers) refuses some imports with ``ModuleNotFoundError``.

* ``STOICHEIA_BLOCK_IMPORTS=composer,streaming,omegaconf``: these top-level packages.
* ``STOICHEIA_ONLY_DISTS=FILE``: every top-level package installed by a distribution not named
  in FILE (one distribution name a line, ``#`` comments), e.g. the package list of the GPU
  machine plus the wheels docs/cluster.md says to carry. The standard library, stoicheia and
  modules no distribution installed (the checkout's own folders) stay importable; so do
  packages installed into a folder named in ``STOICHEIA_ALLOW_FROM`` (``os.pathsep``-separated;
  e.g. the ``--target`` folder the carried wheels were installed into).
"""

from __future__ import annotations

import os
import re
import sys
from importlib.machinery import PathFinder


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class _Refuse:
    """Stands in for :class:`importlib.machinery.PathFinder` on ``sys.meta_path`` and finds
    nothing for refused top-level names, as if they were not installed: ``import`` raises
    ``ModuleNotFoundError`` and ``importlib.util.find_spec`` returns ``None`` (libraries probe
    optional packages so)."""

    def __init__(self, blocked: set[str], only: set[str] | None, allow_from: list[str]) -> None:
        self.blocked = blocked
        self.only = only
        self.allow_from = allow_from
        self._dists: dict[str, list[str]] | None = None
        self._seen: dict[str, bool] = {}

    def _refused(self, top: str) -> bool:
        if top in self._seen:
            return self._seen[top]
        if self._dists == {}:  # the package map is being made: what it imports is allowed
            return False
        refused = top in self.blocked
        if not refused and self.only is not None and top not in sys.stdlib_module_names:
            if self._dists is None:
                import importlib.metadata

                self._dists = {}  # (marks the map as being made)
                self._dists = importlib.metadata.packages_distributions()
            dists = self._dists.get(top, [])
            allowed = not dists or top == "stoicheia" or any(_norm(d) in self.only for d in dists)
            if not allowed and self.allow_from:
                allowed = any(
                    os.path.exists(os.path.join(folder, top))
                    or any(f.startswith(top + ".") for f in os.listdir(folder))  # .py, .so
                    for folder in self.allow_from
                    if os.path.isdir(folder)
                )
            refused = not allowed
        self._seen[top] = refused
        return refused

    def find_spec(self, name, path=None, target=None):
        if self._refused(name.split(".")[0]):
            return None
        return PathFinder.find_spec(name, path, target)

    def invalidate_caches(self) -> None:
        PathFinder.invalidate_caches()

    def find_distributions(self, *args, **kwargs):
        """The installed distributions (``importlib.metadata``); with ``STOICHEIA_ONLY_DISTS``,
        only those named there or installed in a ``STOICHEIA_ALLOW_FROM`` folder (once the
        package map is made)."""
        for dist in PathFinder.find_distributions(*args, **kwargs):
            name = _norm(dist.metadata["Name"] or "")
            where = os.path.abspath(str(dist.locate_file("")))
            if (
                self.only is None
                or not self._dists
                or name in self.only
                or name == "stoicheia"
                or any(where.startswith(os.path.abspath(f)) for f in self.allow_from)
            ):
                yield dist


def _install() -> None:
    blocked = {n.strip() for n in os.environ.get("STOICHEIA_BLOCK_IMPORTS", "").split(",")}
    blocked.discard("")
    only = None
    if os.environ.get("STOICHEIA_ONLY_DISTS"):
        with open(os.environ["STOICHEIA_ONLY_DISTS"], encoding="utf-8") as f:
            only = {_norm(line.split("#")[0].strip()) for line in f} - {""}
    allow_from = [p for p in os.environ.get("STOICHEIA_ALLOW_FROM", "").split(os.pathsep) if p]
    if blocked or only is not None:
        finder = _Refuse(blocked, only, allow_from)
        sys.meta_path[:] = [finder if f is PathFinder else f for f in sys.meta_path]


_install()
