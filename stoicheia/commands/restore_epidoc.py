"""``stoicheia restore CHECKPOINT --epidoc PATH... --out DIR``: fill the ``<gap>`` elements of
EpiDoc files (:mod:`stoicheia.inference.epidoc.corpus`; docs/restoring-epidoc.md)."""

from __future__ import annotations

import argparse
import errno
import sys

from stoicheia.cli_args import out_dir_problem
from stoicheia.commands.common import fail, load


def run(args: argparse.Namespace) -> int:
    """``restore --epidoc PATH... --out DIR`` (stoicheia.inference.epidoc.corpus); returns
    the exit status (0; 2 after one line on stderr; 130 after Ctrl-C, with one line saying how
    many files were done and that the same command goes on from the next)."""
    from stoicheia.inference.epidoc.corpus import CorpusInterrupted, epidoc_inputs, restore_corpus

    if args.text is not None:
        return fail("restore", f"give either a TEXT ({args.text!r}) or --epidoc files, not both")
    if args.out is None:
        return fail(
            "restore",
            "--epidoc needs --out DIR, the folder the restored files are written to "
            "(never over an input)",
        )
    for flag, given in (
        ("--respace", args.respace),
        ("--accents", args.accents),
        ("--repredict-supplements", args.repredict_supplements),
        ("--json", args.json),
        ("--ngram", args.ngram),
        ("--ngram-weight", args.ngram_weight is not None),
        ("--parallels", args.parallels is not None),
        ("--parallels-weight", args.parallels_weight is not None),
    ):
        if given:
            return fail(
                "restore",
                f"{flag} is for a TEXT; --epidoc fills the <gap> elements of the editions only",
            )
    problem = out_dir_problem(args.out)
    if problem:
        return fail("restore", f"--out {problem}")
    if args.beam is not None and args.beam < args.top_k:
        return fail(
            "restore",
            f"--beam {args.beam} is smaller than --top-k {args.top_k}; "
            f"give --beam {args.top_k} or more",
        )
    try:  # the paths first: a typo fails before the model is loaded
        epidoc_inputs(args.epidoc, args.out)
    except ValueError as err:
        return fail("restore", str(err))
    model = load(args, "restore")
    try:
        summary = restore_corpus(
            model,
            args.epidoc,
            args.out,
            top_k=args.top_k,
            beam=args.beam,
            unknown_width=args.unknown_width,
            about_margin=args.about_margin,
            window=args.window,
            min_probability=args.min_probability,
            decoder=args.decoder,
        )
    except CorpusInterrupted as stop:  # Ctrl-C: how far it got, and that a rerun goes on
        print(f"stoicheia restore: {stop.line()}", file=sys.stderr)
        return 130
    except ValueError as err:
        return fail("restore", str(err))
    except OSError as err:
        return fail(
            "restore",
            f"cannot write {err.filename or args.out} ({err.strerror}); {_write_fix(err.errno)} "
            "(the files written so far stay; a rerun goes on from there)",
        )
    print(summary.line())
    # said where gaps were decoded (a run whose files were all refused or skipped used none)
    for note in _missing_parts(model, args.decoder) if summary.restored or summary.left else []:
        print(f"({note})")
    if summary.files and summary.refused == summary.files:
        # nothing could be read: a script calling this must not take it for a finished run
        print(
            "stoicheia restore: error: every file was refused; each line above says why and "
            "what to do",
            file=sys.stderr,
        )
        return 2
    return 0


def _missing_parts(model: object, decoder: str | None) -> list[str]:
    """The notes of what the restoration went without (no parallels index, an index that does
    not open, no n-gram beside the checkpoint), each once for the whole run: the floors of
    ``fusion.json`` were chosen with them, so without them few gaps are written, and the
    summary line alone would not say why. Empty when every part is there (or the fusion
    cannot be read: each file then said so)."""
    from stoicheia.inference.restore import RestoreError
    from stoicheia.inference.restore.fusion_file import find_fusion

    notes: list[str] = []
    try:
        find_fusion(model, decoder=decoder, notes=notes)
    except (RestoreError, OSError, ValueError):
        return []
    return notes


def _write_fix(code: int | None) -> str:
    """What to do when ``--out`` cannot be written (``code``: the ``errno``): free space only
    where the disk is full; a folder one may write to where permission is missing."""
    if code in (errno.ENOSPC, errno.EDQUOT):
        return "free some space or give another --out"
    if code == errno.EFBIG:
        return "raise the file size limit (ulimit -f) or give another --out"
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "give an --out folder you may write to"
    return "give another --out"
