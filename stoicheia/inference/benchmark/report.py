"""The restoration benchmark's outputs: a readable table, ``benchmark.json`` and a reliability plot.

:func:`format_table` gives the table printed by ``stoicheia benchmark`` (and written as
``benchmark.txt``): per protocol, the number of gaps and, for every decoder side by side, CER,
top-1/5/20 exact match, the share of right widths (unknown width), the expected calibration
error and restorations per second, then the same by gap length band and the differences
between decoders with their bootstrap intervals (:mod:`.bootstrap`), on the report
half of the dev set (the headline), then without the texts that have a training twin and on
the selection half (:mod:`.views`); then the fusion sweep on the selection half and
the published figures of other systems (other corpora, far larger models). A result written
before the halves is shown as it was (all gaps). :func:`write_outputs` writes the files into
a folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from stoicheia.inference.benchmark.views import CORPUS_VIEW, view_name
from stoicheia.publish import atomic_path, atomic_write

NAMES = {"model": "model", "ngram": "n-gram", "fused": "fused"}
#: how the table names the experts of a fused decoder (its weight axes)
EXPERTS = {"ngram": "the n-gram", "parallels": "the parallels"}
PROTOCOL_NAMES = {
    "hidden": "hidden spans, width given [....]",
    "supplements": "editors' supplements, width given",
    "unknown": "hidden spans, unknown width [---]",
    "edge": "the stone's edge, first or last word as [---]",
}


def _pct(x) -> str:
    return "     -" if x is None else f"{100 * x:5.1f}%"


def _row(label: str, f: dict, speed: bool = True) -> str:
    rate = f.get("restorations_per_second")
    ece = f.get("ece")
    return (
        f"  {label:<20} {f.get('gaps', 0):>6,} {_pct(f.get('cer'))} {_pct(f.get('top1'))} "
        f"{_pct(f.get('top5'))} {_pct(f.get('top20'))} {_pct(f.get('length_right'))} "
        f"{'     -' if ece is None or ece != ece else _pct(ece)} "
        f"{(f'{rate:8.2f}' if rate else '       -') if speed else ''}"
    ).rstrip()


FIGURE_NAMES = {
    "top1": "top-1",
    "top5": "top-5",
    "top20": "top-20",
    "cer": "CER",
    "length_right": "length",
}


def _interval(figure: str, d: dict) -> str:
    """``top-1 +0.6 pts [-1.1, +2.3]``, ``*`` after an interval that excludes 0."""
    name = FIGURE_NAMES.get(figure, figure)
    if d.get("low") is None or d.get("high") is None:
        return f"{name} {100 * d['diff']:+5.1f} pts [no interval]"
    mark = "*" if d["low"] > 0 or d["high"] < 0 else " "
    return (
        f"{name} {100 * d['diff']:+5.1f} pts "
        f"[{100 * d['low']:+5.1f}, {100 * d['high']:+5.1f}]{mark}"
    )


def difference_lines(protocol_result: dict, indent: str = "  ") -> list[str]:
    """One line per decoder pair of a protocol's ``differences``
    (:mod:`~stoicheia.inference.benchmark.bootstrap`): each figure's difference ``a − b`` in
    percentage points with its interval, ``*`` where the interval excludes 0; no line
    without differences."""
    lines = []
    for pair, figs in (protocol_result.get("differences") or {}).items():
        a, _, b = pair.partition("-")
        label = f"{NAMES.get(a, a)} - {NAMES.get(b, b)}"
        cells = "  ".join(_interval(f, d) for f, d in figs.items())
        lines.append(f"{indent}{label:<16} {cells}".rstrip())
    return lines


def band_difference_lines(view: dict, indent: str = "  ") -> list[str]:
    """One line per length band and decoder pair of a view's ``band_differences`` (as
    :func:`difference_lines`, the band before the pair)."""
    lines = []
    for band, pairs in (view.get("band_differences") or {}).items():
        for pair, figs in pairs.items():
            a, _, b = pair.partition("-")
            label = f"{band} {NAMES.get(a, a)} - {NAMES.get(b, b)}"
            cells = "  ".join(_interval(f, d) for f, d in figs.items())
            lines.append(f"{indent}{label:<24} {cells}".rstrip())
    return lines


def fusion_families(result: dict) -> dict[str, dict]:
    """The result's fused decoders ``{name: {"axes", "sweep", "chosen": {expert: w},
    "chosen_on"}}``; a result written before the halves (``{"weights", "chosen": w,
    "chosen_on"}``, one n-gram weight chosen on all gaps) is read as one family ``fused``
    whose sweep holds its figures on all gaps."""
    fu = result.get("fusion") or {}
    if "weights" in fu and not isinstance(fu.get("chosen"), dict):
        return {
            "fused": {
                "axes": {"ngram": [float(w) for w in fu["weights"]]},
                "sweep": [
                    {"weights": {"ngram": float(w)}, "figures": per}
                    for w, per in fu["weights"].items()
                ],
                "chosen": {"ngram": float(fu["chosen"])},
                "chosen_on": fu.get("chosen_on", "?"),
            }
        }
    return fu


def _weights(w: dict) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in w.items())


def _bootstrap_legend(result: dict) -> str | None:
    bs = result.get("bootstrap")
    if not bs:
        return None
    return (
        f"differences a - b on the same gaps, in points, with the {100 * bs['level']:g} % interval "
        f"of a paired bootstrap over the inscriptions ({bs['resamples']:,} resamples, "
        f"seed {bs['seed']}); "
        "* the interval excludes 0 (CER: lower is better)"
    )


def _decoder_rows(decs: dict, speed_from: dict | None = None, bands: bool = True) -> list[str]:
    """The rows of each decoder (``speed_from``: the figures that hold the speed), then their
    failures, then (``bands``) the rows of each length band."""
    lines = []
    for name, f in decs.items():
        rate = (speed_from or {}).get(name, f).get("restorations_per_second")
        lines.append(_row(NAMES.get(name, name), {**f, "restorations_per_second": rate}))
    for name, f in (speed_from or decs).items():
        if f.get("failed"):
            lines.append(
                f"  ({NAMES.get(name, name)}: {f['failed']} gaps could not be restored, scored "
                "as wrong; messages in the JSON)"
            )
    if bands and decs:
        for span in next(iter(decs.values())).get("by_length", {}):
            for name, f in decs.items():
                lines.append(
                    _row(
                        f"{span} letters {NAMES.get(name, name)}",
                        {**f["by_length"][span], "ece": None},
                        speed=False,
                    )
                )
    return lines


def _head_lines(result: dict) -> list[str]:
    c = result["corpus"]
    digits = ", ".join(map(str, c.get("digits", [])))
    lines = [
        f"Restoration benchmark on the inscription dev set of {c['shards']} (I.Sicily numbers "
        f"ending in {digits}; never trained on): {c['inscriptions']:,} inscriptions, "
        f"{c['texts']:,} texts, {c['letters']:,} letters",
    ]
    halves = result.get("halves")
    if halves:
        lines.append(
            f"halves: {len(halves['selection']):,} inscriptions choose the fusion weights "
            f"(selection), {len(halves['report']):,} report the figures (report; the headline); "
            f"{halves['rule']}"
            + ("" if result.get("fusion") else " (no fusion weight was tried in this run)")
        )
    m = result.get("model") or {}
    if m:
        lines.append(
            f"model: {m.get('source')} (step {m.get('step')}); decoder: restore's (one forward "
            f"pass per gap, then a search keeping {result['settings'].get('candidates', 20)} "
            "candidates)"
        )
    ng = result.get("ngram")
    if ng:
        lines.append(
            f"n-gram: letter {ng['order']}-gram (Witten-Bell) on "
            f"{sum(ng['letters'].values()):,} training letters of {ng['shards']}"
        )
    for name, fam in fusion_families(result).items():
        lines.append(
            f"{NAMES.get(name, name)}: the model's search fused with "
            f"{' and '.join(EXPERTS.get(x, x) for x in fam['axes'])} "
            f"(weights {_weights(fam['chosen'])}), chosen on {fam['chosen_on']} "
            "(best mean top-1 over the protocols; weight 0 leaves an expert out)"
        )
        rk = fam.get("ranker")
        if rk:
            fits = "; ".join(
                f"{kind} {f['gaps']:,} gaps ({f['truth_among']:,} with the truth among them), "
                f"top-1 {100 * f['selection_top1']['mixture']:.1f}% by the mixture, "
                f"{100 * f['selection_top1']['ranker']:.1f}% by the ranker"
                + ("" if f["kept"] else ", mixture kept")
                for kind, f in rk["kinds"].items()
            )
            lines.append(
                f"{NAMES.get(name, name)}: ranked by a conditional logit over each gap's "
                f"candidates, one per kind of gap, fitted at that point on the selection half "
                f"({fits}; 'without ranker': the mixture's order)"
            )
    edge = (result.get("fits") or {}).get("parallels_edge")
    if edge and edge.get("figures"):
        tried = ", ".join(
            f"{g} {_pct(f['top1'])} / {_pct(f['length_right'])}" for g, f in edge["figures"].items()
        )
        lines.append(
            f"the stone's edge: a parallel at its own text's edge weighs e^{edge['chosen']:g}, "
            f"chosen on {edge['chosen_on']} by the parallels' top-1, then length right "
            f"(gain top-1 / length right: {tried})"
        )
    cont = result.get("contamination")
    if cont:
        from stoicheia.inference.benchmark.contamination import summary_line

        lines.append(summary_line(cont))
    if c.get("left_out"):
        lines.append(f"left out: {', '.join(f'{k} {v}' for k, v in c['left_out'].items())}")
    legend = _bootstrap_legend(result)
    if legend:
        lines.append(legend)
    return lines


HEAD = (
    f"  {'':<20} {'gaps':>6} {'CER':>6} {'top-1':>6} {'top-5':>6} {'top-20':>6} {'len ok':>6} "
    f"{'ECE':>6} {'restor/s':>8}"
)


def _sweep_lines(result: dict) -> list[str]:
    protos = list(result["protocols"])
    lines = []
    where = "on the selection half" if result.get("halves") else "on all gaps"
    for name, fam in fusion_families(result).items():
        lines += [
            "",
            f"{NAMES.get(name, name)}: fusion weights {where}, top-1 / CER per protocol",
            "  " + f"{'weights':>22}  " + "  ".join(f"{p:>18}" for p in protos),
        ]
        for entry in fam["sweep"]:
            mark = " <- chosen" if entry["weights"] == fam["chosen"] else ""
            cells = "  ".join(
                f"{_pct(entry['figures'].get(p, {}).get('top1'))} / "
                f"{_pct(entry['figures'].get(p, {}).get('cer'))}"
                for p in protos
            )
            lines.append(f"  {_weights(entry['weights']):>22}  {cells}{mark}")
    return lines


def format_table(result: dict) -> list[str]:
    """The lines of the readable table of a :func:`~stoicheia.inference.benchmark.run.benchmark`
    result (module docstring). Shares in per cent; CER = edit distance of the top-1 over the
    truth letters; ECE over 10 bins of the top-1 probability."""
    lines = _head_lines(result)
    fused = bool(result.get("fusion"))
    for protocol, res in result["protocols"].items():
        name = PROTOCOL_NAMES.get(protocol, protocol)
        views = res.get("views")
        if not views:
            lines += ["", f"{name}: {res['gaps']:,} gaps", HEAD]
            lines += _decoder_rows(res["decoders"])
            lines += difference_lines(res) + band_difference_lines(res)
            continue
        rep = views["report"]
        lines += [
            "",
            f"{name}: {res['gaps']:,} gaps; {view_name('report', fused)}: {rep['gaps']:,} gaps of "
            f"{rep['inscriptions']:,} inscriptions",
            HEAD,
        ]
        lines += _decoder_rows(rep["decoders"], res["decoders"])
        lines += difference_lines(rep) + band_difference_lines(rep)
        per_corpus = [v for v in views if v.startswith(CORPUS_VIEW)]
        for view in ("report_without_twins", "selection", *per_corpus):
            v = views[view]
            if view == "report_without_twins" and (
                v["gaps"] == rep["gaps"] and not result.get("contamination")
            ):
                continue  # twins not measured: the same gaps
            lines += [
                f"  {view_name(view, fused)}: {v['gaps']:,} gaps of "
                f"{v['inscriptions']:,} inscriptions"
            ]
            lines += _decoder_rows(v["decoders"], bands=False)
            if view != "selection":
                lines += difference_lines(v)
    lines += _sweep_lines(result)
    lines += ["", "published (other corpora, far larger models; not comparable figure for figure):"]
    for p in result.get("published", []):
        lines.append(f"  {p['system']}, {p['corpus']}, {p['task']}: {published_figures(p)}")
    return lines


def _per_corpus(corpus: dict) -> str:
    """`` (I.Sicily 34, IIP 21, ...)``: the texts of each corpus, most first; nothing for a
    result without them (written before the corpora were told apart)."""
    per = corpus.get("per_corpus") or {}
    if not per:
        return ""
    return (
        " ("
        + ", ".join(f"{k} {v:,}" for k, v in sorted(per.items(), key=lambda kv: (-kv[1], kv[0])))
        + ")"
    )


def published_figures(p: dict) -> str:
    """A published system's figures as the reports print them: ``CER 30.1%, top-1 50.0%,
    top-20 80.3%`` (those ``p`` has: ``cer``, ``top1``, ``top20``, fractions 0 to 1)."""
    return ", ".join(
        f"{k.upper() if k == 'cer' else k.replace('top', 'top-')} {100 * p[k]:.1f}%"
        for k in ("cer", "top1", "top20")
        if k in p
    )


def summary_lines(result: dict) -> list[str]:
    """A short table of a :func:`~stoicheia.inference.benchmark.run.benchmark` result (written as
    ``summary.txt``; the README shows it): per protocol and decoder CER, top-1, top-20 and,
    for the unknown width, the share of right lengths, on the report half (all gaps for a
    result written before the halves), then the differences between decoders with their
    bootstrap intervals (:func:`difference_lines`) there and without the texts that have a
    training twin; then the contamination line and the published anchors."""
    c = result["corpus"]
    fams = fusion_families(result)
    names = {
        **NAMES,
        **{n: f"{NAMES.get(n, n)} ({_weights(f['chosen'])})" for n, f in fams.items()},
    }
    halves = result.get("halves")
    lines = [
        f"inscription dev set: {c['inscriptions']:,} inscriptions never trained on"
        + _per_corpus(c)
        + f", {c['letters']:,} letters"
        + (
            f"; figures on the report half ({len(halves['report']):,} inscriptions)"
            + (
                f", the fusion weights chosen on the other {len(halves['selection']):,}"
                if fams
                else ""
            )
            if halves
            else ""
        ),
    ]
    smallest = []
    for protocol, res in result["protocols"].items():
        label = {
            "hidden": "hidden spans [....]",
            "supplements": "editors' supplements [....]",
            "unknown": "hidden spans, width unknown [---]",
            "edge": "the stone's edge, first or last word [---]",
        }.get(protocol, protocol)
        view = (res.get("views") or {}).get("report") or res
        smallest.append(view["gaps"])
        lines.append(f"{label}, {view['gaps']:,} gaps")
        for name, f in view["decoders"].items():
            row = (
                f"  {names.get(name, name):<13} CER {_pct(f.get('cer'))}  "
                f"top-1 {_pct(f.get('top1'))}  top-20 {_pct(f.get('top20'))}"
            )
            lines.append(
                row
                + (f"  right length {_pct(f.get('length_right'))}" if "length_right" in f else "")
            )
        lines += difference_lines(view)
        clean = (res.get("views") or {}).get("report_without_twins")
        if clean and result.get("contamination"):
            lines.append(f"  without the texts that have a training twin, {clean['gaps']:,} gaps:")
            lines += difference_lines(clean, indent="    ")
    lines += _written_lines(result)
    few = min(smallest) if smallest else 0
    if few < 200:
        lines.append(
            f"few gaps ({few:,} in the smallest protocol): these figures move by several points "
            "with other texts"
        )
    if result.get("contamination"):
        from stoicheia.inference.benchmark.contamination import summary_line

        lines.append(summary_line(result["contamination"]))
    legend = _bootstrap_legend(result)
    if legend:
        lines.append(legend)
    lines.append(
        "published, other corpora and far larger models (not comparable figure for figure):"
    )
    for p in result.get("published", []):
        lines.append(f"  {p['system']}, {p['task']}: {published_figures(p)}")
    return lines


def _written_lines(result: dict) -> list[str]:
    """What ``restore --epidoc`` writes on the report half with the default decoder at the
    floors chosen on the selection half (:func:`~.floors.written_lines`); none for a result
    without halves."""
    from stoicheia.inference.benchmark.floors import choose_floors, written_lines
    from stoicheia.inference.benchmark.parallels import report_winner

    if not result.get("halves"):
        return []
    decoder = report_winner(result) or "fused"
    return written_lines(result, decoder, choose_floors(result, decoder))


def reliability_plot(result: dict, path: Path) -> None:
    """A reliability diagram per protocol (accuracy of the top-1 against its probability, 10
    bins, the diagonal is perfect calibration; the point size grows with the bin's gaps),
    every decoder on the same axes, on the report half (all gaps for a result written before
    the halves), written as PNG to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    protocols = list(result["protocols"])
    fig, axes = plt.subplots(1, len(protocols), figsize=(4.2 * len(protocols), 4.2), squeeze=False)
    for ax, protocol in zip(axes[0], protocols, strict=True):
        ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="perfect calibration")
        res = result["protocols"][protocol]
        shown = (res.get("views") or {}).get("report") or res  # the headline gaps
        for name, f in shown["decoders"].items():
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
        ax.set_title(f"{protocol} ({shown['gaps']:,} gaps)")
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    with atomic_path(path) as tmp:  # whole or not at all (stoicheia.publish)
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)


def write_outputs(result: dict, out_dir: str | Path) -> list[Path]:
    """Write ``benchmark.json``, ``benchmark.txt`` (the table), ``summary.txt`` (the short
    table) and ``reliability.png`` into ``out_dir`` (made if missing), and
    ``contamination.tsv`` (the dev texts' training twins,
    :func:`~.contamination.twin_lines`) when the result measured them; returns
    their paths."""
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
    if result.get("contamination"):
        from stoicheia.inference.benchmark.contamination import twin_lines

        paths.append(out / "contamination.tsv")
        atomic_write(paths[4], "\n".join(twin_lines(result["contamination"])) + "\n")
    return paths


__all__ = [
    "band_difference_lines",
    "difference_lines",
    "format_table",
    "fusion_families",
    "published_figures",
    "reliability_plot",
    "summary_lines",
    "write_outputs",
]
