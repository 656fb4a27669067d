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
    assert sorted(p.name for p in shm.iterdir()) == ["000002_barrier", "000002_locals", "other_segment"]


def test_without_proc_nothing_is_removed(tmp_path):
    shm = tmp_path / "shm"
    shm.mkdir()
    (shm / "000001_locals").write_bytes(b"x")
    assert clean_stale_streaming_shm(shm, tmp_path / "no-proc") == []
    assert (shm / "000001_locals").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX shared memory in /dev/shm is Linux-only")
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
