"""Benchmark: the tier mix of a run's config in letters, without training.

    .venv/bin/python benchmarks/tier_mix.py yamls/demo.yaml [yamls/base.yaml ...]
        [--shards data/shards] [KEY=VALUE ...]

Prints, for each config, what the run prints at start (:mod:`stoicheia.train.mix_plan`): each
tier's share of the letters of the planned run, its letters and how many times it is read,
each mix's shares (the stable phase and the anneal phases of ``callbacks.anneal_data``), and a
warning for a tier read more than ``data.max_reads`` times. The letters per tier come from
``--shards``' ``stats.json`` (default: the config's ``data.shard_root``). One process's batch
(``train.global_batch_rows``, else ``micro_batch_rows x grad_accum``). Asserts nothing.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402

from stoicheia.config import batch_split, load_config  # noqa: E402
from stoicheia.data.tier_mix import read_tier_sizes  # noqa: E402
from stoicheia.train.callbacks.anneal_data import DEFAULT_PHASES, check_phases  # noqa: E402
from stoicheia.train.mix_plan import (  # noqa: E402
    plan_facts,
    plan_lines,
    planned_spans,
    warning_lines,
)
from stoicheia.train.schedule import WSDShape  # noqa: E402


def plan(config: str, overrides: list[str], shards: str | None) -> list[str]:
    """The plan lines of one config (as the run prints them, without the ``[data]`` prefix)."""
    cfg = load_config(config, overrides)
    _, rows = batch_split(cfg.train, 1)
    t = cfg.train
    shape = WSDShape(t.nominal_steps, t.warmup_frac, t.decay_frac, t.final_lr_frac)
    anneal = cfg.callbacks.get("anneal_data", {})
    phases = [] if anneal is False else check_phases((anneal or {}).get("phases", DEFAULT_PHASES))
    spans = planned_spans(
        [cfg.data.tier_weights, *(mix for _, mix in phases)],
        [end for end, _ in phases],
        planned_start=shape.planned_anneal_start,
        decay_steps=shape.decay_steps,
        slots_per_step=rows * cfg.data.seq_len,
    )
    facts = plan_facts(spans, read_tier_sizes(shards or cfg.data.shard_root), cfg.data.max_reads)
    return plan_lines(facts) + warning_lines(facts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("configs", nargs="+", help="YAML files, then KEY=VALUE overrides")
    ap.add_argument("--shards", default=None)
    args = ap.parse_args()
    configs = [c for c in args.configs if "=" not in c]
    overrides = [c for c in args.configs if "=" in c]
    for config in configs:
        print(f"{config}:")
        for line in plan(config, overrides, args.shards):
            print(f"  {line}")


if __name__ == "__main__":
    main()
