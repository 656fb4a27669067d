"""The training loss of the encoder's logits: torch only (no Composer), so that a GPU check or
another trainer computes exactly the loss the Composer model trains on.

Loss of a batch:

    L = L_char + aux_weight * (L_boundary + L_dia + L_cap + L_punct)

    L_char  = sum_i w_i * CE(char_logits_i, tgt_chars_i) / max(1, N_slots)

where the sum runs over char-supervised slots, ``w_i = weight_i`` is the MDLM weight (``1/t``
at masked slots, Sahoo et al. 2024, "Simple and Effective Masked Diffusion Language Models",
eq. 10, continuous-time ELBO with a linear schedule) and ``N_slots`` is the number of
non-padding slots (``seg_id != 0``) in the (micro-)batch, as in that ELBO, which averages over
every position of the sequence. Since E[sum over masked slots of (1/t) CE] = sum over all
letters of CE, ``L_char`` keeps the scale of a per-letter cross-entropy whatever rates t the
batch drew; dividing by the number of masked slots instead would scale the loss (and the
step size) by 1/mean(t) of each batch. Each auxiliary term is ``sum CE / max(1, N_head)`` over
its own supervised slots, i.e. its mean, and exactly 0 with a zero gradient (but still a
gradient, so DDP sees every parameter used) when the batch has no label for that head.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.nn.functional as F
from torch import Tensor

from stoicheia.text.alphabet import IGNORE_INDEX

#: (head, target key) of the auxiliary losses.
AUX_TERMS = (
    ("boundary", "tgt_boundary"),
    ("dia", "tgt_dia"),
    ("cap", "tgt_cap"),
    ("punct", "tgt_punct"),
)


def _ce_sum(logits: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """Per-slot natural-log CE ``(B, T)`` float32 (0 where ``target == -100``) and the mask."""
    ce = F.cross_entropy(
        logits.float().transpose(1, 2), target, ignore_index=IGNORE_INDEX, reduction="none"
    )
    return ce, target != IGNORE_INDEX


def loss_terms(
    outputs: Mapping[str, Tensor], batch: Mapping[str, Tensor], aux_weight: float
) -> dict[str, Tensor]:
    """All loss terms of the module docstring as 0-dim float32 tensors.

    ``outputs``: the encoder's logits dict (``(B, T, C)`` per head); ``batch``: ``tgt_chars``,
    ``tgt_boundary``, ``tgt_dia``, ``tgt_cap``, ``tgt_punct`` (``(B, T)`` int64, -100 = skip)
    and ``weight`` (``(B, T)`` float32). Returns keys ``char``, ``boundary``, ``dia``, ``cap``,
    ``punct`` and ``total`` (the differentiable loss). Raises ``KeyError`` naming a missing key.
    """
    missing = [k for k in ("tgt_chars", "weight", *(t for _, t in AUX_TERMS)) if k not in batch]
    if missing:
        raise KeyError(
            f"batch lacks {missing}; the data pipeline must provide all targets (use -100 to skip)"
        )
    ce, sup = _ce_sum(outputs["char"], batch["tgt_chars"])
    # Zero the weight off supervised slots *before* multiplying, so a stray non-finite weight at
    # a padding slot cannot leak NaN into the value or the gradient.
    w = torch.where(
        sup, batch["weight"].to(ce.dtype), torch.zeros((), dtype=ce.dtype, device=ce.device)
    )
    # MDLM (Sahoo et al. 2024, eq. 10) averages (1/t)-weighted masked CE over ALL slots of the
    # sequence, not over the masked ones: E[sum_masked (1/t) CE] = sum_all CE, so the loss keeps
    # the scale of a per-letter CE whatever rates t the batch happened to draw.
    slots = (batch["seg_id"] != 0).sum() if "seg_id" in batch else sup.sum()
    terms = {"char": (w * ce).sum() / slots.clamp(min=1)}
    aux = torch.zeros((), dtype=ce.dtype, device=ce.device)
    for head, key in AUX_TERMS:
        # reduction="none" + sum keeps the graph through the head even with no labels (value 0,
        # gradient 0), where a "mean" cross-entropy would be 0/0 = NaN.
        ce_h, sup_h = _ce_sum(outputs[head], batch[key])
        terms[head] = ce_h.sum() / sup_h.sum().clamp(min=1)
        aux = aux + terms[head]
    terms["total"] = terms["char"] + aux_weight * aux
    return terms
