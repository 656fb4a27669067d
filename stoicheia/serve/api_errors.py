"""The API's refusals in one line: a malformed request (:func:`validation_line`), a JSON body
that gives a key twice (:func:`duplicate_key`, checked by :class:`JsonRoute` before the
framework reads the body), and the restorer's messages, worded for the command line, with its
options named as the request's fields (:func:`api_wording`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

#: what a ``POST /restore`` body looks like, for the errors of a body that is not one
_JSON_HINT = 'send a JSON object such as {"text": "καὶ [...] τοῦ"}, content-type: application/json'


def validation_line(err: RequestValidationError) -> str:
    """A malformed request as one line: the first problem, its field and what is expected (a
    body that is not JSON, not a JSON object, or empty, said as such: FastAPI's own words for
    them, "0: JSON decode error", name neither the body nor the fix)."""
    first = err.errors()[0] if err.errors() else {}
    loc = tuple(first.get("loc", ()))
    kind = first.get("type")
    if kind == "json_invalid" and loc[:1] == ("body",):
        why = (first.get("ctx") or {}).get("error") or "JSON decode error"
        at = f" at character {loc[1]}" if len(loc) > 1 and isinstance(loc[1], int) else ""
        return f"the request body is not JSON: {why}{at}; {_JSON_HINT}"
    if loc == ("body",) and kind in ("model_attributes_type", "dict_type"):
        got = first.get("input")
        if isinstance(got, (bytes, str)) and _json_object(got):
            # the body is right, its content-type is not (FastAPI reads such a body as text)
            return (
                "the request body is a JSON object sent as text, not as JSON; send it with the "
                "header content-type: application/json"
            )
        shown = "text" if isinstance(got, (bytes, str)) else type(got).__name__
        return f"the request body is not a JSON object (it is {shown}); {_JSON_HINT}"
    if loc == ("body",) and kind == "missing":
        return f"the request body is empty; {_JSON_HINT}"
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
    msg = first.get("msg", "invalid request")
    extra = f" ({len(err.errors()) - 1} more problems)" if len(err.errors()) > 1 else ""
    return f"{where}: {msg}{extra}; see /openapi.json for the fields of this request"


def _json_object(body: bytes | str) -> bool:
    """Whether ``body`` parses as a JSON object."""
    try:
        return isinstance(json.loads(body), dict)
    except ValueError:
        return False


#: the options of ``stoicheia restore`` that the API takes as request fields, as a request
#: spells them (the restorer's messages name the command line's)
API_FIELDS = {
    "--respace": '"respace": true',
    "--accents": '"accents": true',
    "--repredict-supplements": '"supplements": "repredict"',
    "--unknown-width": '"unknown_width"',
    "--about-margin": '"about_margin"',
    "--top-k": '"top_k"',
}
_VALUE = re.compile(r'("unknown_width"|"about_margin"|"top_k") (\d)')
_FLAG = re.compile(r"(?:use |give )?(" + "|".join(map(re.escape, API_FIELDS)) + r")(?![\w-])")


def api_wording(message: str) -> str:
    """``message`` (a :class:`~stoicheia.inference.restore.RestoreError`'s line, worded for
    the command line) with each command-line option the API has as a field named as that
    field: ``use --respace`` becomes ``send "respace": true``, ``give --unknown-width 94`` becomes
    ``send "unknown_width": 94``. Options the API does not take (``--window``) are left."""

    def field(m: re.Match[str]) -> str:
        return ("send " if m.group(0) != m.group(1) else "") + API_FIELDS[m.group(1)]

    # a value after the field's name: "unknown_width": 94
    return _VALUE.sub(r"\1: \2", _FLAG.sub(field, message))


class _Twice(ValueError):
    """A key given twice in one JSON object (its name in ``args[0]``)."""


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _Twice(key)
        seen[key] = value
    return seen


def duplicate_key(body: bytes) -> str | None:
    """The first key that a JSON object of ``body`` gives twice (``{"top_k": 1, "top_k": 5}``:
    ``"top_k"``; nested objects too), else ``None``; also ``None`` for a body that is not JSON
    (the framework says that one). JSON allows repeated keys and Python's parser keeps the last
    one silently: a request that sets a field twice is ambiguous, so the API refuses it."""
    try:
        json.loads(body, object_pairs_hook=_no_repeats)
    except _Twice as twice:
        return str(twice.args[0])
    except (ValueError, UnicodeDecodeError):
        return None
    return None


class JsonRoute(APIRoute):
    """FastAPI's route, refusing a JSON body that gives a key twice with 422 and one line
    (:func:`duplicate_key`) before the framework reads it into the request model (which would
    keep the last value)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def checked(request: Request) -> Response:
            # FastAPI reads a body without a content-type as JSON too
            mime = request.headers.get("content-type", "").split(";")[0].strip()
            if request.method == "POST" and (not mime or mime.endswith("json")):
                twice = duplicate_key(await request.body())  # kept: the framework reads it again
                if twice is not None:
                    return JSONResponse(
                        {
                            "error": f"the request body gives {json.dumps(twice)} twice (JSON "
                            "would keep only the last): send each field once"
                        },
                        status_code=422,
                    )
            return await handler(request)

        return checked
