"""The tier mix of a run in letters: each tier's share of the letters the planned run reads, its
letters, and how many times it is read, printed at start and kept in ``mix.json`` for
``stoicheia status``.

The planned run is ``train.nominal_steps`` optimizer steps of ``global_rows`` rows of
``seq_len`` letter slots: the stable phase (mix 0, ``data.tier_weights``) until the planned
anneal start, then the anneal phases of ``callbacks.anneal_data`` over the decay window (each
its fraction of it). A slot holds one letter, except the padding at a row's end, the real
lacunae and the blank slots of the elastic noise (a few per cent), so the letters read are
slightly fewer than the slots: the figures are upper bounds.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from stoicheia.data.tier_mix import TierReads, TierSize, letter_shares, plan_reads
from stoicheia.train import run_files

log = logging.getLogger(__name__)

MIX_FILE = "mix.json"


@dataclass(frozen=True)
class MixSpan:
    """One mix of the planned run: ``name`` (``stable``, ``anneal phase k``), its ``steps``,
    letter ``slots`` (steps x rows x seq_len) and letter ``shares`` (normalised weights)."""

    name: str
    steps: int
    slots: int
    shares: dict[str, float]


def planned_spans(
    mixes: Sequence[Mapping[str, float]],
    phase_ends: Sequence[float],
    *,
    planned_start: int,
    decay_steps: int,
    slots_per_step: int,
) -> list[MixSpan]:
    """The mixes of a planned run: mix 0 for ``planned_start`` steps, then mix ``k`` (1-based)
    from ``round(e_{k-1} * decay_steps)`` to ``round(e_k * decay_steps)`` after it, as
    :class:`~stoicheia.train.callbacks.anneal_data.AnnealData` schedules them (``phase_ends``:
    the end fractions ``e_k``; empty without anneal phases: mix 0 to the end).
    ``slots_per_step``: letter slots per optimizer step over all processes."""
    if not phase_ends:
        steps = planned_start + decay_steps
        return [MixSpan("stable", steps, steps * slots_per_step, letter_shares(mixes[0]))]
    spans = [
        MixSpan("stable", planned_start, planned_start * slots_per_step, letter_shares(mixes[0]))
    ]
    prev = 0
    for k, end in enumerate(phase_ends, start=1):
        stop = round(end * decay_steps)
        steps = stop - prev
        spans.append(
            MixSpan(f"anneal phase {k}", steps, steps * slots_per_step, letter_shares(mixes[k]))
        )
        prev = stop
    return spans


def plan_facts(
    spans: Sequence[MixSpan], sizes: Mapping[str, TierSize], max_reads: float
) -> dict[str, Any]:
    """The plan as ``mix.json`` keeps it: ``steps``, ``slots``, ``max_reads``, ``mixes``
    (the spans) and ``tiers`` (:class:`~stoicheia.data.tier_mix.TierReads` as dicts)."""
    reads = plan_reads([(s.shares, s.slots) for s in spans], sizes)
    return {
        "steps": sum(s.steps for s in spans),
        "slots": sum(s.slots for s in spans),
        "max_reads": max_reads,
        "mixes": [asdict(s) for s in spans],
        "tiers": [asdict(r) for r in reads],
    }


def _m(n: float) -> str:
    if n >= 1e9:
        return f"{n / 1e9:,.2f} G"
    return f"{n / 1e6:,.2f} M" if n >= 1e5 else f"{n:,.0f}"


def _tier_lines(tiers: list[dict[str, Any]]) -> list[str]:
    """One line per tier: its share of the letters read, letters read of its own, reads."""
    return [
        f"  {r['tier']:<8} {100 * r['share']:5.1f} % of the letters, {_m(r['letters_read'])} "
        f"read of its {_m(r['letters'])}: read {r['reads']:,.2f} times"
        for r in tiers
    ]


def _shares(mix: Mapping[str, Any]) -> str:
    """A phase's tier shares of its letters, ``gold 76.0 %, silver 4.0 %, ...``."""
    return ", ".join(f"{t} {100 * s:.1f} %" for t, s in mix["shares"].items())


def plan_lines(facts: Mapping[str, Any]) -> list[str]:
    """The plan in plain lines (no prefix): the budget, one line per tier, one per mix."""
    lines = [
        f"tier mix over the planned run, in letters: {facts['steps']:,} steps, "
        f"{_m(facts['slots'])} letter slots"
    ]
    lines += _tier_lines(facts["tiers"])
    for m in facts["mixes"]:
        lines.append(f"  {m['name']} ({m['steps']:,} steps): {_shares(m)}")
    return lines


def run_phases(
    facts: Mapping[str, Any],
    anneal: Mapping[str, Any] | None,
    step: int | None,
    end: int | None = None,
) -> dict[str, Any] | None:
    """The mix of the run as it went (``stoicheia status``), where it differs from the plan:
    ``facts`` the plan (``mix.json``), ``anneal`` the anneal's decision (``anneal.json``: its
    ``step``, and ``end``, the step the decay ends), ``step`` the last step logged, ``end`` the
    step the run ended at (``complete.json``; ``None`` while it runs).

    The stable phase ran to the anneal's real start (the automatic anneal moves it: a stall
    before the planned start, or an extension while the metric still improves), each anneal
    phase then for its planned steps, the last one to the decay's end, all of it cut at
    ``end``; before the anneal has started, a stable phase already past its planned start is
    shown so far (``so far``). Returns facts shaped as :func:`plan_facts`' with ``planned``
    (the planned steps), ``anneal_step``, and per mix ``start``; ``None`` when the run follows
    the plan (or ``facts`` holds no mixes)."""
    mixes = list(facts.get("mixes") or [])
    if not mixes or not facts.get("steps"):
        return None
    per_step = int(facts["slots"]) // int(facts["steps"])
    planned_start = int(mixes[0]["steps"]) if len(mixes) > 1 else None
    start = int(anneal["step"]) if anneal and anneal.get("step") is not None else None
    extended = start is None and planned_start is not None and (step or 0) > planned_start
    if not extended and (start is None or planned_start is None or start == planned_start):
        return None
    spans: list[dict[str, Any]] = []
    if start is None:  # still stable past the planned start
        spans.append({**mixes[0], "start": 0, "steps": int(step), "so_far": True})
        stop = int(step)
    else:
        decay_end = int(anneal.get("end") or start + sum(int(m["steps"]) for m in mixes[1:]))
        stop = decay_end if end is None else min(int(end), decay_end)
        at = 0
        for k, m in enumerate(mixes):
            length = start if k == 0 else int(m["steps"])
            if k == len(mixes) - 1:
                length = decay_end - at  # the last phase to the decay's end
            a, b = at, min(at + length, stop)
            at += length
            if b > a:
                spans.append({**m, "start": a, "steps": b - a})
    for sp in spans:
        sp["slots"] = sp["steps"] * per_step
    sizes = {r["tier"]: TierSize(int(r["letters"]), 1) for r in facts.get("tiers") or []}
    reads = plan_reads([(sp["shares"], sp["slots"]) for sp in spans], sizes)
    return {
        "steps": sum(sp["steps"] for sp in spans),
        "slots": sum(sp["slots"] for sp in spans),
        "max_reads": facts.get("max_reads", 4.0),
        "planned": int(facts["steps"]),
        "planned_start": planned_start,
        "anneal_step": start,
        "mixes": spans,
        "tiers": [asdict(r) for r in reads],
    }


def run_phase_lines(went: Mapping[str, Any], anneal: Mapping[str, Any] | None) -> list[str]:
    """:func:`run_phases` in plain lines: the budget against the plan, one line per tier, one
    per phase with the steps it ran."""
    why = ""
    if went.get("anneal_step") is not None:
        reason = (anneal or {}).get("reason")
        why = (
            f"; the anneal started at step {went['anneal_step']:,}"
            f"{f' ({reason})' if reason else ''}, planned at {went['planned_start']:,}"
        )
    else:
        why = (
            f"; the stable phase runs on past its planned end at step {went['planned_start']:,} "
            "(the decision metric still improves)"
        )
    lines = [
        f"tier mix over the run as it went, in letters: {went['steps']:,} steps "
        f"(planned {went['planned']:,}{why}), {_m(went['slots'])} letter slots"
    ]
    lines += _tier_lines(went["tiers"])
    for m in went["mixes"]:
        a, b = m["start"], m["start"] + m["steps"]
        so_far = " so far" if m.get("so_far") else ""
        lines.append(
            f"  {m['name']} (steps {a:,}-{b:,}: {m['steps']:,} steps{so_far}): {_shares(m)}"
        )
    return lines


def over_read(facts: Mapping[str, Any]) -> list[TierReads]:
    """The tiers read more than ``facts['max_reads']`` times."""
    return [TierReads(**r) for r in facts["tiers"] if r["reads"] > float(facts["max_reads"])]


def warning_lines(facts: Mapping[str, Any]) -> list[str]:
    """One warning per tier read more than ``max_reads`` times, naming the fix; one line for
    all when every tier is (the run plans more letters than the corpus holds)."""
    over = over_read(facts)
    limit = f"data.max_reads = {facts['max_reads']:g}"
    if over and len(over) == len(facts["tiers"]) and len(over) > 1:
        letters = sum(r["letters"] for r in facts["tiers"])
        return [
            f"warning: every tier is read more than {limit} times: the planned run reads "
            f"{_m(facts['slots'])} letter slots, the tiers hold {_m(letters)} letters; convert "
            "more text or plan fewer steps (train.nominal_steps)"
        ]
    return [
        f"warning: tier {r.tier} is read {r.reads:,.1f} times over the planned run (more than "
        f"{limit}): repeats past a few add little; lower its weight in data.tier_weights (and in "
        "the anneal phases) or convert more text for it"
        for r in over
    ]


def announce(
    run_folder: Path | None,
    spans: Sequence[MixSpan],
    sizes: Mapping[str, TierSize],
    max_reads: float,
    *,
    write: bool,
) -> dict[str, Any]:
    """Log the plan (``[data]`` lines, the warnings last) and, with ``write`` (global rank 0),
    keep it as ``run_folder/mix.json``. Returns the facts."""
    facts = plan_facts(spans, sizes, max_reads)
    for line in plan_lines(facts):
        log.info("[data] %s", line)
    for line in warning_lines(facts):
        log.warning("[data] %s", line)
    if write and run_folder is not None:
        run_files.write_json(run_folder, MIX_FILE, facts)
    return facts
