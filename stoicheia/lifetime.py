"""Tie the lifetime of a run's processes to their parent, so that a kill leaves nothing behind.

A SIGKILLed trainer cannot clean up: its DataLoader workers (each holding a copy of the
dataset state, ~0.5 GB on the demo) would go on until they next notice that the parent is
gone, which can take minutes. Linux's ``prctl(PR_SET_PDEATHSIG, sig)`` asks the kernel to send
``sig`` to a process the moment its parent thread dies, whatever killed the parent.

Two uses:

* DataLoader workers (:func:`worker_init`): ``SIGKILL`` when the trainer dies, and
  ``SIGTERM`` and ``SIGINT`` (Ctrl-C reaches every process of the terminal's group)
  ignored, because SLURM sends SIGTERM to every process of a job and a worker that
  died of it would make the trainer crash ("DataLoader worker exited unexpectedly") before it
  could save its preemption checkpoint; the trainer ends its workers itself.
* Trainer processes started by the ``composer`` launcher (:func:`die_with_launcher`):
  ``SIGTERM`` when the launcher dies, so an orphaned trainer saves a checkpoint at the next
  batch and exits (see :class:`~stoicheia.train.callbacks.preemption.Preemption`).

The race: a parent that died before ``prctl`` ran sends nothing. Both functions compare the
parent pid before and after ``prctl`` (and with the expected pid when known) and act as if
the signal had come when the parent is already gone.

Elsewhere than Linux both are no-ops (returning ``False``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def set_parent_death_signal(sig: int) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies.

    Returns True if it was set (Linux), False where ``prctl`` is unavailable. Raises
    ``OSError`` if ``prctl`` fails.
    """
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_PDEATHSIG) failed: {os.strerror(err)}")
    return True


def worker_init(parent_pid: int, worker_id: int) -> None:
    """``worker_init_fn`` of the training DataLoader (bind ``parent_pid`` with
    ``functools.partial``): die with the trainer, ignore SIGTERM and SIGINT (the trainer saves
    and stops on them, then ends its workers itself).

    A worker whose trainer (``parent_pid``) is already gone exits at once (status 1).
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group
    if set_parent_death_signal(signal.SIGKILL) and os.getppid() != parent_pid:
        os._exit(1)  # the trainer died before prctl took effect: nobody will read our batches


def die_with_launcher() -> bool:
    """In a trainer started by the ``composer`` launcher (``LOCAL_RANK`` set): receive SIGTERM
    when the launcher dies. Returns True if set up.

    Call it first thing in the process, before a SIGTERM handler is installed. If the launcher
    is already gone (the parent pid changed, or is 1), SIGTERM is sent to this process now, so
    the run stops as if preempted (or dies, if no handler is installed yet).
    """
    if "LOCAL_RANK" not in os.environ:
        return False
    before = os.getppid()
    if not set_parent_death_signal(signal.SIGTERM):
        return False
    if before == 1 or os.getppid() != before:
        os.kill(os.getpid(), signal.SIGTERM)
    return True


def ignore_stop_signals() -> None:
    """Ignore SIGTERM and SIGINT from now on: call it when a trainer's run is over, just before
    the process exits with the run's status.

    A launcher that sees one rank exit sends SIGTERM to the ranks still exiting; Python restores
    the default action of signals it handled while the interpreter shuts down, so such a
    SIGTERM would kill a rank that has already saved and replace its status (130, 143, ...)
    by a death from SIGTERM. Ignored signals stay ignored through the shutdown.
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
