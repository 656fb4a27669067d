"""Benchmark: what the network's judgement of whole fills costs (issue 32 §3), in its two forms.

    .venv/bin/python benchmarks/judge_cost.py [--checkpoint CKPT] [--repeats 3] [--threads 2]

Prints figures; asserts nothing. For each gap of ``restore_latency.py``'s text of three gaps
(``[....]``, ``[-ca.6-]``, ``[---]``), decoded as ``restore --decoder fused`` decodes it (the
fusion of ``fusion.json`` beside ``--checkpoint``: n-gram, parallels, whole readings), it
times:

* the search's own forward pass (one row of the window, ``data.seq_len`` slots);
* the judge as built, the fill's letters hidden **together**
  (:func:`~stoicheia.inference.restore.whole_readings.judge_scores` over all the gap's
  candidates at once, read from that same pass: no pass added);
* the pseudo-log-likelihood, letters hidden **one at a time**: one row per letter of every
  candidate (the candidate's other letters shown, the gap's unused slots MASK) and, where the
  width is not given, one more row per candidate for where it ends, all in one batch.

Without ``--checkpoint`` the model is the demo's shape with random weights (no n-gram, no
parallels: the candidates are the network's alone, so fewer). Each figure is the median of
``--repeats`` runs after one warm-up, with ``torch.set_num_threads(--threads)``.
"""

from __future__ import annotations

import os as _os
import sys as _sys
from pathlib import Path as _Path

if not _os.environ.get("PYTHONPATH"):
    _sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))
    _sys.path.insert(0, str(_Path(__file__).resolve().parent))

import argparse  # noqa: E402

import torch  # noqa: E402
from restore_latency import TEXT, _model, _timed  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from stoicheia.inference.restore.decoders import gap_candidates, gap_shape
    from stoicheia.inference.restore.decoding import (
        forward,
        gap_logp,
        model_inputs,
        symbols,
        window_around,
    )
    from stoicheia.inference.restore.fusion_file import find_fusion
    from stoicheia.inference.restore.reading import parse_input
    from stoicheia.inference.restore.whole_readings import judge_scores
    from stoicheia.text import alphabet as A

    model = _model(args.checkpoint)
    fusion = find_fusion(model, None, None) if args.checkpoint else None
    trained = int((model.config.get("data") or {}).get("seq_len") or 512)
    items, gaps = parse_input(TEXT)
    print(
        f"model: {model.source}; fusion: {'fusion.json' if fusion else 'none'}; "
        f"{args.threads} threads; median of {args.repeats}"
    )
    total = {"pass": 0.0, "together": 0.0, "pll": 0.0}
    for g, gap in enumerate(gaps):
        lo, hi = window_around(items, gaps, g, trained)

        def one_pass(g=g, lo=lo, hi=hi):
            return gap_logp(model, items, gaps, {}, g, lo, hi, False)

        t_pass = _timed(one_pass, args.repeats)
        logp = one_pass()
        hold: dict = {}
        cands = gap_candidates("fused", logp, items, gaps, {}, g, 20, fusion, cache=hold)
        fills = hold["case"].letters if "case" in hold else [c.letters for c in cands]
        shape = gap_shape(gap)
        t_together = _timed(
            lambda logp=logp, shape=shape, fills=fills: judge_scores(logp, shape, fills),
            args.repeats,
        )
        rows = []
        for f in fills:
            seq, where = model_inputs(items, gaps, {g: symbols(gap, f)}, False)
            at = [s for s, (gg, _) in enumerate(where) if gg == g]
            # the gap's slots past the fill: MASK (restore shows BLANK slots as MASK)
            for j in range(len(f) + (0 if shape.fixed or len(f) >= gap.max_letters else 1)):
                row = {k: v[:, lo:hi].copy() for k, v in seq.items()}
                if j < len(f):
                    row["chars"][0, at[j] - lo] = A.MASK
                rows.append(row)
        t_pll = _timed(lambda rows=rows: forward(model, rows, ("char",)), args.repeats)
        print(
            f"gap {gap.notation:<10} {len(fills):3d} candidates, {len(rows):4d} PLL rows of "
            f"{hi - lo} slots: search's pass {t_pass * 1e3:8.1f} ms, judge together "
            f"{t_together * 1e3:6.2f} ms, PLL {t_pll * 1e3:9.1f} ms "
            f"({t_pll / t_pass:5.0f}x the pass)"
        )
        total["pass"] += t_pass
        total["together"] += t_together
        total["pll"] += t_pll
    print(
        f"3 gaps: search's passes {total['pass']:.3f} s, judge together {total['together']:.4f} s"
        f" ({total['together'] / total['pass'] * 100:.1f} % of them), PLL {total['pll']:.2f} s"
        f" ({total['pll'] / total['pass']:.0f}x)"
    )


if __name__ == "__main__":
    main()
