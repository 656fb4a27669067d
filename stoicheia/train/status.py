"""Where a run stands, read from the files in its run folder only: ``stoicheia status``.

Reads ``metrics.jsonl`` (step, learning rate, data phase), the ``latest-rank0.pt`` link, the
marker files of :mod:`stoicheia.train.run_files` (``anneal.json``, ``best.json``,
``complete.json``, ``diverged.json``, ``stopped.json``) and ``evals.jsonl``. The checkpoint it
recommends is verified first (:func:`stoicheia.train.checkpoints.missing_records`: present, a
readable zip, every tensor record there): a missing or truncated ``best.pt`` or a ``latest``
link to a file that is gone is reported as such, with the checkpoint to use instead. No model is
loaded and nothing is written, so it is safe to run beside a training job.

:func:`run_status` gathers the facts as a dict, :func:`format_status` turns them into lines.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from stoicheia.train import run_files
from stoicheia.train.checkpoints import missing_records
from stoicheia.train.mix_plan import (
    MIX_FILE,
    plan_lines,
    run_phase_lines,
    run_phases,
    warning_lines,
)
from stoicheia.train.run_files import read_history

METRICS = "metrics.jsonl"
LATEST = "latest-rank0.pt"
#: The files any run folder holds at least one of once the first step is logged.
RUN_FILES = (
    METRICS,
    run_files.EVALS,
    run_files.ANNEAL,
    run_files.BEST,
    run_files.COMPLETE,
    run_files.DIVERGED,
    run_files.STOPPED,
    LATEST,
)

_CHECKPOINT = re.compile(r"^ep\d+-ba(?P<batch>\d+)-rank0\.pt$")
_STATES = {"anneal_done": "complete (anneal done)", "early_stop": "complete (early stop)"}
_SIGNALS = {"SIGINT": "Ctrl-C (SIGINT)"}
_WHY = {
    "stall": "the decision metric stalled",
    "cap": "the stable phase reached its cap",
    "planned": "as planned",
}


class NoRunError(ValueError):
    """The folder is missing or holds no run files; the message names the folder and the fix."""


def _no_run_message(folder: Path, what: str) -> str:
    hint = ""
    if folder.is_dir():
        runs = sorted(
            p for p in folder.iterdir() if p.is_dir() and any((p / n).exists() for n in RUN_FILES)
        )
        if runs:
            hint = (
                " (run folders below it: "
                + ", ".join(str(p) for p in runs[:3])
                + (", ..." if len(runs) > 3 else "")
                + ")"
            )
    return (
        f"no run here: {folder} {what}; expected metrics.jsonl/evals.jsonl written by "
        "`composer recipes/train.py CONFIG`: give the run folder, i.e. train.save_folder "
        f"(e.g. checkpoints/RUN_NAME; runs/RUN_NAME for an object-store save_folder){hint}"
    )


def _latest_checkpoint(folder: Path) -> str | None:
    link = folder / LATEST
    if link.is_symlink():
        return os.readlink(link)
    if link.is_file():
        return LATEST
    newest = max(
        ((int(m["batch"]), p.name) for p in folder.iterdir() if (m := _CHECKPOINT.match(p.name))),
        default=None,
    )
    return newest[1] if newest else None


def checkpoint_problem(path: Path) -> str | None:
    """Why the checkpoint file ``path`` cannot be used, in a few words, or ``None`` if it is
    complete (:func:`~stoicheia.train.checkpoints.missing_records`; reads the whole file once
    for its CRC check, ~0.3 s per GB from the page cache)."""
    if not path.exists():
        return f"{path.name} is missing"
    if not path.is_file():
        return f"{path.name} is not a file"
    missing = missing_records(path)
    if missing is None:
        return (
            f"{path.name} is truncated or not a checkpoint ({path.stat().st_size:,} bytes; it "
            "cannot be loaded)"
        )
    if missing:
        more = "..." if len(missing) > 3 else ""
        return (
            f"{path.name} is incomplete (lacks {', '.join(missing[:3])}{more}; it cannot be loaded)"
        )
    return None


def _fallback(folder: Path, skip: set[str]) -> tuple[str | None, str]:
    """The newest complete checkpoint of the folder not in ``skip``: the periodic checkpoints
    ``ep*-ba*-rank0.pt`` newest first, then ``final.pt``, ``best.pt``, ``pre_anneal.pt``.
    Returns ``(name, why)``; ``(None, why)`` when none is complete."""
    periodic = sorted(
        (
            (int(m["batch"]), p.name)
            for p in folder.iterdir()
            if (m := _CHECKPOINT.match(p.name)) and not p.is_symlink()
        ),
        reverse=True,
    )
    for _, name in periodic:
        if name not in skip and checkpoint_problem(folder / name) is None:
            return name, "the newest complete checkpoint"
    for name in ("final.pt", "best.pt", "pre_anneal.pt"):
        if (
            name not in skip
            and (folder / name).exists()
            and checkpoint_problem(folder / name) is None
        ):
            return name, f"the only complete checkpoint left ({name})"
    return None, "no complete checkpoint in the folder"


def _choose(folder: Path, facts: dict[str, Any], wanted: str | None, why: str) -> None:
    """Set ``use``/``use_why`` to ``wanted`` when it is a complete checkpoint, else to the
    fallback, adding the reason to ``facts["problems"]``."""
    if wanted is None:
        facts["use"], facts["use_why"] = None, why
        return
    problem = checkpoint_problem(folder / wanted)
    if problem is None:
        facts["use"], facts["use_why"] = str(folder / wanted), why
        return
    facts["problems"].append(problem)
    name, fallback_why = _fallback(folder, {Path(wanted).name})
    facts["use"] = str(folder / name) if name else None
    facts["use_why"] = f"{fallback_why}, instead of {Path(wanted).name} ({why})"


def _metrics(folder: Path) -> dict[str, Any]:
    """The last step of ``metrics.jsonl`` and the last logged LR, data phase, anneal flag."""
    out: dict[str, Any] = {
        "step": None,
        "time": None,
        "lr": None,
        "lr_key": None,
        "phase": None,
        "anneal_started": None,
        "restart_time": None,
    }
    for row in run_files.read_jsonl(folder / METRICS):
        if not isinstance(row, dict) or not isinstance(row.get("step"), int):
            continue
        # The last line is where the run is: after a resume, steps since the checkpoint repeat.
        if out["step"] is not None and row["step"] <= out["step"]:
            out["restart_time"] = row.get("time")
        out["step"], out["time"] = row["step"], row.get("time")
        for key, value in row.items():
            if key.startswith("lr-"):
                out["lr"], out["lr_key"] = value, key
        if "data/phase" in row:
            out["phase"] = int(row["data/phase"])
        if "schedule/anneal_started" in row:
            out["anneal_started"] = bool(row["schedule/anneal_started"])
    return out


def _last_evals(folder: Path) -> dict[str, dict[str, Any]]:
    """The newest evaluation of each set: ``{set: {"step": ..., "metrics": {...}}}``."""
    last: dict[str, dict[str, Any]] = {}
    for row in read_history(folder):  # sorted by step; the later line of a (step, set) wins
        last[str(row["set"])] = {"step": int(row["step"]), "metrics": dict(row.get("metrics", {}))}
    return last


def _resumed_after(facts: dict[str, Any], marker: dict[str, Any]) -> bool:
    """True if ``metrics.jsonl`` shows a job after the one that wrote ``marker``
    (``diverged.json``, ``stopped.json``): a step past the marker's, or a restart (a step not
    above the one before) logged after the marker was written."""
    step, restart, when = facts.get("step"), facts.get("restart_time"), marker.get("time")
    if isinstance(step, int) and isinstance(marker.get("step"), int) and step > marker["step"]:
        return True
    return isinstance(restart, (int, float)) and isinstance(when, (int, float)) and restart > when


def run_status(folder: Path) -> dict[str, Any]:
    """The facts about the run in ``folder`` (its run folder, ``train.save_folder``).

    Reads ``metrics.jsonl``, ``evals.jsonl``, ``latest-rank0.pt`` and the JSON markers of
    :mod:`stoicheia.train.run_files`. Returns a dict with:

    * ``folder``; ``step``, ``time`` (of the last ``metrics.jsonl`` line), ``lr``, ``lr_key``,
      ``phase`` (0 stable, k anneal phase k), ``anneal_started`` (``None`` where not logged),
      ``restart_time`` (time of the first line of the newest resumed job, or ``None``);
    * ``latest_checkpoint``: target of ``latest-rank0.pt`` (else the newest
      ``ep*-ba*-rank0.pt``), or ``None``;
    * ``anneal``, ``best``, ``complete``, ``diverged``, ``stopped``: the marker objects, or
      ``None``;
    * ``state``: ``"complete (anneal done)"``, ``"complete (early stop)"``,
      ``"diverged at step N"``, ``"stopped by Ctrl-C (SIGINT) at step N"`` (or ``by SIGTERM``:
      ``stopped.json``, the last job saved that batch and exited 130 or 143; the same command
      resumes) or ``"running or stopped (resumable)"`` (with ``"; resumed after diverging at
      step N"`` when ``metrics.jsonl`` shows a job after ``diverged.json``: the recipe leaves
      that file in place when a diverged run is resumed; likewise ``stopped.json``);
    * ``use`` (path of the checkpoint to use, or ``None``) and ``use_why`` (one phrase): the
      checkpoint the state calls for (``best.pt``, ``final.pt``, the last good or the latest
      one) if it is complete, else the newest complete checkpoint, and why;
    * ``problems``: one phrase per checkpoint that should be there and cannot be loaded (a
      ``latest-rank0.pt`` link that dangles or points at a truncated file, a missing or
      truncated ``best.pt``/``final.pt``/last good checkpoint);
    * ``evals``: the newest evaluation of each set, ``{set: {"step", "metrics"}}``;
    * ``mix``: the tier mix in letters over the planned run (``mix.json``, written at start
      by :mod:`stoicheia.train.mix_plan`), or ``None`` for a run started before it existed.

    Raises :class:`NoRunError` (a ``ValueError``) if ``folder`` is missing or holds none of
    :data:`RUN_FILES`, and ``ValueError`` naming the file if a JSON marker is corrupt.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise NoRunError(
            _no_run_message(folder, "does not exist" if not folder.exists() else "is not a folder")
        )
    if not any((folder / name).exists() or (folder / name).is_symlink() for name in RUN_FILES):
        raise NoRunError(_no_run_message(folder, "holds none of " + ", ".join(RUN_FILES)))
    facts: dict[str, Any] = {"folder": str(folder), **_metrics(folder)}
    facts["latest_checkpoint"] = _latest_checkpoint(folder)
    for key, name in (
        ("anneal", run_files.ANNEAL),
        ("best", run_files.BEST),
        ("complete", run_files.COMPLETE),
        ("diverged", run_files.DIVERGED),
        ("stopped", run_files.STOPPED),
    ):
        facts[key] = run_files.read_json(folder, name)
    facts["evals"] = _last_evals(folder)
    facts["mix"] = run_files.read_json(folder, MIX_FILE)

    complete, diverged = facts["complete"], facts["diverged"]
    facts["problems"] = []
    latest = facts["latest_checkpoint"]
    latest_problem = None
    if (folder / LATEST).is_symlink():  # Composer's link is relative to the run folder
        latest_problem = checkpoint_problem(folder / latest)
        if latest_problem is not None:
            dangling = " (the link dangles)" if not (folder / LATEST).exists() else ""
            facts["problems"].append(f"{LATEST} points at {latest}{dangling}: {latest_problem}")
    if complete is not None:
        facts["state"] = _STATES.get(complete.get("reason"), f"complete ({complete.get('reason')})")
        use = complete.get("use") or "final.pt"
        _choose(
            folder, facts, use, "the best evaluation" if use == "best.pt" else "the end of the run"
        )
    elif diverged is not None and not _resumed_after(facts, diverged):
        facts["state"] = f"diverged at step {diverged.get('step')}"
        good = diverged.get("last_good_checkpoint")
        _choose(
            folder,
            facts,
            good,
            "the last good checkpoint" if good else "no checkpoint was saved before the divergence",
        )
    else:
        stopped = facts["stopped"]
        if stopped is not None and not _resumed_after(facts, stopped):
            how = _SIGNALS.get(stopped.get("signal"), stopped.get("signal"))
            facts["state"] = f"stopped by {how} at step {stopped.get('step')}"
        else:
            facts["state"] = "running or stopped (resumable)"
        if diverged is not None:
            facts["state"] += f"; resumed after diverging at step {diverged.get('step')}"
        if (folder / "best.pt").exists() or facts["best"] is not None:
            # best.json names a best.pt: a missing one is a fault, not "no best yet"
            _choose(folder, facts, "best.pt", "the best evaluation so far")
        elif latest:
            if latest_problem is None:
                facts["use"], facts["use_why"] = str(folder / latest), "the latest checkpoint"
            else:
                name, why = _fallback(folder, {Path(latest).name})
                facts["use"] = str(folder / name) if name else None
                facts["use_why"] = f"{why}, instead of the latest ({latest})"
        else:
            facts["use"], facts["use_why"] = None, "no checkpoint yet"
    return facts


def _num(value: Any, fmt: str = ".4f") -> str:
    return format(value, fmt) if isinstance(value, (int, float)) else str(value)


def _ago(t: Any, now: float | None = None) -> str:
    if not isinstance(t, (int, float)):
        return ""
    s = max(0.0, (time.time() if now is None else now) - t)
    text = (
        f"{s:.0f} s"
        if s < 120
        else f"{s / 60:.0f} min"
        if s < 7200
        else f"{s / 3600:.1f} h"
        if s < 172800
        else f"{s / 86400:.0f} days"
    )
    return f" (last line written {text} ago)"


def _anneal_lines(facts: dict[str, Any]) -> list[str]:
    a = facts["anneal"]
    if a is None:
        flag = facts.get("anneal_started")
        return [
            "anneal: not decided yet"
            + (" (schedule/anneal_started 0: peak LR)" if flag is False else "")
        ]
    step, planned, reason = a.get("step"), a.get("planned_start"), a.get("reason")
    when = _WHY.get(reason, str(reason))
    if isinstance(step, int) and isinstance(planned, int) and step != planned:
        side = "before" if step < planned else "after"
        when += f", {abs(planned - step)} batches {side} the planned start {planned}"
    elif reason != "planned" and planned is not None:
        when += f", at the planned start {planned}"
    if reason != "cap":  # the cap's own step, where the stable phase would have ended
        when += f"; cap {a.get('cap')}"
    lines = [
        f"anneal: started at step {step} ({reason}: {when}), decay ends at step {a.get('end')}"
    ]
    evals = a.get("evaluations") or []
    if evals:
        values = [v for _, v in evals]
        line = (
            f"  evidence: {len(evals)} evaluations of {a.get('decide_on', 'the decision metric')}, "
            f"steps {evals[0][0]}-{evals[-1][0]}: {_num(values[0])} -> {_num(values[-1])}"
        )
        if a.get("stall_eps") is not None:
            line += f" (stall_eps {a['stall_eps']:g})"
        lines.append(line)
    return lines


def format_status(facts: dict[str, Any]) -> list[str]:
    """The facts of :func:`run_status` as a few plain text lines (no trailing newlines)."""
    lines = [f"run folder: {facts['folder']}"]
    if facts.get("step") is None:
        lines.append(f"step: unknown (no {METRICS} line yet)")
    else:
        lr = f", lr {facts['lr']:.3g}" if isinstance(facts.get("lr"), (int, float)) else ""
        phase = facts.get("phase")
        data = (
            ""
            if phase is None
            else ", data: stable phase"
            if phase == 0
            else f", data: anneal phase {phase}"
        )
        lines.append(f"step: {facts['step']}{lr}{data}{_ago(facts.get('time'))}")
    lines.append(f"latest checkpoint: {facts.get('latest_checkpoint') or 'none'}")
    for problem in facts.get("problems", []):
        lines.append(f"warning: {problem}")
    lines.extend(_anneal_lines(facts))
    best = facts.get("best")
    if best:
        lines.append(
            f"best: step {best.get('step')}, {best.get('metric')} {_num(best.get('value'))} "
            f"({best.get('file')})"
        )
    else:
        lines.append("best: none yet")
    state = facts["state"]
    if facts.get("complete"):
        state += f" at step {facts['complete'].get('step')}"
    if facts["state"].startswith("diverged"):
        state += f": {facts['diverged'].get('message')}"
    if facts["state"].startswith("stopped by"):
        saved = facts["stopped"].get("checkpoint")
        state += (
            f", the batch in progress saved{f' ({saved})' if saved else ''}; run the same "
            "training command again to resume from it"
        )
    lines.append(f"state: {state}")
    lines.append(
        f"use: {facts['use']} ({facts['use_why']})"
        if facts.get("use")
        else f"use: none ({facts['use_why']})"
    )
    mix = facts.get("mix")
    if mix:
        # the phases as they went where the automatic anneal moved them (the plan's
        # "stable (1,007 steps)" beside an anneal that started at 1,054 told two stories)
        end = (facts.get("complete") or {}).get("step")
        went = run_phases(mix, facts.get("anneal"), facts.get("step"), end)
        lines.extend(run_phase_lines(went, facts.get("anneal")) if went else plan_lines(mix))
        lines.extend(warning_lines(went or mix))
    for name, ev in sorted(facts.get("evals", {}).items()):
        values = ", ".join(f"{k} {_num(v)}" for k, v in ev["metrics"].items())
        lines.append(f"eval {name} @ step {ev['step']}: {values}")
    return lines
