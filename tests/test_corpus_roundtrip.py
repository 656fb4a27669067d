"""Round trip over the whole real corpus: text -> planes -> text -> the same planes.

Every record of every Perseus file (and of both UD treebanks and every I.Sicily inscription)
is normalised, rendered back to polytonic Unicode (real lacunae as Leiden), and encoded again;
the planes, the lacuna plane included, must be identical. This reads all 75 MB
of TEI (about a minute on two cores).
"""

from __future__ import annotations

import multiprocessing
from collections import Counter
from pathlib import Path

import pytest

from stoicheia.sources import iter_source_files, read_source
from stoicheia.text.encode import encode_text
from stoicheia.text.filter import normalise_record
from stoicheia.text.render import planes_to_text


def _check_file(args: tuple[str, str]) -> tuple[str, int, int, list[str]]:
    path, root = args
    records = letters = 0
    failures: list[str] = []
    for rec in read_source(Path(path), Path(root)):
        norm = normalise_record(rec.text, known=rec.known)
        if norm.planes is None:
            continue
        records += 1
        letters += norm.planes.n_letters()
        again = encode_text(planes_to_text(norm.planes), known=rec.known, strict=True).planes
        if again != norm.planes:
            failures.append(rec.id)
    return path, records, letters, failures


@pytest.mark.slow
def test_whole_corpus_round_trips(corpus_root):
    jobs = [
        (str(f), str(corpus_root / sub))
        for sub in ("perseus", "ud", "isicily")
        for f in iter_source_files([corpus_root / sub])
    ]
    assert len(jobs) >= 390 + 2564
    totals: Counter = Counter()
    failures: list[str] = []
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        for _path, records, letters, bad in pool.imap_unordered(_check_file, jobs, chunksize=4):
            totals["records"] += records
            totals["letters"] += letters
            failures.extend(bad)
    assert totals["letters"] > 39_000_000, totals
    assert not failures, f"{len(failures)} records do not round-trip, e.g. {failures[:5]}"
