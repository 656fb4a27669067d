"""Contamination, measured: dev texts with a near-duplicate among the training records.

The inscription dev set is held out by inscription number (``--inscription-dev-digit``), but
one text can stand under two numbers (the same stamp on many tiles, two copies of a
dedication, a decree sent to several cities), and a re-edition of an inscription can carry a
number of its own. A dev text whose twin the model trained on is not an unseen text. This
module finds those twins, lists them, and the benchmark reports its figures with and without
the dev texts that have one (:mod:`.views`).

**What is compared.** The base letters (:func:`~.protocols.base_letters` for the dev
texts, as printed, supplements included; the letter plane of the shards for the training
records, lacunae left out), in scriptio continua, as sets of overlapping **3-letter
shingles** (a text shorter than 3 letters is one shingle). Two texts are twins when the
Jaccard similarity of their shingle sets is at least :data:`TWIN_THRESHOLD` (0.75).

**Why 3 letters and 0.75** (measured on I.Sicily, ``docs/measuring-restoration.md``): the
same decree sent to two cities (ISic030294/ISic030295, 577 letters, the city's name and a
clause changed) scores 0.87, a re-edition of a lead tablet under a new number
(ISic030004/ISic031001, spelling σ/σσ and a few readings changed) 0.86-0.87, the same
dedication on two stones (ISic003544/ISic003545) 1.0; two epitaphs sharing a formula but not
their names (ISic003554/ISic001312, "... ζῶσα ἑαυτῇ ἐποίησεν καὶ τοῖς ἰδίοις πᾶσιν") score
0.66 at most, and every other formulaic pair lower. 0.75 lies between the two groups. Longer
shingles separate them less (5 letters: twins 0.75-0.82, the formula pair 0.65), since every
changed letter of a re-edition breaks more shingles.

**How they are found** (Broder 1997, "On the resemblance and containment of documents";
the LSH banding of Leskovec, Rajaraman & Ullman, "Mining of Massive Datasets", ch. 3): each
dev text's shingles get a MinHash signature (``datasketch.MinHash``, 128 permutations) in a
``datasketch.MinHashLSH`` index at the threshold; each training piece is hashed the same way
and queried; each candidate pair the index returns is kept when the exact Jaccard of the two
shingle sets reaches the threshold (the index may return a few pairs below it, never listed).
The training pieces are:

* every training record short enough to reach the threshold against some dev text (at most
  ``longest dev text / threshold`` letters), whole: an inscription, a treebank sentence, a
  piece of a literary work as the shards cut it. Hashing all of them (35,568 records, 40 M
  letters in the demo's shards) takes minutes on 2 cores, so a record of 30 letters or more is
  hashed only when at least 30 % of its 10-letter runs occur somewhere in the dev set (a
  numpy look-up; 12,663 of the demo's records share one such run, 1,605 are hashed, the
  short ones included, and the search takes about 2 minutes, most of it reading). The
  twins found on I.Sicily share 73 % (the re-edition) to 100 % of their runs; a text at
  Jaccard 0.75 on 3-letter shingles that shares under 30 % of its 10-letter runs would need a
  changed letter about every tenth letter, which no re-edition found here has;
* in every longer training record (a literary work, a long list), the stretches that share
  10-letter runs with the dev set (consecutive shared runs less than 20 letters apart form one
  stretch), so that a dev text quoted inside a long record is compared with the quotation, not
  the whole work; only such stretches are hashed. A dev text of fewer than 10 letters is
  sought in short records only. A short record is compared whole, never by stretches: a
  stretch ends where the shared letters end, so it would leave out the name that tells two
  epitaphs of one formula apart and make them look like twins (ISic003554 against ISic001312:
  0.79 on the stretch, 0.66 on the whole records).

The training records are every record of the ``train`` split of every tier of the shards
(what the model and the n-gram trained on).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from stoicheia.data.twins import NUM_PERM, SHINGLE, jaccard, minhash, shingles
from stoicheia.inference.benchmark.defaults import TWIN_THRESHOLD
from stoicheia.text import alphabet as A

log = logging.getLogger(__name__)

#: letters of the runs a long record must share with the dev set to be looked at (seeds)
SEED_LETTERS = 10
#: shared runs closer than this (letters) belong to one stretch
STRETCH_GAP = 20
#: records of fewer letters are always hashed; longer ones only when at least
#: MIN_SEED_SHARE of their 10-letter runs occur in the dev set
SHORT_RECORD = 30
MIN_SEED_SHARE = 0.3


@dataclass(frozen=True)
class Twin:
    """A dev text and a training piece that are near-duplicates. ``dev``: the dev text id;
    ``tier``/``work``/``record``: the training record; ``start``/``end``: the letters of the
    record compared (base letters, 0-based, end exclusive; the whole record or a stretch);
    ``jaccard``: the exact Jaccard similarity of the 3-letter shingle sets, in [0, 1];
    ``dev_letters``/``twin_letters``: the first 60 base letters of each, for a reader."""

    dev: str
    tier: str
    work: str
    record: str
    start: int
    end: int
    jaccard: float
    dev_letters: str
    twin_letters: str


def letter_ids(letters: str) -> np.ndarray:
    """Base letters (``"τονδημον"``) -> uint8 letter ids of :data:`stoicheia.text.alphabet.LETTERS`.
    Raises ``ValueError`` naming a character that is not a base letter."""
    index = {c: i for i, c in enumerate(A.LETTERS)}
    try:
        return np.array([index[c] for c in letters], dtype=np.uint8)
    except KeyError as err:
        raise ValueError(f"letter_ids: {err.args[0]!r} is not a base letter") from None


def _runs(ids: np.ndarray, n: int) -> np.ndarray:
    """int64 codes of every run of ``n`` letters of ``ids`` (``(len - n + 1,)``; empty if
    shorter)."""
    a = np.asarray(ids, dtype=np.int64)
    if len(a) < n:
        return np.zeros(0, dtype=np.int64)
    window = np.lib.stride_tricks.sliding_window_view(a, n)
    return window @ (A.NUM_LETTERS ** np.arange(n - 1, -1, -1, dtype=np.int64))


def seed_share(ids: np.ndarray, seeds: np.ndarray) -> float:
    """The share of the runs of :data:`SEED_LETTERS` letters of ``ids`` whose code is in the
    sorted int64 ``seeds`` (0 for a text shorter than one run)."""
    codes = _runs(ids, SEED_LETTERS)
    return float(np.isin(codes, seeds).mean()) if len(codes) else 0.0


def stretches(ids: np.ndarray, seeds: np.ndarray) -> list[tuple[int, int]]:
    """The stretches of ``ids`` that share runs of :data:`SEED_LETTERS` letters with the
    sorted int64 run codes ``seeds`` (module docstring): ``[(start, end)]`` in letters, runs
    less than :data:`STRETCH_GAP` letters apart merged."""
    codes = _runs(ids, SEED_LETTERS)
    if not len(codes) or not len(seeds):
        return []
    hit = np.flatnonzero(np.isin(codes, seeds, assume_unique=False))
    if not len(hit):
        return []
    breaks = np.flatnonzero(np.diff(hit) >= STRETCH_GAP)
    starts = np.concatenate([[hit[0]], hit[breaks + 1]])
    ends = np.concatenate([hit[breaks], [hit[-1]]]) + SEED_LETTERS
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


def find_twins(
    dev: Sequence[tuple[str, np.ndarray]],
    training: Iterable[tuple[str, str, str, np.ndarray]],
    threshold: float = TWIN_THRESHOLD,
    num_perm: int = NUM_PERM,
    counts: dict | None = None,
) -> list[Twin]:
    """The near-duplicates (module docstring) between ``dev`` texts (``(id, uint8 letter ids)``)
    and ``training`` records (``(tier, work, record id, uint8 letter ids)``, lacunae left
    out), best first per dev text: one :class:`Twin` per dev text and training record (its
    best piece). ``counts`` (a dict) receives ``records``, ``letters``, ``skipped`` (records
    not hashed: too few runs shared with the dev set), ``pieces`` (hashed) and
    ``candidates`` (pairs the index returned). Raises ``ValueError`` for a threshold outside
    (0, 1]."""
    from datasketch import MinHashLSH

    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"twin threshold {threshold}: give a Jaccard similarity in (0, 1]")
    counts = counts if counts is not None else {}
    for key in ("records", "letters", "skipped", "pieces", "candidates"):
        counts.setdefault(key, 0)
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=(0.1, 0.9))
    dev_sets: dict[str, set[bytes]] = {}
    dev_ids: dict[str, np.ndarray] = {}
    for text_id, ids in dev:
        s = shingles(ids)
        if s and text_id not in dev_sets:
            dev_sets[text_id] = s
            dev_ids[text_id] = np.asarray(ids, dtype=np.uint8)
            lsh.insert(text_id, minhash(s, num_perm))
    if not dev_sets:
        return []
    longest = max(len(ids) for ids in dev_ids.values())
    whole_limit = int(longest / threshold) + SHINGLE
    seeds = np.unique(np.concatenate([_runs(ids, SEED_LETTERS) for ids in dev_ids.values()]))
    best: dict[tuple[str, str, str], Twin] = {}
    for tier, work, record, ids in training:
        ids = np.asarray(ids, dtype=np.uint8)
        counts["records"] += 1
        counts["letters"] += len(ids)
        if len(ids) > whole_limit:
            pieces = stretches(ids, seeds)
        elif len(ids) < SHORT_RECORD or seed_share(ids, seeds) >= MIN_SEED_SHARE:
            pieces = [(0, len(ids))] if len(ids) else []
        else:
            counts["skipped"] += 1
            continue
        for start, end in dict.fromkeys(pieces):
            piece = shingles(ids[start:end])
            if not piece:
                continue
            counts["pieces"] += 1
            for text_id in lsh.query(minhash(piece, num_perm)):
                counts["candidates"] += 1
                j = jaccard(dev_sets[text_id], piece)
                key = (text_id, tier, record)
                if j >= threshold and (key not in best or j > best[key].jaccard):
                    best[key] = Twin(
                        text_id,
                        tier,
                        work,
                        record,
                        int(start),
                        int(end),
                        round(j, 4),
                        "".join(A.LETTERS[i] for i in dev_ids[text_id][:60]),
                        "".join(A.LETTERS[i] for i in ids[start : min(end, start + 60)]),
                    )
    order = {t: i for i, (t, _) in enumerate(dev)}
    return sorted(best.values(), key=lambda t: (order.get(t.dev, 0), -t.jaccard, t.record))


def training_records(
    shard_root: str | Path,
) -> Iterator[tuple[str, str, str, np.ndarray]]:
    """Every record of the ``train`` split of every tier of the shards at ``shard_root``:
    ``(tier, work, record id, uint8 letter ids)``, lacuna slots left out. Raises
    ``FileNotFoundError`` when no tier has a ``train`` split."""
    from stoicheia.data.eval_sets import local_val_dataset
    from stoicheia.data.shards import decode_planes

    root = Path(shard_root)
    tiers = sorted(p.name for p in root.iterdir() if (p / "train" / "index.json").exists())
    if not tiers:
        raise FileNotFoundError(
            f"{root}: no train split in any tier to look for twins in; give the output folder "
            "of `stoicheia convert`"
        )
    for tier in tiers:
        ds = local_val_dataset(str((root / tier / "train").resolve()))
        for i in range(ds.num_samples):
            s = ds.get_item(i)
            chars = decode_planes(s).chars
            yield tier, str(s["work"]), str(s["id"]), chars[chars < A.NUM_LETTERS]


def measure(
    dev_texts: Sequence,
    shard_root: str | Path,
    threshold: float = TWIN_THRESHOLD,
) -> dict:
    """Contamination of the dev set (module docstring): ``dev_texts`` are the benchmark's
    :class:`~.protocols.DevText` records; the training records are read from the
    shards (:func:`training_records`). Returns ``{"threshold", "shingle", "num_perm",
    "method", "training": {"records", "letters", "pieces", "candidates"}, "dev_texts": n,
    "dev_texts_with_twin": [ids], "inscriptions_with_twin": n, "twins": [Twin as dict]}``."""
    from stoicheia.inference.benchmark.protocols import base_letters, inscription_of

    dev = [(t.id, letter_ids(base_letters(t.text))) for t in dev_texts]
    counts: dict = {}
    twins = find_twins(dev, training_records(shard_root), threshold, counts=counts)
    with_twin = list(dict.fromkeys(t.dev for t in twins))
    log.info(
        "[benchmark] contamination: %d of %d dev texts have a training twin (Jaccard >= %g)",
        len(with_twin),
        len(dev),
        threshold,
    )
    return {
        "threshold": threshold,
        "shingle": SHINGLE,
        "num_perm": NUM_PERM,
        "method": "MinHash LSH (datasketch) over 3-letter shingles of the base letters, "
        "pairs kept at an exact Jaccard >= threshold",
        "training": counts,
        "dev_texts": len(dev),
        "dev_texts_with_twin": with_twin,
        "inscriptions_with_twin": len({inscription_of(t) for t in with_twin}),
        "twins": [asdict(t) for t in twins],
    }


def twin_lines(contamination: dict) -> list[str]:
    """``contamination.tsv``: a header and one tab-separated line per twin (dev text, training
    tier, work, record, letters compared, Jaccard, the first letters of each)."""
    head = "dev_text\ttier\twork\trecord\tstart\tend\tjaccard\tdev_letters\ttwin_letters"
    rows = [
        "\t".join(
            str(t[k])
            for k in (
                "dev",
                "tier",
                "work",
                "record",
                "start",
                "end",
                "jaccard",
                "dev_letters",
                "twin_letters",
            )
        )
        for t in contamination.get("twins", [])
    ]
    return [head, *rows]


def summary_line(contamination: dict) -> str:
    """One line: how many dev texts (and inscriptions) have a training twin, at what threshold."""
    c = contamination
    return (
        f"contamination: {len(c['dev_texts_with_twin']):,} of {c['dev_texts']:,} dev texts "
        f"({c['inscriptions_with_twin']:,} inscriptions) have a near-duplicate among the "
        f"{c['training']['records']:,} training records (MinHash LSH, 3-letter shingles, "
        f"Jaccard >= {c['threshold']:g}); listed in contamination.tsv"
    )


__all__ = [
    "NUM_PERM",
    "SHINGLE",
    "TWIN_THRESHOLD",
    "Twin",
    "find_twins",
    "jaccard",
    "letter_ids",
    "measure",
    "seed_share",
    "shingles",
    "stretches",
    "summary_line",
    "training_records",
    "twin_lines",
]
