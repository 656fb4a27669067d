"""``stoicheia convert TIER=PATH... --out DIR``: source files to MDS shards
(:func:`stoicheia.data.shards.convert`), with a summary per tier."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from stoicheia.cli_args import float_in, int_in, out_dir_problem
from stoicheia.commands.common import fail


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``convert`` on the ``stoicheia`` sub-command parsers."""
    p = subparsers.add_parser(
        "convert", help="source files (Perseus TEI, EpiDoc, CoNLL-U, .txt, .jsonl) to MDS shards"
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="TIER=PATH",
        help="a tier name and a file or directory; repeatable",
    )
    p.add_argument(
        "--out", required=True, help="output directory (gold/train, gold/val, ..., stats.json)"
    )
    p.add_argument(
        "--val-fraction",
        type=float_in(0, 1, hi_open=True, meaning=" (share of records held out)"),
        default=0.005,
        help="share of records held out by id hash (default 0.005)",
    )
    p.add_argument(
        "--val-work",
        action="append",
        metavar="WORK",
        help="send a whole work to val, e.g. Homer/hom.od_gk.xml; repeatable",
    )
    p.add_argument(
        "--inscription-dev-digit",
        action="append",
        type=int_in(0, 9, meaning=" (a last digit, e.g. 4)"),
        metavar="DIGIT",
        help="hold out as the inscription dev set (TIER/inscription_dev, never trained on) the "
        "EpiDoc inscriptions whose dev digit is DIGIT: the last digit of an I.Sicily number "
        "(ISic000154: 4), for other corpora the last digit of a stable hash of the file name "
        "(one file in ten per digit); twins (one text under two numbers) go together; "
        "repeatable",
    )
    p.add_argument(
        "--max-record-letters",
        type=int_in(16, meaning=" letters"),
        default=2048,
        help="longer records are stored in word-aligned parts",
    )
    p.add_argument(
        "--min-greek",
        type=float_in(0, 1, meaning=" (share of Greek letters)"),
        default=0.95,
        help="reject records with a smaller share of Greek letters",
    )
    p.add_argument(
        "--skip-bad",
        action="store_true",
        help="skip unreadable files (counted in stats.json) instead of stopping",
    )
    p.add_argument(
        "--workers",
        type=int_in(1, meaning=" reader processes"),
        default=min(4, os.cpu_count() or 1),
        help="parallel reader processes",
    )
    p.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    p.add_argument(
        "--supplied-lost",
        choices=("text", "lacuna"),
        default="text",
        help="EpiDoc <supplied reason='lost'>: keep the editor's letters (text) "
        "or make them a real lacuna of their length",
    )
    p.add_argument(
        "--expansions",
        choices=("expanded", "abbreviated"),
        default="expanded",
        help="EpiDoc <expan>: the expanded word or the abbreviation as written",
    )
    p.add_argument(
        "--choice",
        choices=("regularised", "original"),
        default="regularised",
        help="EpiDoc <choice>: <reg>/<corr> or <orig>/<sic>",
    )
    p.add_argument(
        "--no-parallels-index",
        action="store_true",
        help="do not build the parallels index "
        "(OUT/parallels; `stoicheia index OUT` builds it later)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Convert the sources of ``args`` and print what was kept and dropped; returns the exit status
    (0, or 2 after one line on stderr)."""
    from stoicheia.data.shards import ConvertError, convert
    from stoicheia.sources import EpiDocOptions

    problem = out_dir_problem(args.out)
    if problem:
        return fail("convert", f"--out {problem}")
    t0 = time.perf_counter()
    try:
        summary = convert(
            _parse_inputs(args.inputs),
            Path(args.out),
            val_fraction=args.val_fraction,
            val_works=args.val_work or (),
            max_record_letters=args.max_record_letters,
            min_greek=args.min_greek,
            skip_bad=args.skip_bad,
            workers=args.workers,
            overwrite=args.overwrite,
            progress=True if sys.stderr.isatty() else "lines",
            epidoc=EpiDocOptions(
                supplied_lost=args.supplied_lost, expansions=args.expansions, choice=args.choice
            ),
            inscription_dev_digits=args.inscription_dev_digit or (),
            parallels_index=not args.no_parallels_index,
        )
    except ConvertError as err:
        print(f"stoicheia convert: error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # the parallels index (IndexBuildError): one line too
        if type(err).__name__ != "IndexBuildError":
            raise
        print(f"stoicheia convert: error: {err}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - t0
    for tier, st in summary["tiers"].items():
        kept = st["records_kept"]
        letters = st["letters"]
        dropped = st["records_dropped"]
        leiden = st.get("leiden", {})
        print(
            f"{tier}: {st['files']} files, "
            f"records train {kept.get('train', 0):,} / val {kept.get('val', 0):,}, "
            f"letters train {letters.get('train', 0):,} / val {letters.get('val', 0):,}, "
            f"dropped {dict(dropped) or 0}, files skipped {len(st['files_skipped'])}, "
            f"files without a kept record {_without(st)}, "
            f"Leiden notation repaired {leiden.get('leiden_repaired', 0):,}, "
            f"letter-unigram entropy {st['letter_unigram_entropy_bits']:.3f} bits"
        )
        per_input = st.get("per_input") or {}
        if len(per_input) > 1 or any(v.get("supplements") for v in per_input.values()):
            for given, c in per_input.items():
                print(f"  {given}: {_input_line(c)}")
        for path, why in st["files_skipped"].items():
            print(f"  skipped {path}: {why.splitlines()[0]}")
        if st.get("real_lacuna_slots") or leiden.get("supplied_letters"):
            slots = st.get("real_lacuna_slots", {})
            print(
                f"  real-lacuna slots train {slots.get('train', 0):,} "
                f"/ val {slots.get('val', 0):,} "
                f"({leiden.get('lacunae_unknown_width', 0):,} of unknown width), "
                f"supplied letters {leiden.get('supplied_letters', 0):,}"
            )
        without = st["files_without_records"]
        for path in without[:10]:
            print(f"  no record kept from {path}")
        if len(without) > 10:
            print(
                f"  ... and {len(without) - 10} more files without a kept record "
                "(listed in stats.json)"
            )
        dangling = [p for p in st["files_not_read"] if os.path.islink(p) and not os.path.exists(p)]
        for path in dangling:
            print(
                f"  dangling link {path} -> {os.readlink(path)} "
                "(its target does not exist): not read"
            )
        others = len(st["files_not_read"]) - len(dangling)
        if others:
            print(
                f"  {others} {'file' if others == 1 else 'files'} in the directories "
                f"{'is not a source and was' if others == 1 else 'are not sources and were'} "
                "not read (listed in stats.json)"
            )
    dev = summary.get("inscription_dev", {})
    if dev.get("works"):
        print(
            f"inscription dev set (dev digit {', '.join(map(str, dev['digits']))}): "
            f"{len(dev['works']):,} inscriptions, "
            f"{sum(w['records'] for w in dev['works']):,} records, "
            f"{sum(w['letters'] for w in dev['works']):,} letters, "
            "held out of train and val (TIER/inscription_dev; listed in stats.json)"
        )
    for warning in summary.get("warnings", []):
        print(f"warning: {warning}")
    if not args.no_parallels_index:
        print(f"parallels index of the train records in {Path(args.out) / 'parallels'}")
    print(f"wrote {args.out} (stats in {Path(args.out) / 'stats.json'}) in {seconds:.1f} s")
    return 0


def _input_line(c: dict) -> str:
    """One input's figures: ``480 files (0 refused, 0 without a record), 631 records, 75,052
    letters, 2,301 supplements, 5,120 real-lacuna slots`` (refusals by reason)."""
    refused = {k.split(":", 1)[1]: v for k, v in c.items() if k.startswith("refused:")}
    why = f": {', '.join(f'{k} {v}' for k, v in refused.items())}" if refused else ""
    return (
        f"{c.get('files', 0):,} files ({c.get('refused', 0):,} refused{why}, "
        f"{c.get('without_record', 0):,} without a kept record), {c.get('records', 0):,} records, "
        f"{c.get('letters', 0):,} letters, {c.get('supplements', 0):,} supplements "
        '(<supplied reason="lost">), '
        f"{c.get('lacuna_slots', 0):,} real-lacuna slots"
    )


def _without(st: dict) -> str:
    """``N`` files without a kept record, with why (``389 (edition not in Greek 300, ...)``)
    when ``stats.json`` says (older ones do not)."""
    n = len(st["files_without_records"])
    why = st.get("files_without_records_why") or {}
    return f"{n} ({', '.join(f'{k} {v}' for k, v in why.items())})" if n and why else str(n)


def _parse_inputs(items: list[str]) -> dict[str, list[Path]]:
    """The ``TIER=PATH`` arguments as ``{tier: [paths]}``; an item of another form, or two inputs
    of which one holds the other, print one line and raise ``SystemExit(2)``."""
    inputs: dict[str, list[Path]] = {}
    for item in items:
        tier, sep, path = item.partition("=")
        if not sep or not tier or not path:
            print(
                f"stoicheia convert: error: input {item!r} must look like TIER=PATH, "
                "e.g. gold=../shared/corpus/perseus",
                file=sys.stderr,
            )
            raise SystemExit(2)
        inputs.setdefault(tier, []).append(Path(path))
    given = [(tier, p, p.resolve()) for tier, paths in inputs.items() for p in paths]
    for i, (tier_a, a, ra) in enumerate(given):
        for tier_b, b, rb in given[i + 1 :]:
            if ra == rb or ra in rb.parents or rb in ra.parents:
                # the same text would be read twice (and could land in train and val at once)
                print(
                    f"stoicheia convert: error: inputs {tier_a}={a} and {tier_b}={b} overlap "
                    "(the same files would be read twice); give each source once",
                    file=sys.stderr,
                )
                raise SystemExit(2)
    return inputs
