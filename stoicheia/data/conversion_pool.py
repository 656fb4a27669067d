"""The conversion's work on source files, spread over worker processes in a fixed order, with
a progress display: a bar on a terminal, a plain line every :data:`PROGRESS_EVERY` seconds in
a batch job's log.

:func:`stoicheia.data.shards.convert` hands it one job per source file.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

#: Seconds between the plain progress lines of a conversion that is not on a terminal.
PROGRESS_EVERY = 30.0


def map_files(
    work: Callable[[Any], Any], jobs: list[tuple], workers: int, progress: bool | str, tier: str
) -> Iterator[Any]:
    """The results of ``work(job)`` for each of ``jobs``, in the order of ``jobs`` (never in the
    order they finish, so the output does not depend on timing). Each result has ``records``
    (a list, counted in the display).

    ``workers > 1`` runs ``work`` in that many spawned processes (``work`` and the jobs must be
    picklable: a module-level function). ``progress=True`` (a terminal) shows a rich bar with
    files done of all, records read, time spent and left; ``"lines"`` one plain line on stderr
    every :data:`PROGRESS_EVERY` seconds (so that a batch job's log is not silent for
    minutes); ``False`` nothing."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files"),
        TextColumn("{task.fields[records]:,} records"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    records = 0
    t0 = last = time.monotonic()
    with Progress(*columns, disable=progress is not True, transient=True) as bar:
        task = bar.add_task(f"converting {tier}", total=len(jobs), records=0)

        def step(res: Any, done: int) -> None:
            nonlocal records, last
            records += len(res.records)
            bar.update(task, advance=1, records=records)
            now = time.monotonic()
            if progress == "lines" and now - last >= PROGRESS_EVERY and done < len(jobs):
                left = (now - t0) / done * (len(jobs) - done)
                print(
                    f"convert: {tier} {done}/{len(jobs)} files, {records:,} records, "
                    f"ETA {left / 60:.0f} min",
                    file=sys.stderr,
                    flush=True,
                )
                last = now

        if workers <= 1:
            for k, job in enumerate(jobs, 1):
                res = work(job)
                yield res
                step(res, k)
            return
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(workers) as pool:
            # Largest files first would balance better, but the output order must not depend
            # on timing: imap keeps the input order.
            for k, res in enumerate(pool.imap(work, jobs, chunksize=1), 1):
                yield res
                step(res, k)
