"""AdamW parameter groups of the encoder."""

from __future__ import annotations

from typing import Any

import torch


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW groups: weight decay on matrices (ndim >= 2: linear and embedding weights) only;
    norm gains (vectors) are not decayed (Loshchilov & Hutter 2019 decoupled decay, applied
    as in GPT-style recipes).

    Returns two groups, ``[{"params": matrices, "weight_decay": weight_decay},
    {"params": vectors, "weight_decay": 0.0}]``; parameters without ``requires_grad`` are left out.
    """
    decay = [p for p in model.parameters() if p.requires_grad and p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.ndim < 2]
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
