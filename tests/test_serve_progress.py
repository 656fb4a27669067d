"""The page's progress of a long restoration (issue 33, part 3): ``POST /restore`` with
``X-Stoicheia-Progress: ID`` is followed at ``GET /progress/ID`` (waiting for the model, then
its forward passes done of planned), and the entry goes when the request ends."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from serve_model import THREE_GAPS, serve_model  # noqa: E402
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
