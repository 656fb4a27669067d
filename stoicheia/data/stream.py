"""The tier mix: one ``streaming.Stream`` per tier, noised records out of DataLoader workers.

:class:`NoisedRecordStream` is a ``StreamingDataset`` whose samples are records already split
into word-aligned pieces and noised (in the DataLoader workers). Its noise depends only on
``(noise_seed, epoch, rank, position in the epoch)``, so a resumed run re-creates exactly the
same pieces, and a record repeated by the tier mix is noised afresh each time.

Its ``state_dict``/``load_state_dict`` are the hooks Composer calls to save and restore the
data position; they hold the position of :class:`stoicheia.data.loader.PackedLoader`, which
packs pieces into rows in the main process (see that module for why).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from streaming import Stream, StreamingDataset
from torch.utils.data import get_worker_info

from stoicheia.data.shards import decode_planes, index_samples, split_at_words
from stoicheia.noise import NoiseConfig, Noised, noise_record


def make_streams(
    shard_root: str | Path,
    tier_weights: Mapping[str, float],
    split: str,
    remote: str | None = None,
    local_cache: str | Path | None = None,
) -> list[Stream]:
    """One ``Stream`` per tier with a positive weight; weights become proportions.

    ``shard_root`` is the output of ``stoicheia convert`` (``TIER/SPLIT/index.json``). With
    ``remote`` (an object-store URI holding the same layout) shards are downloaded into
    ``local_cache/TIER/SPLIT``. Raises ``FileNotFoundError`` naming the missing index and the
    fix, and ``ValueError`` for negative or all-zero weights.
    """
    if any(w < 0 for w in tier_weights.values()):
        raise ValueError(f"tier weights must be >= 0, got {dict(tier_weights)}")
    active = {t: float(w) for t, w in tier_weights.items() if w > 0}
    if not active:
        raise ValueError(f"every tier weight is 0: {dict(tier_weights)}; give at least one tier a positive weight")
    total = sum(active.values())
    streams = []
    for tier, w in active.items():
        if remote is None:
            local = Path(shard_root) / tier / split
            if not (local / "index.json").exists():
                raise FileNotFoundError(
                    f"{local / 'index.json'} not found: tier {tier!r} has no {split} shards. "
                    f"Run `stoicheia convert` with {tier}=PATH, or set its weight to 0 in data.tier_weights"
                )
            if index_samples(local) == 0:
                raise ValueError(
                    f"{local} holds no records: tier {tier!r} has an empty {split} split. "
                    f"Convert more text for it, or set its weight to 0 in data.tier_weights"
                )
            streams.append(Stream(local=str(local), proportion=w / total))
        else:
            if local_cache is None:
                raise ValueError("data.remote needs data.local_cache (a local folder for downloaded shards)")
            streams.append(
                Stream(
                    remote=f"{remote.rstrip('/')}/{tier}/{split}",
                    local=str(Path(local_cache) / tier / split),
                    proportion=w / total,
                )
            )
    return streams


class NoisedRecordStream(StreamingDataset):
    """Records of the tier mix, split into pieces of at most ``max_piece`` letters and noised.

    Each sample is a ``list[Noised]`` (one per piece, in text order), every piece at most
    ``seq_len`` slots long after elastic expansion. Use with a DataLoader whose batch size is
    ``batch_size`` records and a list-returning ``collate_fn``.

    Args:
        streams: from :func:`make_streams`.
        seq_len: row length T in slots.
        noise: noising configuration.
        noise_seed: seed of the per-record noise.
        batch_size: records per DataLoader batch per device (streaming needs it to resume).
        epoch_size: samples per epoch over all streams (``None``: the size of the streams).
        shuffle_seed, num_canonical_nodes: passed to ``StreamingDataset``.
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
    ) -> None:
        super().__init__(
            streams=streams,
            epoch_size=epoch_size,
            shuffle=shuffle,
            shuffle_seed=shuffle_seed,
            batch_size=batch_size,
            num_canonical_nodes=num_canonical_nodes,
            predownload=predownload,
        )
        self.seq_len = seq_len
        # Leave a fifth of the row for elastic expansion of unknown-width lacunae.
        self.max_piece = max(1, int(seq_len * 0.8))
        self.noise = noise
        self.noise_seed = noise_seed
        self._epoch = 0
        self._first_batch = 0
        self.packer_state: dict[str, Any] | None = None  # set by PackedLoader in the main process
        self.resume_from: dict[str, Any] | None = None  # set by load_state_dict

    def _resume_incr_epoch(self) -> tuple[int, int]:
        # Runs in every worker at the start of an epoch: remember the epoch and the first
        # record batch of this (possibly resumed) epoch for the noise key.
        epoch, sample_in_epoch = super()._resume_incr_epoch()
        self._epoch = epoch
        self._first_batch = sample_in_epoch // (self.batch_size * self._parallel_rank_world.num_ranks)
        return epoch, sample_in_epoch

    def __iter__(self) -> Iterator[list[Noised]]:
        """Yield the noised pieces of each record of this worker's share of the epoch.

        The noise of a record is keyed by ``(noise_seed, epoch, rank, position)``, where
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
            yield self.noise_sample(sample, [self.noise_seed, self._epoch, rank, position])

    def noise_sample(self, sample: Mapping[str, Any], key: list[int]) -> list[Noised]:
        """Split one MDS sample into pieces of at most ``max_piece`` letters at word starts and
        noise each (``max_len = seq_len``) with an rng seeded by ``key``."""
        planes = decode_planes(sample)
        rng = np.random.default_rng(key)
        return [noise_record(p, rng, self.noise, max_len=self.seq_len) for p in split_at_words(planes, self.max_piece)]

    # --- data position, saved in Composer checkpoints -------------------------------------
    def state_dict(self, num_samples: int, from_beginning: bool) -> dict[str, Any]:
        """Composer hook. Returns the packer position of every rank (``num_samples`` is ignored:
        Composer's sample count cannot describe a packed position).

        Must be called on every rank at once (Composer does so when it checkpoints), since the
        ranks' positions are gathered.
        """
        from composer.utils import dist

        own = dict(self.packer_state or {"epoch": 0, "batch": 0, "item": 0, "piece": 0, "offset": 0})
        ranks = dist.all_gather_object(own)
        # streaming resolves num_canonical_nodes lazily (in the workers); its own state_dict
        # resolves it here too, so take the shuffle parameters from it.
        base = super().state_dict(0, True)
        return {
            "version": 1,
            "ranks": ranks,
            "records_per_batch": self.batch_size,
            "num_canonical_nodes": base["num_canonical_nodes"],
            "shuffle_seed": base["shuffle_seed"],
            "initial_physical_nodes": base["initial_physical_nodes"],
        }

    def load_state_dict(self, obj: dict[str, Any]) -> None:
        """Composer hook: remember where the packer of this rank resumes, and point streaming at
        the last record batch that every rank had fully started.

        Raises ``ValueError`` if the checkpoint was written with another world size or another
        number of records per batch (the packed position cannot be mapped then).
        """
        from composer.utils import dist

        if not obj or obj.get("version") != 1:
            raise ValueError(f"unrecognised data position in checkpoint: {obj!r}")
        ranks = obj["ranks"]
        if len(ranks) != dist.get_world_size():
            raise ValueError(
                f"checkpoint data position was saved by {len(ranks)} ranks, this run has {dist.get_world_size()}; "
                "resume with the same number of GPUs, or load weights only (load_weights_only: true)"
            )
        if obj["records_per_batch"] != self.batch_size:
            raise ValueError(
                f"checkpoint used data.records_per_batch={obj['records_per_batch']}, the config says {self.batch_size}; "
                "keep it unchanged to resume"
            )
        own = ranks[dist.get_global_rank()]
        first = min(r["batch"] for r in ranks)
        self.resume_from = {**own, "skip_batches": own["batch"] - first}
        world = dist.get_world_size()
        super().load_state_dict(
            {
                "epoch": own["epoch"],
                "sample_in_epoch": first * self.batch_size * world,
                "num_canonical_nodes": obj["num_canonical_nodes"],
                "shuffle_seed": obj["shuffle_seed"],
                "initial_physical_nodes": obj["initial_physical_nodes"],
            }
        )
