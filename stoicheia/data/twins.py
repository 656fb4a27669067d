"""Twins among inscriptions: the same text under two numbers, found before the splits are drawn.

One text can stand under two numbers: a re-edition under a new number (ISic030004/ISic031001),
one decree sent to several cities (ISic030294/ISic030295), the same dedication on two stones,
a Cretan treaty in two copies, an SEG re-publication beside the corpus's own edition. When one
twin lands in the inscription dev set and the other in ``train``, the dev text is no longer
unseen. :func:`twin_groups` finds the twins of a set of texts, so that
:func:`stoicheia.data.shards.convert` can draw one split for each group of twins
(:func:`stoicheia.data.splits.group_split_key`).

**What is compared.** The base letters of each text (lacunae left out, editors' supplements
in), in scriptio continua, as sets of overlapping 3-letter shingles; two texts are twins when
the Jaccard similarity of their shingle sets is at least :data:`TWIN_THRESHOLD` (0.75).
Measured on I.Sicily (docs/measuring-restoration.md): re-editions and copies score 0.86-1.0,
two epitaphs sharing a formula but not their names 0.66 at most.

**How.** Broder's MinHash (Broder 1997, "On the resemblance and containment of documents")
with the LSH banding of Leskovec, Rajaraman & Ullman ("Mining of Massive Datasets", ch. 3):
``datasketch.MinHash`` (128 permutations, a fixed seed) in a ``datasketch.MinHashLSH`` at the
threshold; every candidate pair the index returns is kept only when the exact Jaccard of the two
shingle sets reaches the threshold. Twins are transitive here (union-find): A~B and B~C put A, B
and C in one group, so that no chain of copies straddles two splits.

Only numpy and datasketch are imported (the benchmark's contamination report,
:mod:`stoicheia.inference.benchmark.contamination`, uses the same shingles and signatures).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

#: Jaccard similarity of 3-letter shingle sets at or above which two texts are twins
TWIN_THRESHOLD = 0.75
SHINGLE = 3
NUM_PERM = 128
#: the MinHash permutations' seed: the same signatures on every run and machine
MINHASH_SEED = 1
#: texts of fewer letters are not compared (a name or a numeral alone: "twins" by accident)
MIN_TWIN_LETTERS = 12


def shingles(ids: np.ndarray, k: int = SHINGLE) -> set[bytes]:
    """The set of overlapping ``k``-letter shingles of uint8 letter ids ``(n,)``, each as bytes;
    the whole text as one shingle when it is shorter than ``k``, nothing when it is empty."""
    b = np.asarray(ids, dtype=np.uint8).tobytes()
    if len(b) < k:
        return {b} if b else set()
    return {b[i : i + k] for i in range(len(b) - k + 1)}


def jaccard(a: set, b: set) -> float:
    """``|a ∩ b| / |a ∪ b|`` (0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def minhash(items: set[bytes], num_perm: int = NUM_PERM):
    """A ``datasketch.MinHash`` of ``items`` with :data:`MINHASH_SEED` (same on every machine)."""
    from datasketch import MinHash

    m = MinHash(num_perm=num_perm, seed=MINHASH_SEED)
    m.update_batch(sorted(items))
    return m


@dataclass(frozen=True)
class TwinGroup:
    """Texts that are twins of one another (directly or through a chain of twins).

    ``members``: the text keys, sorted; ``pairs``: ``(a, b, jaccard)`` for each pair found at
    or above the threshold (Jaccard rounded to 4 places)."""

    members: tuple[str, ...]
    pairs: tuple[tuple[str, str, float], ...]


def twin_groups(
    texts: Mapping[str, np.ndarray],
    threshold: float = TWIN_THRESHOLD,
    num_perm: int = NUM_PERM,
) -> list[TwinGroup]:
    """The groups of twins among ``texts`` (key -> uint8 letter ids ``(n,)``, lacunae left out),
    each of two texts or more, sorted by their first member; texts without a twin are in no
    group. Texts of fewer than :data:`MIN_TWIN_LETTERS` letters are never twins.

    Raises ``ValueError`` for a threshold outside (0, 1]."""
    from datasketch import MinHashLSH

    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"twin threshold {threshold}: give a Jaccard similarity in (0, 1]")
    sets: dict[str, set[bytes]] = {}
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=(0.1, 0.9))
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    pairs: list[tuple[str, str, float]] = []
    for key in sorted(texts):
        ids = np.asarray(texts[key], dtype=np.uint8)
        if len(ids) < MIN_TWIN_LETTERS:
            continue
        s = shingles(ids)
        sig = minhash(s, num_perm)
        parent[key] = key
        for other in sorted(lsh.query(sig)):
            j = jaccard(s, sets[other])
            if j >= threshold:
                pairs.append((other, key, round(j, 4)))
                ra, rb = find(other), find(key)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
        sets[key] = s
        lsh.insert(key, sig)
    members: dict[str, list[str]] = {}
    for key in parent:
        members.setdefault(find(key), []).append(key)
    by_root: dict[str, list[tuple[str, str, float]]] = {}
    for a, b, j in pairs:
        by_root.setdefault(find(a), []).append((a, b, j))
    groups = [
        TwinGroup(tuple(sorted(ms)), tuple(sorted(by_root.get(root, []))))
        for root, ms in members.items()
        if len(ms) > 1
    ]
    return sorted(groups, key=lambda g: g.members)


def twin_key(tier: str, work: str) -> str:
    """The key of one inscription among the held records: ``"TIER\\tWORK"``."""
    return f"{tier}\t{work}"


def held_texts(held: Sequence[tuple[str, str, tuple]]) -> dict[str, np.ndarray]:
    """The texts of EpiDoc records held back by ``convert``: ``held`` is
    ``[(tier, source path, (record id, source, work, parts, words))]``, each part a dict of
    plane bytes (``chars``, ``lacuna``, ...). One text per ``(tier, work)`` (its records'
    letters joined, lacuna slots and non-letters left out: uint8 ``(n,)``), keyed by
    :func:`twin_key`."""
    from stoicheia.text.alphabet import NUM_LETTERS

    letters: dict[str, list[np.ndarray]] = {}
    for tier, _path, rec in held:
        for p in rec[3]:
            chars = np.frombuffer(p["chars"], dtype=np.uint8)
            real = np.frombuffer(p["lacuna"], dtype=np.uint8) > 0
            letters.setdefault(twin_key(tier, rec[2]), []).append(
                chars[~real & (chars < NUM_LETTERS)]
            )
    return {k: np.concatenate(v) for k, v in letters.items()}


def held_twin_groups(held: Sequence[tuple[str, str, tuple]]) -> list[TwinGroup]:
    """The groups of twins among the texts of :func:`held_texts`."""
    return twin_groups(held_texts(held))


__all__ = [
    "MIN_TWIN_LETTERS",
    "NUM_PERM",
    "SHINGLE",
    "TWIN_THRESHOLD",
    "TwinGroup",
    "held_texts",
    "held_twin_groups",
    "twin_key",
    "jaccard",
    "minhash",
    "shingles",
    "twin_groups",
]


_KNOWN = "\x00known\t"  # prefix of a known text's key among the held ones (no tier has it)


def held_and_known_twins(
    held: list[tuple[str, str, tuple]], known: Mapping[str, np.ndarray]
) -> tuple[list, dict[str, tuple[list[str], float]]]:
    """The groups of twins among the ``held`` EpiDoc records (:func:`twin_groups`) that hold
    no ``known`` text, and the held texts that are twins of a known one: ``{held key: (the
    known keys of its group, the highest Jaccard of a pair in the group)}``. A group joined to
    a known text through a chain of twins is one text: all of its held members are twins."""
    texts = held_texts(held)
    if not known:
        return twin_groups(texts), {}
    texts.update({_KNOWN + k: np.asarray(v, np.uint8) for k, v in known.items()})
    groups, of_known = [], {}
    for g in twin_groups(texts):
        knowns = [m[len(_KNOWN) :] for m in g.members if m.startswith(_KNOWN)]
        if not knowns:
            groups.append(g)
            continue
        best = max(j for _, _, j in g.pairs)
        for m in g.members:
            if not m.startswith(_KNOWN):
                of_known[m] = (knowns, best)
    return groups, of_known
