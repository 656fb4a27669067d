"""The GPU path, checked on a CPU: the compiled attention cache, masks outside the compiled
graph, evaluation batches of one shape, MFU counted per document, the sync-free gradient guard,
one collective per batch, activation checkpointing, and flex checkpoints served by SDPA.

Where the real code takes a ``cuda`` branch, the branch is forced with
``attention._compile_on`` and ``torch.compile`` runs Dynamo with the ``eager`` backend (the
graphs, guards, graph breaks and recompiles are Dynamo's own; only inductor's code generation,
which needs a GPU for FlexAttention, is left out)."""

from __future__ import annotations

import os
import types

import pytest
import torch
import torch.multiprocessing as mp
from test_model import make_batch
from torch._dynamo.utils import counters
from torch.nn.attention.flex_attention import flex_attention

from stoicheia.data.eval_batches import build_eval_batches
from stoicheia.model import attention
from stoicheia.model.config import EncoderConfig
from stoicheia.model.encoder import CharBertEncoder
from stoicheia.model.loss import loss_terms
from stoicheia.model.metrics import BitsPerChar
from stoicheia.train.algorithms.gradient_guard import GradientGuard, TrainingDiverged
from stoicheia.train.flops import (
    attention_pairs,
    batch_flops,
    flops_per_letter,
    matmul_params,
    peak_flops,
)

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


# --- MFU ------------------------------------------------------------------------------------


def test_attention_pairs_count_each_documents_own_length() -> None:
    """Hand counts: a document of 5 letters with half window 2 has 5 + 2 * (4 + 3) = 19 pairs
    (|i - j| <= 2 inside it); globally 25; a document shorter than the window sees itself."""
    lengths = torch.tensor([5.0, 3.0, 1.0, 0.0])
    assert attention_pairs(lengths, None).tolist() == [25.0, 9.0, 1.0, 0.0]
    assert attention_pairs(lengths, 2).tolist() == [19.0, 9.0, 1.0, 0.0]
    brute = [sum(abs(i - j) <= 2 for i in range(n) for j in range(n)) for n in (5, 3, 1, 0)]
    assert attention_pairs(lengths, 2).tolist() == brute


def test_batch_flops_counts_each_document_not_the_packed_row() -> None:
    """A row of two documents (40 and 60 letters) and padding: the attention term is the sum
    over documents of their own pairs (2 global layers, 2 local ones of half window 4), the
    parameter term 6 N per letter; the whole-row count (flops_per_letter at T) is larger."""
    enc = _encoder("sdpa")
    batch = make_batch([[40, "pad:8", 60]], T=128)
    got = float(batch_flops(enc, batch["seg_id"]))
    n = matmul_params(enc)
    pairs = 0.0
    for L in (40, 60):
        glob = L * L
        local = sum(abs(i - j) <= 4 for i in range(L) for j in range(L))
        pairs += 2 * glob + 2 * local
    want = 6.0 * n * 100 + 12.0 * 32 * pairs
    assert got == pytest.approx(want, rel=1e-12)
    assert got / 100 < flops_per_letter(enc, 128)


def test_peak_flops_tells_the_h200_nvl_from_the_sxm() -> None:
    assert peak_flops("NVIDIA H200", "amp_bf16") == 989e12
    assert peak_flops("NVIDIA H200 NVL", "amp_bf16") == 835.5e12
    assert peak_flops("NVIDIA H100 NVL", "amp_bf16") == 835.5e12
    assert peak_flops("NVIDIA H100 80GB HBM3", "amp_bf16") == 989e12


# --- activation checkpointing, SDPA for flex checkpoints off CUDA -------------------------


def test_activation_checkpointing_gives_the_same_loss_and_gradients() -> None:
    batch = make_batch([[40, "pad:8", 60], [150]], T=160)
    plain, ckpt = _encoder("sdpa"), _encoder("sdpa")
    ckpt.activation_checkpointing = True
    plain.train(), ckpt.train()
    la, lb = _step(plain, batch), _step(ckpt, batch)
    assert torch.equal(la, lb)
    for (name, p), q in zip(plain.named_parameters(), ckpt.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-6, atol=1e-7, msg=name)
    # the blocks really were recomputed: the saved activations of the forward are fewer
    saved: list[int] = []
    with torch.autograd.graph.saved_tensors_hooks(
        lambda t: saved.append(t.numel()) or t, lambda t: t
    ):
        loss_terms(ckpt(batch), batch, 0.1)["total"]
    n_ckpt = sum(saved)
    saved.clear()
    with torch.autograd.graph.saved_tensors_hooks(
        lambda t: saved.append(t.numel()) or t, lambda t: t
    ):
        loss_terms(plain(batch), batch, 0.1)["total"]
    assert n_ckpt < sum(saved) / 2


def test_a_flex_checkpoint_runs_sdpa_on_a_cpu() -> None:
    """A model trained with attn_impl: flex is loaded with SDPA off CUDA (not FlexAttention's
    reference path) and gives the same logits."""
    from stoicheia.inference.loading import _build

    flex = _encoder("flex").eval()
    loaded = _build(flex.cfg, flex.state_dict(), "test", torch.device("cpu"))
    assert loaded.cfg.attn_impl == "sdpa" and flex.cfg.attn_impl == "flex"
    batch = make_batch([[40, "pad:8", 60], [150]], T=160)
    real = batch["seg_id"] != 0
    with torch.no_grad():
        a, b = flex(batch), loaded(batch)
    for k in a:
        torch.testing.assert_close(a[k][real], b[k][real], atol=1e-5, rtol=1e-4)


def test_inference_uses_sdpa_on_cuda_too() -> None:
    """FlexAttention on CUDA compiles per row length; inference rows have every length, so a
    flex-trained model is served by SDPA on CUDA as well (training keeps flex)."""
    from stoicheia.inference.loading import attention_for

    flex = EncoderConfig(**CFG, attn_impl="flex")  # type: ignore[arg-type]
    for device in ("cuda", "cpu"):
        assert attention_for(flex, torch.device(device)).attn_impl == "sdpa"
    sdpa = EncoderConfig(**CFG, attn_impl="sdpa")  # type: ignore[arg-type]
    assert attention_for(sdpa, torch.device("cuda")) == sdpa


# --- no host-device sync per step -------------------------------------------------------------


def _guard_state(model: torch.nn.Module, opt: torch.optim.Optimizer, batch: int):
    return types.SimpleNamespace(
        model=model, optimizers=[opt], timestamp=types.SimpleNamespace(batch=batch)
    )


def test_gradient_guard_with_fused_adamw_skips_on_the_device_and_clips() -> None:
    """With a fused AdamW the guard hands the skip to the kernel (found_inf): a non-finite
    gradient leaves weights, moments and step count as they were; a finite one is clipped to
    clip_norm; the counters are read only every log_every batches, and a run of skips stops
    the run at such a read."""
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4)
    opt = torch.optim.AdamW(model.parameters(), lr=0.1, fused=True)
    guard = GradientGuard(clip_norm=0.5, max_consec_skips=3, log_every=2)

    def backward(scale: float) -> None:
        model.zero_grad(set_to_none=True)
        (model(torch.ones(2, 8)).sum() * scale).backward()

    backward(100.0)  # batch 1: a large finite gradient, clipped to norm 0.5
    guard.apply(None, _guard_state(model, opt, 1), None)
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()]))
    assert float(norm) == pytest.approx(0.5, rel=1e-4)
    opt.step()
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    moments = {k: {n: t.clone() for n, t in s.items()} for k, s in opt.state.items()}
    for batch in (2, 3):
        backward(float("nan"))
        guard.apply(None, _guard_state(model, opt, batch), None)
        assert float(opt.found_inf) == 1.0
        opt.step()
        for k, v in model.state_dict().items():
            assert torch.equal(v, weights[k]), k
        for k, s in opt.state.items():
            for n, t in s.items():
                assert torch.equal(t, moments[k][n]), (n, t, moments[k][n])
        if batch == 2:  # a read at batch 2 (log_every): one skip so far
            assert (guard.skipped, guard.consecutive) == (1, 1)
    assert (guard.skipped, guard.consecutive) == (1, 1)  # batch 3: nothing read
    backward(float("nan"))
    with pytest.raises(TrainingDiverged, match="3 consecutive"):
        guard.apply(None, _guard_state(model, opt, 4), None)
    assert guard.skipped == 3


def test_training_monitor_reads_the_device_only_at_logged_batches() -> None:
    from stoicheia.train.callbacks.training_monitor import TrainingMonitor

    model = types.SimpleNamespace(encoder=_encoder("sdpa"), last_loss_terms={})
    logged: list[dict] = []
    logger = types.SimpleNamespace(log_metrics=logged.append)
    mon = TrainingMonitor(log_every=3, every_step=False)
    batch = make_batch([[40, "pad:8", 60]], T=128)
    state = types.SimpleNamespace(
        model=model,
        batch=batch,
        timestamp=types.SimpleNamespace(batch=0),
        optimizers=[types.SimpleNamespace(param_groups=[{"lr": 1e-3}])],
        device=types.SimpleNamespace(type="cpu"),
        precision="fp32",
    )
    mon.fit_start(state, logger)
    for step in range(1, 8):
        mon.batch_start(state, logger)
        for micro in range(2):
            model.last_loss_terms = {"total": torch.tensor(float(step + micro))}
            mon.after_loss(state, logger)
        state.timestamp.batch = step
        mon.batch_end(state, logger)
    assert mon.syncs == 3 and len(logged) == 3  # batches 1, 3, 6
    # means over the micro-batches since the last logged batch: (2+3+3+4)/4, (4+5+5+6+6+7)/6
    assert [r["loss/total"] for r in logged] == [1.5, 3.0, 5.5]
    assert logged[-1]["throughput/flops_per_letter"] == pytest.approx(
        float(batch_flops(model.encoder, batch["seg_id"])) / 100
    )


def test_letters_per_second_compute_only_and_wall(monkeypatch) -> None:
    """letters/s (and MFU) of the compute alone, and of the wall time that includes getting
    the batch from the loader; the loader's share of the wall time."""
    from stoicheia.train.callbacks import training_monitor
    from stoicheia.train.callbacks.training_monitor import TrainingMonitor

    # per batch: fetch begins, batch starts, batch ends (read twice: speed and ETA)
    clock = iter([10.0, 10.5, 11.5, 11.5, 12.0, 12.25, 13.25, 13.25])
    monkeypatch.setattr(training_monitor.time, "perf_counter", lambda: next(clock))
    model = types.SimpleNamespace(encoder=_encoder("sdpa"), last_loss_terms={})
    logged: list[dict] = []
    mon = TrainingMonitor(log_every=2, every_step=False)
    batch = make_batch([[40, "pad:8", 60]], T=128)  # 100 letters
    state = types.SimpleNamespace(
        model=model,
        batch=batch,
        outputs=None,
        timestamp=types.SimpleNamespace(batch=0),
        optimizers=[types.SimpleNamespace(param_groups=[{"lr": 1e-3}])],
        device=types.SimpleNamespace(type="cpu"),
        precision="fp32",
        train_metrics={},
    )
    logger = types.SimpleNamespace(log_metrics=logged.append)
    mon.fit_start(state, logger)
    mon._peak = 1e9  # as on a GPU with a known peak
    for step in (1, 2):
        mon.before_dataloader(state, logger)
        mon.batch_start(state, logger)
        state.timestamp.batch = step
        mon.batch_end(state, logger)
    last = logged[-1]  # two batches: 200 letters, 2 s of compute, 2.75 s of wall time
    assert last["throughput/letters_per_sec"] == pytest.approx(100.0)
    assert last["throughput/letters_per_sec_wall"] == pytest.approx(200 / 2.75)
    assert last["throughput/loader_share"] == pytest.approx(0.75 / 2.75)
    assert last["throughput/mfu"] / last["throughput/mfu_wall"] == pytest.approx(2.75 / 2)


def test_train_bits_per_char_only_on_logged_batches(monkeypatch) -> None:
    """Composer's train metric (an update per micro-batch, a compute and all-gather per batch)
    is replaced by the monitor's: the char cross-entropy of the logged batches only, read in the
    monitor's one sync."""
    from stoicheia.train.callbacks import training_monitor
    from stoicheia.train.callbacks.training_monitor import TrainingMonitor

    ces = []
    real_ce = training_monitor.F.cross_entropy
    counting = types.SimpleNamespace(
        cross_entropy=lambda *a, **k: ces.append(1) or real_ce(*a, **k)
    )
    monkeypatch.setattr(training_monitor, "F", counting)
    enc = _encoder("sdpa")
    model = types.SimpleNamespace(encoder=enc, last_loss_terms={})
    logged: list[dict] = []
    logger = types.SimpleNamespace(log_metrics=logged.append)
    mon = TrainingMonitor(log_every=3, every_step=False)
    batch = make_batch([[40, "pad:8", 60]], T=128)
    batch["tgt_chars"] = torch.where(batch["pos"] % 3 == 0, batch["chars"] % 24, -100)
    state = types.SimpleNamespace(
        model=model,
        batch=batch,
        outputs=None,
        timestamp=types.SimpleNamespace(batch=0),
        optimizers=[types.SimpleNamespace(param_groups=[{"lr": 1e-3}])],
        device=types.SimpleNamespace(type="cpu"),
        precision="fp32",
        train_metrics={"bits_per_char": BitsPerChar()},
    )
    mon.fit_start(state, logger)
    assert state.train_metrics == {}  # Composer computes no train metric per batch
    expected = []
    for step in range(1, 8):
        mon.batch_start(state, logger)
        torch.manual_seed(step)
        metric = BitsPerChar()
        for _ in range(2):
            state.outputs = {"char": torch.randn(1, 128, 27)}
            metric.update(state.outputs["char"], batch["tgt_chars"])
            mon.after_forward(state, logger)
            model.last_loss_terms = {"total": torch.tensor(1.0)}
            mon.after_loss(state, logger)
        if step in (1, 3, 6):
            expected.append(float(metric.compute()))
        state.timestamp.batch = step
        mon.batch_end(state, logger)
    assert len(ces) == 6  # 2 micro-batches x logged batches 1, 3, 6
    assert mon.syncs == 3
    assert [r["metrics/train/bits_per_char"] for r in logged] == pytest.approx(expected)


def _flag_worker(rank: int, init: str, out: str) -> None:
    import json
    import signal

    import torch.distributed as tdist

    from stoicheia.data.loader import PackedLoader
    from stoicheia.train.callbacks.preemption import Preemption

    # Composer reads the job's shape from the environment; an earlier test in the same
    # pytest process may have left WORLD_SIZE=1 there, which the spawned ranks inherit.
    for name in ("LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT"):
        os.environ.pop(name, None)
    os.environ.update(WORLD_SIZE="2", RANK=str(rank), LOCAL_RANK=str(rank))
    tdist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    loader = types.SimpleNamespace(
        signal_source=None, agreed_signal=0, collectives=0, flag_group=None
    )
    plugin = Preemption(control=types.SimpleNamespace(complete=False), loader=loader)
    if rank == 1:
        plugin.request(signal.SIGTERM)
    done = PackedLoader._all_ranks_done(loader, rank == 0)  # one rank has data left
    state = types.SimpleNamespace(device=types.SimpleNamespace(tensor_to_device=lambda t: t))
    merged = plugin._agreed_flag(state)  # the loader's collective carried it
    own_before = plugin.own_collectives
    alone = plugin._agreed_flag(state)  # no loader collective for this batch: its own
    result = dict(
        done=done,
        agreed=loader.agreed_signal,
        collectives=loader.collectives,
        merged=merged,
        own_before=own_before,
        alone=alone,
        own_after=plugin.own_collectives,
    )
    with open(f"{out}.{rank}", "w") as f:
        json.dump(result, f)
    # leave without destroying the gloo group: in torch 2.7 its destructor joins gloo's worker
    # thread while holding the GIL, and that thread may be waiting for the GIL to free a
    # finished collective's tensor (a deadlock seen once here, in a full test run); the
    # test checks the flags above, not the teardown
    os._exit(0)


def test_loader_and_preemption_flags_share_one_collective(tmp_path) -> None:
    import json

    init = f"file://{tmp_path / 'rendezvous'}"
    mp.spawn(_flag_worker, args=(init, str(tmp_path / "out")), nprocs=2, join=True)
    for rank in (0, 1):
        r = json.loads((tmp_path / f"out.{rank}").read_text())
        assert r == dict(
            done=False,
            agreed=15,
            collectives=1,
            merged=15,
            own_before=0,
            alone=15,
            own_after=1,
        ), (rank, r)


def test_restoration_example_runs_in_the_run_precision_and_the_eval_shape(monkeypatch) -> None:
    """The example's forward runs like an evaluation batch: the run's precision context (on a
    GPU bf16 autocast; outside it the compiled trunk would be compiled again in fp32), no
    gradients, eval mode and the evaluation batches' shape."""
    import contextlib

    from stoicheia.model import StoicheiaModel
    from stoicheia.text.encode import encode_text
    from stoicheia.train.callbacks import restoration_example
    from stoicheia.train.callbacks.restoration_example import RestorationExample

    inside: list[bool] = []
    asked: list[tuple] = []

    @contextlib.contextmanager
    def precision_context(precision, config):
        asked.append((precision, config))
        inside.append(True)
        try:
            yield
        finally:
            inside.pop()

    monkeypatch.setattr(restoration_example, "get_precision_context", precision_context)
    torch.manual_seed(0)
    model = StoicheiaModel(EncoderConfig(**CFG, attn_impl="sdpa"))  # type: ignore[arg-type]
    seen: list[tuple] = []
    model.encoder.register_forward_pre_hook(
        lambda mod, args: seen.append(
            (bool(inside), torch.is_grad_enabled(), mod.training, tuple(args[0]["chars"].shape))
        )
    )
    planes = encode_text("καὶ τότε δὴ ἀνθρώποισι λόγος ἐγένετο", strict=True).planes
    cb = RestorationExample([planes])
    cb.shape = (2, 64)  # what eval_batch_start saw
    logged: list[dict] = []
    state = types.SimpleNamespace(model=model, precision="amp_bf16", precision_config=None)
    cb.eval_after_all(state, types.SimpleNamespace(log_metrics=logged.append))
    assert asked == [("amp_bf16", None)]
    assert seen and all(s == (True, False, False, (2, 64)) for s in seen)
    assert model.training and "eval/example_letters_correct" in logged[0]
