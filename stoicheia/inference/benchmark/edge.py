"""The stone's-edge protocol of the restoration benchmark (issue 31): the first or the last word
of a dev text lost, given as ``[---]`` with text on one side only.

An inscription broken at its start or end has lost words whose width nobody can count: the
decoder must find the word and where it ends from one side's context alone (``restore`` fills
such a gap to a word's end, :attr:`~stoicheia.inference.restore.gaps.Gap.one_sided`). Each dev
text gives at most two tasks:

* ``first``: its first word replaced by ``[---]`` (``[---] κῖτε Βικτωρία …``);
* ``last``: its last word replaced by ``[---]`` (``… Θεοδοσίου τὸ [---]``).

The word is the first (last) whitespace-delimited token of the text, less punctuation
(``·``, ``,``, ``.``; Unicode category ``Po``) at its ends, which stays as printed. It is taken
only where it is intact in the edition: every character one of the letters read with
certainty outside every editorial bracket (no supplement, lacuna, expansion, uncertain letter
inside or against it), else the side is left out and counted ``edge_word_not_intact`` (a text
that starts with ``[---]`` has lost that edge already). Words of 1 to 10 base letters are kept,
as in the other protocols (longer: ``edge_word_length``); the figures come by length band
(1-3, 4-6, 7-10), so that the 4-10 letters the issue measured are the two upper bands. The task
must read as one-sided the way ``restore`` reads it (``edge_not_one_sided`` otherwise, e.g. a
word between an ``<lb/>`` and a lacuna), and a one-word text gives none
(``edge_no_letter_left``).

Scored as ``unknown``: top-1/5/20 exact match, CER and *length right* (the top-1 has the word's
number of letters), on base letters.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from stoicheia.inference.benchmark.protocols import (
    MAX_LETTERS,
    MIN_LETTERS,
    DevText,
    Task,
    base_letters,
    gap_task,
    intact_runs,
)

EDGES = ("first", "last")


def _strip_punctuation(text: str, a: int, b: int) -> tuple[int, int]:
    """``[a, b)`` less the punctuation (Unicode ``Po``: ``·,.;:``) at either end."""
    while a < b and unicodedata.category(text[a]) == "Po":
        a += 1
    while b > a and unicodedata.category(text[b - 1]) == "Po":
        b -= 1
    return a, b


def _intact(text: str, a: int, b: int, letters: dict[int, int]) -> bool:
    """Whether ``text[a:b]`` is made only of intact letters (``letters``: start -> end of each
    intact letter with its marks, :func:`~.protocols.intact_runs`)."""
    at = a
    while at < b:
        nxt = letters.get(at)
        if nxt is None:
            return False
        at = nxt
    return at == b and a < b


def edge_words(dev: DevText) -> dict[str, tuple[int, int] | None]:
    """``{"first": (start, end), "last": (start, end)}``: character offsets in ``dev.text`` of
    its first and last word (module docstring), ``None`` for a side whose word is not intact.
    A text without a token gives ``None`` on both sides."""
    text = dev.text
    tokens = [m.span() for m in re.finditer(r"\S+", text)]
    letters = {s: e for run in intact_runs(text) for s, e in run}
    out: dict[str, tuple[int, int] | None] = {}
    for side, token in zip(EDGES, (tokens[:1], tokens[-1:]), strict=True):
        if not token:
            out[side] = None
            continue
        a, b = _strip_punctuation(text, *token[0])
        out[side] = (a, b) if _intact(text, a, b, letters) else None
    return out


def edge_tasks(dev: DevText, counts: Counter | None = None) -> list[Task]:
    """The tasks of protocol ``edge`` for ``dev`` (module docstring): its first word, then its
    last, each as ``[---]`` (``known_width`` False, ``truth`` the word's base letters). Sides
    left out are counted in ``counts`` (``edge_word_not_intact``, ``edge_word_length``,
    ``edge_not_one_sided``, ``edge_no_letter_left``, ``edge_unreadable_with_the_gap``)."""
    from stoicheia.inference.restore.reading import read_input

    counts = counts if counts is not None else Counter()
    tasks = []
    for side, span in edge_words(dev).items():
        if span is None:
            counts["edge_word_not_intact"] += 1
            continue
        a, b = span
        truth = base_letters(dev.text[a:b])
        if not MIN_LETTERS <= len(truth) <= MAX_LETTERS:
            counts["edge_word_length"] += 1
            continue
        refused: Counter = Counter()
        task = gap_task("edge", dev.id, dev.text, a, b, "[---]", truth, False, refused)
        if task is None:  # counted apart from the span protocols' refusals of the same name
            counts.update({f"edge_{why}": n for why, n in refused.items()})
            continue
        try:
            gaps = [g for g in read_input(task.input).gaps if g.kind == "lacuna"]
        except ValueError:  # notation restore refuses beside the gap: no decoder could read it
            counts["edge_unreadable_with_the_gap"] += 1
            continue
        want = "right" if side == "first" else "left"
        if gaps[task.target].one_sided != want:
            counts["edge_not_one_sided"] += 1
            continue
        tasks.append(task)
    return tasks


__all__ = ["EDGES", "edge_tasks", "edge_words"]
