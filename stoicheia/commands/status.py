"""``stoicheia status RUN_FOLDER``: where a training run stands, from the files in its run folder
(:mod:`stoicheia.train.status`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``status`` on the ``stoicheia`` sub-command parsers."""
    p = subparsers.add_parser(
        "status", help="where a training run stands, from the files in its run folder"
    )
    p.add_argument(
        "run_folder",
        metavar="RUN_FOLDER",
        help="the run's train.save_folder, e.g. checkpoints/stoicheia-demo",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print where the run of ``args.run_folder`` stands; returns the exit status (0, or 2 after one
    line on stderr)."""
    from stoicheia.train.status import format_status, run_status

    try:
        facts = run_status(Path(args.run_folder))
        lines = list(format_status(facts))
    except ValueError as err:
        print(f"stoicheia status: error: {err}", file=sys.stderr)
        return 2
    except (TypeError, AttributeError, KeyError, OverflowError) as err:
        # valid JSON with values of the wrong type: a damaged marker file (or a hand edit)
        print(
            f"stoicheia status: error: a file in {args.run_folder} holds a value of the wrong type "
            f"({type(err).__name__}: {err}); check complete.json, anneal.json, best.json, "
            "diverged.json and the last lines of evals.jsonl "
            "(restore them from the checkpoints, or delete the damaged one)",
            file=sys.stderr,
        )
        return 2
    for line in lines:
        print(line)
    return 0
