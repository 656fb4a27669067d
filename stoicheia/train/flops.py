"""Model FLOPs per letter and the peak FLOP rate of the device: model FLOPs utilisation (MFU).

Training FLOPs per letter (forward + backward), after Chowdhery et al. 2022, "PaLM: Scaling
Language Modeling with Pathways", Appendix B (which counts a multiply-add as 2 FLOPs and the
backward pass as twice the forward):

    F = 6 N + 12 * sum over layers of (d_model * C_l)

``N`` is the number of parameters that multiply activations (every weight matrix of the blocks
and the output heads; the input embeddings are look-ups, not matrix products, and are left
out). The second term is the attention's own work (``Q K^T`` and the weighted sum of ``V``):
PaLM's ``12 L H Q T`` with ``H * Q = d_model`` and the context ``T`` replaced per layer by
``C_l``, the keys a query actually sees: ``min(char_window + 1, T)`` in a local layer, the
row length ``T`` in a global layer (an upper bound: a global layer sees its document only).
This is the *model* FLOP count (work the architecture needs), not what a kernel executes, so
MFU stays comparable between the SDPA and FlexAttention paths.

Peak rates: dense (non-sparse) tensor-core figures from the vendors' data sheets, by
precision. MFU is ``letters/s * F / (world size * peak)`` per device, logged only on a GPU of
the table; on a CPU (or an unknown GPU) only letters per second are logged.
"""

from __future__ import annotations

from typing import Any

#: Dense peak FLOP/s by device-name fragment (lower case) and precision; the first matching
#: fragment wins, so more specific names come first. Sources: NVIDIA data sheets (H200, H100
#: SXM/PCIe, A100, L40S, L4, A10, V100), AMD MI300X/MI250X data sheets.
PEAK_FLOPS: tuple[tuple[str, dict[str, float]], ...] = (
    ("h200", {"amp_bf16": 989e12, "fp32": 494e12}),
    ("h100 pcie", {"amp_bf16": 756e12, "fp32": 378e12}),
    ("h100", {"amp_bf16": 989e12, "fp32": 494e12}),
    ("a100", {"amp_bf16": 312e12, "fp32": 156e12}),
    ("l40s", {"amp_bf16": 362e12, "fp32": 183e12}),
    ("l4", {"amp_bf16": 121e12, "fp32": 60e12}),
    ("a10", {"amp_bf16": 125e12, "fp32": 62.5e12}),
    ("v100", {"amp_bf16": 125e12, "fp32": 15.7e12}),
    ("mi300x", {"amp_bf16": 1307e12, "fp32": 163e12}),
    ("mi250x", {"amp_bf16": 383e12, "fp32": 95.7e12}),
)
# fp32 rows are the TF32 tensor-core rates (the recipe enables TF32 matmuls on GPUs), except
# V100 (no TF32: its fp32 CUDA-core rate) and the AMD parts (their fp32 matrix rates).


def matmul_params(model: Any) -> int:
    """Parameters of ``model`` (a ``CharBertEncoder`` or a module holding one as ``encoder``)
    that multiply activations: all but the input embeddings and the norm scales."""
    enc = getattr(model, "encoder", model)
    total = 0
    for name, p in enc.named_parameters():
        if name.startswith("embed.") or p.dim() < 2:
            continue
        total += p.numel()
    return total


def flops_per_letter(model: Any, seq_len: int) -> float:
    """Training FLOPs (forward + backward) per letter slot for rows of ``seq_len`` slots
    (module docstring formula)."""
    enc = getattr(model, "encoder", model)
    cfg = enc.cfg
    ctx = sum(
        seq_len if cfg.is_global(i) else min(cfg.char_window + 1, seq_len)
        for i in range(cfg.n_layers)
    )
    return 6.0 * matmul_params(enc) + 12.0 * cfg.d_model * ctx


def peak_flops(device_name: str, precision: str) -> float | None:
    """Peak FLOP/s of one device named ``device_name`` (``torch.cuda.get_device_name()``) at
    ``precision`` (``amp_bf16`` or ``fp32``); ``None`` when the device is not in
    :data:`PEAK_FLOPS`."""
    name = device_name.lower()
    for fragment, rates in PEAK_FLOPS:
        if fragment in name:
            return rates.get(precision)
    return None
