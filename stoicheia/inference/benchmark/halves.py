"""The two halves of the inscription dev set: one chooses the fusion weights, the other reports.

A fusion weight chosen on the gaps it is then scored on flatters the fused decoder (the
choice fits the noise of those gaps). The benchmark therefore splits the inscription dev set
in two, **by inscription**, and:

* sweeps the fusion weights on the gaps of the **selection** half only, and stores the chosen
  weights (``--save-ngram``: ``ngram.npz`` beside the checkpoint);
* reports every decoder, fused included, on the gaps of the **report** half: its figures
  are the headline; the selection half's are given too, for comparison.

The unit is the inscription (the EpiDoc file, the text id before ``#``), as for the
bootstrap (:mod:`.bootstrap`): the texts and gaps of one inscription share its
formulae and its hand, so splitting them between the halves would let the selection half see
the report half's text.

The rule: the BLAKE2b hash (8 bytes) of ``"stoicheia-dev-half|" + inscription``, read as a
big-endian integer; even: selection, odd: report. It depends on the inscription's own name
only, so it is the same on every machine and run, an inscription never changes half when
others are added or removed, and the halves are about equal in size (each inscription falls
in either with probability 1/2: 271 inscriptions give 135 ± 8 in each, one standard
deviation).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from stoicheia.inference.benchmark.protocols import inscription_of

#: The halves, in the order they are reported.
HALVES = ("selection", "report")
SELECTION, REPORT = HALVES
#: What the halves are, in a sentence (for the JSON and the table).
RULE = (
    "by inscription (the text id before '#'): BLAKE2b-64 of 'stoicheia-dev-half|' + inscription, "
    "even: selection (chooses the fusion weights), odd: report (the headline figures)"
)


def half_of(text_id: str) -> str:
    """The half (``"selection"`` or ``"report"``) of the inscription of a dev text id or
    inscription name (module docstring): deterministic, independent of every other text."""
    digest = hashlib.blake2b(
        f"stoicheia-dev-half|{inscription_of(text_id)}".encode(), digest_size=8
    ).digest()
    return HALVES[int.from_bytes(digest, "big") % 2]


def split_halves(text_ids: Iterable[str]) -> dict[str, list[str]]:
    """The inscriptions of ``text_ids`` by half: ``{"selection": [...], "report": [...]}``,
    each sorted and without repeats (a text id or an inscription name per item)."""
    out: dict[str, set[str]] = {h: set() for h in HALVES}
    for t in text_ids:
        out[half_of(t)].add(inscription_of(t))
    return {h: sorted(v) for h, v in out.items()}


def selection_tasks(tasks: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
    """The tasks of the selection half, per protocol: ``{protocol: [task]}`` from ``{protocol:
    [task]}`` (:class:`~.protocols.Task`, by its ``text_id``), order kept. Only
    these choose the fusion weights."""
    return {p: [t for t in ts if half_of(t.text_id) == SELECTION] for p, ts in tasks.items()}


__all__ = ["HALVES", "REPORT", "RULE", "SELECTION", "half_of", "selection_tasks", "split_halves"]
