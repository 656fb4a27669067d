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

import pytest
import torch
from omegaconf import OmegaConf

from stoicheia.config import ConfigError, to_dict

sys.path.insert(0, str(Path(__file__).parent))
from s3_server import BUCKET, SECRET  # noqa: E402
from tiny import tiny_run  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
COMPOSER = REPO / ".venv" / "bin" / "composer"
# 12 batches, checkpoint + evaluation every 3, anneal from batch 6 (pre_anneal.pt), no early stop
SHORT = (
    "train.nominal_steps=12",
    "train.max_steps=12",
    "train.decay_frac=0.5",
    "train.save_interval=3",
    "callbacks.auto_anneal=false",
    "callbacks.anneal_early_stop.patience=0",
)


def write_yaml(path: Path, shards: Path, name: str, *extra: str) -> Path:
    cfg = tiny_run(
        shards,
        path.parent,
        name,
        f"train.save_folder=s3://{BUCKET}/runs/{{run_name}}",
        *SHORT,
        *extra,
    )
    OmegaConf.save(OmegaConf.create(to_dict(cfg)), path)
    return path


def clean_env(server) -> dict[str, str]:
    """The test process's environment without launcher or AWS settings, plus the server's."""
    drop = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in drop and not k.startswith("AWS_") and k != "S3_ENDPOINT_URL"
    }
    env.update(server.env)
    env["PYTHONPATH"] = str(REPO)
    return env


def train(
    machine: Path, yaml: Path, env: dict[str, str], *overrides: str, n: int = 1, timeout: int = 300
):
    machine.mkdir(parents=True, exist_ok=True)
    cmd = [str(COMPOSER), "-n", str(n), str(REPO / "recipes" / "train.py"), str(yaml), *overrides]
    return subprocess.run(
        cmd, cwd=machine, env=env, capture_output=True, text=True, timeout=timeout
    )


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


def batch_of(key: str) -> int:
    return int(key.rsplit("-ba", 1)[1].split("-")[0])


def kill_after_upload(
    server, machine: Path, yaml: Path, env, prefix: str, *, min_batch: int, n: int = 1
) -> str:
    """Start a run, SIGKILL its whole process group as soon as the store's latest symlink
    points at batch ``min_batch`` or later; return its console output."""
    machine.mkdir(parents=True, exist_ok=True)
    log = machine / "console.txt"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [str(COMPOSER), "-n", str(n), str(REPO / "recipes" / "train.py"), str(yaml)],
            cwd=machine,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.time() + 240
        while True:
            assert proc.poll() is None and time.time() < deadline, (
                "the run ended before it was killed: " + log.read_text()[-3000:]
            )
            if f"{prefix}latest-rank0.pt.symlink" in server.keys(prefix):
                if batch_of(server.get(f"{prefix}latest-rank0.pt.symlink").decode()) >= min_batch:
                    break
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    text = log.read_text()
    log.unlink()
    return text


@pytest.mark.slow
def test_store_run_uploads_everything_and_a_fresh_machine_resumes_it(
    small_shards, tmp_path, s3_server, monkeypatch, capsys
):
    env = clean_env(s3_server)
    # the uninterrupted run
    ref = train(tmp_path / "A", write_yaml(tmp_path / "ref.yaml", small_shards, "ref"), env)
    assert ref.returncode == 0, ref.stdout[-3000:] + ref.stderr[-3000:]
    keys = s3_server.keys("runs/ref/")
    names = {k.split("/")[-1] for k in keys}
    for name in [
        "ep0-ba3-rank0.pt",
        "ep0-ba6-rank0.pt",
        "ep0-ba9-rank0.pt",
        "ep0-ba12-rank0.pt",
        "latest-rank0.pt.symlink",
        "best.pt",
        "pre_anneal.pt",
        "final.pt",
        "complete.json",
        "anneal.json",
        "best.json",
        "evals.jsonl",
        "metrics.jsonl",
    ]:
        assert name in names, (name, sorted(names))
    assert (
        s3_server.get("runs/ref/latest-rank0.pt.symlink").decode() == "runs/ref/ep0-ba12-rank0.pt"
    )
    done = json.loads(s3_server.get("runs/ref/complete.json"))
    assert done["step"] == 12 and done["final"] == "final.pt"
    assert json.loads(s3_server.get("runs/ref/anneal.json"))["step"] == 6
    # the store holds what the local run folder holds
    local = tmp_path / "A" / "runs" / "ref"
    assert s3_server.get("runs/ref/final.pt") == (local / "final.pt").read_bytes()
    assert s3_server.get("runs/ref/metrics.jsonl") == (local / "metrics.jsonl").read_bytes()

    # the same run reading its shards from the store, killed (as by preemption) once the
    # store's latest points at batch 6 or later
    s3_server.upload_folder(small_shards, "shards/small")
    yaml = write_yaml(
        tmp_path / "cut.yaml",
        small_shards,
        "cut",
        "data.shard_root=/nonexistent",
        f"data.remote=s3://{BUCKET}/shards/small",
        "data.local_cache=cache",  # relative: inside each machine's working directory
    )
    cut = kill_after_upload(s3_server, tmp_path / "B", yaml, env, "runs/cut/", min_batch=6)
    # the newest checkpoint in the store is damaged: it must be skipped, not loaded
    newest = max((k for k in s3_server.keys("runs/cut/ep")), key=batch_of)
    data = s3_server.get(newest)
    s3_server.put(newest, data[: len(data) // 2])
    at = max(batch_of(k) for k in s3_server.keys("runs/cut/ep") if k != newest)
    # a fresh machine: empty local folder and shard cache, same command
    again = train(tmp_path / "C", yaml, env)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert (
        f"[store] s3://{BUCKET}/{newest} is incomplete or corrupt: it is not loaded" in again.stdout
    )
    assert f"[store] restored ep0-ba{at}-rank0.pt (batch {at})" in again.stdout
    assert f"resuming run 'cut' from its checkpoint at batch {at}" in again.stdout
    assert any((tmp_path / "C" / "cache" / "gold" / "train").glob("shard.*")), (
        "shards were downloaded"
    )
    assert (tmp_path / "C" / "cache" / "stats.json").read_bytes() == (
        small_shards / "stats.json"
    ).read_bytes()
    assert same_weights(
        store_weights(s3_server, "runs/cut/final.pt"), store_weights(s3_server, "runs/ref/final.pt")
    )
    assert json.loads(s3_server.get("runs/cut/complete.json"))["step"] == 12
    # the logs in the store go on from where the killed job left them: every step is there
    steps = {
        json.loads(line)["step"]
        for line in s3_server.get("runs/cut/metrics.jsonl").decode().splitlines()
    }
    assert set(range(1, 13)) <= steps, sorted(steps)

    # another fresh machine: the store says the run is complete; nothing is trained (the
    # recipe's main() in this process: the check comes before torch and Composer are needed)
    (tmp_path / "D").mkdir()
    monkeypatch.chdir(tmp_path / "D")
    rc, done = _run_main(yaml, env, monkeypatch, capsys)
    assert rc == 0, done
    assert "run 'cut' is complete at step 12" in done and f"s3://{BUCKET}/runs/cut/final.pt" in done
    assert not list((tmp_path / "D" / "runs" / "cut").glob("*.pt")), (
        "nothing downloaded but the marker"
    )

    # the secret of the environment is in no file, object or console output
    objects = {k: s3_server.get(k) for k in s3_server.keys()}
    texts = [r.stdout + r.stderr for r in (ref, again)] + [cut, done]
    assert assert_no_secret([tmp_path / m for m in "ABCD"], texts, objects) > 20


@pytest.mark.slow
def test_two_processes_resume_from_the_store_on_a_fresh_machine(small_shards, tmp_path, s3_server):
    env = clean_env(s3_server)
    yaml = write_yaml(tmp_path / "two.yaml", small_shards, "two")
    first = kill_after_upload(s3_server, tmp_path / "A", yaml, env, "runs/two/", min_batch=3, n=2)
    at = max(batch_of(k) for k in s3_server.keys("runs/two/ep"))
    again = train(tmp_path / "B", yaml, env, n=2)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    out = again.stdout
    assert out.count(f"[store] restored ep0-ba{at}-rank0.pt (batch {at})") == 1, out[-3000:]
    assert out.count(f"resuming run 'two' from its checkpoint at batch {at}") == 1
    assert out.count("[run] step 12: run complete") == 1
    final = torch.load(io.BytesIO(s3_server.get("runs/two/final.pt")), weights_only=False)
    assert len(final["state"]["dataset_state"]["train"]["ranks"]) == 2, (
        "both ranks' data positions are in it"
    )
    assert json.loads(s3_server.get("runs/two/complete.json"))["step"] == 12
    assert SECRET not in first + out + again.stderr


class Console:
    """A run's console lines, each with the time it arrived."""

    def __init__(self, proc: subprocess.Popen) -> None:
        import threading

        self.lines: list[tuple[float, str]] = []
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc) -> None:
        for line in proc.stdout:
            self.lines.append((time.time(), line.rstrip("\n")))

    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)


def start_run(machine: Path, yaml: Path, env, *overrides: str):
    machine.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [str(COMPOSER), "-n", "1", str(REPO / "recipes" / "train.py"), str(yaml), *overrides],
        cwd=machine,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    return proc, Console(proc)


def wait_for_key(server, key: str, proc, timeout: float = 240) -> None:
    deadline = time.time() + timeout
    while key not in server.keys(key.rsplit("/", 1)[0] + "/"):
        assert proc.poll() is None and time.time() < deadline, f"{key} never appeared"
        time.sleep(0.05)


@pytest.mark.slow
def test_store_outage_during_uploads_is_survived(small_shards, tmp_path, s3_server):
    env = clean_env(s3_server)
    yaml = write_yaml(tmp_path / "out.yaml", small_shards, "out", "train.upload_retry_seconds=120")
    proc, console = start_run(tmp_path / "A", yaml, env)
    wait_for_key(s3_server, "runs/out/latest-rank0.pt.symlink", proc)
    t0 = time.time()
    s3_server.stop()  # connections refused from now on
    time.sleep(8)
    s3_server.start()  # same port; moto's memory is empty, so the bucket is created again
    assert proc.wait(timeout=300) == 0, console.text()[-4000:]
    console.thread.join(timeout=10)
    out = console.text()
    failures = [(t, line) for t, line in console.lines if "[store]" in line and "failed" in line]
    recovered = [
        (t, line)
        for t, line in console.lines
        if "[store]" in line and "after" in line and "failed tries" in line
    ]
    assert failures and recovered, out[-4000:]
    assert all(t0 <= t < s3_server.starts[-1] + 1 for t, _ in failures[:1]), (
        "the first failure is during the outage"
    )
    assert "stayed unreachable" not in out
    # everything written after the outage began is in the store, and latest is the last checkpoint
    names = {k.split("/")[-1] for k in s3_server.keys("runs/out/")}
    assert {
        "ep0-ba12-rank0.pt",
        "final.pt",
        "complete.json",
        "metrics.jsonl",
        "latest-rank0.pt.symlink",
    } <= names, names
    assert (
        s3_server.get("runs/out/latest-rank0.pt.symlink").decode() == "runs/out/ep0-ba12-rank0.pt"
    )
    assert json.loads(s3_server.get("runs/out/complete.json"))["step"] == 12
    local = tmp_path / "A" / "runs" / "out"
    assert s3_server.get("runs/out/final.pt") == (local / "final.pt").read_bytes()
    # the timeline, for the record (pytest -s shows it)
    print(
        "\noutage timeline (s after the server was stopped; "
        f"it was back at {s3_server.starts[-1] - t0:.1f} s):"
    )
    for t, line in console.lines:
        if "[store]" in line or "[run]" in line:
            print(f"  {t - t0:7.1f}  {line}")


@pytest.mark.slow
def test_store_down_past_the_limit_stops_the_run_and_keeps_the_local_copy(
    small_shards, tmp_path, s3_server
):
    from stoicheia.train.checkpoints import checkpoint_is_complete

    env = clean_env(s3_server)
    yaml = write_yaml(
        tmp_path / "down.yaml",
        small_shards,
        "down",
        "train.upload_retry_seconds=3",
        "train.nominal_steps=24",
        "train.max_steps=24",
    )
    proc, console = start_run(tmp_path / "A", yaml, env)
    wait_for_key(s3_server, "runs/down/latest-rank0.pt.symlink", proc)
    s3_server.stop()
    rc = proc.wait(timeout=300)
    console.thread.join(timeout=10)
    out = console.text()
    assert rc == 4, out[-4000:]
    assert "Traceback" not in out
    assert (
        "the object store stayed unreachable for" in out and "train.upload_retry_seconds=3" in out
    )
    assert "nothing is lost" in out and "Run the same command again" in out
    local = tmp_path / "A" / "runs" / "down"
    ckpts = sorted(local.glob("ep0-ba*-rank0.pt"), key=lambda f: batch_of(f.name))
    assert len(ckpts) >= 2 and all(checkpoint_is_complete(f) for f in ckpts)
    assert os.readlink(local / "latest-rank0.pt") == ckpts[-1].name
    # the store is back (empty: moto forgot everything); the same command on the same machine
    # uploads what is missing and finishes the run
    s3_server.start()
    again = train(tmp_path / "A", yaml, env)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "missing in" in again.stdout
    # the run stopped during training (the usual case) or, on a slow store, while waiting for
    # its last uploads: either way the same command completes it and fills the store
    assert (
        f"resuming run 'down' from its checkpoint at batch {batch_of(ckpts[-1].name)}"
        in again.stdout
        or "run 'down' is complete at step 24" in again.stdout
    ), again.stdout[-3000:]
    names = {k.split("/")[-1] for k in s3_server.keys("runs/down/")}
    assert {f.name for f in ckpts} <= names and {
        "final.pt",
        "complete.json",
        "metrics.jsonl",
    } <= names
    assert json.loads(s3_server.get("runs/down/complete.json"))["step"] == 24
    print(
        "\nstopped at the limit: "
        f"{[line for line in out.splitlines() if '[store]' in line or 'train.py' in line]}"
    )


# --- checkpoints in the store that cannot be loaded ------------------------------------------
def _ckpt(value: float) -> bytes:
    buf = io.BytesIO()
    torch.save({"state": {"x": torch.full((1000,), float(value))}}, buf)
    return buf.getvalue()


def _watch_store_log():
    import logging

    records: list[str] = []

    class H(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logging.getLogger("stoicheia.train.object_store").addHandler(H())
    return records


def test_corrupt_newest_checkpoint_in_the_store_falls_back(tmp_path, s3_server, monkeypatch):
    from stoicheia.train.object_store import StoreFolder, restore_run

    for k, v in s3_server.env.items():
        monkeypatch.setenv(k, v)
    s3_server.put("r/x/ep0-ba10-rank0.pt", _ckpt(10))
    good = _ckpt(20)
    s3_server.put("r/x/ep0-ba20-rank0.pt", good[: len(good) - 300])  # truncated upload
    s3_server.put("r/x/latest-rank0.pt.symlink", b"r/x/ep0-ba20-rank0.pt")
    records = _watch_store_log()
    folder = StoreFolder.parse(f"s3://{BUCKET}/r/x")
    assert restore_run(folder, tmp_path / "run") == "ep0-ba10-rank0.pt"
    assert any(
        f"s3://{BUCKET}/r/x/ep0-ba20-rank0.pt is incomplete or corrupt" in r for r in records
    ), records
    assert os.readlink(tmp_path / "run" / "latest-rank0.pt") == "ep0-ba10-rank0.pt"
    assert torch.load(tmp_path / "run" / "latest-rank0.pt")["state"]["x"][0] == 10
    assert not (tmp_path / "run" / "ep0-ba20-rank0.pt").exists(), (
        "the bad one is never put where it could be loaded"
    )
    # the local copy is as new as the store's newest good one: nothing is downloaded again
    assert restore_run(folder, tmp_path / "run") is None


def test_no_good_checkpoint_in_the_store_is_a_clear_error(tmp_path, s3_server, monkeypatch):
    from stoicheia.train.object_store import StoreError, StoreFolder, restore_run

    for k, v in s3_server.env.items():
        monkeypatch.setenv(k, v)
    s3_server.put("r/y/ep0-ba10-rank0.pt", b"PK\x03\x04 not a checkpoint")
    s3_server.put("r/y/ep0-ba20-rank0.pt", _ckpt(20)[:500])
    with pytest.raises(
        StoreError,
        match=r"no complete checkpoint in s3://.*/r/y: every one is incomplete or corrupt "
        r".*ep0-ba20-rank0.pt.*ep0-ba10-rank0.pt",
    ):
        restore_run(StoreFolder.parse(f"s3://{BUCKET}/r/y"), tmp_path / "run")
    assert not list((tmp_path / "run").glob("*.pt"))


# --- failures before the first batch ---------------------------------------------------------
def _main():
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_recipe", REPO / "recipes" / "train.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.main


def _run_main(yaml, env, monkeypatch, capsys, *overrides) -> tuple[int, str]:
    for k in [k for k in os.environ if k.startswith("AWS_") or k == "S3_ENDPOINT_URL"]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    rc = _main()([str(yaml), *overrides])
    out = capsys.readouterr()
    return rc, out.out + out.err


@pytest.fixture
def short_yaml(small_shards, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    yaml = write_yaml(tmp_path / "pre.yaml", small_shards, "pre")
    monkeypatch.chdir(tmp_path)  # the local run folder (runs/pre) would be made here
    return yaml


def test_missing_bucket_unreachable_store_and_unwritable_folder_stop_before_training(
    short_yaml, tmp_path, s3_server, monkeypatch, capsys
):
    env = dict(s3_server.env)
    rc, out = _run_main(
        short_yaml,
        env,
        monkeypatch,
        capsys,
        "train.save_folder=s3://no-such-bucket/runs/{run_name}",
    )
    assert rc == 2 and "Traceback" not in out
    assert (
        "the bucket 'no-such-bucket' does not exist at http://127.0.0.1:" in out
        and "aws s3 mb s3://no-such-bucket" in out
    )
    assert len(out.strip().splitlines()) == 1
    rc, out = _run_main(
        short_yaml, {**env, "S3_ENDPOINT_URL": "http://127.0.0.1:9"}, monkeypatch, capsys
    )
    assert (
        rc == 2
        and "cannot reach the object store at http://127.0.0.1:9" in out
        and "S3_ENDPOINT_URL" in out
    )
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for folder in (blocker / "runs", Path("/proc/stoicheia-test")):
        rc, out = _run_main(short_yaml, env, monkeypatch, capsys, f"train.save_folder={folder}")
        assert rc == 2 and "Traceback" not in out
        assert (
            f"train.save_folder {folder} is not writable" in out and "set train.save_folder" in out
        )
    assert not [f for f in (tmp_path / "runs").rglob("*") if f.is_file()], (
        "nothing trained, nothing written"
    )


def test_wrong_or_missing_credentials_stop_before_training(
    short_yaml, tmp_path, monkeypatch, capsys
):
    from s3_server import S3Server

    server = S3Server(tmp_path, check_credentials=True)  # moto checks signatures and IAM here
    server.start()
    try:
        good = dict(server.env)
        rc, out = _run_main(
            short_yaml, {**good, "AWS_SECRET_ACCESS_KEY": "wrong-secret"}, monkeypatch, capsys
        )
        assert rc == 2 and "Traceback" not in out and "wrong-secret" not in out
        assert (
            "refused the credentials" in out
            and "SignatureDoesNotMatch" in out
            and "AWS_SECRET_ACCESS_KEY" in out
        )
        rc, out = _run_main(
            short_yaml, {**good, "AWS_ACCESS_KEY_ID": "AKIANOSUCHKEY0000000"}, monkeypatch, capsys
        )
        assert rc == 2 and "InvalidAccessKeyId" in out
        no_creds = {
            k: v
            for k, v in good.items()
            if not k.startswith("AWS_ACCESS") and not k.startswith("AWS_SECRET")
        }
        no_creds.update(
            AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
            AWS_CONFIG_FILE=str(tmp_path / "none"),
        )
        rc, out = _run_main(short_yaml, no_creds, monkeypatch, capsys)
        assert rc == 2 and "no credentials for s3://" in out and "never read from the YAML" in out
        assert server.keys("runs/") == {}, "nothing written"
    finally:
        server.stop()


def test_credentials_in_the_config_are_refused(short_yaml, tmp_path):
    from stoicheia.config import load_config

    for uri in (
        f"s3://AKIAX:{SECRET}@{BUCKET}/runs",
        f"sftp://me:{SECRET}@127.0.0.1/runs",
        f"s3://{BUCKET}/r?X-Amz-Signature={SECRET}",
    ):
        with pytest.raises(
            ConfigError,
            match="holds credentials or a query string; credentials are never read from the config",
        ) as err:
            load_config(short_yaml, [f"train.save_folder={uri}"])
        assert SECRET not in str(err.value)
    with pytest.raises(ConfigError, match="data.remote"):
        load_config(short_yaml, [f"data.remote=s3://AKIAX:{SECRET}@{BUCKET}/shards"])
    bad = tmp_path / "bad.yaml"
    bad.write_text(short_yaml.read_text() + "\n" + f"aws_secret_access_key: {SECRET}\n")
    with pytest.raises(
        ConfigError,
        match="'aws_secret_access_key' looks like a credential; credentials are never read",
    ) as err:
        load_config(bad)
    assert SECRET not in str(err.value)
    with pytest.raises(ConfigError, match="data.local_cache: data.remote needs a local folder"):
        load_config(short_yaml, [f"data.remote=s3://{BUCKET}/shards"])
    with pytest.raises(ConfigError, match="train.upload_retry_seconds"):
        load_config(short_yaml, ["train.upload_retry_seconds=0"])


# --- SFTP ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_sftp_save_folder_end_to_end(small_shards, tmp_path, monkeypatch, capsys):
    """``sftp://`` against an SFTP server made with paramiko's server classes (there is no
    OpenSSH sshd here): a run uploads everything, a fresh machine finds it complete, and the
    restore path downloads and verifies its newest checkpoint."""
    from sftp_server import USER, SFTPServer

    from stoicheia.train.checkpoints import checkpoint_is_complete
    from stoicheia.train.object_store import StoreFolder, restore_run

    server = SFTPServer(tmp_path / "sftp-root", tmp_path / "keys")
    try:
        uri = f"sftp://{USER}@127.0.0.1:{server.port}/store/{{run_name}}"
        monkeypatch.chdir(REPO)
        yaml = write_yaml(
            tmp_path / "sftp.yaml", small_shards, "viasftp", f"train.save_folder={uri}"
        )
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
        }
        env.update(server.env, PYTHONPATH=str(REPO))
        run = train(tmp_path / "A", yaml, env)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        stored = tmp_path / "sftp-root" / "store" / "viasftp"
        names = {f.name for f in stored.iterdir()}
        assert {
            "ep0-ba12-rank0.pt",
            "best.pt",
            "pre_anneal.pt",
            "final.pt",
            "complete.json",
            "metrics.jsonl",
            "latest-rank0.pt.symlink",
        } <= names
        assert (
            stored / "latest-rank0.pt.symlink"
        ).read_text() == "/store/viasftp/ep0-ba12-rank0.pt"
        assert (stored / "final.pt").read_bytes() == (
            tmp_path / "A" / "runs" / "viasftp" / "final.pt"
        ).read_bytes()
        for k, v in server.env.items():
            monkeypatch.setenv(k, v)
        folder = StoreFolder.parse(uri.format(run_name="viasftp"))
        assert restore_run(folder, tmp_path / "B" / "runs" / "viasftp") == "ep0-ba12-rank0.pt"
        assert checkpoint_is_complete(tmp_path / "B" / "runs" / "viasftp" / "latest-rank0.pt")
        (tmp_path / "C").mkdir()
        monkeypatch.chdir(tmp_path / "C")
        rc, out = _run_main(yaml, server.env, monkeypatch, capsys)
        assert rc == 0 and "run 'viasftp' is complete at step 12" in out, out
    finally:
        server.stop()


def test_uploader_sync_fills_the_store_and_never_uploads_an_incomplete_checkpoint(
    tmp_path, s3_server, monkeypatch
):
    """What a re-run after an outage does (``StoreUploader.sync``, no training): checkpoints
    missing in the store are uploaded in batch order and ``latest`` follows; a named checkpoint
    rewritten since its last upload goes up again; an incomplete checkpoint never does."""
    from stoicheia.train.loggers.store_uploader import StoreUploader

    for k, v in s3_server.env.items():
        monkeypatch.setenv(k, v)
    run = tmp_path / "runs" / "u"
    run.mkdir(parents=True)
    for b in (3, 6):
        (run / f"ep0-ba{b}-rank0.pt").write_bytes(_ckpt(b))
    os.symlink("ep0-ba6-rank0.pt", run / "latest-rank0.pt")
    (run / "best.pt").write_bytes(_ckpt(1))
    (run / "metrics.jsonl").write_text('{"step": 1}\n')
    uri = f"s3://{BUCKET}/r/u"
    assert StoreUploader(uri, run, 5).sync() is None
    assert s3_server.get("r/u/latest-rank0.pt.symlink") == b"r/u/ep0-ba6-rank0.pt"
    assert s3_server.get("r/u/best.pt") == (run / "best.pt").read_bytes()
    assert s3_server.get("r/u/metrics.jsonl") == b'{"step": 1}\n'
    # a new best.pt (its upload failed in an outage), a new checkpoint and a truncated one
    time.sleep(0.01)
    (run / "best.pt").write_bytes(_ckpt(2))
    (run / "ep0-ba9-rank0.pt").write_bytes(_ckpt(9))
    (run / "ep0-ba12-rank0.pt").write_bytes(_ckpt(12)[:400])
    os.remove(run / "latest-rank0.pt")
    os.symlink("ep0-ba12-rank0.pt", run / "latest-rank0.pt")
    assert StoreUploader(uri, run, 5).sync() is None
    names = {k.split("/")[-1] for k in s3_server.keys("r/u/")}
    assert "ep0-ba9-rank0.pt" in names and "ep0-ba12-rank0.pt" not in names
    # latest never points at the incomplete checkpoint (a fresh machine would still take ba9:
    # restore_run looks at every checkpoint object, newest first)
    assert s3_server.get("r/u/latest-rank0.pt.symlink") == b"r/u/ep0-ba6-rank0.pt"
    assert s3_server.get("r/u/best.pt") == (run / "best.pt").read_bytes()
    assert not list((run / ".upload").iterdir()), "staged links are removed once uploaded"


def test_periodic_checkpoints_in_the_store_are_pruned_never_named_or_the_newest_verified(
    tmp_path, s3_server, monkeypatch
):
    """``train.save_num_checkpoints_to_keep: 2`` with an S3 ``save_folder``: as the run
    writes checkpoints (the calls Composer's CheckpointSaver makes on the uploader), the store
    keeps the 2 newest periodic checkpoints, every named one, and the checkpoint its
    ``latest`` names even when a newer one was incomplete and not uploaded."""
    from stoicheia.train.loggers.store_uploader import StoreUploader

    for k, v in s3_server.env.items():
        monkeypatch.setenv(k, v)
    # what an earlier job of the run left in the store
    for b in (1, 2):
        s3_server.put(f"r/p/ep0-ba{b}-rank0.pt", _ckpt(b))
    for name in ("best.pt", "pre_anneal.pt"):
        s3_server.put(f"r/p/{name}", _ckpt(0))
    s3_server.put("r/p/notes.txt", b"not a checkpoint: left alone")
    run = tmp_path / "runs" / "p"
    run.mkdir(parents=True)
    up = StoreUploader(f"s3://{BUCKET}/r/p", run, 5, keep=2)
    up.init(None, None)

    def save(batch: int, data: bytes) -> None:
        ckpt = run / f"ep0-ba{batch}-rank0.pt"
        ckpt.write_bytes(data)
        for old in sorted(
            run.glob("ep0-ba*-rank0.pt"), key=lambda f: int(f.name.split("-ba")[1].split("-")[0])
        )[: -max(up.keep, 1)]:
            old.unlink()  # Composer's local rotation (save_num_checkpoints_to_keep)
        up.upload_file(None, f"r/p/{ckpt.name}", ckpt, overwrite=True)
        link = run / "latest.symlink.txt"
        link.write_text(f"r/p/{ckpt.name}")
        up.upload_file(None, "r/p/latest-rank0.pt.symlink", link, overwrite=True)

    def periodic() -> list[str]:
        return sorted(
            (n.split("/")[-1] for n in s3_server.keys("r/p/") if "-ba" in n),
            key=lambda n: int(n.split("-ba")[1].split("-")[0]),
        )

    for b in (3, 4, 5):
        save(b, _ckpt(b))
    (run / "final.pt").write_bytes(_ckpt(5))
    up.upload_file(None, "r/p/final.pt", run / "final.pt", overwrite=True)
    save(6, _ckpt(6)[:500])  # a truncated checkpoint: not uploaded, latest stays at ba5
    up.post_close()
    assert periodic() == ["ep0-ba4-rank0.pt", "ep0-ba5-rank0.pt"]
    names = {k.split("/")[-1] for k in s3_server.keys("r/p/")}
    assert {"best.pt", "pre_anneal.pt", "final.pt", "notes.txt", "latest-rank0.pt.symlink"} <= names
    assert s3_server.get("r/p/latest-rank0.pt.symlink") == b"r/p/ep0-ba5-rank0.pt"

    # keep 0: only the newest verified checkpoint (latest's) stays; -1 (the default) keeps all
    up = StoreUploader(f"s3://{BUCKET}/r/p", run, 5, keep=0)
    up.init(None, None)
    save(7, _ckpt(7))
    up.post_close()
    assert periodic() == ["ep0-ba7-rank0.pt"]
    up = StoreUploader(f"s3://{BUCKET}/r/p", run, 5)
    up.init(None, None)
    save(8, _ckpt(8))
    up.post_close()
    assert periodic() == ["ep0-ba7-rank0.pt", "ep0-ba8-rank0.pt"]


def test_checkpoints_to_prune_rules():
    from stoicheia.train.object_store import checkpoints_to_prune

    names = [
        "ep0-ba100-rank0.pt",
        "ep0-ba20-rank0.pt",
        "ep1-ba300-rank0.pt",
        "best.pt",
        "final.pt",
        "pre_anneal.pt",
        "latest-rank0.pt.symlink",
        "metrics.jsonl",
        "ep0-ba200-rank0.pt",
    ]
    assert checkpoints_to_prune(names, 2, "ep1-ba300-rank0.pt") == [
        "ep0-ba20-rank0.pt",
        "ep0-ba100-rank0.pt",
    ]
    # latest older than the newest (a newer upload was refused): latest is kept beside the 2 newest
    assert checkpoints_to_prune(names, 2, "ep0-ba20-rank0.pt") == ["ep0-ba100-rank0.pt"]
    assert checkpoints_to_prune(names, 0, "ep0-ba200-rank0.pt") == [
        "ep0-ba20-rank0.pt",
        "ep0-ba100-rank0.pt",
        "ep1-ba300-rank0.pt",
    ]
    assert checkpoints_to_prune(names, -1, None) == []


def test_anneal_phases_do_not_download_the_shards_again(
    small_shards, tmp_path, s3_server, monkeypatch
):
    """With ``data.remote``, each anneal phase has its own cache folder (streaming refuses two
    live datasets with a remote on one folder); the shards an earlier phase downloaded are
    linked into it, so a phase fetches from the store only what no phase has fetched yet
    (counted in the S3 server's request log)."""
    from streaming import StreamingDataset

    from stoicheia.data.stream import TierMixFactory
    from stoicheia.noise import NoiseConfig

    for k, v in s3_server.env.items():
        monkeypatch.setenv(k, v)
    s3_server.upload_folder(small_shards, "shards/small")
    cache = tmp_path / "cache"
    factory = TierMixFactory(
        None,
        seq_len=128,
        noise=NoiseConfig(),
        noise_seed=5,
        records_per_batch=4,
        remote=f"s3://{BUCKET}/shards/small",
        local_cache=cache,
    )
    log_file = s3_server.log_dir / f"moto-{s3_server.port}-0.log"

    def shard_gets(tier: str) -> int:
        return sum(
            1
            for line in log_file.read_text().splitlines()
            if f'"GET /{BUCKET}/shards/small/{tier}/train/shard.' in line
        )

    def read_all(ds) -> int:
        for k in range(ds.num_samples):  # every shard is downloaded
            StreamingDataset.get_item(ds, k)
        return ds.num_samples

    stable = factory.build({"gold": 1.0, "silver": 1.0}, 0)
    read_all(stable)
    gold, silver = shard_gets("gold"), shard_gets("silver")
    assert gold >= 1 and silver >= 1
    phase1 = factory.build({"gold": 1.0}, 1)
    assert read_all(phase1) > 0
    phase2 = factory.build({"gold": 1.0, "silver": 0.5}, 2)
    assert read_all(phase2) > 0
    assert (shard_gets("gold"), shard_gets("silver")) == (gold, silver), (
        "a phase downloaded shards again"
    )
    for phase, tier in ((1, "gold"), (2, "gold"), (2, "silver")):
        files = [
            f for f in (cache / f"_phase{phase}" / tier / "train").iterdir() if ".mds" in f.name
        ]
        assert files and all(f.stat().st_nlink >= 2 for f in files), (phase, tier)
    del stable, phase1, phase2


def test_uploader_agrees_on_failure_only_at_log_and_save_intervals(tmp_path, monkeypatch):
    """The all-reduce of the failure flag (and the read that waits for the GPU) runs at
    multiples of train.log_every and train.save_interval only, not after every batch; a failure
    then stops every rank together."""
    import types

    from stoicheia.train.loggers import store_uploader
    from stoicheia.train.loggers.store_uploader import StoreUnavailable, StoreUploader

    reduced: list[int] = []
    monkeypatch.setattr(store_uploader.dist, "get_world_size", lambda: 2)
    monkeypatch.setattr(
        store_uploader.dist, "all_reduce", lambda t, reduce_operation: reduced.append(int(t))
    )
    monkeypatch.setattr(store_uploader.dist, "broadcast_object_list", lambda obj, src: None)
    up = StoreUploader(f"s3://{BUCKET}/r/p", tmp_path, 5, log_every=5, save_interval=4)
    state = types.SimpleNamespace(
        timestamp=types.SimpleNamespace(batch=0),
        device=types.SimpleNamespace(tensor_to_device=lambda t: t),
    )
    for step in range(1, 21):
        state.timestamp.batch = step
        up.batch_end(state, None)
    assert up.checks == len(reduced) == 8  # batches 4, 5, 8, 10, 12, 15, 16, 20
    up._failed = "the store is down"
    state.timestamp.batch = 21
    up.batch_end(state, None)  # not a check batch: no collective, no stop yet
    assert len(reduced) == 8
    state.timestamp.batch = 24
    with pytest.raises(StoreUnavailable, match="the store is down"):
        up.batch_end(state, None)
