"""Mirror the run folder to an object store, surviving outages of the store.

Composer's own uploaders (``RemoteUploader`` for checkpoints, ``RemoteUploaderDownloader``
for files) retry only ``ObjectStoreTransientError``; a refused connection is re-raised at the
next batch end and kills the run, and their local copy lives in a temporary folder. Here the
run keeps its checkpoints in its local run folder (Composer's ``CheckpointSaver`` writes them
there and hands every checkpoint and ``latest`` symlink to the logger destinations through
``Logger.upload_file``, as do the named checkpoints of :mod:`stoicheia.train.run_files`), and
:class:`StoreUploader`, a Composer ``LoggerDestination``, copies them to the store in one
background thread, in order, with exponential backoff.
"""

from __future__ import annotations

import logging
import os
import queue
import shutil
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import torch
from composer.core import State
from composer.loggers import Logger, LoggerDestination
from composer.utils import dist

from stoicheia.checkpoint_files import checkpoint_is_complete
from stoicheia.train import run_files
from stoicheia.train.object_store import (
    CHECKPOINT,
    LATEST_SYMLINK,
    MARKERS,
    NAMED,
    StoreFolder,
    checkpoints_to_prune,
    describe_error,
    list_names,
    prune_checkpoints,
)

log = logging.getLogger(__name__)

#: First wait after a failed upload, its growth factor and its cap (seconds).
BACKOFF_START, BACKOFF_FACTOR, BACKOFF_MAX = 1.0, 2.0, 60.0


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


class StoreUnavailable(RuntimeError):
    """The store stayed unreachable longer than ``train.upload_retry_seconds``; the message
    names the store, the file, the last error and where the local copy is."""


@dataclass
class _Job:
    name: str  # object name inside the store folder
    path: Path  # staged local file (removed once uploaded)
    verify: bool = False  # a checkpoint: upload only if complete
    target: str | None = None  # a latest symlink: the checkpoint it points at
    stamp: list[int] | None = None  # a named checkpoint: [size, mtime_ns] of the local file


class StoreUploader(LoggerDestination):
    """Upload the run's checkpoints, ``latest`` symlink, named checkpoints and marker files to
    ``save_folder`` (an object-store URI), keeping the order in which they were written.

    Each file is staged at once (hard link, else copy, into ``run_folder/.upload``) so that
    checkpoint rotation cannot remove it before the upload. A checkpoint is uploaded only if
    :func:`checkpoint_is_complete` accepts it, and the store's ``latest-rank0.pt.symlink``
    moves only after its checkpoint is in the store. A failed upload is retried after 1, 2,
    4, ... seconds (at most 60 s apart) while the store has failed for less than
    ``retry_seconds``; past that the run stops at the next batch end with
    :class:`StoreUnavailable` (every rank together), and the local run folder keeps everything.
    When the same command runs again, files missing from the store are uploaded first.

    Periodic checkpoints in the store are pruned like the local ones: each time the store's
    ``latest`` has moved, all but the ``keep`` newest ``ep*-ba*-rank0.pt`` objects are deleted
    (:func:`~stoicheia.train.object_store.prune_checkpoints`), never the one ``latest`` names
    nor ``best.pt``, ``pre_anneal.pt``, ``final.pt``.

    Args:
        save_folder: the store folder URI (``train.save_folder`` with ``{run_name}`` filled in).
        run_folder: the local run folder (Composer's ``save_folder`` for this run).
        retry_seconds: ``train.upload_retry_seconds``.
        keep: ``train.save_num_checkpoints_to_keep`` (``-1``: keep every checkpoint).
        log_every, save_interval: ``train.log_every`` and ``train.save_interval`` (batches).
            Whether the store has failed is agreed by the ranks (one all-reduce, whose read
            waits for the device's queued work) only at batches that are a multiple of one of
            them, not after every batch: a run whose store stays down stops at the first such
            batch after ``retry_seconds`` (or when it ends), every rank together.
    """

    def __init__(
        self,
        save_folder: str,
        run_folder: Path,
        retry_seconds: float,
        keep: int = -1,
        log_every: int = 1,
        save_interval: int = 0,
    ) -> None:
        self.folder = StoreFolder.parse(save_folder)
        self.check_every = tuple(n for n in (int(log_every), int(save_interval)) if n > 0) or (1,)
        self.checks = 0  # agreements run (tests)
        self.keep = int(keep)
        self.run_folder = Path(run_folder)
        self.retry_seconds = float(retry_seconds)
        self.staging = self.run_folder / ".upload"
        self._queue: queue.Queue[_Job] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._failed: str | None = None
        self._bad: set[str] = set()
        self._store = None
        # which version of each named checkpoint is in the store (a rewritten best.pt whose
        # upload failed is uploaded again by the next job)
        self._record = self.run_folder / ".uploaded.json"

    # --- Composer hooks ------------------------------------------------------------------
    def can_upload_files(self) -> bool:
        return True

    def init(self, state: State, logger: Logger) -> None:
        if dist.get_global_rank() != 0:
            return
        shutil.rmtree(
            self.staging, ignore_errors=True
        )  # links left by a killed job; the originals stay
        self._thread = threading.Thread(
            target=self._work, name="stoicheia-store-upload", daemon=True
        )
        self._thread.start()
        self._resync()

    def upload_file(
        self, state: State, remote_file_name: str, file_path: Path, *, overwrite: bool
    ) -> None:
        name = Path(remote_file_name).name
        if name.endswith(".symlink"):
            target = Path(Path(file_path).read_text(encoding="utf-8").strip()).name
            # the logs up to this checkpoint are in the store before `latest` moves
            self._put_markers()
            self._put(
                _Job(
                    LATEST_SYMLINK if name.startswith("latest-rank0") else name,
                    self._stage_text(self.folder.key(target)),
                    target=target,
                )
            )
        else:
            self._put(
                _Job(
                    name,
                    self._stage(Path(file_path)),
                    verify=name.endswith(".pt"),
                    stamp=_stamp(Path(file_path)),
                )
            )

    def batch_end(self, state: State, logger: Logger) -> None:
        step = int(state.timestamp.batch)
        if any(step % n == 0 for n in self.check_every):
            self._raise_if_failed(state)

    def post_close(self) -> None:
        # after every callback's close (the JSONL logger writes its last row then): upload the
        # logs once more and let the worker end when the queue is empty
        if self._thread is None:
            return
        self._put_markers()
        self._queue.put(_Job("", Path()))
        self._thread.join()
        self._thread = None

    # --- public ------------------------------------------------------------------------
    def finish(self, state: State) -> None:
        """Upload the marker files as they are now and wait until everything queued is in the
        store (or the retry limit is reached). Collective: every rank calls it; raises
        :class:`StoreUnavailable` on every rank if the store stayed unreachable."""
        if dist.get_global_rank() == 0 and self._thread is not None:
            self._put_markers()
            while self._queue.unfinished_tasks and self._failed is None and self._thread.is_alive():
                time.sleep(0.1)
        self._raise_if_failed(state)
        log.info("[store] all files of the run are in %s", self.folder.uri())

    def sync(self) -> str | None:
        """Without a trainer (a run already complete locally): upload what the store lacks and
        the marker files, wait, and return the error message if the store stayed unreachable
        longer than the limit (else ``None``). Single process."""
        shutil.rmtree(self.staging, ignore_errors=True)
        self._thread = threading.Thread(
            target=self._work, name="stoicheia-store-upload", daemon=True
        )
        self._thread.start()
        self._resync()
        self._put_markers()
        self._queue.put(_Job("", Path()))
        self._thread.join()
        self._thread = None
        return self._failed

    # --- internals ---------------------------------------------------------------------
    def _read_record(self) -> dict[str, list[int]]:
        try:
            return run_files.read_json(self.run_folder, self._record.name) or {}
        except ValueError:
            return {}

    def _raise_if_failed(self, state: State) -> None:
        self.checks += 1
        failed = [self._failed]
        if dist.get_world_size() > 1:
            # one byte all-reduced per batch; the message travels only when there is one
            flag = state.device.tensor_to_device(
                torch.tensor([int(self._failed is not None)], dtype=torch.uint8)
            )
            dist.all_reduce(flag, reduce_operation="MAX")
            if not flag.item():
                return
            dist.broadcast_object_list(failed, src=0)
        if failed[0] is not None:
            raise StoreUnavailable(failed[0])

    def _put(self, job: _Job) -> None:
        if self._thread is None:
            return
        self._queue.put(job)

    def _put_markers(self) -> None:
        for name in MARKERS:
            path = self.run_folder / name
            if path.is_file():
                self._put(_Job(name, self._stage(path)))

    def _stage(self, path: Path) -> Path:
        self.staging.mkdir(parents=True, exist_ok=True)
        staged = self.staging / f"{uuid.uuid4().hex}-{path.name}"
        try:
            os.link(path, staged)  # no second copy on disk; survives rotation of the original
        except OSError:
            shutil.copy2(path, staged)
        return staged

    def _stage_text(self, text: str) -> Path:
        self.staging.mkdir(parents=True, exist_ok=True)
        staged = self.staging / f"{uuid.uuid4().hex}.symlink"
        staged.write_text(text, encoding="utf-8")
        return staged

    def _resync(self) -> None:
        """Queue what the local run folder holds and the store lacks (a previous job stopped
        during an outage): checkpoints in batch order, then the latest symlink, named
        checkpoints and marker files."""
        try:
            present = set(list_names(self.folder.open(), self.folder))
        except Exception as err:
            log.warning(
                "[store] cannot list %s (%s); nothing re-uploaded now",
                self.folder.uri(),
                describe_error(err, self.folder),
            )
            return
        local = sorted(
            (int(m["batch"]), f)
            for f in self.run_folder.glob("ep*-ba*-rank0.pt")
            if (m := CHECKPOINT.match(f.name)) and f.is_file() and not f.is_symlink()
        )
        missing = [f for _, f in local if f.name not in present]
        if self.keep >= 0:
            # not those that pruning would delete at once (older than the newest `keep`)
            link = self.run_folder / "latest-rank0.pt"
            target = os.readlink(link) if link.is_symlink() else None
            doomed = set(
                checkpoints_to_prune(
                    [*present, *(f.name for _, f in local)], self.keep, target and Path(target).name
                )
            )
            missing = [f for f in missing if f.name not in doomed]
        for f in missing:
            self._put(_Job(f.name, self._stage(f), verify=True))
        link = self.run_folder / "latest-rank0.pt"
        if missing and link.is_symlink():
            target = os.readlink(link)
            self._put(
                _Job(LATEST_SYMLINK, self._stage_text(self.folder.key(target)), target=target)
            )
        record = self._read_record()
        for name in NAMED:
            path = self.run_folder / name
            if path.is_file() and (
                name not in present or record.get(name, _stamp(path)) != _stamp(path)
            ):
                self._put(_Job(name, self._stage(path), verify=True, stamp=_stamp(path)))
        if missing:
            log.warning(
                "[store] %d checkpoint(s) of the local run folder are missing in %s: uploading "
                "them",
                len(missing),
                self.folder.uri(),
            )

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if not job.name:
                    return
                if self._failed is None:
                    self._upload(job)
            finally:
                if job.name:
                    job.path.unlink(missing_ok=True)
                self._queue.task_done()

    def _upload(self, job: _Job) -> None:
        if job.verify and not checkpoint_is_complete(job.path):
            self._bad.add(job.name)
            log.error(
                "[store] %s is incomplete; it is not uploaded (the store keeps the previous "
                "checkpoint)",
                self.run_folder / job.name,
            )
            return
        if job.target is not None and job.target in self._bad:
            return  # never point the store's latest at a checkpoint that was not uploaded
        delay, first_failure, tries = BACKOFF_START, None, 0
        while True:
            try:
                if self._store is None:
                    self._store = self.folder.open()
                self._store.upload_object(self.folder.key(job.name), job.path)
                break
            except Exception as err:
                self._store = None  # rebuild the client: its connections may be dead
                now = time.time()
                first_failure = first_failure or now
                tries += 1
                down = now - first_failure
                if down >= self.retry_seconds:
                    self._failed = (
                        f"the object store stayed unreachable for {down:.0f} s "
                        f"(train.upload_retry_seconds={self.retry_seconds:g}) while uploading "
                        f"{job.name}: {describe_error(err, self.folder)}. The run stopped; nothing "
                        f"is lost: the checkpoints are in {self.run_folder.resolve()}. Run the "
                        "same command again on this machine when the store is back (the missing "
                        "files are uploaded first), or raise train.upload_retry_seconds"
                    )
                    return  # reported once, by the rank that raises StoreUnavailable
                wait = min(delay, BACKOFF_MAX, self.retry_seconds - down)
                log.warning(
                    "[store] %s upload of %s failed (%s, try %d); retrying in %.0f s (giving up "
                    "after %g s)",
                    time.strftime("%H:%M:%S"),
                    job.name,
                    type(err).__name__,
                    tries,
                    wait,
                    self.retry_seconds,
                )
                time.sleep(max(wait, 0.0))
                delay *= BACKOFF_FACTOR
        if job.target is not None and job.name == LATEST_SYMLINK and self.keep >= 0:
            # the store's latest names a verified checkpoint now: the older ones may go
            try:
                prune_checkpoints(self._store, self.folder, self.keep, job.target)
            except Exception as err:  # a failed listing: the next checkpoint prunes again
                log.warning(
                    "[store] could not prune old checkpoints in %s (%s)",
                    self.folder.uri(),
                    describe_error(err, self.folder),
                )
        if job.name in NAMED and job.stamp is not None:
            record = self._read_record()
            record[job.name] = job.stamp
            run_files.write_json(self.run_folder, self._record.name, record)
        if first_failure is not None:
            log.info(
                "[store] %s uploaded %s after %d failed tries over %.0f s",
                time.strftime("%H:%M:%S"),
                job.name,
                tries,
                time.time() - first_failure,
            )
        else:
            log.debug("[store] uploaded %s", job.name)
