"""Synthetic packed rows with the layout of :func:`stoicheia.data.packing` (speed figures only;
the letters are random)."""

from __future__ import annotations

import torch

from stoicheia.text.alphabet import IGNORE_INDEX, MASK, PAD


def random_rows(
    rows: int, T: int, seed: int, max_doc: int | None = None, mask_rate: float = 0.3
) -> dict[str, torch.Tensor]:
    """A batch dict of ``rows`` packed rows of ``T`` slots on the CPU: documents of 30 to
    ``max_doc`` letters (default ``T // 2``) back to back, up to ``T // 8`` padding slots at
    each row's end, ``mask_rate`` of the letters masked with weight ``1 / mask_rate``.

    Keys and dtypes as the loader's: ``chars``, ``tgt_*`` ``(rows, T)`` int64 (targets -100 where
    not supervised), ``seg_id`` and ``pos`` int32, ``weight`` float32.
    """
    g = torch.Generator().manual_seed(seed)
    longest = max(31, min(max_doc or T // 2, T))
    seg = torch.zeros(rows, T, dtype=torch.int32)
    pos = torch.zeros(rows, T, dtype=torch.int32)
    for r in range(rows):
        at, doc, end = 0, 1, T - int(torch.randint(0, max(1, T // 8), (1,), generator=g))
        while at < end:
            n = min(int(torch.randint(30, longest, (1,), generator=g)), end - at)
            seg[r, at : at + n] = doc
            pos[r, at : at + n] = torch.arange(n, dtype=torch.int32)
            at, doc = at + n, doc + 1
    letters = torch.randint(0, 24, (rows, T), generator=g)
    masked = (torch.rand(rows, T, generator=g) < mask_rate) & (seg != 0)
    chars = torch.where(masked, torch.full_like(letters, MASK), letters)
    chars[seg == 0] = PAD
    ign = torch.full_like(letters, IGNORE_INDEX)
    return {
        "chars": chars,
        "seg_id": seg,
        "pos": pos,
        "tgt_chars": torch.where(masked, letters, ign),
        "tgt_boundary": ign,
        "tgt_dia": ign,
        "tgt_cap": ign,
        "tgt_punct": ign,
        "weight": masked.float() / mask_rate,
    }


def to_device(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    """``batch`` on ``device``: pinned and copied asynchronously on CUDA (as a loader with
    ``pin_memory`` hands it over), as it is elsewhere."""
    if device.type != "cuda":
        return {k: v.to(device) for k, v in batch.items()}
    return {k: v.pin_memory().to(device, non_blocking=True) for k, v in batch.items()}
