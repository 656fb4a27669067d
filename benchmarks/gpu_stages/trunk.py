"""Stage ``trunk_N``: the full-width encoder trunk compiled and trained for a few steps, then its
``no_grad`` evaluation graph. Torch only: the training step is the one Composer runs for
``yamls/stoicheia.yaml`` (bf16 autocast for forward and loss, backward, gradient clipping,
fused AdamW), without Composer.

Figures, each written as soon as it is measured:

* compile seconds per graph (``first_call_s_*``: the block masks, the trunk's forward and
  backward graphs, the first clipping and optimizer step; the first call of each,
  synchronised, so each includes one run); Dynamo's graphs, graph breaks and recompiles;
* over the steady steps (after one warm-up step) the step time three ways: wall (host clock;
  what a run gets), GPU span (CUDA events around each step; host stalls inside a step count,
  gaps between steps do not) and kernel time (the profiler's sum), with model FLOPs per step
  (:func:`stoicheia.train.flops.batch_flops`) the MFU of each;
* peak memory; host syncs per step (``torch.cuda.set_sync_debug_mode("warn")`` during the
  steady steps, each warning counted, the first places named);
* the profiler's kernel table (:mod:`.kernels`);
* the evaluation graph's compile seconds, step time and the graphs it added.
"""

from __future__ import annotations

import contextlib
import logging
import statistics
import time
import warnings
from typing import Any

from .core import on_gpu
from .kernels import kernel_table
from .record import Recorder
from .rows import random_rows, to_device
from .shapes import CPU_SHAPE, GPU_SHAPE, RunShape


class _Recompiles(logging.Handler):
    """Counts Dynamo's ``Recompiling function`` log records (the ``recompiles`` artifact)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.reasons: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if "Recompiling function" in msg:
            self.reasons.append(msg.strip().splitlines()[0][:300])


def _dynamo_watch() -> _Recompiles:
    import torch

    torch._logging.set_logs(recompiles=True)
    handler = _Recompiles()
    for name in ("torch._dynamo", "torch"):
        logging.getLogger(name).addHandler(handler)
    return handler


def _dynamo_figures(handler: _Recompiles) -> dict[str, Any]:
    from torch._dynamo.utils import counters

    return {
        "graph_breaks": sum(counters["graph_break"].values()),
        "graph_break_reasons": sorted(counters["graph_break"])[:10],
        "graphs": int(counters["stats"]["unique_graphs"]),
        "recompiles": len(handler.reasons),
        "recompile_reasons": handler.reasons[:10],
    }


class _SyncCounter:
    """Counts host-device synchronisations while active: ``torch.cuda.set_sync_debug_mode``
    warns at each, and the warnings are recorded (not shown). On a CPU there is nothing to
    count (``count`` stays ``None``)."""

    def __init__(self, gpu: bool) -> None:
        self.gpu = gpu
        self.count: int | None = None
        self.places: dict[str, int] = {}

    @contextlib.contextmanager
    def active(self):
        import torch

        if not self.gpu:
            yield self
            return
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                yield self
            finally:
                torch.cuda.set_sync_debug_mode("default")
        syncs = [w for w in caught if "synchroniz" in str(w.message).lower()]
        self.count = len(syncs)
        for w in syncs:
            place = f"{w.filename}:{w.lineno}"
            self.places[place] = self.places.get(place, 0) + 1


def _sync(gpu: bool) -> None:
    import torch

    if gpu:
        torch.cuda.synchronize()


def stage_trunk(rec: Recorder, dry_run: bool, n_layers: int, steps: int) -> bool:
    """Run the trunk stage for ``n_layers`` blocks (GPU shape; on a CPU the tiny shape with
    ``max(2, n_layers // 8)`` blocks) and ``steps`` training steps (at least 4). Returns
    whether it passed: no graph break, and the evaluation added at most one graph."""
    import torch

    gpu = on_gpu(dry_run)
    shape = GPU_SHAPE.with_layers(n_layers) if gpu else CPU_SHAPE.with_layers(max(2, n_layers // 8))
    steps = max(4, steps)
    rec.put("shape", {**shape.model, "rows": shape.rows, "seq_len": shape.seq_len})
    try:
        return _run(rec, gpu, shape, steps, checkpointing=False)
    except torch.cuda.OutOfMemoryError as err:
        rec.put("out_of_memory", str(err).splitlines()[0][:300])
    # the full model without activation checkpointing needs about 85 GiB: a smaller card
    # trains it with recomputed blocks (train.activation_checkpointing), measured so
    torch._dynamo.reset()
    torch.cuda.empty_cache()
    return _run(rec, gpu, shape, steps, checkpointing=True)


def _run(rec: Recorder, gpu: bool, shape: RunShape, steps: int, checkpointing: bool) -> bool:
    import torch
    from torch._dynamo.utils import counters

    from stoicheia.model.attention import build_masks
    from stoicheia.model.config import EncoderConfig
    from stoicheia.model.encoder import CharBertEncoder
    from stoicheia.model.loss import loss_terms
    from stoicheia.model.optim import param_groups
    from stoicheia.train.flops import batch_flops, matmul_params, peak_flops

    dev = torch.device("cuda" if gpu else "cpu")
    if gpu:
        torch.backends.cuda.matmul.allow_tf32 = True  # as the recipe on a GPU
    rec.put("activation_checkpointing", checkpointing)
    torch.manual_seed(0)
    enc = CharBertEncoder(EncoderConfig(**shape.model)).to(dev)
    enc.activation_checkpointing = checkpointing
    rec.put("parameters", sum(p.numel() for p in enc.parameters()))
    rec.put("matmul_parameters", matmul_params(enc))
    opt = torch.optim.AdamW(
        param_groups(enc, shape.weight_decay), lr=shape.lr, betas=shape.betas, fused=gpu
    )
    torch._dynamo.reset()
    counters.clear()
    watch = _dynamo_watch()
    # on a CPU Dynamo traces with the eager backend: the graphs, breaks and recompiles are
    # checked, inductor's CPU code generation (minutes) is not run
    enc.compile_trunk(**({} if gpu else {"backend": "eager"}))
    rec.put("compiler", "inductor" if gpu else "Dynamo, eager backend (CPU)")
    autocast = (
        (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if gpu else contextlib.nullcontext
    )
    host = [random_rows(shape.rows, shape.seq_len, seed=s, max_doc=shape.max_doc) for s in range(3)]
    flops = [float(batch_flops(enc, b["seg_id"])) for b in host]
    letters = [int((b["seg_id"] != 0).sum()) for b in host]

    def forward_loss(batch: dict[str, torch.Tensor]) -> torch.Tensor:
        with autocast():
            return loss_terms(enc(batch), batch, shape.aux_weight)["total"]

    def clip_and_step() -> None:
        torch.nn.utils.clip_grad_norm_(enc.parameters(), shape.clip_norm)
        opt.step()
        opt.zero_grad(set_to_none=True)

    def finish(loss: torch.Tensor) -> None:
        loss.backward()
        clip_and_step()

    if gpu:
        torch.cuda.reset_peak_memory_stats()
    # the first step, phase by phase: each first call compiles its graph
    first = to_device(host[0], dev)
    flags = [enc.cfg.is_global(i) for i in range(enc.cfg.n_layers)]
    state: dict[str, Any] = {}

    def phase(name: str, run: Any) -> None:
        """Run one phase of the first step, synchronised; its seconds recorded at once (a
        stage killed in a long compile keeps the phases before)."""
        t0 = time.perf_counter()
        run()
        _sync(gpu)
        rec.put(f"first_call_s_{name}", time.perf_counter() - t0)

    phase(
        "block_masks",
        lambda: build_masks(
            first["seg_id"], enc.cfg.char_window // 2, enc.cfg.attn_impl, not all(flags), any(flags)
        ),
    )
    phase("trunk_forward", lambda: state.update(loss=forward_loss(first)))
    phase("trunk_backward", lambda: state["loss"].backward())
    phase("clip_and_optimizer", clip_and_step)
    loss = state.pop("loss")
    rec.put("first_loss", float(loss))
    rec.put("train_dynamo", _dynamo_figures(watch))
    # one warm-up step, then the steady steps
    finish(forward_loss(to_device(host[1], dev)))
    _sync(gpu)
    n = steps - 2
    order = [k % len(host) for k in range(n)]
    syncs = _SyncCounter(gpu)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)] if gpu else []
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)] if gpu else []
    t0 = time.perf_counter()
    with syncs.active():  # (the synchronisation after the loop is the check's, not counted)
        for k, i in enumerate(order):
            if gpu:
                starts[k].record()
            finish(forward_loss(to_device(host[i], dev)))
            if gpu:
                ends[k].record()
    _sync(gpu)
    wall = (time.perf_counter() - t0) / n
    fl = statistics.mean(flops[i] for i in order)
    lt = statistics.mean(letters[i] for i in order)
    peak = peak_flops(torch.cuda.get_device_name(), "amp_bf16") if gpu else None
    timing: dict[str, Any] = {
        "steady_steps": n,
        "step_s_wall": wall,
        "letters_per_s_wall": lt / wall,
        "model_tflop_per_step": fl / 1e12,
    }
    if gpu:
        span = statistics.mean(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)) / 1e3
        timing |= {"step_s_gpu_span": span, "letters_per_s_gpu_span": lt / span}
        if peak:
            timing |= {"mfu_wall": fl / wall / peak, "mfu_gpu_span": fl / span / peak}
    rec.update(timing)
    rec.put(
        "host_syncs_per_step",
        None if syncs.count is None else syncs.count / n,
    )
    if syncs.places:
        rec.put("host_sync_places", dict(sorted(syncs.places.items(), key=lambda kv: -kv[1])[:5]))
    if gpu:
        rec.put(
            "peak_memory_gib",
            {
                "allocated": torch.cuda.max_memory_allocated() / 2**30,
                "reserved": torch.cuda.max_memory_reserved() / 2**30,
            },
        )
    _profile(rec, gpu, lambda i: finish(forward_loss(to_device(host[i], dev))), fl, peak)
    ok = _evaluate(rec, gpu, enc, shape, autocast, watch)
    rec.put("all_dynamo", _dynamo_figures(watch))
    return ok and _dynamo_figures(watch)["graph_breaks"] == 0


def _profile(rec: Recorder, gpu: bool, step: Any, flops: float, peak: float | None) -> None:
    """Two steps under the profiler: the kernel table and the MFU of kernel time."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    with profile(activities=acts) as prof:
        for i in range(2):
            step(i)
        _sync(gpu)
    table = kernel_table(prof, steps=2, device=gpu)
    rec.put("kernel_table", table["kernel_table"])
    rec.put("kernel_ms_per_step", table["kernel_ms_per_step"])
    if gpu and peak and table["kernel_ms_per_step"]:
        rec.put("mfu_kernels", flops / (table["kernel_ms_per_step"] / 1e3) / peak)


def _evaluate(rec: Recorder, gpu: bool, enc: Any, shape: RunShape, autocast: Any, watch) -> bool:
    """The ``no_grad`` evaluation graph: first call (its compile), then steady calls; the
    graphs it added (one expected) and its host syncs."""
    import torch
    from torch._dynamo.utils import counters

    before = int(counters["stats"]["unique_graphs"])
    recompiles = len(watch.reasons)
    host = random_rows(shape.eval_rows, shape.seq_len, seed=100, max_doc=shape.max_doc)
    letters = int((host["seg_id"] != 0).sum())
    enc.eval()
    times = []
    syncs = _SyncCounter(gpu)
    with torch.no_grad():
        for k in range(4):
            batch = to_device(host, torch.device("cuda" if gpu else "cpu"))
            _sync(gpu)
            t0 = time.perf_counter()
            with syncs.active() if k == 3 else contextlib.nullcontext(), autocast():
                enc(batch)
            _sync(gpu)
            times.append(time.perf_counter() - t0)
            if k == 0:
                rec.put("eval_first_call_s", times[0])
    enc.train()
    steady = statistics.median(times[1:])
    added = int(counters["stats"]["unique_graphs"]) - before
    rec.update(
        {
            "eval_rows_x_T": [shape.eval_rows, shape.seq_len],
            "eval_step_s": steady,
            "eval_letters_per_s": letters / steady,
            "eval_graphs_added": added,
            "eval_recompiles": len(watch.reasons) - recompiles,
            "eval_host_syncs_per_call": syncs.count,
        }
    )
    if gpu:
        rec.put("eval_peak_memory_gib", torch.cuda.max_memory_allocated() / 2**30)
    return added <= 1
