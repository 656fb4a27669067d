"""The restoration server: a FastAPI application around one loaded model.

:func:`create_app` builds it. Routes:

* ``GET /`` the page (``static/index.html``), ``/static/...`` its script, style sheet and
  examples, ``/static/fonts/greek-serif.ttf`` and ``greek-sans.ttf`` the polytonic Greek fonts
  (DejaVu Serif and Sans, shipped in the ``matplotlib`` package the project depends on: nothing
  is fetched from the network; :mod:`stoicheia.serve.fonts`);
* ``POST /restore`` (JSON in, JSON out: :class:`~stoicheia.serve.schemas.RestoreRequest`,
  :class:`~stoicheia.serve.schemas.RestoreResponse`), the API the page uses;
* ``POST /restore-epidoc`` an EpiDoc file in, the restored file out (when the installed
  ``stoicheia`` has ``restore_epidoc``; else 501 with a line saying so;
  :mod:`stoicheia.serve.epidoc_upload`);
* ``GET /source/{row}`` a record of the parallels index (:mod:`stoicheia.serve.source_page`);
* ``GET /progress/{id}`` how far the running ``POST /restore`` or ``POST /restore-epidoc`` sent
  with the header ``X-Stoicheia-Progress: id`` is (the page's progress bars:
  :mod:`stoicheia.serve.progress`);
* ``GET /model`` what is loaded (the model, and whether a letter n-gram and a parallels index
  are found beside it); ``/openapi.json`` the schema (FastAPI's; its ``/docs`` page is off: it
  loads Swagger UI from a CDN).

Every ``GET`` route answers ``HEAD`` too (the headers alone), as a link checker or
``curl -I`` expects.

Offsets. A gap's ``start`` and ``end`` count Unicode code points of ``input`` (Python's
``str`` indices), not UTF-16 units: a character outside the Basic Multilingual Plane (the
Greek acrophonic numerals, papyrus fractions such as 𐅵) is one. JavaScript slices by code
points with ``Array.from(input)`` (the page does).

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
long text), and the decoding ends there with :class:`~stoicheia.serve.jobs.Cancelled`,
releasing the lock for the next request. A request still waiting for the lock when its client
leaves never starts (:func:`~stoicheia.serve.jobs.run_cancellable`).

Errors. Every refusal is ``{"error": "one line"}``: a body over the limit 413 (checked
on ``Content-Length`` and while the body streams in: :mod:`stoicheia.serve.body_limit`), input
the restorer refuses 422 with :class:`~stoicheia.inference.restore.RestoreError`'s message (the
line ``stoicheia restore`` prints, its command-line options named as the request's fields:
:func:`~stoicheia.serve.api_errors.api_wording`), a malformed request 422 with the field and
the fix (a body that is not JSON said so; a JSON object that gives a key twice, which JSON
parsers resolve silently by keeping the last, refused:
:class:`~stoicheia.serve.api_errors.JsonRoute`).
"""

from __future__ import annotations

import re
import threading
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from stoicheia.serve.api_errors import JsonRoute, api_wording, validation_line
from stoicheia.serve.body_limit import MAX_JSON_BYTES, MAX_UPLOAD_BYTES, BodyLimit
from stoicheia.serve.epidoc_upload import add_epidoc_routes, epidoc_upload_available
from stoicheia.serve.fonts import greek_fonts
from stoicheia.serve.fragment import epidoc_ab, in_input_style
from stoicheia.serve.jobs import Cancelled, run_cancellable
from stoicheia.serve.progress import ProgressBoard, add_progress_routes
from stoicheia.serve.schemas import ErrorResponse, ModelInfo, RestoreRequest, RestoreResponse

STATIC = Path(str(resources.files("stoicheia.serve") / "static"))


def shown_source(source: str) -> str:
    """The model's ``source`` as ``GET /model`` and the page show it: an object-store URI as
    given; a local checkpoint or folder by its last two parts (``stoicheia-demo/best.pt``,
    ``stoicheia/base_model``), never the server's absolute path (the page tells no folder of the
    server, as its notes do not)."""
    if "://" in source:
        return source
    parts = Path(source).parts
    return "/".join(parts[-2:]) if len(parts) > 1 else source


def create_app(
    model: Any,
    *,
    max_json_bytes: int = MAX_JSON_BYTES,
    max_upload_bytes: int = MAX_UPLOAD_BYTES,
    parallels: str | None = None,
) -> FastAPI:
    """The server's FastAPI application for ``model`` (a loaded
    :class:`~stoicheia.inference.loading.LoadedModel`: the caller loads it once; it is never
    reloaded). ``max_json_bytes``/``max_upload_bytes``: body limits of ``POST /restore`` and of
    ``POST /restore-epidoc`` (bytes; larger bodies get 413). ``parallels``: the parallels index
    folder (``serve --parallels``; ``None``: the checkpoint's own, found from its folder by
    :func:`~stoicheia.inference.restore.fusion_file.find_fusion`; ``""``: none)."""
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
    app.router.route_class = JsonRoute  # a JSON body giving a key twice: 422
    app.state.model = model
    board = ProgressBoard()  # GET /progress/{id}: how far a running restoration is
    app.state.progress = board
    add_progress_routes(app, board)
    app.state.parallels = parallels
    lock = threading.Lock()
    app.state.lock = lock
    fonts, font_licence = greek_fonts()
    seq_len = int((model.config.get("data") or {}).get("seq_len") or 512)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        return JSONResponse({"error": validation_line(err)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, err: StarletteHTTPException) -> JSONResponse:
        # the framework's own refusals (a body it cannot parse, an unknown path or method) in
        # the same one-line shape as ours, not its {"detail": ...}
        why = {
            400: "the request body could not be read (send UTF-8 JSON, or a multipart form "
            "for /restore-epidoc)",
            404: f"no page or API at {request.url.path}; the page is at /, the API is "
            "described at /openapi.json",
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
                    "DejaVu fonts: free licence (Bitstream Vera derivative), see matplotlib's "
                    "LICENSE_DEJAVU\n",
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
        """The model the server restores with, the experts fused with it (the letter
        n-gram, the parallels index) as restore finds them now, and the decoders a request may
        name (``decoders``: those whose parts are loaded) with the default one (``decoder``)."""
        from stoicheia.inference.restore import DECODERS
        from stoicheia.inference.restore.fusion_file import find_fusion
        from stoicheia.inference.shipped import is_shipped

        try:
            # loads the n-gram whatever its weight
            fusion = find_fusion(model, decoder="ngram", parallels=parallels)
            default = find_fusion(model, parallels=parallels)
        except RestoreError:  # a damaged fusion.json or index: said by /restore
            fusion = default = None
        parts = {
            "network": True,
            "ngram": fusion is not None and fusion.ngram is not None,
            "parallels": fusion is not None and fusion.parallels is not None,
        }
        offered = [
            d
            for d in DECODERS
            if (d != "ngram" or parts["ngram"])
            and (d != "parallels" or parts["parallels"] or parts["ngram"])
        ]
        return ModelInfo(
            source=shown_source(str(model.source)),
            kind=str(model.kind),
            step=model.step,
            run_name=model.config.get("run_name"),
            shipped=is_shipped(model.source),
            seq_len=seq_len,
            epidoc_upload=epidoc_upload_available(),
            **experts(model, parallels),
            decoders=offered,
            decoder=default.decoder if default is not None else "fused",
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
            from stoicheia.inference.restore.fusion_file import find_fusion

            # the page's progress bar (serve.progress), then the cancel check
            ticks = follower.wrap(check)
            notes: list[str] = []  # a part restoration goes on without (the index, the n-gram)
            fusion = find_fusion(model, parallels=parallels, notes=notes, decoder=req.decoder)
            result = restore(
                model,
                reading,
                top_k=req.top_k,
                respace=req.respace,
                accents=req.accents,
                supplements=supplements,
                unknown_width=req.unknown_width,
                about_margin=req.about_margin,
                progress=ticks,
                decoder=req.decoder,
                fusion=fusion,
            )
            if result.gaps:
                result.notes += [n for n in notes if n not in result.notes]
            return result

        with board.follow(request) as follower:
            try:
                result = await run_cancellable(request, lock, work)
            except RestoreError as err:
                return JSONResponse({"error": api_wording(str(err))}, status_code=422)
            except Cancelled:
                return JSONResponse({"error": "cancelled: the client went away"}, status_code=499)
        data = result.to_json()
        # the fragments print the fills as the input prints its letters (with respace they
        # are the model's lowercase: ΕΤΗ <supplied>ν ἀ</supplied> ΧΑΙΡΕ mixed two cases)
        rebuilt = req.respace or req.accents
        framed = in_input_style(data) if rebuilt else data
        data["epidoc"] = [epidoc_ab(framed, i) for i in range(len(data["restorations"]))]
        # with respace every letter's word division, accents and punctuation come from the
        # model (with accents, its accents): its own rendering of each restoration (restored
        # letters in [ ])
        data["respaced"] = [r.text for r in result.restorations] if rebuilt else None
        return data

    add_epidoc_routes(app, model, lock, board)  # POST /restore-epidoc: an EpiDoc file in and out

    from stoicheia.serve.source_page import add_source_routes

    add_source_routes(app, model, parallels)  # GET /source/{row}: a parallel's record
    upload_paths = {"/restore-epidoc"}
    app.add_middleware(
        BodyLimit, limit=lambda path: max_upload_bytes if path in upload_paths else max_json_bytes
    )
    _answer_head(app)
    return app


def _answer_head(app: FastAPI) -> None:
    """Register ``HEAD`` beside every ``GET`` route of ``app`` (FastAPI registers only the
    methods named; Starlette's own routes and the static files already answer it); out of the
    schema, which would list each operation twice."""
    routes = app.router.routes
    for route in list(routes):
        if isinstance(route, APIRoute) and "GET" in route.methods and "HEAD" not in route.methods:
            app.router.add_api_route(
                route.path,
                route.endpoint,
                methods=["HEAD"],
                response_model=route.response_model,
                response_class=route.response_class,
                include_in_schema=False,
            )
            # right after its GET twin: before the /static mount, which would take
            # HEAD /static/fonts/... for one of its own files
            routes.insert(routes.index(route) + 1, routes.pop())


#: an absolute path in a message: its last part is kept
_ABSOLUTE = re.compile(r"(?<![\w.])/(?:[^\s:;,'\"`/]+/)*([^\s:;,'\"`/]+)")


def experts(model: Any, parallels: str | None = None) -> dict[str, Any]:
    """What ``GET /model`` says of the experts restore fuses with ``model`` now (``parallels``:
    ``serve --parallels``)
    (:func:`~stoicheia.inference.restore.fusion_file.find_fusion`, as ``POST /restore`` finds
    them): ``ngram`` (bool) and ``ngram_weight`` (0 to 1), ``parallels`` (bool: each gap's
    parallels are listed), ``parallels_weight`` (0 to 1: their weight letter by letter),
    ``readings`` (their fills weighed with the search's as whole readings), and
    ``experts_error``: the line of a fusion file that cannot be read, or the note of an index
    it names that is missing, broken or built from other shards (every restore says it too,
    with a folder's name but not where it is), else ``None``. No path is given:
    the server's folders are its own."""
    from stoicheia.inference.restore.fusion_file import find_fusion
    from stoicheia.inference.restore.gaps import RestoreError

    notes: list[str] = []
    try:
        fusion = find_fusion(model, parallels=parallels, notes=notes)
    except RestoreError as err:
        return {
            "ngram": False,
            "ngram_weight": 0.0,
            "parallels": False,
            "parallels_weight": 0.0,
            "readings": False,
            # the folder's name, not where it is on the server
            "experts_error": _ABSOLUTE.sub(r"\1", api_wording(str(err))),
        }
    ngram = fusion is not None and fusion.ngram is not None
    index = fusion is not None and fusion.parallels is not None
    # an index named but missing, broken or of other shards: restore goes on without it and
    # says so in a note; /model says it too (a run without any index is no error)
    said = [
        n
        for n in notes
        if n.startswith("no parallels:") and "no index of the run's shards" not in n
    ]
    return {
        "ngram": ngram,
        "ngram_weight": fusion.weight if ngram else 0.0,  # type: ignore[union-attr]
        "parallels": index,
        "parallels_weight": fusion.parallels_weight if index else 0.0,  # type: ignore[union-attr]
        "readings": bool(index and getattr(fusion, "readings", None) is not None),
        "experts_error": _ABSOLUTE.sub(r"\1", said[0]) if said else None,
    }


__all__ = ["STATIC", "create_app"]
