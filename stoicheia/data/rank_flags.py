"""The collectives of the training loader: a barrier, and the one all-reduce per batch by which
the ranks agree that all have used up their share of a stream epoch (and, in the same tensor,
on the training side's flag: the preemption plugin's signal number).

Ranks that ran out of an epoch at different times would otherwise deadlock DDP; one
collective per batch carries both flags, so a batch costs one all-reduce, not two.
"""

from __future__ import annotations

from typing import Any

import torch


def barrier() -> None:
    """Collective: wait for every rank (nothing with one process or without
    ``torch.distributed``)."""
    import torch.distributed as tdist

    if tdist.is_available() and tdist.is_initialized() and tdist.get_world_size() > 1:
        tdist.barrier()


def agree(done: bool, signal: int, group: Any = None) -> tuple[bool, int, bool]:
    """Collective (every rank calls it at the same batch): ``(all done, agreed signal,
    collective ran)``. ``all done`` is True when ``done`` is True on every rank; ``agreed
    signal`` is the MAX of ``signal`` over the ranks (0: none). With one process: ``(done,
    signal, False)``, no collective.

    The flags are one int32 tensor of shape ``(2,)``, ``[not done, signal]``, all-reduced with
    MAX. They are CPU tensors through ``group`` (a gloo group the builder makes under NCCL), so
    reading them never waits for the GPU's queued work (no host-device sync); without a group
    under NCCL they go through the default group on the current CUDA device."""
    import torch.distributed as tdist

    if not (tdist.is_available() and tdist.is_initialized()) or tdist.get_world_size() == 1:
        return done, signal, False
    on_gpu = group is None and tdist.get_backend() == "nccl"
    device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else None
    flag = torch.tensor([0 if done else 1, signal], dtype=torch.int32, device=device)
    tdist.all_reduce(flag, op=tdist.ReduceOp.MAX, group=group)
    not_done, agreed = (int(x) for x in flag.tolist())
    return not_done == 0, agreed, True
