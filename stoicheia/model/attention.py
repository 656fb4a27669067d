"""Attention masks over packed rows, and the two attention back-ends (SDPA and FlexAttention).

A packed row holds several documents, told apart by ``seg_id`` (``(B, T)`` int, 1, 2, ... per
document, 0 = padding). The rule, shared by both back-ends, for query slot ``i`` and key slot
``j`` of one row:

    allowed(i, j) = seg[i] == seg[j]                       # same document
                    and (seg[i] != 0 or i == j)            # padding sees only itself
                    and |i - j| <= half_window             # local blocks only

Letting a padding slot attend to itself keeps every softmax row non-empty, so padding never
produces NaN (forward or backward); its output is ignored downstream (its targets are -100).

``sdpa``: the rule is materialised as a dense ``(B, 1, T, T)`` bool tensor and passed to
:func:`torch.nn.functional.scaled_dot_product_attention` (runs anywhere; memory ``B*T*T`` bytes).
``flex``: the same rule is a FlexAttention ``mask_mod``; :func:`create_block_mask` turns it into a
block-sparse :class:`BlockMask` so fully masked 128x128 tiles are skipped (the GPU path).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import Tensor

if TYPE_CHECKING:
    from torch.nn.attention.flex_attention import BlockMask

# FlexAttention is imported where it is used: importing it loads torch._dynamo (about 2 s on a
# CPU core), which the SDPA path of inference (restore, serve) never needs.
Mask = Tensor | Any


def dense_mask(seg_id: Tensor, half_window: int | None) -> Tensor:
    """The attention rule (module docstring) as a dense boolean mask.

    ``seg_id``: ``(B, T)`` integer tensor. ``half_window``: max ``|i - j|`` for local blocks,
    ``None`` for global blocks. Returns ``(B, 1, T, T)`` bool, True = may attend (the SDPA
    convention), broadcast over heads.
    """
    T = seg_id.shape[1]
    idx = torch.arange(T, device=seg_id.device)
    same_doc = seg_id[:, :, None] == seg_id[:, None, :]
    is_self = idx[:, None] == idx[None, :]
    allowed = same_doc & ((seg_id != 0)[:, :, None] | is_self)
    if half_window is not None:
        allowed = allowed & ((idx[:, None] - idx[None, :]).abs() <= half_window)
    return allowed[:, None]


def make_mask_mod(
    seg_id: Tensor, half_window: int | None
) -> Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]:
    """The attention rule as a FlexAttention ``mask_mod(b, h, q_idx, kv_idx) -> bool``.

    Captures ``seg_id`` (``(B, T)`` integer); must agree element-wise with :func:`dense_mask`
    (tested). Only tensor ops that vmap and torch.compile can trace are used.
    """

    def mask_mod(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        seg_q = seg_id[b, q_idx]
        seg_k = seg_id[b, kv_idx]
        keep = (seg_q == seg_k) & ((seg_q != 0) | (q_idx == kv_idx))
        if half_window is not None:
            keep = keep & ((q_idx - kv_idx).abs() <= half_window)
        return keep

    return mask_mod


#: ``torch.compile(create_block_mask)`` (built at the first GPU call, then reused).
_compiled_block_mask: Callable[..., BlockMask] | None = None


def flex_block_mask(seg_id: Tensor, half_window: int | None) -> BlockMask:
    """:class:`BlockMask` of the attention rule for a ``(B, T)`` integer ``seg_id`` (one per
    forward; 128 x 128 tiles). Called before the encoder enters its compiled trunk
    (:meth:`~stoicheia.model.encoder.CharBertEncoder.compile_trunk`), so the compiled model
    gets the mask as an input and never breaks its graph to build it.

    On a GPU the mask is built by a compiled function of its own (``torch.compile`` of
    ``create_block_mask``, what torch 2.7 recommends instead of the deprecated
    ``_compile=True``): built eagerly it materialises ``(B, T, T)`` intermediates, which at
    T = 8192 costs more memory than the attention itself. The ``mask_mod`` closure is made
    here, outside the compiled function, which then compiles without a graph break, once per
    ``(B, T)`` and window (``dynamic=False``; a new ``seg_id`` is an input, not a recompile).
    Elsewhere (and when already inside a compiled region) it runs as plain torch code.
    """
    from torch.nn.attention.flex_attention import create_block_mask

    global _compiled_block_mask
    B, T = seg_id.shape
    make = create_block_mask
    if _compile_on(seg_id) and not torch.compiler.is_compiling():
        if _compiled_block_mask is None:
            _compiled_block_mask = torch.compile(create_block_mask, dynamic=False)
        make = _compiled_block_mask
    with torch.no_grad():  # one compiled graph for training and evaluation alike
        return make(make_mask_mod(seg_id, half_window), B, None, T, T, device=seg_id.device)


def _compile_on(t: Tensor) -> bool:
    """Whether the FlexAttention pieces are compiled for tensors like ``t``: on CUDA only
    (see :func:`_flex` for the CPU). One function so that CPU tests can force the GPU branch."""
    return t.is_cuda


@dataclass
class AttentionMasks:
    """The masks of one forward pass: ``local`` / ``glob`` are ``None`` when no block needs them."""

    impl: str
    local: Mask | None
    glob: Mask | None


def build_masks(
    seg_id: Tensor, half_window: int, impl: str, need_local: bool, need_global: bool
) -> AttentionMasks:
    """Build the local and/or global masks once per forward, for ``impl`` in {"sdpa", "flex"}."""
    if impl == "sdpa":
        make: Callable[[Tensor, int | None], Any] = dense_mask
    elif impl == "flex":
        make = flex_block_mask
    else:
        raise ValueError(f"attn_impl={impl!r}: must be 'sdpa' or 'flex'")
    return AttentionMasks(
        impl=impl,
        local=make(seg_id, half_window) if need_local else None,
        glob=make(seg_id, None) if need_global else None,
    )


#: ``torch.compile(flex_attention)`` for calls outside a compiled region (built at the first
#: such GPU call). Never assigned inside a compiled region: there ``torch.compile`` is a no-op
#: that returns ``flex_attention`` itself, and caching that would send every later uncompiled
#: call (evaluation, inference in the same process) to the unfused reference implementation,
#: which builds the full ``(B, H, T, T)`` scores (about 17 GB per block at 4 x 16 x 8192).
_compiled_flex: Callable[..., Tensor] | None = None


def _flex(q: Tensor, k: Tensor, v: Tensor, block_mask: BlockMask) -> Tensor:
    """FlexAttention: traced into the graph inside a compiled region, compiled on CUDA
    outside one, eager elsewhere.

    Why eager on CPU: in torch 2.7.0 the inductor CPU FlexAttention template emits C++ that does
    not compile (``CppCompileError: expected primary-expression before ')'``) whenever OpenMP
    runs more than one thread (checked on a 2-core machine; it compiles with
    ``torch.set_num_threads(1)``, taking ~15 s). Eager flex_attention runs an unfused reference
    implementation with the same semantics, which is what the CPU tests need; inference on a
    CPU uses SDPA instead (:mod:`stoicheia.inference.loading`).
    """
    from torch.nn.attention.flex_attention import flex_attention

    global _compiled_flex
    if torch.compiler.is_compiling():
        # Dynamo captures flex_attention into the enclosing graph and fuses it there.
        return flex_attention(q, k, v, block_mask=block_mask)  # type: ignore[return-value]
    if _compile_on(q):
        if _compiled_flex is None:
            # dynamic=False: rows have a fixed length T, so one static kernel per (B, T).
            _compiled_flex = torch.compile(flex_attention, dynamic=False)
        return _compiled_flex(q, k, v, block_mask=block_mask)
    with warnings.catch_warnings():
        # The "called without torch.compile ... unfused implementation" warning is the point here.
        warnings.filterwarnings("ignore", message=".*flex_attention.*", category=UserWarning)
        return flex_attention(q, k, v, block_mask=block_mask)  # type: ignore[return-value]


def attend(q: Tensor, k: Tensor, v: Tensor, mask: Mask, impl: str) -> Tensor:
    """Masked softmax attention with scale ``1/sqrt(head_dim)``.

    ``q``, ``k``, ``v``: ``(B, H, T, head_dim)`` of one dtype; ``mask`` from :func:`build_masks`
    of the same ``impl``. Returns ``(B, H, T, head_dim)``.
    """
    if impl == "sdpa":
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    if impl == "flex":
        from torch.nn.attention.flex_attention import BlockMask

        assert isinstance(mask, BlockMask), "attn_impl='flex' needs a BlockMask from build_masks"
        return _flex(q, k, v, mask)
    raise ValueError(f"attn_impl={impl!r}: must be 'sdpa' or 'flex'")
