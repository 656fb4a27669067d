"""``stoicheia status``: run folders built the way the plugins write them, read back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stoicheia.cli import main
from stoicheia.train import run_files
from stoicheia.train.callbacks.anneal_control import AnnealControl
from stoicheia.train.callbacks.auto_anneal import AutoAnneal
from stoicheia.train.schedule import WSDShape
from stoicheia.train.status import format_status, run_status

LR = "lr-AdamW/group0"
T0 = 1_700_000_000.0
# nominal 1000 batches, decay 200: planned anneal start 800; max_steps 1200: cap 1000
SHAPE = WSDShape(nominal_steps=1000, warmup_frac=0.04, decay_frac=0.2)
MAX_STEPS = 1200


def write_metrics(
    folder: Path,
    steps: range,
    lr: float = 3e-4,
    phase: int = 0,
    started: bool = False,
    t0: float = T0,
) -> None:
    """Lines as :class:`JSONLLogger` writes them: step, time, and the metrics of that step."""
    run_files.append_jsonl(
        folder / "metrics.jsonl",
        [
            {
                "step": s,
                "time": t0 + s,
                "loss/train/total": 2.0,
                LR: lr,
                "data/phase": float(phase),
                "schedule/anneal_started": float(started),
            }
            for s in steps
        ],
    )


def write_evals(
    folder: Path, step: int, gold: float, silver: float, t: float | None = None
) -> None:
    """Lines as :class:`EvalHistory` writes them: one per set."""
    t = T0 + step if t is None else t
    run_files.append_jsonl(
        folder / run_files.EVALS,
        [
            {
                "step": step,
                "set": "gold",
                "metrics": {"bits_per_char": gold, "dia_acc": 0.9},
                "time": t,
            },
            {
                "step": step,
                "set": "silver",
                "metrics": {"bits_per_char": silver, "dia_acc": 0.8},
                "time": t,
            },
        ],
    )


def save_checkpoint(path: Path, batch: int = 0) -> None:
    """A small complete torch zip checkpoint shaped like Composer's (``state.model``)."""
    import torch

    torch.save(
        {
            "state": {
                "model": {"w": torch.full((4, 4), float(batch))},
                "timestamp": {"batch": batch},
            }
        },
        path,
    )


def write_checkpoint(folder: Path, batch: int) -> str:
    """A Composer checkpoint file and the ``latest-rank0.pt`` link to it."""
    name = f"ep0-ba{batch}-rank0.pt"
    save_checkpoint(folder / name, batch)
    link = folder / "latest-rank0.pt"
    if link.is_symlink():
        link.unlink()
    os.symlink(name, link)
    return name


def write_best(folder: Path, step: int, value: float) -> dict:
    """``best.pt`` and ``best.json`` as :class:`BestCheckpoint` writes them."""
    save_checkpoint(folder / "best.pt", step)
    best = {
        "step": step,
        "metric": "gold/bits_per_char",
        "value": value,
        "file": "best.pt",
        "time": T0 + step,
    }
    run_files.write_json(folder, run_files.BEST, best)
    return best


def write_complete(folder: Path, step: int, reason: str, best: dict | None) -> None:
    """``final.pt`` and ``complete.json`` as :meth:`AnnealControl.write_completion` writes them."""
    folder.mkdir(parents=True, exist_ok=True)
    save_checkpoint(folder / "final.pt", step)
    run_files.write_json(
        folder,
        run_files.COMPLETE,
        {
            "step": step,
            "reason": reason,
            "anneal_start": 600,
            "anneal_reason": "stall",
            "final": "final.pt",
            "best": best,
            "use": "best.pt" if best else "final.pt",
            "time": T0 + step,
        },
    )


def decide_stall(folder: Path, step: int = 600) -> None:
    """``anneal.json`` written by the real :meth:`AnnealControl.decide` with the evidence of
    :class:`AutoAnneal` (a stalled window of 4 evaluations)."""
    control = AnnealControl(SHAPE, MAX_STEPS, run_folder=folder)
    auto = AutoAnneal(control, "gold/bits_per_char", stall_window=4, stall_eps=0.01)
    auto.window = [(300, 1.50), (400, 1.45), (500, 1.449), (600, 1.448)]
    control.decide(step, "stall", auto._evidence())


def running_run(tmp_path: Path) -> Path:
    folder = tmp_path / "running"
    write_metrics(folder, range(1, 451))
    write_evals(folder, 200, 1.9, 2.1)
    write_evals(folder, 400, 1.6, 1.8)
    write_checkpoint(folder, 400)
    write_best(folder, 400, 1.6)
    return folder


def annealing_run(tmp_path: Path) -> Path:
    folder = tmp_path / "annealing"
    write_metrics(folder, range(1, 601))
    for s, v in [(300, 1.50), (400, 1.45), (500, 1.449), (600, 1.448)]:
        write_evals(folder, s, v, v + 0.2)
    write_best(folder, 600, 1.448)
    write_checkpoint(folder, 600)
    decide_stall(folder)
    write_metrics(folder, range(601, 651), lr=2.5e-4, phase=1, started=True)
    return folder


def complete_run(tmp_path: Path, reason: str) -> Path:
    folder = tmp_path / reason
    write_metrics(folder, range(1, 601))
    decide_stall(folder)
    write_metrics(folder, range(601, 741), lr=1e-5, phase=1, started=True)
    write_evals(folder, 700, 1.30, 1.5)
    write_evals(folder, 740, 1.31, 1.5)
    best = write_best(folder, 700, 1.30)
    write_checkpoint(folder, 740)
    write_complete(folder, 740, reason, best)
    return folder


def diverged_run(tmp_path: Path) -> Path:
    folder = tmp_path / "diverged"
    write_metrics(folder, range(1, 231))
    good = write_checkpoint(folder, 200)
    run_files.write_json(
        folder,
        run_files.DIVERGED,
        {
            "step": 230,
            "message": "25 consecutive non-finite gradients up to batch 230: the run diverged.",
            "last_good_checkpoint": os.readlink(folder / "latest-rank0.pt"),
            "time": T0 + 231,
        },
    )
    assert good == "ep0-ba200-rank0.pt"
    return folder


def status_lines(folder: Path, capsys) -> list[str]:
    capsys.readouterr()  # drop what building the run folder logged
    assert main(["status", str(folder)]) == 0
    out = capsys.readouterr()
    assert out.err == ""
    return out.out.splitlines()


def test_running_before_the_anneal_decision(tmp_path: Path, capsys) -> None:
    folder = running_run(tmp_path)
    facts = run_status(folder)
    assert facts["step"] == 450
    assert facts["lr"] == pytest.approx(3e-4) and facts["lr_key"] == LR
    assert facts["phase"] == 0 and facts["anneal_started"] is False
    assert facts["latest_checkpoint"] == "ep0-ba400-rank0.pt"
    assert facts["anneal"] is None and facts["complete"] is None and facts["diverged"] is None
    assert facts["best"]["step"] == 400
    assert facts["state"] == "running or stopped (resumable)"
    assert facts["use"] == str(folder / "best.pt")
    assert facts["evals"]["gold"] == {
        "step": 400,
        "metrics": {"bits_per_char": 1.6, "dia_acc": 0.9},
    }
    lines = status_lines(folder, capsys)
    text = "\n".join(lines)
    assert lines[0] == f"run folder: {folder}"
    assert lines[1].startswith("step: 450, lr 0.0003, data: stable phase")
    assert "latest checkpoint: ep0-ba400-rank0.pt" in lines
    assert "anneal: not decided yet (schedule/anneal_started 0: peak LR)" in lines
    assert "best: step 400, gold/bits_per_char 1.6000 (best.pt)" in lines
    assert "state: running or stopped (resumable)" in lines
    assert f"use: {folder / 'best.pt'} (the best evaluation so far)" in lines
    assert "eval gold @ step 400: bits_per_char 1.6000, dia_acc 0.9000" in text
    assert "eval silver @ step 400: bits_per_char 1.8000, dia_acc 0.8000" in text


def test_running_without_best_uses_the_latest_checkpoint(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    write_metrics(folder, range(1, 251))
    write_checkpoint(folder, 200)
    facts = run_status(folder)
    assert (
        facts["use"] == str(folder / "ep0-ba200-rank0.pt")
        and facts["use_why"] == "the latest checkpoint"
    )
    assert "best: none yet" in format_status(facts)


def test_annealing_after_a_stall(tmp_path: Path, capsys) -> None:
    folder = annealing_run(tmp_path)
    facts = run_status(folder)
    assert facts["step"] == 650 and facts["phase"] == 1 and facts["anneal_started"] is True
    assert facts["lr"] == pytest.approx(2.5e-4)
    anneal = facts["anneal"]
    assert (
        anneal["step"],
        anneal["reason"],
        anneal["planned_start"],
        anneal["cap"],
        anneal["end"],
    ) == (600, "stall", 800, 1000, 800)
    assert facts["state"] == "running or stopped (resumable)"
    lines = status_lines(folder, capsys)
    assert lines[1].startswith("step: 650, lr 0.00025, data: anneal phase 1")
    i = lines.index(
        "anneal: started at step 600 (stall: the decision metric stalled, "
        "200 batches before the planned start 800; cap 1000), decay ends at step 800"
    )
    assert lines[i + 1] == (
        "  evidence: 4 evaluations of gold/bits_per_char, steps 300-600: "
        "1.5000 -> 1.4480 (stall_eps 0.01)"
    )


@pytest.mark.parametrize(
    ("reason", "state"),
    [("anneal_done", "complete (anneal done)"), ("early_stop", "complete (early stop)")],
)
def test_complete_runs_use_best_pt(tmp_path: Path, capsys, reason: str, state: str) -> None:
    folder = complete_run(tmp_path, reason)
    facts = run_status(folder)
    assert facts["state"] == state
    assert facts["use"] == str(folder / "best.pt") and facts["use_why"] == "the best evaluation"
    assert facts["evals"]["gold"]["step"] == 740
    lines = status_lines(folder, capsys)
    assert f"state: {state} at step 740" in lines
    assert f"use: {folder / 'best.pt'} (the best evaluation)" in lines


def test_complete_without_best_uses_final_pt(tmp_path: Path) -> None:
    folder = tmp_path / "nobest"
    write_metrics(folder, range(1, 11))
    write_complete(folder, 10, "anneal_done", None)
    facts = run_status(folder)
    assert facts["use"] == str(folder / "final.pt") and facts["use_why"] == "the end of the run"


def test_diverged_names_the_last_good_checkpoint(tmp_path: Path, capsys) -> None:
    folder = diverged_run(tmp_path)
    facts = run_status(folder)
    assert facts["state"] == "diverged at step 230"
    assert (
        facts["use"] == str(folder / "ep0-ba200-rank0.pt")
        and facts["use_why"] == "the last good checkpoint"
    )
    lines = status_lines(folder, capsys)
    assert (
        "state: diverged at step 230: 25 consecutive non-finite gradients up to batch 230: "
        "the run diverged." in lines
    )
    assert f"use: {folder / 'ep0-ba200-rank0.pt'} (the last good checkpoint)" in lines


def test_diverged_then_resumed_is_resumable_again(tmp_path: Path) -> None:
    folder = diverged_run(tmp_path)
    # the same command again (lower lr): it resumes at the last good checkpoint, after diverged.json
    write_metrics(folder, range(201, 221), lr=1e-4, t0=T0 + 1000)
    facts = run_status(folder)
    assert facts["step"] == 220
    assert facts["state"] == "running or stopped (resumable); resumed after diverging at step 230"
    assert (
        facts["use"] == str(folder / "ep0-ba200-rank0.pt")
        and facts["use_why"] == "the latest checkpoint"
    )


def test_resumed_evaluations_later_line_wins(tmp_path: Path) -> None:
    folder = running_run(tmp_path)
    write_evals(folder, 400, 1.55, 1.75, t=T0 + 5000)  # re-evaluated after a resume
    assert run_status(folder)["evals"]["gold"]["metrics"]["bits_per_char"] == 1.55


@pytest.mark.parametrize("make", ["empty", "missing", "parent"])
def test_no_run_here_exits_2(tmp_path: Path, capsys, make: str) -> None:
    folder = tmp_path / "runs"
    if make == "empty":
        folder.mkdir()
    elif make == "parent":
        running_run(folder)  # folder/running is a run; folder itself is not
    assert main(["status", str(folder)]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    (line,) = out.err.splitlines()
    assert line.startswith(f"stoicheia status: error: no run here: {folder} ")
    assert "metrics.jsonl" in line and "save_folder" in line
    if make == "missing":
        assert "does not exist" in line
    if make == "parent":
        assert str(folder / "running") in line


def test_corrupt_marker_exits_2_naming_the_file(tmp_path: Path, capsys) -> None:
    folder = annealing_run(tmp_path)
    (folder / run_files.ANNEAL).write_text('{"step": 600, "reason": ', encoding="utf-8")
    capsys.readouterr()  # what building the fixture logged
    with pytest.raises(ValueError, match="anneal.json"):
        run_status(folder)
    assert main(["status", str(folder)]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.startswith("stoicheia status: error: ")
    assert str(folder / "anneal.json") in out.err and "not valid JSON" in out.err


def test_unreadable_jsonl_lines_are_skipped_and_reported(tmp_path):
    import logging

    from stoicheia.train.run_files import read_jsonl

    seen: list[str] = []
    handler = logging.Handler(level=logging.WARNING)
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("stoicheia.train.run_files")
    logger.addHandler(handler)
    try:
        path = tmp_path / "metrics.jsonl"
        path.write_bytes(b'{"step": 1}\n{"step": 2, "lo\n{"step": 3}\n\xff\xfe\n{"step"')
        assert read_jsonl(path) == [{"step": 1}, {"step": 3}]
    finally:
        logger.removeHandler(handler)
    assert any("3 unreadable line(s) skipped (lines 2, 4, 5" in m for m in seen), seen


# --- the checkpoint status recommends is checked -------------------------------------------


def test_missing_best_pt_is_reported_with_the_checkpoint_to_use(tmp_path: Path, capsys) -> None:
    folder = running_run(tmp_path)
    (folder / "best.pt").unlink()  # best.json still names it (deleted by hand, a failed copy)
    facts = run_status(folder)
    assert facts["problems"] == ["best.pt is missing"]
    assert facts["use"] == str(folder / "ep0-ba400-rank0.pt")
    assert (
        facts["use_why"]
        == "the newest complete checkpoint, instead of best.pt (the best evaluation so far)"
    )
    lines = status_lines(folder, capsys)
    assert "warning: best.pt is missing" in lines
    assert (
        f"use: {folder / 'ep0-ba400-rank0.pt'} (the newest complete checkpoint, "
        "instead of best.pt (the best evaluation so far))" in lines
    )


def test_truncated_best_pt_is_reported(tmp_path: Path) -> None:
    folder = complete_run(tmp_path, "anneal_done")
    data = (folder / "best.pt").read_bytes()
    (folder / "best.pt").write_bytes(data[: len(data) // 2])  # a copy cut short (disk full, a kill)
    facts = run_status(folder)
    assert len(facts["problems"]) == 1 and facts["problems"][0].startswith(
        "best.pt is truncated or not a checkpoint"
    )
    # the newest complete periodic checkpoint of the run (final.pt is the same step, named)
    assert facts["use"] == str(folder / "ep0-ba740-rank0.pt")
    assert "instead of best.pt" in facts["use_why"]


def test_dangling_latest_is_reported_and_an_older_checkpoint_used(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "run"
    write_metrics(folder, range(1, 301))
    write_checkpoint(folder, 100)
    write_checkpoint(folder, 200)
    (
        folder / "ep0-ba200-rank0.pt"
    ).unlink()  # removed by hand or by a cleanup script; the link stays
    facts = run_status(folder)
    assert facts["latest_checkpoint"] == "ep0-ba200-rank0.pt"
    assert facts["problems"] == [
        "latest-rank0.pt points at ep0-ba200-rank0.pt (the link dangles): "
        "ep0-ba200-rank0.pt is missing"
    ]
    assert facts["use"] == str(folder / "ep0-ba100-rank0.pt")
    assert (
        facts["use_why"]
        == "the newest complete checkpoint, instead of the latest (ep0-ba200-rank0.pt)"
    )
    lines = status_lines(folder, capsys)
    assert (
        "warning: latest-rank0.pt points at ep0-ba200-rank0.pt (the link dangles): "
        "ep0-ba200-rank0.pt is missing" in lines
    )


def test_latest_pointing_at_an_incomplete_file_and_nothing_else(tmp_path: Path) -> None:
    import zipfile

    folder = tmp_path / "run"
    write_metrics(folder, range(1, 101))
    write_checkpoint(folder, 100)
    path = folder / "ep0-ba100-rank0.pt"
    with zipfile.ZipFile(path) as zf:  # the zip without one tensor record (a kill during the write)
        members = {i.filename: zf.read(i) for i in zf.infolist() if "/data/" not in i.filename}
    with zipfile.ZipFile(path, "w") as zf:
        for name, blob in members.items():
            zf.writestr(name, blob)
    facts = run_status(folder)
    assert facts["problems"] == [
        "latest-rank0.pt points at ep0-ba100-rank0.pt: ep0-ba100-rank0.pt is incomplete "
        "(lacks data/0; it cannot be loaded)"
    ]
    assert (
        facts["use"] is None
        and facts["use_why"]
        == "no complete checkpoint in the folder, instead of the latest (ep0-ba100-rank0.pt)"
    )


def test_complete_run_whose_final_pt_is_gone(tmp_path: Path) -> None:
    folder = tmp_path / "nobest"
    write_metrics(folder, range(1, 11))
    write_complete(folder, 10, "anneal_done", None)
    write_checkpoint(folder, 10)
    (folder / "final.pt").unlink()
    facts = run_status(folder)
    assert facts["problems"] == ["final.pt is missing"]
    assert facts["use"] == str(folder / "ep0-ba10-rank0.pt")


def test_checking_a_checkpoint_does_not_import_torch(tmp_path: Path) -> None:
    """status verifies what it recommends; that must not cost a torch import (seconds)."""
    import subprocess
    import sys

    save_checkpoint(tmp_path / "best.pt", 7)
    code = (
        "import sys; from stoicheia.train.checkpoints import missing_records; "
        f"assert missing_records({str(tmp_path / 'best.pt')!r}) == []; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr[-2000:]


def _plan(folder: Path) -> None:
    """``mix.json`` as the run writes it at start: the planned stable phase to 800, two anneal
    phases of 100 steps each (``callbacks.anneal_data`` at 0.5 and 1.0 of the decay)."""
    from stoicheia.data.tier_mix import TierSize
    from stoicheia.train.mix_plan import announce, planned_spans

    spans = planned_spans(
        [{"gold": 0.8, "silver": 0.2}, {"gold": 0.8, "silver": 0.2}, {"gold": 1.0}],
        [0.5, 1.0],
        planned_start=800,
        decay_steps=200,
        slots_per_step=1000,
    )
    sizes = {"gold": TierSize(10_000_000, 100), "silver": TierSize(1_000_000, 10)}
    announce(folder, spans, sizes, max_reads=4.0, write=True)


def test_status_shows_the_phases_as_they_went_not_the_plan(tmp_path: Path, capsys) -> None:
    """The anneal started by stall at 600 where the plan put it at 800: status showed the
    planned "stable (800 steps)" beside it; it shows the run's own phases and letters."""
    folder = complete_run(tmp_path, "anneal_done")  # stall at 600, complete at 740
    _plan(folder)
    lines = status_lines(folder, capsys)
    mix = lines[next(i for i, line in enumerate(lines) if "tier mix" in line) :]
    assert mix[0].startswith(
        "tier mix over the run as it went, in letters: 740 steps (planned 1,000; the anneal "
        "started at step 600 (stall), planned at 800), 0.74 M letter slots"
    ), mix
    assert "  stable (steps 0-600: 600 steps): gold 80.0 %, silver 20.0 %" in mix
    assert "  anneal phase 1 (steps 600-700: 100 steps): gold 80.0 %, silver 20.0 %" in mix
    assert "  anneal phase 2 (steps 700-740: 40 steps): gold 100.0 %" in mix
    assert not any("(800 steps)" in line for line in lines)
    # the letters read are those of the steps run: silver 0.2 x 700 x 1000 of its 1 M
    assert any(line.startswith("  silver") and "read 0.14 times" in line for line in mix), mix


def test_status_shows_a_stable_phase_extended_past_its_planned_end(tmp_path: Path, capsys):
    folder = tmp_path / "extended"
    write_metrics(folder, range(1, 851))
    write_checkpoint(folder, 850)
    _plan(folder)
    lines = status_lines(folder, capsys)
    assert any(
        line.startswith(
            "tier mix over the run as it went, in letters: 850 steps (planned 1,000; "
            "the stable phase runs on past its planned end at step 800"
        )
        for line in lines
    ), lines
    assert "  stable (steps 0-850: 850 steps so far): gold 80.0 %, silver 20.0 %" in lines
    # a run that follows its plan prints the plan
    plain = tmp_path / "plain"
    write_metrics(plain, range(1, 101))
    write_checkpoint(plain, 100)
    _plan(plain)
    assert "  stable (800 steps): gold 80.0 %, silver 20.0 %" in status_lines(plain, capsys)


def test_stopped_by_ctrl_c_says_so_and_how_to_resume(tmp_path: Path, capsys) -> None:
    """``stopped.json`` (the recipe's after a Ctrl-C) makes the state say the run was stopped
    and how to resume; once a later job logs steps past it, the run is running again."""
    folder = tmp_path / "run"
    write_metrics(folder, range(1, 251))
    write_checkpoint(folder, 250)
    run_files.write_stopped(folder, step=250, signal_name="SIGINT", exit_status=130)
    facts = run_status(folder)
    assert facts["state"] == "stopped by Ctrl-C (SIGINT) at step 250"
    assert facts["use"] == str(folder / "ep0-ba250-rank0.pt")
    lines = status_lines(folder, capsys)
    assert (
        "state: stopped by Ctrl-C (SIGINT) at step 250, the batch in progress saved "
        "(ep0-ba250-rank0.pt); run the same training command again to resume from it" in lines
    )
    write_metrics(folder, range(251, 261), t0=T0 + 1000)  # the same command again
    assert run_status(folder)["state"] == "running or stopped (resumable)"


def test_stopped_by_sigterm_names_the_signal(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    write_metrics(folder, range(1, 101))
    write_checkpoint(folder, 100)
    run_files.write_stopped(folder, step=100, signal_name="SIGTERM", exit_status=143)
    assert run_status(folder)["state"] == "stopped by SIGTERM at step 100"
