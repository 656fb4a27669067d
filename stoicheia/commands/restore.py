"""``stoicheia restore [CHECKPOINT] TEXT``: fill the lacunae of a Greek text in Leiden notation
(:mod:`stoicheia.inference.restore`; no CHECKPOINT: the shipped model,
:func:`stoicheia.cli_args.choose_model`); ``--epidoc`` goes to
:mod:`stoicheia.commands.restore_epidoc`, ``--batch`` (many texts, one model load) to
:mod:`stoicheia.commands.restore_batch`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from stoicheia.cli_args import OneLineParser, float_in, int_in
from stoicheia.commands.common import fail, load, model_args
from stoicheia.text.leiden_segments import MAX_LACUNA_WIDTH


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``restore`` on the ``stoicheia`` sub-command parsers."""
    p = subparsers.add_parser("restore", help="fill the lacunae of a Greek text in Leiden notation")
    p.__class__ = _IntermixedParser  # add_parser makes the parent's class
    model_args(p, optional=True)
    p.add_argument(
        "text",
        metavar="TEXT",
        nargs="?",
        help="Greek text with Leiden lacunae: [...] [.5.] [-ca.5-] [5±3] [---] [καὶ] α̣ "
        "('-': read stdin)",
    )
    p.add_argument(
        "--epidoc",
        nargs="+",
        metavar="PATH",
        help="EpiDoc files or folders (every *.xml below): fill their <gap> elements "
        "(docs/restoring-epidoc.md)",
    )
    p.add_argument(
        "--batch",
        metavar="FILE",
        help="many texts with one model load: FILE (or '-', stdin) holds one text per line, or "
        'JSON Lines ({"text": ...} per line; --jsonl or a .jsonl name), answered one entry '
        "per text on stdout (JSON Lines with --json or JSONL input); a text that fails gets "
        "its error entry and is counted (docs/restoring.md)",
    )
    p.add_argument(
        "--jsonl",
        action="store_true",
        help="with --batch: the input is JSON Lines (default for a file name ending .jsonl)",
    )
    p.add_argument(
        "--out",
        help="with --epidoc: folder the restored files are written to "
        "(files already there are skipped)",
    )
    p.add_argument(
        "--top-k",
        type=int_in(1, 100, meaning=" restorations"),
        default=5,
        help="restorations to print, best first (default 5)",
    )
    p.add_argument(
        "--beam",
        type=int_in(1, 256, meaning=" candidates per gap"),
        help="candidates kept per gap, combined into the whole-text restorations "
        "(default max(top-k, 4))",
    )
    p.add_argument(
        "--ngram",
        metavar="PATH",
        help="letter n-gram file to fuse into the search (default: ngram.npz beside the "
        "checkpoint, if any; written by `stoicheia benchmark --save-fusion`)",
    )
    p.add_argument(
        "--ngram-weight",
        type=float_in(0, 1, meaning=" (0: without the n-gram)"),
        help="weight of the n-gram in the search (default: the weight chosen on the dev set, "
        "stored in the file or in fusion.json; 0: without the n-gram, and with "
        "--parallels-weight 0 too, the model alone)",
    )
    p.add_argument(
        "--parallels",
        metavar="INDEX",
        help="parallels index folder (default: fusion.json's, else the run's shards' parallels "
        "folder, found from the checkpoint's folder; '' for none): each gap's corpus parallels "
        "are listed",
    )
    p.add_argument(
        "--parallels-weight",
        type=float_in(0, 1, meaning=" (0: parallels shown, not fused)"),
        help="weight of the parallels in the search (default: fusion.json's beside the "
        "checkpoint, else 0)",
    )
    p.add_argument(
        "--decoder",
        choices=("fused", "parallels", "ngram", "model"),
        help="which decoder fills the gaps: fused (the network, the n-gram and the parallels, "
        "whole readings weighed together), parallels (the corpus's parallels first, then the "
        "n-gram), ngram (the letter n-gram alone) or model (the network alone); default: the "
        "one fusion.json beside the checkpoint names (the benchmark's best), else fused",
    )
    p.add_argument(
        "--min-probability",
        type=float_in(0, 1, meaning=" (0: every reading written)"),
        help="with --epidoc: the confidence floor of every gap; a gap whose best reading is "
        "less probable keeps its <gap>, its readings proposed in <certainty> entries after it "
        "(1: none written; default: fusion.json's two floors, for gaps of known width and of "
        "unknown extent, chosen by the benchmark so that what is written is right at least half "
        "the time; else 0)",
    )
    p.add_argument(
        "--respace",
        action="store_true",
        help="the text rebuilt in lower case with the model's word division, and its accents, "
        "breathings and punctuation where the input has none (for scriptio continua)",
    )
    p.add_argument(
        "--accents",
        action="store_true",
        help="the text rebuilt in lower case with the model's accents and breathings, the "
        "input's word division and punctuation kept (for a text typed with spaces, unaccented)",
    )
    p.add_argument(
        "--repredict-supplements",
        action="store_true",
        help="re-predict letters an editor supplied in [ ] instead of keeping them",
    )
    p.add_argument(
        "--unknown-width",
        type=int_in(1, MAX_LACUNA_WIDTH, meaning=" letters (default 20)"),
        default=20,
        help="most letters a lacuna of unknown width [---] may hold (default 20)",
    )
    p.add_argument(
        "--about-margin",
        type=float_in(0, 1, meaning=" (a fraction of N, default 0.25)"),
        default=0.25,
        help="[-ca.N-] means N ± max(1, round(margin × N)) letters (default 0.25)",
    )
    p.add_argument(
        "--window",
        type=int_in(0, meaning=" slots (0: one window, a longer text refused)"),
        help="slots the model sees at once (default: the row length it was trained on; 0: one "
        "window, and a text longer than the trained rows is refused)",
    )
    p.add_argument(
        "--alternatives",
        type=int_in(0, 100, meaning=" fills per gap"),
        help="each gap's own best fills, with probabilities (default: --top-k; 0: none)",
    )
    p.add_argument(
        "--score-supplements",
        action="store_true",
        help="re-predict each editor's supplement [περὶ] and give the probability and rank of "
        "the editor's reading",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print JSON (one entry per gap; see docs/restoring.md) instead of the aligned text",
    )
    p.set_defaults(func=run)


def _names_a_file(text: str) -> bool:
    """Whether TEXT is the name of an existing file (a text long or odd enough to be no file
    name is not: the system refuses to look it up)."""
    if "\n" in text or len(text.encode("utf-8")) > 4096:
        return False
    try:
        return Path(text).is_file()
    except (OSError, ValueError):  # a name too long, a NUL character
        return False


def _xml_file(name: str) -> bool:
    """Whether ``name`` is an existing file named ``*.xml`` (any case) or whose first bytes,
    a byte-order mark and blanks aside, are ``<`` (XML: a checkpoint is a zip archive)."""
    if not _names_a_file(name):
        return False
    if name.lower().endswith(".xml"):
        return True
    try:
        with open(name, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return False
    return head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"<")


def _text_file(path: str | None) -> bool:
    """Is ``path`` a file of UTF-8 text (a user's text given where a checkpoint, a zip
    archive, is read)?"""
    try:
        head = Path(path).read_bytes()[:4096] if path and Path(path).is_file() else b""
    except OSError:
        return False
    if not head.strip() or head.startswith(b"PK"):
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        return err.start > len(head) - 4  # a letter cut at the 4,096th byte
    return True


def _xml_given_for(args: argparse.Namespace) -> str | None:
    """The one-line error for an XML file given where the CHECKPOINT or the TEXT goes, with the
    ``--epidoc`` command that restores it; ``None`` when neither is one."""
    import shlex

    for given, instead, model in (
        (args.checkpoint, "a checkpoint", None),
        (args.text, "a Greek text", args.checkpoint),
    ):
        if given is None or given == "-" or not _xml_file(given):
            continue
        paths = " ".join(shlex.quote(p) for p in [given, *(args.epidoc or [])])
        command = " ".join(
            ["stoicheia restore", *([shlex.quote(model)] if model else [])]
            + [f"--epidoc {paths} --out {shlex.quote(args.out) if args.out else 'FOLDER'}"]
        )
        return (
            f"{given} is an XML file, not {instead}; to fill the <gap> elements of an EpiDoc "
            f"file: {command} (docs/restoring-epidoc.md)"
        )
    return None


def run(args: argparse.Namespace) -> int:
    """Restore the text of ``args`` (or its EpiDoc files) and print the restorations; returns the
    exit status (0, or 2 after one line on stderr)."""
    import json

    from stoicheia.cli_args import choose_model
    from stoicheia.inference.restore import (
        GapTooWideError,
        RestoreError,
        check_something_to_restore,
        format_result,
        read_input,
        restore,
    )

    xml = _xml_given_for(args)  # before the checkpoint is looked at: it would say "not a zip"
    if xml is not None:
        return fail("restore", xml)
    # the shipped model's note waits for load(): a bad input is one error line without it
    code = choose_model(args, "restore", takes_text=True, defer_note=True)
    if code is not None:
        return code
    if args.batch is not None:
        if args.epidoc or args.out is not None:
            return fail(
                "restore",
                "--batch answers on stdout; --epidoc PATH... --out DIR restores EpiDoc files: "
                "give one of them",
            )
        from stoicheia.commands.restore_batch import run_batch

        return run_batch(args)
    if args.epidoc:
        from stoicheia.commands import restore_epidoc

        return restore_epidoc.run(args)
    if args.jsonl:
        return fail("restore", "--jsonl describes the --batch FILE; give --batch FILE with it")
    if args.out is not None:
        return fail(
            "restore",
            "--out is the folder of --epidoc outputs; give --epidoc PATH... with it, "
            "or leave --out out",
        )
    if args.min_probability is not None:
        return fail(
            "restore",
            "--min-probability is the floor of what --epidoc writes into an edition; a TEXT "
            "prints every reading with its probability",
        )
    blank = [a for a in (args.checkpoint, args.text) if a is not None and not a.strip()]
    if blank:  # restore '' or restore CHECKPOINT '   ': a text given, but empty
        return fail(
            "restore",
            "the TEXT is empty: give a Greek text with its lacunae in quotes "
            "(stoicheia restore \"καὶ [...]\"), or '-' to read it from stdin",
        )
    if args.text is None:
        if _text_file(args.checkpoint):  # restore my_text.txt: the text is in the file
            return fail(
                "restore",
                f"{args.checkpoint} is a text file, not a checkpoint: restore its lines with "
                f"--batch {args.checkpoint} (one text a line), or its whole text with "
                f"stoicheia restore - < {args.checkpoint}",
            )
        return fail(
            "restore",
            "the following arguments are required: TEXT (a Greek text, or '-' to read stdin), "
            "or --epidoc PATH... --out DIR for EpiDoc files",
        )
    text = args.text
    if text == "-":
        buffer = getattr(sys.stdin, "buffer", None)  # None: a str stream (tests, embedding)
        raw = buffer.read() if buffer is not None else sys.stdin.read().encode("utf-8")
        try:
            text = raw.decode("utf-8-sig").strip()  # a byte-order mark is no part of the text
        except UnicodeDecodeError:
            utf16 = raw[:2] in (b"\xff\xfe", b"\xfe\xff")
            return fail(
                "restore",
                "the text on stdin is not UTF-8"
                + (" (it is UTF-16, as some Windows editors save)" if utf16 else "")
                + "; save it as UTF-8 and give it again",
            )
        if not text:
            return fail(
                "restore",
                "stdin was empty: give the Greek text on stdin "
                "(stoicheia restore CHECKPOINT - < FILE), or as TEXT in quotes",
            )
    elif _names_a_file(text):
        return fail(
            "restore",
            f"{text} is a file, not a Greek text: to restore what it holds, give '-' and the file "
            f"on stdin: stoicheia restore CHECKPOINT - < {text}",
        )
    if args.beam is not None and args.beam < args.top_k:
        return fail(
            "restore",
            f"--beam {args.beam} is smaller than --top-k {args.top_k}; "
            f"give --beam {args.top_k} or more",
        )
    if args.respace and args.accents:
        return fail(
            "restore",
            "--respace predicts the word division and --accents keeps the input's: use one of them",
        )
    supplements = "repredict" if args.repredict_supplements else "keep"
    reading = text  # the text read once, here: a typo fails before the model is loaded
    try:
        reading = read_input(
            text,
            supplements="repredict" if args.score_supplements else supplements,
            unknown_width=args.unknown_width,
            about_margin=args.about_margin,
        )
        check_something_to_restore(
            reading, args.respace or args.accents, bool(args.score_supplements)
        )
    except GapTooWideError:
        pass  # said by restore() below, with the limit of the loaded model
    except RestoreError as err:
        return fail("restore", str(err))
    model = load(args, "restore")
    progress, stop = _restore_progress()
    try:
        found: list[str] = []  # the parts restoration goes on without, one note each
        fusion = fusion_for(model, args, found)
        result = restore(
            model,
            reading,
            **restore_options(args),
            supplements=supplements,
            progress=progress,
            fusion=fusion,
        )
    except RestoreError as err:
        return fail("restore", str(err))
    finally:
        if stop is not None:
            stop()
    decoder = args.decoder or (fusion.decoder if fusion is not None else "fused")
    if result.gaps:
        if (fusion is None or fusion.ngram is None) and decoder == "fused":
            found.append(without_ngram_note(fusion, args.ngram_weight))
        result.notes += [n for n in dict.fromkeys(found) if n not in result.notes]
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
    else:
        print("\n".join(format_result(result)))
    return 0


def without_ngram_note(fusion: Any, ngram_weight: float | None) -> str:
    """:func:`stoicheia.inference.restore.fusion_file.without_ngram_note` (imported when called:
    this module is read by ``stoicheia --help``, which loads no torch)."""
    from stoicheia.inference.restore.fusion_file import without_ngram_note as note

    return note(fusion, ngram_weight)


def _restore_progress():
    """A ``progress(done, total)`` callback drawing a rich progress bar on stderr, and a function
    that removes it; ``(None, None)`` when stderr is not a terminal (pipes and logs stay clean)."""
    if not sys.stderr.isatty():
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("restoring"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} passes"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("restore", total=1)
    bar.start()

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return update, bar.stop


class _IntermixedParser(OneLineParser):
    """``restore``'s parser: its TEXT is optional (``--epidoc`` replaces it), and argparse
    would take an optional positional as absent at the first option it meets
    (``restore CKPT --top-k 3 TEXT``); intermixed parsing reads it wherever it stands."""

    _inner = False

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        if self._inner:  # parse_known_intermixed_args calls this method itself
            return super().parse_known_args(args, namespace)
        self._inner = True
        try:
            ns, extra = self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inner = False
        words = [e for e in extra if not e.startswith("-")]
        if words and words == extra and getattr(ns, "text", None):
            # the shell split an unquoted text into words: TEXT took the first
            from stoicheia.cli_args import looks_like_text, names_a_model

            typed = " ".join([ns.text, *words])
            model = getattr(ns, "checkpoint", None)
            if model and not names_a_model(model) and looks_like_text(model):  # no checkpoint
                typed, model = f"{model} {typed}", None
            self.error(
                f"unrecognized arguments: {' '.join(words)}; "
                "a text of several words goes in quotes: "
                f'stoicheia restore {model + " " if model else ""}"{typed}"'
            )
        return ns, extra


def restore_options(args: argparse.Namespace) -> dict:
    """The options of :func:`stoicheia.inference.restore.restore` that ``restore`` and
    ``restore --batch`` take from the command line alike (not the supplements, the fusion or
    a progress callback, which each finds itself)."""
    return {
        "top_k": args.top_k,
        "beam": args.beam,
        "respace": args.respace,
        "accents": args.accents,
        "unknown_width": args.unknown_width,
        "about_margin": args.about_margin,
        "window": args.window,
        "alternatives": args.alternatives,
        "score_supplements": args.score_supplements,
        "decoder": args.decoder,
    }


def fusion_for(model, args: argparse.Namespace, notes: list[str]):
    """The n-gram and parallels that ``restore`` and ``restore --batch`` fuse with ``model``,
    from the command line's ``--ngram``, ``--ngram-weight``, ``--parallels``,
    ``--parallels-weight`` and ``--decoder`` (:func:`~stoicheia.inference.restore.fusion_file.
    find_fusion`); ``notes`` receives one line per part restoration goes on without. Raises
    ``RestoreError`` for a fusion file or index that cannot be read."""
    from stoicheia.inference.restore.fusion_file import find_fusion

    return find_fusion(
        model,
        args.ngram,
        args.ngram_weight,
        parallels=args.parallels,
        parallels_weight=args.parallels_weight,
        decoder=args.decoder,
        notes=notes,
    )
