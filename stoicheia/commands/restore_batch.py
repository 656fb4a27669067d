"""``stoicheia restore CHECKPOINT --batch FILE``: many plain texts with one model load.

Input (``FILE``, or ``-`` for stdin), UTF-8 (or UTF-16 with its byte-order mark):

* one text per line (Leiden notation, as ``restore TEXT`` takes it); blank lines are no text
  and are counted, not restored;
* JSON Lines (``--jsonl``, or a file name ending in ``.jsonl``): one object per line with a
  ``"text"`` string; its other keys (an ``"id"``...) are copied to the output line (one the
  output writes itself as ``input_KEY``).

Output on stdout, one entry per input text, in input order: with ``--json`` or JSON Lines input,
one JSON object per line (``"line"``: the input line number, the input object's other keys, then
:meth:`~stoicheia.inference.restore.RestoreResult.to_json`'s keys; a text that could not be
restored has ``"error"`` instead of the result); else each text's restorations as ``restore``
prints them, under a ``== line N ==`` header (an error as ``error: ...``).

Nothing is skipped unsaid: a line that is not UTF-8, not JSON, without a ``"text"`` string or
refused by the restorer (a typo in the notation, no Greek letter, nothing to restore) gets its
error entry and is counted; the last line on stderr says how many texts were restored, how many
failed (and their lines) and how many lines were blank. A progress bar on stderr counts the
texts (when stderr is a terminal). Exit status 0 when every text was restored, 2 when one or
more failed (their entries say why) or the file could not be read, 130 after Ctrl-C (the
entries printed stay; one line counts the texts answered and says the line to go on from).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stoicheia.commands.common import fail, load

#: the keys of an output entry: a JSON Lines input's own key of the same name is copied as
#: ``input_KEY`` (``"line": "A7"`` -> ``"input_line": "A7"``), never overwritten unsaid
OUTPUT_KEYS = ("line", "error", "input", "gaps", "restorations", "notes")


def _own_key(key: str) -> str:
    """An input object's ``key`` as the output entry copies it (``input_`` before a name the
    output writes itself; repeated while that is taken too: ``input_input``...)."""
    while key in OUTPUT_KEYS:
        key = f"input_{key}"
    return key


@dataclass
class BatchItem:
    """One input line: its 1-based ``line`` number, the ``text`` (``None`` when the line could
    not be read: ``error`` says why) and the other keys of a JSON Lines object (``extra``)."""

    line: int
    text: str | None
    extra: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def read_batch(raw: bytes, jsonl: bool) -> tuple[list[BatchItem], int]:
    """The items of a batch file's bytes ``raw`` (a byte-order mark dropped; UTF-16 with its
    byte-order mark read as such) and the number of blank lines. Each line is decoded on its
    own, so that one line that is not UTF-8 is that line's error, not the whole file's."""
    items: list[BatchItem] = []
    blank = 0
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        # UTF-16 with its byte-order mark (Windows Notepad's "Unicode"): every line was
        # "not UTF-8"; read as what it is (if it is not whole UTF-16, each line says so)
        try:
            raw = raw.decode("utf-16").encode("utf-8")
        except UnicodeDecodeError:
            pass
    lines = raw.removeprefix(b"\xef\xbb\xbf").splitlines()
    for n, data in enumerate(lines, 1):
        try:
            line = data.decode("utf-8").strip()
        except UnicodeDecodeError as err:
            items.append(BatchItem(n, None, error=f"not UTF-8 (byte {err.start}); save as UTF-8"))
            continue
        if not line:
            blank += 1
            continue
        if not jsonl:
            items.append(BatchItem(n, line))
            continue
        try:
            obj = json.loads(line)
        except ValueError as err:
            items.append(BatchItem(n, None, error=f"not JSON ({err})"))
            continue
        text = obj.get("text") if isinstance(obj, dict) else None
        extra = (
            {_own_key(k): v for k, v in obj.items() if k != "text"} if isinstance(obj, dict) else {}
        )
        if not isinstance(text, str):
            why = 'no "text" string: give {"text": "...", ...} per line'
            items.append(BatchItem(n, None, extra, error=why))
            continue
        items.append(BatchItem(n, text, extra))
    return items, blank


def run_batch(args: argparse.Namespace) -> int:
    """Restore every text of ``args.batch`` with one model load (module docstring); returns the
    exit status."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from stoicheia.commands.restore import fusion_for, restore_options
    from stoicheia.inference.restore import (
        GapTooWideError,
        RestoreError,
        format_result,
        read_input,
        restore,
    )
    from stoicheia.inference.restore.fusion_file import without_ngram_note

    if args.text is not None:
        return fail("restore", "--batch reads its texts from FILE: give TEXT or --batch, not both")
    if getattr(args, "min_probability", None) is not None:
        return fail(
            "restore",
            "--min-probability is the floor of what --epidoc writes into an edition; --batch "
            "prints every reading with its probability",
        )
    jsonl = args.jsonl or str(args.batch).endswith(".jsonl")
    if args.batch == "-":
        buffer = getattr(sys.stdin, "buffer", None)  # None: a str stream (tests, embedding)
        raw = buffer.read() if buffer is not None else sys.stdin.read().encode("utf-8")
    else:
        try:
            raw = Path(args.batch).read_bytes()
        except OSError as err:
            return fail("restore", f"--batch {args.batch}: {err.strerror or err}; give a file")
    items, blank = read_batch(raw, jsonl)
    if not items:
        return fail("restore", f"--batch {args.batch}: no text in it ({blank} blank lines)")
    if args.beam is not None and args.beam < args.top_k:
        return fail("restore", f"--beam {args.beam} is smaller than --top-k {args.top_k}")
    if args.respace and args.accents:
        return fail(
            "restore",
            "--respace predicts the word division and --accents keeps the input's: use one of them",
        )
    model = load(args, "restore")
    supplements = "repredict" if args.repredict_supplements else "keep"
    found: list[str] = []
    try:
        fusion = fusion_for(model, args, found)
    except RestoreError as err:
        return fail("restore", str(err))
    as_json = args.json or jsonl
    failed: list[int] = []
    console = Console(stderr=True)
    with Progress(
        TextColumn("restoring"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("texts"),
        TimeElapsedColumn(),
        console=console,
        disable=not sys.stderr.isatty(),
        transient=True,
    ) as bar:
        task = bar.add_task("batch", total=len(items))
        answered = 0  # entries printed, in input order
        try:
            for item in items:
                result, error = None, item.error
                if error is None:
                    try:
                        try:
                            reading: Any = read_input(
                                item.text,
                                supplements="repredict" if args.score_supplements else supplements,
                                unknown_width=args.unknown_width,
                                about_margin=args.about_margin,
                            )
                        except GapTooWideError:
                            reading = item.text  # said by restore(), with the loaded model's limit
                        result = restore(
                            model,
                            reading,
                            **restore_options(args),
                            supplements=supplements,
                            fusion=fusion,
                        )
                    except RestoreError as err:
                        error = str(err)
                if result is not None and result.gaps:
                    said = list(found)
                    used = args.decoder or (fusion.decoder if fusion is not None else "fused")
                    if (fusion is None or fusion.ngram is None) and used == "fused":
                        said.append(without_ngram_note(fusion, args.ngram_weight))
                    result.notes += [n for n in dict.fromkeys(said) if n not in result.notes]
                _emit(item, result, error, as_json, format_result)
                answered += 1
                if error is not None:
                    failed.append(item.line)
                bar.update(task, advance=1)
        except KeyboardInterrupt:
            print(_interrupted(items, answered, failed, args.batch), file=sys.stderr)
            return 130
    done = len(items) - len(failed)
    summary = f"stoicheia restore: restored {done} of {len(items)} texts"
    if failed:
        shown = ", ".join(map(str, failed[:10])) + (" ..." if len(failed) > 10 else "")
        lines = "line" if len(failed) == 1 else "lines"
        summary += f"; {len(failed)} failed ({lines} {shown}; their entries say why)"
    if blank:
        summary += f"; {blank} blank line(s), no text"
    print(summary, file=sys.stderr)
    return 2 if failed else 0


def _interrupted(items: list[BatchItem], answered: int, failed: list[int], name: str) -> str:
    """The line Ctrl-C ends a batch with: how many texts were answered (their entries are out,
    ``failed`` among them), how many were not, and the input line to go on from."""
    n = len(items)
    said = f"interrupted (Ctrl-C): {answered:,} of {n:,} texts answered above"
    if failed:
        said += f" ({len(failed):,} of them failed)"
    if answered >= n:
        return f"stoicheia restore: {said}"
    first = items[answered].line
    rest = f"{n - answered:,} not restored, from line {first:,} on"
    if name != "-":
        rest += f" (`tail -n +{first} {name}` gives them)"
    return f"stoicheia restore: {said}; {rest}"


def _emit(item: BatchItem, result: Any, error: str | None, as_json: bool, fmt: Any) -> None:
    """Print one entry of the output (module docstring) and flush it: a reader of the pipe sees
    each text when it is done."""
    if as_json:
        entry: dict[str, Any] = {"line": item.line}
        entry.update(item.extra)
        if error is not None:
            entry.update({"text": item.text, "error": error})
        else:
            entry.update(result.to_json())
        print(json.dumps(entry, ensure_ascii=False), flush=True)
        return
    print(f"== line {item.line} ==")
    print(f"error: {error}" if error is not None else "\n".join(fmt(result)), flush=True)


__all__ = ["BatchItem", "read_batch", "run_batch"]
