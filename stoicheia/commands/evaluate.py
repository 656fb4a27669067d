"""``stoicheia evaluate CHECKPOINT --shards ...``: held-out figures of a trained model, per tier and
per work, beside a letter n-gram (:mod:`stoicheia.inference.evaluate`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from stoicheia.cli_args import float_in, int_in, out_dir_problem
from stoicheia.commands.common import fail, load, model_args, ngram_args


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``evaluate`` on the ``stoicheia`` sub-command parsers."""
    p = subparsers.add_parser(
        "evaluate", help="held-out figures of a trained model, per tier and per work"
    )
    model_args(p)
    p.add_argument(
        "--shards",
        nargs="+",
        required=True,
        metavar="DIR_OR_FILE",
        help="a shard folder (output of convert; its val split), or .txt/.jsonl/.xml/.conllu "
        "files or folders",
    )
    p.add_argument(
        "--split",
        choices=("val", "train", "inscription_dev"),
        help="split of the shards (default val)",
    )
    p.add_argument("--tiers", nargs="+", help="tiers of the shards to evaluate (default all)")
    p.add_argument(
        "--max-records",
        type=int_in(1, meaning=" records per tier"),
        help="at most this many records per tier",
    )
    p.add_argument(
        "--train-shards",
        help="shards whose train split trains the n-gram baseline (default --shards, else the "
        "run's data.shard_root)",
    )
    ngram_args(p)
    p.add_argument(
        "--seq-len",
        type=int_in(
            32,
            65_536,
            meaning=" slots, like data.seq_len (the attention mask of one row takes T x T bytes)",
        ),
        help="row length in slots (default: the run's data.seq_len)",
    )
    p.add_argument(
        "--rows",
        type=int_in(1, meaning=" rows"),
        help="rows per forward pass (default: the run's data.eval_rows)",
    )
    p.add_argument(
        "--t",
        type=float_in(0, 1, lo_open=True, meaning=" (the share of letters masked, default 0.30)"),
        help="reference masking rate (default: the run's data.eval_t, 0.30)",
    )
    p.add_argument(
        "--seed",
        type=int_in(0, 2**63 - 1, meaning=" (a noise seed)"),
        help="noise seed (default: the run's data.eval_seed)",
    )
    p.add_argument(
        "--word-rate",
        type=float_in(0, 1, lo_open=True, meaning=" (share of words masked, default 0.15)"),
        default=0.15,
        help="share of words masked in the word pass (default 0.15)",
    )
    p.add_argument(
        "--max-works",
        type=int_in(0, meaning=" works"),
        default=20,
        help="works shown in the table (all are in the JSON)",
    )
    p.add_argument("--out", help="write the figures here as JSON (and the table beside it as .txt)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Evaluate the model of ``args`` and print (and with ``--out`` write) the figures; returns the
    exit status (0, or 2 after one line on stderr)."""
    import json

    from stoicheia.inference.evaluate import (
        EvalOptions,
        evaluate,
        format_table,
        load_records,
        train_ngram,
    )
    from stoicheia.sources import SourceError

    out = Path(args.out) if args.out else None
    if out is not None and out.is_dir():
        return fail(
            "evaluate",
            f"--out {out} is a folder; give a file name for the JSON, e.g. {out / 'eval.json'}",
        )
    problem = out_dir_problem(out.parent) if out is not None else None
    if problem:
        return fail("evaluate", f"--out {out}: {problem}")
    if out is not None:
        if out.suffix == ".txt":
            return fail(
                "evaluate",
                f"--out {out}: the JSON goes to --out and the table beside it as .txt; give a "
                f".json name, e.g. {out.with_suffix('.json')}",
            )
        # never write over an input (or a file inside an input folder) with the results
        written = {out.resolve(), out.with_suffix(".txt").resolve()}
        for given in args.shards:
            src = Path(given).resolve()
            hit = [w for w in written if w == src or src in w.parents]
            if hit:
                return fail(
                    "evaluate",
                    f"--out {out} would write {hit[0].name} over the input {given}; give an "
                    "--out outside the inputs",
                )
    if args.train_shards and not Path(args.train_shards).is_dir():
        return fail(
            "evaluate",
            f"--train-shards {args.train_shards!r}: no such folder; give the output folder of "
            "`stoicheia convert`",
        )
    try:  # the inputs first: a wrong path fails before the model is loaded
        records, described = load_records(args.shards, args.split, args.tiers, args.max_records)
    except (FileNotFoundError, ValueError, SourceError) as err:
        return fail("evaluate", str(err))
    model = load(args, "evaluate")
    cfg = model.config
    data = cfg.get("data", {})
    if described.get("rejected"):
        print(f"rejected records (not Greek enough or empty): {described['rejected']}")
    not_read = described.get("not_read") or []
    if not_read:
        shown = ", ".join(not_read[:5]) + (
            f" and {len(not_read) - 5} more" if len(not_read) > 5 else ""
        )
        print(
            f"{len(not_read)} files in the folders given are not sources "
            f"(.txt/.jsonl/.xml/.conllu) and were not read: {shown}"
        )
    opt = EvalOptions(
        seq_len=args.seq_len or int(data.get("seq_len", 512)),
        rows=args.rows or int(data.get("eval_rows", 8)),
        t=args.t if args.t is not None else float(data.get("eval_t", 0.30)),
        seed=args.seed if args.seed is not None else int(data.get("eval_seed", 1234)),
        word_rate=args.word_rate,
    )
    ngram = ngram_info = None
    train_root = args.train_shards or (
        args.shards[0] if "shards" in described else data.get("shard_root")
    )
    if args.ngram_order == 0:
        print("n-gram baseline left out (--ngram-order 0)")
    elif train_root and Path(train_root).is_dir():
        try:
            ngram, ngram_info = train_ngram(
                train_root, data.get("tier_weights"), args.ngram_order, args.ngram_letters
            )
            print(
                f"n-gram baseline: order {args.ngram_order}, "
                f"{sum(ngram_info['letters'].values()):,} letters of {train_root}"
            )
        except FileNotFoundError as err:
            print(f"n-gram baseline left out: {err}")
    else:
        print(
            "n-gram baseline left out: the run's shards "
            f"({train_root or 'data.shard_root unset'}) are not here; give --train-shards DIR"
        )
    result = evaluate(model, records, opt, ngram, progress=lambda m: print(m, flush=True))
    result["model"] = {
        "source": model.source,
        "kind": model.kind,
        "step": model.step,
        "run_name": cfg.get("run_name"),
    }
    result["input"] = described
    if ngram_info:
        result["ngram"] = ngram_info
    _add_run_sets(result, model, train_root)
    lines = format_table(result, args.max_works)
    print("\n".join(lines))
    if out is not None:
        from stoicheia.publish import atomic_write

        atomic_write(out, json.dumps(result, indent=2, ensure_ascii=False, default=float) + "\n")
        atomic_write(out.with_suffix(".txt"), "\n".join(format_table(result)) + "\n")
        print(f"wrote {out} and {out.with_suffix('.txt')}")
    return 0


def _add_run_sets(result: dict, model, shard_root: str | None) -> None:
    """Add to ``result`` (and print, as the training console does) the run's own evaluation
    sets (holdout, dev) and its letter-unigram entropy, when its shards are at ``shard_root``."""
    from stoicheia.data.corpus_stats import run_unigram_bits
    from stoicheia.inference.evaluate import is_shard_folder
    from stoicheia.inference.run_sets import run_eval_sets
    from stoicheia.train.console import eval_lines

    if not shard_root or not is_shard_folder(shard_root):
        print(
            "the run's evaluation sets left out: its shards are not here; give --train-shards DIR"
        )
        return
    result["unigram_entropy_bits"] = run_unigram_bits(model.config, shard_root)
    try:
        sets = run_eval_sets(model, shard_root)
    except (FileNotFoundError, ValueError) as err:
        print(f"the run's evaluation sets left out: {err}")
        return
    result["run_eval_sets"] = {"step": model.step, "shards": str(shard_root), "sets": sets}
    print("the run's evaluation sets, as the training console prints them:")
    print("\n".join(eval_lines(model.step or 0, sets, result["unigram_entropy_bits"])))
