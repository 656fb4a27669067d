"""Files a run keeps beside its checkpoints, in its local run folder.

The run folder is ``train.save_folder`` when that is a local path, else ``runs/{run_name}``.
Everything here is small, human-readable and written atomically (temporary file, then
``os.replace``), by global rank 0 only. Each marker file has one writer, a function of this
module (:func:`write_anneal`, :func:`write_best`, :func:`write_complete`,
:func:`write_diverged`, :func:`write_stopped`), as Composer's ``CheckpointSaver`` owns every
checkpoint file:

========================  ================================================================
``evals.jsonl``           one line per evaluation set per evaluation: step, set, metrics
``metrics.jsonl``         one line per step (:class:`JSONLLogger`)
``anneal.json``           the anneal decision: step, reason (stall / cap / planned), the
                          evaluations that triggered it, planned start, cap, end
``best.json``             the best evaluation of the decision metric so far and its file
``complete.json``         the run is over: step, reason (anneal_done / early_stop), which
                          checkpoint to use
``diverged.json``         the run aborted on non-finite gradients: step, skips, last good
                          checkpoint
``stopped.json``          the last job stopped on a signal (Ctrl-C, SIGTERM) after saving the
                          batch in progress: step, signal, exit status, checkpoint to resume
                          from (a later job that resumes leaves it in place; status compares)
``pre_anneal.pt``         the last peak-LR state (full checkpoint), written at the anneal start
``best.pt``, ``final.pt`` full checkpoints of the best evaluation and of the end of the run
========================  ================================================================

Named checkpoints go where ``save_folder`` points: they are written locally and, with an
object-store ``save_folder``, also uploaded through Composer's remote uploader.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from stoicheia.publish import WriteError, append_text, atomic_write, write_failure

if (
    TYPE_CHECKING
):  # Composer is imported only where a checkpoint is written: status and config errors start fast
    from composer.core import State
    from composer.loggers import Logger

log = logging.getLogger(__name__)

ANNEAL = "anneal.json"
BEST = "best.json"
COMPLETE = "complete.json"
DIVERGED = "diverged.json"
EVALS = "evals.jsonl"
STOPPED = "stopped.json"


def local_run_folder(save_folder: str, run_name: str) -> Path:
    """The local folder of a run: ``save_folder`` itself, or ``runs/{run_name}`` when
    ``save_folder`` is an object-store URI."""
    return Path(save_folder) if "://" not in save_folder else Path("runs") / run_name


def write_json(folder: Path, name: str, obj: dict[str, Any]) -> Path:
    """Write ``obj`` as indented JSON to ``folder/name`` atomically; returns the path. Raises
    :class:`~stoicheia.publish.WriteError` (nothing half-written) on a full disk."""
    return atomic_write(Path(folder) / name, json.dumps(obj, indent=2, default=float) + "\n")


def write_anneal(
    folder: Path,
    *,
    step: int,
    reason: str | None,
    planned_start: int,
    cap: int,
    decay_steps: int,
    end: int,
    evidence: dict[str, Any] | None = None,
    inherited: bool = False,
) -> Path:
    """Write ``anneal.json``: the anneal starts at batch ``step`` for ``reason`` (``stall``,
    ``cap`` or ``planned``) and ends at batch ``end`` after ``decay_steps``; ``planned_start``
    and ``cap`` (latest start) for comparison; ``evidence`` (the evaluations behind a stall
    decision) is merged in; ``inherited`` marks a decision taken over from another run's
    checkpoint (e.g. ``pre_anneal.pt``)."""
    record: dict[str, Any] = {"step": int(step), "reason": reason}
    if inherited:
        record["inherited"] = True
    record.update(
        {"planned_start": planned_start, "cap": cap, "decay_steps": decay_steps, "end": end}
    )
    record.update(evidence or {})
    record["time"] = now()
    return write_json(folder, ANNEAL, record)


def write_best(folder: Path, *, step: int, metric: str, value: float, file: str) -> Path:
    """Write ``best.json``: the best evaluation so far of ``metric`` (its ``value`` at batch
    ``step``), kept in checkpoint ``file`` of the run folder."""
    return write_json(
        folder, BEST, {"step": step, "metric": metric, "value": value, "file": file, "time": now()}
    )


def write_complete(
    folder: Path,
    *,
    step: int,
    reason: str | None,
    anneal_start: int | None,
    anneal_reason: str | None,
    final: str,
    best: dict[str, Any] | None,
) -> Path:
    """Write ``complete.json``: the run ended at batch ``step`` (``reason``: ``anneal_done``
    or ``early_stop``); ``final`` is the name of the final-state checkpoint, ``best`` the
    ``best.json`` record (or ``None``), and ``use`` the checkpoint to use (``best.pt`` if
    there is a best, else ``final``)."""
    return write_json(
        folder,
        COMPLETE,
        {
            "step": int(step),
            "reason": reason,
            "anneal_start": anneal_start,
            "anneal_reason": anneal_reason,
            "final": final,
            "best": best,
            "use": "best.pt" if best else final,
            "time": now(),
        },
    )


def write_diverged(folder: Path, step: int, message: str) -> str | None:
    """Write ``diverged.json``: the run aborted at batch ``step`` on non-finite gradients
    (``message``); it names the last good checkpoint (where ``latest-rank0.pt`` points, which
    the aborted batch never moved). Returns that checkpoint's name, or ``None``."""
    latest = Path(folder) / "latest-rank0.pt"
    last_good = os.readlink(latest) if latest.is_symlink() else None
    write_json(
        folder,
        DIVERGED,
        {"step": int(step), "message": message, "last_good_checkpoint": last_good, "time": now()},
    )
    return last_good


def write_stopped(folder: Path, *, step: int, signal_name: str, exit_status: int) -> Path:
    """Write ``stopped.json``: the job stopped at batch ``step`` on ``signal_name`` (``SIGINT``
    for Ctrl-C, ``SIGTERM``) after saving that batch, and exited ``exit_status`` (130, 143);
    ``checkpoint`` is where ``latest-rank0.pt`` points, the checkpoint the same command resumes
    from (``None`` if there is no link). Raises :class:`~stoicheia.publish.WriteError`."""
    latest = Path(folder) / "latest-rank0.pt"
    return write_json(
        folder,
        STOPPED,
        {
            "step": int(step),
            "signal": signal_name,
            "exit_status": int(exit_status),
            "checkpoint": os.readlink(latest) if latest.is_symlink() else None,
            "time": now(),
        },
    )


def read_json(folder: Path, name: str) -> dict[str, Any] | None:
    """The object in ``folder/name``, or ``None`` if there is no such file. Raises
    ``ValueError`` naming the file if it is not valid UTF-8 JSON or not a JSON object."""
    path = Path(folder) / name
    if not path.exists():
        return None
    fix = (
        "it is a copy of state kept in the checkpoints: restore it, or delete it (a complete.json "
        "or best.json is written again by the next run of the same command; anneal.json is not)"
    )
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path} is not valid JSON ({err}); {fix}") from err
    if not isinstance(value, dict):
        raise ValueError(f"{path} holds a JSON {type(value).__name__}, not an object; {fix}")
    return value


def append_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """Append ``rows`` (one JSON object per line) to ``path`` and flush. Raises
    :class:`~stoicheia.publish.WriteError` on a full disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    append_text(path, "".join(json.dumps(row, default=float) + "\n" for row in rows))


#: log lines a full disk refused, by file (:func:`drop_log_lines`)
DROPPED_LOG_LINES: dict[str, int] = {}


def drop_log_lines(err: WriteError, lines: int) -> None:
    """Count ``lines`` of a log (``metrics.jsonl``, ``evals.jsonl``) that ``err`` (a full disk,
    a file size limit) kept from being written, and warn once per file. The run goes on: a log
    line is not worth stopping for, and the next checkpoint save stops the run cleanly if the
    disk is still full (:mod:`stoicheia.train.save_guard`)."""
    key = str(err.path)
    first = key not in DROPPED_LOG_LINES
    DROPPED_LOG_LINES[key] = DROPPED_LOG_LINES.get(key, 0) + lines
    if first:
        log.warning(
            "[log] %s: its lines are dropped (and counted) until there is space; "
            "the next checkpoint that cannot be saved stops the run",
            err,
        )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """All readable lines of a JSONL file, in order.

    A line cut by a kill (the JSONL logger ends it before the resumed job writes on) is not
    JSON: such lines are skipped, and their count and line numbers are logged as a warning,
    so that nothing is dropped without a word."""
    path = Path(path)
    if not path.exists():
        return []
    rows, bad = [], []
    for number, line in enumerate(
        path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1
    ):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            bad.append(number)
    if bad:
        shown = ", ".join(map(str, bad[:10])) + (" ..." if len(bad) > 10 else "")
        log.warning(
            "%s: %d unreadable line(s) skipped (lines %s; a line cut by a kill is expected)",
            path,
            len(bad),
            shown,
        )
    return rows


def read_history(run_folder: Path) -> list[dict]:
    """The evaluations in ``run_folder/evals.jsonl``, one per ``(step, set)`` (the later line
    wins: a resumed run re-evaluates the steps since its checkpoint), sorted by step. Lines
    that are JSON but no evaluation record (no ``step``, ``set`` or ``metrics`` mapping) are
    left out, and their count logged as a warning."""
    rows: dict[tuple[int, str], dict] = {}
    path = Path(run_folder) / EVALS
    odd = 0
    for row in read_jsonl(path):
        try:
            key = (int(row["step"]), str(row["set"]))
            if not isinstance(row["metrics"], dict):
                raise TypeError
        except (KeyError, TypeError, ValueError):
            odd += 1
            continue
        rows[key] = row
    if odd:
        log.warning(
            "%s: %d line(s) are JSON but no evaluation record (step, set, metrics); left out",
            path,
            odd,
        )
    return [rows[k] for k in sorted(rows)]


def save_named_checkpoint(
    state: State, logger: Logger, folder: Path, save_folder: str, name: str
) -> Path:
    """Write the full training state to ``folder/{name}.pt``, replacing it atomically once the
    written file is verified complete (:func:`~stoicheia.checkpoint_files.checkpoint_is_complete`),
    and upload it to ``save_folder`` when that is an object-store URI.

    Collective: every rank must call it (the data position is gathered from all ranks);
    only rank 0 writes. Returns the local path. Raises
    :class:`~stoicheia.train.save_guard.CheckpointNotSaved` on every rank when the file cannot
    be written (full disk, file size limit): nothing half-written is left.
    """
    from composer.utils import dist
    from composer.utils.checkpoint import save_checkpoint

    from stoicheia.train.save_guard import collective_write

    folder = Path(folder)
    path = folder / f"{name}.pt"
    tmp = folder / f".{name}.partial.pt"
    written_at: list[str | None] = []  # Composer's save_checkpoint returned (its barrier passed)

    def write() -> None:
        written_at.append(save_checkpoint(state, filename=str(tmp), weights_only=False))
        if dist.get_global_rank() == 0 and written_at[0] is not None:
            _publish_named(written_at[0], path, state, logger, save_folder, name)

    # a full disk: no .NAME.partial.pt left, NAME.pt as it was, CheckpointNotSaved on every rank
    collective_write(write, path, tmp, before_barrier=lambda: not written_at)
    return path


def _publish_named(
    written: str, path: Path, state: State, logger: Logger, save_folder: str, name: str
) -> None:
    """Rank 0: rename the written checkpoint to ``path`` if it is complete, and upload it."""
    from stoicheia.checkpoint_files import checkpoint_is_complete

    if not checkpoint_is_complete(written):
        # never replace a good file by a bad one, nor keep the bad one: stop as for a full disk
        failure = write_failure(RuntimeError("incomplete"), path, written)  # its size tells
        Path(written).unlink(missing_ok=True)
        raise failure or WriteError(path, errno.EIO, "the written file is incomplete")
    os.replace(written, path)
    if "://" in save_folder:
        prefix = urlparse(save_folder).path.strip("/")
        logger.upload_file(
            remote_file_name=f"{prefix}/{name}.pt" if prefix else f"{name}.pt",
            file_path=path,
            overwrite=True,
        )
    log.debug("step %d: saved %s", int(state.timestamp.batch), path)


def now() -> float:
    """Seconds since the epoch (for marker files)."""
    return time.time()
