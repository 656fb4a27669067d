"""The tier mix over real shards: determinism and exact resume of the packed position."""

from __future__ import annotations

import itertools

import pytest
import torch

from stoicheia.data.loader import PackedLoader
from stoicheia.data.stream import NoisedRecordStream, make_streams
from stoicheia.noise import NoiseConfig


def _loader(shards, workers=0, seed=5, epoch_size=None):
    ds = NoisedRecordStream(
        epoch_size=epoch_size,
        streams=make_streams(shards, {"gold": 1.0, "silver": 1.0}, "train"),
        seq_len=128,
        noise=NoiseConfig(),
        noise_seed=seed,
        batch_size=4,
        shuffle_seed=11,
    )
    return PackedLoader(ds, rows=2, num_workers=workers, min_fragment=8)


def _take(loader, n):
    return list(itertools.islice(iter(loader), n))


def _same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_batches_are_deterministic_and_packed(small_shards):
    a = _take(_loader(small_shards), 4)
    b = _take(_loader(small_shards), 4)
    assert all(_same(x, y) for x, y in zip(a, b, strict=True))
    for batch in a:
        assert batch["chars"].shape == (2, 128)
        assert (batch["seg_id"] != 0).float().mean() > 0.8


@pytest.mark.parametrize("epoch_size", [None, 8])
def test_resume_anywhere_yields_the_same_batches(small_shards, epoch_size):
    """Resume after every n in 1..8 batches; with epoch_size=8 records (two record batches)
    the run crosses stream epochs."""
    full = _take(_loader(small_shards, epoch_size=epoch_size), 12)
    for n in range(1, 9):
        first = _loader(small_shards, epoch_size=epoch_size)
        _take(first, n)
        state = first.dataset.state_dict(0, True)
        resumed = _loader(small_shards, epoch_size=epoch_size)
        resumed.dataset.load_state_dict(state)
        rest = _take(resumed, 12 - n)
        assert all(_same(x, y) for x, y in zip(full[n:], rest, strict=True)), (
            f"resume after {n} batches differs"
        )


def test_repeated_records_get_fresh_noise(small_shards, monkeypatch):
    """The silver tier is small and weighted like gold, so the mix repeats its records within
    an epoch: each occurrence must get its own noise key."""
    seen = []
    original = NoisedRecordStream.noise_sample

    def spy(self, sample, key):
        seen.append(((sample["id"], sample["part"]), tuple(key)))
        return original(self, sample, key)

    monkeypatch.setattr(NoisedRecordStream, "noise_sample", spy)
    dataset = _loader(small_shards, epoch_size=600).dataset_of(
        0
    )  # more draws than either tier has parts
    assert len(list(dataset)) == 600
    ids = [i for i, _ in seen]
    keys = [k for _, k in seen]
    assert len(set(ids)) < len(ids), "the mix should repeat some records"
    assert len(set(keys)) == len(keys), "every occurrence gets its own noise key"


def test_resume_with_workers(small_shards):
    n = 5
    full = _take(_loader(small_shards, workers=2), 2 * n)
    first = _loader(small_shards, workers=2)
    _take(first, n)
    state = first.dataset.state_dict(0, True)
    resumed = _loader(small_shards, workers=2)
    resumed.dataset.load_state_dict(state)
    rest = _take(resumed, n)
    assert all(_same(x, y) for x, y in zip(full[n:], rest, strict=True))


def test_worker_count_does_not_change_the_data(small_shards):
    """The noise key is the record's place in the rank's sequence, not in a worker's."""
    assert all(
        _same(x, y)
        for x, y in zip(
            _take(_loader(small_shards, workers=0), 4),
            _take(_loader(small_shards, workers=2), 4),
            strict=True,
        )
    )


def test_missing_tier_names_the_index_and_the_fix(small_shards):
    with pytest.raises(FileNotFoundError, match=r"bronze.*index\.json.*stoicheia convert"):
        make_streams(small_shards, {"gold": 1.0, "bronze": 0.3}, "train")


def test_row_fill_on_real_corpus_at_1024(small_shards):
    ds = NoisedRecordStream(
        streams=make_streams(small_shards, {"gold": 1.0, "silver": 1.0}, "train"),
        seq_len=1024,
        noise=NoiseConfig(),
        noise_seed=3,
        batch_size=8,
    )
    batches = _take(PackedLoader(ds, rows=4), 12)
    letters = sum(int((b["seg_id"] != 0).sum()) for b in batches)
    slots = sum(b["seg_id"].numel() for b in batches)
    assert letters / slots >= 0.95


def test_shards_from_a_remote_are_cached_in_their_own_local_folder(small_shards, tmp_path):
    """The object-store path: ``remote`` + ``local_cache`` (a local folder stands in for the
    store); each dataset in a test gets its own local folder."""
    streams = make_streams(
        None, {"gold": 1.0}, "train", remote=str(small_shards), local_cache=tmp_path / "cache"
    )
    ds = NoisedRecordStream(
        streams=streams, seq_len=128, noise=NoiseConfig(), noise_seed=5, batch_size=4
    )
    first = _take(PackedLoader(ds, rows=2), 3)
    assert len(first) == 3 and (tmp_path / "cache" / "gold" / "train" / "index.json").exists()
    with pytest.raises(ValueError, match="local_cache"):
        make_streams(None, {"gold": 1.0}, "train", remote=str(small_shards))


def _mixed_loader(shards, schedule):
    from stoicheia.data.stream import TierMixFactory

    factory = TierMixFactory(
        shards, seq_len=128, noise=NoiseConfig(), noise_seed=5, records_per_batch=4, shuffle_seed=11
    )
    loader = PackedLoader(
        factory,
        mixes=[{"gold": 1.0, "silver": 1.0}, {"silver": 1.0}, {"gold": 1.0}],
        rows=2,
        min_fragment=8,
    )
    loader.set_schedule(schedule)
    loader.record_log = []
    return loader


def test_mix_schedule_switches_at_the_exact_batch(small_shards):
    """Mix 1 (silver only) from batch 6, mix 2 (gold only) from batch 9: every record packed
    into a batch comes from that batch's mix."""
    loader = _mixed_loader(small_shards, [(6, 1), (9, 2)])
    batches = _take(loader, 12)
    assert len(batches) == 12 and loader.position.batch == 12
    want = {b: (0 if b < 6 else 1 if b < 9 else 2) for b in range(12)}
    tiers = {b: {t for bb, _, t, _ in loader.record_log if bb == b} for b in range(12)}
    phases = {b: {p for bb, p, _, _ in loader.record_log if bb == b} for b in range(12)}
    # A long record pulled for batch b may also fill batch b + 1, so a batch can pull none.
    for b in range(12):
        assert phases[b] <= {want[b]}, (b, phases[b])
    assert {p for _, p, _, _ in loader.record_log} == {0, 1, 2}
    assert phases[6] == {1} and phases[9] == {2}, "a new mix starts afresh at its first batch"
    assert set().union(*(tiers[b] for b in range(6))) <= {"gold", "silver"}
    assert set().union(*(tiers[b] for b in range(6, 9))) == {"silver"}
    assert set().union(*(tiers[b] for b in range(9, 12))) == {"gold"}
    assert loader.position.phase == 2 and loader.position.phase_start == 9


def test_resume_inside_a_mix_and_at_a_switch_yields_the_same_batches(small_shards):
    schedule = [(3, 1), (5, 2)]
    full = _take(_mixed_loader(small_shards, schedule), 8)
    for n in range(1, 8):  # after 3 and 5 batches: exactly at a switch
        first = _mixed_loader(small_shards, schedule)
        _take(first, n)
        state = first.dataset.state_dict(0, True)
        resumed = _mixed_loader(small_shards, schedule)
        resumed.dataset.load_state_dict(state)
        rest = _take(resumed, 8 - n)
        assert all(_same(x, y) for x, y in zip(full[n:], rest, strict=True)), (
            f"resume after {n} batches differs"
        )


def test_schedule_set_while_iterating_takes_effect_at_the_next_batch(small_shards):
    """The anneal decision arrives between two batches (at an evaluation): the next batch
    already comes from the new mix, exactly as when the schedule was known from the start."""
    known = _take(_mixed_loader(small_shards, [(4, 2)]), 6)
    late = _mixed_loader(small_shards, [])
    it = iter(late)
    got = [next(it) for _ in range(4)]
    late.set_schedule([(4, 2)])
    got += [next(it) for _ in range(2)]
    assert all(_same(x, y) for x, y in zip(known, got, strict=True))


def test_worker_processes_persist_across_epochs(small_shards, monkeypatch):
    """The record workers are started once, not once per stream epoch, and the batches over
    several epochs are those of a loader without workers."""
    from stoicheia.data import stream_epochs

    built = []
    real = stream_epochs._record_loader
    monkeypatch.setattr(stream_epochs, "_record_loader", lambda *a: built.append(a[1:]) or real(*a))
    # epoch_size 8 records = 2 worker batches: 12 packed batches cross several epochs
    with_workers = _take(_loader(small_shards, workers=2, epoch_size=8), 12)
    assert built == [(2, None)]
    without = _take(_loader(small_shards, workers=0, epoch_size=8), 12)
    assert all(_same(x, y) for x, y in zip(with_workers, without, strict=True))
