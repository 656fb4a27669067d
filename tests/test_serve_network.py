"""The restoration server under real networks, on raw sockets against uvicorn as ``stoicheia
serve`` runs it: a client that half-closes after its request is answered (on every kind of
route), a half-closed client that then goes away is noticed, and a client that leaves while
its restoration is being rendered frees the model for the next request at once.

Deterministic: the model is gated (its forward pass waits on an event the test sets), and the
order of forward passes, not a wall clock, says whether a decoding went on."""

from __future__ import annotations

import json
import socket
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from serve_model import THREE_GAPS, live_server, serve_model  # noqa: E402

pytest.importorskip("fastapi")

#: a long text: many gaps, so that its decoding and rendering take many forward passes
LONG = " ".join([THREE_GAPS] * 6)
SHORT = "καὶ τοῦ [..]"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return serve_model(tmp_path_factory.mktemp("serve-net"))


class Gate:
    """A model whose forward pass number ``at`` (1-based) waits until ``release`` is set (at most
    60 s); every pass is recorded in ``passes`` (in order, with the thread's name)."""

    def __init__(self, model, at: int | None = None) -> None:
        from stoicheia.inference.loading import LoadedModel

        gate = self
        self.passes: list[str] = []
        self.at = at
        self.reached = threading.Event()
        self.release = threading.Event()

        class Gated(LoadedModel):
            def __call__(self, batch):
                gate.passes.append(threading.current_thread().name)
                if len(gate.passes) == gate.at:
                    gate.reached.set()
                    assert gate.release.wait(60), "the test never released the gated pass"
                return super().__call__(batch)

        self.model = Gated(model.encoder, model.config, model.source, model.kind, step=model.step)


@pytest.fixture
def served(model):
    """``serve(app) -> (host, port)``: the app served as ``stoicheia serve`` serves it, stopped
    at the end of the test."""
    running = []

    def serve(app):
        base, srv, thread = live_server(app)
        running.append((srv, thread))
        host, port = base.removeprefix("http://").split(":")
        return host, int(port)

    yield serve
    for srv, thread in running:
        srv.should_exit = True
        thread.join(timeout=30)


def _request(method: str, path: str, body: dict | None = None) -> bytes:
    data = json.dumps(body).encode() if body is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nHost: test\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    return head.encode() + b"\r\n" + data


def _read_all(sock: socket.socket) -> bytes:
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def _parse(raw: bytes) -> tuple[list[int], int, bytes]:
    """``(interim statuses, final status, body)`` of one HTTP/1.1 answer read to its end."""
    interim = []
    while True:
        head, _, raw = raw.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        if status >= 200:
            return interim, status, raw
        interim.append(status)


def _half_closed(addr, request: bytes) -> tuple[list[int], int, bytes]:
    """Send ``request``, shut the sending side (``SHUT_WR``), read the answer to the end."""
    with socket.create_connection(addr, timeout=60) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        return _parse(_read_all(sock))


def test_a_client_that_half_closes_after_its_request_is_answered_on_every_route(model, served):
    """``shutdown(SHUT_WR)`` after the request: uvicorn took the end of input for a client that
    had gone and answered nothing, on any route; it is answered, then the connection closes."""
    from stoicheia.serve.app import create_app

    addr = served(create_app(model))
    for method, path, body, status in [
        ("GET", "/model", None, 200),
        ("GET", "/", None, 200),
        ("GET", "/openapi.json", None, 200),
        ("GET", "/nowhere", None, 404),
        ("POST", "/restore", {"text": SHORT, "top_k": 2}, 200),
        ("POST", "/restore", {"text": "καὶ [.", "top_k": 2}, 422),
    ]:
        interim, got, answer = _half_closed(addr, _request(method, path, body))
        assert got == status, (method, path, got, answer[:200])
        assert set(interim) <= {102}
        if path == "/restore" and status == 200:
            assert json.loads(answer)["gaps"][0]["notation"] == "[..]"
        if path == "/model":
            assert json.loads(answer)["run_name"] == "serve-test"


def test_a_half_closed_client_waiting_for_a_long_decoding_is_probed_then_answered(model, served):
    """While the answer is not ready, a half-closed HTTP/1.1 client gets ``102 Processing``
    interim responses (the probes that tell it from a client that has gone), then its answer."""
    from stoicheia.serve.app import create_app

    gate = Gate(model, at=1)
    addr = served(create_app(gate.model))
    with socket.create_connection(addr, timeout=60) as sock:
        sock.sendall(_request("POST", "/restore", {"text": SHORT, "top_k": 1}))
        sock.shutdown(socket.SHUT_WR)
        assert gate.reached.wait(60)
        first = b""
        while b"\r\n\r\n" not in first:  # the decoding waits: a probe comes first
            first += sock.recv(1)
        assert first.startswith(b"HTTP/1.1 102 ")
        gate.release.set()
        interim, status, body = _parse(first + _read_all(sock))
    assert status == 200 and interim[0] == 102 and set(interim) == {102}
    assert json.loads(body)["restorations"][0]["fills"]


def _noticing(monkeypatch) -> threading.Event:
    """An event set once the server has seen a request's client gone (``is_disconnected``)."""
    from starlette.requests import Request

    noticed = threading.Event()
    seen = Request.is_disconnected

    async def is_disconnected(self):
        gone = await seen(self)
        if gone:
            noticed.set()
        return gone

    monkeypatch.setattr(Request, "is_disconnected", is_disconnected)
    return noticed


def _forward_passes(model, text: str, top_k: int) -> tuple[int, int]:
    """``(passes of the gaps' decoding, passes of the whole restoration)`` of ``text``."""
    from stoicheia.inference.restore import restore

    gate = Gate(model)
    result = restore(gate.model, text, top_k=top_k)
    return len(result.gaps), len(gate.passes)


@pytest.mark.parametrize("half_close_first", [False, True])
def test_a_client_gone_during_rendering_frees_the_model_for_the_next_request(
    model, served, monkeypatch, half_close_first
):
    """A long restoration whose client goes away (a killed client, the page's Cancel; or a
    client that half-closed, was probed alive, then went) while its fills are being rendered
    makes no forward pass after the server notices; the next request is answered, its passes
    the only ones after the cut (it did not wait for the rest of the long one's rendering,
    which used to go on for 20 s and more)."""
    from stoicheia.serve.app import create_app

    decoding, total = _forward_passes(model, LONG, 3)
    assert total > decoding + 2  # the rendering makes passes of its own
    _, short_total = _forward_passes(model, SHORT, 1)
    noticed = _noticing(monkeypatch)
    gate = Gate(model, at=decoding + 1)  # the first pass of the rendering
    app = create_app(gate.model)
    addr = served(app)
    sock = socket.create_connection(addr, timeout=60)
    sock.sendall(_request("POST", "/restore", {"text": LONG, "top_k": 3}))
    if half_close_first:
        sock.shutdown(socket.SHUT_WR)
    assert gate.reached.wait(120), "the long restoration never reached its rendering"
    if half_close_first:  # probed, and alive: nothing noticed yet
        probe = b""
        while b"\r\n\r\n" not in probe:
            probe += sock.recv(1)
        assert probe.startswith(b"HTTP/1.1 102 ") and not noticed.is_set()
    sock.close()  # the client goes
    assert noticed.wait(30), "the server never noticed the client had gone"
    cut = len(gate.passes)
    answer = {}

    def short():
        answer["r"] = _half_closed(addr, _request("POST", "/restore", {"text": SHORT, "top_k": 1}))

    asker = threading.Thread(target=short)
    asker.start()
    gate.release.set()  # the gated pass ends; the long restoration must stop at its next check
    asker.join(120)
    assert not asker.is_alive()
    _, status, body = answer["r"]
    assert status == 200 and json.loads(body)["gaps"][0]["notation"] == "[..]"
    assert cut == decoding + 1
    assert len(gate.passes) - cut == short_total, "the abandoned restoration went on"
    assert app.state.lock.acquire(timeout=10)
    app.state.lock.release()
