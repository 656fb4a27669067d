"""Command line: ``stoicheia convert`` (sources to MDS shards), ``stoicheia status`` (of a run).

``convert`` turns source files into MDS shards; ``status`` tells where a training run stands,
from the files in its run folder.

Examples::

    stoicheia convert --out data/shards gold=../shared/corpus/perseus silver=../shared/corpus/ud
    stoicheia status checkpoints/stoicheia-demo

Exit status 0 on success, 2 on a usage or input error (the message names the file and fix).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def _parse_inputs(items: list[str]) -> dict[str, list[Path]]:
    inputs: dict[str, list[Path]] = {}
    for item in items:
        tier, sep, path = item.partition("=")
        if not sep or not tier or not path:
            print(f"stoicheia convert: error: input {item!r} must look like TIER=PATH, e.g. gold=../shared/corpus/perseus", file=sys.stderr)
            raise SystemExit(2)
        inputs.setdefault(tier, []).append(Path(path))
    return inputs


def cmd_convert(args: argparse.Namespace) -> int:
    from stoicheia.data.shards import ConvertError, convert
    from stoicheia.sources import EpiDocOptions

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
            progress=sys.stderr.isatty(),
            epidoc=EpiDocOptions(supplied_lost=args.supplied_lost, expansions=args.expansions, choice=args.choice),
        )
    except ConvertError as err:
        print(f"stoicheia convert: error: {err}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - t0
    for tier, st in summary["tiers"].items():
        kept = st["records_kept"]
        letters = st["letters"]
        dropped = st["records_dropped"]
        print(
            f"{tier}: {st['files']} files, records train {kept.get('train', 0):,} / val {kept.get('val', 0):,}, "
            f"letters train {letters.get('train', 0):,} / val {letters.get('val', 0):,}, "
            f"dropped {dict(dropped) or 0}, files skipped {len(st['files_skipped'])}, "
            f"letter-unigram entropy {st['letter_unigram_entropy_bits']:.3f} bits"
        )
        for path, why in st["files_skipped"].items():
            print(f"  skipped {path}: {why.splitlines()[0]}")
        leiden = st.get("leiden", {})
        if st.get("real_lacuna_slots") or leiden.get("supplied_letters"):
            slots = st.get("real_lacuna_slots", {})
            print(
                f"  real-lacuna slots train {slots.get('train', 0):,} / val {slots.get('val', 0):,} "
                f"({leiden.get('lacunae_unknown_width', 0):,} of unknown width), "
                f"supplied letters {leiden.get('supplied_letters', 0):,}"
            )
        without = st["files_without_records"]
        for path in without[:10]:
            print(f"  no record kept from {path}")
        if len(without) > 10:
            print(f"  ... and {len(without) - 10} more files without a kept record (listed in stats.json)")
        if st["files_not_read"]:
            print(f"  {len(st['files_not_read'])} files in the directories are not sources and were not read (listed in stats.json)")
    for warning in summary.get("warnings", []):
        print(f"warning: {warning}")
    print(f"wrote {args.out} (stats in {Path(args.out) / 'stats.json'}) in {seconds:.1f} s")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from stoicheia.train.status import format_status, run_status

    try:
        facts = run_status(Path(args.run_folder))
    except ValueError as err:
        print(f"stoicheia status: error: {err}", file=sys.stderr)
        return 2
    for line in format_status(facts):
        print(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``stoicheia`` command."""
    parser = argparse.ArgumentParser(prog="stoicheia", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("convert", help="source files (Perseus TEI, EpiDoc, CoNLL-U, .txt, .jsonl) to MDS shards")
    p.add_argument("inputs", nargs="+", metavar="TIER=PATH", help="a tier name and a file or directory; repeatable")
    p.add_argument("--out", required=True, help="output directory (gold/train, gold/val, ..., stats.json)")
    p.add_argument("--val-fraction", type=float, default=0.005, help="share of records held out by id hash (default 0.005)")
    p.add_argument("--val-work", action="append", metavar="WORK", help="send a whole work to val, e.g. Homer/hom.od_gk.xml; repeatable")
    p.add_argument("--max-record-letters", type=int, default=2048, help="longer records are stored in word-aligned parts")
    p.add_argument("--min-greek", type=float, default=0.95, help="reject records with a smaller share of Greek letters")
    p.add_argument("--skip-bad", action="store_true", help="skip unreadable files (counted in stats.json) instead of stopping")
    p.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1), help="parallel reader processes")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    p.add_argument("--supplied-lost", choices=("text", "lacuna"), default="text",
                   help="EpiDoc <supplied reason='lost'>: keep the editor's letters (text) or make them a real lacuna of their length")
    p.add_argument("--expansions", choices=("expanded", "abbreviated"), default="expanded",
                   help="EpiDoc <expan>: the expanded word or the abbreviation as written")
    p.add_argument("--choice", choices=("regularised", "original"), default="regularised",
                   help="EpiDoc <choice>: <reg>/<corr> or <orig>/<sic>")
    p.set_defaults(func=cmd_convert)
    p = sub.add_parser("status", help="where a training run stands, from the files in its run folder")
    p.add_argument("run_folder", metavar="RUN_FOLDER", help="the run's train.save_folder, e.g. checkpoints/stoicheia-demo")
    p.set_defaults(func=cmd_status)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
