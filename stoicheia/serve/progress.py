"""How far a running restoration is, for the page's progress bars: ``GET /progress/{id}``.

The page sends ``POST /restore`` or ``POST /restore-epidoc`` with a header
``X-Stoicheia-Progress: ID`` (a random token it makes, :data:`ID_PATTERN`) and asks
``GET /progress/ID`` every few hundred milliseconds while it waits. The answer
(:class:`ProgressInfo`) says whether the request waits for another restoration to finish
(``"waiting"``: one decoding at a time, :mod:`stoicheia.serve.app`) or is being decoded, and how
many of its forward passes are done (``done`` of ``total``: one per gap and two more, as
:func:`stoicheia.inference.restore.restore` counts them for its ``progress`` callback). An
uploaded EpiDoc file is decoded piece by piece (:mod:`stoicheia.inference.epidoc.plan`): its
answer also gives the file's gaps decided of those to fill (``gaps_done`` of ``gaps_total``) and
the piece being decoded (``piece`` of ``pieces``), ``done`` and ``total`` then counting that
piece's passes. An ID that is not (or no longer) running answers 404. The board holds only
running requests: an entry is removed when its request ends, however it ends.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

#: the header naming a request's progress entry
HEADER = "X-Stoicheia-Progress"
#: what an ID may be: 8 to 64 letters, digits, ``-`` and ``_`` (a UUID, or the page's own token)
ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{8,64}")
#: running requests followed at most (a client sending many IDs cannot grow the board past it)
MAX_ENTRIES = 1000


class ProgressInfo(BaseModel):
    """``state``: ``"waiting"`` (for another restoration to end) or ``"restoring"``; ``done``
    and ``total``: forward passes done and planned (``total`` 0 until the decoding starts; for an
    EpiDoc file, those of the piece being decoded). For an EpiDoc file only (absent for a text):
    ``gaps_done`` and ``gaps_total``, the file's gaps decided (restored, left or refused) and
    to fill (``None`` while the file is read and planned); ``piece`` and ``pieces``, the piece
    being decoded (from 1) and the pieces the file is cut into (``None`` before the first)."""

    state: str
    done: int = 0
    total: int = 0
    gaps_done: int | None = None
    gaps_total: int | None = None
    piece: int | None = None
    pieces: int | None = None


class Follower:
    """One request's entry on a :class:`ProgressBoard` (made by :meth:`ProgressBoard.follow`):
    its methods record how far the request is; each does nothing for a request that is not
    followed (no valid ID). Thread-safe (the decoding's thread writes, the event loop reads)."""

    def __init__(self, entries: dict[str, ProgressInfo], lock: threading.Lock, key: str | None):
        self._entries, self._lock, self.key = entries, lock, key

    def _set(self, **fields: Any) -> None:
        if self.key is None:
            return
        with self._lock:
            entry = self._entries.get(self.key)
            if entry is not None:
                self._entries[self.key] = entry.model_copy(update=fields)

    def start(self) -> None:
        """The decoding has the model: no longer waiting."""
        self._set(state="restoring")

    def passes(self, done: int = 0, total: int = 0, piece: int = 0, pieces: int = 0) -> None:
        """``done`` of ``total`` forward passes (of ``piece`` of ``pieces``, counted from 1,
        when an EpiDoc file is decoded piece by piece; 0: not given)."""
        fields: dict[str, Any] = {"state": "restoring", "done": int(done), "total": int(total)}
        if pieces:
            fields.update(piece=int(piece), pieces=int(pieces))
        self._set(**fields)

    def gaps(self, done: int, total: int) -> None:
        """``done`` of the ``total`` gaps of an EpiDoc file decided
        (:func:`~stoicheia.inference.epidoc.restore.restore_epidoc`'s ``progress``)."""
        self._set(state="restoring", gaps_done=int(done), gaps_total=int(total))

    def wrap(self, check: Any) -> Callable[..., None]:
        """Mark the decoding started; return the decoder's callback ``progress(done, total,
        piece=0, pieces=0)``, which records the count (:meth:`passes`) and then calls ``check``
        (the cancelling check of :func:`~stoicheia.serve.jobs.run_cancellable`)."""
        self.start()

        def progress(done: int = 0, total: int = 0, piece: int = 0, pieces: int = 0) -> None:
            self.passes(done, total, piece, pieces)
            check()

        return progress


class ProgressBoard:
    """The running requests' progress, by ID (thread-safe: the decoding's thread writes it, the
    event loop reads it)."""

    def __init__(self) -> None:
        self._entries: dict[str, ProgressInfo] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> ProgressInfo | None:
        """The entry of ``key``, or ``None`` when no such request is running."""
        with self._lock:
            entry = self._entries.get(key)
            return entry.model_copy() if entry is not None else None

    @contextmanager
    def follow(self, request: Request) -> Iterator[Follower]:
        """For the duration of ``request``: an entry under its :data:`HEADER` ID (none without a
        valid header, one already running, or with :data:`MAX_ENTRIES` already followed),
        ``"waiting"`` at first. Yields its :class:`Follower` (the request's
        :meth:`Follower.wrap` gives the decoder its progress callback)."""
        key = request.headers.get(HEADER, "")
        with self._lock:
            ok = (
                ID_PATTERN.fullmatch(key) is not None
                and key not in self._entries
                and len(self._entries) < MAX_ENTRIES
            )
            if ok:
                self._entries[key] = ProgressInfo(state="waiting")
        try:
            yield Follower(self._entries, self._lock, key if ok else None)
        finally:
            if ok:
                with self._lock:
                    self._entries.pop(key, None)


def add_progress_routes(app: FastAPI, board: ProgressBoard) -> None:
    """Register ``GET /progress/{id}`` on ``app``, answered from ``board``."""

    @app.get(
        "/progress/{key}",
        response_model=ProgressInfo,
        response_model_exclude_none=True,  # the EpiDoc file's counts only for an EpiDoc file
        responses={404: {"description": "no running request has this ID"}},
    )
    def progress(key: str) -> Any:
        """How far the running ``POST /restore`` or ``POST /restore-epidoc`` sent with
        ``X-Stoicheia-Progress: key`` is."""
        entry = board.get(key)
        if entry is None:
            return JSONResponse(
                {"error": f"no running restoration has the progress ID {key[:64]!r}"},
                status_code=404,
            )
        return entry


__all__ = ["HEADER", "ID_PATTERN", "MAX_ENTRIES", "Follower", "ProgressBoard", "ProgressInfo"]
