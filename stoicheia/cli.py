"""Command line: ``stoicheia convert``, ``status``, ``evaluate``, ``benchmark``, ``export``, ``report``, ``restore``.

``convert`` turns source files into MDS shards; ``status`` tells where a training run stands,
from the files in its run folder; ``evaluate`` scores a trained model on held-out text;
``benchmark`` measures restoration on the inscription dev set beside an n-gram; ``export``
writes a model folder that ``transformers`` loads; ``report`` draws a run's curves;
``restore`` fills the lacunae of a Greek text (or of EpiDoc files, ``--epidoc``); ``serve`` puts a
restoration page on a local address.

Examples::

    stoicheia convert --out data/shards gold=../shared/corpus/perseus silver=../shared/corpus/ud
    stoicheia status checkpoints/stoicheia-demo
    stoicheia evaluate checkpoints/stoicheia-demo/best.pt --shards data/shards
    stoicheia benchmark checkpoints/stoicheia-demo/best.pt --shards data/shards --out benchmark/stoicheia-demo
    stoicheia export checkpoints/stoicheia-demo/best.pt exported/stoicheia-demo
    stoicheia report checkpoints/stoicheia-demo
    stoicheia serve checkpoints/stoicheia-demo/best.pt        # then open http://127.0.0.1:8000/

Exit status 0 on success, 2 on a usage or input error: one line on stderr that names the
argument or file and the fix (no traceback; the argument checks are in ``stoicheia.cli_args``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from stoicheia.cli_args import (
    OneLineParser,
    device_name,
    float_in,
    fusion_weights,
    int_in,
    out_dir_problem,
)
from stoicheia.text.leiden import MAX_LACUNA_WIDTH


def _fail(command: str, message: str) -> int:
    """Print the one-line error of ``stoicheia COMMAND``; returns the exit status 2."""
    print(f"stoicheia {command}: error: {message}", file=sys.stderr)
    return 2


def _parse_inputs(items: list[str]) -> dict[str, list[Path]]:
    inputs: dict[str, list[Path]] = {}
    for item in items:
        tier, sep, path = item.partition("=")
        if not sep or not tier or not path:
            print(
                f"stoicheia convert: error: input {item!r} must look like TIER=PATH, e.g. gold=../shared/corpus/perseus",
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
                    f"stoicheia convert: error: inputs {tier_a}={a} and {tier_b}={b} overlap (the same files would be "
                    "read twice); give each source once",
                    file=sys.stderr,
                )
                raise SystemExit(2)
    return inputs


def cmd_convert(args: argparse.Namespace) -> int:
    from stoicheia.data.shards import ConvertError, convert
    from stoicheia.sources import EpiDocOptions

    problem = out_dir_problem(args.out)
    if problem:
        return _fail("convert", f"--out {problem}")
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
        )
    except ConvertError as err:
        print(f"stoicheia convert: error: {err}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - t0
    for tier, st in summary["tiers"].items():
        kept = st["records_kept"]
        letters = st["letters"]
        dropped = st["records_dropped"]
        leiden = st.get("leiden", {})
        print(
            f"{tier}: {st['files']} files, records train {kept.get('train', 0):,} / val {kept.get('val', 0):,}, "
            f"letters train {letters.get('train', 0):,} / val {letters.get('val', 0):,}, "
            f"dropped {dict(dropped) or 0}, files skipped {len(st['files_skipped'])}, "
            f"files without a kept record {len(st['files_without_records'])}, "
            f"Leiden notation repaired {leiden.get('leiden_repaired', 0):,}, "
            f"letter-unigram entropy {st['letter_unigram_entropy_bits']:.3f} bits"
        )
        for path, why in st["files_skipped"].items():
            print(f"  skipped {path}: {why.splitlines()[0]}")
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
            print(
                f"  ... and {len(without) - 10} more files without a kept record (listed in stats.json)"
            )
        dangling = [p for p in st["files_not_read"] if os.path.islink(p) and not os.path.exists(p)]
        for path in dangling:
            print(
                f"  dangling link {path} -> {os.readlink(path)} (its target does not exist): not read"
            )
        others = len(st["files_not_read"]) - len(dangling)
        if others:
            print(
                f"  {others} files in the directories are not sources and were not read (listed in stats.json)"
            )
    dev = summary.get("inscription_dev", {})
    if dev.get("works"):
        print(
            f"inscription dev set (numbers ending in {', '.join(map(str, dev['digits']))}): {len(dev['works']):,} inscriptions, "
            f"{sum(w['records'] for w in dev['works']):,} records, {sum(w['letters'] for w in dev['works']):,} letters, "
            "held out of train and val (TIER/inscription_dev; listed in stats.json)"
        )
    for warning in summary.get("warnings", []):
        print(f"warning: {warning}")
    print(f"wrote {args.out} (stats in {Path(args.out) / 'stats.json'}) in {seconds:.1f} s")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
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
            f"stoicheia status: error: a file in {args.run_folder} holds a value of the wrong type ({type(err).__name__}: "
            f"{err}); check complete.json, anneal.json, best.json, diverged.json and the last lines of evals.jsonl "
            "(restore them from the checkpoints, or delete the damaged one)",
            file=sys.stderr,
        )
        return 2
    for line in lines:
        print(line)
    return 0


def _load(args: argparse.Namespace, command: str):
    from stoicheia.inference.loading import ModelLoadError, load_model

    try:
        return load_model(args.checkpoint, config=args.config, device=args.device)
    except ModelLoadError as err:
        print(f"stoicheia {command}: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None


def cmd_evaluate(args: argparse.Namespace) -> int:
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
        return _fail(
            "evaluate",
            f"--out {out} is a folder; give a file name for the JSON, e.g. {out / 'eval.json'}",
        )
    problem = out_dir_problem(out.parent) if out is not None else None
    if problem:
        return _fail("evaluate", f"--out {out}: {problem}")
    if out is not None:
        if out.suffix == ".txt":
            return _fail(
                "evaluate",
                f"--out {out}: the JSON goes to --out and the table beside it as .txt; give a .json name, e.g. {out.with_suffix('.json')}",
            )
        # never write over an input (or a file inside an input folder) with the results
        written = {out.resolve(), out.with_suffix(".txt").resolve()}
        for given in args.shards:
            src = Path(given).resolve()
            hit = [w for w in written if w == src or src in w.parents]
            if hit:
                return _fail(
                    "evaluate",
                    f"--out {out} would write {hit[0].name} over the input {given}; give an --out outside the inputs",
                )
    if args.train_shards and not Path(args.train_shards).is_dir():
        return _fail(
            "evaluate",
            f"--train-shards {args.train_shards!r}: no such folder; give the output folder of `stoicheia convert`",
        )
    try:  # the inputs first: a wrong path fails before the model is loaded
        records, described = load_records(args.shards, args.split, args.tiers, args.max_records)
    except (FileNotFoundError, ValueError, SourceError) as err:
        return _fail("evaluate", str(err))
    model = _load(args, "evaluate")
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
            f"{len(not_read)} files in the folders given are not sources (.txt/.jsonl/.xml/.conllu) and were not read: {shown}"
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
                f"n-gram baseline: order {args.ngram_order}, {sum(ngram_info['letters'].values()):,} letters of {train_root}"
            )
        except FileNotFoundError as err:
            print(f"n-gram baseline left out: {err}")
    else:
        print(
            f"n-gram baseline left out: the run's shards ({train_root or 'data.shard_root unset'}) are not here; give --train-shards DIR"
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
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            json.dumps(result, indent=2, ensure_ascii=False, default=float) + "\n", encoding="utf-8"
        )
        out.with_suffix(".txt").write_text("\n".join(format_table(result)) + "\n", encoding="utf-8")
        print(f"wrote {out} and {out.with_suffix('.txt')}")
    return 0


def _add_run_sets(result: dict, model, shard_root: str | None) -> None:
    """Add to ``result`` (and print, as the training console does) the run's own evaluation
    sets (holdout, dev) and its letter-unigram entropy, when its shards are at ``shard_root``."""
    from stoicheia.inference.evaluate import is_shard_folder
    from stoicheia.inference.run_sets import run_eval_sets, run_unigram_bits
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


def cmd_benchmark(args: argparse.Namespace) -> int:
    from stoicheia.inference.benchmark import benchmark
    from stoicheia.inference.benchmark_protocols import BenchmarkError
    from stoicheia.inference.benchmark_report import format_table, write_outputs
    from stoicheia.inference.evaluate import train_ngram

    problem = out_dir_problem(args.out)
    if problem:
        return _fail("benchmark", f"--out {problem}")
    if args.shards and not Path(args.shards).is_dir():
        return _fail(
            "benchmark",
            f"--shards {args.shards!r}: no such folder; give the output folder of `stoicheia convert`",
        )
    model = _load(args, "benchmark")
    data = model.config.get("data", {})
    shards = args.shards or data.get("shard_root")
    if not shards or not Path(shards).is_dir():
        return _fail(
            "benchmark",
            f"the run's shards ({shards or 'data.shard_root unset'}) are not here; give --shards DIR",
        )
    ngram = ngram_info = None
    if args.ngram_order:
        try:
            ngram, ngram_info = train_ngram(
                shards, data.get("tier_weights"), args.ngram_order, args.ngram_letters
            )
            print(
                f"n-gram baseline: order {args.ngram_order}, {sum(ngram_info['letters'].values()):,} training letters of {shards}"
            )
        except FileNotFoundError as err:
            return _fail(
                "benchmark", f"n-gram baseline: {err}; give --ngram-order 0 to leave it out"
            )
    from rich.progress import Progress

    with Progress(disable=not sys.stderr.isatty(), transient=True) as bar:
        tasks: dict = {}

        def progress(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done)
            if (
                done == total
            ):  # a line per protocol and decoder, also where no bar is drawn (a log file)
                bar.console.print(f"{label}: {total:,} gaps restored")

        try:
            result = benchmark(
                model,
                shards,
                protocols=args.protocols,
                spans_per_text=args.spans_per_text,
                seed=args.seed,
                max_texts=args.max_texts,
                ngram=ngram,
                unknown_width=args.unknown_width,
                epidoc_root=args.epidoc_root,
                progress=progress,
                fusion_weights=args.fusion_weights,
                bootstrap=args.bootstrap,
            )
        except BenchmarkError as err:
            return _fail("benchmark", str(err))
    result["model"] = {
        "source": model.source,
        "kind": model.kind,
        "step": model.step,
        "run_name": model.config.get("run_name"),
    }
    if ngram_info:
        result["ngram"] = ngram_info
    print("\n".join(format_table(result)))
    paths = write_outputs(result, args.out)
    print(f"wrote {', '.join(map(str, paths))}")
    if args.save_ngram:
        from stoicheia.inference.ngram import save_ngram
        from stoicheia.inference.restore.fusion_file import beside

        target = beside(str(model.source))
        fusion = result.get("fusion") or {}
        if ngram is None or target is None:
            return _fail(
                "benchmark",
                "--save-ngram needs the n-gram (--ngram-order 1..6) and a local checkpoint",
            )
        save_ngram(
            ngram,
            target,
            weight=float(fusion.get("chosen", 0.0)),
            chosen_on=fusion.get("chosen_on", "no fusion weights tried"),
            trained_on=ngram_info,
            checkpoint=str(model.source),
            step=model.step,
        )
        print(
            f"wrote {target}: restore fuses this n-gram at weight {float(fusion.get('chosen', 0.0)):g} (0: the model alone)"
        )
    return 0


def _held_out(model, checkpoint: str) -> dict:
    """The run's evaluations at the checkpoint's step, from its run folder (if it has one)."""
    from stoicheia.inference.run_sets import run_unigram_bits
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
    bits = run_unigram_bits(model.config, model.config.get("data", {}).get("shard_root") or "")
    if bits is not None:
        out["unigram_entropy_bits"] = bits
    return out


def cmd_export(args: argparse.Namespace) -> int:
    from stoicheia.inference.export import (
        describe_training_data,
        export_file_names,
        export_model,
        find_shard_root,
    )

    out_dir = Path(args.out_dir)  # checked before the checkpoint is read
    problem = out_dir_problem(out_dir)
    if problem:
        return _fail("export", f"OUT_DIR {problem}")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not args.overwrite:
        return _fail(
            "export",
            f"OUT_DIR {out_dir} exists and is not empty; choose another folder or pass --overwrite",
        )
    foreign = (
        sorted(e.name for e in out_dir.iterdir() if e.name not in export_file_names())
        if out_dir.is_dir()
        else []
    )
    if foreign:
        return _fail(
            "export",
            f"OUT_DIR {out_dir} holds files an export does not write ({', '.join(foreign[:6])}"
            f"{' ...' if len(foreign) > 6 else ''}): --overwrite would delete them (is it a run folder?); "
            "choose another OUT_DIR",
        )
    if args.shards and not Path(args.shards).is_dir():
        return _fail(
            "export",
            f"--shards {args.shards!r}: no such folder; give the output folder of `stoicheia convert`",
        )
    model = _load(args, "export")
    if model.kind == "export":
        print(
            f"stoicheia export: error: {args.checkpoint} is an export already; give a training checkpoint",
            file=sys.stderr,
        )
        return 2
    held = _held_out(model, args.checkpoint)
    root = Path(args.shards) if args.shards else find_shard_root(model.config, args.checkpoint)
    if root is None:
        print(
            "note: the run's shards (data.shard_root) were not found; the model card lists no corpus facts (give --shards DIR)"
        )
    data = describe_training_data(model.config, root)
    try:
        out = export_model(
            model, out_dir, held_out=held, training_data=data, overwrite=args.overwrite
        )
    except FileExistsError as err:
        return _fail("export", str(err))
    except OSError as err:  # disk full, permissions changed meanwhile
        return _fail(
            "export",
            f"cannot write {err.filename or out_dir} ({err.strerror}); free space or choose another OUT_DIR",
        )
    print(
        f"wrote {out}: model.safetensors, config.json, the model code, README.md"
        + (", ngram.npz (restore fuses it in)" if (out / "ngram.npz").is_file() else "")
        + f" (step {model.step}"
        + (
            f", held-out figures of step {held['step']}"
            if held
            else ", no held-out figures found beside the checkpoint"
        )
        + ")"
    )
    print(
        f"load it with: transformers.AutoModel.from_pretrained({str(out)!r}, trust_remote_code=True)"
    )
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from stoicheia.train.report import write_report

    problem = out_dir_problem(args.out) if args.out else None
    if problem:
        return _fail("report", f"--out {problem}")
    try:
        png, page = write_report(Path(args.run_folder), args.out)
    except ValueError as err:
        return _fail("report", str(err))
    except OSError as err:
        return _fail(
            "report",
            f"cannot write {err.filename or args.out or args.run_folder} ({err.strerror}); give --out FOLDER you can write to",
        )
    print(f"wrote {png} and {page}")
    return 0


def _restore_progress():
    """A ``progress(done, total)`` callback drawing a rich progress bar on stderr, and a function
    that removes it; ``(None, None)`` when stderr is not a terminal (pipes and logs stay clean)."""
    if not sys.stderr.isatty():
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("restoring"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} passes"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("restore", total=1)
    bar.start()

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return update, bar.stop


def cmd_restore(args: argparse.Namespace) -> int:
    import json

    from stoicheia.inference.restore import (
        GapTooWideError,
        RestoreError,
        format_result,
        parse_input,
        restore,
    )

    if args.epidoc:
        return _restore_epidoc(args)
    if args.out is not None:
        return _fail(
            "restore",
            "--out is the folder of --epidoc outputs; give --epidoc PATH... with it, or leave --out out",
        )
    if args.text is None:
        return _fail(
            "restore",
            "the following arguments are required: TEXT (a Greek text, or '-' to read stdin), "
            "or --epidoc PATH... --out DIR for EpiDoc files",
        )
    text = args.text
    if text == "-":
        text = sys.stdin.read().strip()
    if args.beam is not None and args.beam < args.top_k:
        return _fail(
            "restore",
            f"--beam {args.beam} is smaller than --top-k {args.top_k}; give --beam {args.top_k} or more",
        )
    supplements = "repredict" if args.repredict_supplements else "keep"
    try:  # the notation first: a typo fails before the model is loaded
        parse_input(
            text,
            supplements=supplements,
            unknown_width=args.unknown_width,
            about_margin=args.about_margin,
        )
    except GapTooWideError:
        pass  # said by restore() below, with the limit of the loaded model
    except RestoreError as err:
        return _fail("restore", str(err))
    model = _load(args, "restore")
    progress, stop = _restore_progress()
    try:
        from stoicheia.inference.restore.fusion_file import NGRAM_FILE, find_fusion

        fusion = find_fusion(model, args.ngram, args.ngram_weight)
        result = restore(
            model,
            text,
            top_k=args.top_k,
            beam=args.beam,
            respace=args.respace,
            supplements=supplements,
            unknown_width=args.unknown_width,
            about_margin=args.about_margin,
            window=args.window,
            alternatives=args.alternatives,
            score_supplements=args.score_supplements,
            progress=progress,
            fusion=fusion,
        )
    except RestoreError as err:
        return _fail("restore", str(err))
    finally:
        if stop is not None:
            stop()
    if fusion is None and result.gaps:
        result.notes.append(
            "the model alone, without the letter n-gram: --ngram-weight 0"
            if args.ngram_weight == 0
            else f"the model alone: no {NGRAM_FILE} beside the checkpoint; `stoicheia benchmark "
            "CHECKPOINT --save-ngram` writes one, which restore then fuses in"
        )
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
    else:
        print("\n".join(format_result(result)))
    return 0


def _restore_epidoc(args: argparse.Namespace) -> int:
    """``restore --epidoc PATH... --out DIR`` (stoicheia.inference.epidoc_restore_corpus)."""
    from stoicheia.inference.epidoc_restore_corpus import epidoc_inputs, restore_corpus

    if args.text is not None:
        return _fail("restore", f"give either a TEXT ({args.text!r}) or --epidoc files, not both")
    if args.out is None:
        return _fail(
            "restore",
            "--epidoc needs --out DIR, the folder the restored files are written to (never over an input)",
        )
    for flag, given in (
        ("--respace", args.respace),
        ("--repredict-supplements", args.repredict_supplements),
        ("--json", args.json),
        ("--ngram", args.ngram),
        ("--ngram-weight", args.ngram_weight is not None),
    ):
        if given:
            return _fail(
                "restore",
                f"{flag} is for a TEXT; --epidoc fills the <gap> elements of the editions only",
            )
    problem = out_dir_problem(args.out)
    if problem:
        return _fail("restore", f"--out {problem}")
    if args.beam is not None and args.beam < args.top_k:
        return _fail(
            "restore",
            f"--beam {args.beam} is smaller than --top-k {args.top_k}; give --beam {args.top_k} or more",
        )
    try:  # the paths first: a typo fails before the model is loaded
        epidoc_inputs(args.epidoc, args.out)
    except ValueError as err:
        return _fail("restore", str(err))
    model = _load(args, "restore")
    try:
        summary = restore_corpus(
            model,
            args.epidoc,
            args.out,
            top_k=args.top_k,
            beam=args.beam,
            unknown_width=args.unknown_width,
            about_margin=args.about_margin,
            window=args.window,
        )
    except ValueError as err:
        return _fail("restore", str(err))
    except OSError as err:
        return _fail(
            "restore",
            f"cannot write {err.filename or args.out} ({err.strerror}); free space or give another --out "
            "(the files written so far stay; a rerun goes on from there)",
        )
    print(summary.line())
    if summary.files and summary.refused == summary.files:
        # nothing could be read: a script calling this must not take it for a finished run
        print(
            "stoicheia restore: error: every file was refused (see the lines above); give EpiDoc files "
            "with a Greek edition",
            file=sys.stderr,
        )
        return 2
    return 0


class _IntermixedParser(OneLineParser):
    """``restore``'s parser: its TEXT is optional (``--epidoc`` replaces it), and argparse
    would take an optional positional as absent at the first option it meets
    (``restore CKPT --top-k 3 TEXT``); intermixed parsing reads it wherever it stands."""

    _inner = False

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        if self._inner:  # parse_known_intermixed_args calls this method itself
            return super().parse_known_args(args, namespace)
        self._inner = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inner = False


def _ngram_args(p: argparse.ArgumentParser) -> None:
    """The letter n-gram baseline's options (``evaluate`` and ``benchmark``)."""
    p.add_argument(
        "--ngram-order",
        type=int_in(0, 6, meaning=" (0: no n-gram baseline; default 5)"),
        default=5,
        help="order of the letter n-gram baseline (0: none; default 5)",
    )
    p.add_argument(
        "--ngram-letters",
        type=int_in(1, meaning=" letters"),
        default=20_000_000,
        help="letters the n-gram is trained on at most",
    )


def _model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "checkpoint",
        metavar="CHECKPOINT",
        help="training checkpoint (.pt, local or s3:// gs:// oci://), run folder, or export folder",
    )
    p.add_argument(
        "--config",
        help="YAML the model was trained with (only for checkpoints that do not record it)",
    )
    p.add_argument(
        "--device",
        default="auto",
        type=device_name,
        help="auto (GPU if any), cpu, cuda, cuda:1 ...",
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``stoicheia`` command."""
    parser = OneLineParser(prog="stoicheia", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
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
        help="hold out the EpiDoc inscriptions whose number ends in DIGIT (ISic000154: 4) as the inscription dev set, "
        "never trained on (TIER/inscription_dev); repeatable",
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
        help="EpiDoc <supplied reason='lost'>: keep the editor's letters (text) or make them a real lacuna of their length",
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
    p.set_defaults(func=cmd_convert)
    p = sub.add_parser(
        "status", help="where a training run stands, from the files in its run folder"
    )
    p.add_argument(
        "run_folder",
        metavar="RUN_FOLDER",
        help="the run's train.save_folder, e.g. checkpoints/stoicheia-demo",
    )
    p.set_defaults(func=cmd_status)
    p = sub.add_parser(
        "evaluate", help="held-out figures of a trained model, per tier and per work"
    )
    _model_args(p)
    p.add_argument(
        "--shards",
        nargs="+",
        required=True,
        metavar="DIR_OR_FILE",
        help="a shard folder (output of convert; its val split), or .txt/.jsonl/.xml/.conllu files or folders",
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
        help="shards whose train split trains the n-gram baseline (default --shards, else the run's data.shard_root)",
    )
    _ngram_args(p)
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
    p.set_defaults(func=cmd_evaluate)
    p = sub.add_parser(
        "benchmark",
        help="restoration benchmark on the inscription dev set (hidden spans, editors' supplements, unknown width), "
        "the n-gram beside the model",
    )
    _model_args(p)
    p.add_argument(
        "--shards",
        help="the converted corpus: its stats.json names the inscription dev set (convert --inscription-dev-digit 4), "
        "its train split trains the n-gram (default: the run's data.shard_root)",
    )
    p.add_argument(
        "--out",
        required=True,
        help="folder for benchmark.json, benchmark.txt (the table) and reliability.png",
    )
    p.add_argument(
        "--protocols",
        nargs="+",
        choices=("hidden", "supplements", "unknown"),
        default=["hidden", "supplements", "unknown"],
        help="hidden: spans of intact text as [....]; supplements: each editor's supplement as [....]; unknown: the hidden spans as [---]",
    )
    p.add_argument(
        "--spans-per-text",
        type=int_in(1, 1000, meaning=" spans (default 3)"),
        default=3,
        help="hidden spans per text (default 3)",
    )
    p.add_argument(
        "--seed",
        type=int_in(0, 2**63 - 1, meaning=" (a seed)"),
        default=1234,
        help="seed of the hidden spans (default 1234)",
    )
    p.add_argument(
        "--max-texts",
        type=int_in(1, meaning=" texts"),
        help="only the first texts of the dev set (default all)",
    )
    p.add_argument(
        "--epidoc-root",
        help="read the dev inscriptions' EpiDoc files from this folder (the tier's, e.g. ../shared/corpus/isicily) "
        "instead of the paths stats.json recorded at conversion",
    )
    p.add_argument(
        "--unknown-width",
        type=int_in(10, MAX_LACUNA_WIDTH, meaning=" letters (default 20)"),
        default=20,
        help="most letters of a [---] gap, for model and n-gram alike (default 20, as restore)",
    )
    _ngram_args(p)
    p.add_argument(
        "--fusion-weights",
        type=fusion_weights,
        default=[0.0, 0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0],
        help="n-gram weights at which the model's search is fused with the n-gram (comma-separated, in [0, 1]; "
        "the best on these gaps is reported as 'fused'; default 0,0.2,0.4,0.6,0.7,0.8,0.9,1; '' for none)",
    )
    p.add_argument(
        "--save-ngram",
        action="store_true",
        help="write the n-gram and the chosen fusion weight to ngram.npz beside the checkpoint: restore then fuses it in",
    )
    p.add_argument(
        "--bootstrap",
        type=int_in(0, 100_000, meaning=" resamples (default 1000; 0: none)"),
        default=1000,
        help="resamples of the inscriptions for the 95%% intervals of fused - n-gram and model - n-gram "
        "(paired bootstrap, seeded with --seed; default 1000; 0: none). For an older --out folder: "
        "scripts/benchmark_intervals.py FOLDER",
    )
    p.set_defaults(func=cmd_benchmark)
    p = sub.add_parser("restore", help="fill the lacunae of a Greek text in Leiden notation")
    p.__class__ = _IntermixedParser  # add_parser makes the parent's class
    _model_args(p)
    p.add_argument(
        "text",
        metavar="TEXT",
        nargs="?",
        help="Greek text with Leiden lacunae: [...] [.5.] [-ca.5-] [5±3] [---] [καὶ] α̣ ('-': read stdin)",
    )
    p.add_argument(
        "--epidoc",
        nargs="+",
        metavar="PATH",
        help="EpiDoc files or folders (every *.xml below): fill their <gap> elements (docs/restoring-epidoc.md)",
    )
    p.add_argument(
        "--out",
        help="with --epidoc: folder the restored files are written to (files already there are skipped)",
    )
    p.add_argument(
        "--top-k",
        type=int_in(1, 100, meaning=" restorations"),
        default=5,
        help="restorations to print, best first (default 5)",
    )
    p.add_argument(
        "--beam",
        type=int_in(1, 256, meaning=" candidates per gap"),
        help="candidates kept per gap, combined into the whole-text restorations (default max(top-k, 4))",
    )
    p.add_argument(
        "--ngram",
        metavar="PATH",
        help="letter n-gram file to fuse into the search (default: ngram.npz beside the checkpoint, if any; "
        "written by `stoicheia benchmark --save-ngram`)",
    )
    p.add_argument(
        "--ngram-weight",
        type=float_in(0, 1, meaning=" (0: the model alone)"),
        help="weight of the n-gram in the search (default: the weight chosen on the dev set, stored in the file; 0: the model alone)",
    )
    p.add_argument(
        "--respace",
        action="store_true",
        help="word division, accents, breathings, capitals, punctuation from the model",
    )
    p.add_argument(
        "--repredict-supplements",
        action="store_true",
        help="re-predict letters an editor supplied in [ ] instead of keeping them",
    )
    p.add_argument(
        "--unknown-width",
        type=int_in(1, MAX_LACUNA_WIDTH, meaning=" letters (default 20)"),
        default=20,
        help="most letters a lacuna of unknown width [---] may hold (default 20)",
    )
    p.add_argument(
        "--about-margin",
        type=float_in(0, 1, meaning=" (a fraction of N, default 0.25)"),
        default=0.25,
        help="[-ca.N-] means N ± max(1, round(margin × N)) letters (default 0.25)",
    )
    p.add_argument(
        "--window",
        type=int_in(0, meaning=" slots (0: one window, a longer text refused)"),
        help="slots the model sees at once (default: the row length it was trained on; 0: one window, and a text longer than the trained rows is refused)",
    )
    p.add_argument(
        "--alternatives",
        type=int_in(0, 100, meaning=" fills per gap"),
        help="each gap's own best fills, with probabilities (default: --top-k; 0: none)",
    )
    p.add_argument(
        "--score-supplements",
        action="store_true",
        help="re-predict each editor's supplement [περὶ] and give the probability and rank of the editor's reading",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print JSON (one entry per gap; see docs/restoring.md) instead of the aligned text",
    )
    p.set_defaults(func=cmd_restore)
    p = sub.add_parser(
        "report",
        help="a run's curves: writes report.png and report.html into the run folder (or --out FOLDER)",
    )
    p.add_argument(
        "run_folder",
        metavar="RUN_FOLDER",
        help="the run's train.save_folder, e.g. checkpoints/stoicheia-demo",
    )
    p.add_argument("--out", help="folder for report.png and report.html (default: the run folder)")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser(
        "export", help="write a Hugging Face model folder (safetensors, config, code, model card)"
    )
    _model_args(p)
    p.add_argument("out_dir", metavar="OUT_DIR", help="folder to write (must be empty or new)")
    p.add_argument("--overwrite", action="store_true", help="write into a non-empty folder")
    p.add_argument(
        "--shards",
        help="the shards the model was trained on (default: the run's data.shard_root), for the model card",
    )
    p.set_defaults(func=cmd_export, device="cpu")
    from stoicheia.serve.command import add_serve_parser

    add_serve_parser(sub, _model_args)
    try:
        args = parser.parse_args(argv)
    except (
        SystemExit
    ) as stop:  # a usage error (its one line is printed) or --help: the status, like the commands
        return stop.code if isinstance(stop.code, int) else 0
    try:
        code = args.func(args)
    except KeyboardInterrupt:
        # convert and export write OUT.partial and rename it whole, so nothing half-written stays
        print(f"stoicheia {args.command}: interrupted (Ctrl-C)", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader of the output went away (`| head`): it has what it wanted; no traceback
        _quiet_stdout()
        return 0
    if argv is None and args.command == "restore" and "torch" in sys.modules:
        _exit_now(code)
    return code


def _exit_now(code: int) -> None:
    """End the process at once with status ``code``, without the interpreter's teardown.

    Tearing torch down takes 0.4-0.6 s of an about 3 s ``stoicheia restore`` (measured
    2026-12-01 on 2 idle cores: ``import torch`` then exit, 2.2-2.9 s, against 1.7-2.2 s with
    ``os._exit``). Used only for the whole process's ``restore`` (not for ``main([...])`` called
    from Python): it has closed every file it wrote, so only the standard streams and the log
    handlers are flushed here."""
    import logging

    try:
        sys.stdout.flush()
    except BrokenPipeError:  # `| head` closed the pipe: nothing more to write
        pass
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)


def _quiet_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's last flush of a closed
    pipe raises nothing at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
