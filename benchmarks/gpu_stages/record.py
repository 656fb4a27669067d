"""Figures written to disk the moment they exist: one JSON line per figure, flushed and synced.

``OUT/figures.jsonl`` holds lines ``{"stage": NAME, "key": KEY, "value": VALUE, "t": SECONDS}``
(``t``: seconds since the check started, from ``GPU_CHECK_T0``). A run stopped at any point
(a killed stage, a machine given back) still leaves every figure measured before; the
driver's ``figures.json`` and ``figures.txt`` are summaries of this file
(:func:`read_figures`, :func:`text_report`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

FIGURES = "figures.jsonl"


def _plain(value: Any) -> Any:
    """``value`` made JSON-serialisable: floats rounded to 6 significant digits, tensors and
    other objects as their ``str``."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)


class Recorder:
    """Appends the figures of stage ``stage`` to ``out/figures.jsonl``.

    ``echo``: also print each figure (the stage's log). Only one process writes at a time
    (stages run one after the other; in a several-GPU stage only rank 0 records).
    """

    def __init__(self, out: Path, stage: str, echo: bool = True) -> None:
        self.path = Path(out) / FIGURES
        self.stage = stage
        self.echo = echo
        self.t0 = float(os.environ.get("GPU_CHECK_T0", time.time()))

    def put(self, key: str, value: Any) -> Any:
        """Write one figure now (flushed and fsynced); returns ``value``."""
        line = {
            "stage": self.stage,
            "key": key,
            "value": _plain(value),
            "t": round(time.time() - self.t0, 1),
        }
        text = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")
        with open(self.path, "ab+") as f:
            # a line a killed writer left unfinished is closed first, so this one stays whole
            if f.seek(0, os.SEEK_END) > 0:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    text = b"\n" + text
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if self.echo:
            print(f"[{self.stage}] {key}: {json.dumps(line['value'], ensure_ascii=False)}")
            sys.stdout.flush()
        return value

    def update(self, figures: dict[str, Any]) -> None:
        """:meth:`put` each item of ``figures``."""
        for k, v in figures.items():
            self.put(k, v)


def read_figures(out: Path) -> dict[str, dict[str, Any]]:
    """The figures of ``out/figures.jsonl`` as ``{stage: {key: value}}`` in the order written
    (a later line of the same key replaces the earlier one). A line cut off by a kill is
    skipped."""
    path = Path(out) / FIGURES
    stages: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return stages
    for line in path.read_text("utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        stages.setdefault(row["stage"], {})[row["key"]] = row["value"]
    return stages


def text_report(figures: dict[str, dict[str, Any]]) -> str:
    """``[status] stage`` and one ``key: value`` line per figure; a ``*_table`` figure (a list
    of rows) is printed as an aligned table."""
    lines = []
    for stage, fig in figures.items():
        lines.append(f"[{fig.get('status', '?')}] {stage}")
        for k, v in fig.items():
            if k == "status":
                continue
            if k.endswith("_table") and isinstance(v, list) and v and isinstance(v[0], list):
                lines.append(f"    {k}:")
                widths = [max(len(str(r[i])) for r in v) for i in range(len(v[0]))]
                for r in v:
                    cells = [str(c).ljust(w) for c, w in zip(r, widths, strict=True)]
                    lines.append("      " + "  ".join(cells).rstrip())
            else:
                lines.append(f"    {k}: {json.dumps(v, ensure_ascii=False)}")
    return "\n".join(lines) + "\n"
