"""The scaling table: held-out bits/char and restoration against training compute.

    .venv/bin/python benchmarks/scaling.py \\
        --point 10 checkpoints/stoicheia-demo benchmark/stoicheia-demo \\
        --point 40 checkpoints/sweep40 benchmark/sweep40 \\
        --point 120 checkpoints/stoicheia-base-2h benchmark/stoicheia-base-2h \\
        [--plot benchmark/scaling.png] [--json benchmark/scaling.json] [--mfu 0.35]

Each ``--point MINUTES RUN_FOLDER BENCHMARK_FOLDER`` is one training run (its folder holds
``config.json``, ``best.json`` and ``metrics.jsonl``) trained for MINUTES of 2 idle CPU cores,
and the ``stoicheia benchmark`` folder of its best checkpoint. For each point it prints:

- the model's parameters and its training compute, in FLOPs: the letter slots it trained on
  (``time/token`` of the last logged batch) times the training FLOPs per letter of
  :func:`stoicheia.train.flops.flops_per_letter` (PaLM's count, Chowdhery et al. 2022,
  Appendix B: 6 N + the attention's own work; an upper bound for packed rows);
- its best ``dev/bits_per_char`` (``best.json``);
- top-1 on each protocol of the benchmark for the model alone, the n-gram, the network fused
  with the n-gram (``fused``) and with the parallels too (``fused3``), on the benchmark's report
  half (the fusion weights were chosen on the other half), and the model-alone minus n-gram
  difference on hidden spans with its 95 % paired-bootstrap interval over inscriptions.

Then each larger point against the smallest on the same gaps (hidden spans, report half): the
difference in top-1 of the model alone and of fused3, with the 95 % interval of a paired
bootstrap over inscriptions. Then the extrapolation: for the model alone on hidden spans (and
on editors' supplements), top-1 is fitted as a straight line in log10(FLOPs) by least squares
(with 3 points: a rough guide, said so), and the compute at which the line meets the n-gram's
top-1 is printed, in FLOPs, in minutes of these 2 cores at the largest point's FLOP rate, and
in hours of one H200 at ``--mfu`` of its dense bf16 peak (989 TFLOP/s,
``stoicheia.train.flops.PEAK_FLOPS``).
A fit whose slope is not positive prints that no crossing can be extrapolated.

Raises ``SystemExit`` naming the folder and file when a point's files are missing.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from stoicheia.model.config import EncoderConfig
from stoicheia.model.encoder import CharBertEncoder
from stoicheia.train.flops import flops_per_letter, peak_flops

PROTOCOLS = ("hidden", "supplements", "unknown")
#: fused: the network + the n-gram; fused3: + the parallels (benchmark folders from 2026-12-03)
DECODERS = ("model", "ngram", "fused", "fused3")


@dataclass
class Point:
    """One run of the scaling table (figures as fractions; compute in FLOPs and minutes)."""

    minutes: float
    run: str
    benchmark: str
    d_model: int
    n_layers: int
    parameters: int
    letters: int
    flops: float
    steps: int
    dev_bits_per_char: float
    top1: dict[str, dict[str, float]]
    #: protocol -> the model-alone minus n-gram top-1 difference and its 95 % paired-bootstrap
    #: interval over inscriptions, ``{"diff", "low", "high"}`` (fractions), where the benchmark
    #: has it
    model_minus_ngram: dict[str, dict[str, float]]


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SystemExit(
            f"scaling: {path} is missing: give a finished run's folder and its benchmark"
        ) from None
    except json.JSONDecodeError as exc:
        raise SystemExit(f"scaling: {path} is not JSON ({exc})") from None


def read_point(minutes: float, run: Path, bench: Path) -> Point:
    """Read one run folder and its benchmark folder into a :class:`Point`."""
    cfg = _read_json(run / "config.json")
    best = _read_json(run / "best.json")
    fields = EncoderConfig.__dataclass_fields__
    enc = CharBertEncoder(EncoderConfig(**{k: v for k, v in cfg["model"].items() if k in fields}))
    params = sum(p.numel() for p in enc.parameters())
    last = None
    metrics = run / "metrics.jsonl"
    if not metrics.exists():
        raise SystemExit(f"scaling: {metrics} is missing")
    for line in metrics.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if "time/token" in row:
            last = row
    if last is None:
        raise SystemExit(f"scaling: {metrics} logs no training batch (time/token)")
    letters = int(last["time/token"])
    flops = flops_per_letter(enc, int(cfg["data"]["seq_len"])) * letters
    b = _read_json(bench / "benchmark.json")
    top1, gap = {}, {}
    for proto in PROTOCOLS:
        if proto not in b["protocols"]:
            continue
        # the report half (the fused weights were chosen on the other half); older benchmark
        # folders without halves give the whole dev set
        figures = b["protocols"][proto].get("views", {}).get("report", b["protocols"][proto])
        top1[proto] = {
            dec: figures["decoders"][dec]["top1"] for dec in DECODERS if dec in figures["decoders"]
        }
        diff = figures.get("differences", {}).get("model-ngram", {}).get("top1")
        if diff is not None:
            gap[proto] = {k: float(diff[k]) for k in ("diff", "low", "high")}
    return Point(
        minutes=minutes,
        run=str(run),
        benchmark=str(bench),
        d_model=enc.cfg.d_model,
        n_layers=enc.cfg.n_layers,
        parameters=params,
        letters=letters,
        flops=flops,
        steps=int(last["step"]),
        dev_bits_per_char=float(best["value"]),
        top1=top1,
        model_minus_ngram=gap,
    )


def versus(bench_a: Path, bench_b: Path, protocol: str = "hidden") -> dict | None:
    """Benchmark ``a`` minus benchmark ``b`` on the same gaps of ``protocol``'s report half:
    ``{"model": {"diff", "low", "high"}, "fused3": ...}`` (top-1, fractions; fused3 where both
    have it), the 95 % paired bootstrap over inscriptions of
    :func:`stoicheia.inference.benchmark.bootstrap.paired_differences` (1,000 resamples, seed
    1234). ``None`` when the two did not restore the same gaps (another dev set or seed)."""
    from stoicheia.inference.benchmark.bootstrap import paired_differences

    def gaps(bench: Path) -> dict:
        rows = _read_json(bench / "benchmark.json")["protocols"].get(protocol, {})
        return {
            (r["text"], r["start"], r["end"], r["truth"]): r
            for r in rows.get("examples", [])
            if r.get("half", "report") == "report"
        }

    a, b = gaps(bench_a), gaps(bench_b)
    if not a or a.keys() != b.keys():
        return None
    decoders = [d for d in ("model", "fused3") if all(d in r for r in (*a.values(), *b.values()))]
    merged = [
        {"text": key[0], "truth": key[3]}
        | {f"a_{d}": a[key][d] for d in decoders}
        | {f"b_{d}": b[key][d] for d in decoders}
        for key in a
    ]
    diffs = paired_differences(
        merged, [(f"a_{d}", f"b_{d}") for d in decoders], figures=("top1",), seed=1234
    )
    return {d: diffs[f"a_{d}-b_{d}"]["top1"] for d in decoders}


def fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares ``y = a + b x``; returns ``(a, b)``. Needs two distinct ``xs``."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("fit_line needs at least two distinct x values")
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - b * mx, b


def crossing(points: list[Point], protocol: str) -> dict | None:
    """Where the model-alone top-1 line in log10(FLOPs) meets the n-gram's mean top-1 on
    ``protocol``: ``{'flops', 'slope_per_decade', 'ngram_top1'}``, ``'flops': None`` when the
    slope is not positive; None when fewer than 2 points have the protocol."""
    pts = [p for p in points if protocol in p.top1 and "ngram" in p.top1[protocol]]
    if len({p.flops for p in pts}) < 2:
        return None
    a, b = fit_line([math.log10(p.flops) for p in pts], [p.top1[protocol]["model"] for p in pts])
    ngram = sum(p.top1[protocol]["ngram"] for p in pts) / len(pts)
    return {
        "flops": 10 ** ((ngram - a) / b) if b > 0 else None,
        "slope_per_decade": b,
        "ngram_top1": ngram,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--point",
        nargs=3,
        action="append",
        required=True,
        metavar=("MINUTES", "RUN_FOLDER", "BENCHMARK_FOLDER"),
    )
    p.add_argument("--plot", help="write the plot here (PNG)")
    p.add_argument("--json", help="write the points and the extrapolation here")
    p.add_argument("--mfu", type=float, default=0.35, help="assumed H200 MFU for GPU hours")
    args = p.parse_args()
    points = sorted(
        (read_point(float(m), Path(r), Path(b)) for m, r, b in args.point), key=lambda q: q.flops
    )
    head = (
        "| minutes (2 cores) | model | parameters | steps | letters | FLOPs | dev bits/char "
        "| hidden top-1 model / n-gram / fused / fused3 | model − n-gram, hidden [95 %] "
        "| supplements top-1 model / n-gram / fused / fused3 |"
    )
    print(head)
    print("|" + "---|" * 10)

    def trio(q: Point, proto: str) -> str:
        t = q.top1.get(proto, {})
        return " / ".join(f"{100 * t[d]:.1f}" if d in t else "–" for d in DECODERS)

    def interval(q: Point, proto: str) -> str:
        g = q.model_minus_ngram.get(proto)
        if g is None:
            return "–"
        return f"{100 * g['diff']:+.1f} [{100 * g['low']:+.1f}, {100 * g['high']:+.1f}]"

    for q in points:
        print(
            f"| {q.minutes:g} | {q.d_model} × {q.n_layers} | {q.parameters / 1e6:.2f} M | "
            f"{q.steps:,} | {q.letters / 1e6:.1f} M | {q.flops:.2e} | {q.dev_bits_per_char:.3f} | "
            f"{trio(q, 'hidden')} | {interval(q, 'hidden')} | {trio(q, 'supplements')} |"
        )
    base = points[0]
    against = {}
    for q in points[1:]:
        v = versus(Path(q.benchmark), Path(base.benchmark))
        against[q.minutes] = v
        if v is None:
            print(f"{q.minutes:g} min − {base.minutes:g} min: not the same gaps, not compared")
            continue
        print(
            f"{q.minutes:g} min − {base.minutes:g} min, hidden-span top-1 on the same gaps: "
            + ", ".join(
                f"{d} {100 * v[d]['diff']:+.1f} [{100 * v[d]['low']:+.1f}, "
                f"{100 * v[d]['high']:+.1f}]"
                for d in v
            )
        )
    h200 = peak_flops("NVIDIA H200", "amp_bf16")
    cpu_rate = points[-1].flops / (points[-1].minutes * 60)
    extrapolation = {}
    for proto in ("hidden", "supplements"):
        c = crossing(points, proto)
        extrapolation[proto] = c
        if c is None:
            continue
        if c["flops"] is None:
            print(
                f"{proto}: model-alone top-1 does not rise with compute over these points "
                f"({100 * c['slope_per_decade']:+.1f} points per decade): no crossing extrapolated"
            )
            continue
        c["cpu_minutes"] = c["flops"] / cpu_rate / 60
        c["h200_hours"] = c["flops"] / (h200 * args.mfu) / 3600
        print(
            f"{proto}: model-alone top-1 rises {100 * c['slope_per_decade']:.1f} points per decade "
            f"of compute; it meets the n-gram's {100 * c['ngram_top1']:.1f} % at about "
            f"{c['flops']:.1e} FLOPs = {c['cpu_minutes']:,.0f} minutes of these 2 cores = "
            f"{c['h200_hours']:.2g} H200 hours at {args.mfu:.0%} MFU (a straight-line "
            f"extrapolation from {len(points)} points)"
        )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(
            json.dumps(
                {
                    "points": [asdict(q) for q in points],
                    "extrapolation": extrapolation,
                    "against_smallest": {f"{m:g}": v for m, v in against.items()},
                    "mfu": args.mfu,
                },
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )
    if args.plot:
        plot(points, extrapolation, Path(args.plot))
    return 0


def plot(points: list[Point], extrapolation: dict, out: Path) -> None:
    """Two panels against training FLOPs (log scale): dev bits/char, and hidden-span top-1 of
    the model alone, the n-gram and the fused search with the model's fitted line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [q.flops for q in points]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.plot(xs, [q.dev_bits_per_char for q in points], "o-")
    for q in points:
        ax1.annotate(f"{q.minutes:g} min", (q.flops, q.dev_bits_per_char), fontsize=8)
    ax1.set_xscale("log")
    ax1.set_xlabel("training compute (FLOPs)")
    ax1.set_ylabel("dev bits/char (lower is better)")
    ax1.set_title("held-out bits per character")
    for dec, style in (("model", "o-"), ("ngram", "s--"), ("fused", "^-"), ("fused3", "v-")):
        ys = [100 * q.top1["hidden"][dec] for q in points if dec in q.top1.get("hidden", {})]
        if len(ys) == len(xs):
            label = {"ngram": "5-gram", "fused": "model + 5-gram", "fused3": "+ parallels"}
            ax2.plot(xs, ys, style, label=label.get(dec, dec))
    c = extrapolation.get("hidden")
    if c and c.get("flops"):
        lo = math.log10(xs[0])
        hi = math.log10(c["flops"])
        grid = [10 ** (lo + (hi - lo) * i / 20) for i in range(21)]
        a = c["ngram_top1"] - c["slope_per_decade"] * hi
        ax2.plot(
            grid,
            [100 * (a + c["slope_per_decade"] * math.log10(g)) for g in grid],
            ":",
            color="grey",
            label="model, fitted line",
        )
    ax2.set_xscale("log")
    from matplotlib.ticker import NullFormatter

    for ax in (ax1, ax2):  # the minor ticks' labels overlap over a decade or two
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax2.set_xlabel("training compute (FLOPs)")
    ax2.set_ylabel("top-1 on hidden spans (%)")
    ax2.set_title("restoration, inscription dev set")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    _sys.exit(main())
