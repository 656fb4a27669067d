"""How far a running restoration is, for the page's progress bar: ``GET /progress/{id}``.

The page sends ``POST /restore`` with a header ``X-Stoicheia-Progress: ID`` (a random token it
makes, :data:`ID_PATTERN`) and asks ``GET /progress/ID`` every few hundred milliseconds while
it waits. The answer (:class:`ProgressInfo`) says whether the request waits for another
restoration to finish (``"waiting"``: one decoding at a time, :mod:`stoicheia.serve.app`) or is
being decoded, and how many of its forward passes are done (``done`` of ``total``: one per gap
and two more, as :func:`stoicheia.inference.restore.restore` counts them for its ``progress``
callback). An ID that is not (or no longer) running answers 404. The board holds only running
requests: an entry is removed when its request ends, however it ends.
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
    and ``total``: forward passes done and planned (``total`` 0 until the decoding starts)."""

    state: str
    done: int = 0
    total: int = 0


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
    def follow(self, request: Request) -> Iterator[Callable[[Any], Callable[..., None]]]:
        """For the duration of ``request``: an entry under its :data:`HEADER` ID (none without a
        valid header, or with :data:`MAX_ENTRIES` already followed), ``"waiting"`` at first.
        Yields ``wrap(check)``: the progress callback ``progress(done, total)`` for the decoder,
        which records the count and then calls ``check`` (the cancelling check of
        :func:`~stoicheia.serve.jobs.run_cancellable`)."""
        key = request.headers.get(HEADER, "")
        with self._lock:
            ok = (
                ID_PATTERN.fullmatch(key) is not None
                and key not in self._entries
                and len(self._entries) < MAX_ENTRIES
            )
            if ok:
                self._entries[key] = ProgressInfo(state="waiting")

        def wrap(check: Any) -> Callable[..., None]:
            def progress(done: int = 0, total: int = 0, *_: Any) -> None:
                if ok:
                    with self._lock:
                        self._entries[key] = ProgressInfo(
                            state="restoring", done=int(done), total=int(total)
                        )
                check()

            if ok:  # the decoding has the model: no longer waiting
                with self._lock:
                    self._entries[key] = ProgressInfo(state="restoring")
            return progress

        try:
            yield wrap
        finally:
            if ok:
                with self._lock:
                    self._entries.pop(key, None)


def add_progress_routes(app: FastAPI, board: ProgressBoard) -> None:
    """Register ``GET /progress/{id}`` on ``app``, answered from ``board``."""

    @app.get(
        "/progress/{key}",
        response_model=ProgressInfo,
        responses={404: {"description": "no running request has this ID"}},
    )
    def progress(key: str) -> Any:
        """How far the running ``POST /restore`` sent with ``X-Stoicheia-Progress: key`` is."""
        entry = board.get(key)
        if entry is None:
            return JSONResponse(
                {"error": f"no running restoration has the progress ID {key[:64]!r}"},
                status_code=404,
            )
        return entry


__all__ = ["HEADER", "ID_PATTERN", "MAX_ENTRIES", "ProgressBoard", "ProgressInfo"]
