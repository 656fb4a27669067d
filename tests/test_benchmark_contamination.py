"""Contamination of the inscription dev set: twins found with MinHash LSH on real I.Sicily pairs
and on planted ones, unrelated and merely formulaic texts left alone, the stretch of a long
record, the listing; and the benchmark's edit distance (rapidfuzz) against the textbook one."""

from __future__ import annotations

import numpy as np
import pytest

from stoicheia.inference.benchmark.contamination import (
    TWIN_THRESHOLD,
    find_twins,
    jaccard,
    letter_ids,
    shingles,
    summary_line,
    twin_lines,
)
from stoicheia.inference.benchmark.protocols import base_letters
from stoicheia.inference.benchmark.scoring import edit_distance


def _texts(corpus_root, *names: str) -> dict[str, str]:
    """The base letters of each record of the named I.Sicily files, by record id."""
    from stoicheia.sources import EpiDocOptions, read_source

    out = {}
    for name in names:
        path = corpus_root / "isicily" / "inscriptions" / name
        for rec in read_source(path, None, epidoc=EpiDocOptions(supplied_lost="text")):
            out[rec.id] = base_letters(rec.text)
    return out


def test_real_twins_are_found_and_a_shared_formula_is_not(corpus_root):
    """The pairs the threshold was chosen on (docs/measuring-restoration.md): a re-edition
    under a new number and a decree sent to two cities are twins; two epitaphs of one formula
    with different names are not."""
    t = _texts(
        corpus_root,
        "ISic030004.xml",  # dev (number ends in 4): a lead tablet
        "ISic031001.xml",  # its re-edition under a new number
        "ISic030294.xml",  # dev: a decree
        "ISic030295.xml",  # the same decree for another city
        "ISic003554.xml",  # dev: "Σκρειβωνία ζῶσα ἑαυτῇ ἐποίησεν καὶ τοῖς ἰδίοις πᾶσιν"
        "ISic001312.xml",  # "Λουκίφερα ζῶσα ἑαυτῇ ἐποίησεν καὶ τοῖς ἰδίοις πᾶσιν"
    )
    dev_ids = [k for k in t if k.split(".")[0][-1] == "4"]
    dev = [(k, letter_ids(t[k])) for k in dev_ids]
    training = [("bronze", k.split("#")[0], k, letter_ids(t[k])) for k in t if k not in dev_ids]
    counts: dict = {}
    twins = find_twins(dev, training, counts=counts)
    pairs = {(x.dev, x.record) for x in twins}
    assert ("ISic030004.xml#a", "ISic031001.xml#1") in pairs
    assert ("ISic030294.xml#1", "ISic030295.xml#1") in pairs
    assert not any(x.dev.startswith("ISic003554") for x in twins)
    # the exact Jaccard of each pair listed, on both sides of the threshold
    for x in twins:
        assert x.jaccard == pytest.approx(
            jaccard(shingles(letter_ids(t[x.dev])), shingles(letter_ids(t[x.record]))), abs=1e-4
        )
        assert x.jaccard >= TWIN_THRESHOLD
    formula = jaccard(
        shingles(letter_ids(t["ISic003554.xml#1"])), shingles(letter_ids(t["ISic001312.xml#1"]))
    )
    assert 0.6 < formula < TWIN_THRESHOLD
    assert counts["records"] == len(training) and counts["pieces"] >= 2


def test_a_planted_near_duplicate_is_found_and_an_unrelated_text_is_not():
    dev_text = "εδοξετηιβουληικαιτωιδημωιαριστοκλησαριστοκλεουσειπενεπειδηοδημοσανεθηκε"
    # the same text under another number, two letters read otherwise (a re-edition)
    twin = dev_text.replace("αριστοκλησ", "αριστοκλεσ").replace("ανεθηκε", "ανεθηκαν")
    unrelated = "μηνιναειδεθεαπηληιαδεωαχιληοσουλομενηνημυριαχαιοισαλγεεθηκε"
    dev = [("ISic000014.xml#1", letter_ids(dev_text)), ("ISic000024.xml#1", letter_ids("καισ"))]
    training = [
        ("bronze", "ISic000015.xml", "ISic000015.xml#1", letter_ids(twin)),
        ("gold", "Homer/iliad", "Homer/iliad#1", letter_ids(unrelated)),
    ]
    twins = find_twins(dev, training)
    assert [(x.dev, x.record) for x in twins] == [("ISic000014.xml#1", "ISic000015.xml#1")]
    assert twins[0].start == 0 and twins[0].end == len(twin)
    assert 0.75 <= twins[0].jaccard < 1 and twins[0].dev_letters == dev_text[:60]
    # at a threshold above the pair's similarity it is no twin
    assert find_twins(dev, training, threshold=min(1.0, twins[0].jaccard + 0.05)) == []
    with pytest.raises(ValueError, match="twin threshold 0"):
        find_twins(dev, training, threshold=0)


def test_a_dev_text_quoted_in_a_long_record_is_found_in_its_stretch():
    rng = np.random.default_rng(0)
    quote = letter_ids("χαιρετεωπαροδιταιεγωδεκειμαιενθαδεμνημησχαριν")
    filler = rng.integers(0, 24, size=3000).astype(np.uint8)
    long = np.concatenate([filler[:1700], quote, filler[1700:]])
    dev = [("ISic000104.xml#1", quote)]
    twins = find_twins(dev, [("gold", "Anthologia", "Anthologia#7", long)])
    assert len(twins) == 1 and twins[0].jaccard == 1.0
    assert (twins[0].start, twins[0].end) == (1700, 1700 + len(quote)), "the quotation only"


def test_the_listing_and_its_summary_line():
    dev = [("ISic000014.xml#1", letter_ids("δαμοσια"))]
    training = [("bronze", "ISic000015.xml", "ISic000015.xml#1", letter_ids("δαμοσια"))]
    twins = find_twins(dev, training)
    contamination = {
        "threshold": 0.75,
        "dev_texts": 3,
        "dev_texts_with_twin": ["ISic000014.xml#1"],
        "inscriptions_with_twin": 1,
        "training": {"records": 1},
        "twins": [vars(t) for t in twins],
    }
    lines = twin_lines(contamination)
    assert lines[0].split("\t")[:3] == ["dev_text", "tier", "work"]
    assert lines[1].split("\t") == [
        "ISic000014.xml#1",
        "bronze",
        "ISic000015.xml",
        "ISic000015.xml#1",
        "0",
        "7",
        "1.0",
        "δαμοσια",
        "δαμοσια",
    ]
    assert summary_line(contamination).startswith(
        "contamination: 1 of 3 dev texts (1 inscriptions) have a near-duplicate "
        "among the 1 training records"
    )


def _textbook(a: str, b: str) -> int:
    """The Wagner-Fischer dynamic programme the benchmark used before rapidfuzz."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def test_rapidfuzz_distance_equals_the_textbook_one_on_real_strings(corpus_root):
    t = _texts(corpus_root, "ISic030004.xml", "ISic031001.xml", "ISic000824.xml")
    texts = list(t.values())
    words = []
    for name in ("ISic000824.xml", "ISic003554.xml", "ISic030294.xml"):
        from stoicheia.sources import EpiDocOptions, read_source

        path = corpus_root / "isicily" / "inscriptions" / name
        for rec in read_source(path, None, epidoc=EpiDocOptions(supplied_lost="text")):
            words += [base_letters(w) for w in rec.text.split()]
    words = [w for w in words if w]
    assert len(words) > 50
    pairs = [(a, b) for a, b in zip(words, words[1:], strict=False)]
    pairs += [(a, b[:7]) for a, b in zip(words, words[3:], strict=False)]  # gap-sized
    pairs += [(x[:120], y[:120]) for x in texts for y in texts]  # whole texts, both ways
    pairs += [("", w) for w in words[:5]] + [(w, "") for w in words[:5]] + [("", "")]
    for a, b in pairs:
        assert edit_distance(a, b) == _textbook(a, b), (a, b)
    # on letters with marks and final sigma too (the distance is on code points)
    assert edit_distance("δῆμος", "δημοσ") == _textbook("δῆμος", "δημοσ") == 2
