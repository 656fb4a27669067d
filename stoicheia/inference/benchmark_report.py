"""The restoration benchmark's outputs: a readable table, ``benchmark.json`` and a reliability plot.

:func:`format_table` gives the table printed by ``stoicheia benchmark`` (and written as
``benchmark.txt``): per protocol, the number of gaps and, for the model and the n-gram side by
side, CER, top-1/5/20 exact match, the share of right widths (unknown width), the expected
calibration error and restorations per second, then the same by gap length and the differences
between decoders with their bootstrap intervals (:mod:`.benchmark_bootstrap`), then the
published figures of other systems (other corpora, far larger models).
:func:`write_outputs` writes the three files into a folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from stoicheia.publish import atomic_path, atomic_write

NAMES = {"model": "model", "ngram": "n-gram", "fused": "fused"}
PROTOCOL_NAMES = {
    "hidden": "hidden spans, width given [....]",
    "supplements": "editors' supplements, width given",
    "unknown": "hidden spans, unknown width [---]",
}


def _pct(x) -> str:
    return "     -" if x is None else f"{100 * x:5.1f}%"


def _row(label: str, f: dict, speed: bool = True) -> str:
    rate = f.get("restorations_per_second")
    ece = f.get("ece")
    return (
        f"  {label:<20} {f.get('gaps', 0):>6,} {_pct(f.get('cer'))} {_pct(f.get('top1'))} {_pct(f.get('top5'))} "
        f"{_pct(f.get('top20'))} {_pct(f.get('length_right'))} "
        f"{'     -' if ece is None or ece != ece else _pct(ece)} "
        f"{(f'{rate:8.2f}' if rate else '       -') if speed else ''}"
    ).rstrip()


FIGURE_NAMES = {"top1": "top-1", "top5": "top-5", "top20": "top-20", "cer": "CER"}


def _interval(figure: str, d: dict) -> str:
    """``top-1 +0.6 pts [-1.1, +2.3]``, ``*`` after an interval that excludes 0."""
    name = FIGURE_NAMES.get(figure, figure)
    if d.get("low") is None or d.get("high") is None:
        return f"{name} {100 * d['diff']:+5.1f} pts [no interval]"
    mark = "*" if d["low"] > 0 or d["high"] < 0 else " "
    return f"{name} {100 * d['diff']:+5.1f} pts [{100 * d['low']:+5.1f}, {100 * d['high']:+5.1f}]{mark}"


def difference_lines(protocol_result: dict, indent: str = "  ") -> list[str]:
    """One line per decoder pair of a protocol's ``differences``
    (:mod:`~stoicheia.inference.benchmark_bootstrap`): each figure's difference ``a − b`` in
    percentage points with its interval, ``*`` where the interval excludes 0; no line
    without differences."""
    lines = []
    for pair, figs in (protocol_result.get("differences") or {}).items():
        a, _, b = pair.partition("-")
        label = f"{NAMES.get(a, a)} - {NAMES.get(b, b)}"
        cells = "  ".join(_interval(f, d) for f, d in figs.items())
        lines.append(f"{indent}{label:<16} {cells}".rstrip())
    return lines


def _bootstrap_legend(result: dict) -> str | None:
    bs = result.get("bootstrap")
    if not bs:
        return None
    return (
        f"differences a - b on the same gaps, in points, with the {100 * bs['level']:g} % interval of a paired "
        f"bootstrap over the inscriptions ({bs['resamples']:,} resamples, seed {bs['seed']}); "
        "* the interval excludes 0 (CER: lower is better)"
    )


def format_table(result: dict) -> list[str]:
    """The lines of the readable table of a :func:`~stoicheia.inference.benchmark.benchmark`
    result (module docstring). Shares in per cent; CER = edit distance of the top-1 over the
    truth letters; ECE over 10 bins of the top-1 probability."""
    c = result["corpus"]
    digits = ", ".join(map(str, c.get("digits", [])))
    lines = [
        f"Restoration benchmark on the inscription dev set of {c['shards']} (I.Sicily numbers ending in {digits}; never "
        f"trained on): {c['inscriptions']:,} inscriptions, {c['texts']:,} texts, {c['letters']:,} letters",
    ]
    m = result.get("model") or {}
    if m:
        lines.append(
            f"model: {m.get('source')} (step {m.get('step')}); decoder: restore's (one forward pass per gap, "
            f"then a search keeping {result['settings'].get('candidates', 20)} candidates)"
        )
    ng = result.get("ngram")
    if ng:
        lines.append(
            f"n-gram: letter {ng['order']}-gram (Witten-Bell) on {sum(ng['letters'].values()):,} training letters of {ng['shards']}"
        )
    fu = result.get("fusion")
    if fu:
        lines.append(
            f"fused: the model's search fused with the n-gram at weight {fu['chosen']:g}, chosen on {fu['chosen_on']} "
            "(best mean top-1 over the protocols; 0 is the model alone)"
        )
    if c.get("left_out"):
        lines.append(f"left out: {', '.join(f'{k} {v}' for k, v in c['left_out'].items())}")
    legend = _bootstrap_legend(result)
    if legend:
        lines.append(legend)
    head = f"  {'':<20} {'gaps':>6} {'CER':>6} {'top-1':>6} {'top-5':>6} {'top-20':>6} {'len ok':>6} {'ECE':>6} {'restor/s':>8}"
    for protocol, res in result["protocols"].items():
        lines += ["", f"{PROTOCOL_NAMES.get(protocol, protocol)}: {res['gaps']:,} gaps", head]
        decs = res["decoders"]
        for name, f in decs.items():
            lines.append(_row(NAMES.get(name, name), f))
        for name, f in decs.items():
            if f.get("failed"):
                lines.append(
                    f"  ({NAMES.get(name, name)}: {f['failed']} gaps could not be restored, scored as wrong; messages in the JSON)"
                )
        for span in next(iter(decs.values()))["by_length"]:
            for name, f in decs.items():
                lines.append(
                    _row(
                        f"{span} letters {NAMES.get(name, name)}",
                        {**f["by_length"][span], "ece": None},
                        speed=False,
                    )
                )
        lines += difference_lines(res)
    if fu:
        protos = list(result["protocols"])
        lines += [
            "",
            "fusion weight (0: the model alone): top-1 / CER per protocol",
            "  " + f"{'weight':>6}  " + "  ".join(f"{p:>18}" for p in protos),
        ]
        for w, per in fu["weights"].items():
            mark = " <- chosen" if float(w) == float(fu["chosen"]) else ""
            cells = "  ".join(f"{_pct(per[p]['top1'])} / {_pct(per[p]['cer'])}" for p in protos)
            lines.append(f"  {float(w):>6g}  {cells}{mark}")
    lines += ["", "published (other corpora, far larger models; not comparable figure for figure):"]
    for p in result.get("published", []):
        figs = ", ".join(
            f"{k.upper() if k == 'cer' else k.replace('top', 'top-')} {100 * p[k]:.1f}%"
            for k in ("cer", "top1", "top20")
            if k in p
        )
        lines.append(f"  {p['system']}, {p['corpus']}, {p['task']}: {figs}")
    return lines


def summary_lines(result: dict) -> list[str]:
    """A short table of a :func:`~stoicheia.inference.benchmark.benchmark` result (written as
    ``summary.txt``; the README shows it): per protocol and decoder CER, top-1, top-20 and,
    for the unknown width, the share of right lengths, then the differences between decoders
    with their bootstrap intervals (:func:`difference_lines`); then the published anchors."""
    c = result["corpus"]
    fu = result.get("fusion") or {}
    names = {**NAMES, "fused": f"fused (w={fu['chosen']:g})" if fu else "fused"}
    lines = [
        f"inscription dev set: {c['inscriptions']:,} I.Sicily inscriptions never trained on, {c['letters']:,} letters",
    ]
    for protocol, res in result["protocols"].items():
        label = {
            "hidden": "hidden spans [....]",
            "supplements": "editors' supplements [....]",
            "unknown": "hidden spans, width unknown [---]",
        }.get(protocol, protocol)
        lines.append(f"{label}, {res['gaps']:,} gaps")
        for name, f in res["decoders"].items():
            row = f"  {names.get(name, name):<13} CER {_pct(f.get('cer'))}  top-1 {_pct(f.get('top1'))}  top-20 {_pct(f.get('top20'))}"
            lines.append(
                row
                + (f"  right length {_pct(f.get('length_right'))}" if protocol == "unknown" else "")
            )
        lines += difference_lines(res)
    few = min(res["gaps"] for res in result["protocols"].values())
    if few < 200:
        lines.append(
            f"few gaps ({few:,} in the smallest protocol): these figures move by several points with other texts"
        )
    legend = _bootstrap_legend(result)
    if legend:
        lines.append(legend)
    lines.append(
        "published, other corpora and far larger models (not comparable figure for figure):"
    )
    for p in result.get("published", []):
        figs = ", ".join(
            f"{k.upper() if k == 'cer' else k.replace('top', 'top-')} {100 * p[k]:.1f}%"
            for k in ("cer", "top1", "top20")
            if k in p
        )
        lines.append(f"  {p['system']}, {p['task']}: {figs}")
    return lines


def reliability_plot(result: dict, path: Path) -> None:
    """A reliability diagram per protocol (accuracy of the top-1 against its probability, 10
    bins, the diagonal is perfect calibration; the point size grows with the bin's gaps),
    model and n-gram on the same axes, written as PNG to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    protocols = list(result["protocols"])
    fig, axes = plt.subplots(1, len(protocols), figsize=(4.2 * len(protocols), 4.2), squeeze=False)
    for ax, protocol in zip(axes[0], protocols, strict=True):
        ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="perfect calibration")
        for name, f in result["protocols"][protocol]["decoders"].items():
            bins = [b for b in f.get("reliability", []) if b["n"]]
            if not bins:
                continue
            xs = [b["confidence"] for b in bins]
            ys = [b["accuracy"] for b in bins]
            ax.plot(
                xs, ys, marker="o", label=f"{NAMES.get(name, name)} (ECE {100 * f['ece']:.1f}%)"
            )
            ax.scatter(xs, ys, s=[10 + 200 * b["n"] / max(1, f["gaps"]) for b in bins], alpha=0.3)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("top-1 probability")
        ax.set_ylabel("top-1 exact")
        ax.set_title(f"{protocol} ({result['protocols'][protocol]['gaps']:,} gaps)")
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    with atomic_path(path) as tmp:  # whole or not at all (stoicheia.publish)
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)


def write_outputs(result: dict, out_dir: str | Path) -> list[Path]:
    """Write ``benchmark.json``, ``benchmark.txt`` (the table), ``summary.txt`` (the short
    table) and ``reliability.png`` into
    ``out_dir`` (made if missing); returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [
        out / "benchmark.json",
        out / "benchmark.txt",
        out / "summary.txt",
        out / "reliability.png",
    ]
    atomic_write(paths[0], json.dumps(result, indent=2, ensure_ascii=False, default=float) + "\n")
    atomic_write(paths[1], "\n".join(format_table(result)) + "\n")
    atomic_write(paths[2], "\n".join(summary_lines(result)) + "\n")
    reliability_plot(result, paths[3])
    return paths


__all__ = ["difference_lines", "format_table", "reliability_plot", "summary_lines", "write_outputs"]
