"""A letter n-gram language model: the baseline that the network's restorations are read against.

Interpolated Witten-Bell smoothing (Witten & Bell 1991; the recursive form in Chen & Goodman
1998, "An Empirical Study of Smoothing Techniques for Language Modeling", eq. 16):

    P(w | h) = (c(h w) + N1+(h .) * P(w | h')) / (c(h) + N1+(h .))

where ``h'`` is ``h`` without its oldest letter, ``c(h w)`` the count of the n-gram, ``c(h)``
the count of the history followed by any letter, ``N1+(h .)`` the number of distinct letters
seen after ``h``. A history never seen (``c(h) = 0``) falls back to ``P(w | h')``; the recursion
ends at the add-one unigram ``P(w) = (c(w) + 1) / (N + 24)``. Symbols are the 24 letters (ids
0..23) and a record-start symbol (24), which only ever appears in histories.

Counts are kept per order as sorted ``int64`` codes (``code = h * 25 + w``, base 25) and looked up
with ``np.searchsorted``, so the model trains on tens of millions of letters in seconds.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from stoicheia.publish import atomic_write
from stoicheia.text.alphabet import LETTERS, NUM_LETTERS

BOS = NUM_LETTERS  #: record-start symbol in histories
_BASE = NUM_LETTERS + 1


class LetterNgram:
    """Letter n-gram model of order ``order`` (>= 1; 1 = unigram) over letter ids 0..23.

    Build with :meth:`fit`. ``log_probs(histories)`` scores the 24 letters after each history.
    Raises ``ValueError`` for an order outside 1..6 (codes must fit in int64 comfortably).
    """

    def __init__(self, order: int = 5) -> None:
        if not 1 <= order <= 6:
            raise ValueError(f"n-gram order {order} must be in 1..6")
        self.order = order
        self.letters = 0
        self.unigram = np.zeros(NUM_LETTERS, dtype=np.int64)
        # per order m >= 2: sorted n-gram codes and counts; history codes, c(h), N1+(h .)
        self._grams: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._hist: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def fit(self, sequences: Iterable[np.ndarray]) -> LetterNgram:
        """Count every n-gram of every sequence (uint8 ``chars`` ids, shape ``(n,)``; each is one
        record, preceded by ``order - 1`` record-start symbols). A non-letter id (MASK at a real
        lacuna of the source) cuts the record: the text after it starts afresh, so no n-gram
        spans a lacuna. Returns ``self``."""
        pad = self.order - 1
        chunks = []
        for seq in sequences:
            seq = np.asarray(seq, dtype=np.int64)
            cuts = np.flatnonzero(seq >= NUM_LETTERS)
            for piece in np.split(seq, cuts) if cuts.size else [seq]:
                piece = piece[piece < NUM_LETTERS]
                if piece.size:
                    chunks.append(np.concatenate([np.full(pad, BOS, dtype=np.int64), piece]))
        if not chunks:
            raise ValueError("LetterNgram.fit: no letters to count")
        lengths = np.array([len(c) for c in chunks])
        flat = np.concatenate(chunks)
        # position of each letter (not BOS padding) in flat
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        is_letter = np.ones(flat.size, dtype=bool)
        for s in starts:
            is_letter[s : s + pad] = False
        idx = np.flatnonzero(is_letter)
        self.letters = int(idx.size)
        self.unigram = np.bincount(flat[idx], minlength=NUM_LETTERS)[:NUM_LETTERS].astype(np.int64)
        for m in range(2, self.order + 1):
            code = np.zeros(idx.size, dtype=np.int64)
            for j in range(m - 1, -1, -1):  # oldest letter is the most significant digit
                code = code * _BASE + flat[idx - j]
            grams, counts = np.unique(code, return_counts=True)
            self._grams[m] = (grams, counts.astype(np.int64))
            hist = grams // _BASE
            h, first, n1 = np.unique(hist, return_index=True, return_counts=True)
            ch = np.add.reduceat(counts, first).astype(np.int64)
            self._hist[m] = (h, ch, n1.astype(np.int64))
        return self

    def extend(self, sequences: Iterable[np.ndarray]) -> LetterNgram:
        """Add the counts of ``sequences`` (as :meth:`fit` takes them) to this model's: the
        n-gram counts are sums over records, so the result is the model :meth:`fit` would give
        on the old records and the new ones together (tested), without the old records.
        Returns ``self``. Raises ``ValueError`` when ``sequences`` hold no letter."""
        new = LetterNgram(self.order).fit(sequences)
        self.letters += new.letters
        self.unigram = self.unigram + new.unigram
        for m in range(2, self.order + 1):
            grams = np.concatenate([self._grams[m][0], new._grams[m][0]])
            counts = np.concatenate([self._grams[m][1], new._grams[m][1]])
            merged, where = np.unique(grams, return_inverse=True)
            summed = np.bincount(where, weights=counts, minlength=merged.size).astype(np.int64)
            self._grams[m] = (merged, summed)
            h, first, n1 = np.unique(merged // _BASE, return_index=True, return_counts=True)
            ch = np.add.reduceat(summed, first).astype(np.int64) if summed.size else summed
            self._hist[m] = (h, ch, n1.astype(np.int64))
        return self

    def log_probs(self, histories: np.ndarray) -> np.ndarray:
        """Natural-log probabilities of the 24 letters after each history.

        ``histories``: int ``(B, order - 1)``, oldest first (use :data:`BOS` before the start
        of the record). Returns float64 ``(B, 24)``; each row sums to 1 in probability.
        """
        histories = np.asarray(histories, dtype=np.int64)
        if histories.ndim != 2 or histories.shape[1] != self.order - 1:
            raise ValueError(f"histories must be (B, {self.order - 1}), got {histories.shape}")
        B = histories.shape[0]
        p = np.broadcast_to(
            (self.unigram + 1.0) / (self.letters + NUM_LETTERS), (B, NUM_LETTERS)
        ).copy()
        letters = np.arange(NUM_LETTERS, dtype=np.int64)
        for m in range(2, self.order + 1):
            h = np.zeros(B, dtype=np.int64)
            for j in range(m - 1):
                h = h * _BASE + histories[:, self.order - m + j]
            hs, ch, n1 = self._hist[m]
            k = np.searchsorted(hs, h).clip(max=max(0, hs.size - 1))
            seen = (hs.size > 0) & (hs[k] == h) if hs.size else np.zeros(B, dtype=bool)
            c_h = np.where(seen, ch[k] if hs.size else 0, 0).astype(np.float64)
            n_h = np.where(seen, n1[k] if hs.size else 0, 0).astype(np.float64)
            grams, counts = self._grams[m]
            codes = h[:, None] * _BASE + letters[None, :]
            g = np.searchsorted(grams, codes).clip(max=max(0, grams.size - 1))
            c_hw = (
                np.where(grams[g] == codes, counts[g], 0).astype(np.float64)
                if grams.size
                else np.zeros_like(p)
            )
            denom = c_h + n_h
            p = np.where(
                seen[:, None], (c_hw + n_h[:, None] * p) / np.where(denom > 0, denom, 1)[:, None], p
            )
        return np.log(p)

    def topk_fill(
        self, left: np.ndarray, width: int, right: np.ndarray, k: int = 5, beam: int = 64
    ) -> list[tuple[str, float]]:
        """The ``k`` most likely fillings of a lacuna of ``width`` letters between the known
        letters ``left`` (uint8 ids before it; the record start is assumed before them) and
        ``right`` (after it).

        Beam search (``max(beam, k)`` candidates) over the lacuna's letters left to right, then
        every candidate is rescored with the log-probability of the first ``order - 1`` letters
        of ``right``. Returns ``[(letters, log-prob in nats), ...]`` sorted by decreasing
        log-probability, at most ``k`` distinct strings.
        """
        n1 = self.order - 1
        left = np.asarray(left, dtype=np.int64)
        right = np.asarray(right, dtype=np.int64)
        gaps = np.flatnonzero(left >= NUM_LETTERS)
        if (
            gaps.size
        ):  # known text starts after the last non-letter (a lacuna): as at a record start
            left = left[gaps[-1] + 1 :]
        gaps = np.flatnonzero(right >= NUM_LETTERS)
        if gaps.size:
            right = right[: gaps[0]]
        padded = np.concatenate([np.full(n1, BOS, dtype=np.int64), left])
        ctx = padded[len(padded) - n1 :]
        seqs = np.zeros((1, 0), dtype=np.int64)
        scores = np.zeros(1)
        for _ in range(width):
            full = np.concatenate([np.broadcast_to(ctx, (len(seqs), n1)), seqs], axis=1)
            lp = self.log_probs(full[:, full.shape[1] - n1 :])
            cand = scores[:, None] + lp
            best = np.argsort(-cand, axis=None, kind="stable")[: max(beam, k)]
            rows, letters = np.divmod(best, NUM_LETTERS)
            seqs = np.concatenate([seqs[rows], letters[:, None]], axis=1)
            scores = cand.reshape(-1)[best]
        tail = right[:n1]
        full = np.concatenate([np.broadcast_to(ctx, (len(seqs), n1)), seqs], axis=1)
        for w in tail:
            lp = self.log_probs(full[:, full.shape[1] - n1 :])
            scores = scores + lp[:, w]
            full = np.concatenate([full, np.full((len(full), 1), w)], axis=1)
        order = np.argsort(-scores, kind="stable")[:k]
        return [(ids_to_letters(seqs[i]), float(scores[i])) for i in order]


def ids_to_letters(ids: np.ndarray) -> str:
    """Letter ids 0..23 as a string of lower-case letters."""
    return "".join(LETTERS[int(i)] for i in ids)


def save_ngram(model: LetterNgram, path: str | Path, **meta: object) -> None:
    """Write ``model``'s counts to ``path`` (numpy ``.npz``) with ``meta`` (JSON-able facts: its
    fusion weight, what it was trained on) for :func:`load_ngram`. Written to a temporary file
    then renamed, so a killed run leaves no half file."""
    path = Path(path)
    arrays: dict[str, np.ndarray] = {
        "order": np.array(model.order),
        "letters": np.array(model.letters),
        "unigram": model.unigram,
    }
    for m, (grams, counts) in model._grams.items():
        arrays[f"grams{m}"], arrays[f"counts{m}"] = grams, counts
        h, ch, n1 = model._hist[m]
        arrays[f"hist{m}"], arrays[f"ch{m}"], arrays[f"n1{m}"] = h, ch, n1
    arrays["meta"] = np.array(json.dumps(meta))
    buf = io.BytesIO()  # built in memory: numpy's zip writer never meets the failing disk
    np.savez_compressed(buf, **arrays)
    atomic_write(path, buf.getvalue())  # a full disk: WriteError, no half file


def load_ngram(path: str | Path) -> tuple[LetterNgram, dict]:
    """The n-gram and the facts :func:`save_ngram` wrote to ``path``. Raises ``ValueError``
    naming the file when it is not such a file (unreadable, a key missing)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            model = LetterNgram(int(z["order"]))
            model.letters = int(z["letters"])
            model.unigram = z["unigram"].astype(np.int64)
            for m in range(2, model.order + 1):
                model._grams[m] = (z[f"grams{m}"], z[f"counts{m}"])
                model._hist[m] = (z[f"hist{m}"], z[f"ch{m}"], z[f"n1{m}"])
            meta = json.loads(str(z["meta"]))
    except KeyError as err:  # numpy says "'order' is not a file in the archive"
        raise ValueError(
            f"{path}: not an n-gram file written by `stoicheia benchmark --save-fusion` (it has "
            f"no '{str(err.args[0]).split()[0] if err.args else 'order'}' array); write it "
            "again, or leave it out (restore then uses the model alone)"
        ) from None
    except (OSError, ValueError) as err:
        raise ValueError(
            f"{path}: not an n-gram file written by `stoicheia benchmark --save-fusion` ({err}); "
            "write it again, or leave it out (restore then uses the model alone)"
        ) from None
    return model, meta
