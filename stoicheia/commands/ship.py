"""``stoicheia export RUN_FOLDER --ship``: the shipped base model from a finished run folder
(:mod:`stoicheia.inference.export.shipping`; what ``restore`` and ``serve`` use when no
CHECKPOINT is given, :mod:`stoicheia.inference.shipped`).

The run folder must hold ``best.pt`` (else ``final.pt``), ``config.json``, ``ngram.npz`` and
``fusion.json`` (``stoicheia benchmark RUN/best.pt --save-fusion``), its evaluations
(``evals.jsonl``) at the checkpoint's step, and its shards must be found (the card's
fingerprint; ``--shards DIR``). The bundle is written whole (``publishing``) and the generated
part of docs/model-card.md replaced; before that, the example text is restored with the run's
checkpoint and with the bundle's (half-precision) weights, and any difference is said.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
from pathlib import Path

from stoicheia.commands.common import fail, load

#: the text the shipped model's check (and .ci/run) restores
EXAMPLE = "ἔδοξε τῇ βουλῇ καὶ τῷ [....]"
_NEEDED = ("config.json", "ngram.npz", "fusion.json")


def _restorations(model, text: str) -> list[tuple[str, float]]:
    """The top-5 whole-text restorations of ``text`` by ``model`` with its n-gram and fusion
    weights, without the parallels (the same for the run and the bundle), with their scores
    (natural-log)."""
    from stoicheia.inference.restore import restore
    from stoicheia.inference.restore.fusion_file import find_fusion

    fusion = find_fusion(model, parallels="")
    result = restore(model, text, top_k=5, fusion=fusion)
    return [(r.text, round(float(r.logprob), 4)) for r in result.restorations]


def _wall_seconds(metrics: Path) -> float | None:
    """Seconds from the first to the last line of the run's ``metrics.jsonl`` (its ``time``
    fields), or ``None`` when the file is missing or holds no times."""
    if not metrics.is_file():
        return None
    times = []
    with metrics.open(encoding="utf-8") as f:
        for line in f:
            try:
                t = json.loads(line).get("time")
            except (ValueError, AttributeError):
                continue
            if isinstance(t, (int, float)):
                times.append(float(t))
    return round(max(times) - min(times), 1) if len(times) > 1 else None


def run_ship(args: argparse.Namespace) -> int:
    """Write the bundle from ``args.checkpoint`` (a run folder, or its best.pt/final.pt);
    returns 0, or 2 after one line on stderr."""
    from stoicheia.commands.export import held_out
    from stoicheia.data.parallels_layout import shards_provenance
    from stoicheia.inference.export.folder import export_model
    from stoicheia.inference.export.shipping import (
        convert_spec,
        provenance,
        update_card,
        write_bundle,
    )
    from stoicheia.inference.export.training_data import describe_training_data
    from stoicheia.inference.loading import load_model
    from stoicheia.inference.run_paths import checkout_root, find_under_anchors, run_shards
    from stoicheia.inference.shipped import CARD, SHIPPED_DIR
    from stoicheia.publish import publishing

    given = Path(args.checkpoint)
    folder = given if given.is_dir() else given.parent
    if "://" in args.checkpoint or not folder.is_dir():
        return fail("export", f"--ship: {args.checkpoint} is no local run folder; give one")
    missing = [n for n in _NEEDED if not (folder / n).is_file()]
    if missing:
        return fail(
            "export",
            f"--ship: {folder} has no {', '.join(missing)}; ship a finished run folder that "
            "was benchmarked with --save-fusion (`stoicheia benchmark RUN/best.pt "
            "--save-fusion`)",
        )
    if given.is_dir():  # best.pt, else final.pt: the run's own choice of weights
        found = [given / n for n in ("best.pt", "final.pt") if (given / n).is_file()]
        if not found:
            return fail("export", f"--ship: {given} holds no best.pt nor final.pt")
        args.checkpoint = str(found[0])
    out = Path(args.out_dir) if args.out_dir else SHIPPED_DIR
    dtype = args.weights_dtype or "float16"
    model = load(args, "export")
    if model.kind == "export":
        return fail("export", f"--ship: {args.checkpoint} is an export; give the run folder")
    if not (folder / "complete.json").is_file():
        print(f"note: {folder} has no complete.json: the run may not be finished")
    held = held_out(model, args.checkpoint)
    if not held.get("sets"):
        return fail(
            "export",
            f"--ship: no evaluation at step {model.step} in {folder}/evals.jsonl; ship a "
            "checkpoint the run evaluated (best.pt)",
        )
    if "dev" not in held["sets"]:
        print(
            "note: the run has no dev evaluation (the inscription dev set): the card quotes its "
            f"{', '.join(sorted(held['sets']))} bits per character only"
        )
    # the run's shards found from its folder, never from the current one (run_paths)
    root = Path(args.shards) if args.shards else run_shards(model.config, args.checkpoint)[1]
    if root is None or not (root / "stats.json").is_file():
        return fail("export", "--ship: the run's shards were not found; give --shards DIR")
    stats = json.loads((root / "stats.json").read_text(encoding="utf-8"))
    try:
        spec = convert_spec(stats)
    except ValueError as err:
        return fail("export", f"--ship: {root}/{err}")
    run_name = str(model.config.get("run_name") or folder.name)
    bench = None
    bench_dir = (
        Path(args.benchmark)
        if args.benchmark
        else find_under_anchors(
            f"benchmark/{run_name}", args.checkpoint, lambda p: (p / "benchmark.json").is_file()
        )
    )
    if bench_dir is not None and (bench_dir / "benchmark.json").is_file():
        from stoicheia.inference.export.shipping import benchmark_figures

        bench = benchmark_figures(
            json.loads((bench_dir / "benchmark.json").read_text(encoding="utf-8"))
        )
        if (bench.get("model") or {}).get("step") != model.step:
            print(
                f"note: the benchmark in {bench_dir} measured step "
                f"{(bench.get('model') or {}).get('step')}, the checkpoint is step {model.step}; "
                "the card says so (benchmark the checkpoint again to match)"
            )
    elif args.benchmark:
        return fail("export", f"--benchmark {args.benchmark}: no benchmark.json there")
    else:
        print(
            f"note: no benchmark/{run_name}/benchmark.json found from {folder}: the card will "
            "quote no restoration figures (give --benchmark DIR)"
        )
    wall = _wall_seconds(folder / "metrics.jsonl")
    mix = None
    if (folder / "mix.json").is_file():
        mix = json.loads((folder / "mix.json").read_text(encoding="utf-8"))
    prov = provenance(
        run_name=run_name,
        checkpoint=Path(args.checkpoint).name,
        step=model.step,
        held_out=held,
        shards=shards_provenance(root),
        convert=spec,
        mix=mix,
        run_config=model.config,
        benchmark=bench,
        weights_dtype=dtype,
        shipped=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d"),
    )
    prov["wall_seconds"] = wall
    prov["parameters"] = sum(p.numel() for p in model.encoder.parameters())
    data = describe_training_data(model.config, root)
    with tempfile.TemporaryDirectory() as tmp:
        export = Path(tmp) / "export"
        try:
            export_model(model, export, held_out=held, training_data=data, weights_dtype=dtype)
        except ValueError as err:
            return fail("export", f"{err} (mend or remove it, then ship again)")
        # the paths of the machine that shipped it stay out of a committed bundle: the run's
        # files are named relative to the folder holding its checkout (checkpoints/RUN/...)
        base = str(folder.resolve().parent.parent) + "/"
        for name in ("config.json", "README.md"):
            text = (export / name).read_text(encoding="utf-8")
            (export / name).write_text(text.replace(base, ""), encoding="utf-8")
        # the check: the example restored by the run and by the bundle's weights
        shipped = load_model(str(export), device="cpu", precision="fp32")
        run_readings = _restorations(model, EXAMPLE)
        bundle_readings = _restorations(shipped, EXAMPLE)
        same = [t for t, _ in run_readings] == [t for t, _ in bundle_readings]
        gap = max(
            (abs(a[1] - b[1]) for a, b in zip(run_readings, bundle_readings, strict=False)),
            default=0.0,
        )
        prov["check"] = {
            "text": EXAMPLE,
            "same_top5": same,
            "largest_logprob_change": gap,
        }
        try:
            with publishing(out) as target:
                sizes = write_bundle(export, target, prov)
        except FileNotFoundError as err:
            return fail("export", f"--ship: {err}")
    root_dir = checkout_root()
    card = (root_dir / CARD) if root_dir is not None else None
    carded = card is not None and card.is_file() and out == SHIPPED_DIR and update_card(card, prov)
    total = sum(sizes.values())
    print(
        f"shipped {run_name} step {model.step}"
        + (
            f" (dev {prov['dev_bits_per_char']:.3f} bits/char)"
            if prov["dev_bits_per_char"] is not None
            else ""
        )
        + f" into {out}: "
        + ", ".join(f"{n} {b / 1e6:.2f} MB" for n, b in sizes.items())
        + f"; {total / 1e6:.2f} MB in all"
    )
    print(
        f"check on {EXAMPLE!r}: {dtype} weights give "
        + ("the same top-5 restorations" if same else "OTHER top-5 restorations")
        + f" as the run's float32 ones (log scores within {gap:.4f})"
    )
    if not same:
        print(f"  run: {run_readings}\n  bundle: {bundle_readings}", file=sys.stderr)
    print(
        f"the model card's figures: {CARD} updated"
        if carded
        else f"note: {CARD} not updated (no card with the markers beside this package, or "
        "another OUT_DIR); update it by hand"
    )
    return 0
