"""YAML + override loading against the typed schema."""

from __future__ import annotations

from pathlib import Path

import pytest

from stoicheia.config import ConfigError, load_config

YAMLS = Path(__file__).resolve().parents[1] / "yamls"


def test_shipped_configs_load():
    demo = load_config(YAMLS / "demo.yaml")
    full = load_config(YAMLS / "stoicheia.yaml")
    assert (
        full.model.d_model == 1024 and full.model.n_layers == 32 and full.model.char_window == 256
    )
    assert (
        full.data.seq_len == 8192
        and full.train.micro_batch_rows == 4
        and full.train.global_batch_rows == 64
    )
    assert full.train.nominal_steps == 120_000 and full.train.max_steps == 160_000
    assert full.data.tier_weights == {"gold": 0.987, "silver": 0.004, "bronze": 0.009}
    assert full.train.save_interval == 2000 and full.data.eval_records == 256
    assert demo.data.tier_weights == {"gold": 0.76, "silver": 0.04, "bronze": 0.2}


def test_every_shipped_yaml_validates_and_the_cpu_runs_share_the_sweep_shape():
    """Every YAML in yamls/ loads and validates; the CPU runs sized by benchmarks/demo_sweep.py
    keep its shape: max_steps = 1.2 x nominal batches, a checkpoint + evaluation every
    nominal / 20 batches (24 in the longest run)."""
    from stoicheia.config import validate

    for path in sorted(YAMLS.glob("*.yaml")):
        validate(load_config(path), str(path))
    for name in ("demo.yaml", "base.yaml"):
        t = load_config(YAMLS / name).train
        assert t.max_steps == int(1.2 * t.nominal_steps), name
        assert t.save_interval == t.nominal_steps // 20, name


def test_overrides_apply_with_types():
    cfg = load_config(YAMLS / "demo.yaml", ["train.lr=1e-3", "data.seq_len=256", "noise.t_min=0.1"])
    assert cfg.train.lr == 1e-3 and cfg.data.seq_len == 256 and cfg.noise.t_min == 0.1


@pytest.mark.parametrize(
    "override, expected",
    [
        ("train.lrr=1", "did you mean 'train.lr'"),
        ("model.d_modl=64", "did you mean 'model.d_model'"),
        ("dat.seq_len=5", "did you mean 'data'"),
        ("train.lr=abc", "train.lr"),
        ("model.n_heads=5", "n_heads"),
        ("train.max_steps=10", "train.max_steps"),
        ("noise.weights.spam=1", "spam"),
    ],
)
def test_bad_keys_and_values_name_the_key(override, expected):
    with pytest.raises(ConfigError, match=expected.replace(".", r"\.").replace("(", r"\(")):
        load_config(YAMLS / "demo.yaml", [override])


def test_typo_in_yaml_file_names_file_and_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("run_name: x\ntrain:\n  warmup_fraction: 0.1\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml.*train\.warmup_fraction.*train\.warmup_frac"):
        load_config(bad)


def test_missing_file_and_broken_yaml(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("train: [1, 2\n")
    with pytest.raises(ConfigError, match="cannot parse YAML"):
        load_config(broken)


def test_a_value_out_of_range_names_where_it_was_given(tmp_path):
    """A value the checks refuse is blamed on the command line when the command line gave it,
    on the YAML file when the file did (the demo's file was blamed for `train.max_steps=4`)."""
    with pytest.raises(ConfigError) as err:
        load_config(YAMLS / "demo.yaml", ["train.max_steps=4"])
    assert str(err.value).startswith("command line: train.max_steps: (4)")
    assert "train.nominal_steps=N train.max_steps=N" in str(err.value)
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        (YAMLS / "demo.yaml").read_text().replace("  max_steps: 1510", "  max_steps: 4", 1)
    )
    with pytest.raises(ConfigError, match=r"^.*mine\.yaml: train\.max_steps: \(4\)"):
        load_config(mine, ["train.lr=1e-3"])
