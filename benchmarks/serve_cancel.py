"""How long an abandoned restoration keeps the restoration server busy (issue 23 §5).

Serves CHECKPOINT as ``stoicheia serve`` does (uvicorn, in this process), sends a long text,
abandons it after ``--abandon`` seconds (the client closes its socket: the page's Cancel, a
client's time-out and a killed client all look so to the server), then times a short
restoration sent at once, and a second short one when the server is idle, for comparison.
Prints the seconds of each: the first short one should take about as long as the idle one,
not wait for the abandoned one's decoding.

    .venv/bin/python benchmarks/serve_cancel.py checkpoints/stoicheia-demo/best.pt [--abandon 3]
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time

#: a long inscription: many gaps of each kind (known width, about N, unknown width)
LONG = " ".join(["καὶ τοῦ δή[....] τοῦ [-ca.6-] ἑαυτοῦ [---] χαῖρε ἔδοξε τῆι βουλῆι"] * 200)
SHORT = "ἐνθάδε κεῖ[..]αι"


def _post(addr: tuple[str, int], body: dict, half_close: bool) -> bytes:
    data = json.dumps(body).encode()
    head = (
        f"POST /restore HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection(addr, timeout=600) as sock:
        sock.sendall(head + data)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--abandon", type=float, default=3.0, help="seconds before giving up")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    import uvicorn

    from stoicheia.inference.loading import load_model
    from stoicheia.serve.app import create_app

    try:
        from stoicheia.serve.half_close import server_config
    except ImportError:  # a checkout before issue 23: uvicorn's own protocol

        def server_config(app, host, port, **options):
            return uvicorn.Config(app, host=host, port=port, **options)

    model = load_model(args.checkpoint, device=args.device)
    app = create_app(model)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(server_config(app, "127.0.0.1", port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    while not srv.started:
        time.sleep(0.05)
    addr = ("127.0.0.1", port)
    try:
        t0 = time.monotonic()
        got = _post(addr, {"text": SHORT, "top_k": 1}, half_close=False)
        idle = time.monotonic() - t0
        assert got.startswith(b"HTTP/1.1 200"), got[:200]
        sock = socket.create_connection(addr)
        data = json.dumps({"text": LONG, "top_k": 5}).encode()
        sock.sendall(
            (
                "POST /restore HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n\r\n"
            ).encode()
            + data
        )
        time.sleep(args.abandon)
        sock.close()  # the client goes away
        t0 = time.monotonic()
        got = _post(addr, {"text": SHORT, "top_k": 1}, half_close=False)
        after = time.monotonic() - t0
        assert got.startswith(b"HTTP/1.1 200"), got[:200]
        t0 = time.monotonic()
        got = _post(addr, {"text": SHORT, "top_k": 1}, half_close=True)
        half = time.monotonic() - t0 if b"HTTP/1.1 200" in got else float("nan")  # nan: no answer
    finally:
        srv.should_exit = True
        thread.join(timeout=60)
    print(f"model {model.source} on {args.device}; long text {len(LONG):,} characters")
    print(f"short restoration, server idle:                         {idle:6.2f} s")
    print(f"short restoration, right after one abandoned at {args.abandon:g} s: {after:6.2f} s")
    print(f"short restoration, client half-closed after sending:    {half:6.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
