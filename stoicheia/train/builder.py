"""Assemble a Composer ``Trainer`` from a :class:`stoicheia.config.RunConfig`.

The recipe (``recipes/train.py``) is only: load the YAML, call :func:`build_trainer`,
``fit()``. Everything the run needs is built here from the config, in data-flow order:
shards -> tier mix -> noise -> pack -> model -> loss/metrics, plus the plugins.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from composer import DataSpec, Evaluator, Trainer
from composer.utils import dist, reproducibility

from stoicheia.config import RunConfig, to_dict
from stoicheia.data.loader import PackedLoader, build_eval_batches
from stoicheia.data.shards import decode_planes, index_samples, mixture_unigram_entropy, read_stats
from stoicheia.data.shm import clean_stale_streaming_shm
from stoicheia.data.stream import NoisedRecordStream, make_streams
from stoicheia.model.composer_model import StoicheiaModel
from stoicheia.text.planes import Planes
from stoicheia.train.checkpoints import repair_checkpoint_folder
from stoicheia.train.example import RestorationExample
from stoicheia.train.plugins import GradientGuard, JSONLLogger, TrainingMonitor
from stoicheia.train.schedule import AnnealControl, WSDScheduler, WSDShape


@dataclass
class Built:
    """What :func:`build_trainer` made, for tests and scripts that need the parts."""

    trainer: Trainer
    model: StoicheiaModel
    train_loader: PackedLoader
    eval_batches: list[dict[str, torch.Tensor]]
    control: AnnealControl
    save_folder: str


class _ListDataset(torch.utils.data.Dataset):
    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Any:
        return self.items[i]


def resolve_device(cfg: RunConfig) -> tuple[str, str]:
    """``(device, precision)``: GPU with bf16 autocast (and TF32 matmuls) when one is present,
    else CPU with fp32 (Composer allows only fp32 on CPU)."""
    device = cfg.train.device
    if device == "auto":
        device = "gpu" if torch.cuda.is_available() else "cpu"
    if device == "gpu" and not torch.cuda.is_available():
        raise RuntimeError("train.device is 'gpu' but torch sees no CUDA device; use train.device=cpu or auto")
    precision = cfg.train.precision
    if precision == "auto":
        precision = "amp_bf16" if device == "gpu" else "fp32"
    if device == "cpu" and precision != "fp32":
        raise RuntimeError(f"train.precision={precision} is not available on CPU; use fp32 or auto")
    if device == "gpu":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return device, precision


def read_eval_records(cfg: RunConfig) -> list[Planes]:
    """The first ``data.eval_records`` held-out records, taken round-robin over the tiers
    with a positive weight, in shard order (deterministic). Tiers without val shards are
    skipped with a message; no val record at all is an error."""
    from streaming import StreamingDataset

    per_tier: list[list[Planes]] = []
    for tier, weight in cfg.data.tier_weights.items():
        if weight <= 0:
            continue
        local = Path(cfg.data.shard_root) / tier / "val"
        if cfg.data.remote is None and (not (local / "index.json").exists() or index_samples(local) == 0):
            print(f"[stoicheia] tier {tier!r} has no held-out records at {local}; it is not evaluated")
            continue
        if cfg.data.remote is None:
            ds = StreamingDataset(local=str(local), batch_size=1, shuffle=False)
        else:
            ds = StreamingDataset(
                remote=f"{cfg.data.remote.rstrip('/')}/{tier}/val",
                local=str(Path(cfg.data.local_cache or "shard_cache") / tier / "val"),
                batch_size=1,
                shuffle=False,
            )
        take = min(ds.num_samples, cfg.data.eval_records)
        per_tier.append([decode_planes(ds.get_item(i)) for i in range(take)])
    records: list[Planes] = []
    k = 0
    while len(records) < cfg.data.eval_records and any(k < len(t) for t in per_tier):
        for t in per_tier:
            if k < len(t) and len(records) < cfg.data.eval_records:
                records.append(t[k])
        k += 1
    if not records:
        raise ValueError(
            f"no held-out records under {cfg.data.shard_root}/*/val for the tiers in data.tier_weights: "
            "convert again with a larger --val-fraction or a --val-work"
        )
    return records


def _unigram_bits(cfg: RunConfig) -> float | None:
    try:
        return mixture_unigram_entropy(read_stats(Path(cfg.data.shard_root)), cfg.data.tier_weights)
    except (FileNotFoundError, ValueError, KeyError):
        return None  # shards from an object store, or an older stats.json: no baseline shown


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW groups: weight decay on matrices (ndim >= 2: linear and embedding weights) only;
    norm gains (vectors) are not decayed."""
    decay = [p for p in model.parameters() if p.requires_grad and p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.ndim < 2]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def build_trainer(cfg: RunConfig, *, progress: bool = False) -> Built:
    """Build the data path, model, optimizer, schedule, plugins and ``Trainer`` of a run.

    Raises ``FileNotFoundError`` for missing shards (with the convert command to run) and
    ``RuntimeError`` for an impossible device/precision choice.
    """
    device, precision = resolve_device(cfg)
    # The last eval batch may hold fewer rows than data.eval_rows; Composer warns about it on
    # every evaluation although nothing is wrong.
    warnings.filterwarnings("ignore", message="Cannot split tensor of length", category=UserWarning)
    reproducibility.seed_all(cfg.seed)
    if not dist.is_initialized():
        dist.initialize_dist(device)
    # Shared memory left by a killed run would make streaming fail or hang; clean it once,
    # on the first rank of each node, before any dataset of this run exists. Only segments
    # that no live process maps are removed, so other jobs on the node are left alone.
    if dist.get_local_rank() == 0:
        clean_stale_streaming_shm()
    dist.barrier()

    run_name = cfg.run_name
    save_folder = cfg.train.save_folder.format(run_name=run_name)
    # The JSONL log is a local file: with checkpoints in an object store it goes to runs/{run_name}.
    local_folder = save_folder if "://" not in save_folder else str(Path("runs") / run_name)
    metrics_file = cfg.train.metrics_file.format(run_name=run_name, save_folder=local_folder)
    if dist.get_global_rank() == 0 and "://" not in save_folder:
        repair_checkpoint_folder(Path(save_folder))
    dist.barrier()

    rows = cfg.train.micro_batch_rows * cfg.train.grad_accum
    dataset = NoisedRecordStream(
        streams=make_streams(cfg.data.shard_root, cfg.data.tier_weights, "train", cfg.data.remote, cfg.data.local_cache),
        seq_len=cfg.data.seq_len,
        noise=cfg.noise,
        noise_seed=cfg.seed,
        batch_size=cfg.data.records_per_batch,
        epoch_size=cfg.data.epoch_size,
        shuffle_seed=cfg.data.shuffle_seed,
        num_canonical_nodes=cfg.data.num_canonical_nodes,
    )
    loader = PackedLoader(dataset, rows=rows, num_workers=cfg.data.num_workers, min_fragment=cfg.data.min_fragment)
    train_spec = DataSpec(
        loader,
        get_num_samples_in_batch=lambda b: int(b["seg_id"].shape[0]),
        get_num_tokens_in_batch=lambda b: int((b["seg_id"] != 0).sum()),
    )

    eval_records = read_eval_records(cfg)
    eval_batches = build_eval_batches(eval_records, cfg.data.seq_len, cfg.data.eval_rows, cfg.data.eval_t, cfg.data.eval_seed)
    evaluator = Evaluator(
        label="eval",
        dataloader=DataSpec(torch.utils.data.DataLoader(_ListDataset(eval_batches), batch_size=None)),
        metric_names=["bits_per_char", "boundary_f1", "dia_acc", "punct_acc"],
        device_eval_microbatch_size=cfg.data.eval_rows,
    )

    model = StoicheiaModel(cfg.model, aux_weight=cfg.train.aux_weight)
    optimizer = torch.optim.AdamW(
        param_groups(model, cfg.train.weight_decay),
        lr=cfg.train.lr,
        betas=(cfg.train.betas[0], cfg.train.betas[1]),
        eps=cfg.train.eps,
    )
    shape = WSDShape(cfg.train.nominal_steps, cfg.train.warmup_frac, cfg.train.decay_frac, cfg.train.final_lr_frac)
    control = AnnealControl(shape)
    guard = GradientGuard(cfg.train.clip_norm)
    callbacks = [
        control,
        TrainingMonitor(cfg.train.log_every, guard, unigram_bits=_unigram_bits(cfg)),
        RestorationExample(eval_records),
    ]
    loggers = [JSONLLogger(metrics_file)]
    interval = f"{cfg.train.save_interval}ba"
    trainer = Trainer(
        model=model,
        train_dataloader=train_spec,
        eval_dataloader=evaluator,
        eval_interval=interval,
        max_duration=f"{cfg.train.max_steps}ba",
        optimizers=optimizer,
        schedulers=WSDScheduler(control),
        step_schedulers_every_batch=True,
        device=device,
        precision=precision,
        device_train_microbatch_size=cfg.train.micro_batch_rows,
        algorithms=[guard],
        callbacks=callbacks,
        loggers=loggers,
        run_name=run_name,
        save_folder=save_folder,
        save_filename="ep{epoch}-ba{batch}-rank{rank}.pt",
        save_interval=interval,
        save_overwrite=True,
        save_num_checkpoints_to_keep=cfg.train.save_num_checkpoints_to_keep,
        autoresume=cfg.train.autoresume,
        load_path=cfg.train.load_path,
        seed=cfg.seed,
        progress_bar=progress,
        log_to_console=False,
        console_log_interval=f"{cfg.train.log_every}ba",
        compile_config={} if cfg.train.compile else None,
        python_log_level=os.environ.get("STOICHEIA_LOG_LEVEL"),
    )
    trainer.state.run_name = run_name
    trainer.logger.log_hyperparameters(to_dict(cfg))
    return Built(trainer, model, loader, eval_batches, control, save_folder)


def fit_run(built: Built) -> bool:
    """Train until the schedule (or ``train.max_steps``) is done; return False if a previous
    job of this run had already finished it (an autoresumed, complete run does not train on)."""
    state = built.trainer.state
    done_at = int(state.timestamp.batch)
    if built.control.complete or (state.max_duration is not None and done_at >= int(state.max_duration.value)):
        print(
            f"[stoicheia] run {state.run_name!r} already complete at batch {done_at}; nothing to do "
            f"(its checkpoints are in {built.save_folder}; delete them or change run_name to train again)"
        )
        return False
    if done_at > 0:
        print(f"[stoicheia] resuming run {state.run_name!r} from its checkpoint at batch {done_at}", flush=True)
    built.trainer.fit()
    return True
