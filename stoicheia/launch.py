"""``python -m stoicheia.launch``: Composer's ``composer`` launcher with a training job's signals
handled. Same options as ``composer``::

    .venv/bin/python -m stoicheia.launch -n 2 recipes/train.py yamls/demo.yaml

Why not ``composer`` itself: importing Composer installs, in the launcher process too
(``composer.core.engine``), a handler that turns SIGINT and SIGTERM into ``SystemExit``. On
Ctrl-C or a SIGTERM the launcher then prints a traceback, sends SIGTERM to its trainers and
SIGKILLs them 30 s later, possibly in the middle of the checkpoint they are writing; a shell's
``trap "" TERM`` does not protect it (the import replaces the ignored disposition).

Here, instead:

* SIGINT and SIGTERM that reach the launcher (Ctrl-C reaches every process of the terminal's
  group; ``kill -INT`` or SLURM's SIGTERM may reach the launcher alone) are passed on to its
  trainers, and the launcher waits for them. Each trainer saves the batch in progress and exits
  130 (SIGINT) or 143 (SIGTERM) (the ``preemption`` plugin); the launcher exits with that status.
* When one trainer has exited 130 or 143, the launcher waits for the others (they stopped at
  the same batch) instead of sending them SIGTERM at once.
* A trainer that ends with one of the run's own statuses
  (:class:`~stoicheia.train.exit_status.ExitCode`: 2, 3, 4, 130, 143) has printed its one line
  already: the launcher does not report it as a crash nor dump the other ranks' logs.

Everything else is Composer's launcher, unchanged. Linux and macOS (``psutil`` finds the
trainers).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from typing import Any

from stoicheia.train.exit_status import ExitCode

#: Statuses with which a trainer ends on purpose, after printing its own line.
DELIBERATE = frozenset(int(c) for c in ExitCode if c != ExitCode.OK)
#: Statuses of a trainer stopped by a signal after saving; the other ranks stop at the same batch.
STOPPED = frozenset((int(ExitCode.INTERRUPTED), int(ExitCode.PREEMPTED)))
#: Seconds the launcher waits for the other ranks after one exited with a :data:`STOPPED` status,
#: before Composer's clean-up (SIGTERM, then SIGKILL 30 s later).
STOP_WAIT = 120.0


def forward_signal(signum: int, frame: Any = None) -> None:
    """Signal handler of the launcher: send ``signum`` to each trainer process (the launcher's
    children), which saves and stops; never raises."""
    import psutil

    for child in psutil.Process().children():
        try:
            os.kill(child.pid, signum)
        except ProcessLookupError:
            pass


class _QuietDeliberate(logging.Filter):
    """Drops the launcher's "crashed with exit code N" / "exited with code N" records for the
    run's own statuses (the trainer printed why it stopped)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(
            message.endswith((f"exit code {c}.", f"exited with code {c}")) for c in DELIBERATE
        )


def main(argv: list[str] | None = None) -> int:
    """Run Composer's launcher on ``argv`` (default ``sys.argv[1:]``) with the signal handling
    of the module docstring; returns its exit status."""
    from composer.cli import launcher

    if argv is not None:
        sys.argv = [sys.argv[0], *argv]
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, forward_signal)
    launcher.log.addFilter(_QuietDeliberate())
    report = launcher._print_process_exit_status  # noqa: SLF001 (Composer's launcher, wrapped)

    def print_exit_status(global_rank: int, process: Any) -> None:
        if process.returncode not in DELIBERATE:
            report(global_rank, process)

    launcher._print_process_exit_status = print_exit_status  # noqa: SLF001
    cleanup = launcher._cleanup_processes  # noqa: SLF001

    def cleanup_after_a_stop(processes: dict[int, Any]) -> None:
        # After a stop signal every rank stops at the same batch and exits 130/143 on its own;
        # Composer would SIGTERM the ranks not yet exited the moment the first one is.
        if any(p.poll() in STOPPED for p in processes.values()):
            deadline = time.monotonic() + STOP_WAIT
            while time.monotonic() < deadline and any(p.poll() is None for p in processes.values()):
                time.sleep(0.1)
        cleanup(processes)

    launcher._cleanup_processes = cleanup_after_a_stop  # noqa: SLF001
    return int(launcher.main())


if __name__ == "__main__":
    sys.exit(main())
