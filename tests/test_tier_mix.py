"""Tier weights are shares of letters: the record proportions that read them, the reads of each
tier over a planned run (anneal phases included), the over-read warning, ``stoicheia status``."""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import pytest
from streaming import StreamingDataset

from stoicheia.data.shards import convert, decode_planes
from stoicheia.data.stream import NoisedRecordStream, TierMixFactory
from stoicheia.data.tier_mix import TierSize, read_tier_sizes, record_proportions
from stoicheia.noise import NoiseConfig
from stoicheia.train.mix_plan import announce, plan_facts, planned_spans, warning_lines

WORDS = (
    "ἔδοξε τῇ βουλῇ καὶ τῷ δήμῳ ἐπειδὴ ἀνὴρ ἀγαθός ἐστι περὶ τὸν δῆμον τὸν Ἀθηναίων "
    "στεφανῶσαι αὐτὸν χρυσῷ στεφάνῳ ἀρετῆς ἕνεκα καὶ εὐνοίας ἀναγράψαι τόδε τὸ ψήφισμα ἐν στήλῃ "
    "λιθίνῃ στῆσαι ἐν ἀκροπόλει"
).split()

#: tier -> (records, letters per record low, high): very different lengths per tier
TIERS = {"long": (40, 1500, 2500), "mid": (100, 200, 400), "short": (300, 20, 80)}


def _text(rng: np.random.Generator, letters: int) -> str:
    words: list[str] = []
    n = 0
    while n < letters:
        w = WORDS[int(rng.integers(len(WORDS)))]
        words.append(w)
        n += sum(ch.isalpha() for ch in w)
    return " ".join(words)


@pytest.fixture(scope="module")
def mixed_shards(tmp_path_factory):
    """Three tiers of JSONL records: about 2,000, 300 and 50 letters a record."""
    root = tmp_path_factory.mktemp("mixed")
    rng = np.random.default_rng(3)
    inputs = {}
    for tier, (n, lo, hi) in TIERS.items():
        path = root / f"{tier}.jsonl"
        with path.open("w", encoding="utf-8") as f:
            for k in range(n):
                text = _text(rng, int(rng.integers(lo, hi + 1)))
                f.write(json.dumps({"id": f"{tier}{k}", "text": text}, ensure_ascii=False) + "\n")
        inputs[tier] = [path]
    out = root / "shards"
    convert(inputs, out, val_fraction=0.0, max_record_letters=4096, progress=False, workers=1)
    return out


def _letters_read(shards, weights, epoch_size, seed=0):
    factory = TierMixFactory(
        shards,
        seq_len=4096,
        noise=NoiseConfig(weights={"iid": 1.0}),
        noise_seed=seed,
        records_per_batch=8,
        epoch_size=epoch_size,
        shuffle_seed=seed,
    )
    ds: NoisedRecordStream = factory.build(weights)
    letters: dict[str, int] = {}
    records: dict[str, int] = {}
    for sample in StreamingDataset.__iter__(ds):  # the raw MDS samples
        tier = str(sample["tier"])
        letters[tier] = letters.get(tier, 0) + len(decode_planes(sample).chars)
        records[tier] = records.get(tier, 0) + 1
    del ds
    return letters, records


def test_letter_shares_hold_on_records_of_very_different_lengths(mixed_shards):
    """Over an epoch of the mix, each tier's share of the letters read is its weight's share
    (within the sampling error of the records drawn), though the tiers' records differ forty
    times in length; their shares of the records are far from it."""
    weights = {"long": 0.5, "mid": 0.2, "short": 0.3}
    letters, records = _letters_read(mixed_shards, weights, epoch_size=3000)
    total = sum(letters.values())
    shares = {t: letters[t] / total for t in letters}
    sizes = read_tier_sizes(mixed_shards)
    # Standard error of a tier's share from the records drawn of the last, partial repeat of
    # each tier (whole repeats read every record: no error): at most the sd of a tier's
    # record length times sqrt(records drawn), over the letters read.
    for tier, w in weights.items():
        n, lo, hi = TIERS[tier]
        sd = (hi - lo) / math.sqrt(12) * math.sqrt(n)
        assert abs(shares[tier] - w) <= 4 * sd / total + 1e-3, (tier, shares, sizes)
    # the old reading of the weights (record proportions) is far from this
    record_share = {t: records[t] / sum(records.values()) for t in records}
    assert record_share["short"] > 0.8 and shares["short"] < 0.31


def test_record_proportions_are_share_over_letters_per_record():
    sizes = {"a": TierSize(1000, 10), "b": TierSize(100, 10)}  # 100 and 10 letters a record
    p = record_proportions({"a": 1.0, "b": 1.0}, sizes)
    assert p["b"] == pytest.approx(10 * p["a"]) and sum(p.values()) == pytest.approx(1.0)
    assert record_proportions({"a": 2.0, "b": 0.0}, {}) == {"a": 1.0}  # one tier: no sizes
    with pytest.raises(ValueError, match="no train letters for tier"):
        record_proportions({"a": 1.0, "c": 1.0}, sizes)


def test_reads_count_the_anneal_phases_in_letters():
    """The stable mix runs to the planned anneal start, each anneal phase its fraction of the
    decay, and each tier's reads add up over them (a gold-only last phase adds to gold)."""
    sizes = {"gold": TierSize(1_000_000, 1000), "bronze": TierSize(10_000, 200)}
    spans = planned_spans(
        [{"gold": 3.0, "bronze": 1.0}, {"gold": 3.0, "bronze": 1.0}, {"gold": 1.0}],
        [0.5, 1.0],
        planned_start=80,
        decay_steps=20,
        slots_per_step=1000,
    )
    assert [(s.name, s.steps, s.slots) for s in spans] == [
        ("stable", 80, 80_000),
        ("anneal phase 1", 10, 10_000),
        ("anneal phase 2", 10, 10_000),
    ]
    facts = plan_facts(spans, sizes, max_reads=4.0)
    tiers = {r["tier"]: r for r in facts["tiers"]}
    assert tiers["bronze"]["letters_read"] == pytest.approx(0.25 * 90_000)
    assert tiers["gold"]["letters_read"] == pytest.approx(0.75 * 90_000 + 10_000)
    assert tiers["bronze"]["reads"] == pytest.approx(2.25)
    assert tiers["gold"]["share"] == pytest.approx(77_500 / 100_000)
    assert warning_lines(facts) == []
    # no anneal phases: the stable mix to the end
    (only,) = planned_spans([{"gold": 1.0}], [], planned_start=80, decay_steps=20, slots_per_step=5)
    assert (only.steps, only.slots) == (100, 500)


def test_an_over_read_tier_warns_and_status_shows_the_mix(tmp_path):
    """A tier read more than data.max_reads times is warned about at start, and the plan is
    kept in mix.json, which `stoicheia status` prints."""
    from stoicheia.train.status import format_status, run_status

    sizes = {"gold": TierSize(1_000_000, 1000), "silver": TierSize(5_000, 2)}
    spans = planned_spans(
        [{"gold": 1.0, "silver": 1.0}], [], planned_start=90, decay_steps=10, slots_per_step=1000
    )
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("stoicheia.train.mix_plan")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        facts = announce(tmp_path, spans, sizes, max_reads=4.0, write=True)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    warnings = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "tier silver is read 10.0 times" in warnings[0], warnings
    assert any("gold" in r.getMessage() and "read 0.05 times" in r.getMessage() for r in records)
    assert json.loads((tmp_path / "mix.json").read_text())["tiers"] == facts["tiers"]
    (tmp_path / "metrics.jsonl").write_text('{"step": 3, "time": 0}\n')
    lines = format_status(run_status(tmp_path))
    assert any(line.startswith("  silver") and "read 10.00 times" in line for line in lines)
    assert any("warning: tier silver is read 10.0 times" in line for line in lines)
    # under the threshold: no warning
    assert warning_lines(plan_facts(spans, sizes, max_reads=20.0)) == []


def test_every_tier_over_read_is_one_line_about_the_corpus():
    sizes = {"gold": TierSize(1_000, 10), "silver": TierSize(500, 5)}
    spans = planned_spans(
        [{"gold": 1.0, "silver": 1.0}], [], planned_start=90, decay_steps=10, slots_per_step=1000
    )
    (line,) = warning_lines(plan_facts(spans, sizes, max_reads=4.0))
    assert "every tier is read more than data.max_reads = 4 times" in line
    assert "plan fewer steps" in line


def test_the_run_prints_its_mix_and_keeps_it_for_status(small_shards, tmp_path, capsys):
    """Building the tiny run prints the tier mix in letters (rank 0) and writes mix.json with
    the anneal phases as the run's schedule plans them."""
    import os

    from stoicheia.train.builder import build_trainer
    from tests.tiny import REPO, tiny_run

    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        cfg = tiny_run(
            small_shards, tmp_path, "mix", "train.nominal_steps=100", "train.max_steps=120"
        )
        built = build_trainer(cfg)
        built.trainer.close()
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "[data] tier mix over the planned run, in letters: 100 steps" in out
    facts = json.loads((tmp_path / "mix" / "mix.json").read_text())
    assert [m["name"] for m in facts["mixes"]] == ["stable", "anneal phase 1", "anneal phase 2"]
    assert [m["steps"] for m in facts["mixes"]] == [80, 10, 10]
    assert facts["mixes"][2]["shares"] == {"gold": 1.0}
    sizes = read_tier_sizes(small_shards)
    silver = next(r for r in facts["tiers"] if r["tier"] == "silver")
    rows = cfg.train.micro_batch_rows * (cfg.train.grad_accum or 1)
    slots = rows * cfg.data.seq_len
    # silver's letter share: its weight over the tiers with letters in the stable mix (80
    # steps; the tiny run sets bronze to 0), 1/2 in phase 1 (10)
    w = cfg.data.tier_weights
    read = (w["silver"] / (w["gold"] + w["silver"]) * 80 + 0.5 * 10) * slots
    assert silver["letters_read"] == pytest.approx(read)
    assert silver["reads"] == pytest.approx(read / sizes["silver"].letters)


def test_a_checkpoint_from_record_proportions_resumes_with_a_note(small_shards):
    """A data position saved before the weights meant letters (no ``mix_unit``) resumes, with
    one warning line that the mix changes."""
    from stoicheia.data.loader import PackedLoader

    factory = TierMixFactory(
        small_shards, seq_len=128, noise=NoiseConfig(), noise_seed=1, records_per_batch=4
    )
    loader = PackedLoader(factory, rows=2, mixes=[{"gold": 1.0, "silver": 1.0}])
    state = loader.state_dict()
    assert state["mix_unit"] == "letters"
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("stoicheia.data.loader")
    logger.addHandler(handler)
    try:
        loader.load_state_dict(state)
        assert not records
        old = {k: v for k, v in state.items() if k != "mix_unit"}
        loader.load_state_dict(old)
    finally:
        logger.removeHandler(handler)
    (note,) = [r.getMessage() for r in records]
    assert "record proportions" in note and "shares of letters" in note
