"""The self-steering plugins on a small model and real shards: auto-anneal, staged tier
mixes, best / pre_anneal / final checkpoints, anneal early stop, the non-finite guard, and
the registry that builds them from the YAML.

Scripted held-out curves replace the decision metric where a test needs a given shape (the
plugins read it through ``read_decision_metric``); one test runs the real evaluators.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest
import torch
from composer.core import Callback

from stoicheia.config import ConfigError, load_config
from stoicheia.train import registry, run_files
from stoicheia.train.algorithms.gradient_guard import TrainingDiverged
from stoicheia.train.builder import build_trainer
from stoicheia.train.callbacks.anneal_data import check_phases
from stoicheia.train.callbacks.auto_anneal import is_stalled
from stoicheia.train.run import fit_run
from stoicheia.train.run_files import read_history

sys.path.insert(0, str(Path(__file__).parent))
from tiny import tiny_run  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _chdir_repo(monkeypatch):
    monkeypatch.chdir(REPO)


def config(shards, folder, name, *extra):
    return tiny_run(shards, folder, name, *extra)


def script_curve(monkeypatch, curve):
    """Make every plugin read ``curve(step)`` as the decision metric."""

    def fake(state, key):
        return float(curve(int(state.timestamp.batch)))

    for module in ("auto_anneal", "best_checkpoint", "anneal_early_stop"):
        monkeypatch.setattr(f"stoicheia.train.callbacks.{module}.read_decision_metric", fake)


class BatchDigests(Callback):
    """Records a digest of every training batch by step (to compare runs)."""

    def __init__(self) -> None:
        self.digests: dict[int, str] = {}

    def batch_start(self, state, logger) -> None:
        h = hashlib.sha256()
        for k in sorted(state.batch):
            h.update(k.encode())
            h.update(state.batch[k].numpy().tobytes())
        self.digests[int(state.timestamp.batch)] = h.hexdigest()


def lrs(folder: Path) -> dict[int, float]:
    out = {}
    for row in run_files.read_jsonl(folder / "metrics.jsonl"):
        if "lr-AdamW/group0" in row:
            out[int(row["step"])] = row["lr-AdamW/group0"]
    return out


def run(cfg, *callbacks, duration=None):
    built = build_trainer(cfg)
    built.trainer.state.callbacks.extend(callbacks)
    if duration is None:
        fit_run(built)
    else:
        built.trainer.fit(duration=duration)
    built.trainer.close()
    return built


# --- pure parts ---------------------------------------------------------------------------
def test_stall_test_compares_the_halves_of_the_window():
    assert not is_stalled([3.0, 2.9, 2.8], window=4, eps=0.002), "too few evaluations"
    assert is_stalled([3.0, 3.0, 3.0, 3.0], window=4, eps=0.002)
    assert not is_stalled([3.0, 2.99, 2.98, 2.97], window=4, eps=0.002)
    assert is_stalled([3.0, 2.99, 2.9895, 2.9893], window=4, eps=0.002), "0.0007 better: below eps"
    assert not is_stalled([3.0, 2.99, 2.988, 2.995], window=4, eps=0.002), "0.002 better: enough"
    assert is_stalled([9.0, 3.0, 2.9, 2.8, 3.1, 3.2], window=4, eps=0.0), "only the last 4 count"
    assert is_stalled([0.5, 0.55, 0.6, 0.6], window=4, eps=0.002, mode="max") is False
    assert is_stalled([0.6, 0.6, 0.6, 0.6], window=4, eps=0.002, mode="max")


def test_phases_are_checked():
    assert check_phases([[0.5, {"gold": 1, "silver": 1}], [1.0, {"gold": 1}]])[1] == (
        1.0,
        {"gold": 1.0},
    )
    for bad, msg in [
        ([[0.5, {"gold": 1}]], "last phase must end at 1.0"),
        ([[0.6, {"gold": 1}], [0.5, {"gold": 1}], [1.0, {"gold": 1}]], "increasing"),
        ([[1.0, {"gold": 0}]], "at least one positive"),
        ([[1.0, "gold"]], "end_fraction"),
        ([], "non-empty"),
    ]:
        with pytest.raises(ValueError, match=msg):
            check_phases(bad)


def test_registry_names_the_closest_plugin_and_option():
    base = load_config("yamls/demo.yaml")
    for overrides, msg in [
        (
            ["callbacks.auto_aneal.stall_window=4"],
            "unknown callback 'auto_aneal'; did you mean 'auto_anneal'",
        ),
        (
            ["callbacks.auto_anneal.stall_windw=4"],
            "unknown option 'stall_windw'; did you mean 'stall_window'",
        ),
        (["callbacks.anneal_early_stop.control=1"], "is set by the run"),
        (["algorithms.gradient_gaurd.max_consec_skips=2"], "did you mean 'gradient_guard'"),
        (["callbacks.lr_monitor.window=3"], "it takes no options"),
        (["callbacks.best_checkpoint=3"], "mapping of options, true or false"),
        (
            ["callbacks.gradient_guard.max_consec_skips=3"],
            "one of the algorithms: set it under algorithms.gradient_guard",
        ),
        (["callbacks.training_monitor.log_every=5"], "set train.log_every instead"),
        (
            ["callbacks.auto_anneal.stall_window=abc"],
            "callbacks.auto_anneal.stall_window: expected int",
        ),
        (["callbacks.auto_anneal.stall_window=2.5"], "expected int"),
        (
            ["callbacks.best_checkpoint.min_delta=abc"],
            "callbacks.best_checkpoint.min_delta: expected float",
        ),
    ]:
        with pytest.raises(ConfigError, match=msg.replace("(", r"\(")):
            registry.check_plugins(load_config("yamls/demo.yaml", overrides))
    names = [
        n
        for n, _ in registry.resolve(
            load_config("yamls/demo.yaml", ["callbacks.auto_anneal=false"]).callbacks, "callbacks"
        )
    ]
    assert "auto_anneal" not in names and "anneal_data" in names
    assert dict(registry.resolve(base.callbacks, "callbacks"))["auto_anneal"]  # the demo tunes it


def test_decide_on_must_name_an_evaluated_set():
    with pytest.raises(ConfigError, match="train.decide_on"):
        load_config("yamls/demo.yaml", ["train.decide_on=test/bits_per_char"])
    with pytest.raises(ConfigError, match="train.decide_on"):
        load_config("yamls/demo.yaml", ["train.decide_on=holdout/bpc"])


# --- auto-anneal ------------------------------------------------------------------------
def test_stalled_curve_anneals_early_but_not_before_min_anneal_frac(
    small_shards, tmp_path, monkeypatch, capsys
):
    # nominal 40, decay 10: planned start 30; min_anneal_frac 0.35 -> not before batch 14.
    script_curve(
        monkeypatch, lambda step: 3.0
    )  # flat from the start: stalled as soon as the window is full
    cfg = config(
        small_shards,
        tmp_path,
        "stall",
        "train.nominal_steps=40",
        "train.max_steps=60",
        "train.decay_frac=0.25",
        "train.save_interval=2",
        "callbacks.auto_anneal.stall_window=4",
        "callbacks.auto_anneal.min_anneal_frac=0.35",
        "callbacks.anneal_early_stop.patience=0",
    )
    built = run(cfg)
    folder = tmp_path / "stall"
    assert built.control.anneal_start == 14 and built.control.reason == "stall"
    marker = json.loads((folder / "anneal.json").read_text())
    assert marker["step"] == 14 and marker["reason"] == "stall" and marker["planned_start"] == 30
    assert [s for s, _ in marker["evaluations"]] == [8, 10, 12, 14]
    assert int(built.trainer.state.timestamp.batch) == 24, (
        "the run ends at anneal start + decay length"
    )
    lr = lrs(folder)
    peak = max(lr.values())
    assert all(lr[s] == pytest.approx(peak) for s in range(4, 16)), (
        "peak LR until the anneal start (one batch late)"
    )
    assert lr[24] < 0.1 * peak and all(lr[s] >= lr[s + 1] for s in range(15, 24))
    assert (folder / "pre_anneal.pt").exists() and (folder / "final.pt").exists()
    done = json.loads((folder / "complete.json").read_text())
    assert done["reason"] == "anneal_done" and done["step"] == 24
    out = capsys.readouterr().out
    assert "[anneal] step 14: anneal starts (stall" in out


def test_improving_curve_extends_the_stable_phase_then_hits_the_cap(
    small_shards, tmp_path, monkeypatch, capsys
):
    script_curve(monkeypatch, lambda step: 5.0 - 0.05 * step)  # never stalls
    cfg = config(
        small_shards,
        tmp_path,
        "capped",
        "train.nominal_steps=20",
        "train.max_steps=30",
        "train.decay_frac=0.25",
        "train.save_interval=2",
        "callbacks.auto_anneal.stall_window=4",
        "callbacks.anneal_early_stop.patience=0",
    )
    built = run(cfg)
    # planned start 15, decay 5, cap = 30 - 5 = 25
    out = capsys.readouterr().out
    assert "stable phase extended" in out
    assert built.control.anneal_start == 25 and built.control.reason == "cap"
    assert int(built.trainer.state.timestamp.batch) == 30
    lr = lrs(tmp_path / "capped")
    assert lr[20] == pytest.approx(max(lr.values())), "peak LR past the planned start"


def test_auto_anneal_false_keeps_the_planned_schedule(small_shards, tmp_path, monkeypatch):
    script_curve(monkeypatch, lambda step: 3.0)
    cfg = config(
        small_shards,
        tmp_path,
        "planned",
        "train.nominal_steps=20",
        "train.max_steps=30",
        "train.decay_frac=0.25",
        "train.save_interval=2",
        "callbacks.auto_anneal=false",
        "callbacks.anneal_early_stop.patience=0",
    )
    built = run(cfg)
    assert built.control.anneal_start == 15 and built.control.reason == "planned"
    assert int(built.trainer.state.timestamp.batch) == 20


def test_changing_decide_on_restarts_the_windows(small_shards, tmp_path, capsys):
    extra = (
        "data.eval_sets=[holdout,all]",
        "train.decide_on=holdout/bits_per_char",
        "train.nominal_steps=40",
        "train.max_steps=40",
        "train.save_interval=2",
        "callbacks.auto_anneal.stall_window=4",
    )
    first = run(config(small_shards, tmp_path, "switch", *extra), duration="6ba")
    assert [s for s, _ in first.plugins["auto_anneal"].window] == [2, 4, 6]
    assert first.plugins["best_checkpoint"].metric == "holdout/bits_per_char"
    again = build_trainer(
        config(small_shards, tmp_path, "switch", *extra, "train.decide_on=all/bits_per_char")
    )
    auto, best = again.plugins["auto_anneal"], again.plugins["best_checkpoint"]
    assert auto.window == [] and auto.metric == "all/bits_per_char"
    assert best.best_value is None and again.plugins["anneal_early_stop"].since_best == 0
    again.trainer.fit(duration="4ba")
    again.trainer.close()
    assert [s for s, _ in auto.window] == [8, 10]
    assert (
        "decision metric changed from holdout/bits_per_char to all/bits_per_char"
        in capsys.readouterr().out
    )


# --- staged tier mixes -------------------------------------------------------------------
PHASED = (
    "train.nominal_steps=20",
    "train.max_steps=20",
    "train.decay_frac=0.4",
    "train.save_interval=2",
    "callbacks.auto_anneal=false",
    "callbacks.anneal_early_stop.patience=0",
    "callbacks.anneal_data.phases=[[0.5, {silver: 1}], [1.0, {gold: 1}]]",
)


def test_staged_mixes_switch_at_the_exact_batches(small_shards, tmp_path, capsys):
    # planned start 12, decay 8: phase 1 (silver) from batch 12, phase 2 (gold) from batch 16
    built = build_trainer(config(small_shards, tmp_path, "phases", *PHASED))
    built.train_loader.record_log = []
    fit_run(built)
    built.trainer.close()
    log = built.train_loader.record_log
    want = lambda b: 0 if b < 12 else 1 if b < 16 else 2  # noqa: E731
    assert all(p == want(b) for b, p, _, _ in log)
    assert {t for b, p, t, _ in log if p == 1} == {"silver"} and {
        t for b, p, t, _ in log if p == 2
    } == {"gold"}
    assert (
        min(b for b, p, _, _ in log if p == 1) == 12
        and min(b for b, p, _, _ in log if p == 2) == 16
    )
    out = capsys.readouterr().out
    assert "[data] step 12: anneal phase 1 of 2 starts, tier mix: silver 1" in out
    assert "[data] step 16: anneal phase 2 of 2 starts, tier mix: gold 1" in out
    phases = {
        int(r["step"]): r["data/phase"]
        for r in run_files.read_jsonl(tmp_path / "phases" / "metrics.jsonl")
        if "data/phase" in r
    }
    assert phases[12] == 0 and phases[13] == 1 and phases[17] == 2, (
        "data/phase is logged at the end of each batch"
    )


@pytest.mark.parametrize(
    "stop", [12, 14, 16, 18]
)  # at the first switch, inside phase 1, at the second switch, inside phase 2
def test_resume_inside_a_phase_or_at_a_switch_sees_the_same_batches(small_shards, tmp_path, stop):
    straight = BatchDigests()
    a = run(config(small_shards, tmp_path, "straight", *PHASED), straight)
    want = {k: v.detach().clone() for k, v in a.model.state_dict().items()}
    part1, part2 = BatchDigests(), BatchDigests()
    run(config(small_shards, tmp_path, "resumed", *PHASED), part1, duration=f"{stop}ba")
    b = run(config(small_shards, tmp_path, "resumed", *PHASED), part2)
    assert min(part2.digests) == stop
    assert {**part1.digests, **part2.digests} == straight.digests
    for k, v in b.model.state_dict().items():
        torch.testing.assert_close(v, want[k], rtol=0, atol=0, msg=k)


# --- best, early stop, end of run -----------------------------------------------------------
def test_best_follows_the_minimum_across_a_restart_with_the_real_evaluators(small_shards, tmp_path):
    extra = (
        "train.nominal_steps=16",
        "train.max_steps=16",
        "train.save_interval=2",
        "callbacks.anneal_early_stop.patience=0",
    )
    run(config(small_shards, tmp_path, "best", *extra), duration="8ba")
    folder = tmp_path / "best"
    mid = json.loads((folder / "best.json").read_text())
    built = run(config(small_shards, tmp_path, "best", *extra))
    history = [r for r in read_history(folder) if r["set"] == "holdout"]
    assert [r["step"] for r in history] == [2, 4, 6, 8, 10, 12, 14, 16]
    values = {r["step"]: r["metrics"]["bits_per_char"] for r in history}
    best_step = min(values, key=values.get)
    best = json.loads((folder / "best.json").read_text())
    assert best["step"] == best_step and best["value"] == pytest.approx(values[best_step])
    assert mid["step"] == min((s for s in values if s <= 8), key=values.get)
    assert built.plugins["best_checkpoint"].best_step == best_step
    saved = torch.load(folder / "best.pt", weights_only=False)
    assert saved["state"]["timestamp"]["Timestamp"]["batch"] == best_step


def test_anneal_early_stop_after_the_patience(small_shards, tmp_path, monkeypatch, capsys):
    # planned start 20, decay 16 -> middle 28; the curve improves until 22, then is flat
    script_curve(monkeypatch, lambda step: 4.0 - 0.1 * min(step, 22))
    cfg = config(
        small_shards,
        tmp_path,
        "early",
        "train.nominal_steps=36",
        "train.max_steps=36",
        "train.decay_frac=0.4444",
        "train.save_interval=2",
        "callbacks.auto_anneal=false",
        "callbacks.anneal_early_stop.patience=3",
    )
    built = run(cfg)
    # new bests up to 22; 24, 26, 28 do not improve -> patience 3 reached at 28 (the middle)
    assert (
        built.control.end_reason == "early_stop" and int(built.trainer.state.timestamp.batch) == 28
    )
    folder = tmp_path / "early"
    done = json.loads((folder / "complete.json").read_text())
    assert (
        done["reason"] == "early_stop" and done["use"] == "best.pt" and done["best"]["step"] == 22
    )
    assert (folder / "final.pt").exists() and (folder / "best.pt").exists()
    assert "early stop" in capsys.readouterr().out


def test_a_complete_run_run_again_does_nothing(small_shards, tmp_path, capsys):
    import runpy

    yaml = tmp_path / "tiny.yaml"
    cfg = config(
        small_shards,
        tmp_path,
        "again",
        "train.nominal_steps=6",
        "train.max_steps=6",
        "train.save_interval=3",
    )
    from omegaconf import OmegaConf

    from stoicheia.config import to_dict

    OmegaConf.save(OmegaConf.create(to_dict(cfg)), yaml)
    main = runpy.run_path(str(REPO / "recipes" / "train.py"), run_name="train_recipe")["main"]
    assert main([str(yaml)]) == 0
    folder = tmp_path / "again"
    assert (folder / "complete.json").exists()
    before = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in folder.rglob("*")}
    capsys.readouterr()
    assert main([str(yaml)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert (
        len(out) == 1
        and "is complete at step 6" in out[0]
        and "final" in out[0]
        and "best.pt" in out[0]
    )
    assert {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in folder.rglob("*")} == before


# --- non-finite guard ------------------------------------------------------------------------
class PoisonGradients(Callback):
    """Sets one gradient to NaN after backward at the given steps (0-based batch index)."""

    def __init__(self, steps) -> None:
        self.steps = set(steps)
        self.snapshots: dict[str, dict] = {}

    def after_backward(self, state, logger) -> None:
        if int(state.timestamp.batch) in self.steps:
            p = next(p for p in state.model.parameters() if p.grad is not None)
            p.grad[...] = float("nan")

    def _snap(self, state):
        opt = state.optimizers[0].state_dict()
        return {
            "weights": {k: v.detach().clone() for k, v in state.model.state_dict().items()},
            "opt": {
                k: {n: (t.clone() if torch.is_tensor(t) else t) for n, t in v.items()}
                for k, v in opt["state"].items()
            },
        }

    def batch_start(self, state, logger) -> None:
        if int(state.timestamp.batch) in self.steps:
            self.snapshots["before"] = self._snap(state)

    def batch_end(self, state, logger) -> None:
        if int(state.timestamp.batch) - 1 in self.steps:
            self.snapshots["after"] = self._snap(state)


def test_a_non_finite_gradient_skips_the_update_bit_exactly(small_shards, tmp_path):
    poison = PoisonGradients([4])
    built = run(
        config(
            small_shards,
            tmp_path,
            "nan",
            "train.nominal_steps=6",
            "train.max_steps=6",
            "train.save_interval=3",
        ),
        poison,
    )
    before, after = poison.snapshots["before"], poison.snapshots["after"]
    for k, v in before["weights"].items():
        torch.testing.assert_close(after["weights"][k], v, rtol=0, atol=0, msg=k)
    assert before["opt"].keys() == after["opt"].keys()
    for k in before["opt"]:
        for n, t in before["opt"][k].items():
            assert torch.equal(torch.as_tensor(after["opt"][k][n]), torch.as_tensor(t)), (k, n)
    assert (
        built.plugins["gradient_guard"].skipped == 1
        and built.plugins["gradient_guard"].consecutive == 0
    )
    assert int(built.trainer.state.timestamp.batch) == 6


def test_a_run_of_non_finite_gradients_aborts_and_keeps_the_last_good_checkpoint(
    small_shards, tmp_path, monkeypatch, capsys
):
    import runpy

    import stoicheia.train.builder as builder

    cfg_overrides = (
        "train.nominal_steps=20",
        "train.max_steps=20",
        "train.save_interval=4",
        "algorithms.gradient_guard.max_consec_skips=3",
    )
    yaml = tmp_path / "diverge.yaml"
    from omegaconf import OmegaConf

    from stoicheia.config import to_dict

    OmegaConf.save(
        OmegaConf.create(to_dict(config(small_shards, tmp_path, "diverge", *cfg_overrides))), yaml
    )
    real_build = builder.build_trainer

    def poisoned(cfg, **kw):
        built = real_build(cfg, **kw)
        built.trainer.state.callbacks.append(PoisonGradients(range(5, 100)))
        return built

    monkeypatch.setattr(builder, "build_trainer", poisoned)
    main = runpy.run_path(str(REPO / "recipes" / "train.py"), run_name="train_recipe")["main"]
    assert main([str(yaml)]) == 3
    folder = tmp_path / "diverge"
    assert os.readlink(folder / "latest-rank0.pt") == "ep0-ba4-rank0.pt"
    assert sorted(p.name for p in folder.glob("ep*-ba*-rank0.pt")) == ["ep0-ba4-rank0.pt"], (
        "no checkpoint of the diverged state"
    )
    marker = json.loads((folder / "diverged.json").read_text())
    assert marker["last_good_checkpoint"] == "ep0-ba4-rank0.pt" and marker["step"] == 7
    err = capsys.readouterr().err
    assert "3 consecutive non-finite gradients" in err and "lower train.lr" in err
    with pytest.raises(TrainingDiverged):
        raise TrainingDiverged("importable for callers")


def test_another_anneal_starts_from_pre_anneal_as_a_new_run(small_shards, tmp_path):
    """The README's recipe: a new run with ``train.load_path=.../pre_anneal.pt``, another
    decay length and another mix, resumes at the anneal start and anneals from there."""
    first = run(config(small_shards, tmp_path, "base", *PHASED))
    assert first.control.anneal_start == 12
    pre = tmp_path / "base" / "pre_anneal.pt"
    branch = config(
        small_shards,
        tmp_path,
        "branch",
        *PHASED,
        f"train.load_path={pre}",
        "train.decay_frac=0.2",
        "train.max_steps=30",
        "callbacks.anneal_data.phases=[[1.0, {silver: 1}]]",
    )
    built = build_trainer(branch)
    assert int(built.trainer.state.timestamp.batch) == 12 and built.control.anneal_start == 12
    built.train_loader.record_log = []
    fit_run(built)
    built.trainer.close()
    assert int(built.trainer.state.timestamp.batch) == 16, "12 + 0.2 x 20 batches of decay"
    assert {t for _, _, t, _ in built.train_loader.record_log} == {"silver"}
    assert (tmp_path / "branch" / "final.pt").exists() and json.loads(
        (tmp_path / "base" / "complete.json").read_text()
    )["step"] == 20
    inherited = json.loads((tmp_path / "branch" / "anneal.json").read_text())
    assert inherited["inherited"] and inherited["step"] == 12 and inherited["end"] == 16
    # a branch whose decay would end after max_steps is refused before training
    short = build_trainer(
        config(
            small_shards,
            tmp_path,
            "short",
            *PHASED,
            f"train.load_path={pre}",
            "train.decay_frac=0.5",
            "train.max_steps=20",
        )
    )
    with pytest.raises(
        ValueError, match="ends at batch 22, after train.max_steps=20: raise train.max_steps"
    ):
        fit_run(short)
    short.trainer.close()


def test_a_reopened_pre_anneal_goes_on_at_the_peak_and_anneals_at_the_new_plan(
    small_shards, tmp_path
):
    """scripts/reopen_stable.py: the stable phase of an annealed run is carried on from its
    ``pre_anneal.pt`` in a longer run, at the peak LR past the first run's anneal start, and
    the longer run anneals where its own plan says (a WSD schedule extended after the fact)."""
    import runpy

    run(config(small_shards, tmp_path, "base", *PHASED))
    pre = tmp_path / "base" / "pre_anneal.pt"
    reopen_main = runpy.run_path(str(REPO / "scripts" / "reopen_stable.py"))["main"]
    reopened = tmp_path / "reopened.pt"
    reopen_main([str(pre), str(reopened)])
    longer = (*PHASED[3:], "train.nominal_steps=30", "train.max_steps=30", "train.decay_frac=0.2")
    built = run(config(small_shards, tmp_path, "longer", *longer, f"train.load_path={reopened}"))
    assert built.control.anneal_start == 24 and int(built.trainer.state.timestamp.batch) == 30
    lr = lrs(tmp_path / "longer")
    peak = max(lr.values())
    assert all(lr[s] == pytest.approx(peak) for s in range(13, 25)), "peak LR past batch 12"
    assert lr[30] < 0.1 * peak
    # a checkpoint saved inside the anneal is refused with the file named
    late = tmp_path / "base" / "ep0-ba16-rank0.pt"
    with pytest.raises(SystemExit, match=r"ep0-ba16-rank0.pt: saved at batch 16, after the"):
        reopen_main([str(late), str(tmp_path / "late.pt")])


def test_bad_values_are_refused(small_shards):
    with pytest.raises(ValueError, match="finite"):
        check_phases([[1.0, {"gold": float("inf")}]])
    with pytest.raises(ConfigError, match="data.tier_weights"):
        load_config("yamls/demo.yaml", ["data.tier_weights.silver=.nan"])
    with pytest.raises(ConfigError, match="min_delta must be >= 0"):
        registry.build("callbacks", "best_checkpoint", {"min_delta": -1.0}, _ctx())


def _ctx():
    from stoicheia.train.callbacks.anneal_control import AnnealControl
    from stoicheia.train.schedule import WSDShape

    control = AnnealControl(WSDShape(100, warmup_frac=0.5, decay_frac=0.2), 120)
    return registry.RunContext(
        control, None, "holdout/bits_per_char", Path("."), ".", {"gold": 1.0}, [], 10, 1.0
    )


def test_a_stall_never_starts_the_anneal_inside_the_warmup():
    ctx = _ctx()
    auto = registry.build("callbacks", "auto_anneal", {"min_anneal_frac": 0.0}, ctx)
    assert auto.earliest == 50 == ctx.control.shape.warmup_steps


def test_resuming_past_the_planned_start_without_auto_anneal_anneals_from_now(
    small_shards, tmp_path, monkeypatch, capsys
):
    script_curve(monkeypatch, lambda step: 5.0 - 0.05 * step)  # still improving: extended at 15
    extra = (
        "train.nominal_steps=20",
        "train.max_steps=30",
        "train.decay_frac=0.25",
        "train.save_interval=2",
        "callbacks.auto_anneal.stall_window=4",
        "callbacks.anneal_early_stop.patience=0",
    )
    first = run(config(small_shards, tmp_path, "late", *extra), duration="18ba")
    assert first.plugins["auto_anneal"].extended and not first.control.decided
    built = run(config(small_shards, tmp_path, "late", *extra, "callbacks.auto_anneal=false"))
    assert built.control.anneal_start == 18 and built.control.reason == "planned"
    assert int(built.trainer.state.timestamp.batch) == 23, "a whole decay from the resumed batch"


def test_a_corrupt_complete_marker_is_one_clear_error(small_shards, tmp_path, capsys):
    import runpy

    from omegaconf import OmegaConf

    from stoicheia.config import to_dict

    yaml = tmp_path / "c.yaml"
    OmegaConf.save(OmegaConf.create(to_dict(config(small_shards, tmp_path, "corrupt"))), yaml)
    (tmp_path / "corrupt").mkdir()
    (tmp_path / "corrupt" / "complete.json").write_text('{"step": 6, "rea')
    main = runpy.run_path(str(REPO / "recipes" / "train.py"), run_name="train_recipe")["main"]
    assert main([str(yaml)]) == 2
    err = capsys.readouterr().err
    assert "complete.json is not valid JSON" in err and err.count("\n") == 1


def test_progress_end_moves_to_the_latest_end_once_the_stable_phase_is_extended():
    """`[progress]` counts to the nominal end before the planned anneal start, to the latest
    end (an anneal at the cap) once the stable phase is extended past it, and to the decided
    end after the decision."""
    from stoicheia.train.callbacks.anneal_control import AnnealControl
    from stoicheia.train.callbacks.training_monitor import TrainingMonitor
    from stoicheia.train.schedule import WSDShape

    control = AnnealControl(WSDShape(nominal_steps=100, decay_frac=0.2), max_steps=120)
    control.auto = True
    monitor = TrainingMonitor(control=control)
    assert monitor._end(50) == (100, False)
    assert monitor._end(80) == (100, False)  # the planned start: not yet extended
    assert monitor._end(81) == (120, True)
    control.start_anneal_at(90)
    assert monitor._end(95) == (110, False)
