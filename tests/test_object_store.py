"""Runs whose ``train.save_folder`` is an S3 bucket, against a real S3-compatible server on
127.0.0.1 (moto's server mode, started and stopped by the tests): uploads, a fresh machine
resuming from the store, shards read from the store, an outage of the store during a run,
corrupt checkpoints in the store, credentials kept out of every file, and the failures that
stop a run before its first batch.

Every training run is ``composer recipes/train.py`` in its own working directory (a
"machine": its local run folder is ``runs/{run_name}`` there), with the store's endpoint and
fake credentials in the environment only.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import torch
from omegaconf import OmegaConf

from stoicheia.config import to_dict

sys.path.insert(0, str(Path(__file__).parent))
from s3_server import BUCKET, SECRET  # noqa: E402
from tiny import tiny_run  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
COMPOSER = REPO / ".venv" / "bin" / "composer"
# 12 batches, checkpoint + evaluation every 3, anneal from batch 6 (pre_anneal.pt), no early stop
SHORT = (
    "train.nominal_steps=12", "train.max_steps=12", "train.decay_frac=0.5", "train.save_interval=3",
    "callbacks.auto_anneal=false", "callbacks.anneal_early_stop.patience=0",
)


def write_yaml(path: Path, shards: Path, name: str, *extra: str) -> Path:
    cfg = tiny_run(shards, path.parent, name, f"train.save_folder=s3://{BUCKET}/runs/{{run_name}}", *SHORT, *extra)
    OmegaConf.save(OmegaConf.create(to_dict(cfg)), path)
    return path


def clean_env(server) -> dict[str, str]:
    """The test process's environment without launcher or AWS settings, plus the server's."""
    drop = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("AWS_") and k != "S3_ENDPOINT_URL"}
    env.update(server.env)
    env["PYTHONPATH"] = str(REPO)
    return env


def train(machine: Path, yaml: Path, env: dict[str, str], *overrides: str, n: int = 1, timeout: int = 300):
    machine.mkdir(parents=True, exist_ok=True)
    cmd = [str(COMPOSER), "-n", str(n), str(REPO / "recipes" / "train.py"), str(yaml), *overrides]
    return subprocess.run(cmd, cwd=machine, env=env, capture_output=True, text=True, timeout=timeout)


def store_weights(server, key: str) -> dict[str, torch.Tensor]:
    return torch.load(io.BytesIO(server.get(key)), weights_only=False)["state"]["model"]


def same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def assert_no_secret(roots: list[Path], texts: list[str], objects: dict[str, bytes]) -> int:
    """No file under ``roots`` (zip members of checkpoints included, unpickled checkpoints as
    text), no object of the store and no console text holds the secret. Returns files read."""
    needle = SECRET.encode()
    n = 0

    def check_blob(where: str, data: bytes) -> None:
        assert needle not in data, f"the secret is in {where}"
        if data[:2] == b"PK":
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                for member in zf.namelist():
                    assert needle not in zf.read(member), f"the secret is in {where}:{member}"
            obj = torch.load(io.BytesIO(data), weights_only=False)
            assert SECRET not in repr(obj), f"the secret is in the unpickled {where}"

    for root in roots:
        for f in Path(root).rglob("*"):
            if f.is_file() and not f.is_symlink():
                check_blob(str(f), f.read_bytes())
                n += 1
    for key, data in objects.items():
        check_blob(f"s3://{BUCKET}/{key}", data)
    for t in texts:
        assert SECRET not in t
    return n


def test_store_run_uploads_everything_and_a_fresh_machine_resumes_it(small_shards, tmp_path, s3_server):
    env = clean_env(s3_server)
    # the uninterrupted run
    ref = train(tmp_path / "A", write_yaml(tmp_path / "ref.yaml", small_shards, "ref"), env)
    assert ref.returncode == 0, ref.stdout[-3000:] + ref.stderr[-3000:]
    keys = s3_server.keys("runs/ref/")
    names = {k.split("/")[-1] for k in keys}
    for name in ["ep0-ba3-rank0.pt", "ep0-ba6-rank0.pt", "ep0-ba9-rank0.pt", "ep0-ba12-rank0.pt", "latest-rank0.pt.symlink",
                 "best.pt", "pre_anneal.pt", "final.pt", "complete.json", "anneal.json", "best.json", "evals.jsonl", "metrics.jsonl"]:
        assert name in names, (name, sorted(names))
    assert s3_server.get("runs/ref/latest-rank0.pt.symlink").decode() == "runs/ref/ep0-ba12-rank0.pt"
    done = json.loads(s3_server.get("runs/ref/complete.json"))
    assert done["step"] == 12 and done["final"] == "final.pt"
    assert json.loads(s3_server.get("runs/ref/anneal.json"))["step"] == 6
    # the store holds what the local run folder holds
    local = tmp_path / "A" / "runs" / "ref"
    assert s3_server.get("runs/ref/final.pt") == (local / "final.pt").read_bytes()
    assert s3_server.get("runs/ref/metrics.jsonl") == (local / "metrics.jsonl").read_bytes()

    # a run killed (as by preemption) once the store has a checkpoint
    yaml = write_yaml(tmp_path / "cut.yaml", small_shards, "cut")
    (tmp_path / "B").mkdir()
    proc = subprocess.Popen(
        [str(COMPOSER), "-n", "1", str(REPO / "recipes" / "train.py"), str(yaml)], cwd=tmp_path / "B", env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.time() + 240
    while "runs/cut/latest-rank0.pt.symlink" not in s3_server.keys("runs/cut/"):
        assert proc.poll() is None and time.time() < deadline, "the run ended before its first checkpoint was uploaded"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    pointed = s3_server.get("runs/cut/latest-rank0.pt.symlink").decode()
    at = int(pointed.split("-ba")[1].split("-")[0])
    assert at < 12, "killed before the end"
    # a fresh machine: empty local folder, same command
    again = train(tmp_path / "C", yaml, env)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"[store] restored ep0-ba{at}-rank0.pt (batch {at})" in again.stdout
    assert f"resuming run 'cut' from its checkpoint at batch {at}" in again.stdout
    assert same_weights(store_weights(s3_server, "runs/cut/final.pt"), store_weights(s3_server, "runs/ref/final.pt"))
    assert json.loads(s3_server.get("runs/cut/complete.json"))["step"] == 12
    # the logs in the store go on from where the killed job left them: every step is there
    steps = {json.loads(line)["step"] for line in s3_server.get("runs/cut/metrics.jsonl").decode().splitlines()}
    assert set(range(1, 13)) <= steps, sorted(steps)

    # another fresh machine: the store says the run is complete; nothing is trained
    done = train(tmp_path / "D", yaml, env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "run 'cut' is complete at step 12" in done.stdout and f"s3://{BUCKET}/runs/cut/final.pt" in done.stdout
    assert not list((tmp_path / "D" / "runs" / "cut").glob("*.pt")), "nothing downloaded but the marker"

    # the secret of the environment is in no file, object or console output
    objects = {k: s3_server.get(k) for k in s3_server.keys()}
    texts = [r.stdout + r.stderr for r in (ref, again, done)]
    assert assert_no_secret([tmp_path / m for m in "ABCD"], texts, objects) > 20
