"""``stoicheia parallels TEXT``: the corpus passages sharing the longest stretches with a text,
best first, as PHI's search would list them (:mod:`stoicheia.inference.parallels.passages`).

``stoicheia parallels --build``: the index the shipped model fuses in, which cannot ship
(:mod:`stoicheia.inference.shipped`): the corpus converted as the shipped model's shards were
(``stoicheia convert``, its settings in the bundle's ``provenance.json``) into the checkout's
``data/shards`` and indexed, once; shards already there (the demo's) are indexed as they are."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from stoicheia.cli_args import int_in
from stoicheia.commands.common import fail, stdin_text

#: what :func:`~stoicheia.text.encode.encode_text` drops that a user may have meant as text
LEFT_OUT = {
    "latin": "Latin letter(s)",
    "latin_in_word": "Latin letter(s) inside Greek words",
    "other": "letter(s) of another script",
    "digit": "digit(s)",
    "control": "control character(s)",
}

#: where ``stoicheia convert --out data/shards`` puts the index, in the checkout of the package
DEFAULT_INDEX = "data/shards/parallels"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``parallels`` on the ``stoicheia`` sub-command parsers."""
    p = subparsers.add_parser(
        "parallels", help="corpus passages sharing the longest stretches with a Greek text"
    )
    p.add_argument(
        "text", metavar="TEXT", nargs="?", help="Greek text (Leiden allowed); '-' reads stdin"
    )
    p.add_argument(
        "--build",
        action="store_true",
        help="build the index restore and serve use with the shipped model: convert the corpus "
        "(--corpus) as its shards were converted into data/shards of the checkout (an installed "
        "package: ~/.cache/stoicheia/data/shards) and index it, once (CPU minutes)",
    )
    p.add_argument(
        "--corpus",
        metavar="DIR",
        help="with --build: the corpus folder (default $STOICHEIA_CORPUS, else ../shared/corpus "
        "beside the checkout)",
    )
    p.add_argument(
        "--workers",
        type=int_in(1, meaning=" reader processes"),
        default=min(4, os.cpu_count() or 1),
        help="with --build: parallel reader processes of the conversion",
    )
    p.add_argument(
        "--index",
        "--parallels",
        dest="index",
        metavar="INDEX",
        help="parallels index folder, the shards folder holding it, or a checkpoint or run "
        "folder (its fusion.json's index, else its run's shards' index; default: "
        f"{DEFAULT_INDEX} of the checkout stoicheia runs from, wherever the command is run)",
    )
    p.add_argument(
        "--top", type=int_in(1, meaning=" passages"), default=10, help="passages listed (10)"
    )
    p.add_argument(
        "--min-letters",
        type=int_in(2, meaning=" letters"),
        default=8,
        help="shortest shared stretch listed, in letters (8)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def index_folder(given: str | None) -> Path:
    """The index folder ``stoicheia parallels`` reads: ``given`` (``--index``: an index or
    shards folder as typed; a checkpoint or run folder: its own index,
    :func:`~stoicheia.inference.run_paths.run_index`), else :data:`DEFAULT_INDEX` in the
    checkout the package runs from (:func:`~stoicheia.inference.run_paths.checkout_root`),
    never relative to the current folder; an installed package without a checkout: the user
    cache's, where ``--build`` puts it (:func:`~stoicheia.inference.shipped.cache_root`)."""
    from stoicheia.inference.run_paths import run_index
    from stoicheia.inference.shipped import cache_root

    if given:
        p = Path(given)
        if (p / "manifest.json").is_file() or (p / "parallels").is_dir():
            return p
        run = run_index(p) if p.suffix == ".pt" or p.is_dir() else None
        return run if run is not None else p
    return cache_root() / DEFAULT_INDEX


def run(args: argparse.Namespace) -> int:
    """List the passages; 0, or 2 after one line on stderr (no index, no Greek letter)."""
    from stoicheia.inference.parallels.index import IndexError_, open_index
    from stoicheia.inference.parallels.passages import shared_passages
    from stoicheia.text.encode import encode_text

    if args.build:
        if args.text is not None or args.index:
            return fail("parallels", "--build takes no TEXT nor --index; give it alone")
        return build(args)
    if args.corpus:
        return fail("parallels", "--corpus is read with --build; give --build with it")
    if args.text is None:
        return fail(
            "parallels",
            "the following arguments are required: TEXT (a Greek text, '-' for stdin), or "
            "--build to build the index",
        )
    text = stdin_text("parallels") if args.text == "-" else args.text
    if text is None:  # not UTF-8: said in one line
        return 2
    folder = index_folder(args.index)
    try:
        index = open_index(str(folder))
    except IndexError_ as err:
        return fail("parallels", str(err) + ("" if args.index else "; or give --index DIR"))
    encoded = encode_text(text)
    planes = encoded.planes
    if planes.n_letters() == 0:
        from stoicheia.inference.restore.foreign_input import quoted

        return fail("parallels", f"no Greek letter in {quoted(text)}: give Greek text")
    left_out = {k: encoded.dropped[k] for k in LEFT_OUT if encoded.dropped.get(k)}
    if left_out:  # never unsaid: what of the text the search did not see
        said = ", ".join(f"{n} {LEFT_OUT[k]}" for k, n in left_out.items())
        print(f"stoicheia parallels: left out, not Greek: {said}", file=sys.stderr)
    letters = planes.chars.astype("int64")
    letters[planes.lacuna > 0] = 24
    found = shared_passages(index, letters, min_letters=args.min_letters, top=args.top)
    rows = [m.to_json(index) for m in found]
    if args.json:
        out = {"text": text, "left_out": left_out, "passages": rows}
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return 0
    if not rows:
        print(
            f"no passage of the index shares {args.min_letters} letters or more with the text "
            "(a formula the corpus lacks cannot be found; try --min-letters lower)"
        )
        return 0
    for k, r in enumerate(rows, 1):
        where = r["label"] + (f"  {r['url']}" if r["url"] else "")
        print(f"{k}. {where}  [{r['tier']}]  longest {r['longest']} letters, {r['shared']} shared")
        print(f"   {r['passage']}")
    return 0


def build(args: argparse.Namespace) -> int:
    """``--build``: convert the corpus as the shipped model's shards were converted (unless
    shards are there already) and index it; 0, or 2 after one line on stderr."""
    from stoicheia.commands import convert, index
    from stoicheia.data.parallels_layout import shards_provenance, short
    from stoicheia.inference.export.shipping import convert_args
    from stoicheia.inference.shipped import SHARDS, cache_root, default_corpus, read_provenance

    shards = cache_root() / SHARDS
    folder = shards / "parallels"
    try:
        prov = read_provenance()
    except (OSError, ValueError) as err:
        return fail("parallels", f"--build: the shipped model's provenance: {err}")
    if (folder / "manifest.json").is_file():
        print(f"the parallels index is built already: {folder}; restore and serve use it")
        return 0
    if (shards / "stats.json").is_file():
        print(f"{shards} holds converted shards (the demo's, or an earlier --build): indexing them")
        code = index.run(argparse.Namespace(shards=str(shards), out=None))
    else:
        corpus = Path(args.corpus) if args.corpus else default_corpus()
        spec = prov.get("convert") or {}
        if not spec.get("inputs"):
            return fail(
                "parallels",
                "--build: the shipped model's provenance.json records no conversion; ship it "
                "again with `stoicheia export RUN --ship`",
            )
        try:
            argv = convert_args(spec, corpus, shards, args.workers)
        except FileNotFoundError as err:
            return fail("parallels", f"--build: {err}")
        print(
            f"converting {corpus} into {shards} as the shipped model's shards were converted, "
            "then indexing it (CPU minutes; once)"
        )
        parser = argparse.ArgumentParser(prog="stoicheia")
        convert.add_parser(parser.add_subparsers())
        code = convert.run(parser.parse_args(["convert", *argv]))
    if code != 0:
        return code
    trained = (prov.get("shards") or {}).get("fingerprint")
    built = shards_provenance(shards)
    here = built["fingerprint"]
    if (
        trained
        and here != trained
        and built["train_letters"] == prov["shards"].get("train_letters")
    ):
        print(
            f"note: the shards in {shards} hold as many training letters per tier as the shipped "
            f"model's ({sum(built['train_letters'].values()):,}) in another order (fingerprint "
            f"{short(here)}, not {short(trained)}: the conversion's reader processes finish in "
            "their own order)"
        )
    elif trained and here != trained:
        print(
            f"note: the shards in {shards} ({short(here)}) are not those the shipped model was "
            f"trained on ({short(trained)}): another corpus or other settings; the parallels "
            "are those of this corpus"
        )
    print(f"restore and serve with the shipped model now fuse in the parallels of {folder}")
    return 0
