"""Benchmark: does a model of the width pick the length of a gap of unknown width more often?
(issue 31 §2 and §4: "length right at least 40 %").

    nice -n 19 .venv/bin/python benchmarks/width_evidence.py CHECKPOINT --shards SHARDS \\
        [--sample 80] [--bootstrap 1000]

Prints figures; asserts nothing. Every gap of the benchmark's ``unknown`` (hidden spans as
``[---]``) and ``edge`` (the stone's edge) protocols on the dev sample is decoded once as
``restore --decoder fused`` decodes it (the fusion of ``fusion.json`` beside CHECKPOINT: the
n-gram, the parallels at its edge gain, the whole readings' weights), and its candidates are
kept with the mixture's probability ``m`` of each. The evidence on the width, per length ``n``:

* ``net``: the network's width probability, the chain of its BLANK shares (``log b_n +
  Σ_{j<n} log(1 − b_j)``, as :func:`~stoicheia.inference.restore.whole_readings.judge_scores`
  scores where a fill ends);
* ``par``: the parallels' fills of ``n`` letters, their share of the parallels' weights
  (``log(share + 0.02)``, times the mixture's Λ, the trust the evidence earns);
* ``prior``: lost stretches of ``n`` letters in the real editions
  (:data:`stoicheia.noise.lacuna_table.WIDTH_COUNTS`, docs/noise.md);
* ``len``: ``n`` itself (a per-letter bonus, the insertion term of speech decoders).

Two models of the width, both fitted on the **selection** half only and scored on the
**report** half against the decoder as it is (all weights 0):

* ``tilt``: each candidate's score ``log m + Σ_k a_k f_k(n)``, the weights ``a`` chosen on a
  grid by the best mean top-1 over the two protocols, then length right, then the smallest;
* ``ML``: a distribution over widths ``W(n) ∝ exp(Σ_k α_k f_k(n))`` with the mixture's own
  mass per width ``log Σ_{|fill| = n} m`` as one more feature, ``α`` fitted by maximum
  likelihood of the true width (L-BFGS, L2 0.01), and each candidate ranked by ``W(n) m /
  Σ_{|fill| = n} m``.

Differences on the report half come with a 95 % paired-bootstrap interval over the
inscriptions. Figures measured: docs/measuring-restoration.md, "The width of a gap of unknown
extent".
"""

from __future__ import annotations

import os as _os
import sys as _sys
from pathlib import Path as _Path

if not _os.environ.get("PYTHONPATH"):
    _sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
import itertools  # noqa: E402
from collections import Counter  # noqa: E402

import numpy as np  # noqa: E402

FEATURES = ("net", "par", "prior", "len")
#: the tilt's grid per feature (0 first: the decoder as it is)
GRID = {
    "net": (0.0, 0.25, 0.5, 1.0),
    "par": (0.0, 0.25, 0.5, 1.0, 2.0),
    "prior": (0.0, 0.5, 1.0),
    "len": (0.0, 0.25, 0.5, 1.0),
}


def lacuna_prior(most: int) -> np.ndarray:
    """Float64 ``(most + 1,)``: natural log of the share of the editions' lost stretches of
    each width (index 0 unused), uniform within each bucket of the table."""
    from stoicheia.noise.lacuna_table import WIDTH_COUNTS, bucket_bounds

    p = np.full(max(most, 60) + 1, 1e-12)
    for (lo, hi), c in zip(bucket_bounds(), WIDTH_COUNTS.values(), strict=True):
        p[lo : hi + 1] = c / (hi - lo + 1)
    p[0] = 1e-12
    return np.log(p / p[1:].sum())[: most + 1]


def network_widths(logp: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Float64 ``(hi + 1,)``: natural log of the network's probability that the fill ends
    after ``n`` letters (``lo <= n <= hi``; ``-inf`` elsewhere), from ``logp`` (float
    ``(slots, >= 27)``, the gap's forward pass): the BLANK chain of ``judge_scores``."""
    from stoicheia.text import alphabet as A

    rows = np.asarray(logp, dtype=np.float64)
    out = np.full(hi + 1, -np.inf)
    acc = 0.0
    for n in range(lo, hi + 1):
        if n < hi and n < len(rows):
            allowed = np.concatenate([rows[n, : A.NUM_LETTERS], rows[n, A.BLANK : A.BLANK + 1]])
            end = rows[n, A.BLANK] - np.logaddexp.reduce(allowed)
        else:
            end = 0.0
        out[n] = acc + end
        acc += np.log1p(-min(np.exp(end), 1.0 - 1e-12))
    return out


def collect(args: argparse.Namespace) -> list[dict]:
    """Each gap's candidates and evidence (module docstring)."""
    from stoicheia.inference.benchmark.halves import half_of
    from stoicheia.inference.benchmark.parallels import ParallelsCache
    from stoicheia.inference.benchmark.protocols import base_letters, read_dev_texts
    from stoicheia.inference.benchmark.run import ModelDecoder
    from stoicheia.inference.benchmark.tasks import build_tasks
    from stoicheia.inference.loading import load_model
    from stoicheia.inference.restore.decoders import gap_candidates
    from stoicheia.inference.restore.fusion_file import find_fusion

    model = load_model(args.checkpoint, device="cpu")
    notes: list[str] = []
    fusion = find_fusion(model, decoder="fused", notes=notes)
    if fusion is None or fusion.parallels is None or fusion.readings is None:
        raise SystemExit(f"{args.checkpoint}: no fused decoder with parallels here ({notes})")
    texts = read_dev_texts(args.shards, sample=args.sample, counts=Counter())
    tasks = build_tasks(texts, ["unknown", "edge"], 3, 1234, Counter())
    md = ModelDecoder(model, unknown_width=20)
    cache = ParallelsCache(md, fusion.parallels, edge_gain=fusion.edge_gain)
    out = []
    for protocol, ts in tasks.items():
        for t in ts:
            logp, shape, g, items, gaps, _ = md.prepared(t)
            found = cache.found(t)
            hold: dict = {}
            gap_candidates("fused", logp, items, gaps, {}, g, 20, fusion, found=found, cache=hold)
            case = hold["case"]
            m = case.mixture(fusion.readings)
            lam = fusion.readings.lam(case.evidence) if case.p_par.sum() > 0 else 0.0
            lo, hi = gaps[g].min_letters, gaps[g].max_letters
            par = np.zeros(hi + 1)
            fills = [f for f in found.fills if f.lone_letter is None] if found else []
            total = sum(f.prob for f in fills) or 1.0
            for f in fills:
                if len(f.letters) <= hi:
                    par[len(f.letters)] += f.prob / total
            lens = np.array([len(a) for a in case.letters], dtype=np.int64)
            mass = np.full(hi + 1, -np.inf)
            for n in set(lens.tolist()):
                mass[n] = np.log(max(m[lens == n].sum(), 1e-300))
            out.append(
                {
                    "protocol": protocol,
                    "inscription": t.text_id.split("#", 1)[0],
                    "half": half_of(t.text_id),
                    "truth": t.truth,
                    "texts": [base_letters("".join(_letters(a))) for a in case.letters],
                    "lens": lens,
                    "m": m,
                    "mass": mass,
                    "net": network_widths(logp, lo, hi),
                    "par": lam * np.log(par + 0.02),
                    "prior": lacuna_prior(hi),
                }
            )
    return out


def _letters(a: np.ndarray) -> list[str]:
    from stoicheia.text import alphabet as A

    return [A.LETTERS[int(i)] for i in a]


def _features(c: dict, n: np.ndarray) -> np.ndarray:
    """Float64 ``(len(n), 4)``: the evidence of :data:`FEATURES` at widths ``n``."""
    net = np.where(np.isfinite(c["net"][n]), c["net"][n], -30.0)
    return np.stack([net, c["par"][n], c["prior"][n], n.astype(np.float64)], axis=1)


def tilt_pick(c: dict, a: np.ndarray) -> int:
    """The candidate the tilt with weights ``a`` (float ``(4,)``) ranks first."""
    s = np.log(c["m"] + 1e-300) + _features(c, c["lens"]) @ a
    return int(np.argmax(s))


def ml_fit(cases: list[dict]) -> np.ndarray:
    """The ML model's weights (module docstring): float ``(5,)``, the mixture's mass first."""
    from scipy.optimize import minimize

    rows = []
    for c in cases:
        n = np.arange(1, len(c["mass"]))
        ok = np.isfinite(c["mass"][n])
        t = len(c["truth"])
        if t >= len(c["mass"]) or not np.isfinite(c["mass"][t]):
            continue
        X = np.concatenate([c["mass"][n][ok, None], _features(c, n[ok])], axis=1)
        rows.append((X, int(np.flatnonzero(n[ok] == t)[0])))

    def nll(a: np.ndarray) -> float:
        tot = 0.01 * float(a @ a)
        for X, t in rows:
            s = X @ a
            tot -= s[t] - np.logaddexp.reduce(s)
        return tot

    return minimize(nll, np.r_[1.0, np.zeros(len(FEATURES))], method="L-BFGS-B").x


def ml_pick(c: dict, a: np.ndarray) -> int:
    n = c["lens"]
    X = np.concatenate([c["mass"][n][:, None], _features(c, n)], axis=1)
    return int(np.argmax(np.log(c["m"] + 1e-300) - c["mass"][n] + X @ a))


def score(cases: list[dict], pick) -> tuple[np.ndarray, np.ndarray]:
    """Bool ``(n,)`` each: top-1 right, length right."""
    top, length = [], []
    for c in cases:
        i = pick(c)
        top.append(c["texts"][i] == c["truth"])
        length.append(int(c["lens"][i]) == len(c["truth"]))
    return np.array(top), np.array(length)


def interval(cases: list[dict], a: np.ndarray, b: np.ndarray, resamples: int) -> str:
    """``+d pts [lo, hi]``: the mean of ``a - b`` (bool per gap) with its 95 % paired
    bootstrap interval over the inscriptions (seed 1234)."""
    names = sorted({c["inscription"] for c in cases})
    at = {k: i for i, k in enumerate(names)}
    ins = np.array([at[c["inscription"]] for c in cases])
    d = a.astype(float) - b.astype(float)
    per = np.bincount(ins, weights=d, minlength=len(names))
    cnt = np.bincount(ins, minlength=len(names))
    rng = np.random.default_rng(1234)
    draws = rng.integers(0, len(names), size=(resamples, len(names)))
    means = per[draws].sum(1) / np.maximum(cnt[draws].sum(1), 1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return f"{100 * d.mean():+5.1f} pts [{100 * lo:+5.1f}, {100 * hi:+5.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint", help="checkpoint with fusion.json and ngram.npz beside it")
    ap.add_argument("--shards", required=True, help="the converted corpus with its dev set")
    ap.add_argument("--sample", type=int, default=80, help="dev inscriptions (as the demo)")
    ap.add_argument("--bootstrap", type=int, default=1000, help="resamples of the intervals")
    args = ap.parse_args()
    cases = collect(args)
    sel = [c for c in cases if c["half"] == "selection"]
    rep = [c for c in cases if c["half"] == "report"]
    by = {
        (h, p): [c for c in cs if c["protocol"] == p]
        for h, cs in (("sel", sel), ("rep", rep))
        for p in ("unknown", "edge")
    }

    def key(a: np.ndarray) -> tuple:
        t = [score(by[("sel", p)], lambda c: tilt_pick(c, a)) for p in ("unknown", "edge")]
        return (
            round(float(np.mean([x[0].mean() for x in t])), 9),
            round(float(np.mean([x[1].mean() for x in t])), 9),
            -float(a.sum()),
        )

    grid = [np.array(w) for w in itertools.product(*(GRID[f] for f in FEATURES))]
    best = max(grid, key=key)
    ml = ml_fit(sel)
    print(f"gaps: selection {len(sel)}, report {len(rep)} (unknown and edge)")
    print(f"tilt chosen on the selection half: {dict(zip(FEATURES, best.tolist(), strict=True))}")
    print(f"ML weights (mass, {', '.join(FEATURES)}): {np.round(ml, 3).tolist()}")
    zero = np.zeros(len(FEATURES))
    for p in ("unknown", "edge"):
        for half in ("sel", "rep"):
            cs = by[(half, p)]
            base = score(cs, lambda c: tilt_pick(c, zero))
            tilt = score(cs, lambda c: tilt_pick(c, best))
            fit = score(cs, lambda c: ml_pick(c, ml))
            print(
                f"{p:8} {'selection' if half == 'sel' else 'report':9} {len(cs):4} gaps  "
                f"top-1 / length right: as it is {100 * base[0].mean():5.1f} / "
                f"{100 * base[1].mean():5.1f}  tilt {100 * tilt[0].mean():5.1f} / "
                f"{100 * tilt[1].mean():5.1f}  ML {100 * fit[0].mean():5.1f} / "
                f"{100 * fit[1].mean():5.1f}"
            )
            if half == "rep" and args.bootstrap:
                print(
                    f"{'':24}length right, tilt − as it is "
                    f"{interval(cs, tilt[1], base[1], args.bootstrap)}"
                    f"; ML − as it is {interval(cs, fit[1], base[1], args.bootstrap)}"
                )


if __name__ == "__main__":
    main()
