"""Twins (one text under two numbers) go to one split: the inscription dev set never shares a
text with train (stoicheia.data.twins, stoicheia.data.splits.dev_digit)."""

from __future__ import annotations

import numpy as np
import pytest
from streaming import StreamingDataset

from stoicheia.data.shards import convert
from stoicheia.data.shm import retry_prefix_race
from stoicheia.data.splits import choose_split, dev_digit
from stoicheia.data.twins import TWIN_THRESHOLD, twin_groups
from stoicheia.inference.benchmark.defaults import TWIN_THRESHOLD as BENCHMARK_THRESHOLD


def _ids(text: str) -> np.ndarray:
    from stoicheia.inference.benchmark.contamination import letter_ids

    return letter_ids(text)


DECREE = "εδοξετηιβουληικαιτωιδημωιεπειδηδιονυσιοσαπολλωνιουανηραγαθοσεστι"


def test_twin_threshold_is_the_benchmarks():
    assert TWIN_THRESHOLD == BENCHMARK_THRESHOLD


def test_twin_groups_join_copies_and_chains_not_formulae():
    copy = DECREE.replace("διονυσιοσ", "διονυσιωσ")  # a re-edition: one letter read anew
    chain = copy.replace("ανηρ", "ανερ")  # a copy of the copy
    formula = "εδοξετηιβουληικαιτωιδημωι" + "μητροδωροσηρακλειδουευεργετασ"  # another decree
    groups = twin_groups(
        {
            "a.xml": _ids(DECREE),
            "b.xml": _ids(copy),
            "c.xml": _ids(chain),
            "d.xml": _ids(formula),
            "e.xml": _ids("αγαθηι"),  # too short to be anyone's twin
            "f.xml": _ids("αγαθηι"),
        }
    )
    assert [g.members for g in groups] == [("a.xml", "b.xml", "c.xml")]
    assert all(j >= TWIN_THRESHOLD for _, _, j in groups[0].pairs)
    assert twin_groups({}) == []
    with pytest.raises(ValueError, match="threshold"):
        twin_groups({"a": _ids(DECREE)}, threshold=0)


def test_dev_digit_is_isicilys_number_else_a_hash_of_the_file_name(corpus_root):
    assert dev_digit("inscriptions/ISic000154.xml") == 4
    assert dev_digit("ISic000154.xml#2") == 4
    # the folder does not matter, the file name does
    assert dev_digit("a/b/5.72.xml") == dev_digit("5.72.xml")
    for corpus in ("iospe", "igcyr", "cretan", "iip"):
        names = sorted(p.name for p in (corpus_root / corpus).glob("*.xml"))
        digits = np.bincount([dev_digit(n) for n in names], minlength=10)
        # one file in ten per digit, within sampling error (binomial, 4 standard deviations)
        sd = np.sqrt(len(names) * 0.1 * 0.9)
        assert np.all(np.abs(digits - len(names) / 10) < 4 * sd), (corpus, digits)
    # a twin of a dev inscription follows its group's first member
    four = frozenset({4})
    work = "inscriptions/ISic003545.xml"
    assert choose_split(work + "#1", work, 0.0, frozenset(), source="epidoc", dev_digits=four) == (
        "train"
    )
    assert (
        choose_split(
            work + "#1",
            work,
            0.0,
            frozenset(),
            source="epidoc",
            dev_digits=four,
            dev_key="inscriptions/ISic003544.xml",
        )
        == "inscription_dev"
    )


@pytest.mark.parametrize("digit", [4])
def test_convert_sends_twins_of_dev_inscriptions_to_the_dev_set(tmp_path, corpus_root, digit):
    isic = corpus_root / "isicily" / "inscriptions"
    # ISic003544/3545: one dedication on two stones; ISic030294/0295: one decree sent to two
    # cities; ISic030004/031001: a lead tablet and its re-edition under a new number;
    # ISic003554/001312: two epitaphs of one formula but not one text (not twins)
    names = [
        "ISic003544.xml",
        "ISic003545.xml",
        "ISic030294.xml",
        "ISic030295.xml",
        "ISic030004.xml",
        "ISic031001.xml",
        "ISic003554.xml",
        "ISic001312.xml",
    ]
    out = tmp_path / "out"
    summary = convert(
        {"bronze": [isic / n for n in names]},
        out,
        val_fraction=0.0,
        inscription_dev_digits=[digit],
        workers=1,
        progress=False,
        parallels_index=False,
    )
    groups = summary["inscription_dev"]["twin_groups"]
    members = [set(g["members"]) for g in groups]
    for pair in (
        ("ISic003544", "ISic003545"),
        ("ISic030294", "ISic030295"),
        ("ISic030004", "ISic031001"),
    ):
        assert any({f"bronze/{p}.xml" for p in pair} <= m for m in members), (pair, members)
    assert not any("bronze/ISic001312.xml" in m for m in members), "a formula is no twin"

    def works(split):
        ds = retry_prefix_race(
            lambda: StreamingDataset(local=str(out / "bronze" / split), batch_size=1)
        )
        return {ds[i]["work"] for i in range(ds.num_samples)}

    dev = works("inscription_dev")
    assert dev == set(names) - {"ISic001312.xml"}, dev
    assert works("train") == {"ISic001312.xml"}
