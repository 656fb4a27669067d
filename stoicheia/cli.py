"""Command line: ``stoicheia convert``, ``add-corpus``, ``index``, ``status``, ``evaluate``,
``benchmark``, ``restore``, ``parallels``, ``report``, ``export``, ``serve``.

``convert`` turns source files into MDS shards (and the parallels index; ``index`` builds it for
shards converted before); ``add-corpus`` adds a user's EpiDoc corpus to a run's shards, index and
n-gram; ``parallels`` lists the training passages sharing the longest stretches
with a text; ``status`` tells where a training run stands,
from the files in its run folder; ``evaluate`` scores a trained model on held-out text;
``benchmark`` measures restoration on the inscription dev set beside an n-gram; ``export``
writes a model folder that ``transformers`` loads; ``report`` draws a run's curves;
``restore`` fills the lacunae of a Greek text (or of EpiDoc files, ``--epidoc``); ``serve`` puts a
restoration page on a local address.

Examples::

    stoicheia convert --out data/shards gold=../shared/corpus/perseus silver=../shared/corpus/ud
    stoicheia status checkpoints/stoicheia-demo
    stoicheia evaluate checkpoints/stoicheia-demo/best.pt --shards data/shards
    stoicheia benchmark checkpoints/stoicheia-demo/best.pt --shards data/shards \\
        --out benchmark/stoicheia-demo
    stoicheia export checkpoints/stoicheia-demo/best.pt exported/stoicheia-demo
    stoicheia report checkpoints/stoicheia-demo
    stoicheia serve checkpoints/stoicheia-demo/best.pt        # then open http://127.0.0.1:8000/

Exit status 0 on success, 2 on a usage or input error: one line on stderr that names the
argument or file and the fix (no traceback; the argument checks are in ``stoicheia.cli_args``).
A write that fails (full disk, quota, file size limit) is an exit 2 too, with one line naming
the path and the cause; every output is written whole or not at all (``stoicheia.publish``).

Each command is a module of :mod:`stoicheia.commands` (``serve``: :mod:`stoicheia.serve.command`)
that holds its arguments and its job; this module builds the parser and dispatches.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from stoicheia.cli_args import OneLineParser
from stoicheia.commands import (
    add_corpus,
    benchmark,
    convert,
    evaluate,
    export,
    index,
    parallels,
    report,
    restore,
    status,
)
from stoicheia.commands.common import exit_now, model_args, quiet_stdout
from stoicheia.publish import WriteError, ignore_file_size_signal


def build_parser() -> OneLineParser:
    """The ``stoicheia`` parser with every subcommand's; the parsed arguments' ``func`` is the
    subcommand's ``run``. Only the argument definitions are imported: each command imports the
    library it needs when it runs (``benchmarks/startup.py`` times ``stoicheia --help``)."""
    parser = OneLineParser(prog="stoicheia")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (
        convert,
        add_corpus,
        index,
        status,
        evaluate,
        benchmark,
        restore,
        parallels,
        report,
        export,
    ):
        command.add_parser(sub)  # in this order in --help
    from stoicheia.serve.command import add_serve_parser

    add_serve_parser(sub, model_args)
    parser.commands = dict(sub.choices)  # type: ignore[attr-defined]  # for main's usage errors
    # the description names every command registered above (it once forgot serve)
    parser.description = (
        "Stoicheia's commands: "
        + ", ".join(f"stoicheia {name}" for name in sub.choices)
        + "; stoicheia COMMAND --help for one"
    )
    return parser


def _interrupted_while_starting(signum: int, frame: object) -> None:
    print("stoicheia: interrupted (Ctrl-C)", file=sys.stderr)
    os._exit(130)


def _exit_on_ctrl_c() -> Any:
    """While the arguments are parsed (which imports torch and numpy for some of them), Ctrl-C
    ends the process at once with status 130 and one line: nothing is written yet, and a
    KeyboardInterrupt inside numpy's C import leaves it half-loaded (the next import raises
    "CPU dispatcher tracer already initialized"). Returns the previous SIGINT handler, or None
    off the main thread (no handler can be set there)."""
    try:
        return signal.signal(signal.SIGINT, _interrupted_while_starting)
    except ValueError:
        return None


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``stoicheia`` command: parse ``argv`` (default ``sys.argv[1:]``), run the
    subcommand and return its exit status (0; 2 for a usage or input error; 130 for Ctrl-C)."""
    previous = _exit_on_ctrl_c()
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra:  # said by the command's own parser: its --help lists its arguments
            own = parser.commands.get(getattr(args, "command", None), parser)  # type: ignore[attr-defined]
            own.error(f"unrecognized arguments: {' '.join(extra)}")
    except (
        SystemExit
    ) as stop:  # a usage error (its one line is printed) or --help: the status, like the commands
        return stop.code if isinstance(stop.code, int) else 0
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    ignore_file_size_signal()  # past `ulimit -f` a write fails with EFBIG (one line), no core dump
    try:
        code = args.func(args)
    except WriteError as err:  # a full disk, a quota, a file size limit: nothing half-written stays
        print(f"stoicheia {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # convert and export write OUT.partial and rename it whole, so nothing half-written stays
        print(f"stoicheia {args.command}: interrupted (Ctrl-C)", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader of the output went away (`| head`): it has what it wanted; no traceback
        quiet_stdout()
        return 0
    if argv is None and args.command == "restore" and "torch" in sys.modules:
        exit_now(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
