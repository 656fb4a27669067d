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
