"""Where and how a run computes: the device and precision (:func:`resolve_device`), the
encoder's activation checkpointing and compiled trunk (:func:`compile_model`), and the process
group of the per-batch flags (:func:`flag_group`).
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from composer.utils import dist

from stoicheia.config import RunConfig
from stoicheia.model.composer_model import StoicheiaModel
from stoicheia.model.precision import PrecisionChoice, choose_precision

log = logging.getLogger(__name__)


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


def compile_model(model: StoicheiaModel, cfg: RunConfig, device: str) -> None:
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


def flag_group() -> Any:
    """A gloo process group for the per-batch flags of the loader and the preemption plugin
    when the job runs NCCL (CPU tensors, no wait for the GPU); ``None`` otherwise (the default
    group, gloo on CPUs). Collective: every rank calls it at the same point."""
    import torch.distributed as tdist

    if dist.get_world_size() > 1 and tdist.get_backend() == "nccl":
        return tdist.new_group(backend="gloo")
    return None
