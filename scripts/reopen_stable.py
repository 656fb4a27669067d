"""Reopen the stable phase of a WSD run: a copy of its ``pre_anneal.pt`` without the anneal
decision, from which a longer run goes on at the peak learning rate.

The point of a warmup-stable-decay schedule (Hägele et al. 2024, "Scaling Laws and
Compute-Optimal Training Beyond Fixed Training Durations") is that the stable phase can be
extended after the fact: a run planned for N batches and annealed at its cap can be carried
on to 2N from its last peak-LR state and annealed there, without training the first N again.
``pre_anneal.pt`` holds that state (weights, AdamW moments, data position) but also the
decision to anneal at its step; loaded as it is, the new run would anneal at once
(docs/plugins.md, "Another anneal from pre_anneal.pt"). This script writes a copy with the
decision cleared, so that the new run's own ``train.nominal_steps``/``train.max_steps`` and
the stall rule decide the anneal again::

    .venv/bin/python scripts/reopen_stable.py checkpoints/stoicheia-base-1h/pre_anneal.pt \\
        checkpoints/reopened-7000.pt
    .venv/bin/composer recipes/train.py yamls/base.yaml run_name=stoicheia-base-2h-letters \\
        train.load_path=checkpoints/reopened-7000.pt

The new run must have the first run's model shape, data and optimizer; its warmup length
follows its own ``nominal_steps`` but is long past at the branch point, so the learning rate
is the peak from the first batch on.

Raises ``SystemExit`` with a message naming the file when the checkpoint is unreadable, is
not a Stoicheia training checkpoint, or was saved after its anneal began (its learning rate is
no longer the peak: reopen the run's ``pre_anneal.pt`` instead).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch


def reopen(checkpoint: dict[str, Any], source: str = "checkpoint") -> int:
    """Clear the anneal decision of a Composer checkpoint dict in place; return its batch.

    ``checkpoint`` is what ``torch.load`` gives for a ``.pt`` of this recipe
    (``{"state": {"callbacks": {...}, "timestamp": ...}, ...}``). The ``AnnealControl``
    decision and the ``PreAnnealCheckpoint`` marker are cleared; weights, optimizer, data
    position and every other callback's state are kept.

    Raises ``ValueError`` (naming ``source``) when the dict holds no ``AnnealControl`` state,
    the run is complete, or the checkpoint is past its anneal start.
    """
    callbacks = checkpoint.get("state", {}).get("callbacks", {})
    control = callbacks.get("AnnealControl")
    if control is None:
        raise ValueError(f"{source}: no AnnealControl state; is it a checkpoint of this recipe?")
    step = int(checkpoint["state"]["timestamp"]["Timestamp"]["batch"])
    start = control.get("anneal_start")
    if control.get("complete"):
        raise ValueError(f"{source}: the run was complete at batch {step}; reopen pre_anneal.pt")
    if start is not None and step > int(start):
        raise ValueError(
            f"{source}: saved at batch {step}, after the anneal began at batch {start}; its "
            "learning rate is no longer the peak: reopen the run's pre_anneal.pt instead"
        )
    callbacks["AnnealControl"] = {
        **control,
        "anneal_start": None,
        "reason": None,
        "end_reason": None,
        "end_step": None,
    }
    if "PreAnnealCheckpoint" in callbacks:
        callbacks["PreAnnealCheckpoint"] = {"saved_at": None}
    return step


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path, help="the run's pre_anneal.pt")
    parser.add_argument("out", type=Path, help="where to write the reopened copy (.pt)")
    args = parser.parse_args(argv)
    try:
        state = torch.load(args.checkpoint, map_location="cpu", weights_only=False)
    except (OSError, RuntimeError, EOFError) as exc:
        raise SystemExit(f"{args.checkpoint}: cannot read it as a checkpoint ({exc})") from exc
    try:
        step = reopen(state, str(args.checkpoint))
    except ValueError as exc:
        raise SystemExit(str(exc)) from exc
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, args.out)
    print(f"wrote {args.out}: the state at batch {step}, anneal decision cleared")


if __name__ == "__main__":
    main()
