"""The record filter: is a normalised text a Greek record worth keeping?"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import NamedTuple

from stoicheia.text.encode import Encoded, encode_text
from stoicheia.text.planes import Planes

__all__ = [
    "ENCODE_PIECE_CHARS",
    "NON_GREEK_KINDS",
    "greek_fraction",
    "NormalisedRecord",
    "encode_in_pieces",
    "encode_pieces",
    "normalise_record",
]

#: A text longer than this (characters) is encoded in pieces of at most about this many
#: characters, cut at a space outside every Leiden bracket: the encoder's working memory is
#: tens of bytes per character, so a 30 MB paragraph encoded whole peaked at 2.5 GB
#: (benchmarks/convert_memory.py); the planes of the pieces, joined, are those of the whole.
ENCODE_PIECE_CHARS = 1 << 16
_OPENERS = "[⟨⟦{⸢⌈⸤⌊˹(〈〚<\u2329"
_BRACKET = re.compile("[" + re.escape(_OPENERS + "]⟩⟧}⸣⌉⸥⌋˺)〉〛>\u232a") + "]")

NON_GREEK_KINDS = ("latin", "digit", "archaic", "other")


def greek_fraction(counts: Mapping[str, int], n_letters: int) -> float:
    """Share of Greek letters among the record's "content" characters, in ``[0, 1]``.

    ``n_letters / (n_letters + latin + digit + archaic + other)``, with the kinds read
    from ``counts`` (the ``dropped`` Counter of :func:`text_to_planes`). Spaces,
    punctuation, elision, format characters and combining marks are not in the
    denominator: they say nothing about the language. Returns 0.0 when the denominator
    is 0 (no content at all).
    """
    denom = n_letters + sum(int(counts.get(k, 0)) for k in NON_GREEK_KINDS)
    return n_letters / denom if denom else 0.0


class NormalisedRecord(NamedTuple):
    """Result of :func:`normalise_record`.

    ``leiden`` counts what the Leiden notation held (see
    :class:`stoicheia.text.encode.Encoded`).

    ``planes`` is ``None`` when the record is rejected; ``reject_reason`` is then
    ``"empty"`` (no Greek letter and no non-Greek content either) or ``"not_greek"``
    (greek_fraction < min_greek),
    else ``None``. ``dropped`` always holds the counts of dropped characters by kind.
    """

    planes: Planes | None
    dropped: collections.Counter
    reject_reason: str | None
    leiden: collections.Counter


def normalise_record(
    text: str, known: Mapping[str, bool] | None = None, min_greek: float = 0.95
) -> NormalisedRecord:
    """:func:`stoicheia.text.encode.encode_text` (Leiden read, lenient) plus the record filter.

    The letters of the record are its slots with ``lacuna == 0``: real-lacuna slots never
    count as letters, in the Greek fraction or anywhere else.

    Rejects with ``"empty"`` when the text has no Greek letter and nothing that counts
    against it either (only spaces, punctuation, marks: the :func:`greek_fraction`
    denominator is 0), and with ``"not_greek"`` when :func:`greek_fraction` is below
    ``min_greek`` (so a Latin or English record with no Greek letter at all is
    ``"not_greek"``, not ``"empty"``). ``min_greek`` is a fraction in ``[0, 1]``
    (``ValueError`` outside it).
    """
    if not 0.0 <= min_greek <= 1.0:
        raise ValueError(f"min_greek must be a fraction in [0, 1], got {min_greek}")
    planes, dropped, leiden = encode_in_pieces(text, known)
    n = planes.n_letters()
    if n == 0:  # rejected even with min_greek == 0 (a record of lacunae only has no text)
        non_greek = any(dropped.get(k, 0) for k in NON_GREEK_KINDS)
        return NormalisedRecord(None, dropped, "not_greek" if non_greek else "empty", leiden)
    if greek_fraction(dropped, n) < min_greek:
        return NormalisedRecord(None, dropped, "not_greek", leiden)
    return NormalisedRecord(planes, dropped, None, leiden)


def _cuts(text: str, size: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of consecutive pieces of ``text`` of at most about ``size`` characters,
    each cut at a space that stands outside every Leiden bracket and before a letter (or an
    opening bracket), so that no mark or punctuation begins a piece (the space itself belongs
    to no piece). A stretch with no such space within ``size`` (one bracket or one word longer
    than that) is cut at the next such space after it, else not at all."""

    def ok(p: int) -> bool:
        nxt = text[p + 1 : p + 2]
        if not (nxt.isalpha() or (nxt and nxt in _OPENERS)):
            return False
        signs = _BRACKET.findall(text, start, p)
        return not signs or signs[-1] not in _OPENERS  # Leiden brackets do not nest

    start, n = 0, len(text)
    while n - start > size:
        p = text.rfind(" ", start + 1, start + size)
        while p > start and not ok(p):
            p = text.rfind(" ", start + 1, p)
        if p <= start:  # none in the window: the next one after it
            p = text.find(" ", start + size)
            while p >= 0 and not ok(p):
                p = text.find(" ", p + 1)
            if p < 0:
                break
        yield start, p
        start = p + 1
    yield start, n


def _cuts_streamed(chunks: Iterable[str], size: int) -> Iterator[tuple[str, bool]]:
    """The pieces ``_cuts`` gives of the text that ``chunks`` hold one after the other, as
    ``(piece, is_last)``, reading the chunks only as far as the next cut needs: about ``size``
    characters past the piece's start (more only where the window holds no allowed space, up
    to the next one: one bracket or word longer than ``size``)."""

    def ok(p: int) -> bool:
        nxt = buf[p + 1 : p + 2]
        if not (nxt.isalpha() or (nxt and nxt in _OPENERS)):
            return False
        signs = _BRACKET.findall(buf, 0, p)
        return not signs or signs[-1] not in _OPENERS

    it = iter(chunks)
    buf, more = "", True

    def read() -> bool:
        nonlocal buf
        for chunk in it:
            if chunk:
                buf += chunk
                return True
        return False

    while True:
        while more and len(buf) <= size + 1:  # the window and the letter after it
            more = read()
        if len(buf) <= size:
            yield buf, True
            return
        p = buf.rfind(" ", 1, size)
        while p > 0 and not ok(p):
            p = buf.rfind(" ", 1, p)
        if p <= 0:  # none in the window: the next one after it, read as far as needed
            p = buf.find(" ", size)
            while True:
                while p >= 0 and p + 1 < len(buf) and not ok(p):
                    p = buf.find(" ", p + 1)
                if p >= 0 and p + 1 < len(buf):
                    break
                if not more or not (more := read()):
                    p = p if p >= 0 and ok(p) else -1
                    break
                if p < 0:
                    p = buf.find(" ", size)
            if p < 0:
                yield buf, True
                return
        piece, buf = buf[:p], buf[p + 1 :]
        yield piece, False


def encode_pieces(
    text: str | Iterable[str], known: Mapping[str, bool] | None = None, size: int | None = None
) -> Iterator[Encoded]:
    """:func:`~stoicheia.text.encode.encode_text` (lenient) of ``text`` piece by piece, in
    order: one :class:`~stoicheia.text.encode.Encoded` per piece of at most about ``size``
    characters (:data:`ENCODE_PIECE_CHARS`), cut at spaces outside every Leiden bracket
    (``_cuts``), so that only one piece's working memory exists at a time. The pieces' planes
    (uint8, ``(n,)`` each) read one after the other are those :func:`encode_in_pieces` joins;
    their counts summed are its counts. A text of at most ``size`` characters is one piece,
    encoded whole. ``text`` may also be given as chunks (an iterable of ``str`` read one
    after the other, e.g. a long paragraph read from its file a piece at a time): the same
    pieces, the chunks read only as far as the next piece needs. ``size=None``:
    :data:`ENCODE_PIECE_CHARS` (read at the call)."""
    size = ENCODE_PIECE_CHARS if size is None else size
    if isinstance(text, str):
        if len(text) <= size:
            yield encode_text(text, known)
            return
        cuts = list(_cuts(text, size))
        pieces: Iterable[tuple[str, bool]] = (
            (text[a:b], k + 1 == len(cuts)) for k, (a, b) in enumerate(cuts)
        )
    else:
        pieces = _cuts_streamed(text, size)
    for piece, last in pieces:
        if last:
            yield encode_text(piece, known)
        else:
            # a letter after the cut space, left out again: the piece's last letter ends a
            # word (or a sentence) as it does in the whole text, not the record
            enc = encode_text(piece + " α", known)
            yield Encoded(enc.planes[: len(enc.planes) - 1], enc.dropped, enc.leiden)


def encode_in_pieces(
    text: str, known: Mapping[str, bool] | None = None, size: int | None = None
) -> tuple[Planes, collections.Counter, collections.Counter]:
    """:func:`~stoicheia.text.encode.encode_text` (lenient) of ``text`` in pieces of at most
    about ``size`` characters (:data:`ENCODE_PIECE_CHARS`, :func:`encode_pieces`), so that the
    encoder's working memory is bounded by the piece, not the text: ``(planes, dropped,
    leiden)`` with the pieces' planes joined (uint8, ``(n,)`` each) and their counts summed.
    A text of at most ``size`` characters is encoded whole, as before. (``stoicheia convert``
    does not join them: :mod:`stoicheia.data.record_parts` cuts the record's parts as the
    pieces come.) ``size=None``: :data:`ENCODE_PIECE_CHARS` (read at the call)."""
    size = ENCODE_PIECE_CHARS if size is None else size
    if len(text) <= size:
        return tuple(encode_text(text, known))  # type: ignore[return-value]
    parts: list[Planes] = []
    dropped: collections.Counter = collections.Counter()
    leiden: collections.Counter = collections.Counter()
    for enc in encode_pieces(text, known, size):
        parts.append(enc.planes)
        dropped.update(enc.dropped)
        leiden.update(enc.leiden)
    return Planes.concat(parts), dropped, leiden
