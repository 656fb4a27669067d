"""The words a corpus attests, as 64-bit hashes: the word list the parallels index keeps
(``words.npy``) and the restoration checks fills against.

A word is a run of letters between two recorded word ends (``boundary`` a word or sentence end;
a record's start, or a separator, counts as one before it): a run that touches a lacuna or a
letter whose boundary is unknown (scriptio continua) is no word of the list. Its hash is the
polynomial ``sum_t (c_t + 1) * M**t`` over its letter ids ``c_t`` (base letters: accents and
capitals do not count), in wrapping 64-bit arithmetic with an odd ``M``, so that the hash of
any stretch of a longer string follows from its prefix hashes (:func:`stretch_hashes`: ``M`` is
invertible modulo ``2**64``). Two different words of the few million kept collide with
probability about ``2**-64`` per pair.
"""

from __future__ import annotations

import numpy as np

from stoicheia.text import alphabet as A

#: the multiplier (odd, so invertible modulo 2**64)
M = np.uint64(0x9E3779B97F4A7C15)
#: its inverse modulo 2**64 (M * M_INV == 1)
M_INV = np.uint64(pow(int(M), -1, 1 << 64))
#: words longer than this are not kept (no Greek word is)
MAX_WORD = 40

_POW = np.ones(MAX_WORD + 1, dtype=np.uint64)
_POW_INV = np.ones(MAX_WORD + 1, dtype=np.uint64)
with np.errstate(over="ignore"):
    for _i in range(1, MAX_WORD + 1):
        _POW[_i] = _POW[_i - 1] * M
        _POW_INV[_i] = _POW_INV[_i - 1] * M_INV


def word_hash(letters: np.ndarray) -> int:
    """The hash (module docstring) of one word of letter ids ``letters`` (int, ``(n,)``,
    ``1 <= n <= MAX_WORD``) as a Python int."""
    x = np.asarray(letters, dtype=np.uint64) + np.uint64(1)
    with np.errstate(over="ignore"):
        return int((x * _POW[: len(x)]).sum(dtype=np.uint64))


def corpus_words(text: np.ndarray, boundary: np.ndarray) -> np.ndarray:
    """The sorted distinct hashes (uint64 ``(W,)``) of the words of an index's letters:
    ``text`` uint8 ``(N,)`` letter id + 1 (0 a separator or a lacuna slot), ``boundary`` int
    ``(N,)`` each slot's word boundary (``BOUNDARY_*``)."""
    t = np.asarray(text)
    b = np.asarray(boundary).astype(np.int64)
    n = len(t)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    letter = t > 0
    ends = letter & ((b == A.BOUNDARY_WORD) | (b == A.BOUNDARY_SENTENCE))
    if not ends.any():  # no recorded word end (scriptio continua, or no letter): no word
        return np.zeros(0, dtype=np.uint64)
    # a word starts after a separator or a recorded word end; it must run on over letters whose
    # boundary is internal and end at a recorded word end
    prev_end = np.concatenate([[True], ~letter[:-1] | ends[:-1]])
    starts = letter & prev_end
    inside_ok = letter & ((b == A.BOUNDARY_INTERNAL) | ends)
    run_id = np.cumsum(starts) - 1  # the word each slot belongs to (-1 before the first)
    first = np.flatnonzero(starts)
    pos = np.arange(n) - first[np.maximum(run_id, 0)]
    # a word is good when every slot of it is a letter with a known boundary, it ends with a
    # word end and is not too long: the slots from its start to its first end
    bad = ~inside_ok
    end_at = np.flatnonzero(ends)
    # for each start, the first end at or after it, and the first bad slot at or after it
    e = np.searchsorted(end_at, first)
    bad_at = np.flatnonzero(bad)
    bpos = np.searchsorted(bad_at, first)
    has_end = e < len(end_at)
    stop = np.where(has_end, end_at[np.minimum(e, len(end_at) - 1)], n)
    first_bad = np.where(bpos < len(bad_at), bad_at[np.minimum(bpos, len(bad_at) - 1)], n)
    length = stop - first + 1
    good = has_end & (first_bad > stop) & (length <= MAX_WORD)
    # the slots of good words: slot i of word r when pos[i] < length[r]
    member = (run_id >= 0) & letter
    r = np.maximum(run_id, 0)
    member &= good[r] & (pos < length[r])
    idx = np.flatnonzero(member)
    with np.errstate(over="ignore"):
        terms = (t[idx].astype(np.uint64)) * _POW[np.minimum(pos[idx], MAX_WORD)]
    sums = np.zeros(len(first), dtype=np.uint64)
    np.add.at(sums, r[idx], terms)
    return np.unique(sums[good])


def stretch_hashes(letters: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Uint64 hashes of the stretches ``letters[starts[i]:stops[i]]`` (int letter ids; each
    stretch 1 to ``MAX_WORD`` letters), from prefix hashes: a word list lookup of many
    candidate words of one string at once."""
    x = np.asarray(letters, dtype=np.uint64) + np.uint64(1)
    n = len(x)
    pw = np.ones(n + 1, dtype=np.uint64)
    pinv = np.ones(n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(1, n + 1):
            pw[i] = pw[i - 1] * M
            pinv[i] = pinv[i - 1] * M_INV
        pre = np.concatenate([[np.uint64(0)], np.cumsum(x * pw[:n], dtype=np.uint64)])
        s = np.asarray(starts, dtype=np.int64)
        e = np.asarray(stops, dtype=np.int64)
        return (pre[e] - pre[s]) * pinv[s]


__all__ = ["MAX_WORD", "corpus_words", "stretch_hashes", "word_hash"]
