"""Typed run configuration: YAML plus ``key=value`` overrides, checked against dataclasses.

``load_config("yamls/demo.yaml", ["train.lr=1e-3"])`` returns a :class:`RunConfig`. An unknown
key anywhere is a :class:`ConfigError` that names the key, the file, and the closest valid
key; a value of the wrong type is an error naming the key and the expected type.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from stoicheia.model.config import EVAL_METRIC_NAMES, EncoderConfig
from stoicheia.noise import NoiseConfig

#: Mapping-valued keys: a YAML file that sets one replaces the whole default mapping.
MAPPING_KEYS = (
    "data.tier_weights",
    "noise.weights",
    "noise.half_word_anchor",
    "noise.channel_known",
)


#: Logger destinations ``train.loggers`` may add beside the JSONL metric file.
LOGGERS = ("tensorboard",)


class ConfigError(ValueError):
    """The configuration is invalid; the message names the key and the fix."""


_CREDENTIAL_WORDS = (
    "secret",
    "password",
    "passwd",
    "access_key",
    "accesskey",
    "token",
    "credential",
    "api_key",
    "apikey",
)
_CREDENTIAL_HINT = (
    "credentials are never read from the config: set AWS_ACCESS_KEY_ID / "
    "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, ~/.aws/credentials; COMPOSER_SFTP_KEY_FILE for "
    "sftp) in the job's environment"
)


def _check_uri(key: str, value: str | None, source: str) -> None:
    """Reject an object-store URI that carries a secret (``s3://KEY:SECRET@bucket``, a
    password in ``sftp://user:pw@host``, a signed query string)."""
    from urllib.parse import urlparse

    if value is None or "://" not in value:
        return
    p = urlparse(value)
    if p.password is not None or (p.username is not None and p.scheme != "sftp") or p.query:
        # the message must not repeat the secret
        raise ConfigError(
            f"{source}: {key}: the URI {p.scheme}://... holds credentials or a query string; "
            f"{_CREDENTIAL_HINT}"
        )


@dataclass
class DataConfig:
    """Where the shards are and how records become packed rows.

    ``seq_len`` is the row length T in letter slots; ``records_per_batch`` records are read
    and noised per DataLoader worker batch; ``tier_weights`` are each tier's share of the
    **letters** read (normalised over tiers with weight > 0; turned into stream proportions by
    :func:`stoicheia.data.tier_mix.record_proportions`); a tier read more than ``max_reads``
    times over the planned run is warned about at start.
    """

    shard_root: str = "data/shards"
    remote: str | None = None  # object-store URI with the same layout as shard_root
    local_cache: str | None = None  # local folder for shards downloaded from `remote`
    tier_weights: dict[str, float] = field(
        default_factory=lambda: {"gold": 0.987, "silver": 0.004, "bronze": 0.009}
    )
    max_reads: float = 4.0  # warn above this many reads of a tier over the planned run
    seq_len: int = 8192
    records_per_batch: int = 16
    num_workers: int = 2
    epoch_size: int | None = None  # samples per stream epoch; None = the streams' size
    shuffle_seed: int = 9176
    num_canonical_nodes: int | None = None
    min_fragment: int = 16
    eval_sets: list[str] = field(default_factory=lambda: ["holdout", "dev"])  # holdout | dev | all
    eval_records: int = 256  # per evaluation set
    eval_rows: int = 4
    eval_t: float = 0.30
    eval_seed: int = 1234


@dataclass
class TrainConfig:
    """Optimisation, schedule, checkpointing and logging. Steps are optimizer steps (batches)."""

    micro_batch_rows: int = 4  # rows per forward/backward on one device
    # Rows per optimizer step over all processes. Set it (and leave grad_accum null) so that a
    # run resumed on another number of processes keeps its batch: grad_accum is derived.
    global_batch_rows: int | None = None
    grad_accum: int | None = None  # micro-batches per step per device; null: derived (or 1)
    lr: float = 3e-4
    weight_decay: float = 0.1
    betas: list[float] = field(default_factory=lambda: [0.9, 0.95])
    eps: float = 1e-8
    clip_norm: float = 1.0
    aux_weight: float = 0.1  # lambda of the auxiliary cross-entropies
    nominal_steps: int = 120_000
    max_steps: int = 160_000
    warmup_frac: float = 0.04
    decay_frac: float = 0.20
    final_lr_frac: float = 0.02
    precision: str = "auto"  # auto | fp32 | amp_bf16
    compile: bool = False  # torch.compile the encoder's trunk (masks stay outside the graph)
    # recompute each block's activations in the backward pass: same loss and gradients, about
    # a third more compute, activation memory of one block instead of all (cards under 80 GB)
    activation_checkpointing: bool = False
    device: str = "auto"  # auto | cpu | gpu
    # DDP gradient all-reduce in bf16 (torch's bf16_compress_hook: half the bytes on the
    # wire, the sum still divided in fp32): auto = on for GPU runs in amp_bf16 on several GPUs
    grad_compression: str = "auto"  # auto | bf16 | none
    save_folder: str = "checkpoints/{run_name}"  # local path or s3:// gs:// oci:// sftp:// URI
    upload_retry_seconds: float = 600.0  # an object store failing this long stops the run
    save_interval: int = 2000  # batches; evaluation runs at every checkpoint
    save_num_checkpoints_to_keep: int = -1
    autoresume: bool = True
    load_path: str | None = None
    log_every: int = 10  # batches between console lines
    metrics_file: str = "{save_folder}/metrics.jsonl"
    loggers: list[str] = field(default_factory=list)  # extra logger destinations: tensorboard
    decide_on: str | None = (
        None  # SET/METRIC the plugins decide from; None = first set's bits_per_char
    )


@dataclass
class RunConfig:
    """A whole run: ``run_name``, ``seed``, the four sections, and the plugins.

    ``callbacks`` and ``algorithms`` map plugin names to their options (``{name: {kwargs}}``
    or ``name: false``); they are merged into the defaults and checked by
    :mod:`stoicheia.train.registry`.
    """

    run_name: str = "stoicheia"
    seed: int = 17
    data: DataConfig = field(default_factory=DataConfig)
    noise: NoiseConfig = field(default_factory=NoiseConfig)
    model: EncoderConfig = field(default_factory=EncoderConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    callbacks: dict[str, Any] = field(default_factory=dict)
    algorithms: dict[str, Any] = field(default_factory=dict)


def _check_keys(user: Any, schema: type, where: str, source: str) -> None:
    if not isinstance(user, DictConfig):
        return
    fields = {f.name: f for f in dataclasses.fields(schema)}
    for key in user.keys():
        if key not in fields and any(
            w in str(key).lower().replace("-", "_") for w in _CREDENTIAL_WORDS
        ):
            raise ConfigError(
                f"{source}: '{where}{key}' looks like a credential; {_CREDENTIAL_HINT}"
            )
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1, cutoff=0.5)
            hint = (
                f"; did you mean '{where}{close[0]}'?"
                if close
                else f"; valid keys: {', '.join(fields)}"
            )
            raise ConfigError(f"{source}: unknown key '{where}{key}'{hint}")
        ftype = fields[key].type
        sub = _dataclass_type(ftype)
        if sub is not None:
            _check_keys(user[key], sub, f"{where}{key}.", source)


def _dataclass_type(ftype: Any) -> type | None:
    for cls in (DataConfig, TrainConfig, NoiseConfig, EncoderConfig):
        if ftype in (cls, cls.__name__):
            return cls
    return None


def load_config(path: str | Path, overrides: list[str] | None = None) -> RunConfig:
    """Read a YAML run config and apply ``section.key=value`` overrides.

    Raises:
        ConfigError: missing file, YAML syntax error, unknown key (with the closest valid
            key), wrong value type, or a value that a section's ``validate`` rejects.
    """
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: config file not found (the recipes' configs are in yamls/)")
    try:
        user = OmegaConf.load(path)
    except Exception as err:  # yaml errors carry the line
        raise ConfigError(f"{path}: cannot parse YAML: {err}") from err
    if not isinstance(user, DictConfig):
        raise ConfigError(f"{path}: the top level must be a mapping of keys, not a list")
    _check_keys(user, RunConfig, "", str(path))
    cli = None
    if overrides:
        try:
            cli = OmegaConf.from_dotlist(list(overrides))
        except Exception as err:
            raise ConfigError(f"command line: cannot parse overrides {overrides}: {err}") from err
        _check_keys(cli, RunConfig, "", "command line")
    try:
        base = OmegaConf.structured(RunConfig)
        # A mapping given in the YAML file replaces the default mapping instead of being merged
        # into it: `tier_weights: {gold: 1.0}` means gold only. Command-line keys still merge.
        for key in MAPPING_KEYS:
            if OmegaConf.select(user, key) is not None:
                OmegaConf.update(base, key, {}, merge=False)
        merged = OmegaConf.merge(base, user)
        if cli is not None:
            merged = OmegaConf.merge(merged, cli)
        cfg: RunConfig = OmegaConf.to_object(merged)  # type: ignore[assignment]
    except OmegaConfBaseException as err:
        where = f"{path} or the command line" if cli is not None else str(path)
        raise ConfigError(f"{where}: {err.msg if hasattr(err, 'msg') else err}".strip()) from err
    except ValueError as err:  # a section's own check (NoiseConfig validates on construction)
        raise ConfigError(f"{path}: {err}") from err
    given = frozenset(o.split("=", 1)[0].strip() for o in overrides or [])
    validate(cfg, str(path), given)
    return cfg


def validate(
    cfg: RunConfig, source: str = "config", overridden: frozenset[str] = frozenset()
) -> None:
    """Check values that types alone cannot; raises :class:`ConfigError` naming the key and
    where it was given: ``source`` (the YAML file), or ``command line`` for a key in
    ``overridden`` (the keys of the command line's ``section.key=value`` overrides)."""

    def bad(key: str, msg: str) -> ConfigError:
        keys = {k.strip() for k in key.split("/")}
        where = "command line" if keys & overridden else source
        return ConfigError(f"{where}: {key}: {msg}")

    d, t = cfg.data, cfg.train
    if d.seq_len < 32:
        raise bad("data.seq_len", f"must be >= 32 slots, got {d.seq_len}")
    if d.seq_len < cfg.model.char_window:
        raise bad(
            "data.seq_len",
            f"({d.seq_len} slots) is smaller than model.char_window ({cfg.model.char_window}): "
            "a row must hold at least one local attention window; raise data.seq_len to >= "
            f"{cfg.model.char_window} or lower model.char_window",
        )
    if d.records_per_batch < 1:
        raise bad("data.records_per_batch", "must be >= 1")
    if d.num_workers < 0:
        raise bad("data.num_workers", "must be >= 0")
    if d.eval_records < 1 or d.eval_rows < 1:
        raise bad("data.eval_records / data.eval_rows", "must be >= 1")
    if not 0.0 < d.eval_t < 1.0:
        raise bad("data.eval_t", f"must be in (0, 1), got {d.eval_t}")
    if t.micro_batch_rows < 1 or (t.grad_accum is not None and t.grad_accum < 1):
        raise bad("train.micro_batch_rows / train.grad_accum", "must be >= 1")
    if t.global_batch_rows is not None and t.global_batch_rows < t.micro_batch_rows:
        raise bad(
            "train.global_batch_rows",
            f"({t.global_batch_rows}) must be >= train.micro_batch_rows ({t.micro_batch_rows})",
        )
    if (
        not 0.0 <= t.warmup_frac < 1.0
        or not 0.0 < t.decay_frac <= 1.0
        or t.warmup_frac + t.decay_frac > 1.0
    ):
        raise bad(
            "train.warmup_frac / train.decay_frac",
            "need 0 <= warmup, 0 < decay, warmup + decay <= 1",
        )
    if t.max_steps < t.nominal_steps:
        raise bad(
            "train.max_steps",
            f"({t.max_steps}) must be >= train.nominal_steps ({t.nominal_steps}); for a shorter "
            "run lower both (train.nominal_steps=N train.max_steps=N)",
        )
    if t.grad_compression not in ("auto", "bf16", "none"):
        raise bad(
            "train.grad_compression", f"must be auto, bf16 or none, got {t.grad_compression!r}"
        )
    if t.precision not in ("auto", "fp32", "amp_bf16"):
        raise bad("train.precision", f"must be auto, fp32 or amp_bf16, got {t.precision!r}")
    if t.device not in ("auto", "cpu", "gpu"):
        raise bad("train.device", f"must be auto, cpu or gpu, got {t.device!r}")
    for name in t.loggers:
        if name not in LOGGERS:
            close = difflib.get_close_matches(str(name), list(LOGGERS), n=1, cutoff=0.4)
            raise bad(
                "train.loggers",
                f"unknown logger {name!r}"
                + (f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(LOGGERS)}"),
            )
    if t.save_interval < 1 or t.log_every < 1:
        raise bad("train.save_interval / train.log_every", "must be >= 1 batch")
    if not (t.upload_retry_seconds > 0 and math.isfinite(t.upload_retry_seconds)):
        raise bad(
            "train.upload_retry_seconds",
            f"must be a number of seconds > 0, got {t.upload_retry_seconds}",
        )
    for key, value in (
        ("train.save_folder", t.save_folder),
        ("train.load_path", t.load_path),
        ("data.remote", d.remote),
    ):
        _check_uri(key, value, source)
    if d.remote is not None and "://" not in d.remote:
        raise bad(
            "data.remote",
            f"must be an object-store URI (s3://BUCKET/PATH), got {d.remote!r}; "
            "for local shards set data.shard_root",
        )
    if d.remote is not None and not d.local_cache:
        raise bad(
            "data.local_cache",
            "data.remote needs a local folder for the downloaded shards (a node-local disk), "
            "e.g. data.local_cache=/scratch/shards",
        )
    if len(t.betas) != 2:
        raise bad("train.betas", "must be two numbers, e.g. [0.9, 0.95]")
    if not all(math.isfinite(w) and w >= 0 for w in d.tier_weights.values()):
        raise bad(
            "data.tier_weights", f"weights must be finite numbers >= 0, got {dict(d.tier_weights)}"
        )
    if not (math.isfinite(d.max_reads) and d.max_reads > 0):
        raise bad("data.max_reads", f"must be a number of reads > 0, got {d.max_reads}")
    if not d.eval_sets or len(set(d.eval_sets)) != len(d.eval_sets):
        raise bad(
            "data.eval_sets", f"must list distinct sets (holdout, dev, all), got {d.eval_sets}"
        )
    for name in d.eval_sets:
        if name not in ("holdout", "dev", "all"):
            raise bad("data.eval_sets", f"unknown set {name!r}; the sets are holdout, dev, all")
    if t.decide_on is not None:
        label, sep, metric = t.decide_on.partition("/")
        if not sep or label not in d.eval_sets or metric not in EVAL_METRIC_NAMES:
            raise bad(
                "train.decide_on",
                f"{t.decide_on!r} must be SET/METRIC with SET in data.eval_sets "
                f"({', '.join(d.eval_sets)}) and METRIC one of "
                f"{', '.join(EVAL_METRIC_NAMES)} "
                f"(e.g. {d.eval_sets[0] if d.eval_sets else 'holdout'}/bits_per_char)",
            )
    for section, obj in (("noise", cfg.noise), ("model", cfg.model)):
        try:
            obj.validate()
        except ValueError as err:
            raise ConfigError(f"{source}: {section}: {err}") from err


def batch_split(train: TrainConfig, world: int) -> tuple[int, int]:
    """``(grad_accum, global_batch_rows)`` for ``world`` processes.

    With ``train.global_batch_rows`` G and ``train.micro_batch_rows`` m, each process runs
    ``G / (m * world)`` micro-batches per optimizer step, so the batch (rows per step) stays G
    whatever the number of processes. Without G, the batch is ``m * grad_accum * world``.

    Raises :class:`ConfigError` when G cannot be split over ``world`` processes, or when
    ``train.grad_accum`` is also given and disagrees.
    """
    m, g, accum = train.micro_batch_rows, train.global_batch_rows, train.grad_accum
    if g is None:
        accum = accum or 1
        return accum, m * accum * world
    if world > g:
        raise ConfigError(
            f"train.global_batch_rows={g} rows per step cannot feed {world} processes (each "
            f"needs at least one row): raise train.global_batch_rows to a multiple of {world} "
            f"(e.g. {world * m} with train.micro_batch_rows={m}), and consider the learning "
            "rate for the larger batch (docs/cluster.md, Many GPUs)"
        )
    if g % (m * world):
        fits = [d for d in range(1, m + 1) if (g // world) % d == 0] if g % world == 0 else []
        hint = (
            f"set train.micro_batch_rows to a divisor of {g // world} (e.g. {fits[-1]})"
            if fits
            else f"use a number of processes that divides {g}, or change train.global_batch_rows"
        )
        raise ConfigError(
            f"train.global_batch_rows={g} cannot be split over {world} process(es) "
            f"with train.micro_batch_rows={m}: "
            f"it must be a multiple of {m} x {world} = {m * world}; {hint}"
        )
    derived = g // (m * world)
    if accum is not None and accum != derived:
        raise ConfigError(
            f"train.grad_accum={accum} disagrees with train.global_batch_rows={g} on {world} "
            f"process(es) (micro_batch_rows={m} gives grad_accum {derived}); "
            "set train.grad_accum=null to derive it"
        )
    return derived, g


def decision_metric(cfg: RunConfig) -> str:
    """``train.decide_on``, or the first evaluation set's ``bits_per_char``."""
    return cfg.train.decide_on or f"{cfg.data.eval_sets[0]}/bits_per_char"


def to_dict(cfg: RunConfig) -> dict[str, Any]:
    """Plain-dict copy of the config (for logging and checkpoints' hparams)."""
    return OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True)  # type: ignore[return-value]
