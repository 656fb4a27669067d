"""Stages ``env`` and ``flex_vs_sdpa``: torch, numpy and the torch-only stoicheia modules."""

from __future__ import annotations

import importlib
import os
import sys

from .record import Recorder
from .rows import random_rows, to_device

#: What the Composer stages need to import (``composer_stack`` of the ``env`` stage).
COMPOSER_STACK = ("composer", "streaming", "omegaconf")


def on_gpu(dry_run: bool) -> bool:
    """Whether the stages run the GPU shapes (CUDA present and no ``--dry-run``)."""
    import torch

    return torch.cuda.is_available() and not dry_run


def composer_stack() -> str:
    """``"ok (composer X, streaming Y, omegaconf Z)"`` when the Composer stages can run, else
    ``"missing: <the import error>"``."""
    versions = []
    for name in COMPOSER_STACK:
        try:
            mod = importlib.import_module(name)
        except Exception as err:  # any failure to import (a missing dependency of theirs too)
            return f"missing: {name}: {type(err).__name__}: {err}"
        versions.append(f"{name} {getattr(mod, '__version__', '?')}")
    try:
        importlib.import_module("composer.trainer")
    except Exception as err:
        return f"missing: composer.trainer: {type(err).__name__}: {err}"
    return f"ok ({', '.join(versions)})"


def stage_env(rec: Recorder, dry_run: bool) -> bool:
    """Device, versions, memory, the peak FLOP rate, and whether Composer's stack imports."""
    import numpy
    import torch

    rec.update(
        {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "numpy": numpy.__version__,
            "cuda_available": torch.cuda.is_available(),
            "gpus": torch.cuda.device_count() if torch.cuda.is_available() else 0,
            "cpu_count": os.cpu_count(),
        }
    )
    try:
        import triton

        rec.put("triton", triton.__version__)
    except Exception as err:
        rec.put("triton", f"missing ({type(err).__name__})")
    if torch.cuda.is_available():
        from stoicheia.train.flops import peak_flops

        p = torch.cuda.get_device_properties(0)
        name = torch.cuda.get_device_name(0)
        rec.update(
            {
                "device": name,
                "cuda": torch.version.cuda,
                "capability": f"{p.major}.{p.minor}",
                "multiprocessors": p.multi_processor_count,
                "memory_gib": round(p.total_memory / 2**30, 1),
                "bf16": torch.cuda.is_bf16_supported(),
            }
        )
        peak = peak_flops(name, "amp_bf16")
        rec.put("peak_bf16_tflops", peak / 1e12 if peak else "not in stoicheia.train.flops")
    stack = rec.put("composer_stack", composer_stack())
    if stack.startswith("ok"):  # where from: the environment, or the carried wheels (--wheels)
        rec.put("composer_from", os.path.dirname(os.path.dirname(sys.modules["composer"].__file__)))
    return True


def _strict_fp32() -> None:
    """Plain float32 matrix products on CUDA (no TF32) for a float32 comparison; newer torch
    has ``fp32_precision``, older ``allow_tf32``."""
    import torch

    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        matmul.fp32_precision = "ieee"
    else:
        matmul.allow_tf32 = False


def stage_flex_vs_sdpa(rec: Recorder, dry_run: bool) -> bool:
    """The encoder with FlexAttention against SDPA (same weights), float32: the largest
    difference of the logits (real slots) and of the gradients, at a row length that is a
    multiple of 128 (FlexAttention's tile) and one that is not; on a GPU through the
    compiled trunk and the uncompiled call. Passes when both differences are below 1e-3."""
    import torch

    from stoicheia.model import attention
    from stoicheia.model.config import EncoderConfig
    from stoicheia.model.encoder import CharBertEncoder
    from stoicheia.model.loss import loss_terms

    gpu = on_gpu(dry_run)
    dev = torch.device("cuda" if gpu else "cpu")
    if gpu:
        _strict_fp32()
    shape = dict(d_model=256, n_layers=2, n_heads=4, char_window=256, global_every=2)
    if not gpu:
        shape = dict(d_model=32, n_layers=2, n_heads=2, char_window=16, global_every=2)
    lengths = (2048, 2000) if gpu else (256, 200)
    rec.put("lengths", list(lengths))
    rec.put("device", str(dev))
    torch.manual_seed(0)
    sdpa = CharBertEncoder(EncoderConfig(**shape, attn_impl="sdpa")).to(dev)
    ok = True
    for T in lengths:
        batch = to_device(random_rows(2, T, seed=T), dev)
        real = batch["seg_id"] != 0
        for mode in ("compiled", "uncompiled") if gpu else ("uncompiled",):
            flex = CharBertEncoder(EncoderConfig(**shape, attn_impl="flex")).to(dev)
            flex.load_state_dict(sdpa.state_dict())
            if mode == "compiled":
                flex.compile_trunk()
            grads, outs = [], []
            for m in (sdpa, flex):
                m.zero_grad(set_to_none=True)
                out = m(batch)
                loss_terms(out, batch, 0.1)["total"].backward()
                outs.append(out)
                grads.append([p.grad.detach().clone() for p in m.parameters()])
            logit = max(float((outs[0][k] - outs[1][k])[real].abs().max()) for k in outs[0])
            grad = max(float((a - b).abs().max()) for a, b in zip(*grads, strict=True))
            good = logit < 1e-3 and grad < 1e-3
            ok &= good
            rec.put(f"T{T}_{mode}", {"max_logit_diff": logit, "max_grad_diff": grad, "ok": good})
    from torch.nn.attention.flex_attention import flex_attention

    cached = attention._compiled_flex
    rec.put(
        "compiled_flex_cache",
        "empty"
        if cached is None
        else ("RAW flex_attention" if cached is flex_attention else "compiled"),
    )
    ok &= cached is not flex_attention
    if not gpu:
        rec.put("compile", "skipped (CPU)")
    return ok
