"""Repairing a checkpoint folder left behind by a killed run."""

from __future__ import annotations

import os

import torch

from stoicheia.train.checkpoints import checkpoint_is_complete, repair_checkpoint_folder


def _save(path, value):
    torch.save({"state": {"x": torch.full((1000,), float(value))}}, path)


def test_truncated_newest_checkpoint_is_quarantined_and_latest_repointed(tmp_path):
    _save(tmp_path / "ep0-ba10-rank0.pt", 10)
    _save(tmp_path / "ep0-ba20-rank0.pt", 20)
    data = (tmp_path / "ep0-ba20-rank0.pt").read_bytes()
    (tmp_path / "ep0-ba20-rank0.pt").write_bytes(data[: len(data) // 2])  # killed mid-write
    os.symlink("ep0-ba20-rank0.pt", tmp_path / "latest-rank0.pt")
    assert not checkpoint_is_complete(tmp_path / "ep0-ba20-rank0.pt")
    actions = repair_checkpoint_folder(tmp_path)
    assert len(actions) == 2
    assert os.readlink(tmp_path / "latest-rank0.pt") == "ep0-ba10-rank0.pt"
    assert (tmp_path / "corrupt" / "ep0-ba20-rank0.pt").exists(), "nothing is deleted"
    assert torch.load(tmp_path / "latest-rank0.pt")["state"]["x"][0] == 10


def test_missing_symlink_is_recreated(tmp_path):
    _save(tmp_path / "ep0-ba10-rank0.pt", 10)
    _save(tmp_path / "ep0-ba30-rank0.pt", 30)
    repair_checkpoint_folder(tmp_path)
    assert os.readlink(tmp_path / "latest-rank0.pt") == "ep0-ba30-rank0.pt"
    assert repair_checkpoint_folder(tmp_path) == []  # idempotent


def test_absent_folder_is_fine(tmp_path):
    assert repair_checkpoint_folder(tmp_path / "nope") == []


# --- crafted broken files from a real torch checkpoint ------------------------------------

import zipfile  # noqa: E402

import pytest  # noqa: E402

from stoicheia.train.checkpoints import CheckpointError, missing_records  # noqa: E402


def _real_checkpoint(path, seed=0):
    """A model + AdamW state in Composer's nesting, saved with torch.save (the zip format
    Composer writes): many storage records."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(3, 8)).sum().backward()
    opt.step()
    torch.save(
        {
            "state": {
                "model": model.state_dict(),
                "optimizers": {"AdamW": opt.state_dict()},
                "timestamp": {"batch": 5},
            }
        },
        path,
    )
    return path


def _without_member(src, dst, member_suffix):
    """Rewrite the zip ``src`` into ``dst`` without the member ending in ``member_suffix``
    (what a SIGTERM during the tensor writes was seen to leave): CRCs stay valid."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            if not info.filename.endswith(member_suffix):
                zout.writestr(info, zin.read(info.filename))
    return dst


def test_checkpoint_lacking_a_storage_record_is_incomplete(tmp_path):
    good = _real_checkpoint(tmp_path / "good.pt")
    assert checkpoint_is_complete(good) and missing_records(good) == []
    bad = _without_member(good, tmp_path / "bad.pt", "/data/3")
    with zipfile.ZipFile(bad) as zf:
        assert zf.testzip() is None and any(
            n.endswith("data.pkl") for n in zf.namelist()
        )  # passes the old check
    with pytest.raises(RuntimeError, match="data/3"):
        torch.load(bad, weights_only=False)  # what a resumed run hit
    assert missing_records(bad) == ["data/3"]
    assert not checkpoint_is_complete(bad)


def test_truncated_and_crc_bad_checkpoints_are_incomplete(tmp_path):
    good = _real_checkpoint(tmp_path / "good.pt")
    data = bytearray(good.read_bytes())
    (tmp_path / "cut.pt").write_bytes(data[: len(data) - 100])
    assert not checkpoint_is_complete(tmp_path / "cut.pt")
    with zipfile.ZipFile(good) as zf:  # flip one byte inside the first tensor record
        info = next(i for i in zf.infolist() if i.filename.endswith("/data/0"))
    name_len, extra_len = (
        int.from_bytes(data[info.header_offset + 26 : info.header_offset + 28], "little"),
        int.from_bytes(data[info.header_offset + 28 : info.header_offset + 30], "little"),
    )
    offset = (
        info.header_offset + 30 + name_len + extra_len
    )  # the record's first byte (local header)
    data[offset + 2] ^= 0xFF
    (tmp_path / "crc.pt").write_bytes(bytes(data))
    assert not checkpoint_is_complete(tmp_path / "crc.pt")
    (tmp_path / "empty.pt").write_bytes(b"")
    assert not checkpoint_is_complete(tmp_path / "empty.pt")
    assert not checkpoint_is_complete(tmp_path / "absent.pt")


def test_scan_runs_no_code_of_the_pickle(tmp_path):
    class Boom:
        def __reduce__(self):
            return (os.system, ("touch " + str(tmp_path / "pwned"),))

    torch.save({"x": torch.ones(3), "evil": Boom()}, tmp_path / "evil.pt")
    assert checkpoint_is_complete(tmp_path / "evil.pt")
    assert not (tmp_path / "pwned").exists()


def test_falls_back_past_a_newest_checkpoint_lacking_a_record(tmp_path):
    _real_checkpoint(tmp_path / "ep0-ba10-rank0.pt", seed=10)
    _real_checkpoint(tmp_path / "ep0-ba20-rank0.pt", seed=20)
    _without_member(tmp_path / "ep0-ba20-rank0.pt", tmp_path / "x.zip", "/data/2")
    os.replace(tmp_path / "x.zip", tmp_path / "ep0-ba20-rank0.pt")
    os.symlink("ep0-ba20-rank0.pt", tmp_path / "latest-rank0.pt")
    actions = repair_checkpoint_folder(tmp_path, first_save=10)
    assert any("ep0-ba20-rank0.pt" in a and "lacks data/2" in a for a in actions), actions
    assert os.readlink(tmp_path / "latest-rank0.pt") == "ep0-ba10-rank0.pt"
    assert (tmp_path / "corrupt" / "ep0-ba20-rank0.pt").exists()


def test_no_complete_checkpoint_left_is_an_error_not_a_fresh_start(tmp_path):
    for b in (10, 20):
        _real_checkpoint(tmp_path / f"ep0-ba{b}-rank0.pt")
        data = (tmp_path / f"ep0-ba{b}-rank0.pt").read_bytes()
        (tmp_path / f"ep0-ba{b}-rank0.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="batch 20.*move .* away"):
        repair_checkpoint_folder(tmp_path, first_save=10)
    assert sorted(p.name for p in (tmp_path / "corrupt").iterdir()) == [
        "ep0-ba10-rank0.pt",
        "ep0-ba20-rank0.pt",
    ]
    # the next start sees the quarantined files and still refuses
    with pytest.raises(CheckpointError):
        repair_checkpoint_folder(tmp_path, first_save=10)


def test_an_incomplete_first_checkpoint_allows_a_fresh_start(tmp_path):
    _real_checkpoint(tmp_path / "ep0-ba10-rank0.pt")
    (tmp_path / "ep0-ba10-rank0.pt").write_bytes(
        (tmp_path / "ep0-ba10-rank0.pt").read_bytes()[:500]
    )
    actions = repair_checkpoint_folder(tmp_path, first_save=10)
    assert any("starts from batch 0" in a for a in actions)
    assert not (tmp_path / "latest-rank0.pt").exists()


def test_named_and_partial_checkpoints_are_checked(tmp_path):
    _real_checkpoint(tmp_path / "ep0-ba10-rank0.pt")
    _real_checkpoint(tmp_path / "final.pt")
    _without_member(tmp_path / "final.pt", tmp_path / "best.pt", "/data/1")
    (tmp_path / ".pre_anneal.partial.pt").write_bytes(b"PK\x03\x04half")
    actions = repair_checkpoint_folder(tmp_path, first_save=10)
    assert (tmp_path / "corrupt" / "best.pt").exists() and (
        tmp_path / "corrupt" / ".pre_anneal.partial.pt"
    ).exists()
    assert (tmp_path / "final.pt").exists() and len(actions) == 3, actions


def test_run_without_a_complete_checkpoint_stops_before_training(
    small_shards, tmp_path, monkeypatch
):
    import sys
    from pathlib import Path

    from stoicheia.train.builder import build_trainer

    sys.path.insert(0, str(Path(__file__).parent))
    from tiny import tiny_run

    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    folder = tmp_path / "r"
    folder.mkdir()
    for b in (3, 6):
        _real_checkpoint(folder / f"ep0-ba{b}-rank0.pt")
        _without_member(folder / f"ep0-ba{b}-rank0.pt", tmp_path / "x.zip", "/data/0")
        os.replace(tmp_path / "x.zip", folder / f"ep0-ba{b}-rank0.pt")
    with pytest.raises(ValueError, match=r"no complete checkpoint in .*batch 6"):
        build_trainer(tiny_run(small_shards, tmp_path, "r", "train.save_interval=3"))
    assert sorted(p.name for p in (folder / "corrupt").iterdir()) == [
        "ep0-ba3-rank0.pt",
        "ep0-ba6-rank0.pt",
    ]
    bad = folder / "corrupt" / "ep0-ba6-rank0.pt"
    with pytest.raises(ValueError, match="load_path=.*lacks the tensor records data/0"):
        build_trainer(tiny_run(small_shards, tmp_path, "other", f"train.load_path={bad}"))
