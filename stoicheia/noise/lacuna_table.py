"""What real editions show of lost letters: the table the ``lacuna`` noise draws from.

Measured by ``benchmarks/lacunae.py --table`` (2026-12-05) on the EpiDoc corpora (I.Sicily,
IOSPE, IGCyr, Cretan Institutional Inscriptions, without the inscription dev set of digit 4;
docs/noise.md): a *lost stretch* is the letters of ``<supplied reason="lost">`` and the
``<gap reason="lost">`` next to them. Counts, not probabilities, so the figures can be checked
against the benchmark's output.
"""

from __future__ import annotations

#: Width buckets in letters (:func:`bucket_bounds`: ``(low, high)``, inclusive); the editions'
#: few stretches wider than 60 letters are counted in the last, and the noise draws at most 60.
WIDTH_BUCKETS = ("1", "2", "3", "4", "5", "6-7", "8-10", "11-15", "16-20", "21-30", "31-60")
_BOUNDS = (
    (1, 1),
    (2, 2),
    (3, 3),
    (4, 4),
    (5, 5),
    (6, 7),
    (8, 10),
    (11, 15),
    (16, 20),
    (21, 30),
    (31, 60),
)


def width_bucket(width: int) -> str:
    """The bucket name of a stretch of ``width`` letters (>= 1; past 60: the last bucket)."""
    for name, (lo, hi) in zip(WIDTH_BUCKETS, _BOUNDS, strict=True):
        if lo <= width <= hi:
            return name
    return WIDTH_BUCKETS[-1]


def bucket_bounds() -> tuple[tuple[int, int], ...]:
    """``(low, high)`` letters of each bucket of :data:`WIDTH_BUCKETS`, in order."""
    return _BOUNDS


#: Lost stretches of a stated width, by bucket of :data:`WIDTH_BUCKETS` (``benchmarks/
#: lacunae.py --table``, 2026-12-05: 7,726 stretches of 3,710 texts).
WIDTH_COUNTS = {
    "1": 2242,
    "2": 1310,
    "3": 796,
    "4": 571,
    "5": 450,
    "6-7": 612,
    "8-10": 502,
    "11-15": 432,
    "16-20": 295,
    "21-30": 304,
    "31-60": 212,
}
#: Stretches by kind: all letters supplied by the editor, a gap of exact width, of estimated
#: width (``precision="low"``, a range), of unknown extent (``extent="unknown"``).
KIND_COUNTS = {"supplied": 6573, "exact": 756, "about": 397, "unknown": 6316}
#: Stretches off the text's edges (holding neither its first nor its last word) by their place
#: in the word: whole words; from a word's start to inside a word; from inside a word to a
#: word's end; starting and ending inside words.
PLACE_COUNTS = {"whole words": 1026, "word start": 2498, "word end": 2449, "inside": 4296}
#: Texts whose first word is (partly) lost, whose last word is, and all texts: stones break
#: at their edges (49 % each, against 18 % of all letters lost).
TEXTS_FIRST_LOST, TEXTS_LAST_LOST, TEXTS = 1800, 1809, 3710
