"""The tier mix: one ``streaming.Stream`` per tier, noised records out of DataLoader workers.

:class:`NoisedRecordStream` is a ``StreamingDataset`` whose samples are records already split
into word-aligned pieces and noised (in the DataLoader workers). Its noise depends only on
``(noise_seed, epoch, rank, position in the epoch)``, so a resumed run re-creates exactly the
same pieces, and a record repeated by the tier mix is noised afresh each time.

The data position (which record, piece and slot comes next) is not kept here: the packer
(:class:`stoicheia.data.loader.PackedLoader`) owns it and seeks a dataset with
:meth:`NoisedRecordStream.seek`.
:class:`TierMixFactory` builds one dataset per tier mix (the base mix and each anneal phase).
"""

from __future__ import annotations

import copy
import logging
import os
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from streaming import Stream, StreamingDataset
from torch.utils.data import get_worker_info

from stoicheia.data.sample_planes import decode_planes, split_at_words
from stoicheia.data.shard_index import check_local_split
from stoicheia.data.shm import retry_prefix_race, stop_prefix_probe_leak
from stoicheia.data.tier_mix import TierSize, letter_shares, read_tier_sizes, record_proportions
from stoicheia.noise import NoiseConfig, Noised, noise_record

log = logging.getLogger(__name__)

stop_prefix_probe_leak()


def make_streams(
    shard_root: str | Path | None,
    tier_weights: Mapping[str, float],
    split: str,
    remote: str | None = None,
    local_cache: str | Path | None = None,
    sizes: Mapping[str, TierSize] | None = None,
) -> list[Stream]:
    """One ``Stream`` per tier with a positive weight; the weights are shares of **letters**.

    Each tier's weight, normalised over the tiers with a positive weight, is its share of the
    letters read; it becomes the record proportion that reads that share
    (:func:`stoicheia.data.tier_mix.record_proportions`), from the letters and samples per
    tier in ``sizes`` (else read from ``stats.json`` in ``shard_root``, or in ``local_cache``
    with a ``remote``). A mix of one tier needs no sizes.

    ``shard_root`` is the output of ``stoicheia convert`` (``TIER/SPLIT/index.json``). With
    ``remote`` (an object-store URI holding the same layout) shards are downloaded into
    ``local_cache/TIER/SPLIT``. Raises ``FileNotFoundError`` naming the missing index or
    ``stats.json`` and the fix, and ``ValueError`` for negative or all-zero weights.
    """
    shares = letter_shares(tier_weights)
    if remote is None:
        local_splits = {t: check_local_split(shard_root, t, split) for t in shares}
    if sizes is None and len(shares) > 1:
        stats_root = shard_root if remote is None else local_cache
        if stats_root is None:
            raise ValueError(
                "data.remote needs data.local_cache (a local folder for downloaded shards)"
            )
        sizes = read_tier_sizes(stats_root, split)
    proportions = record_proportions(shares, sizes or {}, "stats.json")
    streams = []
    for tier, p in proportions.items():
        if remote is None:
            streams.append(Stream(local=str(local_splits[tier]), proportion=p))
        else:
            if local_cache is None:
                raise ValueError(
                    "data.remote needs data.local_cache (a local folder for downloaded shards)"
                )
            streams.append(
                Stream(
                    remote=f"{remote.rstrip('/')}/{tier}/{split}",
                    local=str(Path(local_cache) / tier / split),
                    proportion=p,
                )
            )
    return streams


def fetch_remote_stats(remote: str, local_cache: str | Path) -> Path:
    """Download ``{remote}/stats.json`` (written by ``stoicheia convert``) into ``local_cache``
    with streaming's downloader (same endpoint and credentials as the shards) and return
    ``local_cache``, the folder to read the statistics from. The file is replaced atomically.

    Raises ``FileNotFoundError`` naming the object and the fix when it cannot be read (missing
    object or bucket, refused credentials, unreachable endpoint).
    """
    from streaming.base.storage.download import CloudDownloader

    folder = Path(local_cache)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".stats.{uuid.uuid4().hex}.json"
    source = f"{remote.rstrip('/')}/stats.json"
    try:
        CloudDownloader.direct_download(source, str(tmp))
    except Exception as err:
        tmp.unlink(missing_ok=True)
        raise FileNotFoundError(
            f"cannot read {source} ({type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''}): data.remote must hold the whole "
            "output folder of `stoicheia convert` (stats.json and TIER/SPLIT/ shards); check the "
            "URI, S3_ENDPOINT_URL and the credentials in the job's environment"
        ) from None
    os.replace(tmp, folder / "stats.json")
    return folder


@dataclass
class NoisedRecord:
    """One record of the tier mix, noised: its MDS ``id`` and ``part``, its ``tier``, and its
    pieces (each at most ``seq_len`` slots, in text order)."""

    id: str
    part: int
    tier: str
    pieces: list[Noised]


class NoisedRecordStream(StreamingDataset):
    """Records of the tier mix, split into pieces of at most ``max_piece`` letters and noised.

    Each sample is a :class:`NoisedRecord`, every piece at most ``seq_len`` slots long after
    elastic expansion. Use with a DataLoader whose batch size is ``batch_size`` records and a
    list-returning ``collate_fn``.

    Args:
        streams: from :func:`make_streams`.
        seq_len: row length T in slots.
        noise: noising configuration.
        noise_seed: seed of the per-record noise.
        batch_size: records per DataLoader batch per device (streaming needs it to resume).
        epoch_size: samples per epoch over all streams (``None``: the size of the streams).
        shuffle_seed, num_canonical_nodes: passed to ``StreamingDataset``.
        phase: index of the tier mix this dataset serves (0 = ``data.tier_weights``, 1.. =
            anneal phases); part of every noise key, so two mixes never share noise.
    """

    def __init__(
        self,
        *,
        streams: list[Stream],
        seq_len: int,
        noise: NoiseConfig,
        noise_seed: int,
        batch_size: int,
        epoch_size: int | None = None,
        shuffle: bool = True,
        shuffle_seed: int = 9176,
        num_canonical_nodes: int | None = None,
        predownload: int | None = None,
        phase: int = 0,
    ) -> None:
        # Another process may take streaming's shared-memory prefix between its check and its
        # creation: try again (see retry_prefix_race). streaming writes into the Stream objects
        # it is given, so each try gets fresh copies.
        retry_prefix_race(
            lambda: super(NoisedRecordStream, self).__init__(
                streams=copy.deepcopy(streams),
                epoch_size=epoch_size,
                shuffle=shuffle,
                shuffle_seed=shuffle_seed,
                batch_size=batch_size,
                num_canonical_nodes=num_canonical_nodes,
                predownload=predownload,
            )
        )
        self.seq_len = seq_len
        # Leave a fifth of the row for elastic expansion of unknown-width lacunae.
        self.max_piece = max(1, int(seq_len * 0.8))
        self.noise = noise
        self.noise_seed = noise_seed
        self.phase = phase
        self._epoch = 0
        self._first_batch = 0
        self.seek_base = 0  # global record where worker batch 0 starts (set by seek)

    def _resume_incr_epoch(self) -> tuple[int, int]:
        # Runs in every worker at the start of an epoch: remember the epoch and the first
        # record batch of this (possibly resumed) epoch for the noise key.
        epoch, sample_in_epoch = super()._resume_incr_epoch()
        self._epoch = epoch
        per_batch = self.batch_size * self._parallel_rank_world.num_ranks
        self._first_batch = (sample_in_epoch - self.seek_base) // per_batch
        return epoch, sample_in_epoch

    def world_size(self) -> int:
        """Processes of the job (each reads ``batch_size`` records per worker batch)."""
        from composer.utils import dist

        return dist.get_world_size()

    def __iter__(self) -> Iterator[NoisedRecord]:
        """Yield each record of this worker's share of the epoch as a :class:`NoisedRecord`.

        The noise of a record is keyed by ``(noise_seed, phase, epoch, rank, position)``, where
        ``position`` is the record's place in this rank's sequence of the epoch (batch
        ``q`` of ``records_per_batch`` records, item ``i``: ``q * K + i``). A record that the
        tier mix repeats within an epoch (a small, up-weighted tier) thus gets fresh noise
        each time, and a resumed run re-creates exactly the same pieces. Streaming hands
        worker ``w`` of ``W`` the rank's batches ``w, w + W, ...``, as the DataLoader reads them.
        """
        info = get_worker_info()
        n_workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        k_per_batch = self.batch_size
        rank = self._parallel_rank_world.rank
        for k, sample in enumerate(super().__iter__()):
            batch = self._first_batch + (k // k_per_batch) * n_workers + worker
            position = batch * k_per_batch + k % k_per_batch
            key = [self.noise_seed, self.phase, self._epoch, rank, position]
            if self.seek_base:  # after an elastic resume: positions count from another origin
                key.append(self.seek_base)
            pieces = self.noise_sample(sample, key)
            yield NoisedRecord(str(sample["id"]), int(sample["part"]), str(sample["tier"]), pieces)

    def noise_sample(self, sample: Mapping[str, Any], key: list[int]) -> list[Noised]:
        """Split one MDS sample into pieces of at most ``max_piece`` letters at word starts and
        noise each (``max_len = seq_len``) with an rng seeded by ``key``."""
        planes = decode_planes(sample)
        rng = np.random.default_rng(key)
        return [
            noise_record(p, rng, self.noise, max_len=self.seq_len)
            for p in split_at_words(planes, self.max_piece)
        ]

    def seek(self, epoch: int, record_batch: int, sample_base: int = 0) -> None:
        """Make the next iteration start at worker batch ``record_batch`` (of ``batch_size``
        records per rank) of stream epoch ``epoch``, counted from global record
        ``sample_base`` of the epoch; call before iterating. Every rank of a job must seek to
        the same place (streaming counts samples over all ranks)."""
        # The values streaming's state_dict() would give, read without it: state_dict() also
        # reads the resume state in shared memory, which another rank of the node may have
        # created and not yet written (an empty buffer: "Expecting value" on a 2-process resume).
        world = self._parallel_rank_world
        if not self.num_canonical_nodes:  # streaming 0.13's default (StreamingDataset._resume)
            self.num_canonical_nodes = world.num_nodes * (
                64 if self.shuffle_algo in ("py1s", "py2s") else 1
            )
        initial = self.initial_physical_nodes
        self.seek_base = sample_base
        super().load_state_dict(
            {
                "epoch": epoch,
                "sample_in_epoch": sample_base + record_batch * self.batch_size * self.world_size(),
                "num_canonical_nodes": self.num_canonical_nodes,
                "shuffle_seed": self.shuffle_seed,
                "initial_physical_nodes": (world.num_nodes if initial is None else initial),
            }
        )


def reuse_downloaded_shards(
    local_cache: Path, phase: int, tiers: list[str], split: str = "train"
) -> int:
    """Hard-link the shard files already downloaded for other phases of the run into the
    cache folder of anneal ``phase`` (``local_cache/_phase{phase}/TIER/SPLIT``), so that its
    dataset finds them on disk and downloads only what no phase has fetched yet.

    Each phase needs a folder of its own (streaming refuses two live datasets with a remote on
    one local folder), and without this every phase downloaded every shard of its mix again.
    Only complete files are linked: streaming and boto3 write under a temporary name and
    rename. A hard link costs no disk; where one cannot be made (another file system), the
    file is left to be downloaded. Safe when several ranks of a node call it at once.
    Returns the number of files linked.
    """
    linked = 0
    for tier in tiers:
        target = local_cache / f"_phase{phase}" / tier / split
        sources = [local_cache / tier / split, *sorted(local_cache.glob(f"_phase*/{tier}/{split}"))]
        for src in sources:
            if src == target or not src.is_dir():
                continue
            for f in src.iterdir():
                if (
                    not f.is_file()
                    or f.name.endswith(".tmp")
                    or not (f.name == "index.json" or ".mds" in f.name)
                ):
                    continue
                if (target / f.name).exists():
                    continue
                target.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(f, target / f.name)
                    linked += 1
                except FileExistsError:
                    continue  # another rank of the node linked it meanwhile
                except OSError:
                    continue  # no hard links here: streaming downloads it
    if linked:
        log.info(
            "[data] anneal phase %d: %d shard files already downloaded are reused from %s",
            phase,
            linked,
            local_cache,
        )
    return linked


@dataclass
class TierMixFactory:
    """Builds the :class:`NoisedRecordStream` of a tier mix: everything but the weights is
    fixed for the run. ``build(weights, phase)`` is called by the packer when a mix starts;
    ``check(weights)`` raises at start-up what ``build`` would raise later (missing tier,
    empty split, all-zero weights, a tier without letter counts in ``stats.json``).

    The weights of a mix are shares of letters (:func:`make_streams`); the letters and samples
    per tier come from ``stats.json`` in ``stats_root`` (default: ``shard_root``, or
    ``local_cache`` with a ``remote``, fetched from the store when not there yet), read once.
    """

    shard_root: str | Path | None
    seq_len: int
    noise: NoiseConfig
    noise_seed: int
    records_per_batch: int
    remote: str | None = None
    local_cache: str | Path | None = None
    epoch_size: int | None = None
    shuffle_seed: int = 9176
    num_canonical_nodes: int | None = None
    stats_root: str | Path | None = None

    def tier_sizes(self) -> dict[str, TierSize]:
        """Letters and samples of each tier's train split (``stats.json``, read once).
        Raises ``FileNotFoundError`` naming the file and the fix."""
        cached = self.__dict__.get("_sizes")
        if cached is not None:
            return cached
        root = self.stats_root
        if root is None:
            root = self.shard_root if self.remote is None else self.local_cache
        if root is None:
            raise ValueError(
                "data.remote needs data.local_cache (a local folder for downloaded shards)"
            )
        if self.remote is not None and not (Path(root) / "stats.json").exists():
            fetch_remote_stats(self.remote, root)
        sizes = read_tier_sizes(root, "train")
        self.__dict__["_sizes"] = sizes
        return sizes

    def _streams(self, weights: Mapping[str, float], phase: int) -> list[Stream]:
        cache = self.local_cache
        if cache is not None and phase > 0:
            # streaming refuses two live datasets on one local folder with a remote
            cache = Path(cache) / f"_phase{phase}"
            if self.remote is not None:
                reuse_downloaded_shards(
                    Path(self.local_cache), phase, [t for t, w in weights.items() if w > 0]
                )
        sizes = self.tier_sizes() if len(letter_shares(weights)) > 1 else {}
        return make_streams(self.shard_root, weights, "train", self.remote, cache, sizes)

    def check(self, weights: Mapping[str, float]) -> None:
        """Raise ``FileNotFoundError``/``ValueError`` (naming the tier and the fix) if the mix
        cannot be built from the shards."""
        self._streams(weights, 0)

    def build(self, weights: Mapping[str, float], phase: int = 0) -> NoisedRecordStream:
        """The dataset of mix ``weights``; ``phase`` keys its noise and its shuffle seed."""
        return NoisedRecordStream(
            streams=self._streams(weights, phase),
            seq_len=self.seq_len,
            noise=self.noise,
            noise_seed=self.noise_seed,
            batch_size=self.records_per_batch,
            epoch_size=self.epoch_size,
            shuffle_seed=self.shuffle_seed + phase,
            num_canonical_nodes=self.num_canonical_nodes,
            phase=phase,
        )
