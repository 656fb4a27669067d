"""One training run, from its configuration to its exit status: what ``recipes/train.py`` calls.

    composer recipes/train.py yamls/demo.yaml [section.key=value ...]

``composer`` starts one process per GPU (or one on a CPU machine); each reads the same YAML.
Command-line ``key=value`` pairs override the YAML (e.g. ``train.lr=1e-3 data.num_workers=4``).
An autoresumed run (same ``run_name`` and ``train.save_folder``) continues from its newest
complete checkpoint. A run that is complete (``complete.json`` in its run folder) is not
touched: the command prints which checkpoint to use and exits 0.

With an object-store ``train.save_folder`` (``s3://bucket/prefix/{run_name}``) the run works in
``runs/{run_name}`` and mirrors it to the store; a machine with an empty local folder resumes
from the store. Credentials come from the environment (``AWS_ACCESS_KEY_ID``, ...), never
from the YAML.

Exit status: see :class:`~stoicheia.train.exit_status.ExitCode` (0 done or nothing to do,
2 configuration or input error, 3 diverged, 4 object store unreachable, 130 stopped by Ctrl-C
and 143 stopped by SIGTERM after saving the batch in progress: run the same command to resume).
A checkpoint that cannot be written (full disk, file size limit) stops the run as SIGTERM does
(143, one line naming the path and the cause; the last good checkpoint is the one to resume
from, nothing half-written is left: :mod:`stoicheia.train.save_guard`).

The order follows llm-foundry's ``command_utils/train.py``: check the configuration (no
Composer or torch imported, no folder made, so a typo answers at once), check the folders and
the store, stop if the run is already complete, build the trainer, train, report how it ended.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stoicheia.config import ConfigError, RunConfig, batch_split, load_config
from stoicheia.data.shard_index import check_local_tiers
from stoicheia.publish import WriteError, ignore_file_size_signal
from stoicheia.train import object_store, run_files
from stoicheia.train.exit_status import ExitCode

if TYPE_CHECKING:
    from stoicheia.train.builder import Built
    from stoicheia.train.save_guard import CheckpointNotSaved

log = logging.getLogger(__name__)

__all__ = ["ExitCode", "already_complete", "fit_run", "main", "run"]


def _rank0() -> bool:
    return os.environ.get("RANK", "0") == "0"


def _error(message: str) -> None:
    """Print ``train.py: message`` on stderr, once per job (rank 0): every rank meets the same
    configuration or input error. Another rank waits 2 s first (so that rank 0, meeting the
    same error, prints it before the launcher stops the job at the first rank's exit) and
    writes its message as ``(rank N) train.py: ...`` into its own stderr, which the launcher
    shows only when the job fails there (an error met by that rank alone is not lost)."""
    if _rank0():
        print(f"train.py: {message}", file=sys.stderr)
        return
    time.sleep(2.0)
    print(f"(rank {os.environ.get('RANK', '?')}) train.py: {message}", file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    """``recipes/train.py CONFIG [key=value ...]``: load the configuration and :func:`run` it.
    Returns the exit status (``--help`` prints this module's usage)."""
    if len(argv) < 1 or argv[0] in ("-h", "--help"):
        print(__doc__)
        return ExitCode.OK if argv else ExitCode.CONFIG
    # past `ulimit -f` a save fails with EFBIG and is reported (no core dump)
    ignore_file_size_signal()
    try:
        cfg = load_config(argv[0], argv[1:])
    except ConfigError as err:
        _error(f"config error: {err}")
        return ExitCode.CONFIG
    return run(cfg)


def check_config(cfg: RunConfig) -> None:
    """The checks of ``cfg`` that need neither data nor Composer nor torch: the plugin sections
    and the split of the batch over this job's processes (``WORLD_SIZE``, set by the
    ``composer`` launcher). Raises :class:`ConfigError`."""
    from stoicheia.train.registry import check_plugins

    check_plugins(cfg)
    batch_split(cfg.train, int(os.environ.get("WORLD_SIZE", "1")))


def run(cfg: RunConfig) -> ExitCode:
    """Train the run ``cfg`` describes until it is complete, or resume it; returns how it
    ended (:class:`ExitCode`). Errors the user can fix print one line on stderr (rank 0) and
    return :attr:`ExitCode.CONFIG`; nothing raises for them.

    Order: the configuration, then (a complete run is left alone here) the training shards'
    indexes, then the folders and the store; nothing is created before the configuration and
    the shards passed, and none of it imports Composer or torch."""
    try:
        check_config(cfg)
    except ConfigError as err:
        _error(f"config error: {err}")
        return ExitCode.CONFIG
    save_folder = cfg.train.save_folder.format(run_name=cfg.run_name)
    run_folder = run_files.local_run_folder(save_folder, cfg.run_name)
    remote = object_store.is_remote(save_folder)
    try:
        done = already_complete(run_folder)
        if done is None and cfg.data.remote is None:
            check_local_tiers(cfg.data.shard_root, cfg.data.tier_weights)
        # before the first batch: the folders can be written, the store can be used
        object_store.check_local_folder(
            run_folder, "the run folder" if remote else "train.save_folder"
        )
        if remote:
            store = object_store.StoreFolder.parse(save_folder)
            object_store.check_store(store, write=_rank0())
            if done is None:  # a fresh machine: ask the store
                object_store.fetch_markers(
                    store, run_folder, overwrite=False, names=(run_files.COMPLETE,)
                )
                done = already_complete(run_folder)
    except (FileNotFoundError, ValueError) as err:  # shards, folders, store, a corrupt marker
        _error(str(err))
        return ExitCode.CONFIG
    if done is not None:
        return _report_complete(cfg, done, save_folder, run_folder)
    try:
        return _train(cfg, save_folder, run_folder)
    except (
        KeyboardInterrupt
    ):  # Ctrl-C before the preemption plugin's handler is installed (or after fit)
        _error(
            "interrupted (Ctrl-C) outside a training batch: nothing new to save; run the same "
            "command to resume"
        )
        return ExitCode.INTERRUPTED


def already_complete(run_folder: Path, built: Built | None = None) -> dict[str, Any] | None:
    """The one place that decides that a run is already complete; returns its
    ``complete.json`` record, or ``None`` if the run is to train.

    Before the trainer is built (``built=None``) the marker file decides: a run with a
    ``complete.json`` naming its step and final checkpoint is not touched. After a checkpoint
    was loaded (``built``), the checkpointed state of
    :class:`~stoicheia.train.callbacks.anneal_control.AnnealControl` decides; if a kill came
    between the completion and its marker, ``final.pt`` and ``complete.json`` are written now
    (collective: every rank calls it). Raises ``ValueError`` naming a marker that is not JSON.
    """
    if built is None:
        done = run_files.read_json(run_folder, run_files.COMPLETE)
        return done if done is not None and "step" in done and "final" in done else None
    if not built.control.complete:
        return None
    state = built.trainer.state
    if run_files.read_json(built.run_folder, run_files.COMPLETE) is None:
        built.control.write_completion(state, built.trainer.logger)
    log.info(
        "[run] run %r already complete at batch %d; nothing to do (its checkpoints are in %s; "
        "delete them or change run_name to train again)",
        state.run_name,
        int(state.timestamp.batch),
        built.save_folder,
    )
    return run_files.read_json(built.run_folder, run_files.COMPLETE) or {
        "step": int(state.timestamp.batch)
    }


def _report_complete(
    cfg: RunConfig, done: dict[str, Any], save_folder: str, run_folder: Path
) -> ExitCode:
    """A run found complete before training: bring the store up to date (the run may have
    completed during a store outage), then print which checkpoint to use."""
    remote = object_store.is_remote(save_folder)
    if remote and _rank0() and (run_folder / done["final"]).exists():
        from stoicheia.train.console import configure_console
        from stoicheia.train.loggers.store_uploader import StoreUploader

        configure_console(0)
        logging.getLogger("stoicheia").setLevel(logging.WARNING)
        failed = StoreUploader(save_folder, run_folder, cfg.train.upload_retry_seconds).sync()
        if failed:
            print(f"train.py: {failed}", file=sys.stderr)
            return ExitCode.STORE_UNAVAILABLE
    if _rank0():
        store = object_store.StoreFolder.parse(save_folder) if remote else None
        where = store.uri if store is not None else (lambda name: run_folder / name)
        best = done.get("best")
        print(
            f"run {cfg.run_name!r} is complete at step {done['step']} ({done.get('reason')}): use "
            + (
                f"{where('best.pt')} (step {best['step']}, {best['metric']} {best['value']:.4f}); "
                if best
                else ""
            )
            + f"final state {where(done['final'])}; nothing to do"
        )
    return ExitCode.OK


def _train(cfg: RunConfig, save_folder: str, run_folder: Path) -> ExitCode:
    from stoicheia.train import builder
    from stoicheia.train.algorithms.gradient_guard import TrainingDiverged
    from stoicheia.train.loggers.store_uploader import StoreUnavailable
    from stoicheia.train.save_guard import CheckpointNotSaved

    try:
        built = builder.build_trainer(cfg)  # looked up on the module: tests wrap it
    except (
        FileNotFoundError,
        ValueError,
        RuntimeError,
    ) as err:  # CheckpointShapeError is a ValueError
        _error(str(err))
        return ExitCode.CONFIG
    try:
        fit_run(built)
    except StoreUnavailable as err:
        _error(str(err))
        return ExitCode.STORE_UNAVAILABLE
    except ValueError as err:  # the run cannot go on as configured (e.g. max_steps too small)
        _error(str(err))
        return ExitCode.CONFIG
    except TrainingDiverged as err:
        return _diverged(built, err)
    except (CheckpointNotSaved, WriteError) as err:  # a full disk, a file size limit
        return _not_saved(built, err)
    built.trainer.close()
    preemption = built.plugins.get("preemption")
    if preemption is not None and preemption.stopped and not built.control.complete:
        _record_stop(built, preemption)
        return preemption.exit_code
    return ExitCode.OK


def _record_stop(built: Built, preemption: Any) -> None:
    """Leave ``stopped.json`` in the run folder (rank 0), so ``stoicheia status`` can say the
    run was stopped by Ctrl-C or SIGTERM and how to resume. A marker that cannot be written
    (full disk) is reported in one line; the exit status stays the signal's."""
    from composer.utils import dist

    if dist.get_global_rank() != 0:
        return
    try:
        run_files.write_stopped(
            built.run_folder,
            step=int(preemption.stopped_at),
            signal_name=(preemption.agreed or preemption.received).name,
            exit_status=int(preemption.exit_code),
        )
    except WriteError as err:
        _error(f"{err.path} not written ({err.cause}); the checkpoint was saved all the same")


def _not_saved(built: Built, err: CheckpointNotSaved | WriteError) -> ExitCode:
    """A run whose checkpoint (or marker, or log) could not be written: one line on rank 0's
    console naming the path and the cause, and the exit of a SIGTERM (143): the last good
    checkpoint (``latest-rank0.pt``, which a failed write never moves) is the one the same
    command resumes from once there is space. Nothing half-written is left (save_guard)."""
    from composer.utils import dist

    from stoicheia.train.save_guard import last_good_checkpoint

    if dist.get_global_rank() == 0:
        last_good = last_good_checkpoint(built.run_folder)
        dropped = sum(run_files.DROPPED_LOG_LINES.values())
        what = f"{err.path} not saved ({err.cause})" if isinstance(err, WriteError) else str(err)
        print(
            f"train.py: {what}; the run stopped at batch "
            f"{int(built.trainer.state.timestamp.batch)}: "
            + (
                f"{err.fix}, then run the same command to resume from "
                f"{built.run_folder / last_good}"
                if last_good
                else f"no checkpoint was saved yet: {err.fix}, then run the same command to "
                "start again"
            )
            + (f" ({dropped} log lines could not be written either)" if dropped else ""),
            file=sys.stderr,
            flush=True,
        )
    try:
        built.trainer.close()
    except (
        OSError,
        RuntimeError,
    ) as close_err:  # the loggers' last flush may meet the full disk too
        log.debug("closing the trainer after a failed save: %s", close_err)
    return ExitCode.PREEMPTED


def _diverged(built: Built, err: Exception) -> ExitCode:
    """Record a diverged run (``diverged.json``, rank 0), send the logs to the store."""
    from composer.utils import dist

    from stoicheia.train.loggers.store_uploader import StoreUnavailable

    if dist.get_global_rank() == 0:
        last_good = run_files.write_diverged(
            built.run_folder, int(built.trainer.state.timestamp.batch), str(err)
        )
        print(f"train.py: {err} (last good checkpoint: {last_good or 'none'})", file=sys.stderr)
    if built.uploader is not None:  # diverged.json and the logs go to the store too
        try:
            built.uploader.finish(built.trainer.state)
        except StoreUnavailable as store_err:
            _error(str(store_err))
    return ExitCode.DIVERGED


def fit_run(built: Built) -> bool:
    """Train until the run is complete (anneal done or early stop; hard cap
    ``train.max_steps``); return False if a previous job of this run had already finished it
    (see :func:`already_complete`: an autoresumed, complete run does not train on).

    Raises ``ValueError`` if the run cannot go on as configured (at ``max_steps`` before the
    anneal ended, or a decided anneal that would end after ``max_steps``)."""
    state = built.trainer.state
    if already_complete(built.run_folder, built) is not None:
        if built.uploader is not None:
            built.uploader.finish(state)
        return False
    done_at = int(state.timestamp.batch)
    if state.max_duration is not None and done_at >= int(state.max_duration.value):
        raise ValueError(
            f"run {state.run_name!r} is at batch {done_at} = train.max_steps but its anneal has "
            "not ended "
            f"(it ends at batch {built.control.anneal_end}): raise train.max_steps to continue"
        )
    built.control.check_fits()
    if done_at > 0:
        if built.load_path and not built.autoresumed:
            log.info(
                "[run] run %r starts from %s at batch %d", state.run_name, built.load_path, done_at
            )
        else:
            log.info(
                "[run] resuming run %r from its checkpoint at batch %d", state.run_name, done_at
            )
    built.trainer.fit()
    if built.uploader is not None:
        built.uploader.finish(state)  # final.pt, complete.json and the logs are in the store
    return True
