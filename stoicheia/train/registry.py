"""Plugins built by name from the ``callbacks:`` and ``algorithms:`` sections of the YAML.

As in llm-foundry, each plugin has a registered name; the YAML gives ``{name: {kwargs}}``::

    callbacks:
      auto_anneal: {stall_window: 8, stall_eps: 0.002}
      anneal_early_stop: {patience: 3}
      restoration_example: false        # switched off
    algorithms:
      gradient_guard: {max_consec_skips: 25}

The sections are merged into the defaults (:data:`DEFAULT_CALLBACKS`,
:data:`DEFAULT_ALGORITHMS`): a listed name is switched on with its kwargs, ``false`` switches a
default off. Constructor parameters named like a field of :class:`RunContext` (the run's
``control``, ``loader``, ``decide_on``...) are filled in by the builder and cannot be given in
the YAML. An unknown name or kwarg is a :class:`~stoicheia.config.ConfigError` naming the
closest valid one.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from composer.callbacks import (
    LRMonitor,
    MemoryMonitor,
    OptimizerMonitor,
    RuntimeEstimator,
    SpeedMonitor,
)

from stoicheia.config import ConfigError, RunConfig
from stoicheia.train.algorithms.gradient_guard import GradientGuard
from stoicheia.train.callbacks.anneal_control import AnnealControl
from stoicheia.train.callbacks.anneal_data import AnnealData
from stoicheia.train.callbacks.anneal_early_stop import AnnealEarlyStop
from stoicheia.train.callbacks.auto_anneal import AutoAnneal
from stoicheia.train.callbacks.best_checkpoint import BestCheckpoint
from stoicheia.train.callbacks.pre_anneal_checkpoint import PreAnnealCheckpoint
from stoicheia.train.callbacks.preemption import Preemption
from stoicheia.train.callbacks.record_log import RecordLog
from stoicheia.train.callbacks.restoration_example import RestorationExample
from stoicheia.train.callbacks.training_monitor import TrainingMonitor

#: name -> Callback class. Composer's own monitors are listed beside ours.
CALLBACKS: dict[str, type] = {
    "training_monitor": TrainingMonitor,
    "lr_monitor": LRMonitor,
    "speed_monitor": SpeedMonitor,
    "memory_monitor": MemoryMonitor,
    "optimizer_monitor": OptimizerMonitor,
    "runtime_estimator": RuntimeEstimator,
    "restoration_example": RestorationExample,
    "auto_anneal": AutoAnneal,
    "anneal_data": AnnealData,
    "pre_anneal_checkpoint": PreAnnealCheckpoint,
    "record_log": RecordLog,
    "best_checkpoint": BestCheckpoint,
    "anneal_early_stop": AnnealEarlyStop,
    "preemption": Preemption,
}

#: name -> Algorithm class.
ALGORITHMS: dict[str, type] = {"gradient_guard": GradientGuard}

#: Switched on unless the YAML says ``name: false``.
DEFAULT_CALLBACKS: dict[str, dict[str, Any]] = {
    "training_monitor": {},
    "lr_monitor": {},
    "restoration_example": {},
    "auto_anneal": {},
    "anneal_data": {},
    "pre_anneal_checkpoint": {},
    "best_checkpoint": {},
    "anneal_early_stop": {},
    "preemption": {},
}
DEFAULT_ALGORITHMS: dict[str, dict[str, Any]] = {"gradient_guard": {}}


@dataclass
class RunContext:
    """What the builder injects into plugins, by constructor parameter name."""

    control: AnnealControl
    loader: Any  # stoicheia.data.loader.PackedLoader
    decide_on: str
    run_folder: Path
    save_folder: str
    tier_weights: dict[str, float]
    eval_records: list[Any]
    log_every: int
    clip_norm: float | None
    guard: GradientGuard | None = None


CONTEXT_FIELDS = tuple(f.name for f in dataclasses.fields(RunContext))


#: Where the YAML sets what the run injects (for error messages).
CONTEXT_KEYS = {
    "decide_on": "train.decide_on",
    "tier_weights": "data.tier_weights",
    "log_every": "train.log_every",
    "clip_norm": "train.clip_norm",
    "save_folder": "train.save_folder",
    "run_folder": "train.save_folder",
}


def _check_type(where: str, value: Any, default: Any) -> None:
    """A value for an option whose default is a number or a bool must be one too."""
    if default is inspect.Parameter.empty or default is None:
        return
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, (int, float)):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if isinstance(default, int) and not isinstance(default, bool) and isinstance(value, float) and not value.is_integer():
            ok = False
    else:
        return
    if not ok:
        raise ConfigError(f"{where}: expected {type(default).__name__} (default {default!r}), got {value!r}")


def _closest(word: str, options: list[str]) -> str:
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.4)
    return f"did you mean '{close[0]}'?" if close else f"valid: {', '.join(sorted(options))}"


def _user_params(cls: type) -> list[str]:
    params = inspect.signature(cls.__init__).parameters
    return [p for p in params if p != "self" and p not in CONTEXT_FIELDS and params[p].kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]


def resolve(section: Mapping[str, Any] | None, kind: str) -> list[tuple[str, dict[str, Any]]]:
    """``[(name, kwargs), ...]`` of the plugins switched on for section ``kind``
    (``callbacks`` or ``algorithms``): the defaults, then the YAML's entries in order.

    Raises :class:`ConfigError` for an unknown name or kwarg (naming the closest valid one), a
    kwarg that the run injects, or a value that is neither a mapping nor true/false.
    """
    registry, defaults = (CALLBACKS, DEFAULT_CALLBACKS) if kind == "callbacks" else (ALGORITHMS, DEFAULT_ALGORITHMS)
    chosen: dict[str, dict[str, Any]] = {k: dict(v) for k, v in defaults.items()}
    for name, value in (section or {}).items():
        if name not in registry:
            other, other_kind = (ALGORITHMS, "algorithms") if kind == "callbacks" else (CALLBACKS, "callbacks")
            if name in other:
                raise ConfigError(f"{kind}: '{name}' is one of the {other_kind}: set it under {other_kind}.{name}")
            raise ConfigError(f"{kind}: unknown {kind[:-1]} '{name}'; {_closest(str(name), list(registry))}")
        if value is False or value is None:
            chosen.pop(name, None)
            continue
        if value is True:
            value = {}
        if not isinstance(value, Mapping):
            raise ConfigError(f"{kind}.{name}: give a mapping of options, true or false, not {value!r}")
        allowed = _user_params(registry[name])
        params = inspect.signature(registry[name].__init__).parameters
        for key in value:
            if key in CONTEXT_FIELDS:
                where = CONTEXT_KEYS.get(key)
                hint = f"set {where} instead" if where else "it cannot be set"
                raise ConfigError(f"{kind}.{name}.{key} is set by the run, not in {kind}: {hint}")
            if key not in allowed:
                hint = _closest(str(key), allowed) if allowed else "it takes no options"
                raise ConfigError(f"{kind}.{name}: unknown option '{key}'; {hint}")
            _check_type(f"{kind}.{name}.{key}", value[key], params[key].default)
        chosen[name] = dict(value)
    return list(chosen.items())


def check_plugins(cfg: RunConfig) -> None:
    """Validate the ``callbacks`` and ``algorithms`` sections of ``cfg`` without building
    anything (raises :class:`ConfigError`)."""
    resolve(cfg.callbacks, "callbacks")
    resolve(cfg.algorithms, "algorithms")


def build(kind: str, name: str, kwargs: Mapping[str, Any], ctx: RunContext) -> Any:
    """Instantiate plugin ``name`` of ``kind`` with ``kwargs`` plus the context parameters it
    takes. A ``ValueError`` from its constructor becomes a :class:`ConfigError` naming it."""
    cls = (CALLBACKS if kind == "callbacks" else ALGORITHMS)[name]
    params = inspect.signature(cls.__init__).parameters
    injected = {p: getattr(ctx, p) for p in params if p in CONTEXT_FIELDS}
    try:
        return cls(**injected, **kwargs)
    except (ValueError, TypeError) as err:
        raise ConfigError(f"{kind}.{name}: {err}") from err
