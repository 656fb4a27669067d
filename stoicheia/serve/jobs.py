"""The server's decoding jobs: run one at a time in the thread pool (holding the model's lock),
and stopped when the client of the request goes away (the page's Cancel, a closed tab, a
client's time-out): see :func:`run_cancellable`.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from fastapi import Request
from starlette.concurrency import run_in_threadpool

#: seconds between two checks that the client of a running request is still there
DISCONNECT_POLL_S = 0.1


class Cancelled(Exception):
    """Raised inside a decoding (by its progress callback) whose client went away."""


async def run_cancellable(request: Request, lock: threading.Lock, work: Any) -> Any:
    """Run ``work(check)`` in the thread pool holding ``lock``, and stop it when the client of
    ``request`` disconnects (:mod:`stoicheia.serve.app`, Cancelling). ``check(*_)`` raises
    :class:`Cancelled` once the client has gone: ``work`` passes it as the decoder's progress
    callback. Returns what ``work`` returns; raises :class:`Cancelled` for a request whose
    client went away (after the work has stopped and the lock is free), and what ``work``
    raises."""
    gone = threading.Event()

    def check(*_: Any) -> None:
        if gone.is_set():
            raise Cancelled("the client went away")

    def job() -> Any:
        from stoicheia.inference.restore.cancel import cancel_check

        while not lock.acquire(timeout=DISCONNECT_POLL_S):  # waiting for another tab's decoding
            check()
        try:
            check()
            with cancel_check(check):  # every forward pass and beam step checks (restore.cancel)
                return work(check)
        finally:
            lock.release()

    task = asyncio.ensure_future(run_in_threadpool(job))
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=DISCONNECT_POLL_S)
            if done:
                return task.result()
            if await request.is_disconnected():
                gone.set()
                await asyncio.wait({task})  # the decoding stops at its next forward pass
                if task.exception() is None:
                    return task.result()  # it had just finished
                raise task.exception()
    except asyncio.CancelledError:  # the server is shutting down: stop the decoding too
        gone.set()
        raise
