"""``stoicheia parallels TEXT``: the corpus passages sharing the longest stretches with a text,
best first, as PHI's search would list them (:mod:`stoicheia.inference.parallels.passages`)."""

from __future__ import annotations

import argparse
import json
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
    p.add_argument("text", metavar="TEXT", help="Greek text (Leiden allowed); '-' reads stdin")
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
    never relative to the current folder; an installed package without a checkout: the
    current folder's."""
    from stoicheia.inference.run_paths import checkout_root, run_index

    if given:
        p = Path(given)
        if (p / "manifest.json").is_file() or (p / "parallels").is_dir():
            return p
        run = run_index(p) if p.suffix == ".pt" or p.is_dir() else None
        return run if run is not None else p
    root = checkout_root()
    return (root if root is not None else Path()) / DEFAULT_INDEX


def run(args: argparse.Namespace) -> int:
    """List the passages; 0, or 2 after one line on stderr (no index, no Greek letter)."""
    from stoicheia.inference.parallels.index import IndexError_, open_index
    from stoicheia.inference.parallels.passages import shared_passages
    from stoicheia.text.encode import encode_text

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
        return fail("parallels", f"no Greek letter in {text[:40]!r}: give Greek text")
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
