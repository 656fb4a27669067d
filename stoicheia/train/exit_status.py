"""The exit status of a training run (``recipes/train.py``), defined once.

Kept apart from :mod:`stoicheia.train.run` so that the plugins that end a run (preemption)
and scripts that read the status (``scripts/slurm_chain.sh``) need neither Composer nor torch.
"""

from __future__ import annotations

import signal
from enum import IntEnum


class ExitCode(IntEnum):
    """What the process reports when a run ends.

    ``OK`` (0): the run is complete, now or already (nothing to do).
    ``CONFIG`` (2): a configuration or input error before the first batch (also: bucket
    missing, credentials refused, folder not writable, a checkpoint of another model shape);
    one line on stderr names the file or key and the fix.
    ``DIVERGED`` (3): a run of non-finite gradients; the last good checkpoint stays the newest
    and ``diverged.json`` names it.
    ``STORE_UNAVAILABLE`` (4): the object store stayed unreachable longer than
    ``train.upload_retry_seconds`` (the local run folder keeps every checkpoint).
    ``INTERRUPTED`` (130 = 128 + SIGINT): stopped by Ctrl-C after saving a checkpoint of the
    batch in progress; run the same command to resume.
    ``PREEMPTED`` (143 = 128 + SIGTERM, what a shell reports for a process ended by SIGTERM):
    stopped by SIGTERM (preemption, time limit, ``scancel``) after saving a checkpoint of the
    batch in progress; run the same command to resume.
    """

    OK = 0
    CONFIG = 2
    DIVERGED = 3
    STORE_UNAVAILABLE = 4
    INTERRUPTED = 128 + signal.SIGINT
    PREEMPTED = 128 + signal.SIGTERM

    @classmethod
    def for_signal(cls, sig: int) -> ExitCode:
        """The status of a run stopped (after saving) by signal ``sig``: :attr:`INTERRUPTED`
        for SIGINT, :attr:`PREEMPTED` for any other (SIGTERM, SIGUSR1, ...)."""
        return cls.INTERRUPTED if sig == signal.SIGINT else cls.PREEMPTED
