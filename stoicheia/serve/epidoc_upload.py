"""``POST /restore-epidoc``: an uploaded EpiDoc file in, the restored file out
(``stoicheia.restore_epidoc``, when the installed ``stoicheia`` has it; else 501 with a line
saying so), downloaded as ``NAME.restored.xml`` with ``X-Stoicheia-Gaps`` counting its gaps.
Sent with ``X-Stoicheia-Progress: ID``, its progress is followed at ``GET /progress/ID`` (the
file's gaps decided of those to fill, the piece being decoded, its passes:
:mod:`stoicheia.serve.progress`).
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import FastAPI, File, Form, Request, UploadFile
from fastapi.responses import JSONResponse, Response

from stoicheia.serve.jobs import Cancelled, run_cancellable
from stoicheia.serve.progress import ProgressBoard
from stoicheia.serve.schemas import MAX_TOP_K, ErrorResponse
from stoicheia.text.leiden_segments import MAX_LACUNA_WIDTH


def restored_name(filename: str | None) -> str:
    """The name the restored file is downloaded as: ``NAME.restored.xml`` for an upload named
    ``NAME.xml`` (or ``NAME``), so that it does not overwrite the original beside it, the name
    kept as it is (Greek included, NFC); ``inscription.restored.xml`` without a name. Control
    characters, quotes, slashes and backslashes become ``_``."""
    name = unicodedata.normalize("NFC", Path((filename or "").replace("\\", "/")).name)
    name = re.sub(r'[\x00-\x1f\x7f"/\\]', "_", name).strip()
    stem = re.sub(r"\.xml$", "", name, flags=re.I).strip(". ") or "inscription"
    return f"{stem}.restored.xml"


def ascii_name(name: str) -> str:
    """The ASCII form of a :func:`restored_name` for the ``filename=`` of a header (Latin-1,
    read as ASCII by most clients): Latin letters without their accents, any other run of
    characters ``_`` (Greek has no ASCII form); ``inscription.restored.xml`` when no letter or
    digit is left (``Ἐπιγραφή.xml``)."""
    bare = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    stem = re.sub(r"[^A-Za-z0-9.-]+", "_", bare.removesuffix(".restored.xml")).strip("_.-")
    return f"{stem if re.search(r'[A-Za-z0-9]', stem) else 'inscription'}.restored.xml"


def content_disposition(name: str) -> str:
    """``Content-Disposition`` of a download named ``name`` (RFC 6266 §4.3): ``filename=`` an
    ASCII fallback (:func:`ascii_name`) for old clients, and ``filename*=UTF-8''`` the name
    itself, percent-encoded (RFC 8187), which browsers and ``curl -OJ`` use; the second only when
    the name is not ASCII already."""
    fallback = ascii_name(name)
    header = f'attachment; filename="{fallback}"'
    if fallback != name:
        header += f"; filename*=UTF-8''{quote(name, safe='')}"
    return header


#: the outcomes of a gap that ``X-Stoicheia-Gaps`` always counts, in this order
GAP_OUTCOMES = ("restored", "left", "refused")


def gaps_header(gaps: list[Any]) -> str:
    """``X-Stoicheia-Gaps``: the file's gaps counted by outcome, every outcome of
    :data:`GAP_OUTCOMES` given, 0 included (``restored=2 left=0 refused=0``), then any other
    outcome; ``gaps``: objects with a ``status``."""
    counts = Counter(str(getattr(g, "status", "?")) for g in gaps)
    order = [*GAP_OUTCOMES, *sorted(set(counts) - set(GAP_OUTCOMES))]
    return " ".join(f"{k}={counts[k]}" for k in order)


def reasons_header(gaps: list[Any], status: str) -> str:
    """``X-Stoicheia-Gaps-Left`` / ``X-Stoicheia-Gaps-Refused``: why the file's gaps of
    ``status`` (``left``, ``refused``) were so, counted, as ``restore --epidoc``'s summary line
    says it: a JSON list of ``[reason, count]``, the most frequent first, ``[]`` for none (ASCII:
    a decoder's message in Greek comes escaped, as a header must be); ``gaps``: objects with a
    ``status`` and a ``reason``."""
    from stoicheia.inference.epidoc.outcomes import by_reason

    reasons = [
        str(getattr(g, "reason", "") or "") for g in gaps if getattr(g, "status", None) == status
    ]
    return json.dumps([list(kv) for kv in by_reason(reasons)], ensure_ascii=True)


def _restore_epidoc_function() -> Any:
    """``stoicheia.restore_epidoc`` when this installation has it, else ``None``."""
    import stoicheia

    try:
        return stoicheia.restore_epidoc
    except AttributeError:
        return None


def epidoc_upload_available() -> bool:
    """True when this installation has ``stoicheia.restore_epidoc`` (``GET /model`` says so)."""
    return _restore_epidoc_function() is not None


def add_epidoc_routes(
    app: FastAPI, model: Any, lock: threading.Lock, board: ProgressBoard | None = None
) -> None:
    """Register ``POST /restore-epidoc`` on ``app``: restores with ``model`` (a loaded
    :class:`~stoicheia.inference.loading.LoadedModel`) one decoding at a time under ``lock``,
    cancelled when the client goes away (:func:`~stoicheia.serve.jobs.run_cancellable`), its
    progress recorded on ``board`` for ``GET /progress/{id}`` (``None``: a board of its own,
    which no route reads)."""
    board = board if board is not None else ProgressBoard()

    @app.post(
        "/restore-epidoc",
        response_class=Response,
        responses={
            200: {
                "content": {"application/xml": {"schema": {"type": "string", "format": "binary"}}},
                "description": "the restored EpiDoc file",
                "headers": {
                    "X-Stoicheia-Gaps": {
                        "description": "the file's gaps counted by outcome, every outcome "
                        "given, e.g. 'restored=3 left=1 refused=0'",
                        "schema": {"type": "string"},
                    },
                    "X-Stoicheia-Gaps-Left": {
                        "description": "why gaps were left, counted: a JSON list of "
                        "[reason, count], most first, e.g. '[[\"below the confidence floor "
                        '--min-probability 0.25, readings proposed", 5], ["lines", 2]]\'',
                        "schema": {"type": "string"},
                    },
                    "X-Stoicheia-Gaps-Refused": {
                        "description": "why gaps were refused by the decoder, counted, as "
                        "X-Stoicheia-Gaps-Left",
                        "schema": {"type": "string"},
                    },
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
        min_probability: Annotated[
            float | None,
            Form(
                ge=0,
                le=1,
                description="confidence floor: a gap whose best reading is less probable keeps "
                "its <gap>, the readings proposed after it (1: none written; default: "
                "fusion.json's floors, for gaps of known width and of unknown extent, else 0)",
            ),
        ] = None,
    ) -> Response:
        """Restore the lacunae of an uploaded EpiDoc file (``stoicheia.restore_epidoc``);
        answers the restored file, downloaded as ``NAME.restored.xml``, with
        ``X-Stoicheia-Gaps`` counting its gaps by outcome (``restored=3 left=1 refused=0``)."""
        fn = _restore_epidoc_function()
        if fn is None:
            return JSONResponse(
                {
                    "error": "EpiDoc upload is not available in this installation: "
                    "stoicheia.restore_epidoc is missing; update Stoicheia, or restore the text "
                    "in Leiden notation above"
                },
                status_code=501,
            )
        xml = await file.read()
        shown = Path(file.filename or "").name or "the uploaded file"

        def work(check: Any) -> Any:
            floor = {} if min_probability is None else {"min_probability": min_probability}
            # each forward pass: the page's progress bar (piece, its passes), then the cancel
            # check; after each piece: the file's gaps decided
            return fn(
                model,
                xml,
                top_k=top_k,
                unknown_width=unknown_width,
                on_step=follower.wrap(check),
                progress=follower.gaps,
                **floor,
            )

        with board.follow(request) as follower:
            try:
                out = await run_cancellable(request, lock, work)
            except Cancelled:
                return JSONResponse({"error": "cancelled: the client went away"}, status_code=499)
            except (ValueError, OSError) as err:  # EpiDocRestoreError, RestoreError: one line
                line = str(err).splitlines()[0]
                if line.startswith("<xml>"):
                    # restore_epidoc got bytes, not a path: name the file the user chose
                    line = shown + line[len("<xml>") :]
                return JSONResponse({"error": line}, status_code=422)
        body = out if isinstance(out, (bytes, str)) else getattr(out, "xml", None)
        if body is None:
            return JSONResponse(
                {"error": f"restore_epidoc returned {type(out).__name__}, not the restored XML"},
                status_code=500,
            )
        headers = {
            "Content-Disposition": content_disposition(restored_name(file.filename)),
            "X-Stoicheia-Gaps": gaps_header(getattr(out, "gaps", []) or []),
            # why gaps were left or refused, counted (the page says it beside the counts)
            "X-Stoicheia-Gaps-Left": reasons_header(getattr(out, "gaps", []) or [], "left"),
            "X-Stoicheia-Gaps-Refused": reasons_header(getattr(out, "gaps", []) or [], "refused"),
        }
        return Response(
            body if isinstance(body, bytes) else body.encode("utf-8"),
            media_type="application/xml",
            headers=headers,
        )
