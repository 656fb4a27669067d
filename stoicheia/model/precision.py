"""Numerical precision of the encoder: fp32, or bf16 autocast on the CPU's bf16 matrix units.

Composer 0.32.1 autocasts ``amp_bf16`` only on CUDA (and XLA): on the CPU its
``get_precision_context`` yields no context, and its ``Trainer`` refuses any precision but
``fp32`` on a CPU device. On a CPU the recipe therefore runs Composer in ``fp32`` and the model
autocasts itself (:attr:`StoicheiaModel.cpu_bf16 <stoicheia.model.composer_model.StoicheiaModel>`,
:func:`cpu_autocast`); inference does the same (``LoadedModel``).

What runs in bf16 under ``torch.autocast("cpu", dtype=torch.bfloat16)``: the matrix products
of the blocks (``qkv``, ``out``, the GeGLU ``wi``/``wo``) and scaled-dot-product attention
(PyTorch's CPU flash-attention kernel, whose softmax accumulates in fp32). What stays fp32: the
weights and the AdamW state (autocast casts a bf16 copy per product), the residual stream
(embeddings are fp32 and ``x + bf16`` promotes to fp32), every RMSNorm (block norms see the
fp32 residual; the QK norms are given an fp32 input), RoPE, the five output heads and their
logits (run with autocast off), and the loss (computed outside the forward, on fp32 logits).

``auto`` reads the CPU (:func:`cpu_bf16_units`): bf16 where ``/proc/cpuinfo`` lists
``amx_bf16`` (Intel Sapphire Rapids and later) or ``avx512_bf16`` (Intel Cooper Lake, AMD
Zen 4 and later), whose bf16 dot-product instructions oneDNN uses for bf16 matrix products;
fp32 elsewhere (other CPUs emulate bf16 products, slower than fp32). Measured figures:
``benchmarks/bf16.py``, docs/benchmarks.md.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

#: ``/proc/cpuinfo`` flags of bf16 matrix instructions, strongest first.
BF16_FLAGS = ("amx_bf16", "avx512_bf16")
#: The precisions a run may ask for (``train.precision``).
PRECISIONS = ("auto", "fp32", "amp_bf16")
CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class CpuBf16:
    """What the CPU offers for bf16 products: ``flag`` is the strongest of :data:`BF16_FLAGS`
    it lists (``None``: none, or the file is unreadable); ``model`` its ``model name`` line."""

    flag: str | None
    model: str

    @property
    def present(self) -> bool:
        """True when the CPU has bf16 matrix instructions."""
        return self.flag is not None


def cpu_bf16_units(cpuinfo: str | Path | None = None) -> CpuBf16:
    """Read the bf16 matrix instructions of this CPU from ``cpuinfo`` (default
    :data:`CPUINFO`, Linux's ``/proc/cpuinfo``: its ``flags`` lines on x86). A missing or
    unreadable file (macOS, Windows, a sandbox) gives no flag: ``auto`` then stays in fp32."""
    cpuinfo = CPUINFO if cpuinfo is None else cpuinfo
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return CpuBf16(None, f"unknown CPU ({cpuinfo} unreadable)")
    flags: set[str] = set()
    model = "unknown CPU"
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "flags":
            flags.update(value.split())
        elif key == "model name" and model == "unknown CPU":
            model = value.strip()
    return CpuBf16(next((f for f in BF16_FLAGS if f in flags), None), model)


@dataclass(frozen=True)
class PrecisionChoice:
    """A resolved precision: ``precision`` is ``fp32`` or ``amp_bf16``; ``reason`` one line
    saying why (printed as a run's first lines); ``device`` ``cpu`` or ``gpu``."""

    precision: str
    reason: str
    device: str = "cpu"

    @property
    def cpu_bf16(self) -> bool:
        """True when the model must autocast itself (bf16 on a CPU)."""
        return self.precision == "amp_bf16" and self.device == "cpu"


def choose_precision(
    requested: str, device: str, cpuinfo: str | Path | None = None
) -> PrecisionChoice:
    """Resolve ``requested`` (one of :data:`PRECISIONS`) for ``device`` (``cpu`` or ``gpu``).

    ``auto``: ``amp_bf16`` on a GPU (Composer's CUDA autocast), ``amp_bf16`` on a CPU with
    bf16 matrix instructions (:func:`cpu_bf16_units`), else ``fp32``. An explicit precision is
    kept; ``amp_bf16`` on a CPU without them still runs (emulated) and the reason says it is
    slow. Raises ``ValueError`` for a precision outside :data:`PRECISIONS`.
    """
    if requested not in PRECISIONS:
        raise ValueError(f"train.precision={requested!r}: must be one of {', '.join(PRECISIONS)}")
    if device == "gpu":
        precision = "amp_bf16" if requested == "auto" else requested
        how = "bf16 autocast (Composer), TF32 matmuls" if precision == "amp_bf16" else "fp32"
        return PrecisionChoice(precision, f"{precision} on the GPU ({requested}): {how}", "gpu")
    cpu = cpu_bf16_units(cpuinfo)
    if requested == "fp32":
        return PrecisionChoice("fp32", "fp32 (train.precision=fp32)", "cpu")
    if requested == "amp_bf16":
        why = (
            f"the CPU has {cpu.flag}"
            if cpu.present
            else f"the CPU ({cpu.model}) has no {' or '.join(BF16_FLAGS)}: "
            "bf16 is emulated and slower than fp32"
        )
        return PrecisionChoice("amp_bf16", f"amp_bf16 on the CPU (train.precision=amp_bf16; {why})")
    if cpu.present:
        return PrecisionChoice(
            "amp_bf16",
            f"amp_bf16 on the CPU (auto: {cpu.model} has {cpu.flag}, bf16 matrix instructions)",
        )
    return PrecisionChoice(
        "fp32", f"fp32 on the CPU (auto: {cpu.model} has no {' or '.join(BF16_FLAGS)})"
    )


@contextlib.contextmanager
def cpu_autocast(enabled: bool) -> Iterator[None]:
    """``torch.autocast("cpu", dtype=torch.bfloat16)`` when ``enabled``, else nothing (an
    outer autocast, e.g. Composer's CUDA one, is left as it is)."""
    if not enabled:
        yield
        return
    with torch.autocast("cpu", dtype=torch.bfloat16):
        yield


#: Inference precisions (``--precision`` of the model commands, ``load_model(precision=...)``).
INFERENCE_PRECISIONS = ("auto", "fp32", "bf16")
#: The narrowest ``d_model`` at which ``auto`` runs inference in bf16 on a CPU with bf16
#: instructions: below it the casts cost more than the products save (benchmarks/bf16.py,
#: docs/benchmarks.md).
INFERENCE_BF16_MIN_WIDTH = 192


def inference_precision(
    requested: str, device_type: str, d_model: int, cpuinfo: str | Path | None = None
) -> PrecisionChoice:
    """The precision of inference (``restore``, ``evaluate``, ``benchmark``, ``serve``) for a
    model of width ``d_model`` on ``device_type`` (``cpu``, ``cuda``, ``mps``).

    ``auto``: bf16 autocast on a CPU with bf16 instructions (:func:`cpu_bf16_units`) for a
    model at least :data:`INFERENCE_BF16_MIN_WIDTH` wide, else fp32 (on a GPU too: inference
    there is not the bottleneck). ``bf16`` forces bf16 autocast on a CPU or CUDA GPU; ``fp32``
    forces fp32. Returns ``precision`` ``"bf16"`` or ``"fp32"``. Raises ``ValueError`` for
    another name, or ``bf16`` on a device autocast does not serve here (``mps``).
    """
    if requested not in INFERENCE_PRECISIONS:
        raise ValueError(f"precision {requested!r}: give one of {', '.join(INFERENCE_PRECISIONS)}")
    if requested == "fp32":
        return PrecisionChoice("fp32", "fp32 (asked for)", device_type)
    if requested == "bf16":
        if device_type not in ("cpu", "cuda"):
            raise ValueError(
                f"precision bf16 on {device_type}: bf16 autocast is offered on cpu and cuda only; "
                "give --precision fp32 or another --device"
            )
        return PrecisionChoice("bf16", "bf16 autocast (asked for)", device_type)
    if device_type != "cpu":
        return PrecisionChoice("fp32", f"fp32 (auto: inference on {device_type})", device_type)
    cpu = cpu_bf16_units(cpuinfo)
    if not cpu.present:
        return PrecisionChoice("fp32", f"fp32 (auto: {cpu.model} has no bf16 instructions)")
    if d_model < INFERENCE_BF16_MIN_WIDTH:
        return PrecisionChoice(
            "fp32",
            f"fp32 (auto: d_model {d_model} < {INFERENCE_BF16_MIN_WIDTH}, where bf16 does not pay)",
        )
    return PrecisionChoice(
        "bf16", f"bf16 autocast (auto: {cpu.model} has {cpu.flag}, d_model {d_model})"
    )
