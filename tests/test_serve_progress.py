"""The page's progress of a long restoration (issue 33, part 3): ``POST /restore`` with
``X-Stoicheia-Progress: ID`` is followed at ``GET /progress/ID`` (waiting for the model, then
its forward passes done of planned), and the entry goes when the request ends."""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from serve_model import THREE_GAPS, TWO_PIECES, serve_model  # noqa: E402
from test_serve_browser import _serving  # noqa: E402


def _until(what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.05)
    pytest.fail("timed out")


def test_a_running_restoration_says_how_far_it_is(tmp_path):
    import httpx

    from stoicheia.inference.loading import LoadedModel
    from stoicheia.serve.app import create_app

    base_model = serve_model(tmp_path)
    gate = threading.Event()
    passes: list[int] = []

    class Gated(LoadedModel):  # the second forward pass waits for the test
        def __call__(self, batch):
            passes.append(1)
            if len(passes) == 2:
                gate.wait(60)
            return super().__call__(batch)

    app = create_app(
        Gated(base_model.encoder, base_model.config, base_model.source, base_model.kind, step=0)
    )
    ticket = "test-ticket-0001"
    serving = _serving(app)
    base = next(serving)  # the server runs until serving.close()
    try:
        progress = f"{base}/progress/{ticket}"
        assert httpx.get(progress).status_code == 404  # nothing running under that ID
        answers: list = []

        def post():
            answers.append(
                httpx.post(
                    f"{base}/restore",
                    json={"text": THREE_GAPS, "top_k": 1},
                    headers={"X-Stoicheia-Progress": ticket},
                    timeout=120,
                )
            )

        app.state.lock.acquire()  # another tab's restoration holds the model
        worker = threading.Thread(target=post)
        worker.start()
        try:
            got = _until(lambda: (r := httpx.get(progress)).status_code == 200 and r.json())
            assert got == {"state": "waiting", "done": 0, "total": 0}
        finally:
            app.state.lock.release()
        got = _until(lambda: (r := httpx.get(progress).json()).get("done", 0) >= 1 and r)
        assert got["state"] == "restoring" and got["total"] == 3 + 2  # a pass a gap, and two
        assert 1 <= got["done"] < got["total"]
        gate.set()
        worker.join(120)
        assert answers[0].status_code == 200 and answers[0].json()["gaps"]
        assert httpx.get(progress).status_code == 404, "the entry goes with its request"
        # a request without the header, or with an ID that is no token, is restored as before
        for headers in ({}, {"X-Stoicheia-Progress": "../../x"}):
            r = httpx.post(
                f"{base}/restore", json={"text": "καὶ [..]", "top_k": 1}, headers=headers
            )
            assert r.status_code == 200
        schema = httpx.get(f"{base}/openapi.json").json()
        assert "/progress/{key}" in schema["paths"]
    finally:
        serving.close()


def test_an_uploaded_file_says_how_far_it_is(tmp_path):
    """``POST /restore-epidoc`` with the header is followed too: waiting for the model, then
    the file's gaps decided of those to fill, the piece being decoded of the pieces, and that
    piece's passes; the entry goes with the request, whose answer is the restored file."""
    import httpx

    from stoicheia.inference.loading import LoadedModel
    from stoicheia.serve.app import create_app

    base_model = serve_model(tmp_path)
    gate = threading.Event()
    ticket = "upload-ticket-01"
    holder: dict = {}

    class Gated(LoadedModel):  # a forward pass of the second piece waits for the test
        def __call__(self, batch):
            entry = holder["app"].state.progress.get(ticket)
            if entry is not None and entry.piece == 2:
                gate.wait(60)
            return super().__call__(batch)

    app = create_app(
        Gated(base_model.encoder, base_model.config, base_model.source, base_model.kind, step=0)
    )
    holder["app"] = app
    serving = _serving(app)
    base = next(serving)
    try:
        progress = f"{base}/progress/{ticket}"
        answers: list = []

        def post():
            answers.append(
                httpx.post(
                    f"{base}/restore-epidoc",
                    files={"file": ("two.xml", TWO_PIECES)},
                    data={"top_k": "1"},
                    headers={"X-Stoicheia-Progress": ticket},
                    timeout=120,
                )
            )

        app.state.lock.acquire()  # another restoration holds the model
        worker = threading.Thread(target=post)
        worker.start()
        try:
            got = _until(lambda: (r := httpx.get(progress)).status_code == 200 and r.json())
            assert got == {"state": "waiting", "done": 0, "total": 0}  # no file counts yet
        finally:
            app.state.lock.release()
        got = _until(lambda: (r := httpx.get(progress).json()).get("piece") == 2 and r)
        # the first piece's one gap decided; the second's two gaps: 2 + 2 passes planned
        assert {k: got[k] for k in ("state", "gaps_done", "gaps_total", "pieces", "total")} == {
            "state": "restoring",
            "gaps_done": 1,
            "gaps_total": 3,
            "pieces": 2,
            "total": 2 + 2,
        }
        assert 1 <= got["done"] <= got["total"]
        gate.set()
        worker.join(120)
        answer = answers[0]
        assert answer.status_code == 200, answer.text
        assert re.fullmatch(
            r"restored=\d+ left=\d+ refused=\d+", answer.headers["x-stoicheia-gaps"]
        )
        counted = re.findall(r"\d+", answer.headers["x-stoicheia-gaps"])
        assert sum(map(int, counted)) == 3 + 1  # and the lost line, left
        assert httpx.get(progress).status_code == 404, "the entry goes with its request"
        # a refused file ends its entry too
        bad = httpx.post(
            f"{base}/restore-epidoc",
            files={"file": ("bad.xml", b"<notxml")},
            headers={"X-Stoicheia-Progress": ticket},
        )
        assert bad.status_code == 422 and httpx.get(progress).status_code == 404
    finally:
        gate.set()
        serving.close()
