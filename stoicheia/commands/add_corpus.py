"""``stoicheia add-corpus DIR --name NAME --run RUN``: a user's own EpiDoc corpus added as a tier
of the run's shards, deduplicated against them, indexed for parallels and counted in the run's
n-gram, without training (:func:`stoicheia.data.add_tier.add_tier`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from stoicheia.cli_args import int_in
from stoicheia.commands.common import fail


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``add-corpus`` on the ``stoicheia`` sub-command parsers."""
    p = subparsers.add_parser(
        "add-corpus",
        help="add a folder of EpiDoc files as a new tier: twins of texts already there left out, "
        "the parallels index rebuilt and the run's n-gram extended, no training",
    )
    p.add_argument("folder", metavar="DIR", help="the folder of the corpus's EpiDoc files")
    p.add_argument(
        "--name", required=True, help="the new tier's name (letters, digits, '_', '-'; e.g. iip)"
    )
    p.add_argument(
        "--run",
        help="the run folder or checkpoint: its shards (data.shard_root) get the tier, its "
        "ngram.npz is extended with the tier's train letters",
    )
    p.add_argument(
        "--shards",
        help="the converted corpus to add to (default: the run's data.shard_root)",
    )
    p.add_argument(
        "--workers",
        type=int_in(1, meaning=" reader processes"),
        default=1,
        help="parallel reader processes (default 1)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Add the corpus and print what was read, left out and built; returns 0, or 2 after one line
    on stderr."""
    from stoicheia.data.add_tier import AddTierError, add_tier
    from stoicheia.data.parallels_index import IndexBuildError

    if not args.run and not args.shards:
        return fail("add-corpus", "give --run RUN (its shards and n-gram) or --shards SHARDS_DIR")
    shards, ngram_file = _targets(args)
    if isinstance(shards, str):  # a message
        return fail("add-corpus", shards)
    progress = True if sys.stderr.isatty() else "lines"
    try:
        done = add_tier(
            shards,
            args.name,
            Path(args.folder),
            workers=args.workers,
            progress=progress,
            say=print,
        )
    except AddTierError as err:
        return fail("add-corpus", str(err))
    except IndexBuildError as err:  # raised after the tier is in place: its index is not
        return fail(
            "add-corpus",
            f"{err}; the tier {args.name} is added to {shards}, but the parallels index is not "
            f"rebuilt nor the n-gram extended: run `stoicheia index {shards}`, then "
            f"`stoicheia benchmark RUN --save-fusion` to write the n-gram with it",
        )
    st = done["tier"]
    kept, letters = st["records_kept"], st["letters"]
    dev = done["dev_works"]
    print(
        f"{args.name}: {st['files']} files, {len(st['files_skipped'])} refused, "
        f"{len(st['files_without_records'])} without a kept record; records train "
        f"{kept.get('train', 0):,} / val {kept.get('val', 0):,} / dev "
        f"{kept.get('inscription_dev', 0):,}; letters train {letters.get('train', 0):,}; "
        f"dropped {dict(st['records_dropped']) or 0}"
    )
    for path, why in st["files_skipped"].items():
        print(f"  refused {path}: {why.splitlines()[0]}")
    twins = done["twins_of_known"]
    shown = "; ".join(f"{t['work']} ~ {', '.join(t['twin_of'])}" for t in twins[:3])
    print(
        f"twins: {len(twins)} text{'' if len(twins) == 1 else 's'} of {args.name} already in "
        f"the shards under another number, not added"
        + (f" ({shown}{' ...' if len(twins) > 3 else ''}; all in stats.json)" if twins else "")
    )
    print(
        f"dev inscriptions of {args.name} (dev digit "
        f"{', '.join(map(str, _digits(shards))) or 'none'}): {len(dev):,}, held out of the index "
        f"and the n-gram ({shards}/{args.name}/inscription_dev)"
    )
    m = done["index"]
    secs = done["seconds"]
    print(
        f"parallels index rebuilt: {m['letters']:,} letters of {m['records']:,} train records, "
        f"{m['per_tier'][args.name]['letters']:,} of them {args.name}'s, in "
        f"{secs['index']:.1f} s ({shards}/parallels)"
    )
    if ngram_file is not None:
        t0 = time.perf_counter()
        try:
            n = _extend_ngram(ngram_file, shards, args.name)
        except ValueError as err:  # an unreadable ngram.npz, or no train letter to count
            return fail(
                "add-corpus",
                f"{err}; the tier is added and indexed, the n-gram is not extended",
            )
        print(
            f"n-gram extended: {n:,} train letters of {args.name} counted into {ngram_file} "
            f"({time.perf_counter() - t0:.1f} s; the network is not retrained)"
        )
    elif args.run:
        print(
            "no ngram.npz beside the run: nothing to extend (`stoicheia benchmark RUN "
            "--save-fusion` writes one, with the added tier counted)"
        )
    return 0


def _digits(shards: Path) -> list[int]:
    try:
        stats = json.loads((shards / "stats.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return list((stats.get("inscription_dev") or {}).get("digits") or [])


def _targets(args: argparse.Namespace) -> tuple[Path | str, Path | None]:
    """The shards folder and the run's ``ngram.npz`` (``None`` without one), or a message."""
    from stoicheia.inference.restore.fusion_file import beside
    from stoicheia.inference.run_paths import checkpoint_folder, run_shards

    ngram_file = None
    config: dict = {}
    if args.run:
        here = checkpoint_folder(args.run)
        if here is None or not Path(args.run).exists():
            return f"--run {args.run}: no such run folder or checkpoint", None
        try:
            config = json.loads((here / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            if not args.shards:
                return (
                    f"--run {args.run}: no readable config.json in {here} to name its shards; "
                    "give --shards SHARDS_DIR"
                ), None
        found = beside(args.run)
        ngram_file = found if found is not None and found.is_file() else None
    if args.shards:
        shards = Path(args.shards)
    else:
        root, found_shards = run_shards(config, args.run)
        if found_shards is None:
            return (
                f"the run's shards ({root or 'data.shard_root unset'}) are not found from "
                f"{args.run}; give --shards SHARDS_DIR"
            ), None
        shards = found_shards
    return shards, ngram_file


def _extend_ngram(path: Path, shards: Path, tier: str) -> int:
    """Count the train letters of ``tier`` into the n-gram file ``path`` (its weight and the rest
    of its facts kept; ``trained_on.letters`` and ``added_tiers`` record the tier); returns the
    letters counted."""
    from stoicheia.inference.evaluate import iter_train_chars
    from stoicheia.inference.ngram import load_ngram, save_ngram

    model, meta = load_ngram(path)
    before = model.letters
    model.extend(iter_train_chars(shards, tier))
    n = model.letters - before
    trained = dict(meta.get("trained_on") or {})
    trained["letters"] = {**(trained.get("letters") or {}), tier: n}
    meta["trained_on"] = trained
    meta["added_tiers"] = {**(meta.get("added_tiers") or {}), tier: n}
    save_ngram(model, path, **meta)
    return n
