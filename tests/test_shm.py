"""Cleaning streaming's shared memory left by killed runs, without touching live segments."""

from __future__ import annotations

import sys
from multiprocessing import shared_memory
from pathlib import Path

import pytest

from stoicheia.data.shm import clean_stale_streaming_shm


def test_only_unmapped_segments_are_removed(tmp_path):
    shm, proc = tmp_path / "shm", tmp_path / "proc"
    shm.mkdir()
    (proc / "4242").mkdir(parents=True)
    for name in ("000001_locals", "000002_locals", "000002_barrier", "other_segment"):
        (shm / name).write_bytes(b"x")
    (proc / "4242" / "maps").write_text(
        "7f00-7f01 rw-s 00000000 00:1a 12 /dev/shm/000002_locals\n"
        "7f02-7f03 rw-s 00000000 00:1a 13 /dev/shm/000002_barrier\n"
    )
    assert clean_stale_streaming_shm(shm, proc) == ["000001_locals"]
    assert sorted(p.name for p in shm.iterdir()) == [
        "000002_barrier",
        "000002_locals",
        "other_segment",
    ]


def test_without_proc_nothing_is_removed(tmp_path):
    shm = tmp_path / "shm"
    shm.mkdir()
    (shm / "000001_locals").write_bytes(b"x")
    assert clean_stale_streaming_shm(shm, tmp_path / "no-proc") == []
    assert (shm / "000001_locals").exists()


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="POSIX shared memory in /dev/shm is Linux-only"
)
def test_real_segments_live_one_kept_stale_one_removed():
    live = shared_memory.SharedMemory(name="999990_stoicheia_live", create=True, size=64)
    stale = shared_memory.SharedMemory(name="999991_stoicheia_stale", create=True, size=64)
    stale.close()  # what a SIGKILLed process leaves: the file, mapped by nobody
    try:
        removed = clean_stale_streaming_shm()
        assert "999991_stoicheia_stale" in removed
        assert "999990_stoicheia_live" not in removed
        assert Path("/dev/shm/999990_stoicheia_live").exists()
    finally:
        live.close()
        live.unlink()
        if Path("/dev/shm/999991_stoicheia_stale").exists():
            Path("/dev/shm/999991_stoicheia_stale").unlink()


def test_a_lost_prefix_race_is_retried_in_a_single_process():
    import errno

    import pytest

    from stoicheia.data.shm import retry_prefix_race

    calls = []

    def make():
        calls.append(1)
        if len(calls) < 3:
            raise FileExistsError(errno.EEXIST, "File exists", "/002317_locals")
        return "dataset"

    assert retry_prefix_race(make) == "dataset" and len(calls) == 3

    def other():
        raise FileExistsError(errno.EEXIST, "File exists", "/tmp/not-streaming")

    with pytest.raises(FileExistsError):
        retry_prefix_race(other)


# --- two jobs starting at the same moment on one node --------------------------------------

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="POSIX shared memory in /dev/shm is Linux-only"
)
def test_two_multi_rank_jobs_started_at_once_both_start(small_shards, tmp_path):
    """Two ``composer -n 2`` jobs on one node build their streaming datasets at the same
    moment (released together after every rank has imported everything). Without the prefix
    lock one of them dies with ``FileExistsError: .../NNNNNN_locals`` (seen here with
    ``plain`` in tests/shm_race_job.py) or streaming's "shared memory registered does not
    match"; with it both build all their datasets."""
    import os
    import subprocess
    import time

    sync = tmp_path / "sync"
    sync.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    }
    env["PYTHONPATH"] = str(REPO)
    cmd = [
        str(REPO / ".venv" / "bin" / "composer"),
        "-n",
        "2",
        str(REPO / "tests" / "shm_race_job.py"),
        str(small_shards / "silver" / "val"),
        "4",
        "guarded",
        str(sync),
    ]
    jobs = [
        subprocess.Popen(
            cmd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        for _ in range(2)
    ]
    try:
        deadline = time.time() + 600
        while len(list(sync.glob("ready-*"))) < 4:
            assert all(j.poll() is None for j in jobs), "a job ended before the start: " + "".join(
                j.communicate()[0][-2000:] for j in jobs
            )
            assert time.time() < deadline, "the jobs did not get ready"
            time.sleep(0.05)
        (sync / "go").touch()
        outs = [j.communicate(timeout=600)[0] for j in jobs]
    finally:
        for j in jobs:
            if j.poll() is None:
                os.killpg(j.pid, 9)
    for j, out in zip(jobs, outs, strict=True):
        assert j.returncode == 0, out[-3000:]
        assert "rank 0: built 4 datasets of" in out, out[-3000:]


def test_a_job_waits_for_the_prefix_lock_of_another(tmp_path, monkeypatch):
    """While another process holds the node's prefix lock (a job building its datasets), a
    dataset construction here does not start, and it starts as soon as the lock is free."""
    import subprocess
    import time

    from stoicheia.data import shm

    monkeypatch.setattr(shm.tempfile, "gettempdir", lambda: str(tmp_path))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY | os.O_CREAT); "
            "fcntl.flock(fd, fcntl.LOCK_EX); "
            "print('held', flush=True); time.sleep(1.5)",
            str(tmp_path / shm.LOCK_NAME),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    t0 = time.monotonic()
    started = []
    assert shm.retry_prefix_race(lambda: started.append(time.monotonic()) or "dataset") == "dataset"
    holder.wait()
    assert started[0] - t0 > 0.5, "built while another job held the lock"
    # and the lock is free again afterwards: a second construction does not wait
    t1 = time.monotonic()
    shm.retry_prefix_race(lambda: "again")
    assert time.monotonic() - t1 < 0.5
