"""``stoicheia report RUN_FOLDER``: a run's curves as one PNG and a small HTML page.

Reads only the run folder (like ``stoicheia status``, safe beside a running job):
``metrics.jsonl`` (per step: loss terms, LR, letters/s, MFU, ``data/phase``), ``evals.jsonl``
(held-out metrics per set) and ``anneal.json`` (the anneal start). Panels: loss terms, held-out
bits per character (with the letter-unigram entropy of the training mix when ``config.json``
and the shards' ``stats.json`` are readable), held-out accuracies and F1, learning rate,
letters per second (and MFU on GPUs). Every panel marks the anneal start (dashed) and every
tier-mix phase switch (dotted), at the step the training console names for it ("step 750:
anneal phase 1 of 2 starts"): the batch index that first trains on the new mix. The
``metrics.jsonl`` line of that batch is step 751 (a line's step counts the batches done), so
a switch is one step before the first line with the new ``data/phase``.
"""

from __future__ import annotations

import html
import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stoicheia.publish import atomic_path, atomic_write
from stoicheia.train import run_files
from stoicheia.train.run_files import read_history

log = logging.getLogger(__name__)

LOSS_TERMS = ("loss/total", "loss/char", "loss/boundary", "loss/dia", "loss/cap", "loss/punct")
LR_KEY = "lr-AdamW/group0"


@dataclass
class RunCurves:
    """What a report shows, read from a run folder (steps are optimizer steps).

    ``steps`` and ``series`` hold the per-step metrics (the later line of a step wins, as after a
    resume); ``evals`` maps ``set -> metric -> [(step, value)]``; ``anneal_start`` the decided
    anneal start (or ``None``); ``phase_switches`` ``[(step, phase)]`` for every change of
    ``data/phase``: the batch index that first trains on the new mix, as the console prints
    it (one less than the step of the first ``metrics.jsonl`` line with the new phase).
    """

    folder: Path
    steps: list[int] = field(default_factory=list)
    series: dict[str, list[float]] = field(default_factory=dict)
    evals: dict[str, dict[str, list[tuple[int, float]]]] = field(default_factory=dict)
    anneal_start: int | None = None
    anneal_reason: str | None = None
    phase_switches: list[tuple[int, int]] = field(default_factory=list)
    unigram_bits: float | None = None


_RUN_FOLDER_HINT = (
    "give the run folder (train.save_folder, or runs/RUN_NAME when checkpoints go to an "
    "object store)"
)


def _read_log(path: Path) -> tuple[list[Any], int, str | None]:
    """The JSON values of the lines of the log ``path``, the number of non-empty lines that are
    not JSON (a line cut by a kill), and what is wrong with the file as a whole: ``None`` when
    it is text or absent. Logs nothing: the caller says what it left out."""
    if not path.exists():
        return [], 0, None
    if path.is_dir():
        return [], 0, f"{path} is a folder, not a JSONL log"
    data = path.read_bytes()
    if not data.strip():
        return [], 0, f"{path} is empty ({len(data)} bytes): the run has logged nothing there yet"
    # line by line: a crash can leave NUL bytes or a cut character in one line, which must not
    # hide the rest of the log
    values: list[Any] = []
    bad = 0
    for raw in data.split(b"\n"):
        if not raw.strip(b" \t\r\x00"):
            bad += bool(raw.strip(b" \t\r"))
            continue
        try:
            line = raw.decode("utf-8")
            if "\x00" in line:
                raise ValueError("NUL byte")
            values.append(json.loads(line))
        except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            bad += 1
    if not values:
        return (
            [],
            0,
            f"{path} is not a JSONL log ({len(data):,} bytes, no line of JSON): not a log this "
            "project writes",
        )
    return values, bad, None


def _step_of(row: Any) -> int | None:
    """The integer step of a log line, or ``None`` for a line without one (or not a mapping)."""
    if not isinstance(row, dict):
        return None
    try:
        return int(row["step"])
    except (KeyError, TypeError, ValueError):
        return None


def read_curves(folder: str | Path) -> RunCurves:
    """Read a run folder (module docstring). Raises ``ValueError`` naming the folder or file
    and what is wrong: no such folder, a file given, neither ``metrics.jsonl`` nor
    ``evals.jsonl`` with a line that has a step (each file said to be empty, binary, or with
    no such line), or a marker file that is not valid JSON. When there is something to draw,
    the lines left out (not JSON, or without a step) are counted in a logged warning."""
    folder = Path(folder)
    if not folder.exists():
        raise ValueError(f"{folder}: no such folder; {_RUN_FOLDER_HINT}")
    if not folder.is_dir():
        raise ValueError(f"{folder} is a file, not a run folder; {_RUN_FOLDER_HINT}")
    metrics_path, evals_path = folder / "metrics.jsonl", folder / run_files.EVALS
    rows, bad, problem = _read_log(metrics_path)
    usable = [(s, r) for s, r in ((_step_of(r), r) for r in rows) if s is not None]
    evals, _, evals_problem = _read_log(evals_path)
    # read_history warns about the lines it leaves out: only when there is something to draw
    history = read_history(folder) if any(_step_of(r) is not None for r in evals) else []
    if not usable and not history:
        problems = []
        for path, whole in ((metrics_path, problem), (evals_path, evals_problem)):
            if whole:
                problems.append(whole)
            elif path.exists():
                problems.append(
                    f"{path}: none of its lines is a JSON record with a step, not a log this "
                    "project writes"
                )
        if problems:
            raise ValueError(f"nothing to draw: {'; '.join(problems)}; {_RUN_FOLDER_HINT}")
        raise ValueError(f"{folder} holds no metrics.jsonl nor evals.jsonl: {_RUN_FOLDER_HINT}")
    if bad or len(usable) < len(rows):
        log.warning(
            "%s: %d line(s) left out: %d not JSON (a line cut by a kill is expected), %d without a "
            "step",
            metrics_path,
            bad + len(rows) - len(usable),
            bad,
            len(rows) - len(usable),
        )
    by_step: dict[int, dict[str, Any]] = {}
    for step, row in usable:
        by_step.setdefault(step, {}).update(row)  # a re-trained step: the later line wins
    curves = RunCurves(folder)
    curves.steps = sorted(by_step)
    keys = sorted(
        {
            k
            for r in by_step.values()
            for k, v in r.items()
            if isinstance(v, (int, float)) and k not in ("step", "time")
        }
    )
    for k in keys:
        curves.series[k] = [float(by_step[s].get(k, math.nan)) for s in curves.steps]
    for row in history:
        for name, value in row["metrics"].items():
            if isinstance(
                value, (int, float)
            ):  # numbers only (NaN stays: a float); an edited line may hold text
                curves.evals.setdefault(row["set"], {}).setdefault(name, []).append(
                    (int(row["step"]), float(value))
                )
    anneal = run_files.read_json(folder, run_files.ANNEAL)
    if anneal is not None and "step" in anneal:
        curves.anneal_start = int(anneal["step"])
        curves.anneal_reason = anneal.get("reason")
    phases = curves.series.get("data/phase", [])
    last = None
    for s, ph in zip(curves.steps, phases, strict=False):
        if math.isnan(ph):
            continue
        if last is not None and ph != last:
            # the line of step s is batch s - 1 (AnnealData logs data/phase at batch_end),
            # and the console names a switch by that batch: "step 750: anneal phase 1 starts"
            curves.phase_switches.append((s - 1, int(ph)))
        last = ph
    from stoicheia.data.corpus_stats import run_unigram_bits

    config = _run_config(folder)
    curves.unigram_bits = run_unigram_bits(config, _shards_of(config, folder))
    return curves


def _shards_of(config: dict, folder: Path) -> Path | None:
    """Where the run's ``data.shard_root`` (usually relative, ``data/shards``: to the folder the
    run was trained in) holds ``stats.json``: under the run folder or a folder above it, as
    ``restore`` finds it (``docs/parallels.md``, "A run folder works wherever it is"), so the
    report of ``stoicheia report /elsewhere/checkpoints/RUN`` draws the letter-unigram line
    from any current folder; ``None`` (the path as given) when none holds it."""
    root = (config.get("data") or {}).get("shard_root") if isinstance(config, dict) else None
    if not isinstance(root, str) or not root or "://" in root or Path(root).is_absolute():
        return None
    here = folder.absolute()
    for base in (here, *here.parents):
        if (base / root / "stats.json").is_file():
            return base / root
    return None


def _run_config(folder: Path) -> dict:
    """The run's ``config.json`` as a dict, ``{}`` when it is missing or unreadable."""
    try:
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return cfg if isinstance(cfg, dict) else {}


def _marks(ax: Any, curves: RunCurves) -> None:
    if curves.anneal_start is not None:
        ax.axvline(curves.anneal_start, color="black", linestyle="--", linewidth=1)
    for s, _ in curves.phase_switches:
        ax.axvline(s, color="tab:purple", linestyle=":", linewidth=1)


def plot_run(curves: RunCurves, png: str | Path) -> Path:
    """Draw the panels of the module docstring into ``png`` (matplotlib, Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(5, 1, figsize=(10, 16), sharex=True)
    ax = axes[0]
    for k in LOSS_TERMS:
        if k in curves.series:
            # a term is exactly 0 on a batch without its labels: no point on a log axis
            ax.plot(
                curves.steps,
                [v if v > 0 else math.nan for v in curves.series[k]],
                label=k.split("/", 1)[1],
                linewidth=1,
            )
    ax.set_ylabel("training loss")
    ax.set_yscale("log")
    ax.legend(loc="upper right", fontsize=8, ncol=3)
    ax = axes[1]
    for name, metrics in curves.evals.items():
        pts = metrics.get("bits_per_char", [])
        if pts:
            ax.plot(*zip(*pts, strict=False), marker="o", markersize=3, label=f"{name}")
    if curves.unigram_bits is not None:
        ax.axhline(curves.unigram_bits, color="grey", linewidth=1, label="letter-unigram entropy")
    ax.set_ylabel("held-out bits/char")
    ax.legend(loc="upper right", fontsize=8)
    ax = axes[2]
    for name, metrics in curves.evals.items():
        for m in ("boundary_f1", "dia_acc", "dia_macro_acc", "punct_acc", "punct_macro_acc"):
            pts = metrics.get(m, [])
            if pts:
                ax.plot(
                    *zip(*pts, strict=False),
                    marker=".",
                    markersize=3,
                    linewidth=1,
                    label=f"{name}/{m}",
                )
    ax.set_ylabel("held-out F1 / accuracy")
    ax.legend(loc="lower right", fontsize=7, ncol=2)
    ax = axes[3]
    if LR_KEY in curves.series:
        ax.plot(curves.steps, curves.series[LR_KEY], color="tab:green")
    ax.set_ylabel("learning rate")
    ax = axes[4]
    if "throughput/letters_per_sec" in curves.series:
        ax.plot(
            curves.steps, curves.series["throughput/letters_per_sec"], color="tab:blue", linewidth=1
        )
    ax.set_ylabel("letters / s")
    if "throughput/mfu" in curves.series:
        twin = ax.twinx()
        twin.plot(
            curves.steps,
            [100 * v for v in curves.series["throughput/mfu"]],
            color="tab:orange",
            linewidth=1,
        )
        twin.set_ylabel("MFU %")
    ax.set_xlabel("step (optimizer steps)")
    for ax in axes:
        _marks(ax, curves)
        ax.grid(alpha=0.3)
    title = f"run {curves.folder.name}"
    if curves.anneal_start is not None:
        title += f"; anneal from step {curves.anneal_start} ({curves.anneal_reason}, dashed)"
    if curves.phase_switches:
        title += "; tier-mix switches dotted"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    png = Path(png)
    with atomic_path(png) as tmp:  # whole or not at all; a full disk: WriteError, one line
        fig.savefig(tmp, dpi=100, format="png")
    plt.close(fig)
    return png


def summary_lines(curves: RunCurves) -> list[str]:
    """A few console lines of what the report shows: the steps logged, the anneal start and
    the tier-mix switches, and per evaluation set its bits/char at the last evaluation and its
    lowest (with their steps)."""
    head = f"run {curves.folder.name}: {len(curves.steps):,} steps logged"
    if curves.steps and curves.steps[-1] != len(curves.steps):  # gaps, or a resumed log
        head += f", the last step {curves.steps[-1]:,}"
    if curves.anneal_start is not None:
        head += f"; anneal from step {curves.anneal_start:,} ({curves.anneal_reason})"
    if curves.phase_switches:
        head += "; tier-mix phases from step " + ", ".join(
            f"{s:,}" for s, _ in curves.phase_switches
        )
    lines = [head]
    for name, metrics in curves.evals.items():
        pts = metrics.get("bits_per_char")
        if not pts:
            continue
        last_step, last = pts[-1]
        low_step, low = min(pts, key=lambda p: (p[1], p[0]))
        lines.append(
            f"  {name}/bits_per_char {last:.4f} at step {last_step:,} "
            f"(lowest {low:.4f} at step {low_step:,}; {len(pts)} evaluations)"
        )
    if curves.unigram_bits is not None:
        lines.append(
            f"  (letter-unigram entropy of the training mix: {curves.unigram_bits:.3f} bits)"
        )
    return lines


def write_report(
    folder: str | Path, out: str | Path | None = None, curves: RunCurves | None = None
) -> tuple[Path, Path]:
    """Write ``report.png`` and ``report.html`` (the PNG, the marks, the last evaluation of every
    set) into ``out`` (default: the run folder), from ``curves`` (default: read from
    ``folder``). Returns both paths. Raises what :func:`read_curves` raises."""
    curves = curves if curves is not None else read_curves(folder)
    out_dir = Path(out) if out is not None else Path(folder)
    out_dir.mkdir(parents=True, exist_ok=True)
    png = plot_run(curves, out_dir / "report.png")
    page = out_dir / "report.html"
    rows = []
    for name, metrics in curves.evals.items():
        last = {m: pts[-1] for m, pts in metrics.items() if pts}
        step = max(s for s, _ in last.values())
        cells = "".join(f"<td>{v:.4f}</td>" for _, (_, v) in sorted(last.items()))
        heads = "".join(f"<th>{html.escape(m)}</th>" for m in sorted(last))
        rows.append(
            f"<h3>{html.escape(name)} (step "
            f"{step})</h3><table><tr>{heads}</tr><tr>{cells}</tr></table>"
        )
    marks = []
    if curves.anneal_start is not None:
        marks.append(
            f"<li>anneal start: step {curves.anneal_start} "
            f"({html.escape(str(curves.anneal_reason))})</li>"
        )
    marks += [f"<li>tier-mix phase {ph} from step {s}</li>" for s, ph in curves.phase_switches]
    last_step = curves.steps[-1] if curves.steps else None
    atomic_write(
        page,
        "<!doctype html><html><head><meta charset='utf-8'><title>Stoicheia run "
        f"{html.escape(curves.folder.name)}</title><style>body{{font-family:sans-serif;max-width:60em}}"
        "td,th{padding:0 .6em;text-align:right}</style></head><body>"
        f"<h1>Run {html.escape(curves.folder.name)}</h1><p>{len(curves.steps)} steps logged"
        + (f", last step {last_step}" if last_step is not None else "")
        + f".</p><ul>{''.join(marks) or '<li>no anneal yet</li>'}</ul>"
        f"<h2>Last held-out evaluation</h2>{''.join(rows) or '<p>none yet</p>'}<h2>Curves</h2><img "
        f"src='{png.name}' alt='training curves' style='max-width:100%'></body></html>\n",
    )
    return png, page
