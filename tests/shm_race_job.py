"""One job of the two-jobs-at-once test (tests/test_shm.py), run under ``composer -n N``.

Every rank builds ``COUNT`` streaming datasets over the local shard folder ``LOCAL`` and keeps
them alive (so each takes a new shared-memory prefix, as the training and evaluation datasets
of a run do), either through :func:`stoicheia.data.shm.retry_prefix_race` (``guarded``, what
the project does) or directly (``plain``, streaming alone). Each rank first touches
``SYNC/ready-PID`` and waits for ``SYNC/go``, so that the test starts both jobs' dataset
construction at the same moment. Prints one line (rank 0).

Usage: ``composer -n 2 tests/shm_race_job.py LOCAL COUNT guarded|plain SYNC``
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch.distributed as tdist
from streaming import StreamingDataset

from stoicheia.data.shm import retry_prefix_race, stop_prefix_probe_leak


def main(local: str, count: int, mode: str, sync: str) -> int:
    tdist.init_process_group("gloo")
    stop_prefix_probe_leak()
    # the same moment for both jobs: each rank says it is ready, then waits for the test's "go"
    Path(sync, f"ready-{os.getpid()}").touch()
    while not Path(sync, "go").exists():
        time.sleep(0.005)
    kept = []
    for _ in range(count):
        if mode == "guarded":
            kept.append(retry_prefix_race(lambda: StreamingDataset(local=local, batch_size=1)))
        else:
            kept.append(StreamingDataset(local=local, batch_size=1))
    samples = [ds.num_samples for ds in kept]
    tdist.barrier()
    print(
        f"rank {os.environ.get('RANK')}: built {len(kept)} datasets of {samples[0]} samples",
        flush=True,
    )
    tdist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]))
