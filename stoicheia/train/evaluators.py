"""The run's evaluators: one Composer ``Evaluator`` per evaluation set, over fixed batches
(:func:`stoicheia.data.eval_batches.build_eval_batches`, every batch of one shape) shared out
among the ranks, run every ``train.save_interval`` batches and at the last batch of the run.
"""

from __future__ import annotations

from typing import Any

import torch
from composer import DataSpec, Evaluator
from composer.utils import dist

from stoicheia.config import DataConfig
from stoicheia.data.eval_batches import build_eval_batches, pad_eval_batches
from stoicheia.model.metrics import EVAL_METRICS
from stoicheia.train.callbacks.anneal_control import AnnealControl


class _ListDataset(torch.utils.data.Dataset):
    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Any:
        return self.items[i]


def _every(interval: int, control: AnnealControl):
    """Evaluation interval: every ``interval`` batches and at the last batch of the run (when
    the run completes), never again at ``FIT_END`` (which would evaluate the last batch twice)."""
    from composer.core import Event

    def check(state, event) -> bool:
        if event != Event.BATCH_END:
            return False
        return int(state.timestamp.batch) % interval == 0 or control.complete

    return check


def build_evaluators(
    eval_sets: dict[str, list[Any]], d: DataConfig, interval: int, control: AnnealControl
) -> tuple[dict[str, list[dict[str, torch.Tensor]]], list[Evaluator]]:
    """``(batches by set, evaluators)`` for ``eval_sets`` (label -> records, as
    :func:`~stoicheia.data.eval_sets.read_eval_sets` gives them): the batches of each set are
    built once (``data.eval_rows`` rows of ``data.seq_len`` slots, the last padded; int64
    tensors) and padded to a multiple of the number of processes; each evaluator runs every
    ``interval`` batches and at the run's last batch."""
    eval_batches: dict[str, list[dict[str, torch.Tensor]]] = {}
    evaluators = []
    for label, records in eval_sets.items():
        # every batch (the last padded) has one shape: a compiled model runs them all on one graph
        batches = build_eval_batches(
            records, d.seq_len, d.eval_rows, d.eval_t, d.eval_seed, pad_last=True
        )
        eval_batches[label] = batches
        dataset = _ListDataset(pad_eval_batches(batches, dist.get_world_size()))
        evaluators.append(
            Evaluator(
                label=label,
                dataloader=DataSpec(
                    torch.utils.data.DataLoader(
                        dataset, batch_size=None, sampler=dist.get_sampler(dataset, shuffle=False)
                    )
                ),
                metric_names=list(EVAL_METRICS),
                device_eval_microbatch_size=d.eval_rows,
                eval_interval=_every(interval, control),
            )
        )
    return eval_batches, evaluators
