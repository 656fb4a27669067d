"""The letters of a filled text and their channels: each letter of the input or of a fill
(:class:`Letter`), the model inputs that hide what the auxiliary heads are to predict
(:func:`head_rows`), and each letter's ``(char, boundary, dia, cap, punct)`` from the input or
the heads (:func:`letter_channels`), with the marks Greek writes there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stoicheia.inference.restore.gaps import Gap, Item
from stoicheia.inference.restore.word_division import no_lone_consonants
from stoicheia.text import alphabet as A
from stoicheia.text.orthography import DIPHTHONGS, choose_marks


@dataclass
class Letter:
    """One letter of a filled text: ``char`` its letter id, ``gap`` the gap it fills (None: a
    letter of the input), ``changed`` an uncertain reading the model changed, ``values`` the
    input's planes values ``(chars, boundary, dia, cap, punct)`` (None: a restored letter),
    ``held`` a letter of an editor's supplement kept as printed."""

    char: int
    gap: int | None  # the gap the letter fills, None for a letter of the input
    changed: bool  # an uncertain reading the model changed
    values: tuple | None  # the input's planes values (None: a restored letter)
    held: bool = False  # a letter of an editor's supplement kept as printed


def held_reading(g: Gap, fill: np.ndarray) -> bool:
    """Whether ``fill`` (int symbols) is the editor's reading of the held supplement ``g``:
    only then do its letters print with the editor's marks (another fill of the same width,
    one of the gap's alternatives, is a restoration like any other)."""
    letters = [int(s) for s in fill if 0 <= s < A.NUM_LETTERS]
    return letters == [v[0] for v in g.read_values]


def letters_of(items: list[Item], gaps: list[Gap], fill: dict[int, np.ndarray]) -> list[Letter]:
    """The letters of ``items`` with each gap filled as in ``fill`` (int symbols; BLANK and
    MASK slots left out)."""
    out: list[Letter] = []
    for it in items:
        if it.gap is None:
            out.append(Letter(it.values[0], None, False, it.values))  # type: ignore[index]
            continue
        g = gaps[it.gap]
        for j, sym in enumerate(fill[it.gap]):
            if 0 <= sym < A.NUM_LETTERS:
                if g.held and held_reading(g, fill[it.gap]):
                    # a supplement kept as printed: its letters with their marks
                    out.append(Letter(int(sym), it.gap, False, g.read_values[j], held=True))
                elif g.kind == "uncertain":
                    out.append(Letter(int(sym), it.gap, int(sym) != it.values[0], it.values))  # type: ignore[index]
                else:
                    out.append(Letter(int(sym), it.gap, False, None))
    return out


def head_rows(letters: list[Letter], respace: bool) -> dict[str, np.ndarray]:
    """Model inputs ``(1, n)`` of ``letters``: a restored letter's channels UNKNOWN, a known
    letter's as it holds them (with ``respace``,
    :func:`~stoicheia.inference.restore.reading.respace_items` made the predicted ones UNKNOWN,
    the word division among them unless ``--accents`` keeps it; a held supplement's word
    division is hidden here)."""
    vals = [x.values for x in letters]
    hidden = [v is None for v in vals]
    return {
        "chars": np.array([x.char for x in letters], dtype=np.int64)[None, :],
        "boundary": np.array(
            [
                A.BOUNDARY_UNKNOWN if h or (respace and x.held) else v[1]
                for h, v, x in zip(hidden, vals, letters, strict=True)
            ],
            dtype=np.int64,
        )[None, :],
        "dia": np.array(
            [A.DIA_UNKNOWN if h else v[2] for h, v in zip(hidden, vals, strict=True)],
            dtype=np.int64,
        )[None, :],
        "punct": np.array(
            [A.PUNCT_UNKNOWN if h else v[4] for h, v in zip(hidden, vals, strict=True)],
            dtype=np.int64,
        )[None, :],
    }


def letter_channels(
    letters: list[Letter],
    gaps: list[Gap],
    out: dict[str, np.ndarray],
    r: int,
    respace: bool,
    text_end: bool = True,
) -> list[tuple[int, int, int, int, int]]:
    """Per letter ``(char, boundary, dia, cap, punct)``: the input's values for its letters, the
    heads' argmax for restored ones (the boundary after a gap's last letter as the input says;
    the marks the best of those Greek writes there, :func:`choose_marks`; no punctuation
    inside a word). With ``respace`` every letter goes through the heads but for what its
    values still give (:func:`~stoicheia.inference.restore.reading.respace_items`: the word
    division of the input with ``--accents``)."""
    n = len(letters)
    res = []
    free = []  # the break after letter i is the head's choice (word_division may undo it)
    typed = []  # the break after letter i is the input's (--accents): never moved
    for i, x in enumerate(letters):
        v = x.values
        head = respace or v is None
        kept_b = v is not None and v[1] != A.BOUNDARY_UNKNOWN and not x.held
        typed.append(respace and kept_b)
        if head:
            b = v[1] if kept_b else int(out["boundary"][r, i].argmax())  # type: ignore[index]
            last_of_gap = (
                x.gap is not None and v is None and (i == n - 1 or letters[i + 1].gap != x.gap)
            )
            if last_of_gap and (not respace or gaps[x.gap].end_boundary != A.BOUNDARY_UNKNOWN):
                b = gaps[
                    x.gap
                ].end_boundary  # the input says whether a word break follows the bracket
                head = False
            cap = int(out["cap"][r, i].argmax())
            # the input's marks and punctuation where it gives them (respace_items; after a gap,
            # the punctuation typed after its bracket), else the heads'; the marks are chosen
            # below, once every boundary is known
            d = -1 if v is None or v[2] == A.DIA_UNKNOWN else v[2]
            given = v[4] if v is not None else A.PUNCT_UNKNOWN
            if last_of_gap:
                given = gaps[x.gap].end_punct  # type: ignore[index]
            if given != A.PUNCT_UNKNOWN:
                pu = given
                if pu != A.PUNCT_NONE and b == A.BOUNDARY_INTERNAL:
                    b = A.BOUNDARY_WORD  # the input's punctuation ends a word
                head = head and pu == A.PUNCT_NONE
            else:
                pu = int(out["punct"][r, i].argmax())
                if b == A.BOUNDARY_INTERNAL:
                    pu = A.PUNCT_NONE  # punctuation ends a word: none inside one
        else:
            b, d, cap, pu = v[1], v[2], v[3], v[4]
            cap = cap if cap != A.CAP_UNKNOWN else int(out["cap"][r, i].argmax())
            if x.changed:
                d = -1  # a changed reading: marks for its new letter, not the typed ones
        if i == n - 1 and b == A.BOUNDARY_UNKNOWN:
            b = A.BOUNDARY_INTERNAL
        if i == n - 1 and text_end:
            b = A.BOUNDARY_SENTENCE  # the text ends here (no grave on its last word)
        res.append((x.char, b, d, cap, pu))
        free.append(head and not kept_b and i < n - 1)
    if respace:
        before = [c[1] for c in res]
        _typed_breathings_start_words(letters, res, typed)
        free = [f and c[1] == b0 for f, c, b0 in zip(free, res, before, strict=True)]
    # no restored letter left alone as a word Greek does not write ([ς π]: word_division)
    no_lone_consonants(res, [x.values is None for x in letters], free, out["boundary"][r, :n])
    planes = np.array(res, dtype=np.int64).reshape(-1, 5)
    if (planes[:, 2] < 0).any():
        dia = choose_marks(
            planes[:, 0], planes[:, 1], planes[:, 4], planes[:, 2], out["dia"][r, :n, : A.NUM_DIA]
        )
        res = [(c, b, int(d), cap, pu) for (c, b, _, cap, pu), d in zip(res, dia, strict=True)]
    return res


def _typed_breathings_start_words(
    letters: list[Letter], res: list[tuple], typed: list[bool]
) -> None:
    """With ``respace``: a typed breathing starts a word (``δι’ ὅτι`` must not become
    ``διὅτι``): the letter before the word ends one (in place on ``res``), unless the input's
    own word division is kept there (``typed``, ``--accents``)."""
    for i, x in enumerate(letters):
        v = x.values
        if i == 0 or v is None or v[2] >= A.NUM_DIA or not A.dia_fields(v[2])[1]:
            continue
        start = i
        if i >= 2 and A.LETTERS[res[i - 1][0]] + A.LETTERS[x.char] in DIPHTHONGS:
            start = i - 1  # αἰ: the word starts at the diphthong's first vowel
        if start > 0 and res[start - 1][1] == A.BOUNDARY_INTERNAL and not typed[start - 1]:
            c, _, d, cap, pu = res[start - 1]
            res[start - 1] = (c, A.BOUNDARY_WORD, d, cap, pu)


__all__ = ["Letter", "head_rows", "held_reading", "letter_channels", "letters_of"]
