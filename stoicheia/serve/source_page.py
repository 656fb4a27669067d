"""``GET /source/{row}``: a record of the parallels index as printed, the page's parallels link to.

The restoration page lists under each gap its parallels (:mod:`stoicheia.inference.parallels`);
each links here, to the whole record it comes from, with the matched passage highlighted
(``?start=S&end=E``, slots of the record), and to the edition's own page where the corpus names
one (I.Sicily's).
"""

from __future__ import annotations

import html
from typing import Any

from fastapi import FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse

#: letters shown at most around the highlighted passage (a record can be a whole book)
MAX_SHOWN = 4000


def add_source_routes(app: FastAPI, model: Any, parallels: str | None = None) -> None:
    """Register ``GET /source/{row}`` on ``app``: the index is the one restore uses for ``model``
    (:func:`~stoicheia.inference.restore.fusion_file.find_fusion`; ``parallels``: ``serve
    --parallels``); 404 without an index or for a row it does not have."""

    @app.get("/source/{row}", response_class=HTMLResponse, include_in_schema=False)
    def source(row: int, start: int = Query(0, ge=0), end: int = Query(0, ge=0)) -> HTMLResponse:
        from stoicheia.inference.restore.fusion_file import find_fusion
        from stoicheia.inference.restore.reading import RestoreError

        try:  # a hand-edited fusion.json, a moved or damaged index: its one line, not a 500
            fusion = find_fusion(model, parallels=parallels)
        except RestoreError as err:
            raise HTTPException(503, str(err)) from None
        index = fusion.parallels if fusion is not None else None
        if index is None or not 0 <= row < index.records:
            raise HTTPException(404, f"no record {row} in the parallels index")
        r0, r1 = index.record_span(row)
        a, b = sorted((min(r0 + start, r1), min(r0 + max(end, start), r1)))
        lo = max(r0, a - MAX_SHOWN // 2)
        hi = min(r1, max(b, lo) + MAX_SHOWN // 2)
        before, mid, after = index.printed_parts(lo, hi, [a, b])
        src = index.source(r0)
        link = f' · <a href="{html.escape(src.url)}">the edition\'s page</a>' if src.url else ""
        body = (
            f"<!doctype html><meta charset='utf-8'><title>{html.escape(src.record)}</title>"
            "<link rel='stylesheet' href='/static/style.css'>"
            f"<main><h1>{html.escape(src.label())}</h1>"
            f"<p class='muted'>{html.escape(src.tier)} · {html.escape(src.work)}{link} · "
            "training text of the model (parallels index)</p>"
            f"<p class='greek source'>{'… ' if lo > r0 else ''}{html.escape(before)}"
            f"<mark>{html.escape(mid)}</mark>{html.escape(after)}"
            f"{' …' if hi < r1 else ''}</p></main>"
        )
        return HTMLResponse(body)


__all__ = ["MAX_SHOWN", "add_source_routes"]
