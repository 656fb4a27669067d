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

import ast
import dataclasses
import difflib
import functools
import importlib
import importlib.util
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stoicheia.config import LOGGERS as CONFIG_LOGGERS
from stoicheia.config import ConfigError, RunConfig

if TYPE_CHECKING:
    from stoicheia.train.algorithms.gradient_guard import GradientGuard
    from stoicheia.train.callbacks.anneal_control import AnnealControl

#: name -> ``"module:Class"`` of each Callback. Composer's own monitors are listed beside ours.
#: Classes are imported only when a run builds them: checking a configuration reads their
#: constructor signatures from the source (:func:`signature`), so a typo answers in a second.
CALLBACKS: dict[str, str] = {
    "training_monitor": "stoicheia.train.callbacks.training_monitor:TrainingMonitor",
    "lr_monitor": "composer.callbacks.lr_monitor:LRMonitor",
    "speed_monitor": "composer.callbacks.speed_monitor:SpeedMonitor",
    "memory_monitor": "composer.callbacks.memory_monitor:MemoryMonitor",
    "optimizer_monitor": "composer.callbacks.optimizer_monitor:OptimizerMonitor",
    "runtime_estimator": "composer.callbacks.runtime_estimator:RuntimeEstimator",
    "restoration_example": "stoicheia.train.callbacks.restoration_example:RestorationExample",
    "auto_anneal": "stoicheia.train.callbacks.auto_anneal:AutoAnneal",
    "anneal_data": "stoicheia.train.callbacks.anneal_data:AnnealData",
    "pre_anneal_checkpoint": "stoicheia.train.callbacks.pre_anneal_checkpoint:PreAnnealCheckpoint",
    "record_log": "stoicheia.train.callbacks.record_log:RecordLog",
    "best_checkpoint": "stoicheia.train.callbacks.best_checkpoint:BestCheckpoint",
    "anneal_early_stop": "stoicheia.train.callbacks.anneal_early_stop:AnnealEarlyStop",
    "preemption": "stoicheia.train.callbacks.preemption:Preemption",
}

#: name -> ``"module:Class"`` of each Algorithm.
ALGORITHMS: dict[str, str] = {
    "gradient_guard": "stoicheia.train.algorithms.gradient_guard:GradientGuard"
}

#: name -> ``"module:Class"`` (or factory) of each logger destination. ``jsonl`` (the run's
#: ``metrics.jsonl``) is always on, ``store_uploader`` whenever ``train.save_folder`` is an
#: object store; ``train.loggers`` adds the others by name (:data:`stoicheia.config.LOGGERS`).
LOGGERS: dict[str, str] = {
    "jsonl": "stoicheia.train.loggers.jsonl_logger:JSONLLogger",
    "store_uploader": "stoicheia.train.loggers.store_uploader:StoreUploader",
    "tensorboard": "stoicheia.train.loggers.tensorboard:tensorboard_logger",
}
assert set(CONFIG_LOGGERS) <= set(LOGGERS), "every name train.loggers accepts is registered"


@dataclass
class LoggerContext:
    """What the builder injects into logger destinations, by constructor parameter name."""

    metrics_file: Path
    run_folder: Path
    save_folder: str
    log_every: int
    retry_seconds: float  # train.upload_retry_seconds
    keep: int = (
        -1
    )  # train.save_num_checkpoints_to_keep (the store keeps as many periodic checkpoints)
    save_interval: int = 0  # train.save_interval (batches)


def logger_names(cfg: RunConfig, remote: bool) -> list[str]:
    """The logger destinations of a run, in order: ``jsonl``, then ``train.loggers``, then
    ``store_uploader`` when ``remote`` (an object-store ``train.save_folder``)."""
    return [
        "jsonl",
        *[n for n in cfg.train.loggers if n not in ("jsonl", "store_uploader")],
        *(["store_uploader"] if remote else []),
    ]


def build_logger(name: str, ctx: LoggerContext) -> Any:
    """Build logger destination ``name`` with the context parameters it takes."""
    module, _, attr = LOGGERS[name].partition(":")
    factory = getattr(importlib.import_module(module), attr)
    params = inspect.signature(factory).parameters
    fields = {f.name for f in dataclasses.fields(LoggerContext)}
    return factory(**{p: getattr(ctx, p) for p in params if p in fields})


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


def _table(kind: str) -> dict[str, str]:
    return {"callbacks": CALLBACKS, "algorithms": ALGORITHMS}[kind]


def plugin_class(kind: str, name: str) -> type:
    """The class of plugin ``name`` of ``kind`` (``callbacks`` or ``algorithms``), imported now."""
    module, _, cls = _table(kind)[name].partition(":")
    return getattr(importlib.import_module(module), cls)


@dataclass(frozen=True)
class Param:
    """One constructor parameter: its name, kind (``inspect.Parameter`` kinds) and default
    (``inspect.Parameter.empty`` if it has none, :data:`UNKNOWN` if it is not a literal)."""

    name: str
    kind: Any
    default: Any


#: The default of a parameter whose default expression is not a Python literal.
UNKNOWN = object()


def _source_file(module: str) -> Path | None:
    """The ``.py`` file of ``module``, found without importing it or its packages."""
    top, *rest = module.split(".")
    spec = importlib.util.find_spec(top)  # a top-level name: nothing is imported
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*rest)
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _literal(node: ast.expr | None) -> Any:
    if node is None:
        return inspect.Parameter.empty
    try:
        return ast.literal_eval(node)
    except ValueError:
        return UNKNOWN


def _ast_signature(file: Path, cls: str) -> list[Param] | None:
    tree = ast.parse(file.read_text(encoding="utf-8"))
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None)
    init = (
        next(
            (n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
        )
        if node
        else None
    )
    if init is None:
        return None  # inherited constructor: ask the class itself
    a = init.args
    out: list[Param] = []
    positional = [*a.posonlyargs, *a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for arg, default in zip(positional, defaults, strict=True):
        kind = (
            inspect.Parameter.POSITIONAL_ONLY
            if arg in a.posonlyargs
            else inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        out.append(Param(arg.arg, kind, _literal(default)))
    if a.vararg is not None:
        out.append(Param(a.vararg.arg, inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.empty))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out.append(Param(arg.arg, inspect.Parameter.KEYWORD_ONLY, _literal(default)))
    if a.kwarg is not None:
        out.append(Param(a.kwarg.arg, inspect.Parameter.VAR_KEYWORD, inspect.Parameter.empty))
    return [p for p in out if p.name != "self"]


@functools.cache
def signature(kind: str, name: str) -> tuple[Param, ...]:
    """The constructor parameters of plugin ``name`` of ``kind``, read from its source file
    (its ``__init__``) without importing Composer or torch; a class without its own
    ``__init__`` is imported and inspected. ``tests/test_plugins.py`` checks that both ways
    agree for every registered plugin."""
    module, _, cls = _table(kind)[name].partition(":")
    file = _source_file(module)
    params = _ast_signature(file, cls) if file is not None else None
    if params is None:
        real = inspect.signature(plugin_class(kind, name).__init__).parameters.values()
        params = [Param(p.name, p.kind, p.default) for p in real if p.name != "self"]
    return tuple(params)


def _check_type(where: str, value: Any, default: Any) -> None:
    """A value for an option whose default is a number or a bool must be one too."""
    if default is inspect.Parameter.empty or default is None or default is UNKNOWN:
        return
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, (int, float)):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if (
            isinstance(default, int)
            and not isinstance(default, bool)
            and isinstance(value, float)
            and not value.is_integer()
        ):
            ok = False
    else:
        return
    if not ok:
        raise ConfigError(
            f"{where}: expected {type(default).__name__} (default {default!r}), got {value!r}"
        )


def _closest(word: str, options: list[str]) -> str:
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.4)
    return f"did you mean '{close[0]}'?" if close else f"valid: {', '.join(sorted(options))}"


def _user_params(kind: str, name: str) -> list[str]:
    return [
        p.name
        for p in signature(kind, name)
        if p.name not in CONTEXT_FIELDS
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]


def resolve(section: Mapping[str, Any] | None, kind: str) -> list[tuple[str, dict[str, Any]]]:
    """``[(name, kwargs), ...]`` of the plugins switched on for section ``kind``
    (``callbacks`` or ``algorithms``): the defaults, then the YAML's entries in order.

    Raises :class:`ConfigError` for an unknown name or kwarg (naming the closest valid one), a
    kwarg that the run injects, or a value that is neither a mapping nor true/false.
    """
    registry, defaults = (
        (CALLBACKS, DEFAULT_CALLBACKS) if kind == "callbacks" else (ALGORITHMS, DEFAULT_ALGORITHMS)
    )
    chosen: dict[str, dict[str, Any]] = {k: dict(v) for k, v in defaults.items()}
    for name, value in (section or {}).items():
        if name not in registry:
            other, other_kind = (
                (ALGORITHMS, "algorithms") if kind == "callbacks" else (CALLBACKS, "callbacks")
            )
            if name in other:
                raise ConfigError(
                    f"{kind}: '{name}' is one of the {other_kind}: set it under {other_kind}.{name}"
                )
            raise ConfigError(
                f"{kind}: unknown {kind[:-1]} '{name}'; {_closest(str(name), list(registry))}"
            )
        if value is False or value is None:
            chosen.pop(name, None)
            continue
        if value is True:
            value = {}
        if not isinstance(value, Mapping):
            raise ConfigError(
                f"{kind}.{name}: give a mapping of options, true or false, not {value!r}"
            )
        allowed = _user_params(kind, name)
        params = {p.name: p for p in signature(kind, name)}
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
    cls = plugin_class(kind, name)
    params = inspect.signature(cls.__init__).parameters
    injected = {p: getattr(ctx, p) for p in params if p in CONTEXT_FIELDS}
    try:
        return cls(**injected, **kwargs)
    except (ValueError, TypeError) as err:
        raise ConfigError(f"{kind}.{name}: {err}") from err
