"""Restore a corpus of EpiDoc files: ``stoicheia restore CHECKPOINT --epidoc PATH... --out DIR``.

Each file goes through :func:`stoicheia.inference.epidoc.restore.restore_epidoc` and is
written to ``DIR`` (a file given by name as ``DIR/<name>``; the files of a folder, every
``*.xml`` below it, at their path relative to the folder). Resumable: a file whose output
exists is skipped when that output was made from the same input (SHA-256 of its bytes) by the
same model (:func:`~stoicheia.inference.model_identity.model_identity`: run, step, hash of the
weights) with the same options, as the provenance file ``DIR/.stoicheia-restore.jsonl`` (one
JSON line per output written) records; an output made from another input file, another
checkpoint or other options, or one with no record, is restored again (one line each, counted
``redone``). Outputs are written under a temporary name and renamed, so an output that exists
is whole. One input file is restored once, by whatever paths it is reached (a link beside its
target in a folder, a file named twice). A file that cannot be restored (malformed, not
EpiDoc, not Greek) gets one line on stderr and the run goes on; it is not written. Nothing is
ever written over an input. A file with no gap restored is written unchanged, so ``DIR``
holds the whole corpus.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stoicheia.inference.epidoc.outcomes import by_reason
from stoicheia.publish import atomic_write

__all__ = [
    "PROVENANCE",
    "CorpusInterrupted",
    "CorpusSummary",
    "epidoc_inputs",
    "restore_corpus",
]

#: the provenance of the outputs in ``DIR``: one JSON object per line, ``{"output": path
#: relative to DIR, "input": the input as given, "input_sha256", "model", "options"}``; the last
#: line of an output holds
PROVENANCE = ".stoicheia-restore.jsonl"

log = logging.getLogger(__name__)


@dataclass
class CorpusSummary:
    """Counts of one corpus run: files ``written``, ``skipped`` (output already there) and
    ``refused`` (one line each), ``redone`` (an output there, made from another input,
    checkpoint or options: restored again, and counted in ``written`` too), ``duplicates``
    (the same input given again, by the same or another path: restored once, one line each);
    gaps ``restored``, ``left`` (by reason in
    ``left_reasons``) and ``refused`` (the decoder refused them); ``seconds`` of wall time."""

    files: int = 0
    written: int = 0
    skipped: int = 0
    redone: int = 0
    refused: int = 0
    duplicates: int = 0
    restored: int = 0
    left: int = 0
    gaps_refused: int = 0
    left_reasons: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def line(self) -> str:
        """The one summary line printed at the end of a run."""
        why = ", ".join(f"{k} {v}" for k, v in by_reason(self.left_reasons))
        return (
            f"restore --epidoc: {self.files} files ({self.written} written, "
            f"{self.skipped} already there, "
            f"{f'{self.redone} redone, ' if self.redone else ''}{self.refused} refused"
            f"{f', {self.duplicates} given twice' if self.duplicates else ''}); "
            f"gaps {self.restored} restored / {self.left} left"
            f"{f' ({why})' if why else ''} / {self.gaps_refused} refused; {self.seconds:.1f} s"
        )


class CorpusInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`restore_corpus`: ``summary`` counts the files finished before it
    (``done`` of ``summary.files``; ``summary.seconds`` set), ``current`` is the input file that
    was being restored (file ``done + 1``; its output was not written, or an older one stays
    whole), ``None`` if the interrupt came before the first. A ``KeyboardInterrupt``, so a caller
    that does not know it still stops."""

    def __init__(self, summary: CorpusSummary, done: int, current: Path | None) -> None:
        super().__init__(f"interrupted after {done} of {summary.files} files")
        self.summary, self.done, self.current = summary, done, current

    def line(self) -> str:
        """What was done and how to go on, true of :func:`restore_corpus`'s resumption: the
        outputs written (now or by an earlier run) are kept by the same command; refused files
        are read again; the file in progress starts over."""
        s = self.summary
        kept = s.written + s.skipped
        left = s.files - self.done
        where = f" ({self.current})" if self.current is not None else ""
        return (
            f"interrupted (Ctrl-C): stopped after {self.done} of {s.files} files "
            f"({s.written} written, {s.skipped} already there, {s.refused} refused; nothing "
            "half-written); "
            + (
                f"the same command keeps the {kept} output{'s' if kept != 1 else ''} there and "
                f"goes on from file {self.done + 1}{where}, {left} to go"
                if left
                else "every file was done"
            )
        )


def _real(p: Path) -> Path:
    """``p`` with its links resolved; never raises (``Path.resolve`` raises ``RuntimeError`` at a
    link loop, such as ``a.xml -> a.xml``, which is then refused as unreadable with its line)."""
    return Path(os.path.realpath(p))


def epidoc_inputs(paths: list[str | Path], out: str | Path) -> list[tuple[Path, Path]]:
    """``(input file, output file)`` for every file of ``paths`` (module docstring), sorted
    within each folder. Raises ``ValueError`` (one line) for a path that does not exist, or an
    ``out`` folder inside an input folder (its outputs would be read as inputs the next time)
    or equal to an input file."""
    out = Path(out)
    out_abs = out.resolve()
    pairs: list[tuple[Path, Path]] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise ValueError(
                f"--epidoc {p}: no such file or folder; give EpiDoc files or folders that hold them"
            )
        if p.is_dir():
            if out_abs == p.resolve() or p.resolve() in out_abs.parents:
                raise ValueError(
                    f"--out {out} is inside the input folder {p}: its outputs would be read as "
                    "inputs; give an --out folder outside it"
                )
            found = [
                f for f in sorted(p.rglob("*")) if f.suffix.lower() == ".xml" and not f.is_dir()
            ]
            if not found:
                raise ValueError(
                    f"--epidoc {p}: no *.xml file in this folder or below it; give EpiDoc files "
                    "or folders that hold them"
                )
            pairs += [(f, out / f.relative_to(p)) for f in found]
        else:
            if out_abs == p.resolve():
                raise ValueError(f"--out {out} is the input file {p}; give a folder")
            pairs.append((p, out / p.name))
    return pairs


def _sha256(path: Path) -> str:
    """The SHA-256 of the file's bytes (hex); ``""`` when it cannot be read (the restore then
    refuses it with its own line)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return ""
    return h.hexdigest()


def _read_provenance(out: Path) -> dict[str, dict]:
    """The last provenance entry of each output in ``out`` (:data:`PROVENANCE`); lines that are
    not JSON objects (a run killed mid-line) are passed over: their outputs are redone."""
    made: dict[str, dict] = {}
    try:
        text = (out / PROVENANCE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return made
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("output"), str):
            made[entry["output"]] = entry
    return made


def _other_origin(entry: dict | None, want: dict) -> str | None:
    """Why an existing output cannot be kept (``"from another input file"``...), or ``None``
    when ``entry`` says it was made from the same input, by the same model, with the same
    options."""
    if entry is None:
        return "by an earlier run that recorded no provenance (or by hand)"
    if entry.get("input_sha256") != want["input_sha256"]:
        return "from another input file (or the input changed since)"
    if entry.get("model") != want["model"]:
        return f"by another model ({entry.get('model')})"
    if entry.get("options") != want["options"]:
        return "with other options"
    return None


def _record_provenance(out: Path, entry: dict) -> None:
    """Append one line to ``out/PROVENANCE`` (after the output is in place: a run killed between
    the two redoes that file, never keeps a file of unknown origin)."""
    with open(out / PROVENANCE, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


#: seconds between the lines that say how far a long file is, on no terminal
FILE_LINE_EVERY = 60.0


class _FileGaps:
    """Progress within one file (a large file takes hours): on a terminal a second bar row,
    ``<file>: gaps done/total, ETA``, shown while the file is restored; on no terminal a line
    every :data:`FILE_LINE_EVERY` seconds once a file has taken that long. ``__call__`` is the
    ``progress(done, total)`` of :func:`~stoicheia.inference.epidoc.restore.restore_epidoc`."""

    def __init__(self, bar: Any, say: Callable[[str], None], src: Path) -> None:
        self.bar, self.say, self.src = bar, say, src
        self.task: Any = None
        self.t0 = self.last = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        if self.bar is not None:
            if self.task is None:
                self.task = self.bar.add_task(
                    f"  {self.src.name}", total=total, note="", unit="gaps"
                )
            self.bar.update(self.task, completed=done)
            return
        now = time.perf_counter()
        if now - self.last >= FILE_LINE_EVERY and 0 < done < total:
            self.last = now
            eta = (now - self.t0) / done * (total - done)
            self.say(
                f"stoicheia restore: {self.src}: {done}/{total} gaps decided, "
                f"{now - self.t0:.0f} s, about {eta:.0f} s to go"
            )

    def close(self) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.remove_task(self.task)


def _progress(total: int) -> tuple[Any, Any, Callable[[str], None]]:
    """A rich progress bar on a terminal (files, gaps, ETA) and the function that prints one
    line above it; on no terminal, no bar and lines on stderr."""
    if not sys.stderr.isatty():
        return None, None, lambda msg: print(msg, file=sys.stderr, flush=True)
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[unit]}"),
        TextColumn("{task.fields[note]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    bar.start()
    task = bar.add_task("restoring EpiDoc", total=total, note="0 gaps restored", unit="files")
    return bar, task, lambda msg: console.print(msg, markup=False, highlight=False, soft_wrap=True)


def restore_corpus(
    model: Any,
    paths: list[str | Path],
    out: str | Path,
    *,
    say: Callable[[str], None] | None = None,
    progress: bool = True,
    **options: Any,
) -> CorpusSummary:
    """Restore every EpiDoc file of ``paths`` into the folder ``out`` (module docstring).

    ``model``: a :class:`~stoicheia.inference.loading.LoadedModel` (loaded once by the
    caller). ``options``: keywords of :func:`~stoicheia.inference.epidoc.restore.restore_epidoc`
    (``top_k``, ``beam``, ``unknown_width``, ``about_margin``, ``window``, ``when``). ``say``:
    where the one-line messages of refused files go (default: stderr, above the bar).
    ``progress``: show the bar (only ever on a terminal). Raises ``ValueError`` for the
    problems of :func:`epidoc_inputs`; ``OSError`` when an output cannot be written (disk full):
    the files written so far stay, and a rerun goes on from there; :class:`CorpusInterrupted`
    (a ``KeyboardInterrupt``) on Ctrl-C, with the counts so far.
    """
    from stoicheia.inference.epidoc.outcomes import EpiDocRestoreError
    from stoicheia.inference.epidoc.restore import restore_epidoc
    from stoicheia.inference.model_identity import model_identity
    from stoicheia.inference.restore import RestoreError

    t0 = time.perf_counter()
    pairs = epidoc_inputs(paths, out)
    inputs = {_real(src) for src, _ in pairs}
    summary = CorpusSummary(files=len(pairs))
    bar, task, line = _progress(len(pairs)) if progress else (None, None, None)
    say = say or line or (lambda msg: print(msg, file=sys.stderr, flush=True))
    made = _read_provenance(Path(out))
    model_id = model_identity(model)
    settings = {k: v for k, v in sorted(options.items()) if k != "when"}
    seen_out: dict[Path, Path] = {}
    seen_in: dict[
        Path, Path
    ] = {}  # an input given twice (same path, or another path to it) is restored once
    # the file in progress and how many were done before it, for a Ctrl-C's line
    current: tuple[int, Path | None] = (0, None)
    try:
        for index, (src, dst) in enumerate(pairs):
            current = (index, src)
            try:
                if _real(src) in seen_in:
                    summary.duplicates += 1
                    say(
                        f"stoicheia restore: {src}: given twice (as {seen_in[_real(src)]}); "
                        "restored once"
                    )
                    continue
                seen_in.setdefault(_real(src), src)
                target = _real(dst)
                if target in inputs or (dst.exists() and any(dst.samefile(s) for s in (src,))):
                    summary.refused += 1
                    say(
                        f"stoicheia restore: {src}: its output {dst} is an input; not written "
                        "(give another --out)"
                    )
                    continue
                if target in seen_out:
                    summary.refused += 1
                    say(
                        f"stoicheia restore: {src}: its output {dst} is also the output of "
                        f"{seen_out[target]}; not written (run them into separate --out folders)"
                    )
                    continue
                seen_out[target] = src
                want = {
                    "input_sha256": _sha256(src),
                    "model": model_id,
                    "options": settings,
                }
                rel = dst.relative_to(Path(out)).as_posix()
                if dst.exists():
                    why = _other_origin(made.get(rel), want)
                    if why is None:
                        summary.skipped += 1
                        continue
                    summary.redone += 1
                    say(
                        f"stoicheia restore: {src}: its output {dst} was made {why}; restored again"
                    )
                within = _FileGaps(bar, say, src)
                try:
                    result = restore_epidoc(model, src, progress=within, **options)
                except (EpiDocRestoreError, RestoreError) as err:
                    summary.refused += 1
                    msg = str(err)
                    say(
                        f"stoicheia restore: {msg if msg.startswith(str(src)) else f'{src}: {msg}'}"
                    )
                    continue
                finally:
                    within.close()
                atomic_write(dst, result.xml)
                _record_provenance(Path(out), {"output": rel, "input": str(src), **want})
                summary.written += 1
                for g in result.gaps:
                    if g.status == "restored":
                        summary.restored += 1
                    elif g.status == "left":
                        summary.left += 1
                        summary.left_reasons[g.reason] += 1
                    else:
                        summary.gaps_refused += 1
                log.debug(
                    "%s: %d restored, %d left, %d refused",
                    src,
                    result.count("restored"),
                    result.count("left"),
                    result.count("refused"),
                )
            finally:
                if bar is not None:
                    bar.update(task, advance=1, note=f"{summary.restored} gaps restored")
    except KeyboardInterrupt:
        summary.seconds = time.perf_counter() - t0
        raise CorpusInterrupted(summary, *current) from None
    finally:
        if bar is not None:
            bar.stop()
    summary.seconds = time.perf_counter() - t0
    return summary
