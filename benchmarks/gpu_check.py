"""GPU path check: FlexAttention equals SDPA, torch.compile, bf16 autocast, letters per second.

    python benchmarks/gpu_check.py [--d-model 1024] [--layers 8] [--seq-len 8192] [--rows 4]

Needs a CUDA device (exits with status 2 otherwise). Prints figures and one verdict line per
check; exit status 1 if a check fails. Batches are synthetic packed rows (random letters,
documents of random length, padding at the end) so the script needs no shards.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

# Use the code of the checkout this script is in, even where the shared virtual environment's
# editable install points at another checkout.
_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse
import sys
import time

import torch


def synthetic_batch(
    rows: int, seq_len: int, device: torch.device, seed: int = 0
) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    seg = torch.zeros(rows, seq_len, dtype=torch.int32)
    pos = torch.zeros(rows, seq_len, dtype=torch.int32)
    for r in range(rows):
        start, doc = 0, 1
        end = seq_len - int(torch.randint(0, seq_len // 16, (1,), generator=g))
        while start < end:
            n = min(int(torch.randint(64, 3000, (1,), generator=g)), end - start)
            seg[r, start : start + n] = doc
            pos[r, start : start + n] = torch.arange(n, dtype=torch.int32)
            start, doc = start + n, doc + 1
    chars = torch.randint(0, 25, (rows, seq_len), generator=g)
    chars[seg == 0] = 26
    tgt = torch.where(
        torch.rand(rows, seq_len, generator=g) < 0.3,
        torch.randint(0, 24, (rows, seq_len), generator=g),
        -100,
    )
    tgt[seg == 0] = -100
    batch = {
        "chars": chars,
        "boundary": torch.full((rows, seq_len), 3),
        "dia": torch.full((rows, seq_len), 48),
        "punct": torch.full((rows, seq_len), 6),
        "seg_id": seg,
        "pos": pos,
        "tgt_chars": tgt,
        "tgt_boundary": torch.full((rows, seq_len), -100),
        "tgt_dia": torch.full((rows, seq_len), -100),
        "tgt_cap": torch.full((rows, seq_len), -100),
        "tgt_punct": torch.full((rows, seq_len), -100),
        "weight": (tgt >= 0).float() / 0.3,
    }
    return {k: v.to(device) for k, v in batch.items()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--d-model", type=int, default=1024)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--seq-len", type=int, default=8192)
    p.add_argument("--rows", type=int, default=4)
    p.add_argument("--steps", type=int, default=10)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: this script checks the GPU path only")
        return 2
    from stoicheia.model.composer_model import StoicheiaModel
    from stoicheia.model.config import EncoderConfig

    torch.backends.cuda.matmul.allow_tf32 = True
    dev = torch.device("cuda")
    ok = True
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}")

    # 1. flex == sdpa (fp32, small T so the dense mask fits), forward and gradients
    torch.manual_seed(0)
    small = dict(d_model=256, n_layers=4, n_heads=4, char_window=256)
    sdpa = StoicheiaModel(EncoderConfig(**small, attn_impl="sdpa")).to(dev)
    flex = StoicheiaModel(EncoderConfig(**small, attn_impl="flex")).to(dev)
    flex.load_state_dict(sdpa.state_dict())
    b = synthetic_batch(2, 2048, dev)
    out_s, out_f = sdpa(b), flex(b)
    real = b["seg_id"] != 0
    diff = max(float((out_s[k] - out_f[k])[real].abs().max()) for k in out_s)
    sdpa.loss(out_s, b).backward()
    flex.loss(out_f, b).backward()
    gdiff = max(
        float((p1.grad - p2.grad).abs().max())
        for p1, p2 in zip(sdpa.parameters(), flex.parameters(), strict=False)
    )
    good = diff < 2e-3 and gdiff < 2e-3
    ok &= good
    print(
        f"[{'ok' if good else 'FAIL'}] flex vs sdpa fp32: max |logit diff| {diff:.2e}, max |grad diff| {gdiff:.2e}"
    )

    # 2. full-width model, bf16 autocast, compiled, flex: loss finite, letters/s, memory
    cfg = EncoderConfig(
        d_model=args.d_model,
        n_layers=args.layers,
        n_heads=args.heads,
        char_window=256,
        attn_impl="flex",
    )
    model = StoicheiaModel(cfg).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    for compiled in (False, True):
        m = torch.compile(model) if compiled else model
        batch = synthetic_batch(args.rows, args.seq_len, dev, seed=1)
        letters = int((batch["seg_id"] != 0).sum())
        times, losses = [], []
        torch.cuda.reset_peak_memory_stats()
        for step in range(args.steps + 3):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model.loss(m(batch), batch)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            if step >= 3:
                times.append(time.perf_counter() - t0)
                losses.append(float(loss))
        med = sorted(times)[len(times) // 2]
        finite = all(torch.isfinite(torch.tensor(losses)))
        ok &= finite
        print(
            f"[{'ok' if finite else 'FAIL'}] bf16 {'compiled' if compiled else 'eager'} d={args.d_model} L={args.layers} "
            f"{args.rows}x{args.seq_len}: step {med * 1e3:.1f} ms, {letters / med:,.0f} letters/s, "
            f"peak {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB, loss {losses[-1]:.3f}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
