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
* At the end (:func:`cleanup_processes`), Composer's "Waiting up to 30 seconds for all training
  processes to terminate. Press Ctrl-C to exit immediately." is not printed when every trainer
  has exited (it was, after every run, a clean one too). When some are still running they get
  SIGTERM, as in Composer, and one line says how many the launcher waits for and for how long;
  a Ctrl-C during that wait SIGKILLs them at once, as the end of the wait does (Composer's
  Ctrl-C, which the forwarding above had made a no-op; the wait for the ranks that stop on
  their own after a :data:`STOPPED` exit still passes a Ctrl-C on).

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


def _wait(processes: dict[int, Any], seconds: float, interrupted: list[int]) -> None:
    """Poll until every process has exited, ``seconds`` have passed or ``interrupted`` is not
    empty (a Ctrl-C arrived)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not interrupted:
        if all(p.poll() is not None for p in processes.values()):
            return
        time.sleep(0.1)


def cleanup_processes(processes: dict[int, Any], stop_wait: float = STOP_WAIT) -> None:
    """Composer's ``_cleanup_processes`` (``processes``: global rank -> ``subprocess.Popen``)
    with its lines our own (module docstring): after a :data:`STOPPED` exit, wait up to
    ``stop_wait`` s for the other ranks, which stop at the same batch on their own; then SIGTERM
    to the ranks still running and, only if there are some, one line and a wait of up to
    Composer's ``CLEANUP_TIMEOUT`` (30 s); SIGKILL to those still running after it (and to their
    children), or at once on a Ctrl-C during that wait (not during the first: those ranks are
    saving); last, Composer's report of each rank that failed (not those killed here). Never
    raises for a process already gone."""
    import psutil
    from composer.cli import launcher

    log = launcher.log
    if any(p.poll() in STOPPED for p in processes.values()):
        _wait(processes, stop_wait, [])  # a Ctrl-C here is passed on, and changes nothing
    running = {rank: p for rank, p in processes.items() if p.poll() is None}
    for rank, process in running.items():
        log.info("Killing global rank %s (PID %s) with SIGTERM", rank, process.pid)
        try:
            os.kill(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    if running:
        timeout = launcher.CLEANUP_TIMEOUT.total_seconds()
        n = len(running)
        ranks = ", ".join(str(r) for r in running)
        print(
            f"[launch] waiting up to {timeout:.0f} s for {n} training "
            f"process{'es' if n > 1 else ''} (rank{'s' if n > 1 else ''} {ranks}) to save "
            f"and exit; Ctrl-C kills {'them' if n > 1 else 'it'} at once (a checkpoint being "
            "written is lost)",
            flush=True,
        )
        interrupted: list[int] = []
        previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.append(signum))
        try:
            _wait(running, timeout, interrupted)
        finally:
            signal.signal(signal.SIGINT, previous)
    for rank, process in processes.items():
        if process.poll() is not None:
            continue
        log.warning(
            "Failed to kill global rank %s (PID %s) with SIGTERM; terminating with SIGKILL instead",
            rank,
            process.pid,
        )
        try:
            tree = [psutil.Process(process.pid)]
            tree += tree[0].children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for member in tree:
            try:
                os.kill(member.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for rank, process in processes.items():
        code = process.poll()
        if code not in (None, 0) and -code not in (signal.SIGKILL, signal.SIGTERM):
            # a rank that failed, not one killed here (Composer's rule)
            launcher._print_process_exit_status(rank, process)  # noqa: SLF001


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
    launcher._cleanup_processes = cleanup_processes  # noqa: SLF001
    return int(launcher.main())


if __name__ == "__main__":
    sys.exit(main())
