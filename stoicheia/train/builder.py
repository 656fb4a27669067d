"""Assemble a Composer ``Trainer`` from a :class:`stoicheia.config.RunConfig`.

:func:`stoicheia.train.run.run` (what ``recipes/train.py`` calls) checks the configuration,
calls :func:`build_trainer`, then trains with :func:`~stoicheia.train.run.fit_run`. The
builder wires parts made elsewhere, in data-flow order: the tier mixes and
the packer (``data/``), the evaluation sets (``data/eval_sets.py``), the model and its AdamW
groups (``model/``), the schedule, and the plugins by name (:mod:`stoicheia.train.registry`).
It reads no data itself.
"""

from __future__ import annotations

import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from composer import DataSpec, Evaluator, Trainer
from composer.utils import dist, reproducibility

from stoicheia.checkpoint_files import missing_records, model_shapes, shape_mismatches, strip_ddp
from stoicheia.config import RunConfig, batch_split, decision_metric, to_dict
from stoicheia.data.corpus_stats import mixture_unigram_entropy, read_stats
from stoicheia.data.eval_batches import build_eval_batches, pad_eval_batches
from stoicheia.data.eval_sets import read_eval_sets
from stoicheia.data.loader import PackedLoader
from stoicheia.data.shm import clean_stale_streaming_shm
from stoicheia.data.stream import TierMixFactory, fetch_remote_stats
from stoicheia.model.composer_model import StoicheiaModel
from stoicheia.model.metrics import EVAL_METRICS
from stoicheia.model.optim import param_groups
from stoicheia.model.precision import PrecisionChoice, choose_precision
from stoicheia.train import registry, run_files
from stoicheia.train.algorithms.gradient_guard import GradientGuard
from stoicheia.train.callbacks.anneal_control import AnnealControl
from stoicheia.train.callbacks.checkpoint_saver import GuardedCheckpointSaver
from stoicheia.train.callbacks.eval_history import EvalHistory
from stoicheia.train.callbacks.run_record import RunRecord
from stoicheia.train.checkpoints import CheckpointError, repair_checkpoint_folder
from stoicheia.train.console import configure_console
from stoicheia.train.loggers.store_uploader import StoreUploader
from stoicheia.train.object_store import StoreError, StoreFolder, is_remote, restore_run
from stoicheia.train.schedule import WSDScheduler, WSDShape

log = logging.getLogger(__name__)

#: Seconds a collective may wait for the slowest rank before the job fails (Composer's default
#: is 300). Some work runs on one rank while the others wait in the next collective: the first
#: rank of a node downloading a run folder or shards' stats from an object store, the first
#: compile of a graph, a checkpoint write. ``STOICHEIA_DIST_TIMEOUT`` overrides it.
DIST_TIMEOUT_S = 1800.0


@dataclass
class Built:
    """What :func:`build_trainer` made, for tests and scripts that need the parts."""

    trainer: Trainer
    model: StoicheiaModel
    train_loader: PackedLoader
    eval_batches: dict[str, list[dict[str, torch.Tensor]]]
    control: AnnealControl
    save_folder: str
    run_folder: Path
    plugins: dict[str, Any]
    load_path: str | None = None
    autoresumed: bool = False
    uploader: StoreUploader | None = None  # with an object-store save_folder


class CheckpointShapeError(ValueError):
    """The checkpoint a run would load was made by a model of another shape (the message names
    the checkpoint, the first differing parameters and the fix)."""


class _ListDataset(torch.utils.data.Dataset):
    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Any:
        return self.items[i]


def resolve_device(cfg: RunConfig) -> tuple[str, PrecisionChoice]:
    """``(device, precision choice)``: the GPU when one is present (``train.device=auto``),
    else the CPU; the precision by :func:`~stoicheia.model.precision.choose_precision`
    (``auto``: bf16 autocast and TF32 matmuls on a GPU; on a CPU bf16 autocast where the CPU
    has bf16 matrix instructions, else fp32). Raises ``RuntimeError`` for ``gpu`` without CUDA.
    """
    device = cfg.train.device
    if device == "auto":
        device = "gpu" if torch.cuda.is_available() else "cpu"
    if device == "gpu" and not torch.cuda.is_available():
        raise RuntimeError(
            "train.device is 'gpu' but torch sees no CUDA device; use train.device=cpu or auto"
        )
    choice = choose_precision(cfg.train.precision, device)
    if device == "gpu":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return device, choice


def _unigram_bits(cfg: RunConfig, stats_root: str | Path) -> float | None:
    try:
        return mixture_unigram_entropy(read_stats(Path(stats_root)), cfg.data.tier_weights)
    except (FileNotFoundError, ValueError, KeyError):
        return None  # shards from an object store, or an older stats.json: no baseline shown


def _every(interval: int, control: AnnealControl):
    """Evaluation interval: every ``interval`` batches and at the last batch of the run (when
    the run completes), never again at ``FIT_END`` (which would evaluate the last batch twice)."""
    from composer.core import Event

    def check(state, event) -> bool:
        if event != Event.BATCH_END:
            return False
        return int(state.timestamp.batch) % interval == 0 or control.complete

    return check


def _check_load_path(cfg: RunConfig, run_folder: Path | None) -> None:
    """Raise ``ValueError`` if ``train.load_path`` is a local file that will be loaded (no
    checkpoint of this run to autoresume from) and is missing or incomplete."""
    load_path = cfg.train.load_path
    if not load_path or "://" in load_path:
        return  # object-store paths are checked where they are downloaded
    if cfg.train.autoresume and run_folder is not None and any(run_folder.glob("latest-rank*.pt")):
        return  # autoresume takes this run's own checkpoint and ignores load_path
    path = Path(load_path)
    if not path.is_file():
        raise ValueError(
            f"train.load_path={load_path}: no such file; give the path of a .pt checkpoint (e.g. a run's best.pt), or set train.load_path=null to start from scratch"
        )
    missing = missing_records(path)
    if missing != []:
        what = (
            f"lacks the tensor records {', '.join(missing[:3])}"
            if missing
            else "is not a complete torch checkpoint (truncated or corrupt)"
        )
        raise ValueError(
            f"train.load_path={load_path} {what}; give another checkpoint (the run's earlier ep*-ba*-rank0.pt, best.pt or pre_anneal.pt)"
        )


def _checkpoint_to_load(cfg: RunConfig, run_folder: Path) -> Path | None:
    """The local checkpoint file the trainer will load: this run's own ``latest-rank0.pt``
    under autoresume (after :func:`_prepare_run_folder`), else a local ``train.load_path``;
    ``None`` for a fresh run or an object-store ``load_path`` (downloaded by Composer)."""
    latest = Path(run_folder) / "latest-rank0.pt"
    if cfg.train.autoresume and latest.exists():
        return latest.resolve()
    load_path = cfg.train.load_path
    if load_path and "://" not in load_path and Path(load_path).is_file():
        return Path(load_path)
    return None


def _check_model_shape(
    model: torch.nn.Module, checkpoint: Path | None, run_folder: Path, save_folder: str
) -> None:
    """Raise :class:`CheckpointShapeError` on every rank if ``checkpoint`` holds weights of
    another shape than ``model`` (compared name by name, before Composer loads it)."""
    if checkpoint is None:
        return
    saved = model_shapes(checkpoint)
    if saved is None:  # not readable as a Composer checkpoint: Composer's own load reports it
        return
    wanted = {strip_ddp(k): tuple(v.shape) for k, v in model.state_dict().items()}
    differs = shape_mismatches(saved, wanted)
    if not differs:
        return
    own = Path(checkpoint).parent.resolve() == Path(run_folder).resolve()
    fix = (
        f"use another run_name (or delete {save_folder}) to start a new run, or restore the model.* settings it was trained with"
        if own
        else "give a checkpoint of this model shape as train.load_path, or restore the model.* settings it was trained with"
    )
    shown = "; ".join(differs[:3]) + (
        f"; ... ({len(differs)} parameters differ)" if len(differs) > 3 else ""
    )
    raise CheckpointShapeError(
        f"the checkpoint {checkpoint} was made by a model of another shape ({shown}): {fix}"
    )


def build_trainer(cfg: RunConfig, *, progress: bool = False) -> Built:
    """Build the data path, model, optimizer, schedule, plugins and ``Trainer`` of a run.

    Raises ``FileNotFoundError`` for missing shards (with the convert command to run),
    :class:`~stoicheia.config.ConfigError` for a bad plugin section, ``ValueError`` for
    unusable evaluation sets, :class:`CheckpointShapeError` (a ``ValueError``) for a
    checkpoint to load of another model shape, and ``RuntimeError`` for a GPU device without CUDA.
    """
    registry.check_plugins(cfg)
    device, choice = resolve_device(cfg)
    # The last eval batch may hold fewer rows than data.eval_rows; Composer warns about it on
    # every evaluation although nothing is wrong.
    warnings.filterwarnings("ignore", message="Cannot split tensor of length", category=UserWarning)
    reproducibility.seed_all(cfg.seed)
    if not dist.is_initialized():
        dist.initialize_dist(
            device, timeout=float(os.environ.get("STOICHEIA_DIST_TIMEOUT", DIST_TIMEOUT_S))
        )
    configure_console(dist.get_global_rank())
    log.info("[run] precision: %s", choice.reason)
    # Shared memory left by a killed run would make streaming fail or hang; clean it once,
    # on the first rank of each node, before any dataset of this run exists. Only segments
    # that no live process maps are removed, so other jobs on the node are left alone.
    if dist.get_local_rank() == 0:
        clean_stale_streaming_shm()
    dist.barrier()

    run_name = cfg.run_name
    save_folder = cfg.train.save_folder.format(run_name=run_name)
    run_folder = run_files.local_run_folder(save_folder, run_name)
    metrics_file = cfg.train.metrics_file.format(run_name=run_name, save_folder=str(run_folder))
    _prepare_run_folder(cfg, save_folder, run_folder)
    _check_load_path(cfg, run_folder)

    d = cfg.data
    stats_root: str | Path = d.shard_root
    if d.remote is not None:
        # stats.json (val works, unigram baseline) comes from the store, once per node
        err = None
        if dist.get_local_rank() == 0:
            try:
                fetch_remote_stats(d.remote, d.local_cache)
            except FileNotFoundError as e:
                err = str(e)
        _raise_first(err, FileNotFoundError)
        stats_root = d.local_cache
    factory = TierMixFactory(
        shard_root=d.shard_root,
        seq_len=d.seq_len,
        noise=cfg.noise,
        noise_seed=cfg.seed,
        records_per_batch=d.records_per_batch,
        remote=d.remote,
        local_cache=d.local_cache,
        epoch_size=d.epoch_size,
        shuffle_seed=d.shuffle_seed,
        num_canonical_nodes=d.num_canonical_nodes,
    )
    grad_accum, global_rows = batch_split(cfg.train, dist.get_world_size())
    rows = cfg.train.micro_batch_rows * grad_accum
    log.info(
        "[run] batch: %d rows of %d slots per step = %d process(es) x %d rows x grad_accum %d",
        global_rows,
        d.seq_len,
        dist.get_world_size(),
        cfg.train.micro_batch_rows,
        grad_accum,
    )
    loader = PackedLoader(
        factory,
        mixes=[d.tier_weights],
        rows=rows,
        num_workers=d.num_workers,
        min_fragment=d.min_fragment,
    )
    loader.flag_group = _flag_group()
    train_spec = DataSpec(
        loader,
        get_num_samples_in_batch=lambda b: int(b["seg_id"].shape[0]),
        get_num_tokens_in_batch=lambda b: int((b["seg_id"] != 0).sum()),
    )

    shape = WSDShape(
        cfg.train.nominal_steps,
        cfg.train.warmup_frac,
        cfg.train.decay_frac,
        cfg.train.final_lr_frac,
    )
    control = AnnealControl(
        shape, cfg.train.max_steps, run_folder=run_folder, save_folder=save_folder
    )
    decide_on = decision_metric(cfg)

    eval_sets = read_eval_sets(
        stats_root, d.tier_weights, d.eval_sets, d.eval_records, d.remote, d.local_cache
    )
    if decide_on.split("/")[0] not in eval_sets:
        raise ValueError(
            f"train.decide_on={decide_on} names the evaluation set {decide_on.split('/')[0]!r}, which has no records "
            f"(sets with records: {', '.join(eval_sets)}); convert with --val-work for a dev set, or set train.decide_on"
        )
    eval_batches: dict[str, list[dict[str, torch.Tensor]]] = {}
    evaluators = []
    for label, records in eval_sets.items():
        # every batch (the last padded) has one shape: a compiled model runs them all on one graph
        batches = build_eval_batches(
            records, d.seq_len, d.eval_rows, d.eval_t, d.eval_seed, pad_last=True
        )
        eval_batches[label] = batches
        dataset = _ListDataset(pad_eval_batches(batches, dist.get_world_size()))
        evaluators.append(
            Evaluator(
                label=label,
                dataloader=DataSpec(
                    torch.utils.data.DataLoader(
                        dataset, batch_size=None, sampler=dist.get_sampler(dataset, shuffle=False)
                    )
                ),
                metric_names=list(EVAL_METRICS),
                device_eval_microbatch_size=d.eval_rows,
                eval_interval=_every(cfg.train.save_interval, control),
            )
        )

    # bf16 on a CPU: Composer autocasts only on CUDA, so it runs in fp32 and the model autocasts
    model = StoicheiaModel(cfg.model, aux_weight=cfg.train.aux_weight, cpu_bf16=choice.cpu_bf16)
    _compile_model(model, cfg, device)
    optimizer = torch.optim.AdamW(
        param_groups(model, cfg.train.weight_decay),
        lr=cfg.train.lr,
        betas=(cfg.train.betas[0], cfg.train.betas[1]),
        eps=cfg.train.eps,
        # one fused kernel for all parameters on a GPU (and the gradient guard's sync-free
        # skip through its found_inf flag); the CPU keeps the reference for-each loop
        fused=device == "gpu",
    )

    _check_model_shape(model, _checkpoint_to_load(cfg, run_folder), run_folder, save_folder)

    ctx = registry.RunContext(
        control=control,
        loader=loader,
        decide_on=decide_on,
        run_folder=run_folder,
        save_folder=save_folder,
        tier_weights=dict(d.tier_weights),
        eval_records=next(iter(eval_sets.values())),
        log_every=cfg.train.log_every,
        clip_norm=cfg.train.clip_norm,
    )
    plugins: dict[str, Any] = {}
    for name, kwargs in registry.resolve(cfg.algorithms, "algorithms"):
        plugins[name] = registry.build("algorithms", name, kwargs, ctx)
    ctx.guard = next((p for p in plugins.values() if isinstance(p, GradientGuard)), None)
    for name, kwargs in registry.resolve(cfg.callbacks, "callbacks"):
        plugins[name] = registry.build("callbacks", name, kwargs, ctx)
    algorithms = [p for n, p in plugins.items() if n in registry.ALGORITHMS]
    if ctx.guard is None and cfg.train.clip_norm:
        # switching gradient_guard off must not drop clipping silently: the same clip (torch's
        # clip_grad_norm_, as the guard computes it) through Composer's algorithm
        from composer.algorithms import GradientClipping

        algorithms.append(
            GradientClipping(clipping_type="norm", clipping_threshold=float(cfg.train.clip_norm))
        )
        log.info(
            "[run] gradient_guard is off: train.clip_norm=%g is applied by Composer's GradientClipping",
            cfg.train.clip_norm,
        )
    callbacks = [
        control,
        RunRecord(to_dict(cfg), run_folder),
        EvalHistory(run_folder, _unigram_bits(cfg, stats_root)),
    ] + [p for n, p in plugins.items() if n in registry.CALLBACKS]

    interval = f"{cfg.train.save_interval}ba"
    # Composer's periodic checkpoints, with the names the Trainer would give its own saver; a
    # full disk stops every rank together (stoicheia.train.save_guard)
    callbacks.append(
        GuardedCheckpointSaver(
            folder=str(run_folder),
            filename="ep{epoch}-ba{batch}-rank{rank}.pt",
            remote_file_name=str(Path(run_folder) / "ep{epoch}-ba{batch}-rank{rank}.pt"),
            latest_filename="latest-rank{rank}.pt",
            latest_remote_file_name=str(Path(run_folder) / "latest-rank{rank}.pt"),
            save_interval=interval,
            overwrite=True,
            num_checkpoints_to_keep=cfg.train.save_num_checkpoints_to_keep,
        )
    )
    # with an object-store save_folder, Composer works in the local run folder and the
    # store_uploader destination mirrors it to the store
    log_ctx = registry.LoggerContext(
        Path(metrics_file),
        run_folder,
        save_folder,
        cfg.train.log_every,
        cfg.train.upload_retry_seconds,
        cfg.train.save_num_checkpoints_to_keep,
    )
    loggers = {
        name: registry.build_logger(name, log_ctx)
        for name in registry.logger_names(cfg, is_remote(save_folder))
    }
    uploader = loggers.get("store_uploader")
    trainer = Trainer(
        model=model,
        train_dataloader=train_spec,
        eval_dataloader=evaluators,
        max_duration=f"{cfg.train.max_steps}ba",
        optimizers=optimizer,
        schedulers=WSDScheduler(control.shape, lambda: control.effective_start),
        step_schedulers_every_batch=True,
        device=device,
        precision="fp32" if choice.cpu_bf16 else choice.precision,
        device_train_microbatch_size=cfg.train.micro_batch_rows,
        algorithms=algorithms,
        callbacks=callbacks,
        loggers=list(loggers.values()),
        run_name=run_name,
        save_folder=str(run_folder),  # the saver above writes there; autoresume reads it
        autoresume=cfg.train.autoresume,
        load_path=cfg.train.load_path,
        seed=cfg.seed,
        progress_bar=progress,
        log_to_console=False,
        console_log_interval=f"{cfg.train.log_every}ba",
        compile_config=None,  # the encoder's trunk is compiled by _compile_model
        python_log_level=os.environ.get("STOICHEIA_LOG_LEVEL"),
    )
    trainer.state.run_name = run_name
    trainer.logger.log_hyperparameters(to_dict(cfg))
    # autoresume found a checkpoint of this run (it then ignores load_path)
    autoresumed = bool(cfg.train.autoresume) and any(Path(run_folder).glob("latest-rank*.pt"))
    return Built(
        trainer,
        model,
        loader,
        eval_batches,
        control,
        save_folder,
        run_folder,
        plugins,
        cfg.train.load_path,
        autoresumed,
        uploader,
    )


def _compile_model(model: StoicheiaModel, cfg: RunConfig, device: str) -> None:
    """Activation checkpointing and ``torch.compile`` of the encoder (``train.*``).

    The encoder compiles its own trunk (:meth:`CharBertEncoder.compile_trunk`), not Composer
    (``compile_config`` would compile the DDP wrapper's forward, which evaluation, calling the
    unwrapped model, never runs: with several GPUs every evaluation would run uncompiled).
    The masks are built outside the graph. Evaluation batches have ``data.eval_rows`` rows;
    when that differs from ``train.micro_batch_rows`` the evaluation compiles a graph of its
    own shape once (said here)."""
    encoder = model.encoder
    encoder.activation_checkpointing = bool(cfg.train.activation_checkpointing)
    if not cfg.train.compile:
        return
    encoder.compile_trunk()
    if cfg.data.eval_rows != cfg.train.micro_batch_rows and dist.get_global_rank() == 0:
        log.info(
            "[run] data.eval_rows=%d differs from train.micro_batch_rows=%d: the compiled model "
            "compiles the evaluation's shape separately (set them equal to share the shape)",
            cfg.data.eval_rows,
            cfg.train.micro_batch_rows,
        )


def _flag_group() -> Any:
    """A gloo process group for the per-batch flags of the loader and the preemption plugin
    when the job runs NCCL (CPU tensors, no wait for the GPU); ``None`` otherwise (the default
    group, gloo on CPUs). Collective: every rank calls it at the same point."""
    import torch.distributed as tdist

    if dist.get_world_size() > 1 and tdist.get_backend() == "nccl":
        return tdist.new_group(backend="gloo")
    return None


def _raise_first(err: str | None, kind: type[Exception]) -> None:
    """Collective: raise ``kind`` on every rank if any rank has an error message."""
    errors = dist.all_gather_object(err) if dist.get_world_size() > 1 else [err]
    first = next((e for e in errors if e), None)
    if first:
        raise kind(first)


def _prepare_run_folder(cfg: RunConfig, save_folder: str, run_folder: Path) -> None:
    """Make the local run folder safe to autoresume from (quarantine incomplete checkpoints,
    fix ``latest``); with an object-store ``save_folder``, on every node, also bring the
    store's newest good checkpoint and marker files into it (:func:`restore_run`).

    Collective; raises :class:`StoreError` on every rank if the store's checkpoints are
    unusable, and ``ValueError`` if the run has checkpoints but none is complete (see
    :func:`~stoicheia.train.checkpoints.repair_checkpoint_folder`)."""
    store_err = ckpt_err = None
    first = dist.get_local_rank() == 0 if is_remote(save_folder) else dist.get_global_rank() == 0
    if first:  # node disks are separate: with a store, each node restores its own copy
        try:
            repair_checkpoint_folder(run_folder, first_save=cfg.train.save_interval)
            if is_remote(save_folder) and cfg.train.autoresume:
                restore_run(StoreFolder.parse(save_folder), run_folder)
        except StoreError as e:
            store_err = str(e)
        except CheckpointError as e:
            if cfg.train.autoresume:
                ckpt_err = str(e)
            else:  # no autoresume: this run does not resume from its folder anyway
                log.warning("[checkpoint] %s", e)
    _raise_first(store_err, StoreError)
    _raise_first(ckpt_err, ValueError)
