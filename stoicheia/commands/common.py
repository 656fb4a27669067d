"""What several ``stoicheia`` subcommands share: the one-line error, loading the model, the
model and n-gram arguments, and the ways the process ends (:mod:`stoicheia.cli`)."""

from __future__ import annotations

import argparse
import os
import sys

from stoicheia.cli_args import device_name, int_in


def fail(command: str, message: str) -> int:
    """Print the one-line error of ``stoicheia COMMAND``; returns the exit status 2."""
    print(f"stoicheia {command}: error: {message}", file=sys.stderr)
    return 2


def stdin_text(command: str) -> str | None:
    """The text on stdin, decoded as UTF-8 (a byte-order mark dropped, ends stripped). Bytes that
    are not UTF-8 print the one-line error of ``stoicheia COMMAND`` (naming UTF-16, which some
    Windows editors save) and return ``None`` (the command then returns 2): never replaced by
    U+FFFD unsaid."""
    buffer = getattr(sys.stdin, "buffer", None)  # None: a str stream (tests, embedding)
    raw = buffer.read() if buffer is not None else sys.stdin.read().encode("utf-8")
    try:
        return raw.decode("utf-8-sig").strip()
    except UnicodeDecodeError as err:
        utf16 = raw[:2] in (b"\xff\xfe", b"\xfe\xff")
        fail(
            command,
            f"the text on stdin is not UTF-8 (byte {err.start}"
            + (", UTF-16 as some Windows editors save" if utf16 else "")
            + "); save it as UTF-8 and give it again",
        )
        return None


def load(args: argparse.Namespace, command: str):
    """The model of ``args.checkpoint`` (with ``args.config``, on ``args.device``, in
    ``args.precision``, fp32 for a command without that option), as
    :func:`stoicheia.inference.loading.load_model` returns it. A checkpoint that does not load
    prints the one-line error of ``stoicheia COMMAND`` and raises ``SystemExit(2)``. The note
    that the shipped model is used, where the command kept it until its input was checked
    (``args.shipped_note``, :func:`stoicheia.cli_args.choose_model`), is printed first, once."""
    from stoicheia.inference.loading import ModelLoadError, load_model

    note = getattr(args, "shipped_note", None)
    if note:
        print(note, file=sys.stderr)
        args.shipped_note = None

    try:
        return load_model(
            args.checkpoint,
            config=args.config,
            device=args.device,
            precision=getattr(args, "precision", "fp32"),  # export: no --precision, fp32
        )
    except ModelLoadError as err:
        print(f"stoicheia {command}: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None


def model_args(p: argparse.ArgumentParser, precision: bool = True, optional: bool = False) -> None:
    """The ``CHECKPOINT``, ``--config``, ``--device`` and (unless ``precision`` is false: a
    command that runs no forward pass) ``--precision`` arguments every model command takes;
    ``optional``: CHECKPOINT may be left out for the shipped model
    (:func:`stoicheia.cli_args.choose_model`)."""
    help_text = (
        "training checkpoint (.pt, local or s3:// gs:// oci://), run folder, or export folder"
    )
    if optional:
        p.add_argument(
            "checkpoint",
            metavar="CHECKPOINT",
            nargs="?",
            help=help_text + " (left out: the shipped base model, docs/model-card.md)",
        )
    else:
        p.add_argument("checkpoint", metavar="CHECKPOINT", help=help_text)
    p.add_argument(
        "--config",
        help="YAML the model was trained with (only for checkpoints that do not record it)",
    )
    p.add_argument(
        "--device",
        default="auto",
        type=device_name,
        help="auto (GPU if any), cpu, cuda, cuda:1 ...",
    )
    if not precision:
        return
    p.add_argument(
        "--precision",
        default="auto",
        choices=("auto", "fp32", "bf16"),
        help="auto (bf16 autocast on a CPU with bf16 instructions for a model of d_model >= 192, "
        "else fp32), fp32 or bf16",
    )


def ngram_args(p: argparse.ArgumentParser) -> None:
    """The letter n-gram baseline's options (``evaluate`` and ``benchmark``)."""
    p.add_argument(
        "--ngram-order",
        type=int_in(0, 6, meaning=" (0: no n-gram baseline; default 5)"),
        default=5,
        help="order of the letter n-gram baseline (0: none; default 5)",
    )
    p.add_argument(
        "--ngram-letters",
        type=int_in(1, meaning=" letters"),
        default=20_000_000,
        help="letters the n-gram is trained on at most",
    )


def exit_now(code: int) -> None:
    """End the process at once with status ``code``, without the interpreter's teardown.

    Tearing torch down takes 0.4-0.6 s of an about 3 s ``stoicheia restore`` (measured
    2026-12-01 on 2 idle cores: ``import torch`` then exit, 2.2-2.9 s, against 1.7-2.2 s with
    ``os._exit``). Used only for the whole process's ``restore`` (not for ``main([...])`` called
    from Python): it has closed every file it wrote, so only the standard streams and the log
    handlers are flushed here."""
    import logging

    try:
        sys.stdout.flush()
    except BrokenPipeError:  # `| head` closed the pipe: nothing more to write
        pass
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)


def quiet_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's last flush of a closed
    pipe raises nothing at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
