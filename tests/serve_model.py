"""The model the server tests share: the 2-layer, 32-wide encoder of ``tests/tiny.py`` with
seeded random weights (no training: the server's behaviour, not the model's skill, is tested;
``STOICHEIA_SERVE_CHECKPOINT`` swaps in a trained checkpoint, e.g. for the README's screenshot)."""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tiny import tiny_run

#: an inscription with the three kinds of gap: a known width, an estimated width, an unknown width
THREE_GAPS = "καὶ τοῦ δή[....] τοῦ [-ca.6-] ἑαυτοῦ [---] χαῖρε"

#: an EpiDoc file in two pieces (a lost line cuts it): one gap to fill, then two
TWO_PIECES = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<TEI xmlns="http://www.tei-c.org/ns/1.0">'
    "<teiHeader><fileDesc><titleStmt><title>t</title></titleStmt></fileDesc></teiHeader>"
    '<text><body><div type="edition" xml:lang="grc"><ab>καὶ τοῦ δή'
    '<gap reason="lost" quantity="4" unit="character"/> τοῦ ἑαυτοῦ <lb/>'
    '<gap reason="lost" quantity="1" unit="line"/><lb/> ὁ δῆμος '
    '<gap reason="lost" quantity="3" unit="character"/> καὶ '
    '<gap reason="lost" quantity="2" unit="character"/> χαῖρε</ab></div></body></text></TEI>\n'
).encode()


def serve_model(folder: Path) -> Any:
    """A :class:`~stoicheia.inference.loading.LoadedModel` on the CPU (see the module docstring)."""
    import torch

    from stoicheia.inference.loading import LoadedModel, load_model
    from stoicheia.model.encoder import CharBertEncoder

    given = os.environ.get("STOICHEIA_SERVE_CHECKPOINT")
    if given:
        return load_model(given, device="cpu")
    cfg = tiny_run("unused", folder, "serve")
    torch.manual_seed(0)
    encoder = CharBertEncoder(cfg.model).eval()
    config = {
        "run_name": "serve-test",
        "data": {"seq_len": cfg.data.seq_len},
        "model": asdict(cfg.model),
    }
    return LoadedModel(encoder, config, "tiny random-weight model (tests)", "checkpoint", step=0)


def live_server(app: Any) -> tuple[str, Any, threading.Thread]:
    """``app`` served on 127.0.0.1:<free port> by uvicorn in a thread, as ``stoicheia serve``
    serves it (:func:`stoicheia.serve.half_close.server_config`): ``(base URL, server,
    thread)``; set ``server.should_exit`` and join the thread to stop it."""
    import uvicorn

    from stoicheia.serve.half_close import server_config

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    srv = uvicorn.Server(server_config(app, "127.0.0.1", port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not srv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the test server did not start"
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", srv, thread
