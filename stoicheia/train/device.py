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


def gradient_hook(cfg: RunConfig, device: str, precision: str, world: int) -> Any:
    """The DDP communication hook of ``train.grad_compression``: torch's
    ``bf16_compress_hook`` (each gradient bucket is cast to bf16, all-reduced, divided by the
    world size and cast back: half the bytes of an fp32 all-reduce, the standard choice for
    bf16 training), or ``None`` for DDP's own fp32 all-reduce. ``auto`` chooses bf16 for a GPU
    run in ``amp_bf16`` precision on more than one process; ``bf16`` forces it (also on gloo,
    for tests); ``none`` never."""
    choice = cfg.train.grad_compression
    if choice == "none" or world < 2:
        return None
    if choice == "auto" and not (device == "gpu" and precision == "amp_bf16"):
        return None
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    return default_hooks.bf16_compress_hook


def register_gradient_hook(model: Any, hook: Any) -> bool:
    """Register ``hook`` on ``model`` if it is a ``DistributedDataParallel`` (Composer wraps
    the model when there are several processes); True if registered. Call before the first
    backward pass."""
    from torch.nn.parallel import DistributedDataParallel

    if hook is None or not isinstance(model, DistributedDataParallel):
        return False
    model.register_comm_hook(state=None, hook=hook)
    return True


def gloo_interface(env: dict[str, str] | None = None) -> str | None:
    """The network interface for gloo (``GLOO_SOCKET_IFNAME``) on a job of several nodes,
    or ``None`` to leave gloo's choice.

    gloo (the flag group under NCCL, and every collective of a CPU run) binds to the
    interface of the address the host name resolves to; on many clusters that is a
    management or container network the other nodes cannot reach, and the first collective
    then hangs until the timeout. Kept as set: a ``GLOO_SOCKET_IFNAME`` of the job. Else, on
    several nodes (``WORLD_SIZE`` > ``LOCAL_WORLD_SIZE``): ``NCCL_SOCKET_IFNAME`` when it
    names interfaces (not NCCL's ``^`` exclusion or ``=`` exact-match syntax), else the
    interface whose address routes to ``MASTER_ADDR`` (found with a UDP socket, nothing
    sent). ``env``: the environment (default ``os.environ``)."""
    import os

    env = dict(os.environ) if env is None else env
    if env.get("GLOO_SOCKET_IFNAME"):
        return None
    world, local = int(env.get("WORLD_SIZE", 1)), int(env.get("LOCAL_WORLD_SIZE", 1) or 1)
    if world <= local:
        return None
    nccl = env.get("NCCL_SOCKET_IFNAME", "")
    if nccl and not nccl.startswith(("^", "=")):
        return nccl
    master = env.get("MASTER_ADDR")
    return _interface_towards(master) if master else None


def _interface_towards(host: str) -> str | None:
    """The name of the local interface whose address routes to ``host`` (None if unknown)."""
    import socket

    import psutil

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host, 9))  # UDP: picks the route, sends nothing
            ip = s.getsockname()[0]
    except OSError:
        return None
    for name, addrs in psutil.net_if_addrs().items():
        if any(a.family == socket.AF_INET and a.address == ip for a in addrs):
            return name
    return None
