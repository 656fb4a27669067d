"""CharBertEncoder: a ModernBERT-style bidirectional encoder over packed rows of Greek letters.

Read top to bottom:

1. **Input.** Four aligned planes per slot, each ``(B, T)`` int64: ``chars`` (27 ids: 24 letters,
   MASK, BLANK (never an input), PAD), ``boundary`` (4: 3 classes + UNKNOWN), ``dia`` (49: 48 +
   UNKNOWN), ``punct`` (7: 6 + UNKNOWN). The input vector of a slot is the *sum* of the four
   embeddings. Capitalisation is predicted but never an input.
2. **Position.** Rotary embeddings (RoPE, Su et al. 2021, "RoFormer") on ``pos``, the slot's
   position *within its document* (0 at each document start), not its index in the row, so a
   document's outputs do not depend on where it was packed.
3. **Blocks.** Pre-norm residual blocks ``x += attn(norm(x)); x += mlp(norm(x))`` with RMSNorm
   (Zhang & Sennrich 2019), per-head QK RMSNorm before RoPE (stabilises attention logits,
   Dehghani et al. 2023), a GeGLU MLP (Shazeer 2020) of hidden width ``ceil(8/3 d / 64) * 64``,
   and no biases anywhere (as in ModernBERT, Warner et al. 2024).
4. **Local / global.** Block ``i`` is global when ``(i + 1) % global_every == 0`` (3 local : 1
   global by default); local blocks see ``char_window // 2`` slots on each side. All blocks
   see only their own document (``seg_id``); see :mod:`stoicheia.model.attention`.
5. **Output.** A final RMSNorm and five bias-free linear heads; logits are returned as float32.

Precision: under bf16 autocast (:mod:`stoicheia.model.precision`) the block matrix products
and attention run in bf16; the residual stream, the norms, RoPE, the heads and the logits
stay float32.

Init: every linear and embedding weight ~ N(0, init_std); the two residual output projections
of each block (attention ``out`` and MLP ``wo``) use ``init_std / sqrt(2 * n_layers)`` so the
residual stream's variance does not grow with depth (GPT-2, Radford et al. 2019). Norm weights
start at 1, the per-head QK norms' at ``qk_norm_init`` (1 by default).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from torch.utils.checkpoint import checkpoint

from stoicheia.model.attention import Mask, attend, build_masks
from stoicheia.model.config import EncoderConfig
from stoicheia.text.alphabet import (
    BLANK,
    BOUNDARY_UNKNOWN,
    DIA_UNKNOWN,
    NUM_BOUNDARY,
    NUM_CAP,
    NUM_CHAR_INPUTS,
    NUM_DIA,
    NUM_PUNCT,
    PAD,
    PUNCT_UNKNOWN,
)

#: Input vocabulary size of each embedded plane (the UNKNOWN id is the last one).
INPUT_SIZES = {
    "chars": NUM_CHAR_INPUTS,
    "boundary": NUM_BOUNDARY + 1,
    "dia": NUM_DIA + 1,
    "punct": NUM_PUNCT + 1,
}
#: Output classes of each head. The char head scores all 27 input ids; targets use 0..23 and BLANK.
HEAD_SIZES = {
    "char": NUM_CHAR_INPUTS,
    "boundary": NUM_BOUNDARY,
    "dia": NUM_DIA,
    "cap": NUM_CAP,
    "punct": NUM_PUNCT,
}
#: Id used for an input plane that the caller leaves out.
_DEFAULT_IDS = {"boundary": BOUNDARY_UNKNOWN, "dia": DIA_UNKNOWN, "punct": PUNCT_UNKNOWN}


# --- rotary position embedding ------------------------------------------------------------


def rope_cos_sin(pos: Tensor, head_dim: int, theta: float) -> tuple[Tensor, Tensor]:
    """cos/sin tables for RoPE. ``pos``: ``(B, T)`` int; returns two ``(B, 1, T, head_dim // 2)``
    float32 tensors, angle ``pos * theta ** (-2k / head_dim)`` for pair ``k``."""
    inv_freq = theta ** (
        -torch.arange(0, head_dim, 2, device=pos.device, dtype=torch.float32) / head_dim
    )
    angle = pos.to(torch.float32)[..., None] * inv_freq
    return angle.cos()[:, None], angle.sin()[:, None]


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate ``x`` (``(B, H, T, head_dim)``) pairwise, pairing dim ``k`` with ``k + head_dim/2``
    (the GPT-NeoX "rotate half" layout). Computed in float32, returned in ``x``'s dtype."""
    x1, x2 = x.float().chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)


# --- blocks ---------------------------------------------------------------------------------


class Attention(nn.Module):
    """Multi-head self-attention with QK RMSNorm and RoPE; ``(B, T, d) -> (B, T, d)``."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.n_heads, self.head_dim = cfg.n_heads, cfg.head_dim
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.q_norm = nn.RMSNorm(cfg.head_dim, eps=cfg.norm_eps)
        self.k_norm = nn.RMSNorm(cfg.head_dim, eps=cfg.norm_eps)
        self.out = nn.Linear(cfg.d_model, cfg.d_model, bias=False)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, mask: Mask, impl: str) -> Tensor:
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        # The QK norms and RoPE run in float32 (under bf16 autocast q, k come out of qkv in
        # bf16); attention needs one dtype for q, k, v.
        q = apply_rope(self.q_norm(q.float()), cos, sin).to(v.dtype)
        k = apply_rope(self.k_norm(k.float()), cos, sin).to(v.dtype)
        y = attend(q, k, v, mask, impl)  # (B, H, T, head_dim)
        return self.out(y.transpose(1, 2).reshape(B, T, D))


class GeGLU(nn.Module):
    """``wo(gelu(x Wg) * (x Wu))`` with hidden width ``cfg.mlp_hidden``;
    ``(B, T, d) -> (B, T, d)``."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.wi = nn.Linear(cfg.d_model, 2 * cfg.mlp_hidden, bias=False)  # gate and up, fused
        self.wo = nn.Linear(cfg.mlp_hidden, cfg.d_model, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        gate, up = self.wi(x).chunk(2, dim=-1)
        return self.wo(F.gelu(gate) * up)


class Block(nn.Module):
    """Pre-norm residual block; ``is_global`` picks the global or the local (windowed) mask."""

    def __init__(self, cfg: EncoderConfig, is_global: bool) -> None:
        super().__init__()
        self.is_global = is_global
        self.attn_norm = nn.RMSNorm(cfg.d_model, eps=cfg.norm_eps)
        self.attn = Attention(cfg)
        self.mlp_norm = nn.RMSNorm(cfg.d_model, eps=cfg.norm_eps)
        self.mlp = GeGLU(cfg)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, mask: Mask, impl: str) -> Tensor:
        """``x``: ``(B, T, d)``; ``mask``: this block's mask (local or global) of ``impl``."""
        x = x + self.attn(self.attn_norm(x), cos, sin, mask, impl)
        return x + self.mlp(self.mlp_norm(x))


# --- the encoder ----------------------------------------------------------------------------


class CharBertEncoder(nn.Module):
    """The character encoder (module docstring). ``cfg`` is validated on construction
    (``ValueError`` naming the field).

    Set ``check_inputs = False`` to skip the id-range check in :meth:`forward` (it costs one
    device sync per call; it is skipped automatically inside torch.compile). In training mode
    (``self.training`` and grad enabled) the id-range check runs once per input shape, on the
    first batch of that shape, not on every step: a sync per step would leave the GPU idle
    while the host waits, and the training batches come from the packer, whose ids are right by
    construction (a pipeline fault still shows on the first step). In evaluation and inference,
    where the ids may come from a user, it runs on every call.

    Set ``activation_checkpointing = True`` (``train.activation_checkpointing``) to recompute
    each block's activations in the backward pass instead of keeping them
    (:func:`torch.utils.checkpoint.checkpoint`, non-reentrant): same loss and gradients, about
    one more forward of compute, and activation memory of one block instead of all of them.

    :meth:`compile_trunk` compiles everything after the attention masks (embeddings, blocks,
    heads); the masks are built before, outside the compiled graph.
    """

    def __init__(self, cfg: EncoderConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg = (cfg or EncoderConfig()).validate()
        self.check_inputs = True
        self._checked_shapes: set[tuple[int, ...]] = set()  # training shapes range-checked
        self.activation_checkpointing = False
        self._compiled_trunk: Any = None
        self.embed = nn.ModuleDict(
            {k: nn.Embedding(n, cfg.d_model) for k, n in INPUT_SIZES.items()}
        )
        self.blocks = nn.ModuleList(Block(cfg, cfg.is_global(i)) for i in range(cfg.n_layers))
        self.final_norm = nn.RMSNorm(cfg.d_model, eps=cfg.norm_eps)
        self.heads = nn.ModuleDict(
            {k: nn.Linear(cfg.d_model, n, bias=False) for k, n in HEAD_SIZES.items()}
        )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Init described in the module docstring."""
        std = self.cfg.init_std
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=std)
            elif isinstance(m, nn.RMSNorm):
                m.reset_parameters()
        for block in self.blocks:
            for proj in (block.attn.out, block.mlp.wo):
                nn.init.normal_(proj.weight, mean=0.0, std=std / math.sqrt(2 * self.cfg.n_layers))
            for norm in (block.attn.q_norm, block.attn.k_norm):
                nn.init.constant_(norm.weight, self.cfg.qk_norm_init)

    def forward(
        self,
        chars: Tensor | Mapping[str, Tensor],
        boundary: Tensor | None = None,
        dia: Tensor | None = None,
        punct: Tensor | None = None,
        seg_id: Tensor | None = None,
        pos: Tensor | None = None,
    ) -> dict[str, Tensor]:
        """Logits for every slot.

        Pass either a batch dict (keys ``chars``, ``boundary``, ``dia``, ``punct``, ``seg_id``,
        ``pos``; other keys such as targets are ignored) or the tensors, each ``(B, T)`` integer.
        Left-out planes default to: boundary/dia/punct UNKNOWN; ``seg_id`` 1 where
        ``chars != PAD`` else 0 (one document per row); ``pos`` ``0..T-1``.

        Returns ``{"char": (B,T,27), "boundary": (B,T,3), "dia": (B,T,48), "cap": (B,T,2),
        "punct": (B,T,6)}`` float32 logits. Padding slots (``seg_id == 0``) get finite but
        meaningless logits.

        Raises ``TypeError`` when ``chars`` is no tensor, ``ValueError`` when ``chars`` is not 2-D
        or another tensor is not ``(B, T)`` integer like ``chars``, or an id is out of range (the
        message names the plane and its valid range).
        """
        if isinstance(chars, Mapping):
            batch = chars
            if "chars" not in batch:
                raise ValueError(f"batch has no 'chars' tensor (keys: {sorted(batch)})")
            chars = batch["chars"]
            boundary, dia, punct = batch.get("boundary"), batch.get("dia"), batch.get("punct")
            seg_id, pos = batch.get("seg_id"), batch.get("pos")
        if not isinstance(chars, Tensor):
            raise TypeError(
                "chars must be a torch.Tensor of letter ids, shape (B, T), "
                f"got {type(chars).__name__}"
            )
        if chars.dim() != 2:  # before the defaults below are shaped like it
            raise ValueError(
                f"chars has shape {tuple(chars.shape)}: "
                "expected 2 dimensions (B, T), rows of letter ids; "
                "for a single row give chars.unsqueeze(0)"
            )
        planes = {"chars": chars, "boundary": boundary, "dia": dia, "punct": punct}
        for name, default in _DEFAULT_IDS.items():
            if planes[name] is None:
                planes[name] = torch.full_like(chars, default)
        if seg_id is None:
            seg_id = (chars != PAD).to(torch.int32)
        if pos is None:
            pos = torch.arange(chars.shape[-1], device=chars.device).expand_as(chars)
        self._check(planes, seg_id, pos)  # type: ignore[arg-type]

        flags = [b.is_global for b in self.blocks]
        masks = build_masks(
            seg_id, self.cfg.char_window // 2, self.cfg.attn_impl, not all(flags), any(flags)
        )
        trunk = self._compiled_trunk if self._compiled_trunk is not None else self._trunk
        return trunk(planes, pos, masks.local, masks.glob)

    def _trunk(
        self, planes: dict[str, Tensor], pos: Tensor, local: Mask | None, glob: Mask | None
    ) -> dict[str, Tensor]:
        """Everything after the masks: embeddings, RoPE tables, blocks, heads (see
        :meth:`forward` for shapes). The part :meth:`compile_trunk` compiles."""
        x = sum(self.embed[name](ids) for name, ids in planes.items())
        cos, sin = rope_cos_sin(pos, self.cfg.head_dim, self.cfg.rope_theta)
        impl = self.cfg.attn_impl
        recompute = self.activation_checkpointing and self.training and torch.is_grad_enabled()
        for block in self.blocks:
            mask = glob if block.is_global else local
            if recompute:
                x = checkpoint(block, x, cos, sin, mask, impl, use_reentrant=False)
            else:
                x = block(x, cos, sin, mask, impl)
        x = self.final_norm(x)
        # The heads run in float32 even under autocast: the logits feed the loss and the
        # bits/char, and the heads are a small share of the work (86 outputs).
        with torch.autocast(x.device.type, enabled=False):
            x = x.float()
            return {name: head(x) for name, head in self.heads.items()}

    def compile_trunk(self, **options: Any) -> None:
        """Compile :meth:`_trunk` with ``torch.compile(..., dynamic=False, **options)``; every
        later :meth:`forward` (training, evaluation, inference; under DDP too, since DDP calls
        this module) runs it, while the input checks and the attention masks stay outside the
        graph (no graph break per forward). Rows keep one shape, so there is one graph for
        training and one for ``no_grad`` evaluation. ``options`` go to ``torch.compile``
        (e.g. ``backend="aot_eager"`` in CPU tests)."""
        options.setdefault("dynamic", False)
        self._compiled_trunk = torch.compile(self._trunk, **options)

    def __getstate__(self) -> dict[str, Any]:
        # the compiled function refers back to this module; copies (deepcopy, pickle) get the
        # plain trunk and may be compiled again
        state = dict(self.__dict__)
        state["_compiled_trunk"] = None
        return state

    def _check(self, planes: dict[str, Tensor], seg_id: Tensor, pos: Tensor) -> None:
        """Shape/dtype checks (free) and, if ``check_inputs``, one id-range check (one sync);
        in training mode only on the first batch of each shape (class docstring)."""
        shape = planes["chars"].shape
        for name, t in [*planes.items(), ("seg_id", seg_id), ("pos", pos)]:
            if t.dim() != 2 or t.shape != shape:
                raise ValueError(
                    f"{name} has shape {tuple(t.shape)}, "
                    f"expected (B, T) = {tuple(shape)} like chars"
                )
            if t.dtype.is_floating_point or t.dtype == torch.bool:
                raise ValueError(
                    f"{name} has dtype {t.dtype}; ids must be an integer dtype (int64 / int32)"
                )
        if not self.check_inputs or torch.compiler.is_compiling():
            return
        training = self.training and torch.is_grad_enabled()
        if training and tuple(shape) in self._checked_shapes:
            return
        checks = [((t < 0) | (t >= INPUT_SIZES[k])).any() for k, t in planes.items()]
        checks += [(seg_id < 0).any(), (planes["chars"] == BLANK).any()]
        flags = torch.stack(checks).tolist()  # the one device sync
        if any(flags):
            ranges = {k: f"valid 0..{n - 1}" for k, n in INPUT_SIZES.items()}
            ranges |= {
                "seg_id": "valid >= 0",
                "BLANK": f"chars contains BLANK={BLANK}, a target-only id",
            }
            which = [n for n, f in zip(ranges, flags, strict=True) if f]
            raise ValueError("ids out of range: " + "; ".join(f"{n} ({ranges[n]})" for n in which))
        if training:
            self._checked_shapes.add(tuple(shape))
