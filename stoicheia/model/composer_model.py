"""StoicheiaModel: the encoder wrapped for Composer, with the training loss and eval metrics.

The loss is :func:`stoicheia.model.loss.loss_terms` (its formula is in that module's
docstring); it lives in a module of its own that imports only torch, so that code without
Composer (``benchmarks/gpu_check.py`` on a bare GPU machine) computes the same loss.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from composer.models import ComposerModel
from torch import Tensor
from torchmetrics import Metric

from stoicheia.model.config import EncoderConfig
from stoicheia.model.encoder import CharBertEncoder
from stoicheia.model.loss import AUX_TERMS, loss_terms
from stoicheia.model.metrics import BitsPerChar, eval_metrics, update_metric
from stoicheia.model.precision import cpu_autocast

__all__ = ["AUX_TERMS", "StoicheiaModel", "loss_terms"]


class StoicheiaModel(ComposerModel):
    """Composer model around :class:`CharBertEncoder`.

    ``cfg``: encoder shape (validated); ``aux_weight``: lambda of the auxiliary terms (>= 0).
    After each :meth:`loss` call, ``last_loss_terms`` holds the detached 0-dim tensors of
    :func:`loss_terms` (``char``, ``boundary``, ``dia``, ``cap``, ``punct``, ``total``); they stay
    tensors to avoid a device sync per step, call ``float()`` when logging.

    ``cpu_bf16``: run :meth:`forward` (training and evaluation) under CPU bf16 autocast
    (:func:`stoicheia.model.precision.cpu_autocast`; Composer autocasts only on CUDA, so a CPU
    run asks Composer for ``fp32`` and sets this). Weights, optimizer state, logits and loss
    stay float32.
    """

    def __init__(
        self, cfg: EncoderConfig | None = None, aux_weight: float = 0.1, cpu_bf16: bool = False
    ) -> None:
        super().__init__()
        if not aux_weight >= 0:
            raise ValueError(f"aux_weight={aux_weight!r}: must be a number >= 0 (train.aux_weight)")
        self.encoder = CharBertEncoder(cfg)
        self.aux_weight = float(aux_weight)
        self.cpu_bf16 = bool(cpu_bf16)
        self.last_loss_terms: dict[str, Tensor] = {}
        self.train_metrics: dict[str, Metric] = {"bits_per_char": BitsPerChar()}
        self.eval_metrics: dict[str, Metric] = eval_metrics()

    @property
    def cfg(self) -> EncoderConfig:
        """The encoder's config."""
        return self.encoder.cfg

    def forward(self, batch: Mapping[str, Tensor]) -> dict[str, Tensor]:
        """Logits dict of :meth:`CharBertEncoder.forward` for a batch dict (float32; under CPU
        bf16 autocast when ``cpu_bf16``)."""
        with cpu_autocast(self.cpu_bf16):
            return self.encoder(batch)

    def loss(
        self, outputs: Mapping[str, Tensor], batch: Mapping[str, Tensor], *args: Any, **kwargs: Any
    ) -> Tensor:
        """The total loss (module docstring), a 0-dim float32 tensor; stashes
        ``last_loss_terms``."""
        terms = loss_terms(outputs, batch, self.aux_weight)
        self.last_loss_terms = {k: v.detach() for k, v in terms.items()}
        return terms["total"]

    def eval_forward(
        self, batch: Mapping[str, Tensor], outputs: Any | None = None
    ) -> dict[str, Tensor]:
        """Reuse ``outputs`` if Composer already has them, else run :meth:`forward`."""
        return outputs if outputs is not None else self.forward(batch)

    def get_metrics(self, is_train: bool = False) -> dict[str, Metric]:
        """Train: ``bits_per_char``; eval: :data:`stoicheia.model.metrics.EVAL_METRICS`."""
        return self.train_metrics if is_train else self.eval_metrics

    def update_metric(
        self, batch: Mapping[str, Tensor], outputs: Mapping[str, Tensor], metric: Metric
    ) -> None:
        """Feed ``metric`` its head's logits and its target (the ``head`` / ``target_key`` it
        names)."""
        update_metric(metric, outputs, batch)
