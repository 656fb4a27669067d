"""A run's object-store folder: where it is, whether it can be used, and bringing it back.

With ``train.save_folder: s3://bucket/prefix/{run_name}`` (or ``gs://``, ``oci://``,
``sftp://``) the run works in its local run folder (``runs/{run_name}``, see
:mod:`stoicheia.train.run_files`) exactly as with a local ``save_folder``, and the store holds
a mirror of it, written by :class:`~stoicheia.train.loggers.store_uploader.StoreUploader`:

=================================  ==========================================================
``ep{E}-ba{B}-rank0.pt``           every checkpoint, uploaded after it was verified complete;
                                   with ``train.save_num_checkpoints_to_keep`` N >= 0 only
                                   the newest N stay (:func:`prune_checkpoints`), and always
                                   the one ``latest`` points at
``latest-rank0.pt.symlink``        the newest uploaded checkpoint (Composer's symlink object:
                                   its text is the object key); moved only after that
                                   checkpoint's upload succeeded
``best.pt`` ``pre_anneal.pt``      the named checkpoints, once they exist
``final.pt``
``complete.json`` ``anneal.json``  the marker files and logs of the run folder
``best.json`` ``diverged.json``
``evals.jsonl`` ``metrics.jsonl``
=================================  ==========================================================

A fresh machine (empty local folder) running the same command first reads ``complete.json``
from the store (a complete run is left alone), then :func:`restore_run` downloads the newest
checkpoint that passes :func:`~stoicheia.checkpoint_files.checkpoint_is_complete` (falling
back past corrupt ones, each named in a warning) and the marker files, so that Composer's
autoresume finds them locally.

Credentials are never part of the configuration: boto3 reads ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY`` (``AWS_SESSION_TOKEN``), ``AWS_PROFILE`` or ``~/.aws/credentials``;
``S3_ENDPOINT_URL`` selects an S3-compatible endpoint (MinIO, Ceph, a university store).
The store access itself is Composer's (:class:`composer.utils.ObjectStore` backends).
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from stoicheia.checkpoint_files import checkpoint_is_complete
from stoicheia.train import run_files

log = logging.getLogger(__name__)

CHECKPOINT = re.compile(r"^ep(?P<epoch>\d+)-ba(?P<batch>\d+)-rank(?P<rank>\d+)\.pt$")
LATEST_SYMLINK = "latest-rank0.pt.symlink"
#: Small files of the run folder mirrored to the store (see :mod:`stoicheia.train.run_files`).
MARKERS = (
    run_files.COMPLETE,
    run_files.ANNEAL,
    run_files.BEST,
    run_files.DIVERGED,
    run_files.EVALS,
    "metrics.jsonl",
)
NAMED = ("best.pt", "pre_anneal.pt", "final.pt")
SCHEMES = ("s3", "gs", "oci", "sftp")


class StoreError(ValueError):
    """The object store cannot be used as configured; the message names the store and the fix."""


def is_remote(uri: str | None) -> bool:
    """True for an object-store URI (``scheme://...``), False for a local path or ``None``."""
    return uri is not None and "://" in str(uri)


@dataclass(frozen=True)
class StoreFolder:
    """A folder in an object store: ``scheme://bucket/prefix``.

    ``key(name)`` is the object key of a file of that folder, ``uri(name)`` its full URI.
    """

    scheme: str
    bucket: str
    prefix: str

    @classmethod
    def parse(cls, uri: str) -> StoreFolder:
        """Raises :class:`StoreError` for an unsupported scheme or a URI without bucket/host."""
        p = urlparse(uri)
        if p.scheme not in SCHEMES:
            raise StoreError(
                f"{uri}: unsupported object store {p.scheme!r}; use one of "
                f"{', '.join(s + '://' for s in SCHEMES)} or a local path"
            )
        if not p.hostname:
            raise StoreError(
                f"{uri}: no bucket (or host) in the URI; write {p.scheme}://BUCKET/PREFIX"
            )
        return cls(
            p.scheme, p.netloc, p.path.strip("/") if p.scheme != "sftp" else p.path.rstrip("/")
        )

    def key(self, name: str) -> str:
        return (
            f"{self.prefix}/{name}".lstrip("/")
            if self.scheme != "sftp"
            else f"{self.prefix}/{name}"
        )

    def uri(self, name: str = "") -> str:
        path = self.key(name) if name else self.prefix
        return f"{self.scheme}://{self.bucket}/{path.lstrip('/')}"

    def open(self):
        """A Composer :class:`~composer.utils.ObjectStore` for the bucket (S3: ``S3ObjectStore``,
        which honours ``S3_ENDPOINT_URL``). Object names passed to it are :meth:`key` values."""
        if self.scheme == "sftp":
            from composer.utils.object_store import SFTPObjectStore

            return SFTPObjectStore(host=f"sftp://{self.bucket}")
        from composer.utils.file_helpers import maybe_create_object_store_from_uri

        return maybe_create_object_store_from_uri(f"{self.scheme}://{self.bucket}")


def describe_error(err: BaseException, folder: StoreFolder) -> str:
    """One sentence naming what went wrong with ``folder`` and the fix (no credentials in it)."""
    where = folder.uri()
    endpoint = os.environ.get("S3_ENDPOINT_URL", "AWS") if folder.scheme == "s3" else folder.scheme
    try:
        import botocore.exceptions as bex
    except ImportError:  # pragma: no cover - boto3 is a dependency of streaming
        bex = None
    if bex is not None:
        if isinstance(err, (bex.NoCredentialsError, bex.PartialCredentialsError)):
            return (
                f"no credentials for {where}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or "
                "AWS_PROFILE, ~/.aws/credentials) in the job's environment; credentials are never "
                "read from the YAML"
            )
        code = None
        if isinstance(err, bex.ClientError):
            code = str(err.response.get("Error", {}).get("Code", ""))
        elif (
            type(err).__name__ == "S3UploadFailedError"
        ):  # boto3 wraps the ClientError of an upload in text
            found = re.search(r"An error occurred \((\w+)\)", str(err))
            code = found.group(1) if found else None
        if code is not None:
            if code == "NoSuchBucket":
                return (
                    f"the bucket {folder.bucket!r} does not exist at {endpoint}: create it (e.g. "
                    f"`aws s3 mb s3://{folder.bucket}`) or correct the bucket in the URI"
                )
            if code in (
                "InvalidAccessKeyId",
                "SignatureDoesNotMatch",
                "AccessDenied",
                "403",
                "ExpiredToken",
                "InvalidToken",
                "AllAccessDisabled",
            ):
                return (
                    f"the object store refused the credentials for {where} ({code}): check "
                    "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (or "
                    "AWS_PROFILE) in the job's environment, and that this key may read and write "
                    "that prefix"
                )
            return f"the object store answered {code or 'an error'} for {where}: {err}"
        if isinstance(err, (bex.EndpointConnectionError, bex.ConnectionError)):
            return (
                f"cannot reach the object store at {endpoint} for {where} "
                f"({type(err).__name__}): check S3_ENDPOINT_URL and the network"
            )
    if isinstance(err, FileNotFoundError):
        return f"{where}: {err}"
    return f"{where}: {type(err).__name__}: {err}"


def check_store(folder: StoreFolder, write: bool) -> None:
    """Stop before training if the store folder cannot be used: the bucket is missing, the
    credentials are refused or absent, or the endpoint cannot be reached. With ``write``
    (global rank 0) a small object ``.stoicheia-write-check`` is written to prove write access.

    Raises :class:`StoreError` with one message naming the store and the fix.
    """
    try:
        store = folder.open()
        list_names(store, folder)
        if write:
            with tempfile.TemporaryDirectory() as tmp:
                probe = Path(tmp) / "probe"
                probe.write_text("written by stoicheia to check write access\n", encoding="utf-8")
                store.upload_object(folder.key(".stoicheia-write-check"), probe)
    except StoreError:
        raise
    except Exception as err:  # every failure of the store becomes one clear message
        raise StoreError(f"train.save_folder: {describe_error(err, folder)}") from None


def check_local_folder(folder: Path, what: str) -> None:
    """Raise :class:`StoreError` if ``folder`` cannot be created or written (a probe file is
    written and removed)."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-check-{uuid.uuid4().hex}"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as err:
        raise StoreError(
            f"{what} {folder} is not writable ({err.strerror or err}): choose a folder this job "
            "may write (set train.save_folder), or fix the folder's permissions"
        ) from None


def list_names(store, folder: StoreFolder) -> list[str]:
    """Names of the objects directly in the store folder (``store`` from :meth:`StoreFolder.open`).
    Composer's SFTP store cannot list: its SFTP client lists the directory (none yet: empty)."""
    if folder.scheme == "sftp":
        try:
            return store.sftp_client.listdir(folder.prefix or ".")
        except FileNotFoundError:
            return []
    base = folder.key("")
    return [
        k[len(base) :]
        for k in store.list_objects(base)
        if k.startswith(base) and "/" not in k[len(base) :]
    ]


def delete_object(store, folder: StoreFolder, name: str) -> None:
    """Delete the object ``name`` of the store folder (``store`` from :meth:`StoreFolder.open`).

    Composer's ``ObjectStore`` has no delete, so each backend's own client does it: boto3's
    ``delete_object`` for S3 (and GCS through its S3-compatible HMAC access), the GCS bucket's
    blob for the GCS SDK, OCI's ``delete_object``, SFTP's ``remove``. Raises what the backend
    raises; ``NotImplementedError`` for a backend it does not know.
    """
    key = folder.key(name)
    if folder.scheme == "sftp":
        store.sftp_client.remove(key)
        return
    s3 = (
        getattr(store, "s3_object_store", None) or store
    )  # GCS with GCS_KEY/GCS_SECRET wraps an S3 store
    client = getattr(s3, "client", None)
    if (
        folder.scheme in ("s3", "gs")
        and client is not None
        and hasattr(client, "delete_object")
        and not getattr(store, "use_gcs_sdk", False)
    ):
        client.delete_object(Bucket=s3.bucket, Key=s3.get_key(key))
    elif folder.scheme == "gs":
        store.bucket.blob(store.get_key(key)).delete()
    elif folder.scheme == "oci":
        store.client.delete_object(
            namespace_name=store.namespace, bucket_name=store.bucket, object_name=key
        )
    else:
        raise NotImplementedError(f"deleting objects from {folder.uri()} ({type(store).__name__})")


def checkpoints_to_prune(names: list[str], keep: int, latest: str | None) -> list[str]:
    """The periodic checkpoints among the store's object ``names`` that go when ``keep``
    (``train.save_num_checkpoints_to_keep``) are kept: all but the ``keep`` newest by batch
    (``keep < 0``: none go), never ``latest`` (the newest verified checkpoint, the one the
    store's ``latest`` symlink names), never a named checkpoint (``best.pt``,
    ``pre_anneal.pt``, ``final.pt``) or any other object. Oldest first."""
    if keep < 0:
        return []
    periodic = sorted(
        ((int(m["batch"]), n) for n in names if (m := CHECKPOINT.match(n))), reverse=True
    )
    kept = {n for _, n in periodic[:keep]}
    return [n for _, n in reversed(periodic) if n not in kept and n != latest and n not in NAMED]


def prune_checkpoints(store, folder: StoreFolder, keep: int, latest: str | None) -> list[str]:
    """Delete the checkpoints :func:`checkpoints_to_prune` names from the store folder and
    return them. A failed delete is logged and left for the next prune (never raised: the run
    goes on, the store merely holds one checkpoint more)."""
    if keep < 0:
        return []
    gone = []
    for name in checkpoints_to_prune(list_names(store, folder), keep, latest):
        try:
            delete_object(store, folder, name)
            gone.append(name)
        except Exception as err:
            log.warning(
                "[store] could not delete the old checkpoint %s (%s); it stays until the next "
                "checkpoint",
                folder.uri(name),
                describe_error(err, folder),
            )
    if gone:
        log.info(
            "[store] removed %d old checkpoint(s) from %s (train.save_num_checkpoints_to_keep=%d): "
            "%s",
            len(gone),
            folder.uri(),
            keep,
            ", ".join(gone),
        )
    return gone


def fetch_markers(
    folder: StoreFolder,
    run_folder: Path,
    *,
    overwrite: bool,
    names: tuple[str, ...] = MARKERS,
    store=None,
) -> list[str]:
    """Download the marker files and logs ``names`` (default :data:`MARKERS`) of the store
    folder into ``run_folder``; an existing local file is kept unless ``overwrite``. Each file
    is replaced atomically (several processes of one node may call this). Returns the names
    downloaded; raises :class:`StoreError` if the store cannot be read."""
    run_folder = Path(run_folder)
    run_folder.mkdir(parents=True, exist_ok=True)
    got = []
    try:
        store = store or folder.open()
        present = set(list_names(store, folder))
        for name in names:
            if name not in present or (not overwrite and (run_folder / name).exists()):
                continue
            tmp = run_folder / f".{name}.{uuid.uuid4().hex}.download"
            store.download_object(folder.key(name), str(tmp), overwrite=True)
            os.replace(tmp, run_folder / name)
            got.append(name)
    except Exception as err:
        raise StoreError(f"train.save_folder: {describe_error(err, folder)}") from None
    return got


def _local_newest(run_folder: Path) -> int:
    best = -1
    for f in Path(run_folder).glob("ep*-ba*-rank0.pt"):
        m = CHECKPOINT.match(f.name)
        if (
            m
            and f.is_file()
            and not f.is_symlink()
            and int(m["batch"]) > best
            and checkpoint_is_complete(f)
        ):
            best = int(m["batch"])
    return best


def restore_run(folder: StoreFolder, run_folder: Path) -> str | None:
    """Bring the newest good checkpoint of the store into ``run_folder`` for autoresume.

    Does nothing if the local folder already holds a complete checkpoint at least as new as
    the store's newest. Otherwise downloads checkpoints newest first, keeps the first that
    :func:`checkpoint_is_complete` accepts (a corrupt or truncated one is named in a warning and
    not loaded; it stays in the store), points ``latest-rank0.pt`` at it and downloads the
    marker files. Returns the name restored, or ``None``.

    Raises :class:`StoreError` when the store holds checkpoints newer than the local ones but
    none of them is complete and no local checkpoint exists.
    """
    run_folder = Path(run_folder)
    try:
        store = folder.open()
        names = list_names(store, folder)
    except Exception as err:
        raise StoreError(f"train.save_folder: {describe_error(err, folder)}") from None
    remote = sorted(
        ((int(m["batch"]), n) for n in names if (m := CHECKPOINT.match(n)) and m["rank"] == "0"),
        reverse=True,
    )
    local = _local_newest(run_folder)
    newer = [(b, n) for b, n in remote if b > local]
    if not newer:
        return None
    run_folder.mkdir(parents=True, exist_ok=True)
    bad = []
    for batch, name in newer:
        tmp = run_folder / f".{name}.{uuid.uuid4().hex}.download"
        try:
            store.download_object(folder.key(name), str(tmp), overwrite=True)
            ok = checkpoint_is_complete(tmp)
        except Exception as err:
            raise StoreError(
                f"cannot download {folder.uri(name)}: {describe_error(err, folder)}"
            ) from None
        if not ok:
            tmp.unlink(missing_ok=True)
            bad.append(folder.uri(name))
            log.warning(
                "[store] %s is incomplete or corrupt: it is not loaded (it stays in the store); "
                "trying the previous checkpoint",
                folder.uri(name),
            )
            continue
        os.replace(tmp, run_folder / name)
        # atomic, also when the nodes of a job share the run folder and restore at once
        tmp_link = run_folder / f".latest.{uuid.uuid4().hex}"
        tmp_link.symlink_to(name)
        os.replace(tmp_link, run_folder / "latest-rank0.pt")
        fetch_markers(folder, run_folder, overwrite=True, store=store)
        log.info(
            "[store] restored %s (batch %d) from %s into %s", name, batch, folder.uri(), run_folder
        )
        return name
    if local < 0:
        raise StoreError(
            f"no complete checkpoint in {folder.uri()}: every one is incomplete or corrupt "
            f"({', '.join(bad)}); delete those objects to start the run over, or set "
            "train.load_path to a good checkpoint"
        )
    log.warning(
        "[store] the store's newer checkpoints are corrupt (%s); resuming from the local one at "
        "batch %d",
        ", ".join(bad),
        local,
    )
    return None
