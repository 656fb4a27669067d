"""The GPU path, checked on a CPU: the compiled attention cache, masks outside the compiled
graph, evaluation batches of one shape, MFU counted per document, the sync-free gradient guard,
one collective per batch, activation checkpointing, and flex checkpoints served by SDPA.

Where the real code takes a ``cuda`` branch, the branch is forced with
``attention._compile_on`` and ``torch.compile`` runs Dynamo with the ``eager`` backend (the
graphs, guards, graph breaks and recompiles are Dynamo's own; only inductor's code generation,
which needs a GPU for FlexAttention, is left out)."""

from __future__ import annotations

import math
import types

import pytest
import torch
import torch.multiprocessing as mp
from torch._dynamo.utils import counters
from torch.nn.attention.flex_attention import flex_attention

from stoicheia.data.eval_batches import build_eval_batches
from stoicheia.model import attention
from stoicheia.model.composer_model import StoicheiaModel, loss_terms
from stoicheia.model.config import EncoderConfig
from stoicheia.model.encoder import CharBertEncoder
from stoicheia.model.metrics import BitsPerChar
from stoicheia.train.algorithms.gradient_guard import GradientGuard, TrainingDiverged
from stoicheia.train.flops import (
    attention_pairs,
    batch_flops,
    flops_per_letter,
    matmul_params,
    peak_flops,
)
from test_model import make_batch

CFG = dict(d_model=32, n_heads=2, n_layers=4, global_every=2, char_window=8, init_std=0.1)


def _encoder(impl: str = "flex", seed: int = 0) -> CharBertEncoder:
    torch.manual_seed(seed)
    return CharBertEncoder(EncoderConfig(**CFG, attn_impl=impl))  # type: ignore[arg-type]


@pytest.fixture
def gpu_branch(monkeypatch):
    """Take the GPU branches of stoicheia.model.attention on a CPU; every torch.compile runs
    Dynamo with the eager backend. Returns the list of functions torch.compile was given."""
    compiled: list = []
    real = torch.compile

    def compile_eager(fn=None, **kw):
        compiled.append(fn)
        kw["backend"] = "eager"
        return real(fn, **kw)

    monkeypatch.setattr(attention, "_compile_on", lambda t: True)
    monkeypatch.setattr(attention, "_compiled_flex", None)
    monkeypatch.setattr(attention, "_compiled_block_mask", None)
    monkeypatch.setattr(torch, "compile", compile_eager)
    torch._dynamo.reset()
    counters.clear()
    yield compiled
    torch._dynamo.reset()


def _step(enc: CharBertEncoder, batch: dict) -> torch.Tensor:
    enc.zero_grad(set_to_none=True)
    loss = loss_terms(enc(batch), batch, 0.1)["total"]
    loss.backward()
    return loss.detach()


def test_a_compiled_step_never_caches_the_uncompiled_flex_attention(gpu_branch):
    """Inside the compiled trunk, flex_attention is traced into the graph and the module's
    cache stays empty; the first uncompiled call afterwards (evaluation, inference) caches a
    torch.compile'd FlexAttention, never the raw function (whose reference path builds the full
    (B, H, T, T) scores), and reuses it."""
    batch = make_batch([[40, "pad:8", 60], [150]], T=160)
    enc = _encoder()
    enc.compile_trunk(backend="eager")
    _step(enc, batch)
    _step(enc, batch)
    assert attention._compiled_flex is None
    plain = _encoder()
    plain.load_state_dict(enc.state_dict())
    with torch.no_grad():
        out = plain(batch)
    cached = attention._compiled_flex
    assert cached is not None and cached is not flex_attention
    assert gpu_branch.count(flex_attention) == 1
    with torch.no_grad():
        plain(batch)
    assert attention._compiled_flex is cached and gpu_branch.count(flex_attention) == 1
    sdpa = _encoder("sdpa")
    sdpa.load_state_dict(enc.state_dict())
    real = batch["seg_id"] != 0
    with torch.no_grad():
        want = sdpa(batch)
    torch.testing.assert_close(out["char"][real], want["char"][real], atol=1e-5, rtol=1e-4)


def test_block_masks_are_built_outside_the_compiled_trunk(gpu_branch, monkeypatch):
    """The masks are built before the compiled trunk (never while Dynamo traces), by their
    own compiled function; the trunk has no graph break, and training steps on new rows reuse
    one graph (a no_grad evaluation of the same shape adds exactly one)."""
    seen: list[bool] = []
    make = attention.make_mask_mod

    def spy(seg, hw):
        seen.append(torch.compiler.is_compiling())
        return make(seg, hw)

    monkeypatch.setattr(attention, "make_mask_mod", spy)
    enc = _encoder()
    enc.compile_trunk(backend="eager")
    for seed in range(3):  # new rows (other documents) of one shape: no recompile
        _step(enc, make_batch([[30, 50 + seed * 10], [100 - seed * 20, 20]], T=128, seed=seed))
    with torch.no_grad():
        enc(make_batch([[70], [10, 10]], T=128, seed=9))
    assert seen and not any(seen)  # 2 masks (local, global) per forward, all outside
    assert len(seen) == 2 * 4
    assert dict(counters["graph_break"]) == {}
    assert any(getattr(f, "__name__", "") == "create_block_mask" for f in gpu_branch)
    trunk = enc._compiled_trunk
    frames = torch._dynamo.eval_frame._debug_get_cache_entry_list(trunk._torchdynamo_orig_callable)
    assert len(frames) == 2  # training and no_grad evaluation


def test_evaluation_batches_have_the_training_shape_and_padding_scores_nothing() -> None:
    """pad_last fills the last evaluation batch with all-padding rows: every batch is
    (rows, T), and the metrics over the batches are those of the unpadded batches."""
    from stoicheia.text.encode import text_to_planes

    line = "μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχιλῆος οὐλομένην ἣ μυρί᾽ Ἀχαιοῖς ἄλγε᾽ ἔθηκε "
    records = [text_to_planes(line * k)[0] for k in (1, 2, 1, 3, 1)]
    plain = build_eval_batches(records, 128, 16, 0.3, 1)
    padded = build_eval_batches(records, 128, 16, 0.3, 1, pad_last=True)
    assert 1 < plain[-1]["seg_id"].shape[0] < 16
    assert {tuple(b["seg_id"].shape) for b in padded} == {(16, 128)}
    enc = _encoder("sdpa")
    results = []
    for batches in (plain, padded):
        metric = BitsPerChar()
        with torch.no_grad():
            for b in batches:
                metric.update(enc(b)["char"], b["tgt_chars"])
        results.append(float(metric.compute()))
    assert results[0] == pytest.approx(results[1], rel=1e-6)
