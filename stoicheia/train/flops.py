"""Model FLOPs per letter and the peak FLOP rate of the device: model FLOPs utilisation (MFU).

Training FLOPs per letter (forward + backward), after Chowdhery et al. 2022, "PaLM: Scaling
Language Modeling with Pathways", Appendix B (which counts a multiply-add as 2 FLOPs and the
backward pass as twice the forward):

    F = 6 N + 12 * sum over layers of (d_model * C_l)

``N`` is the number of parameters that multiply activations (every weight matrix of the blocks
and the output heads; the input embeddings are look-ups, not matrix products, and are left
out). The second term is the attention's own work (``Q K^T`` and the weighted sum of ``V``):
PaLM's ``12 L H Q T`` with ``H * Q = d_model`` and the context ``T`` replaced per layer by
``C_l``, the keys a query actually sees. A packed row holds several documents and no query
sees past its own, so the attention term is counted per document from its own length ``L``
(:func:`attention_pairs`): ``L^2`` (query, key) pairs in a global layer, and in a local
layer the pairs with ``|i - j| <= char_window / 2`` inside the document, so a batch costs

    F_batch = 6 N * letters + 12 d_model * sum over layers, documents of pairs_l(L)

(:func:`batch_flops`; padding slots are no letters and cost nothing). Counting the whole
packed row ``T`` as a global layer's context instead overstates the attention work of rows of
short documents, by 18 to 30 % of the total at the full model's T = 8192.
:func:`flops_per_letter` is the upper bound for rows that hold one document of ``T`` letters.
This is the *model* FLOP count (work the architecture needs), not what a kernel executes, so
MFU stays comparable between the SDPA and FlexAttention paths.

Peak rates: dense (non-sparse) tensor-core figures from the vendors' data sheets, by
precision. MFU is ``letters/s * F / (world size * peak)`` per device, logged only on a GPU of
the table; on a CPU (or an unknown GPU) only letters per second are logged.
"""

from __future__ import annotations

from typing import Any

import torch

#: Dense peak FLOP/s by device-name fragment (lower case) and precision; the first matching
#: fragment wins, so more specific names come first. Sources: NVIDIA data sheets (H200 SXM and
#: NVL, H100 SXM/PCIe/NVL, A100, L40S, L4, A10, V100), AMD MI300X/MI250X data sheets. The H200
#: NVL (PCIe card, 600 W) is rated 835.5 TFLOP/s dense bf16 against 989 for the SXM module;
#: ``torch.cuda.get_device_name()`` says "NVIDIA H200 NVL" for it and "NVIDIA H200" for SXM.
PEAK_FLOPS: tuple[tuple[str, dict[str, float]], ...] = (
    ("h200 nvl", {"amp_bf16": 835.5e12, "fp32": 417.5e12}),
    ("h200", {"amp_bf16": 989e12, "fp32": 494e12}),
    ("h100 nvl", {"amp_bf16": 835.5e12, "fp32": 417.5e12}),
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
    """Training FLOPs (forward + backward) per letter slot for rows of ``seq_len`` slots that
    each hold one document (PaLM's count with ``C_l = min(char_window + 1, T)`` local, ``T``
    global: an upper bound for packed rows, see :func:`batch_flops`)."""
    enc = getattr(model, "encoder", model)
    cfg = enc.cfg
    ctx = sum(
        seq_len if cfg.is_global(i) else min(cfg.char_window + 1, seq_len)
        for i in range(cfg.n_layers)
    )
    return 6.0 * matmul_params(enc) + 12.0 * cfg.d_model * ctx


def attention_pairs(lengths: torch.Tensor, half_window: int | None) -> torch.Tensor:
    """(query, key) pairs one attention layer computes for documents of ``lengths`` letters
    (any shape, integer or float; returns float64 of the same shape). Global layer
    (``half_window`` None): ``L^2``. Local layer: the pairs with ``|i - j| <= h`` inside the
    document, ``L + 2 (m L - m (m + 1) / 2)`` with ``m = min(h, L - 1)`` (``L`` on the diagonal,
    ``L - k`` pairs at each distance ``k = 1..m`` on either side); 0 for ``L = 0``."""
    L = lengths.to(torch.float64)
    if half_window is None:
        return L * L
    m = torch.clamp(torch.minimum(L - 1, torch.full_like(L, float(half_window))), min=0)
    return L + 2 * (m * L - m * (m + 1) / 2)


def document_lengths(seg_id: torch.Tensor) -> torch.Tensor:
    """Letters of each document of each row: ``seg_id`` ``(B, T)`` integer (0 = padding,
    documents 1..k) -> ``(B, T + 1)`` float64 counts by document id (column 0, the padding, is
    zeroed). Runs on ``seg_id``'s device without a host sync."""
    B, T = seg_id.shape
    counts = torch.zeros(B, T + 1, dtype=torch.float64, device=seg_id.device)
    counts.scatter_add_(
        1, seg_id.long(), torch.ones(B, T, dtype=torch.float64, device=seg_id.device)
    )
    counts[:, 0] = 0
    return counts


def batch_flops(model: Any, seg_id: torch.Tensor) -> torch.Tensor:
    """Training FLOPs (forward + backward) of one batch of rows ``seg_id`` (``(B, T)``
    integer, 0 = padding), counting each document's attention over its own length (module
    docstring). Returns a 0-dim float64 tensor on ``seg_id``'s device (no host sync)."""
    enc = getattr(model, "encoder", model)
    cfg = enc.cfg
    lengths = document_lengths(seg_id)
    n_global = sum(cfg.is_global(i) for i in range(cfg.n_layers))
    pairs = n_global * attention_pairs(lengths, None).sum()
    if n_global < cfg.n_layers:
        local = attention_pairs(lengths, cfg.char_window // 2).sum()
        pairs = pairs + (cfg.n_layers - n_global) * local
    return 6.0 * matmul_params(enc) * lengths.sum() + 12.0 * cfg.d_model * pairs


def peak_flops(device_name: str, precision: str) -> float | None:
    """Peak FLOP/s of one device named ``device_name`` (``torch.cuda.get_device_name()``) at
    ``precision`` (``amp_bf16`` or ``fp32``); ``None`` when the device is not in
    :data:`PEAK_FLOPS`."""
    name = device_name.lower()
    for fragment, rates in PEAK_FLOPS:
        if fragment in name:
            return rates.get(precision)
    return None
