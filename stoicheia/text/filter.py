"""The record filter: is a normalised text a Greek record worth keeping?"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from typing import NamedTuple

from stoicheia.text.encode import encode_text
from stoicheia.text.planes import Planes

__all__ = ["NON_GREEK_KINDS", "greek_fraction", "NormalisedRecord", "normalise_record"]

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
    planes, dropped, leiden = encode_text(text, known)
    n = planes.n_letters()
    if n == 0:  # rejected even with min_greek == 0 (a record of lacunae only has no text)
        non_greek = any(dropped.get(k, 0) for k in NON_GREEK_KINDS)
        return NormalisedRecord(None, dropped, "not_greek" if non_greek else "empty", leiden)
    if greek_fraction(dropped, n) < min_greek:
        return NormalisedRecord(None, dropped, "not_greek", leiden)
    return NormalisedRecord(planes, dropped, None, leiden)
