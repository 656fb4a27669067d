"""A benchmark folder's outputs made again from its ``benchmark.json``, with the bootstrap
intervals added (:func:`rewrite_folder`; ``scripts/benchmark_intervals.py FOLDER``): no
decoder runs again. It stands above the modules it joins (:mod:`.views`, :mod:`.bootstrap`,
:mod:`.report`), which do not import one another in a circle.
"""

from __future__ import annotations

import json
from pathlib import Path

from stoicheia.inference.benchmark.bootstrap import RESAMPLES, add_differences
from stoicheia.inference.benchmark.report import write_outputs
from stoicheia.inference.benchmark.views import add_views


def rewrite_folder(
    folder: str | Path,
    out: str | Path | None = None,
    resamples: int = RESAMPLES,
    seed: int | None = None,
) -> list[Path]:
    """Read ``FOLDER/benchmark.json`` (written by ``stoicheia benchmark``), add the intervals
    (:func:`~.bootstrap.add_differences`, no decoder runs again) and write the benchmark's outputs
    (:func:`~.report.write_outputs`) into ``out`` (default
    ``folder`` itself). Returns the paths written. Raises ``ValueError`` naming the file for a
    missing, unreadable or incomplete ``benchmark.json``."""
    path = Path(folder) / "benchmark.json"
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(
            f"{path}: no such file; give the --out folder of `stoicheia benchmark`"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(
            f"{path}: not a readable benchmark result ({err}); run the benchmark again"
        ) from None
    if not isinstance(result, dict) or not isinstance(result.get("protocols"), dict):
        raise ValueError(
            f"{path}: no 'protocols' in it; give a benchmark.json of `stoicheia benchmark`"
        )
    try:
        add_differences(add_views(result), resamples, seed)
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path}: {err}") from None
    return write_outputs(result, Path(out) if out is not None else Path(folder))


__all__ = ["rewrite_folder"]
