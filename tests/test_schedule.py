"""WSD schedule shape and the checkpointed anneal start."""

from __future__ import annotations

import math

import pytest

from stoicheia.train.callbacks.anneal_control import AnnealControl
from stoicheia.train.schedule import WSDShape


def test_wsd_shape_warmup_peak_decay_floor():
    s = WSDShape(nominal_steps=1000, warmup_frac=0.04, decay_frac=0.2, final_lr_frac=0.02)
    assert s.warmup_steps == 40 and s.decay_steps == 200 and s.planned_anneal_start == 800
    assert s.multiplier(0) == pytest.approx(1 / 40)
    assert s.multiplier(19) == pytest.approx(20 / 40)
    assert s.multiplier(40) == 1.0 and s.multiplier(799) == 1.0
    assert s.multiplier(800) == pytest.approx(1.0)
    assert s.multiplier(900) == pytest.approx(0.02 + 0.98 * 0.5)
    assert s.multiplier(1000) == pytest.approx(0.02)
    assert s.multiplier(5000) == pytest.approx(0.02)
    values = [s.multiplier(b) for b in range(800, 1001)]
    assert all(a >= b for a, b in zip(values, values[1:], strict=False)), "the decay is monotone"


def test_moved_anneal_start_shifts_the_decay():
    s = WSDShape(nominal_steps=1000)
    assert s.multiplier(500, anneal_start=500) == pytest.approx(1.0)
    assert s.multiplier(600, anneal_start=500) == pytest.approx(
        0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * 0.5))
    )
    assert s.multiplier(900, anneal_start=950) == 1.0


def test_anneal_control_state_round_trip():
    c = AnnealControl(WSDShape(nominal_steps=1000), 1000)
    assert c.effective_start == 800 and c.anneal_end == 1000
    c.start_anneal_at(650)
    c.complete = True
    d = AnnealControl(WSDShape(nominal_steps=1000), 1000)
    d.load_state_dict(c.state_dict())
    assert d.effective_start == 650 and d.anneal_end == 850 and d.complete
    assert all(isinstance(v, (int, bool, type(None))) for v in c.state_dict().values())
