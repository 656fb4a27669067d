"""``scripts/slurm_chain.sh``: its dry run, and the job script it generates run against fake
``srun``/``scontrol``/``scancel`` (SLURM is not installed here)."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "slurm_chain.sh"
CHAIN = ["1001", "1002", "1003", "1004"]  # this job is 1002


def run_chain(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def dry(tmp_path_factory) -> dict:
    """One dry run of a 4-job chain on 2 nodes x 4 GPUs into a temporary save_folder."""
    base = tmp_path_factory.mktemp("chain")
    args = [
        "--dry-run",
        "-n",
        "4",
        "-N",
        "2",
        "-g",
        "4",
        "-t",
        "2:00:00",
        "-p",
        "gpu",
        "-A",
        "proj",
        "yamls/demo.yaml",
        "run_name=chain-test",
        f"train.save_folder={base}/{{run_name}}",
        "train.lr=1e-3",
    ]
    res = run_chain(*args)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    m = re.search(
        r"^# --- job script \(would be written to (\S+)\) ---\n(.*)^# --- end of job script ---$",
        out,
        re.S | re.M,
    )
    assert m, out
    return {
        "base": base,
        "run_folder": base / "chain-test",
        "out": out,
        "path": m[1],
        "script": m[2],
    }


def test_bash_syntax() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0


def test_dry_run_prints_script_and_chain_and_writes_nothing(dry: dict) -> None:
    script, out, run_folder = dry["script"], dry["out"], dry["run_folder"]
    assert not dry["base"].joinpath("chain-test").exists()  # nothing written
    assert dry["path"].startswith(f"{run_folder}/slurm/chain-") and dry["path"].endswith(".sbatch")
    for line in [
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --gpus-per-node=4",
        "#SBATCH --time=2:00:00",
        "#SBATCH --signal=B:TERM@120",
        "#SBATCH --partition=gpu",
        "#SBATCH --account=proj",
        f"#SBATCH --output={run_folder}/slurm/job-%j.out",
    ]:
        assert line in script.splitlines(), line
    # the composer command, one launcher per node
    assert "srun --ntasks-per-node=1" in script
    assert (
        'exec .venv/bin/python -m stoicheia.launch -n "$1" '
        '--world_size "$((SLURM_NNODES * $1))" --node_rank "$SLURM_NODEID"' in script
    )
    assert (
        "TRAIN=(recipes/train.py yamls/demo.yaml run_name=chain-test" in script
        and "train.lr=1e-3)" in script
    )
    # the cancel of the rest of the chain on exit status 3
    assert "if ((rc == 3)) ||" in script and 'scancel "${rest[@]}"' in script
    # the dependency chain: the first job free, each later one afterany the one before
    cmds = [ln for ln in out.splitlines() if ln.startswith("sbatch ")]
    assert len(cmds) == 4
    assert "--dependency" not in cmds[0]
    for k in range(1, 4):
        assert f"--dependency=afterany:JOB{k} " in cmds[k] and cmds[k].endswith(f"# -> JOB{k + 1}")


def test_config_errors_exit_2_before_submitting(tmp_path: Path) -> None:
    res = run_chain("--dry-run", "yamls/demo.yaml", "train.bogus=1")
    assert res.returncode == 2 and "unknown key 'train.bogus'" in res.stderr
    res = run_chain("--dry-run", "-N", "0", "yamls/demo.yaml")
    assert res.returncode == 2 and "NODES must be a positive whole number" in res.stderr
    res = run_chain("yamls/demo.yaml", f"train.save_folder={tmp_path}/run")
    assert res.returncode == 2 and "sbatch not found" in res.stderr
    assert not (tmp_path / "run").exists()


def test_complete_run_submits_nothing(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "complete.json").write_text(
        json.dumps({"step": 10, "reason": "anneal_done", "use": "final.pt"})
    )
    res = run_chain("yamls/demo.yaml", f"train.save_folder={tmp_path}/run")
    assert (
        res.returncode == 0
        and "already complete" in res.stdout
        and "nothing to submit" in res.stdout
    )


FAKE_SRUN = r"""#!/usr/bin/env bash
# fake srun: run the per-node command of node 1 with `echo` for composer, then act as told
while [[ $1 == --* ]]; do shift; done
echo "srun-args: $*" >>"$FAKE_LOG"
cmd=${3/exec .venv\/bin\/python -m stoicheia.launch/echo COMPOSER}
SLURM_NODEID=1 bash -c "$cmd" "${@:4}" >>"$FAKE_LOG"
[[ -n ${FAKE_WRITE:-} ]] && echo '{"step": 5}' >"$FAKE_WRITE"
[[ -n ${FAKE_SLEEP:-} ]] && { echo sleeping >>"$FAKE_LOG"; sleep "$FAKE_SLEEP"; }
exit "$FAKE_RC"
"""


@pytest.fixture
def job(dry: dict, tmp_path: Path):
    """Run the generated job script as job 1002 of the chain; returns (rc, stdout, log)."""
    run_folder = dry["run_folder"]
    (run_folder / "slurm").mkdir(parents=True, exist_ok=True)
    jobs_file = Path(re.search(r"^JOBS_FILE=(\S+)$", dry["script"], re.M)[1])
    jobs_file.write_text("\n".join(CHAIN) + "\n")
    script = tmp_path / "job.sbatch"
    script.write_text(dry["script"])
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    for name, body in {
        "srun": FAKE_SRUN,
        "scontrol": "#!/usr/bin/env bash\necho n1\necho n2\n",
        "scancel": '#!/usr/bin/env bash\necho "scancel $*" >>"$FAKE_LOG"\n',
    }.items():
        (fakebin / name).write_text(body)
        (fakebin / name).chmod(stat.S_IRWXU)
    log = tmp_path / "log"

    def run(
        rc: int, write: str | None = None, term_after_start: bool = False
    ) -> tuple[int, str, str]:
        env = {
            **os.environ,
            "PATH": f"{fakebin}:{os.environ['PATH']}",
            "FAKE_LOG": str(log),
            "FAKE_RC": str(rc),
            "FAKE_WRITE": str(run_folder / write) if write else "",
            "SLURM_JOB_ID": "1002",
            "SLURM_NNODES": "2",
            "SLURM_JOB_NODELIST": "n[1-2]",
            "FAKE_SLEEP": "2" if term_after_start else "",
        }
        proc = subprocess.Popen(
            ["bash", str(script)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        if term_after_start:  # SLURM's warning before the time limit, while training runs
            deadline = time.monotonic() + 30
            while (
                "sleeping" not in (log.read_text() if log.exists() else "")
                and time.monotonic() < deadline
            ):
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        return proc.returncode, out, log.read_text() if log.exists() else ""

    yield run
    for name in ("complete.json", "diverged.json"):
        (run_folder / name).unlink(missing_ok=True)


def test_job_runs_composer_per_node(job) -> None:
    rc, out, log = job(0)
    assert rc == 0
    (line,) = [ln for ln in log.splitlines() if ln.startswith("COMPOSER")]
    assert line.startswith(
        "COMPOSER -n 4 --world_size 8 --node_rank 1 --master_addr n1 --master_port 29500 "
        "recipes/train.py yamls/demo.yaml run_name=chain-test"
    )
    assert "scancel" not in log and "next job of the chain (if any) resumes" in out


def test_job_exit_3_cancels_the_rest_of_the_chain(job) -> None:
    rc, out, log = job(3)
    assert rc == 3
    assert "scancel 1003 1004" in log.splitlines()
    assert "diverged: cancelling the rest of the chain: 1003 1004" in out


def test_job_new_diverged_json_cancels_even_if_the_status_is_hidden(job) -> None:
    rc, _, log = job(137, write="diverged.json")
    assert rc == 3 and "scancel 1003 1004" in log.splitlines()


def test_job_old_diverged_json_does_not_cancel(job, dry: dict) -> None:
    old = dry["run_folder"] / "diverged.json"
    old.write_text('{"step": 1}')
    os.utime(old, (1_600_000_000, 1_600_000_000))  # from a job before this one
    rc, _, log = job(143)  # timed out: the next job must still run
    assert rc == 143 and "scancel" not in log


def test_job_completing_the_run_cancels_the_no_op_rest(job) -> None:
    rc, out, log = job(0, write="complete.json")
    assert rc == 0 and "scancel 1003 1004" in log.splitlines() and "the run is complete" in out


def test_job_of_a_complete_run_does_nothing(job, dry: dict) -> None:
    (dry["run_folder"] / "complete.json").write_text('{"step": 1}')
    rc, out, log = job(1)
    assert rc == 0 and "srun-args" not in log and "nothing to do" in out


def test_job_sigterm_warning_keeps_waiting_for_training(job) -> None:
    rc, out, log = job(0, term_after_start=True)
    assert "SIGTERM: time limit near" in out
    # the signal went on to the training step's processes; the job waited for srun to end (its
    # status, not the signal's) and cancelled nothing of the chain
    assert "scancel --signal=TERM 1002" in log.splitlines()
    assert rc == 0 and "training stopped with exit status 0" in out and "scancel 100" not in log


def test_job_preempted_status_143_lets_the_chain_go_on(job) -> None:
    rc, out, log = job(143)
    assert rc == 143 and "scancel 100" not in log
    assert (
        "stopped by SIGTERM and saved a checkpoint of the batch in progress (exit status 143)"
        in out
    )


def test_launchers_ignore_sigterm_so_trainers_can_save(dry: dict) -> None:
    assert 'trap "" TERM; exec .venv/bin/python -m stoicheia.launch -n "$1"' in dry["script"]
