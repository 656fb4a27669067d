"""Kills and preemption: SIGTERM saves at the next batch and stops (one and two processes),
a SIGKILLed trainer leaves no process behind, and scripts/kill_resume.py ends bit-identical.

Signals are sent at chosen moments (a batch reached, a worker started), never after a timed
sleep; the only waits are generous upper bounds on processes ending."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import torch
from composer.core import Callback
from omegaconf import OmegaConf

from stoicheia.config import to_dict
from stoicheia.train import run_files
from stoicheia.train.builder import build_trainer
from stoicheia.train.callbacks.preemption import PREEMPTED_EXIT
from stoicheia.train.run import fit_run

sys.path.insert(0, str(Path(__file__).parent))
from tiny import tiny_run  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PYTHON = str(REPO / ".venv" / "bin" / "python")
COMPOSER = str(REPO / ".venv" / "bin" / "composer")


def _env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    }
    env["PYTHONPATH"] = str(REPO)
    return env


def _yaml(shards, folder: Path, name: str, *extra: str) -> Path:
    cfg = tiny_run(
        shards,
        folder,
        name,
        "train.nominal_steps=40",
        "train.max_steps=40",
        "train.save_interval=10",
        *extra,
    )
    path = folder / f"{name}.yaml"
    OmegaConf.save(OmegaConf.create(to_dict(cfg)), path)
    return path


def _steps(folder: Path) -> int:
    rows = run_files.read_jsonl(folder / "metrics.jsonl")
    return max((int(r["step"]) for r in rows if "loss/total" in r), default=0)


def _wait_for(cond, proc: subprocess.Popen, what: str, limit: float = 300.0) -> None:
    """Poll ``cond`` until true; fail if the process ends first (or after ``limit`` s)."""
    deadline = time.monotonic() + limit
    while not cond():
        if proc.poll() is not None:
            out = proc.stdout.read()[-3000:] if proc.stdout is not None else ""
            raise AssertionError(f"the run ended (status {proc.returncode}) before {what}: {out}")
        assert time.monotonic() < deadline, f"no {what} within {limit} s"
        time.sleep(0.05)


class _SignalAt(Callback):
    """Sends SIGTERM to this process during the backward pass of batch ``at`` (1-based)."""

    def __init__(self, at: int) -> None:
        self.at = at

    def after_backward(self, state, logger) -> None:
        if int(state.timestamp.batch) + 1 == self.at:
            os.kill(os.getpid(), signal.SIGTERM)


@pytest.fixture
def _in_repo(monkeypatch):
    monkeypatch.chdir(REPO)


def test_sigterm_saves_the_batch_in_progress_and_resumes_bit_identical(
    small_shards, tmp_path, capsys, _in_repo
):
    def cfg(name):
        return tiny_run(
            small_shards,
            tmp_path,
            name,
            "train.nominal_steps=8",
            "train.max_steps=8",
            "train.save_interval=6",
        )

    straight = build_trainer(cfg("straight"))
    straight.trainer.fit()
    straight.trainer.close()

    before = signal.getsignal(signal.SIGTERM)
    first = build_trainer(cfg("stopped"))
    first.trainer.state.callbacks.append(_SignalAt(3))
    assert fit_run(first)
    first.trainer.close()
    assert signal.getsignal(signal.SIGTERM) == before, "the handler is restored at close"
    pre = first.plugins["preemption"]
    assert pre.stopped and pre.stopped_at == 3 and not first.control.complete
    folder = tmp_path / "stopped"
    assert os.readlink(folder / "latest-rank0.pt") == "ep0-ba3-rank0.pt"  # not save_interval=6
    assert not (folder / "complete.json").exists()
    out = capsys.readouterr().out
    assert (
        out.count("[preempt] step 3: SIGTERM received; saved") == 1
        and f"status {PREEMPTED_EXIT}" in out
    )

    second = build_trainer(cfg("stopped"))
    assert int(second.trainer.state.timestamp.batch) == 3
    assert fit_run(second)
    second.trainer.close()
    assert second.control.complete and not second.plugins["preemption"].stopped
    want, got = straight.model.state_dict(), second.model.state_dict()
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=0, atol=0, msg=k)


@pytest.mark.slow
def test_sigkilled_trainer_leaves_no_process_behind(small_shards, tmp_path):
    yaml = _yaml(small_shards, tmp_path, "k", "data.num_workers=2")
    proc = subprocess.Popen(
        [PYTHON, "recipes/train.py", str(yaml)],
        cwd=REPO,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        me = psutil.Process(proc.pid)
        _wait_for(lambda: _steps(tmp_path / "k") >= 2, proc, "two batches")
        children = me.children(recursive=True)
        workers = [c for c in children if "resource_tracker" not in " ".join(c.cmdline())]
        assert len(workers) >= 2, [c.cmdline() for c in children]  # the DataLoader workers
        me.send_signal(signal.SIGKILL)
        proc.wait()
        _, alive = psutil.wait_procs(children, timeout=30)
        left = [(p.pid, p.cmdline()) for p in alive]
        for p in alive:  # do not leave them to the next test
            p.kill()
        assert not left, f"outlived the SIGKILLed trainer: {left}"
    finally:
        if proc.poll() is None:
            for p in psutil.Process(proc.pid).children(recursive=True):
                p.kill()
            proc.kill()


@pytest.mark.slow
def test_two_processes_stop_together_on_sigterm_and_when_the_launcher_dies(small_shards, tmp_path):
    """Leg 1: the ``composer`` launcher is SIGKILLed; both trainers get SIGTERM (parent-death
    signal), agree on a batch, save it and exit; nothing is left. Leg 2: the same command
    resumes there and, on SIGTERM to every process of the job (as SLURM sends it; the
    launcher started with SIGTERM ignored, as scripts/slurm_chain.sh starts it), exits 143
    after saving."""
    yaml = _yaml(small_shards, tmp_path, "two")
    folder = tmp_path / "two"
    with (
        socket.socket() as sock
    ):  # a free rendezvous port: other jobs on this machine may hold 29500
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [COMPOSER, "-n", "2", "--master_port", str(port), "recipes/train.py", str(yaml)]

    proc = subprocess.Popen(
        cmd, cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    _wait_for(lambda: _steps(folder) >= 2, proc, "two batches")
    launcher = psutil.Process(proc.pid)
    ranks = launcher.children(recursive=True)
    assert sum("recipes/train.py" in " ".join(p.cmdline()) for p in ranks) == 2
    launcher.send_signal(signal.SIGKILL)
    out, _ = proc.communicate(timeout=300)  # the pipe closes when the orphaned trainers exit
    _, alive = psutil.wait_procs(ranks, timeout=60)
    assert not alive, [(p.pid, p.cmdline()) for p in alive]
    m = re.search(r"\[preempt\] step (\d+): SIGTERM received; saved \S+ep0-ba(\d+)-rank0\.pt", out)
    assert m and m[1] == m[2], out[-3000:]
    assert out.count("[preempt]") == 1  # once per job
    b1 = int(m[1])
    assert b1 >= 2 and os.readlink(folder / "latest-rank0.pt") == f"ep0-ba{b1}-rank0.pt"
    ranks_saved = torch.load(folder / f"ep0-ba{b1}-rank0.pt", weights_only=False)["state"][
        "dataset_state"
    ]["train"]["ranks"]
    assert [r["batch"] for r in ranks_saved] == [b1, b1]

    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN),
    )
    _wait_for(lambda: _steps(folder) >= b1 + 2, proc, "two more batches")
    for p in [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]:
        p.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == PREEMPTED_EXIT, out[-3000:]
    assert f"resuming run 'two' from its checkpoint at batch {b1}" in out
    m = re.search(r"\[preempt\] step (\d+): SIGTERM received; saved \S+ep0-ba(\d+)-rank0\.pt", out)
    assert m and m[1] == m[2] and int(m[1]) >= b1 + 2, out[-3000:]
    assert not (folder / "complete.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("world", [1, 2])
def test_ctrl_c_saves_the_batch_in_progress_and_exits_130(small_shards, tmp_path, world):
    """Ctrl-C (SIGINT to every process of the terminal's group: launcher, trainers, DataLoader
    workers) does what SIGTERM does: every trainer saves the batch in progress, the job exits
    130, one ``[preempt]`` line and no traceback (the launcher is ``python -m
    stoicheia.launch``, Composer's launcher with the signals passed on); nothing is left running."""
    yaml = _yaml(small_shards, tmp_path, "ctrlc", "data.num_workers=1")
    folder = tmp_path / "ctrlc"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [
        PYTHON,
        "-m",
        "stoicheia.launch",
        "-n",
        str(world),
        "--master_port",
        str(port),
        "recipes/train.py",
        str(yaml),
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        _wait_for(lambda: _steps(folder) >= 2, proc, "two batches")
        everyone = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    m = re.search(
        r"\[preempt\] step (\d+): SIGINT received; saved \S+ep0-ba(\d+)-rank0\.pt"
        r".*exiting with status 130",
        out,
    )
    assert m and m[1] == m[2] and out.count("[preempt]") == 1, out[-3000:]
    assert os.readlink(folder / "latest-rank0.pt") == f"ep0-ba{m[1]}-rank0.pt"
    stopped = run_files.read_json(folder, run_files.STOPPED)  # what `stoicheia status` reads
    assert {k: stopped[k] for k in ("step", "signal", "exit_status", "checkpoint")} == {
        "step": int(m[1]),
        "signal": "SIGINT",
        "exit_status": 130,
        "checkpoint": f"ep0-ba{m[1]}-rank0.pt",
    }
    _, alive = psutil.wait_procs(everyone, timeout=60)
    assert not alive, [(p.pid, p.cmdline()) for p in alive]
    steps = [r["step"] for r in run_files.read_jsonl(folder / "metrics.jsonl")]
    assert steps == sorted(set(steps)), "one metrics.jsonl line per step"


@pytest.mark.slow
def test_kill_resume_script(small_shards, tmp_path):
    """Three SIGKILLs (the script aims about half at a checkpoint write) and one SIGTERM,
    then the weights and per-step losses equal those of an uninterrupted run."""
    proc = subprocess.run(
        [
            PYTHON,
            "scripts/kill_resume.py",
            "--shards",
            str(small_shards),
            "--work",
            str(tmp_path),
            "--kills",
            "3",
            "--sigterms",
            "1",
            "--steps",
            "16",
            "--save-interval",
            "4",
            "--seed",
            "1",
        ],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert "kills survived 3/3, weights identical yes" in out
    assert "processes left behind: 0" in out and "per-step losses equal: yes" in out
    assert re.search(r"sigterm 1: exit status 143 .* batches lost 0, processes left 0", out), out


def test_signals_option_is_checked():
    from stoicheia.config import ConfigError
    from stoicheia.train import registry
    from stoicheia.train.callbacks.anneal_control import AnnealControl
    from stoicheia.train.schedule import WSDShape

    control = AnnealControl(WSDShape(100, 0.1, 0.2, 0.0), 120)
    ctx = registry.RunContext(
        control, None, "holdout/bits_per_char", Path("."), ".", {"gold": 1.0}, [], 10, 1.0
    )
    assert [
        s.name
        for s in registry.build(
            "callbacks", "preemption", {"signals": ["sigterm", "SIGUSR1"]}, ctx
        ).signals
    ] == ["SIGTERM", "SIGUSR1"]
    with pytest.raises(ConfigError, match="unknown signal 'SIGFOO'"):
        registry.build("callbacks", "preemption", {"signals": ["SIGFOO"]}, ctx)
    with pytest.raises(ConfigError, match="SIGKILL cannot be caught"):
        registry.build("callbacks", "preemption", {"signals": ["SIGKILL"]}, ctx)
    assert "preemption" in dict(registry.resolve({}, "callbacks"))  # on by default


# --- the launcher's clean-up (python -m stoicheia.launch), with stand-in trainers ------------


class _Exited:
    """A trainer (``subprocess.Popen``'s surface) that has exited with ``code``."""

    def __init__(self, code: int) -> None:
        self.returncode = code
        self.pid = 1 << 22  # never signalled: the process has exited

    def poll(self) -> int:
        return self.returncode


def _sleeper(ignore_sigterm: bool = False) -> subprocess.Popen:
    """A trainer still running (60 s), that SIGTERM ends, or (``ignore_sigterm``) does not."""
    ignore = lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN)  # noqa: E731
    return subprocess.Popen(["sleep", "60"], preexec_fn=ignore if ignore_sigterm else None)


def test_a_clean_finish_ends_without_composers_wait_line():
    """Composer printed "Waiting up to 30 seconds ... Press Ctrl-C to exit immediately." after
    every run, a clean one too: users took it for a prompt. Through the launcher's own entry
    point, with a trainer that exits 0 at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.run(
        [PYTHON, "-m", "stoicheia.launch", "-n", "1", "--master_port", str(port), "-c", "true"],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Waiting up to" not in proc.stdout + proc.stderr
    assert "waiting" not in proc.stdout + proc.stderr


def test_cleanup_says_what_it_waits_for_and_keeps_sigterm_then_sigkill(capsys, monkeypatch):
    import datetime

    from composer.cli import launcher

    from stoicheia.launch import cleanup_processes

    cleanup_processes({0: _Exited(0), 1: _Exited(0)})
    assert capsys.readouterr().out == ""  # every trainer exited: nothing to wait for, nothing said

    monkeypatch.setattr(launcher, "CLEANUP_TIMEOUT", datetime.timedelta(seconds=30))
    running = _sleeper()
    try:
        start = time.monotonic()
        cleanup_processes({0: _Exited(0), 1: running})
        assert time.monotonic() - start < 20  # SIGTERM ended it: no need to wait the 30 s
    finally:
        running.kill()
    out = capsys.readouterr().out
    assert running.returncode == -signal.SIGTERM
    assert "Waiting up to" not in out and out.count("\n") == 1, out
    assert out.startswith(
        "[launch] waiting up to 30 s for 1 training process (rank 1) to save and exit; "
        "Ctrl-C kills it at once"
    ), out

    # a trainer that does not exit on SIGTERM is SIGKILLed after the timeout, as by Composer
    monkeypatch.setattr(launcher, "CLEANUP_TIMEOUT", datetime.timedelta(seconds=0.5))
    stubborn = [_sleeper(ignore_sigterm=True), _sleeper(ignore_sigterm=True)]
    try:
        cleanup_processes(dict(enumerate(stubborn)))
        codes = [p.wait(timeout=10) for p in stubborn]
    finally:
        for p in stubborn:
            p.kill()
    assert codes == [-signal.SIGKILL, -signal.SIGKILL]
    assert "for 2 training processes (ranks 0, 1)" in capsys.readouterr().out


def test_ctrl_c_during_the_cleanup_wait_kills_at_once(capsys, monkeypatch):
    """Composer's Ctrl-C ends its wait; the launcher passes SIGINT on to the trainers (which
    ignore a second one while they stop), so the wait ends on it here, then SIGKILL."""
    import datetime
    import threading

    from composer.cli import launcher

    from stoicheia.launch import cleanup_processes, forward_signal

    monkeypatch.setattr(launcher, "CLEANUP_TIMEOUT", datetime.timedelta(seconds=60))
    stubborn = _sleeper(ignore_sigterm=True)
    before = signal.signal(signal.SIGINT, forward_signal)  # as main() leaves it
    waiting = threading.Event()

    def press_ctrl_c() -> None:  # once the clean-up has taken SIGINT over (it then waits)
        deadline = time.monotonic() + 30
        while signal.getsignal(signal.SIGINT) is forward_signal and time.monotonic() < deadline:
            time.sleep(0.05)
        waiting.set()
        os.kill(os.getpid(), signal.SIGINT)

    ctrl_c = threading.Thread(target=press_ctrl_c, daemon=True)
    try:
        start = time.monotonic()
        ctrl_c.start()
        cleanup_processes({0: stubborn})
        waited = time.monotonic() - start
        assert waiting.is_set() and stubborn.wait(timeout=10) == -signal.SIGKILL
        assert signal.getsignal(signal.SIGINT) is forward_signal  # given back
    finally:
        ctrl_c.join(timeout=40)
        stubborn.kill()
        signal.signal(signal.SIGINT, before)
    assert waited < 30, waited
    assert "Ctrl-C kills it at once" in capsys.readouterr().out
