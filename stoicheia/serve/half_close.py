"""Answering a client that half-closes its connection: the HTTP protocol ``stoicheia serve`` runs.

Many HTTP clients shut down their sending side once the request is sent
(``shutdown(SHUT_WR)``: ``nc -N``, some HTTP libraries, scripts on raw sockets). uvicorn's h11
protocol takes that end of input for a client that has gone: asyncio closes the transport,
the request is marked disconnected and whatever the application answers is dropped, so such a
client gets no answer at all, on any route. :class:`HalfCloseH11Protocol` (the h11 protocol
with :meth:`~HalfCloseH11Protocol.eof_received` overridden) keeps the connection open for the
answer when the end of input comes after a whole request whose answer is not yet sent, and
closes the connection once that answer is sent (nothing more can come in on it).

A client that has really gone (the page's Cancel, a client's time-out, a killed client) looks
the same at that moment: its end of input is the same FIN. What tells them apart is writing:
a closed socket answers with a reset. So while such a request runs, :data:`FIRST_PROBE_S`
after the end of input and then every :data:`PROBE_S` seconds, the protocol writes an interim
response ``HTTP/1.1 102 Processing`` (a 1xx response, which RFC 9110 §15.2 requires an
HTTP/1.1 client to read and skip before the final one; never sent to an HTTP/1.0 client, which
the RFC forbids) and reads the socket's
pending error shortly after: a reset there (``SO_ERROR``) is a client that has gone, and the
connection is dropped as uvicorn drops any lost connection, so the application's
``Request.is_disconnected`` turns true and the decoding stops (:mod:`stoicheia.serve.jobs`).
A half-closed HTTP/1.0 client is answered, but its leaving is noticed only at the answer.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

#: seconds from the end of input to the first probe (an answer ready sooner, as for the
#: page's files or /model, is sent without one; a client that has gone is noticed this soon)
FIRST_PROBE_S = 0.1
#: seconds between two probes of a half-closed client whose answer is not ready
PROBE_S = 0.5
#: seconds between a probe and the read of the socket's error (a reset comes back in a round trip)
PROBE_READ_S = 0.05


class HalfCloseH11Protocol(H11Protocol):
    """uvicorn's h11 protocol that answers a client which half-closed after its request, and
    still notices a client that has gone (module docstring). Give it to uvicorn as
    ``uvicorn.Config(app, http=HalfCloseH11Protocol)``."""

    _probe: asyncio.TimerHandle | None = None
    #: the client's end of input came while a request waited for its answer
    _half_closed: bool = False

    def eof_received(self) -> bool | None:
        """The client's end of input: keep the connection open (``True``) when a whole request
        is waiting for its answer, and start probing the client; else close as uvicorn does
        (``None``: the transport closes itself)."""
        cycle = self.cycle
        if self._half_closed:
            return True  # told twice (reading resumed after the end): already handled
        if (
            cycle is None
            or cycle.response_complete
            or cycle.disconnected
            or cycle.more_body  # the request's body was cut short: nothing to answer
        ):
            return None
        cycle.keep_alive = False  # nothing more can come in: close after the answer
        self._half_closed = True
        if self.conn.their_http_version == b"1.1":
            self._probe = self.loop.call_later(FIRST_PROBE_S, self._write_probe)
        return True

    def _write_probe(self) -> None:
        self._probe = None
        cycle = self.cycle
        if cycle is None or cycle.response_started or self.transport.is_closing():
            return
        try:
            probe = h11.InformationalResponse(status_code=102, headers=[], reason=b"Processing")
            self.transport.write(self.conn.send(probe))
        except h11.LocalProtocolError:
            return
        self._probe = self.loop.call_later(PROBE_READ_S, self._read_probe)

    def _read_probe(self) -> None:
        self._probe = None
        cycle = self.cycle
        if cycle is None or cycle.response_started or self.transport.is_closing():
            return
        sock: Any = self.transport.get_extra_info("socket")
        error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) if sock is not None else 0
        if error:  # the client's socket is closed: it reset the connection
            self.transport.abort()  # connection_lost: the request is disconnected
            return
        self._probe = self.loop.call_later(PROBE_S - PROBE_READ_S, self._write_probe)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._probe is not None:
            self._probe.cancel()
            self._probe = None
        super().connection_lost(exc)


def server_config(app: Any, host: str, port: int, **options: Any) -> Any:
    """The ``uvicorn.Config`` ``stoicheia serve`` runs ``app`` with on ``host:port``: the
    h11 protocol of :class:`HalfCloseH11Protocol`; ``options`` go to ``uvicorn.Config``."""
    import uvicorn

    return uvicorn.Config(app, host=host, port=port, http=HalfCloseH11Protocol, **options)


__all__ = ["FIRST_PROBE_S", "PROBE_READ_S", "PROBE_S", "HalfCloseH11Protocol", "server_config"]
