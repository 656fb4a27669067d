"""Writing output whole or not at all, and saying in one line why a write failed.

Every command that writes (``convert``, ``export``, ``report``, ``benchmark``, ``evaluate``,
``restore --epidoc``, training's marker files) goes through this module, so that a full disk
(``ENOSPC``), a quota (``EDQUOT``), a file size limit (``EFBIG``, ``ulimit -f``) or a
read-only file system never leaves a half-written file or a traceback:

* :func:`atomic_path` / :func:`atomic_write`: one file, written as ``.NAME.partial`` in the
  same folder, flushed to disk (``fsync``) and renamed over ``NAME`` (``os.replace``); on any
  failure the temporary file is removed and ``NAME`` stays as it was (or absent);
* :func:`publishing`: a whole folder, written as ``OUT.partial`` and renamed to ``OUT`` once
  complete (:func:`partial_folder`, :func:`publish_folder`); a failure removes ``OUT.partial``;
* :class:`WriteError`: what both raise for a failed write, an ``OSError`` whose message is one
  line naming the path, the cause (``No space left on device``, ``File too large``) and the fix;
  :func:`write_failure` finds the operating system's error behind a library's own exception
  (torch raises ``RuntimeError("... unexpected pos ...")``, safetensors ``SafetensorError``);
* :func:`ignore_file_size_signal`: a process past ``RLIMIT_FSIZE`` is killed by ``SIGXFSZ``
  unless that signal is ignored; ignored, the write fails with ``EFBIG`` and is reported.

Nothing here imports another ``stoicheia`` module: sources, data, train and inference all use it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import resource
import shutil
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

#: The errors that mean "this file system cannot take the output", with the fix to print.
_FIXES = {
    errno.ENOSPC: "free some space or write elsewhere",
    errno.EDQUOT: "free some of your quota or write elsewhere",
    errno.EFBIG: "raise the file size limit (ulimit -f) or write elsewhere",
    errno.EROFS: "write elsewhere",
    errno.EIO: "check the disk, or write elsewhere",
}
#: "os error 28" (Rust's io::Error, in safetensors' messages), "[Errno 28]" (Python's)
_ERRNO_IN_TEXT = re.compile(r"(?:os error|Errno) (\d+)")


class WriteError(OSError):
    """A file or folder could not be written. ``str()`` is one line: ``cannot write PATH
    (CAUSE); FIX``. ``errno``/``strerror``/``filename`` are those of the underlying error
    (``errno`` may be ``None`` when the cause was inferred; :func:`write_failure`)."""

    def __init__(self, path: str | os.PathLike, code: int | None, cause: str) -> None:
        super().__init__(code, cause, str(path))
        self.path = Path(path)
        self.cause = cause

    @property
    def fix(self) -> str:
        """What to do about it (``free some space or write elsewhere`` for a full disk)."""
        return _FIXES.get(self.errno or -1, "write elsewhere")

    def __str__(self) -> str:
        return f"cannot write {self.path} ({self.cause}); {self.fix}"


def _os_error_in(err: BaseException) -> OSError | None:
    """The first ``OSError`` with an ``errno`` in ``err`` and its causes/contexts."""
    seen: set[int] = set()
    e: BaseException | None = err
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno is not None:
            return e
        e = e.__cause__ or e.__context__
    return None


def write_failure(
    err: BaseException, path: str | os.PathLike, partial: str | os.PathLike | None = None
) -> WriteError | None:
    """``err``, raised while writing ``path``, as a :class:`WriteError` naming ``path``; ``None``
    when ``err`` is not a failure of the file system to take the data (a bug, a Ctrl-C, a
    missing folder: those are not write failures to report this way).

    The cause is, in order: the ``errno`` of an ``OSError`` in ``err``'s chain (torch's
    ``RuntimeError`` carries the write's ``OSError`` as its context); an ``os error N`` in the
    message (safetensors); else, for an exception that says nothing (torch writing to a path
    itself), the state of the file system: no free space left at ``path`` gives ``ENOSPC``, a
    ``partial`` file that reached the soft ``RLIMIT_FSIZE`` gives ``EFBIG``."""
    if isinstance(err, WriteError):
        return err
    if isinstance(err, (KeyboardInterrupt, SystemExit, MemoryError)):
        return None
    found = _os_error_in(err)
    code = found.errno if found is not None else None
    if code is None:
        m = _ERRNO_IN_TEXT.search(str(err))
        code = int(m.group(1)) if m else None
    if code is None and isinstance(err, (OSError, RuntimeError)):
        code = _inferred_errno(Path(path), Path(partial) if partial is not None else None)
    if code not in _FIXES:
        return None
    return WriteError(path, code, os.strerror(code))


def _inferred_errno(path: Path, partial: Path | None) -> int | None:
    """``ENOSPC`` if the file system of ``path`` has no block left for this user, ``EFBIG`` if
    ``partial`` reached the process's file size limit, else ``None``."""
    folder = path if path.is_dir() else path.parent
    try:
        st = os.statvfs(folder)
        if st.f_bavail * st.f_frsize < 64 * 1024:  # less than a write's worth: full
            return errno.ENOSPC
    except OSError:
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft != resource.RLIM_INFINITY and partial is not None:
        try:
            if partial.stat().st_size >= soft:
                return errno.EFBIG
        except OSError:
            pass
    return None


def partial_path(path: str | os.PathLike) -> Path:
    """``.NAME.partial`` beside ``path``: where :func:`atomic_path` writes before the rename."""
    path = Path(path)
    return path.with_name(f".{path.name}.partial")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Give a temporary path beside ``path`` to write to (``.NAME.partial``); on leaving the
    block the file is flushed to disk and renamed over ``path``, so ``path`` is either the old
    file (or absent) or the whole new one.

    For writers that take a file name (torch, safetensors, matplotlib's ``savefig``, numpy).
    The folder is created if needed. On any exception the temporary file is removed; a failure
    of the file system (full disk, quota, file size limit) is raised as :class:`WriteError`,
    anything else as it was."""
    path = Path(path)
    tmp = partial_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        _fsync(tmp)
        os.replace(tmp, path)
    except BaseException as err:
        failure = write_failure(err, path, tmp)
        tmp.unlink(missing_ok=True)
        if failure is not None and failure is not err:
            raise failure from err
        raise


@contextlib.contextmanager
def atomic_open(
    path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8"
) -> Iterator[IO[Any]]:
    """:func:`open` for writing ``path`` whole or not at all (see :func:`atomic_path`):
    ``mode`` ``"w"`` (text, ``encoding``) or ``"wb"``."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes a new file: mode 'w' or 'wb', not {mode!r}")
    with atomic_path(path) as tmp:
        with open(tmp, mode, encoding=None if "b" in mode else encoding) as fh:
            yield fh


def atomic_write(path: str | os.PathLike, data: bytes | str, encoding: str = "utf-8") -> Path:
    """Write ``data`` (bytes, or text in ``encoding``) to ``path`` whole or not at all (see
    :func:`atomic_path`); returns ``path``. Raises :class:`WriteError` for a full disk, a
    quota or a file size limit."""
    with atomic_path(path) as tmp:
        if isinstance(data, str):
            tmp.write_text(data, encoding=encoding)
        else:
            tmp.write_bytes(data)
    return Path(path)


def append_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    """Append ``text`` to the log file ``path`` and flush it. A failure of the file system is
    raised as :class:`WriteError` (the lines already in the file stay; a line cut short is
    what readers of such logs skip)."""
    try:
        with open(path, "a", encoding=encoding) as fh:
            fh.write(text)
            fh.flush()
    except OSError as err:
        failure = write_failure(err, path)
        if failure is None:
            raise
        raise failure from err


def partial_folder(out: Path) -> Path:
    """A fresh, empty ``OUT.partial`` beside ``out`` (an old one, left by a killed run, is
    removed)."""
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def publish_folder(tmp: Path, out: Path) -> None:
    """Replace ``out`` by the complete folder ``tmp``: the old ``out`` is moved aside to
    ``OUT.old`` only now, after the new one is whole, and removed after the rename."""
    old = out.with_name(out.name + ".old")
    if out.exists():
        shutil.rmtree(old, ignore_errors=True)
        out.rename(old)
    tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def publishing(out: str | os.PathLike) -> Iterator[Path]:
    """Write a whole output folder: yields a fresh ``OUT.partial`` to fill; when the block ends
    without an exception it replaces ``out`` (:func:`publish_folder`). On any exception (a
    Ctrl-C too) ``OUT.partial`` is removed and the old ``out`` (or none) stays; a failure of
    the file system is raised as :class:`WriteError` naming ``out``.

    ``convert`` (shards, stats, index) and ``export`` (a model folder) write this way; so should
    any new writer of a folder."""
    out = Path(out)
    tmp: Path | None = None
    try:
        tmp = partial_folder(out)
        yield tmp
        publish_folder(tmp, out)
    except BaseException as err:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        failure = write_failure(err, out)
        if failure is not None and failure is not err:
            raise failure from err
        raise


def ignore_file_size_signal() -> None:
    """Ignore ``SIGXFSZ`` in this process, so that a write past the file size limit
    (``ulimit -f``, ``RLIMIT_FSIZE``) fails with ``EFBIG`` (reported as a :class:`WriteError`)
    instead of killing the process with a core dump. Does nothing outside the main thread."""
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
