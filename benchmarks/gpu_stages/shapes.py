"""The shapes the check measures: the GPU configuration of ``yamls/stoicheia.yaml`` (copied
here, since the bare GPU machine has no omegaconf to read it; ``tests/test_gpu_check.py``
checks that the copy agrees with the YAML) and the tiny shape of CPU runs."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class RunShape:
    """What one training step of the check runs.

    ``model``: :class:`stoicheia.model.config.EncoderConfig` fields; ``rows`` x ``seq_len``:
    one micro-batch (rows of letter slots); ``eval_rows``: rows of an evaluation batch;
    ``max_doc``: the longest document packed into a row (letters; ``stoicheia convert``'s
    ``max_record_letters``); the optimizer's settings as in the YAML's ``train`` section.
    """

    model: dict[str, Any] = field(default_factory=dict)
    rows: int = 4
    seq_len: int = 8192
    eval_rows: int = 4
    max_doc: int = 2048
    lr: float = 3.0e-4
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.95)
    clip_norm: float = 1.0
    aux_weight: float = 0.1

    def with_layers(self, n_layers: int) -> RunShape:
        """The same shape with ``n_layers`` blocks."""
        return replace(self, model={**self.model, "n_layers": n_layers})


#: ``yamls/stoicheia.yaml``: model, micro-batch, evaluation rows and optimizer.
GPU_SHAPE = RunShape(
    model=dict(
        d_model=1024, n_layers=32, n_heads=16, char_window=256, global_every=4, attn_impl="flex"
    ),
    rows=4,
    seq_len=8192,
    eval_rows=4,
)

#: CPU runs (``--dry-run``, or no CUDA): every stage in seconds, the same code paths.
CPU_SHAPE = RunShape(
    model=dict(d_model=32, n_layers=2, n_heads=2, char_window=16, global_every=2, attn_impl="flex"),
    rows=2,
    seq_len=128,
    eval_rows=2,
    max_doc=64,
)
