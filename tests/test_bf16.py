"""bf16 autocast on the CPU (``train.precision=amp_bf16`` / ``auto``): what ``auto`` chooses
from the CPU's flags, that a run trains through the recipe's builder with bf16 matrix
products and fp32 weights, optimizer state and logits, that it resumes bit-identically, that it
matches fp32 within the documented tolerance, and that two processes train with it."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from stoicheia.config import to_dict
from stoicheia.model import precision as prec
from stoicheia.model.precision import choose_precision, cpu_autocast, cpu_bf16_units
from stoicheia.train import run_files
from stoicheia.train.builder import build_trainer
from stoicheia.train.device import resolve_device

sys.path.insert(0, str(Path(__file__).parent))
from tiny import tiny_run  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

#: Documented tolerances (docs/configuration.md, train.precision): bf16 against fp32.
LOGP_TOL = 0.05  # nats, max over letters of |log p_bf16 - log p_fp32| for the same weights
BITS_TOL = 0.02  # bits/char of an evaluation set, same weights
TRAIN_TOL = 0.05  # bits/char, a short training run's per-step loss, same init and batches

CPUINFO = """processor\t: 0
vendor_id\t: {vendor}
model name\t: {model}
flags\t\t: fpu vme sse sse2 avx avx2 {flags}
"""


def _cpuinfo(tmp_path: Path, flags: str, model: str = "Test CPU") -> Path:
    path = tmp_path / f"cpuinfo-{abs(hash(flags))}"
    path.write_text(CPUINFO.format(vendor="X", model=model, flags=flags), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _chdir_repo(monkeypatch):
    monkeypatch.chdir(REPO)


# --- auto ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "want", "flag"),
    [
        ("avx512f avx512_bf16", "amp_bf16", "avx512_bf16"),
        ("avx512f amx_tile amx_bf16 avx512_bf16", "amp_bf16", "amx_bf16"),
        ("avx512f avx512_vnni", "fp32", None),
        ("", "fp32", None),
    ],
)
def test_auto_reads_the_cpu_flags(tmp_path, flags, want, flag):
    info = _cpuinfo(tmp_path, flags, model="Some Xeon")
    assert cpu_bf16_units(info).flag == flag
    choice = choose_precision("auto", "cpu", info)
    assert choice.precision == want
    assert choice.cpu_bf16 == (want == "amp_bf16")
    assert "Some Xeon" in choice.reason and "auto" in choice.reason
    if flag:
        assert flag in choice.reason
    # an explicit choice is kept whatever the CPU has
    assert choose_precision("fp32", "cpu", info).precision == "fp32"
    explicit = choose_precision("amp_bf16", "cpu", info)
    assert explicit.precision == "amp_bf16" and explicit.cpu_bf16
    assert ("emulated" in explicit.reason) == (flag is None)


def test_auto_without_cpuinfo_is_fp32_and_gpu_is_bf16(tmp_path):
    missing = tmp_path / "no-such-cpuinfo"
    assert not cpu_bf16_units(missing).present
    assert choose_precision("auto", "cpu", missing).precision == "fp32"
    gpu = choose_precision("auto", "gpu", missing)
    assert gpu.precision == "amp_bf16" and not gpu.cpu_bf16  # Composer's CUDA autocast
    with pytest.raises(ValueError, match="train.precision='fp16'"):
        choose_precision("fp16", "cpu", missing)


def test_the_builder_resolves_auto_from_the_cpu(small_shards, tmp_path, monkeypatch):
    cfg = tiny_run(small_shards, tmp_path, "auto", "train.precision=auto", "train.device=cpu")
    monkeypatch.setattr(prec, "CPUINFO", _cpuinfo(tmp_path, "avx512f avx512_bf16"))
    device, choice = resolve_device(cfg)
    assert (device, choice.precision, choice.cpu_bf16) == ("cpu", "amp_bf16", True)
    monkeypatch.setattr(prec, "CPUINFO", _cpuinfo(tmp_path, "avx2 fma"))
    assert resolve_device(cfg)[1].precision == "fp32"


# --- the model under autocast ----------------------------------------------------------------


def _eval_batch(small_shards):
    from stoicheia.data.eval_batches import build_eval_batches
    from stoicheia.data.eval_sets import read_eval_sets

    records = read_eval_sets(small_shards, {"gold": 1.0, "silver": 1.0}, ["holdout"], 8)
    return build_eval_batches(records["holdout"], 96, 4, 0.15, 0)[0]


def test_bf16_forward_keeps_logits_norms_and_weights_fp32(small_shards):
    from stoicheia.model.composer_model import StoicheiaModel
    from stoicheia.model.config import EncoderConfig

    torch.manual_seed(0)
    # a larger init than the default so the logits are far from uniform and differences show
    cfg = EncoderConfig(d_model=64, n_layers=2, n_heads=2, char_window=16, init_std=0.1)
    fp = StoicheiaModel(cfg).eval()
    bf = StoicheiaModel(cfg, cpu_bf16=True).eval()
    bf.load_state_dict(fp.state_dict())
    batch = _eval_batch(small_shards)
    seen: dict[str, torch.dtype] = {}
    blk = bf.encoder.blocks[0]
    hooks = [
        m.register_forward_hook(lambda mod, i, o, name=name: seen.__setitem__(name, o.dtype))
        for name, m in [
            ("qkv", blk.attn.qkv),
            ("q_norm", blk.attn.q_norm),
            ("attn_norm", blk.attn_norm),
            ("wo", blk.mlp.wo),
            ("final_norm", bf.encoder.final_norm),
            ("head", bf.encoder.heads["char"]),
        ]
    ]
    with torch.no_grad():
        out_fp, out_bf = fp(batch), bf(batch)
    for h in hooks:
        h.remove()
    assert seen["qkv"] == seen["wo"] == torch.bfloat16  # the matrix products
    for name in ("q_norm", "attn_norm", "final_norm", "head"):
        assert seen[name] == torch.float32, name
    assert all(v.dtype == torch.float32 for v in out_bf.values())
    assert all(p.dtype == torch.float32 for p in bf.parameters())
    sup = batch["seg_id"] != 0
    lp_fp, lp_bf = (o["char"].log_softmax(-1)[sup] for o in (out_fp, out_bf))
    diff = float((lp_fp - lp_bf).abs().max())
    assert 0 < diff < LOGP_TOL, diff  # bf16 products did run, and stay within the tolerance
    assert not torch.equal(lp_fp, lp_bf)


def test_cpu_autocast_off_leaves_fp32():
    lin = torch.nn.Linear(8, 8)
    with cpu_autocast(False):
        assert lin(torch.randn(2, 8)).dtype == torch.float32
    with cpu_autocast(True):
        assert lin(torch.randn(2, 8)).dtype == torch.bfloat16


# --- training through the recipe -------------------------------------------------------------


def _config(shards, folder, name, *extra, steps=6, save_interval=3):
    return tiny_run(
        shards,
        folder,
        name,
        "data.eval_records=8",
        "train.log_every=1",
        f"train.nominal_steps={steps}",
        f"train.max_steps={steps}",
        f"train.save_interval={save_interval}",
        *extra,
    )


def _weights(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _rows(folder: Path) -> list[dict]:
    return run_files.read_jsonl(folder / "metrics.jsonl")


def test_bf16_trains_on_cpu_through_the_builder(small_shards, tmp_path, capsys):
    built = build_trainer(_config(small_shards, tmp_path, "bf", "train.precision=amp_bf16"))
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("[run] precision: amp_bf16 on the CPU (train.precision=amp_bf16")
    assert built.model.cpu_bf16
    assert str(built.trainer.state.precision.value) == "fp32"  # Composer itself runs fp32
    dtypes: dict[bool, set[torch.dtype]] = {True: set(), False: set()}
    qkv = built.model.encoder.blocks[0].attn.qkv
    qkv.register_forward_hook(lambda m, i, o: dtypes[built.model.training].add(o.dtype))
    built.trainer.fit()
    built.trainer.close()
    assert dtypes == {True: {torch.bfloat16}, False: {torch.bfloat16}}  # training and evaluation
    assert all(p.dtype == torch.float32 for p in built.model.parameters())
    opt = built.trainer.state.optimizers[0]
    moments = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
    assert moments and all(v.dtype == torch.float32 for v in moments if v.dim() > 0)
    rows = _rows(tmp_path / "bf")
    train = [r for r in rows if "loss/total" in r]
    assert len(train) == 6 and all(math.isfinite(r["loss/total"]) for r in train)
    evals = [
        r["metrics/holdout/bits_per_char"] for r in rows if "metrics/holdout/bits_per_char" in r
    ]
    assert len(evals) == 2 and all(0 < v < 10 for v in evals)
    assert built.control.complete
    # the trained checkpoint for inference, both ways: log-probabilities within LOGP_TOL
    from stoicheia.inference.loading import load_model

    fp, bf = (load_model(tmp_path / "bf", device="cpu", precision=p) for p in ("fp32", "bf16"))
    assert (fp.precision, bf.precision) == ("fp32", "bf16")
    batch = _eval_batch(small_shards)
    sup = batch["seg_id"] != 0
    lp_fp, lp_bf = (m(batch)["char"].log_softmax(-1)[sup] for m in (fp, bf))
    assert lp_bf.dtype == torch.float32
    assert 0 < float((lp_fp - lp_bf).abs().max()) < LOGP_TOL


def test_inference_auto_chooses_by_cpu_and_width(tmp_path, monkeypatch):
    from stoicheia.inference.loading import LoadedModel, ModelLoadError, _with_precision
    from stoicheia.model.config import EncoderConfig
    from stoicheia.model.encoder import CharBertEncoder
    from stoicheia.model.precision import INFERENCE_BF16_MIN_WIDTH, inference_precision

    units, none = _cpuinfo(tmp_path, "avx512_bf16"), _cpuinfo(tmp_path, "avx2")
    wide, narrow = INFERENCE_BF16_MIN_WIDTH, INFERENCE_BF16_MIN_WIDTH - 32
    assert inference_precision("auto", "cpu", wide, units).precision == "bf16"
    assert inference_precision("auto", "cpu", narrow, units).precision == "fp32"
    assert inference_precision("auto", "cpu", wide, none).precision == "fp32"
    assert inference_precision("auto", "cuda", wide, units).precision == "fp32"
    assert inference_precision("bf16", "cpu", 32, none).precision == "bf16"
    assert inference_precision("fp32", "cpu", wide, units).precision == "fp32"
    with pytest.raises(ValueError, match="mps"):
        inference_precision("bf16", "mps", wide, units)
    # load_model's choice, with the CPU's flags mocked
    monkeypatch.setattr(prec, "CPUINFO", units)
    for width, want in ((wide, "bf16"), (narrow, "fp32")):
        enc = CharBertEncoder(EncoderConfig(d_model=width, n_layers=1, n_heads=2)).eval()
        loaded = _with_precision(LoadedModel(enc, {}, "m", "export"), "auto")
        assert loaded.precision == want
    with pytest.raises(ModelLoadError, match="precision 'fp16'"):
        from stoicheia.inference.loading import load_model

        load_model(tmp_path, precision="fp16")


def test_bf16_resumes_bit_identically(small_shards, tmp_path):
    n = 3
    bf = "train.precision=amp_bf16"
    straight = build_trainer(_config(small_shards, tmp_path, "straight", bf, steps=2 * n))
    straight.trainer.fit()
    straight.trainer.close()
    want = _weights(straight.model)
    first = build_trainer(_config(small_shards, tmp_path, "resumed", bf, steps=2 * n))
    first.trainer.fit(duration=f"{n}ba")  # "preempted" after n batches (checkpoint at n)
    first.trainer.close()
    second = build_trainer(_config(small_shards, tmp_path, "resumed", bf, steps=2 * n))
    assert int(second.trainer.state.timestamp.batch) == n, "autoresume must pick up the checkpoint"
    assert second.model.cpu_bf16
    second.trainer.fit()
    second.trainer.close()
    got = _weights(second.model)
    assert want.keys() == got.keys()
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=0, atol=0, msg=k)
    losses = {
        name: [r["loss/char"] for r in _rows(tmp_path / name) if "loss/char" in r]
        for name in ("straight", "resumed")
    }
    assert losses["straight"] == losses["resumed"]


def test_bf16_matches_fp32_on_a_tiny_model(small_shards, tmp_path):
    runs = {}
    for p in ("fp32", "amp_bf16"):
        b = build_trainer(
            _config(small_shards, tmp_path, p, f"train.precision={p}", "model.d_model=64")
        )
        b.trainer.fit()
        b.trainer.close()
        runs[p] = (b.model, _rows(tmp_path / p))
    loss = {p: [r["loss/char"] for r in rows if "loss/char" in r] for p, (_, rows) in runs.items()}
    assert len(loss["fp32"]) == len(loss["amp_bf16"]) == 6
    diffs = [abs(a - b) / math.log(2) for a, b in zip(loss["fp32"], loss["amp_bf16"], strict=True)]
    assert max(diffs) < TRAIN_TOL, diffs
    assert loss["fp32"] != loss["amp_bf16"]  # bf16 did run
    key = "metrics/holdout/bits_per_char"
    ev = {p: [r[key] for r in rows if key in r] for p, (_, rows) in runs.items()}
    assert all(abs(a - b) < TRAIN_TOL for a, b in zip(ev["fp32"], ev["amp_bf16"], strict=True))
    # the same weights evaluated both ways: bits/char within BITS_TOL
    from stoicheia.model.metrics import BitsPerChar

    model = runs["amp_bf16"][0].eval()
    batch = _eval_batch(small_shards)
    bits = {}
    for flag in (False, True):
        model.cpu_bf16 = flag
        m = BitsPerChar()
        with torch.no_grad():
            m.update(model(batch)["char"], batch["tgt_chars"])
        bits[flag] = float(m.compute())
    assert abs(bits[True] - bits[False]) < BITS_TOL, bits


# --- two processes ---------------------------------------------------------------------------


def test_two_processes_train_in_bf16(small_shards, tmp_path):
    yaml = tmp_path / "two.yaml"
    cfg = _config(
        small_shards,
        tmp_path,
        "two",
        "train.precision=amp_bf16",
        "train.micro_batch_rows=1",
        "train.global_batch_rows=2",
        "train.grad_accum=null",
        steps=4,
        save_interval=2,
    )
    OmegaConf.save(OmegaConf.create(to_dict(cfg)), yaml)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    }
    proc = subprocess.run(
        [str(REPO / ".venv" / "bin" / "composer"), "-n", "2", "recipes/train.py", str(yaml)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,  # a loaded 2-core machine took 6 minutes
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("[run] precision: amp_bf16 on the CPU") == 1  # rank 0 only
    rows = _rows(tmp_path / "two")
    train = [r for r in rows if "loss/total" in r]
    assert len(train) == 4 and all(math.isfinite(r["loss/total"]) for r in train)
    done = json.loads((tmp_path / "two" / "complete.json").read_text())
    assert done["step"] == 4
