"""The character encoder, its Composer wrapper, loss and metrics.

Everything but the shape (:class:`EncoderConfig`) is imported on first access: importing torch
takes seconds (Composer more), and checking a configuration needs neither.
"""

from __future__ import annotations

import importlib
from typing import Any

from stoicheia.model.config import EncoderConfig, mlp_hidden_size

_LAZY = {
    "HEAD_SIZES": "stoicheia.model.encoder",
    "INPUT_SIZES": "stoicheia.model.encoder",
    "CharBertEncoder": "stoicheia.model.encoder",
    "BitsPerChar": "stoicheia.model.metrics",
    "BoundaryF1": "stoicheia.model.metrics",
    "DiaAccuracy": "stoicheia.model.metrics",
    "PunctAccuracy": "stoicheia.model.metrics",
    "StoicheiaModel": "stoicheia.model.composer_model",
    "loss_terms": "stoicheia.model.loss",
}

__all__ = ["EncoderConfig", "mlp_hidden_size", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'stoicheia.model' has no attribute {name!r}")
