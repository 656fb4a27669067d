"""The request body limits of the server (:data:`MAX_JSON_BYTES` for ``POST /restore``,
:data:`MAX_UPLOAD_BYTES` for an EpiDoc upload), enforced by an ASGI middleware before the
framework reads the body: over the limit, 413 with a one-line JSON error.
"""

from __future__ import annotations

import json
from typing import Any

#: default body limits in bytes: a JSON restore request, and an uploaded EpiDoc file
MAX_JSON_BYTES = 256 * 1024
MAX_UPLOAD_BYTES = 8 * 1024 * 1024


class BodyLimit:
    """ASGI middleware: refuse a request body over ``limit(path)`` bytes with 413 and a one-line
    JSON error, from its ``Content-Length`` before reading; a body without one (chunked) is
    read here up to the limit first, then handed on (the framework would turn an error raised
    while it reads the body into a 400)."""

    def __init__(self, app: Any, limit: Any) -> None:
        self.app = app
        self.limit = limit

    async def _refuse(self, send: Any, limit: int) -> None:
        body = json.dumps(
            {"error": f"request body over {limit:,} bytes; send a shorter text or a smaller file"}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit(scope.get("path", ""))
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None:
            try:
                too_big = int(length) > limit
            except ValueError:
                too_big = False
            if too_big:
                await self._refuse(send, limit)
                return
            await self.app(scope, receive, send)  # the server holds the body to its Content-Length
            return
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client went away
            chunks.append(message.get("body", b""))
            seen += len(chunks[-1])
            if seen > limit:
                await self._refuse(send, limit)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
