"""The restoration server: a FastAPI application around one loaded model.

:func:`create_app` builds it. Routes:

* ``GET /`` the page (``static/index.html``), ``/static/...`` its script, style sheet and
  examples, ``/static/fonts/greek-serif.ttf`` and ``greek-sans.ttf`` the polytonic Greek fonts (DejaVu
  Serif and Sans, shipped in the ``matplotlib`` package the project depends on: nothing is
  fetched from the network; :func:`greek_fonts`);
* ``POST /restore`` (JSON in, JSON out: :class:`~stoicheia.serve.schemas.RestoreRequest`,
  :class:`~stoicheia.serve.schemas.RestoreResponse`), the API the page uses;
* ``POST /restore-epidoc`` an EpiDoc file in, the restored file out (when the installed
  ``stoicheia`` has ``restore_epidoc``; else 501 with a line saying so);
* ``GET /model`` what is loaded; ``/openapi.json`` the schema (FastAPI's; its ``/docs`` page is off: it loads Swagger UI from a CDN).

Concurrency. The model is loaded once, by the caller, and shared. The decoding runs in
FastAPI's thread pool and holds a lock, so requests from several tabs are answered one
decoding at a time, each with its own result (the beam search keeps all its state in local
variables; the lock keeps torch's own threads from being oversubscribed by parallel forward
passes and makes the order of floating-point work, hence the answer, the same as on the
command line).

Cancelling. A request whose client goes away (the page's Cancel button aborts its fetch; a
closed tab; a client's timeout) stops being decoded: while the decoding runs, the handler
asks the server every 0.1 s whether the client is still connected
(``Request.is_disconnected``); when it is not, it sets a flag that the decoder's progress
callback checks, and so does the decoder before every forward pass and at every beam step
(:func:`~stoicheia.inference.restore.cancel.cancel_check`: the gaps' passes, and also the
rendering of the fills and the alternatives, which used to run to the end, 20 s and more on a
long text), and the decoding ends there with :class:`Cancelled`, releasing the lock for the
next request. A request still waiting for the
lock when its client leaves never starts.

Errors. Every refusal is ``{"error": "one line"}``: a body over the limit 413 (checked
on ``Content-Length`` and while the body streams in), input the restorer refuses 422 with
:class:`~stoicheia.inference.restore.RestoreError`'s message (the line ``stoicheia restore``
prints, its command-line options named as the request's fields: :func:`api_wording`), a
malformed request 422 with the field and the fix (a body that is not JSON said so).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, File, Form, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from stoicheia.serve.fragment import epidoc_ab, in_input_style
from stoicheia.serve.schemas import (
    MAX_TOP_K,
    ErrorResponse,
    ModelInfo,
    RestoreRequest,
    RestoreResponse,
)
from stoicheia.text.leiden_segments import MAX_LACUNA_WIDTH

#: default body limits in bytes: a JSON restore request, and an uploaded EpiDoc file
MAX_JSON_BYTES = 256 * 1024
MAX_UPLOAD_BYTES = 8 * 1024 * 1024

STATIC = Path(str(resources.files("stoicheia.serve") / "static"))


#: the page's fonts, served as /static/fonts/NAME: DejaVu Serif (every precomposed polytonic
#: letter of the Greek and Greek Extended blocks) and DejaVu Sans (also the combining
#: perispomeni U+0342 and ypogegrammeni U+0345 that the serif lacks, for text typed decomposed)
FONT_FILES = {"greek-serif.ttf": "DejaVuSerif.ttf", "greek-sans.ttf": "DejaVuSans.ttf"}


def greek_fonts() -> tuple[dict[str, Path], Path | None]:
    """``({served name: font file}, licence)``: the fonts of :data:`FONT_FILES` as shipped by
    matplotlib (``mpl-data/fonts/ttf``, a dependency of the project, so nothing is fetched at
    run time) and their licence file (``None`` if missing).

    Raises ``FileNotFoundError`` if matplotlib or a font is missing."""
    import importlib.util

    spec = importlib.util.find_spec("matplotlib")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "matplotlib is not installed; it ships the page's Greek fonts (DejaVu)"
        )
    ttf = Path(list(spec.submodule_search_locations)[0]) / "mpl-data" / "fonts" / "ttf"
    fonts = {name: ttf / file for name, file in FONT_FILES.items()}
    for font in fonts.values():
        if not font.is_file():
            raise FileNotFoundError(
                f"{font} is missing; reinstall matplotlib (it ships the page's Greek fonts)"
            )
    licence = ttf / "LICENSE_DEJAVU"
    return fonts, licence if licence.is_file() else None


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


#: seconds between two checks that the client of a running request is still there
DISCONNECT_POLL_S = 0.1


class Cancelled(Exception):
    """Raised inside a decoding (by its progress callback) whose client went away."""


async def run_cancellable(request: Request, lock: threading.Lock, work: Any) -> Any:
    """Run ``work(check)`` in the thread pool holding ``lock``, and stop it when the client of
    ``request`` disconnects (module docstring, Cancelling). ``check(*_)`` raises
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


#: what a ``POST /restore`` body looks like, for the errors of a body that is not one
_JSON_HINT = 'send a JSON object such as {"text": "καὶ [...] τοῦ"}, content-type: application/json'


def _one_line(err: RequestValidationError) -> str:
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
        shown = "text" if isinstance(got, (bytes, str)) else type(got).__name__
        return f"the request body is not a JSON object (it is {shown}); {_JSON_HINT}"
    if loc == ("body",) and kind == "missing":
        return f"the request body is empty; {_JSON_HINT}"
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
    msg = first.get("msg", "invalid request")
    extra = f" ({len(err.errors()) - 1} more problems)" if len(err.errors()) > 1 else ""
    return f"{where}: {msg}{extra}; see /openapi.json for the fields of this request"


#: the options of ``stoicheia restore`` that the API takes as request fields, as a request
#: spells them (the restorer's messages name the command line's)
API_FIELDS = {
    "--respace": '"respace": true',
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


def restored_name(filename: str | None) -> str:
    """The name the restored file is downloaded as: ``NAME.restored.xml`` for an upload named
    ``NAME.xml`` (or ``NAME``), so that it does not overwrite the original beside it; the name
    as ASCII letters, digits, dots, dashes and underscores (a header is Latin-1), others ``_``;
    ``inscription.restored.xml`` without a name."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", Path(filename or "").name)
    stem = re.sub(r"\.xml$", "", name, flags=re.I).strip(".") or "inscription"
    return f"{stem}.restored.xml"


#: the outcomes of a gap that ``X-Stoicheia-Gaps`` always counts, in this order
GAP_OUTCOMES = ("restored", "left", "refused")


def gaps_header(gaps: list[Any]) -> str:
    """``X-Stoicheia-Gaps``: the file's gaps counted by outcome, every outcome of
    :data:`GAP_OUTCOMES` given, 0 included (``restored=2 left=0 refused=0``), then any other
    outcome; ``gaps``: objects with a ``status``."""
    counts = Counter(str(getattr(g, "status", "?")) for g in gaps)
    order = [*GAP_OUTCOMES, *sorted(set(counts) - set(GAP_OUTCOMES))]
    return " ".join(f"{k}={counts[k]}" for k in order)


def _restore_epidoc_function() -> Any:
    """``stoicheia.restore_epidoc`` when this installation has it, else ``None``."""
    import stoicheia

    try:
        return stoicheia.restore_epidoc
    except AttributeError:
        return None


def create_app(
    model: Any, *, max_json_bytes: int = MAX_JSON_BYTES, max_upload_bytes: int = MAX_UPLOAD_BYTES
) -> FastAPI:
    """The server's FastAPI application for ``model`` (a loaded
    :class:`~stoicheia.inference.loading.LoadedModel`: the caller loads it once; it is never
    reloaded). ``max_json_bytes``/``max_upload_bytes``: body limits of ``POST /restore`` and of
    ``POST /restore-epidoc`` (bytes; larger bodies get 413)."""
    from stoicheia.inference.restore import GapTooWideError, RestoreError, read_input, restore

    app = FastAPI(
        title="Stoicheia restoration server",
        summary="Restore the lacunae of Greek texts in Leiden notation with a Stoicheia model.",
        description="The page at / uses this API; see docs/restoration-page.md.",
        version="1",
        # FastAPI's /docs and /redoc pages load Swagger UI / ReDoc from a CDN: blank on a machine
        # without network, and the page promises no outside resource. The schema is served
        # locally at /openapi.json.
        docs_url=None,
        redoc_url=None,
    )
    app.state.model = model
    lock = threading.Lock()
    app.state.lock = lock
    fonts, font_licence = greek_fonts()
    seq_len = int((model.config.get("data") or {}).get("seq_len") or 512)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        return JSONResponse({"error": _one_line(err)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, err: StarletteHTTPException) -> JSONResponse:
        # the framework's own refusals (a body it cannot parse, an unknown path or method) in
        # the same one-line shape as ours, not its {"detail": ...}
        why = {
            400: "the request body could not be read (send UTF-8 JSON, or a multipart form for /restore-epidoc)",
            404: f"no page or API at {request.url.path}; the page is at /, the API is described at /openapi.json",
            405: f"{request.method} is not allowed on {request.url.path}; see /openapi.json",
        }
        message = why.get(err.status_code) or str(err.detail)
        return JSONResponse(
            {"error": message}, status_code=err.status_code, headers=getattr(err, "headers", None)
        )

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")

    @app.get("/static/fonts/{name}", include_in_schema=False)
    def font_file(name: str) -> Response:
        if name == "LICENSE_DEJAVU.txt":
            if font_licence is None:
                return Response(
                    "DejaVu fonts: free licence (Bitstream Vera derivative), see matplotlib's LICENSE_DEJAVU\n",
                    media_type="text/plain",
                )
            return FileResponse(font_licence, media_type="text/plain; charset=utf-8")
        if name not in fonts:
            return JSONResponse(
                {"error": f"no font {name!r}; the page's fonts are {', '.join(fonts)}"},
                status_code=404,
            )
        return FileResponse(
            fonts[name], media_type="font/ttf", headers={"Cache-Control": "max-age=86400"}
        )

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/model", response_model=ModelInfo)
    def model_info() -> ModelInfo:
        """The model the server restores with."""
        return ModelInfo(
            source=str(model.source),
            kind=str(model.kind),
            step=model.step,
            run_name=model.config.get("run_name"),
            seq_len=seq_len,
            epidoc_upload=_restore_epidoc_function() is not None,
        )

    @app.post(
        "/restore",
        response_model=RestoreResponse,
        # a gap's "parallels" only when there is an index: keys the answer does not set stay out
        response_model_exclude_unset=True,
        responses={
            400: {"model": ErrorResponse},
            413: {"model": ErrorResponse},
            422: {"model": ErrorResponse},
        },
    )
    async def restore_text(req: RestoreRequest, request: Request) -> Any:
        """Restore a Leiden text: its gaps with their fills, letter probabilities, alternatives
        and width distributions, and the top-k restorations of the whole text. A request whose
        client disconnects stops being decoded (its answer, 499, is never read)."""
        supplements = req.supplements
        reading = req.text  # read once, here (no lock needed): a typo is answered at once
        try:
            reading = read_input(
                req.text,
                supplements=supplements,
                unknown_width=req.unknown_width,
                about_margin=req.about_margin,
            )
        except GapTooWideError:
            pass  # said by restore() below, with the limit of the loaded model
        except RestoreError as err:
            return JSONResponse({"error": api_wording(str(err))}, status_code=422)

        def work(check: Any) -> Any:
            return restore(
                model,
                reading,
                top_k=req.top_k,
                respace=req.respace,
                supplements=supplements,
                unknown_width=req.unknown_width,
                about_margin=req.about_margin,
                progress=check,
            )

        try:
            result = await run_cancellable(request, lock, work)
        except RestoreError as err:
            return JSONResponse({"error": api_wording(str(err))}, status_code=422)
        except Cancelled:
            return JSONResponse({"error": "cancelled: the client went away"}, status_code=499)
        data = result.to_json()
        # the fragments print the fills as the input prints its letters (with respace they
        # are the model's lowercase: ΕΤΗ <supplied>ν ἀ</supplied> ΧΑΙΡΕ mixed two cases)
        framed = in_input_style(data) if req.respace else data
        data["epidoc"] = [epidoc_ab(framed, i) for i in range(len(data["restorations"]))]
        # with respace every letter's word division, accents and punctuation come from the
        # model: its own rendering of each restoration (restored letters in [ ])
        data["respaced"] = [r.text for r in result.restorations] if req.respace else None
        return data

    @app.post(
        "/restore-epidoc",
        response_class=Response,
        responses={
            200: {
                "content": {"application/xml": {"schema": {"type": "string", "format": "binary"}}},
                "description": "the restored EpiDoc file",
                "headers": {
                    "X-Stoicheia-Gaps": {
                        "description": "the file's gaps counted by outcome, every outcome given, e.g. 'restored=3 left=1 refused=0'",
                        "schema": {"type": "string"},
                    }
                },
            },
            400: {"model": ErrorResponse},
            413: {"model": ErrorResponse},
            422: {"model": ErrorResponse},
            500: {"model": ErrorResponse},
            501: {"model": ErrorResponse},
        },
    )
    async def restore_epidoc_file(
        request: Request,
        file: Annotated[UploadFile, File(description="an EpiDoc (TEI P5) XML file")],
        top_k: Annotated[
            int, Form(ge=1, le=MAX_TOP_K, description="alternatives kept per gap")
        ] = 5,
        unknown_width: Annotated[
            int,
            Form(
                ge=1, le=MAX_LACUNA_WIDTH, description="letters of an extent='unknown' gap at most"
            ),
        ] = 20,
    ) -> Response:
        """Restore the lacunae of an uploaded EpiDoc file (``stoicheia.restore_epidoc``); answers the
        restored file, downloaded as ``NAME.restored.xml``, with ``X-Stoicheia-Gaps`` counting its gaps by
        outcome (``restored=3 left=1 refused=0``)."""
        fn = _restore_epidoc_function()
        if fn is None:
            return JSONResponse(
                {
                    "error": "EpiDoc upload is not available in this installation: stoicheia.restore_epidoc is missing; "
                    "update Stoicheia, or restore the text in Leiden notation above"
                },
                status_code=501,
            )
        xml = await file.read()
        shown = Path(file.filename or "").name or "the uploaded file"

        def work(check: Any) -> Any:
            return fn(model, xml, top_k=top_k, unknown_width=unknown_width, on_step=check)

        try:
            out = await run_cancellable(request, lock, work)
        except Cancelled:
            return JSONResponse({"error": "cancelled: the client went away"}, status_code=499)
        except (ValueError, OSError) as err:  # EpiDocRestoreError, RestoreError: their one line
            line = str(err).splitlines()[0]
            if line.startswith(
                "<xml>"
            ):  # restore_epidoc got bytes, not a path: name the file the user chose
                line = shown + line[len("<xml>") :]
            return JSONResponse({"error": line}, status_code=422)
        body = out if isinstance(out, (bytes, str)) else getattr(out, "xml", None)
        if body is None:
            return JSONResponse(
                {"error": f"restore_epidoc returned {type(out).__name__}, not the restored XML"},
                status_code=500,
            )
        headers = {
            "Content-Disposition": f'attachment; filename="{restored_name(file.filename)}"',
            "X-Stoicheia-Gaps": gaps_header(getattr(out, "gaps", []) or []),
        }
        return Response(
            body if isinstance(body, bytes) else body.encode("utf-8"),
            media_type="application/xml",
            headers=headers,
        )

    from stoicheia.serve.source_page import add_source_routes

    add_source_routes(app, model)  # GET /source/{row}: a parallel's record
    upload_paths = {"/restore-epidoc"}
    app.add_middleware(
        BodyLimit, limit=lambda path: max_upload_bytes if path in upload_paths else max_json_bytes
    )
    return app


__all__ = [
    "BodyLimit",
    "Cancelled",
    "DISCONNECT_POLL_S",
    "MAX_JSON_BYTES",
    "MAX_UPLOAD_BYTES",
    "FONT_FILES",
    "STATIC",
    "API_FIELDS",
    "GAP_OUTCOMES",
    "api_wording",
    "create_app",
    "gaps_header",
    "restored_name",
    "greek_fonts",
    "run_cancellable",
]
