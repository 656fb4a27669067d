"""Train Stoicheia with Composer.

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

Exit status: 0 done (or nothing to do), 2 configuration or input error (also: bucket missing,
credentials refused, folder not writable), 3 the run diverged (non-finite gradients; the last
good checkpoint stays the newest), 143 stopped by SIGTERM (preemption, time limit, ``scancel``)
after saving a checkpoint of the batch in progress: run the same command to resume; 4 the object store stayed unreachable longer than
``train.upload_retry_seconds`` (the local run folder keeps every checkpoint).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Use the code of the checkout this script is in, even where the shared virtual environment's
# editable install points at another checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stoicheia.lifetime import die_with_launcher  # noqa: E402

# First thing: a trainer started by the `composer` launcher gets SIGTERM (save, then stop) when
# the launcher dies, even of SIGKILL, instead of training on as an orphan.
die_with_launcher()


def _error(message: str) -> None:
    """Print ``train.py: message`` on stderr, once per job (rank 0): every rank meets the same
    configuration or input error."""
    if os.environ.get("RANK", "0") == "0":
        print(f"train.py: {message}", file=sys.stderr)


def main(argv: list[str]) -> int:
    if len(argv) < 1 or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    from stoicheia.config import ConfigError, load_config

    try:
        cfg = load_config(argv[0], argv[1:])
        from stoicheia.train.registry import check_plugins

        check_plugins(cfg)
    except ConfigError as err:
        _error(f"config error: {err}")
        return 2
    from stoicheia.train import object_store, run_files

    rank0 = os.environ.get("RANK", "0") == "0"
    save_folder = cfg.train.save_folder.format(run_name=cfg.run_name)
    run_folder = run_files.local_run_folder(save_folder, cfg.run_name)
    remote = object_store.is_remote(save_folder)
    try:
        # before the first batch: the folders can be written, the store can be used
        object_store.check_local_folder(run_folder, "the run folder" if remote else "train.save_folder")
        if remote:
            store = object_store.StoreFolder.parse(save_folder)
            object_store.check_store(store, write=rank0)
            if not (run_folder / run_files.COMPLETE).exists():  # a fresh machine: ask the store
                object_store.fetch_markers(store, run_folder, overwrite=False, names=(run_files.COMPLETE,))
        done = run_files.read_json(run_folder, run_files.COMPLETE)
    except ValueError as err:
        _error(str(err))
        return 2
    if done is not None and "step" in done and "final" in done:
        if remote and rank0 and (run_folder / done["final"]).exists():
            # complete here, but a store outage may have kept files from the store: upload them
            import logging

            from stoicheia.train.console import configure_console
            from stoicheia.train.loggers.store_uploader import StoreUploader

            configure_console(0)
            logging.getLogger("stoicheia").setLevel(logging.WARNING)
            failed = StoreUploader(save_folder, run_folder, cfg.train.upload_retry_seconds).sync()
            if failed:
                print(f"train.py: {failed}", file=sys.stderr)
                return 4
        if rank0:
            where = store.uri if remote else (lambda name: run_folder / name)
            best = done.get("best")
            print(
                f"run {cfg.run_name!r} is complete at step {done['step']} ({done.get('reason')}): use "
                + (f"{where('best.pt')} (step {best['step']}, {best['metric']} {best['value']:.4f}); " if best else "")
                + f"final state {where(done['final'])}; nothing to do"
            )
        return 0
    from stoicheia.train.algorithms.gradient_guard import TrainingDiverged
    from stoicheia.train.builder import build_trainer, fit_run
    from stoicheia.train.loggers.store_uploader import StoreUnavailable

    try:
        built = build_trainer(cfg)
    except (FileNotFoundError, ValueError) as err:
        _error(str(err))
        return 2
    except RuntimeError as err:
        if "size mismatch" in str(err) or "Missing key" in str(err) or "Unexpected key" in str(err):
            print(
                f"train.py: the checkpoint in {save_folder} was made by a "
                "model of another shape; use another run_name (or delete that folder) to start a new run, "
                f"or restore the model.* settings it was trained with. "
                f"({str(err).splitlines()[0]})",
                file=sys.stderr,
            )
        else:
            _error(str(err))
        return 2
    try:
        fit_run(built)
    except StoreUnavailable as err:
        if rank0:
            print(f"train.py: {err}", file=sys.stderr)
        return 4
    except ValueError as err:  # the run cannot go on as configured (e.g. max_steps too small)
        _error(str(err))
        return 2
    except TrainingDiverged as err:
        from composer.utils import dist

        if dist.get_global_rank() == 0:
            latest = run_folder / "latest-rank0.pt"
            last_good = os.readlink(latest) if latest.is_symlink() else None
            run_files.write_json(
                run_folder,
                run_files.DIVERGED,
                {"step": int(built.trainer.state.timestamp.batch), "message": str(err), "last_good_checkpoint": last_good, "time": run_files.now()},
            )
            print(f"train.py: {err} (last good checkpoint: {last_good or 'none'})", file=sys.stderr)
        if built.uploader is not None:  # diverged.json and the logs go to the store too
            try:
                built.uploader.finish(built.trainer.state)
            except StoreUnavailable as store_err:
                if rank0:
                    print(f"train.py: {store_err}", file=sys.stderr)
        return 3
    built.trainer.close()
    preemption = built.plugins.get("preemption")
    if preemption is not None and preemption.stopped and not built.control.complete:
        from stoicheia.train.callbacks.preemption import PREEMPTED_EXIT

        return PREEMPTED_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
