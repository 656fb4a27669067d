"""The character encoder, its Composer wrapper, loss and metrics.

``StoicheiaModel`` is imported lazily (on first access) because importing Composer takes
seconds, and inference or tests of the bare encoder do not need it.
"""

from __future__ import annotations

from typing import Any

from stoicheia.model.config import EncoderConfig, mlp_hidden_size
from stoicheia.model.encoder import HEAD_SIZES, INPUT_SIZES, CharBertEncoder
from stoicheia.model.metrics import BitsPerChar, BoundaryF1, DiaAccuracy, PunctAccuracy

__all__ = [
    "HEAD_SIZES",
    "INPUT_SIZES",
    "BitsPerChar",
    "BoundaryF1",
    "CharBertEncoder",
    "DiaAccuracy",
    "EncoderConfig",
    "PunctAccuracy",
    "StoicheiaModel",
    "loss_terms",
    "mlp_hidden_size",
]


def __getattr__(name: str) -> Any:
    if name in ("StoicheiaModel", "loss_terms"):
        from stoicheia.model import composer_model

        return getattr(composer_model, name)
    raise AttributeError(f"module 'stoicheia.model' has no attribute {name!r}")
