"""The decision metric that the self-steering plugins read, and rank agreement.

``train.decide_on`` names one metric of one evaluation set, ``SET/METRIC`` (e.g.
``dev/bits_per_char``). Lower is better for bits and losses, higher for accuracies and F1
(:func:`metric_mode`). Every plugin reads the value with :func:`read_decision_metric` at
``EVAL_AFTER_ALL`` and takes rank 0's value and decision (:func:`from_rank0`), so all ranks
act at the same batch.
"""

from __future__ import annotations

import math
from typing import Any

from composer.core import State

#: Metric names where a larger value is better; every other metric is minimised.
HIGHER_IS_BETTER = (
    "boundary_f1",
    "dia_acc",
    "dia_macro_acc",
    "punct_acc",
    "punct_macro_acc",
    "example_letters_correct",
)


def metric_mode(key: str) -> str:
    """``"max"`` if a larger value of metric ``key`` (``SET/METRIC``) is better, else ``"min"``."""
    return "max" if key.rsplit("/", 1)[-1] in HIGHER_IS_BETTER else "min"


def improves(value: float, best: float | None, mode: str, eps: float = 0.0) -> bool:
    """True if ``value`` beats ``best`` by more than ``eps`` in direction ``mode``."""
    if not math.isfinite(value):
        return False
    if best is None:
        return True
    return value < best - eps if mode == "min" else value > best + eps


def read_decision_metric(state: State, key: str) -> float | None:
    """The value of ``SET/METRIC`` from the evaluation that just ran, or ``None`` if that set
    was not evaluated at this step. Reads ``state.eval_metrics[SET][METRIC]`` (Composer has
    already reduced it over ranks). Raises ``KeyError`` naming the sets and metrics there are."""
    label, _, name = key.partition("/")
    metrics = state.eval_metrics.get(label)
    if metrics is None or name not in metrics:
        have = [f"{lab}/{m}" for lab, ms in state.eval_metrics.items() for m in ms]
        raise KeyError(
            f"decision metric {key!r} is not evaluated; evaluated metrics: {', '.join(have)} "
            "(train.decide_on)"
        )
    return float(metrics[name].compute())


def from_rank0(obj: Any) -> Any:
    """Rank 0's ``obj`` on every rank (``dist.broadcast_object_list``; identity with one
    process)."""
    from composer.utils import dist

    if dist.get_world_size() == 1:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]
