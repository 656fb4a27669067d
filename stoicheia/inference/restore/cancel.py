"""Stopping a restoration part-way: a cooperative cancel check, set per thread of work.

:func:`cancel_check` installs a callable for the code run inside its ``with`` block (a
:class:`contextvars.ContextVar`, so each thread or task has its own); :func:`check_cancelled`
calls it. The decoding calls :func:`check_cancelled` before every forward pass of the encoder
(:func:`~stoicheia.inference.restore.decoding.forward`: the gaps' passes, the rendering of the
fills, the respaced text) and at every slot of a gap's beam search, so whatever the callable
raises ends the restoration within one forward pass or one beam step. The restoration server
(:mod:`stoicheia.serve.jobs`) installs one that raises once the request's client has gone, and
``restore_epidoc`` is stopped the same way, since it decodes through the same functions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_CHECK: ContextVar[Callable[[], None] | None] = ContextVar("stoicheia_cancel_check", default=None)


@contextmanager
def cancel_check(check: Callable[[], None] | None) -> Iterator[None]:
    """Within the block, :func:`check_cancelled` calls ``check()`` (no arguments; it stops the
    work by raising, any exception it likes; ``None``: nothing to check). Nests: the previous
    check is back after the block."""
    token = _CHECK.set(check)
    try:
        yield
    finally:
        _CHECK.reset(token)


def check_cancelled() -> None:
    """Call the check installed by :func:`cancel_check` (nothing when none is): raises what it
    raises."""
    check = _CHECK.get()
    if check is not None:
        check()


__all__ = ["cancel_check", "check_cancelled"]
