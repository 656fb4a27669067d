"""Assemble a Composer ``Trainer`` from a :class:`stoicheia.config.RunConfig`.

:func:`stoicheia.train.run.run` (what ``recipes/train.py`` calls) checks the configuration,
calls :func:`build_trainer`, then trains with :func:`~stoicheia.train.run.fit_run`. The
builder wires parts made elsewhere, in data-flow order: the tier mixes and the packer
(``data/``), the evaluation sets (``data/eval_sets.py``) and their evaluators
(:mod:`stoicheia.train.evaluators`), the model and its AdamW groups (``model/``) on its device
(:mod:`stoicheia.train.device`), the schedule, and the plugins by name
(:mod:`stoicheia.train.registry`); what the run resumes from is settled by
:mod:`stoicheia.train.resume`. It reads no data itself.
"""

from __future__ import annotations

import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from composer import DataSpec, Trainer
from composer.core.data_spec import _default_split_batch
from composer.utils import dist, reproducibility

from stoicheia.config import RunConfig, batch_split, decision_metric, to_dict
from stoicheia.data.corpus_stats import context_note, run_unigram_bits
from stoicheia.data.eval_sets import read_eval_sets
from stoicheia.data.loader import PackedLoader
from stoicheia.data.shm import clean_stale_streaming_shm
from stoicheia.data.stream import TierMixFactory, fetch_remote_stats
from stoicheia.model.composer_model import StoicheiaModel
from stoicheia.model.optim import param_groups
from stoicheia.train import registry, run_files
from stoicheia.train.algorithms.gradient_guard import GradientGuard
from stoicheia.train.callbacks.anneal_control import AnnealControl
from stoicheia.train.callbacks.anneal_data import AnnealData
from stoicheia.train.callbacks.checkpoint_saver import GuardedCheckpointSaver
from stoicheia.train.callbacks.eval_history import EvalHistory
from stoicheia.train.callbacks.run_record import RunRecord
from stoicheia.train.console import configure_console
from stoicheia.train.device import (
    compile_model,
    flag_group,
    gloo_interface,
    gradient_hook,
    register_gradient_hook,
    resolve_device,
)
from stoicheia.train.evaluators import build_evaluators
from stoicheia.train.loggers.store_uploader import StoreUploader
from stoicheia.train.mix_plan import announce, planned_spans
from stoicheia.train.object_store import is_remote
from stoicheia.train.resume import (
    check_load_path,
    check_model_shape,
    checkpoint_to_load,
    prepare_run_folder,
    raise_first,
)
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


#: Key of the host-side letter count that :func:`split_counting_letters` adds to each
#: micro-batch (a Python int: it crosses to the device with the batch without a copy or sync).
SLOTS_KEY = "n_slots"


def _slots(batch: dict[str, Any]) -> int:
    """Non-padding slots of a (micro-)batch: its precomputed count, else counted (on the host
    before the copy to the device; on a device this would be a sync)."""
    if SLOTS_KEY in batch:
        return int(batch[SLOTS_KEY])
    return int((batch["seg_id"] != 0).sum())


def split_counting_letters(batch: dict[str, Any], microbatch_size: int) -> list[dict[str, Any]]:
    """Composer's split of a batch into micro-batches of ``microbatch_size`` rows, each with
    its count of non-padding slots under :data:`SLOTS_KEY`, counted here on the host."""
    parts = _default_split_batch(
        {k: v for k, v in batch.items() if k != SLOTS_KEY}, microbatch_size
    )
    return [{**p, SLOTS_KEY: int((p["seg_id"] != 0).sum())} for p in parts]


def train_data_spec(loader: Any) -> DataSpec:
    """The training ``DataSpec``: samples are rows; tokens are the non-padding slots (letters
    and the noise's slots), both ``total`` (Composer's ``tok`` time) and ``loss_generating``.

    With ``accumulate_train_batch_on_tokens`` (set by :func:`build_trainer`) Composer weights
    each micro-batch's loss by its ``loss_generating`` count over the step's (over all ranks),
    not by its rows. The char loss is a sum over the micro-batch's slots divided by its count
    of non-padding slots (:mod:`stoicheia.model.composer_model`), so weighting by that count
    makes gradient accumulation give the gradient of one batch of all the rows, whatever the
    rows' fill (the auxiliary terms, means over their own labelled slots, come out weighted by
    slots too, close to but not exactly their mean over the whole batch). Weighting by rows
    would weight the letters of a half-empty row (the end of an epoch) twice as much."""
    return DataSpec(
        loader,
        get_num_samples_in_batch=lambda b: int(b["seg_id"].shape[0]),
        get_num_tokens_in_batch=lambda b: {"total": _slots(b), "loss_generating": _slots(b)},
        split_batch=split_counting_letters,
    )


def build_trainer(cfg: RunConfig, *, progress: bool = False) -> Built:
    """Build the data path, model, optimizer, schedule, plugins and ``Trainer`` of a run.

    Raises ``FileNotFoundError`` for missing shards (with the convert command to run),
    :class:`~stoicheia.config.ConfigError` for a bad plugin section, ``ValueError`` for
    unusable evaluation sets, :class:`~stoicheia.train.resume.CheckpointShapeError` (a
    ``ValueError``) for a
    checkpoint to load of another model shape, and ``RuntimeError`` for a GPU device without CUDA.
    """
    registry.check_plugins(cfg)
    device, choice = resolve_device(cfg)
    # The last eval batch may hold fewer rows than data.eval_rows; Composer warns about it on
    # every evaluation although nothing is wrong.
    warnings.filterwarnings("ignore", message="Cannot split tensor of length", category=UserWarning)
    reproducibility.seed_all(cfg.seed)
    ifname = gloo_interface()
    if ifname is not None:
        # read by gloo when a group is made: before the default group (CPU) and the flag group
        os.environ["GLOO_SOCKET_IFNAME"] = ifname
    if not dist.is_initialized():
        dist.initialize_dist(
            device, timeout=float(os.environ.get("STOICHEIA_DIST_TIMEOUT", DIST_TIMEOUT_S))
        )
    configure_console(dist.get_global_rank())
    log.info("[run] precision: %s", choice.reason)
    if ifname is not None:
        log.info("[run] gloo uses network interface %s (GLOO_SOCKET_IFNAME)", ifname)
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
    prepare_run_folder(cfg, save_folder, run_folder)
    check_load_path(cfg, run_folder)

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
        raise_first(err, FileNotFoundError)
        stats_root = d.local_cache
    note = context_note(d.seq_len, stats_root)
    if note is not None and dist.get_global_rank() == 0:
        log.warning("[data] %s", note)
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
        stats_root=stats_root,
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
        pin_memory=device == "gpu",
    )
    loader.flag_group = flag_group()
    train_spec = train_data_spec(loader)

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
            f"train.decide_on={decide_on} names the evaluation set "
            f"{decide_on.split('/')[0]!r}, which has no records (sets with records: "
            f"{', '.join(eval_sets)}); convert with --val-work for a dev set, or set "
            "train.decide_on"
        )
    eval_batches, evaluators = build_evaluators(eval_sets, d, cfg.train.save_interval, control)

    # bf16 on a CPU: Composer autocasts only on CUDA, so it runs in fp32 and the model autocasts
    model = StoicheiaModel(cfg.model, aux_weight=cfg.train.aux_weight, cpu_bf16=choice.cpu_bf16)
    compile_model(model, cfg, device)
    optimizer = torch.optim.AdamW(
        param_groups(model, cfg.train.weight_decay),
        lr=cfg.train.lr,
        betas=(cfg.train.betas[0], cfg.train.betas[1]),
        eps=cfg.train.eps,
        # one fused kernel for all parameters on a GPU (and the gradient guard's sync-free
        # skip through its found_inf flag); the CPU keeps the reference for-each loop
        fused=device == "gpu",
    )

    check_model_shape(model, checkpoint_to_load(cfg, run_folder), run_folder, save_folder)

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
    _announce_mix(cfg, loader, plugins, control, factory, global_rows, run_folder)
    algorithms = [p for n, p in plugins.items() if n in registry.ALGORITHMS]
    if ctx.guard is None and cfg.train.clip_norm:
        # switching gradient_guard off must not drop clipping silently: the same clip (torch's
        # clip_grad_norm_, as the guard computes it) through Composer's algorithm
        from composer.algorithms import GradientClipping

        algorithms.append(
            GradientClipping(clipping_type="norm", clipping_threshold=float(cfg.train.clip_norm))
        )
        log.info(
            "[run] gradient_guard is off: train.clip_norm=%g is applied by Composer's "
            "GradientClipping",
            cfg.train.clip_norm,
        )
    callbacks = [
        control,
        RunRecord(to_dict(cfg), run_folder),
        EvalHistory(run_folder, run_unigram_bits(to_dict(cfg), stats_root)),
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
        cfg.train.save_interval,
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
        accumulate_train_batch_on_tokens=True,  # by letters scored (train_data_spec)
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
        compile_config=None,  # the encoder's trunk is compiled by compile_model
        python_log_level=os.environ.get("STOICHEIA_LOG_LEVEL"),
    )
    trainer.state.run_name = run_name
    hook = gradient_hook(cfg, device, choice.precision, dist.get_world_size())
    if register_gradient_hook(trainer.state.model, hook):
        log.info("[run] gradients are all-reduced in bf16 (train.grad_compression)")
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


def _announce_mix(
    cfg: RunConfig,
    loader: PackedLoader,
    plugins: dict[str, Any],
    control: AnnealControl,
    factory: TierMixFactory,
    global_rows: int,
    run_folder: Path,
) -> None:
    """Print each tier's share of the letters, its letters and its reads over the planned run
    (warning above ``data.max_reads``), and keep it in ``mix.json`` (rank 0)."""
    anneal = next((p for p in plugins.values() if isinstance(p, AnnealData)), None)
    ends = [end for end, _ in anneal.phases] if anneal is not None else []
    spans = planned_spans(
        loader.mixes,
        ends,
        planned_start=control.shape.planned_anneal_start,
        decay_steps=control.shape.decay_steps,
        slots_per_step=global_rows * cfg.data.seq_len,
    )
    announce(
        run_folder,
        spans,
        factory.tier_sizes(),
        cfg.data.max_reads,
        write=dist.get_global_rank() == 0,
    )
