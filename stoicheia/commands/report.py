"""``stoicheia report RUN_FOLDER``: a run's curves as report.png and report.html
(:mod:`stoicheia.train.report`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from stoicheia.cli_args import out_dir_problem
from stoicheia.commands.common import fail


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``report`` on the ``stoicheia`` sub-command parsers."""
    p = subparsers.add_parser(
        "report",
        help="a run's curves: writes report.png and report.html into the run folder "
        "(or --out FOLDER)",
    )
    p.add_argument(
        "run_folder",
        metavar="RUN_FOLDER",
        help="the run's train.save_folder, e.g. checkpoints/stoicheia-demo",
    )
    p.add_argument("--out", help="folder for report.png and report.html (default: the run folder)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the report of ``args.run_folder``; returns the exit status (0, or 2 after one line on
    stderr)."""
    from stoicheia.train.report import read_curves, summary_lines, write_report

    problem = out_dir_problem(args.out) if args.out else None
    if problem:
        return fail("report", f"--out {problem}")
    try:
        curves = read_curves(Path(args.run_folder))
        png, page = write_report(Path(args.run_folder), args.out, curves)
    except ValueError as err:
        return fail("report", str(err))
    except OSError as err:
        return fail(
            "report",
            f"cannot write {err.filename or args.out or args.run_folder} ({err.strerror}); "
            "give --out FOLDER you can write to",
        )
    print("\n".join(summary_lines(curves)))
    print(f"wrote {png} and {page}")
    return 0
