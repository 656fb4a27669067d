"""``stoicheia export CHECKPOINT OUT_DIR``: a Hugging Face model folder (safetensors, config,
code, model card; :mod:`stoicheia.inference.export`); ``stoicheia export RUN_FOLDER --ship``: the
shipped base model (``stoicheia/base_model``, :mod:`stoicheia.commands.ship`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stoicheia.cli_args import out_dir_problem
from stoicheia.commands.common import fail, load, model_args


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``export`` on the ``stoicheia`` sub-command parsers."""
    p = subparsers.add_parser(
        "export", help="write a Hugging Face model folder (safetensors, config, code, model card)"
    )
    model_args(p, precision=False)  # the weights are exported in fp32 as trained
    p.add_argument(
        "out_dir",
        metavar="OUT_DIR",
        nargs="?",
        help="folder to write (must be empty or new; with --ship: default stoicheia/base_model)",
    )
    p.add_argument("--overwrite", action="store_true", help="write into a non-empty folder")
    p.add_argument(
        "--shards",
        help="the shards the model was trained on (default: the run's data.shard_root), for the "
        "model card",
    )
    p.add_argument(
        "--ship",
        action="store_true",
        help="write the model restore and serve use when no CHECKPOINT is given "
        "(stoicheia/base_model: weights, n-gram, fusion weights, provenance.json) from a "
        "finished, benchmarked run folder, and its figures into docs/model-card.md",
    )
    p.add_argument(
        "--weights-dtype",
        choices=("float32", "float16", "bfloat16"),
        help="dtype of the exported weights (default float32; with --ship float16, half the "
        "bytes, the restorations checked against the run's)",
    )
    p.add_argument(
        "--benchmark",
        metavar="DIR",
        help="with --ship: the run's `stoicheia benchmark` folder (default benchmark/RUN_NAME "
        "found from the run folder), quoted in the model card",
    )
    p.set_defaults(func=run, device="cpu")


def run(args: argparse.Namespace) -> int:
    """Export the model of ``args.checkpoint`` to ``args.out_dir``; returns the exit status (0, or 2
    after one line on stderr)."""
    from stoicheia.inference.export.folder import export_file_names, export_model
    from stoicheia.inference.export.training_data import describe_training_data, find_shard_root

    if args.ship:
        from stoicheia.commands.ship import run_ship

        return run_ship(args)
    if args.benchmark is not None:
        return fail("export", "--benchmark is read with --ship; give --ship, or leave it out")
    if args.out_dir is None:
        return fail("export", "give OUT_DIR, the folder to write (or --ship for the shipped model)")
    out_dir = Path(args.out_dir)  # checked before the checkpoint is read
    problem = out_dir_problem(out_dir)
    if problem:
        return fail("export", f"OUT_DIR {problem}")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not args.overwrite:
        return fail(
            "export",
            f"OUT_DIR {out_dir} exists and is not empty; choose another folder or pass --overwrite",
        )
    foreign = (
        sorted(e.name for e in out_dir.iterdir() if e.name not in export_file_names())
        if out_dir.is_dir()
        else []
    )
    if foreign:
        return fail(
            "export",
            f"OUT_DIR {out_dir} holds files an export does not write ({', '.join(foreign[:6])}"
            f"{' ...' if len(foreign) > 6 else ''}): --overwrite would delete them (is it a run "
            "folder?); choose another OUT_DIR",
        )
    if args.shards and not Path(args.shards).is_dir():
        return fail(
            "export",
            f"--shards {args.shards!r}: no such folder; give the output folder of "
            "`stoicheia convert`",
        )
    model = load(args, "export")
    if model.kind == "export":
        print(
            f"stoicheia export: error: {args.checkpoint} is an export already; give a training "
            "checkpoint",
            file=sys.stderr,
        )
        return 2
    held = held_out(model, args.checkpoint)
    root = Path(args.shards) if args.shards else find_shard_root(model.config, args.checkpoint)
    if root is None:
        print(
            "note: the run's shards (data.shard_root) were not found; the model card lists no "
            "corpus facts (give --shards DIR)"
        )
    data = describe_training_data(model.config, root)
    try:
        out = export_model(
            model,
            out_dir,
            held_out=held,
            training_data=data,
            overwrite=args.overwrite,
            weights_dtype=args.weights_dtype or "float32",
        )
    except FileExistsError as err:
        return fail("export", str(err))
    except ValueError as err:  # a fusion.json beside the checkpoint that is not one
        return fail("export", f"{err} (mend or remove it, then export again)")
    except OSError as err:  # disk full, permissions changed meanwhile
        return fail(
            "export",
            f"cannot write {err.filename or out_dir} ({err.strerror}); free space or choose "
            "another OUT_DIR",
        )
    print(
        f"wrote {out}: model.safetensors, config.json, the model code, README.md"
        + {
            (True, True): ", ngram.npz, fusion.json (restore fuses them in)",
            (True, False): ", ngram.npz (restore fuses it in)",
            (False, True): ", fusion.json (restore fuses the parallels in at its weight)",
            (False, False): "",
        }[(out / "ngram.npz").is_file(), (out / "fusion.json").is_file()]
        + f" (step {model.step}"
        + (
            f", held-out figures of step {held['step']}"
            if held
            else ", no held-out figures found beside the checkpoint"
        )
        + ")"
    )
    print(
        f"load it with: transformers.AutoModel.from_pretrained({str(out)!r}, "
        "trust_remote_code=True)"
    )
    return 0


def held_out(model, checkpoint: str) -> dict:
    """The run's evaluations at the checkpoint's step, from its run folder (if it has one)."""
    from stoicheia.data.corpus_stats import run_unigram_bits
    from stoicheia.train.run_files import read_history

    folder = Path(checkpoint) if Path(checkpoint).is_dir() else Path(checkpoint).parent
    if "://" in checkpoint or model.step is None:
        return {}
    sets = {
        row["set"]: row["metrics"] for row in read_history(folder) if int(row["step"]) == model.step
    }
    if not sets:
        return {}
    out: dict = {"step": model.step, "sets": sets, "source": str(folder / "evals.jsonl")}
    bits = run_unigram_bits(model.config)
    if bits is not None:
        out["unigram_entropy_bits"] = bits
    return out
