"""Benchmark: why the demo model sits at the letter-unigram level (about 4.1 bits/char) for its
first 100-220 steps, measured step by step.

    nice -n 5 .venv/bin/python benchmarks/plateau.py [--config yamls/demo.yaml]
        [--shards /work/main/data/shards] [--steps 250] [--seed 17] [--probe-every 10]
        [--out benchmarks/results/plateau_seed17.jsonl] [--threads 1]
        [--qk-gain 1.0] [--t-early A,B:STEPS] [--set section.key=value ...]

Trains the model of ``--config`` (its ``model``, ``noise`` and ``data`` sections; the project's
own :class:`~stoicheia.model.composer_model.StoicheiaModel`, AdamW parameter groups and WSD
warm-up; the real shards, read-only) in-process on the config's packed rows (``data.seq_len``
slots, ``train.global_batch_rows`` rows per step; 8 of 512 when docs/benchmarks.md measured), and
writes one JSON line per step:

* ``bits``: the char loss of the training objective (``last_loss_terms["char"]``) in bits;
  ``masked_bits``: the plain mean cross-entropy (bits) over the masked letter slots;
* ``mask_rate``: the share of letter slots (``seg_id != 0``) whose input is MASK;
  ``kinds``: slots per noise pattern in the batch (span, word, elastic, iid, half_word,
  substitute);
* ``near_bits`` / ``far_bits`` (and their slot counts): the masked slots' cross-entropy split by
  whether at least one of the two neighbouring slots of the same document shows its letter
  (``near``) or neither does (``far``);
* ``grad``: the gradient's L2 norm per block (``embed``, ``L{i}.attn`` with its norm,
  ``L{i}.mlp`` with its norm, ``head`` with the final norm), before clipping;

and every ``--probe-every`` steps (``probe`` lines), on one fixed batch (the first training
batch of the run's stream): per layer and head the mean entropy (bits) of the attention rows of
non-pad query slots, the mean attention mass on the query's own slot (``self``) and on the
slots at distance 1 or 2 (``near``), with the entropy of a uniform row over the same keys
(``uniform``) for reference.

Interventions (default: none): ``--qk-gain G`` starts the per-head QK RMSNorm gains at ``G``
instead of the config's ``model.qk_norm_init`` (attention logits scale by ``G**2``); ``--t-early
A,B:N`` draws the masking rate from Beta(A, B) for the first N steps (a rate curriculum);
``--set`` overrides any config key (``load_config``'s ``section.key=value``). Prints a compact
table; asserts nothing.

    .venv/bin/python benchmarks/plateau.py --compare A.jsonl B.jsonl ... [--plot PNG]

reads runs already written instead, prints for each the plateau exit step (:func:`exit_step`),
the mean masked, near and far bits/char of its last 10 steps and the letters/s, and plots their
masked bits/char (10-step means of the ``near`` slots) and the largest attention mass at
distance 1-2 of any layer and head to ``--plot``.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import Tensor  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LN2 = math.log(2.0)


# --- measurement functions (tested in tests/test_plateau.py) -------------------------------


def mask_rate(chars: Tensor, seg_id: Tensor) -> float:
    """Share of letter slots hidden by MASK. ``chars``, ``seg_id``: ``(B, T)`` int; letter slots
    are ``seg_id != 0``. Returns a float in [0, 1] (0.0 for a batch of padding only)."""
    from stoicheia.text.alphabet import MASK

    letters = seg_id != 0
    n = int(letters.sum())
    return float(((chars == MASK) & letters).sum()) / n if n else 0.0


def neighbour_visible(chars: Tensor, seg_id: Tensor) -> Tensor:
    """``(B, T)`` bool: True where slot ``i - 1`` or ``i + 1`` lies in the same document
    (same non-zero ``seg_id``) and shows a letter (input not MASK)."""
    from stoicheia.text.alphabet import MASK

    shown = (chars != MASK) & (seg_id != 0)
    left = torch.zeros_like(shown)
    right = torch.zeros_like(shown)
    left[:, 1:] = shown[:, :-1] & (seg_id[:, :-1] == seg_id[:, 1:])
    right[:, :-1] = shown[:, 1:] & (seg_id[:, 1:] == seg_id[:, :-1])
    return left | right


def split_loss(logits: Tensor, batch: dict[str, Tensor]) -> dict[str, float]:
    """Cross-entropy in bits of the masked, supervised letter slots, all of them and split by
    :func:`neighbour_visible`. ``logits``: ``(B, T, C)`` float; ``batch``: ``chars``, ``seg_id``,
    ``tgt_chars`` (``(B, T)``, -100 = not supervised). Returns ``masked_bits``, ``near_bits``,
    ``far_bits`` (NaN where no slot) and the slot counts ``n_masked``, ``n_near``, ``n_far``."""
    from stoicheia.text.alphabet import MASK

    tgt = batch["tgt_chars"]
    sel = (batch["chars"] == MASK) & (tgt != -100) & (batch["seg_id"] != 0)
    ce = F.cross_entropy(
        logits.detach().float().flatten(0, 1), tgt.clamp(min=0).flatten(), reduction="none"
    ).view(tgt.shape)
    near = neighbour_visible(batch["chars"], batch["seg_id"])
    out: dict[str, float] = {}
    for name, m in (("masked", sel), ("near", sel & near), ("far", sel & ~near)):
        n = int(m.sum())
        out[f"n_{name}"] = n
        out[f"{name}_bits"] = float(ce[m].mean()) / LN2 if n else float("nan")
    return out


def block_of(name: str) -> str:
    """The block a parameter of :class:`~stoicheia.model.encoder.CharBertEncoder` belongs to,
    by its name: ``embed``, ``L{i}.attn`` (attention and its pre-norm), ``L{i}.mlp`` (MLP and its
    pre-norm) or ``head`` (final norm and heads). A ``StoicheiaModel``'s ``encoder.`` prefix is
    ignored. Raises ``ValueError`` for a name of none of them."""
    parts = name.removeprefix("encoder.").split(".")
    if parts[0] == "embed":
        return "embed"
    if parts[0] in ("heads", "final_norm"):
        return "head"
    if parts[0] == "blocks" and len(parts) > 2:
        kind = "attn" if parts[2] in ("attn", "attn_norm") else "mlp"
        return f"L{parts[1]}.{kind}"
    raise ValueError(f"parameter {name!r} belongs to no block of the encoder")


def grad_norms(model: torch.nn.Module) -> dict[str, float]:
    """L2 norm of the gradient per block (:func:`block_of`), in model order; parameters without
    a gradient count as 0."""
    sq: dict[str, float] = {}
    for name, p in model.named_parameters():
        key = block_of(name)
        g = 0.0 if p.grad is None else float(p.grad.detach().float().pow(2).sum())
        sq[key] = sq.get(key, 0.0) + g
    return {k: math.sqrt(v) for k, v in sq.items()}


def attention_stats(probs: Tensor, seg_id: Tensor) -> dict[str, list[float]]:
    """Per head: mean entropy (bits) of the attention rows of non-pad query slots, mean mass on
    the query's own slot (``self``) and on keys at distance 1 or 2 (``near``), and the mean
    entropy of a uniform row over the same allowed keys (``uniform``: log2 of the count of keys
    with non-zero probability).

    ``probs``: ``(B, H, T, T)`` float, rows summing to 1; ``seg_id``: ``(B, T)`` int (0 = pad).
    Returns a dict of four lists of ``H`` floats."""
    B, H, T, _ = probs.shape
    q = (seg_id != 0)[:, None, :].expand(B, H, T)
    p = probs.float()
    ent = -(p * torch.log2(p.clamp(min=1e-30))).sum(-1)
    idx = torch.arange(T, device=p.device)
    dist = (idx[:, None] - idx[None, :]).abs()
    self_mass = p.diagonal(dim1=-2, dim2=-1)
    near_mass = (p * ((dist >= 1) & (dist <= 2))).sum(-1)
    uniform = torch.log2((p > 0).sum(-1).clamp(min=1).float())
    n = q.sum(dim=(0, 2)).clamp(min=1)

    def mean(x: Tensor) -> list[float]:
        return ((x * q).sum(dim=(0, 2)) / n).tolist()

    return {
        "entropy": mean(ent),
        "self": mean(self_mass),
        "near": mean(near_mass),
        "uniform": mean(uniform),
    }


def attention_probs(attn: torch.nn.Module, x: Tensor, cos: Tensor, sin: Tensor, mask: Tensor):
    """The softmax attention weights of an :class:`~stoicheia.model.encoder.Attention` on its
    (normed) input ``x`` ``(B, T, d)``, with its own projections, QK norms and RoPE and the dense
    bool ``mask`` ``(B, 1, T, T)`` (True = may attend). Returns ``(B, H, T, T)`` float32; the
    same weights ``scaled_dot_product_attention`` applies (scale ``1/sqrt(head_dim)``)."""
    from stoicheia.model.encoder import apply_rope

    B, T, _ = x.shape
    q, k, _v = attn.qkv(x).view(B, T, 3, attn.n_heads, attn.head_dim).permute(2, 0, 3, 1, 4)
    q = apply_rope(attn.q_norm(q.float()), cos, sin)
    k = apply_rope(attn.k_norm(k.float()), cos, sin)
    scores = q @ k.transpose(-1, -2) / math.sqrt(attn.head_dim)
    return scores.masked_fill(~mask, float("-inf")).softmax(-1)


@torch.no_grad()
def probe_attention(model, batch: dict[str, Tensor]) -> dict[str, dict[str, list[float]]]:
    """:func:`attention_stats` of every layer of ``model`` (a ``StoicheiaModel`` with
    ``attn_impl="sdpa"``) on ``batch``, keyed ``L{i}``. Captures each attention's input with a
    forward pre-hook during one forward pass (eval mode)."""
    captured: dict[int, tuple] = {}
    hooks = [
        b.attn.register_forward_pre_hook(lambda m, args, i=i: captured.__setitem__(i, args))
        for i, b in enumerate(model.encoder.blocks)
    ]
    was = model.training
    model.eval()
    try:
        model(batch)
    finally:
        for h in hooks:
            h.remove()
        model.train(was)
    out = {}
    for i, b in enumerate(model.encoder.blocks):
        x, cos, sin, mask, _impl = captured[i]
        out[f"L{i}"] = attention_stats(attention_probs(b.attn, x, cos, sin, mask), batch["seg_id"])
    return out


# --- the run ---------------------------------------------------------------------------------


def batches(cfg, shards: Path, seed: int, noise) -> Iterator[tuple[dict[str, Tensor], Counter]]:
    """Collated training batches of ``cfg.data`` (its tier weights, ``seq_len``,
    ``records_per_batch``; ``cfg.train.global_batch_rows`` rows), noised with ``noise`` and noise
    seed ``seed``, each with a Counter of slots per noise pattern."""
    from stoicheia.data.packing import collate_rows, pack_rows
    from stoicheia.data.stream import NoisedRecordStream, make_streams

    d = cfg.data
    ds = NoisedRecordStream(
        streams=make_streams(shards, d.tier_weights, "train"),
        seq_len=d.seq_len,
        noise=noise,
        noise_seed=seed,
        batch_size=d.records_per_batch,
    )
    pieces = (p for rec in ds for p in rec.pieces)
    rows: list = []
    for row, _cursor in pack_rows(pieces, d.seq_len):
        rows.append(row)
        if len(rows) == cfg.train.global_batch_rows:
            kinds: Counter = Counter()
            for r in rows:
                for frag in r:
                    kinds[frag.pattern] += len(frag)
            yield collate_rows(rows, d.seq_len), kinds
            rows = []


def run(args) -> list[dict]:
    from stoicheia.config import load_config
    from stoicheia.model.composer_model import StoicheiaModel
    from stoicheia.model.optim import param_groups
    from stoicheia.train.schedule import WSDShape

    cfg = load_config(args.config, list(args.set))
    cfg.model.attn_impl = "sdpa"
    if args.qk_gain is not None:
        cfg.model.qk_norm_init = args.qk_gain
    torch.manual_seed(args.seed)
    model = StoicheiaModel(cfg.model, aux_weight=cfg.train.aux_weight)
    t = cfg.train
    opt = torch.optim.AdamW(
        param_groups(model, t.weight_decay), lr=t.lr, betas=tuple(t.betas), eps=t.eps
    )
    shape = WSDShape(t.nominal_steps, t.warmup_frac, t.decay_frac, t.final_lr_frac)
    main = batches(cfg, args.shards, args.seed, cfg.noise)
    early = None
    early_steps = 0
    if args.t_early:
        ab, n = args.t_early.split(":")
        a, b = (float(v) for v in ab.split(","))
        early = batches(cfg, args.shards, args.seed, dataclasses.replace(cfg.noise, t_beta=(a, b)))
        early_steps = int(n)
    fixed, _ = next(batches(cfg, args.shards, 10_000 + args.seed, cfg.noise))
    lines: list[dict] = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    letters = 0
    with args.out.open("w", encoding="utf-8") as f:
        header = {
            "kind": "run",
            "config": str(args.config),
            "seed": args.seed,
            "steps": args.steps,
            "qk_gain": cfg.model.qk_norm_init,
            "t_early": args.t_early,
            "set": list(args.set),
            "threads": torch.get_num_threads(),
        }
        f.write(json.dumps(header) + "\n")
        for step in range(args.steps):
            src = early if early is not None and step < early_steps else main
            batch, kinds = next(src)
            for g in opt.param_groups:
                g["lr"] = t.lr * shape.multiplier(step)
            if step % args.probe_every == 0:
                probe = {"kind": "probe", "step": step, **probe_attention(model, fixed)}
                f.write(json.dumps(probe) + "\n")
                lines.append(probe)
            out = model(batch)
            loss = model.loss(out, batch)
            loss.backward()
            norms = grad_norms(model)
            torch.nn.utils.clip_grad_norm_(model.parameters(), t.clip_norm)
            opt.step()
            opt.zero_grad(set_to_none=True)
            letters += int((batch["seg_id"] != 0).sum())
            rec = {
                "kind": "step",
                "step": step + 1,
                "bits": float(model.last_loss_terms["char"]) / LN2,
                **split_loss(out["char"], batch),
                "mask_rate": mask_rate(batch["chars"], batch["seg_id"]),
                "kinds": dict(kinds),
                "grad": norms,
                "lr": opt.param_groups[0]["lr"],
                "letters": int((batch["seg_id"] != 0).sum()),
                "seconds": time.perf_counter() - t0,
            }
            f.write(json.dumps(rec) + "\n")
            f.flush()
            lines.append(rec)
    secs = time.perf_counter() - t0
    print(f"{args.steps} steps in {secs:.0f} s, {letters / secs:,.0f} letters/s (with probes)")
    return lines


def exit_step(
    lines: list[dict], below: float, window: int = 10, key: str = "near_bits"
) -> int | None:
    """First step at which the mean ``key`` of the last ``window`` steps is below ``below`` bits
    (None if never; steps without such slots are left out of the mean): the step the run leaves
    the unigram plateau. The default, the masked slots with a visible neighbour, is what falls
    once the network reads its context; the slots without one stay near the unigram level
    (docs/benchmarks.md, "The unigram plateau")."""
    steps = [r for r in lines if r["kind"] == "step"]
    for i in range(window, len(steps) + 1):
        vals = [r[key] for r in steps[i - window : i] if not math.isnan(r[key])]
        if vals and sum(vals) / len(vals) < below:
            return steps[i - 1]["step"]
    return None


def table(lines: list[dict], below: float) -> None:
    """Print a compact table: per 10 steps the means of the step lines, and each probe."""
    steps = [r for r in lines if r["kind"] == "step"]
    probes = {r["step"]: r for r in lines if r["kind"] == "probe"}
    print(
        f"{'step':>5} {'bits':>5} {'masked':>6} {'near':>5} {'far':>5} {'rate':>5} "
        f"{'g.emb':>6} {'g.attn':>23} {'g.mlp':>23} {'g.head':>6}  "
        f"{'attn entropy/uniform per layer (mean of heads); self, near mass':s}"
    )
    for i in range(0, len(steps), 10):
        chunk = steps[i : i + 10]

        def m(key: str, chunk=chunk) -> float:
            vals = [r[key] for r in chunk if not math.isnan(r[key])]
            return sum(vals) / len(vals) if vals else float("nan")

        def g(block: str, chunk=chunk) -> float:
            return sum(r["grad"][block] for r in chunk) / len(chunk)

        layers = sorted({k.split(".")[0] for k in chunk[0]["grad"] if k.startswith("L")})
        ga = " ".join(f"{g(f'{L}.attn'):5.3f}" for L in layers)
        gm = " ".join(f"{g(f'{L}.mlp'):5.3f}" for L in layers)
        p = probes.get(i)
        att = ""
        if p is not None:
            att = "  ".join(
                f"{sum(p[L]['entropy']) / len(p[L]['entropy']):.1f}/"
                f"{sum(p[L]['uniform']) / len(p[L]['uniform']):.1f} "
                f"{sum(p[L]['self']) / len(p[L]['self']):.2f},"
                f"{sum(p[L]['near']) / len(p[L]['near']):.2f}"
                for L in layers
            )
        print(
            f"{chunk[-1]['step']:5d} {m('bits'):5.2f} {m('masked_bits'):6.2f} "
            f"{m('near_bits'):5.2f} {m('far_bits'):5.2f} {m('mask_rate'):5.2f} "
            f"{g('embed'):6.3f} {ga:>23} {gm:>23} "
            f"{g('head'):6.3f}  {att}"
        )
    print(
        f"plateau exit (10-step mean of masked bits/char < {below}): step {exit_step(lines, below)}"
    )


def read_run(path: Path) -> list[dict]:
    """The lines of a JSONL written by a run of this script."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def label_of(lines: list[dict]) -> str:
    """A short name of a run from its header line: its intervention and seed."""
    h = lines[0]
    parts = [f"qk gain {h['qk_gain']:g}"] if h["qk_gain"] != 1.0 else []
    parts += [f"rates Beta({h['t_early']}) first" for _ in [0] if h["t_early"]]
    parts += list(h["set"])
    return f"{', '.join(parts) or 'baseline'} (seed {h['seed']})"


def window_mean(lines: list[dict], key: str, end: int, window: int = 20) -> float:
    """Mean ``key`` over steps ``end - window + 1 .. end`` (NaN values and missing steps left
    out; NaN if none)."""
    vals = [
        r[key]
        for r in lines
        if r["kind"] == "step" and end - window < r["step"] <= end and not math.isnan(r[key])
    ]
    return sum(vals) / len(vals) if vals else float("nan")


def compare(paths: list[Path], below: float, plot: Path | None, at: list[int]) -> None:
    """Print each run's plateau exit, its near-slot bits/char (means of 20 steps) at the steps
    ``at``, its masked, near and far bits/char of the last 10 steps and letters/s; plot them."""
    runs = {p: read_run(p) for p in paths}
    cols = " ".join(f"{'near@' + str(s):>8}" for s in at)
    print(f"{'run':40s} {'exit':>5} {cols} {'masked':>6} {'near':>6} {'far':>6} {'letters/s':>9}")
    for lines in runs.values():
        steps = [r for r in lines if r["kind"] == "step"]
        end = steps[-1]["step"] if steps else 0
        speed = "-"
        if steps and "letters" in steps[0]:  # wall time includes the probes and the load
            speed = f"{sum(r['letters'] for r in steps) / steps[-1]['seconds']:,.0f}"
        vals = " ".join(f"{window_mean(lines, 'near_bits', s):8.3f}" for s in at)
        last = " ".join(
            f"{window_mean(lines, k, end, 10):6.3f}"
            for k in ("masked_bits", "near_bits", "far_bits")
        )
        print(f"{label_of(lines):40s} {exit_step(lines, below)!s:>5} {vals} {last} {speed:>9}")
    if plot is None:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for lines in runs.values():
        steps = [r for r in lines if r["kind"] == "step"]
        smooth = [window_mean(lines, "near_bits", r["step"], 10) for r in steps]
        (line,) = ax1.plot([r["step"] for r in steps], smooth, label=label_of(lines))
        probes = [r for r in lines if r["kind"] == "probe"]
        near = [max(max(v["near"]) for k, v in r.items() if k.startswith("L")) for r in probes]
        ax2.plot([r["step"] for r in probes], near, color=line.get_color(), marker="o", ms=2)
    ax1.axhline(below, color="grey", lw=0.8, ls=":")
    ax1.set(
        xlabel="step",
        ylabel="bits/char (mean of 10 steps)",
        title="loss of masked letters with a visible neighbour",
    )
    ax2.set(xlabel="step", ylabel="attention mass at distance 1-2", title="the most local head")
    ax1.legend(fontsize=7)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    plot.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(plot, dpi=90)
    plt.close(fig)
    from PIL import Image

    Image.open(plot).convert("RGB").quantize(colors=64).save(plot, optimize=True)
    print(f"wrote {plot}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, default=REPO / "yamls" / "demo.yaml")
    p.add_argument("--shards", type=Path, default=REPO / "data" / "shards")
    p.add_argument("--steps", type=int, default=250)
    p.add_argument("--seed", type=int, default=17)
    p.add_argument("--probe-every", type=int, default=10)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--exit-bits", type=float, default=3.9, help="plateau exit threshold")
    p.add_argument(
        "--qk-gain", type=float, default=None, help="model.qk_norm_init (initial QK-norm gains)"
    )
    p.add_argument("--t-early", default=None, help="A,B:STEPS: Beta(A,B) rates for STEPS steps")
    p.add_argument("--set", action="append", default=[], help="config override key=value")
    p.add_argument("--compare", type=Path, nargs="+", default=None, help="runs to compare")
    p.add_argument("--plot", type=Path, default=None, help="PNG of the compared runs")
    p.add_argument("--at", default="100,150,200,250", help="steps of the compared near bits")
    args = p.parse_args()
    if args.compare:
        compare(args.compare, args.exit_bits, args.plot, [int(v) for v in args.at.split(",")])
        return
    if not (args.shards / "stats.json").exists():
        p.error(f"--shards {args.shards}: no stats.json; run `stoicheia convert` (docs) first")
    if args.out is None:
        args.out = REPO / "benchmarks" / "results" / f"plateau_seed{args.seed}.jsonl"
    if args.threads:
        torch.set_num_threads(args.threads)
    lines = run(args)
    table(lines, args.exit_bits)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
