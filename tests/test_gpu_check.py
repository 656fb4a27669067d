"""benchmarks/gpu_check.py on a CPU (``--dry-run``): the core stages need only torch and numpy
and pass in processes where Composer, streaming and omegaconf cannot be imported (the Composer
stages then report ``skipped (composer missing)``); with the GPU machine's packages plus the
wheels of benchmarks/gpu_wheels.txt the Composer stages run; figures reach the disk as they
are measured; the GPU configuration's batch splits over any number of GPUs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BLOCKER = REPO / "tests" / "block_imports"
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "scripts"))

import gpu_check  # noqa: E402
import gpu_wheels  # noqa: E402
from gpu_stages.composer_stages import batch_overrides  # noqa: E402
from gpu_stages.kernels import kind_of  # noqa: E402
from gpu_stages.record import Recorder, read_figures, text_report  # noqa: E402
from gpu_stages.shapes import GPU_SHAPE  # noqa: E402

from stoicheia.config import batch_split, load_config  # noqa: E402


def _check(out: Path, *args: str, env: dict[str, str], timeout: float = 1200):
    return subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gpu_check.py"), str(out), "--dry-run", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BLOCKER), env.get("PYTHONPATH")]))
    return env | extra


def test_core_stages_pass_where_composer_cannot_be_imported(tmp_path) -> None:
    out = tmp_path / "check"
    env = _env(STOICHEIA_BLOCK_IMPORTS="composer,streaming,omegaconf")
    proc = _check(out, "--steps", "4", "--budget", "900", env=env)
    figures = json.loads((out / "figures.json").read_text())
    statuses = {k: v.get("status") for k, v in figures.items()}
    assert proc.returncode == 0, (statuses, proc.stdout[-3000:], proc.stderr[-2000:])
    assert statuses == {
        "check": "ok",
        "env": "ok",
        "flex_vs_sdpa": "ok",
        "trunk_8": "ok",
        "shards": "skipped (composer missing)",
        "train_path": "skipped (composer missing)",
        "train": "skipped (composer missing)",
        "trunk_32": "ok",
    }
    assert figures["env"]["composer_stack"].startswith("missing: composer")
    assert "composer" in figures["train"]["why"]
    flex = figures["flex_vs_sdpa"]
    assert flex["T200_uncompiled"]["max_logit_diff"] < 1e-4 and flex["compile"] == "skipped (CPU)"
    for stage, layers in (("trunk_8", 2), ("trunk_32", 4)):
        trunk = figures[stage]
        assert trunk["shape"]["n_layers"] == layers
        for graph in ("block_masks", "trunk_forward", "trunk_backward", "clip_and_optimizer"):
            assert trunk[f"first_call_s_{graph}"] > 0
        assert trunk["train_dynamo"]["graph_breaks"] == 0 and trunk["train_dynamo"]["graphs"] == 1
        assert trunk["steady_steps"] == 2 and trunk["letters_per_s_wall"] > 0
        assert trunk["host_syncs_per_step"] is None  # counted on CUDA only
        table = trunk["kernel_table"]
        assert table[0] == ["kind", "ms/step", "%", "kernels/step", "longest"]
        kinds = {row[0] for row in table[1:]}
        assert {"gemm", "elementwise"} <= kinds
        assert abs(sum(row[2] for row in table[1:]) - 100) < 1
        assert trunk["eval_graphs_added"] == 1
    # every figure was appended as measured: one JSON line each, times not decreasing
    lines = [json.loads(x) for x in (out / "figures.jsonl").read_text().splitlines()]
    assert all(set(x) == {"stage", "key", "value", "t"} for x in lines)
    assert [x["t"] for x in lines] == sorted(x["t"] for x in lines)
    assert (out / "figures.txt").read_text() == text_report(read_figures(out))
    assert "[skipped (composer missing)] train_path" in proc.stdout


@pytest.mark.slow
def test_composer_stages_run_on_the_gpu_machines_packages_plus_the_carried_wheels(
    small_shards, tmp_path
) -> None:
    """Every import outside the GPU machine's package list and benchmarks/gpu_wheels.txt is
    refused (in the check, its stages, the recipe, the launcher, the export): the Composer
    stages run with two processes (DDP over gloo, as on two GPUs), the recipe is stopped by
    SIGTERM (143) through the launcher and its checkpoint exported."""
    allowed = tmp_path / "allowed.txt"
    carried = [r.split("==")[0] for r in gpu_wheels.requirements()]
    allowed.write_text(
        (REPO / "tests" / "gpu_machine_packages.txt").read_text() + "\n".join(carried) + "\n"
    )
    out = tmp_path / "check"
    proc = _check(
        out,
        "--stages", "env,shards,train_path,train",
        "--shards", str(small_shards),
        "--steps", "3",
        "--train-seconds", "15",
        "--processes", "2",
        "--budget", "1000",
        env=_env(STOICHEIA_ONLY_DISTS=str(allowed)),
    )  # fmt: skip
    figures = json.loads((out / "figures.json").read_text())
    statuses = {k: v.get("status") for k, v in figures.items()}
    assert proc.returncode == 0, (statuses, proc.stdout[-3000:], proc.stderr[-2000:])
    assert figures["env"]["composer_stack"].startswith("ok (composer 0.32.1")
    assert figures["shards"]["path"] == str(small_shards) and figures["shards"]["from"] == "given"
    path = figures["train_path"]
    assert path["status"] == "ok" and path["steps"] == 3 and path["world_size"] == 2
    assert path["config"] == "yamls/stoicheia.yaml (tiny CPU shape)"
    assert path["train_dynamo"]["graph_breaks"] == 0
    assert path["compiled_flex_cache"] != "RAW flex_attention"
    train = figures["train"]
    assert train["status"] == "ok" and train["config"].startswith("yamls/stoicheia.yaml")
    assert train["processes"] == 2
    assert train["stopped_by_sigterm"] and train["exit_status"] == 143
    assert 0 < train["export_bytes"] < 16 * 2**20
    assert (out / "work" / "export" / "model.safetensors").exists()


def test_a_stage_that_overruns_is_killed_and_reported(tmp_path) -> None:
    """run_stage kills a child past its limit; the status is recorded and the check goes on."""
    args = gpu_check.argparse.Namespace(
        out=tmp_path,
        work=tmp_path,
        shards=None,
        steps=1,
        dry_run=True,
        train_seconds=0,
        train_steps=0,
        processes=0,
        child_env=dict(os.environ),
    )
    assert gpu_check.run_stage("env", args, limit=0.2) == "overrun"  # importing torch is slower
    fig = read_figures(tmp_path)["env"]
    assert fig["status"] == "overrun" and fig["limit_s"] == 0.2


def test_figures_are_on_disk_the_moment_they_are_put(tmp_path) -> None:
    rec = Recorder(tmp_path, "trunk_8", echo=False)
    rec.put("step_s_wall", 0.123456789)
    assert read_figures(tmp_path) == {"trunk_8": {"step_s_wall": 0.123457}}
    with open(tmp_path / "figures.jsonl", "a") as f:
        f.write('{"stage": "trunk_8", "key": "cut off')  # a line a kill cut short
    rec.put("kernel_table", [["kind", "ms/step"], ["gemm", 1.5]])
    figures = read_figures(tmp_path)
    assert figures["trunk_8"]["kernel_table"] == [["kind", "ms/step"], ["gemm", 1.5]]
    assert "      gemm  1.5" in text_report(figures)


def test_the_gpu_shape_is_the_gpu_yaml() -> None:
    cfg = load_config(REPO / "yamls" / "stoicheia.yaml", ["data.tier_weights.bronze=0"])
    model = {k: getattr(cfg.model, k) for k in GPU_SHAPE.model}
    assert model == GPU_SHAPE.model
    assert (GPU_SHAPE.rows, GPU_SHAPE.seq_len, GPU_SHAPE.eval_rows) == (
        cfg.train.micro_batch_rows,
        cfg.data.seq_len,
        cfg.data.eval_rows,
    )
    t = cfg.train
    assert (t.lr, t.weight_decay, tuple(t.betas), t.clip_norm, t.aux_weight) == (
        GPU_SHAPE.lr,
        GPU_SHAPE.weight_decay,
        GPU_SHAPE.betas,
        GPU_SHAPE.clip_norm,
        GPU_SHAPE.aux_weight,
    )


@pytest.mark.parametrize("gpus", range(1, 17))
def test_the_gpu_yaml_trains_on_any_number_of_gpus(gpus: int) -> None:
    """The train stage's overrides leave the YAML's batch of 64 rows where it splits (1, 2, 4,
    8, 16 GPUs) and otherwise take the nearest whole number of micro-batches per GPU."""
    cfg = load_config(REPO / "yamls" / "stoicheia.yaml", batch_overrides(gpus))
    accum, rows = batch_split(cfg.train, gpus)
    if gpus in (1, 2, 4, 8, 16):
        assert batch_overrides(gpus) == [] and rows == 64
    else:
        assert accum >= 1 and abs(rows - 64) <= 4 * gpus / 2


def test_kernels_are_sorted_into_attention_gemm_and_elementwise() -> None:
    kinds = {
        "triton_tem_fused_flex_attention_0": "attention",
        "triton_tem_fused_flex_attention_backward_1": "attention",
        "triton_tem_fused_0": "attention",
        "pytorch_flash::flash_fwd_kernel": "attention",
        "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT": "gemm",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64": "gemm",
        "triton_tem_fused_mm_3": "gemm",
        "aten::mm": "gemm",
        "aten::addmm": "gemm",
        "triton_poi_fused__to_copy_add_mul_5": "elementwise",
        "triton_red_fused__to_copy_mean_pow_rsqrt_2": "elementwise",
        "triton_per_fused_nll_loss_forward_7": "elementwise",
        "void at::native::vectorized_elementwise_kernel<4, ...>": "elementwise",
        "aten::where": "elementwise",
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>": "optimizer",
        "void at::native::_fused_adamw_kernel": "optimizer",
        "Memcpy HtoD (Pinned -> Device)": "copy",
        "Memset (Device)": "copy",
    }
    assert {name: kind_of(name) for name in kinds} == kinds


def _tiny_wheel(folder: Path) -> Path:
    """A pure-Python wheel of a module ``gpucheck_probe`` (what pip needs of a wheel)."""
    wheel = folder / "gpucheck_probe-1.0-py3-none-any.whl"
    info = "gpucheck_probe-1.0.dist-info"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("gpucheck_probe.py", "ANSWER = 42\n")
        z.writestr(
            f"{info}/METADATA", "Metadata-Version: 2.1\nName: gpucheck-probe\nVersion: 1.0\n"
        )
        z.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        z.writestr(f"{info}/RECORD", "")
    return wheel


def test_carried_wheels_are_installed_offline_for_the_stages(tmp_path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _tiny_wheel(wheels)
    site, names = gpu_check.install_wheels(wheels, tmp_path / "work")
    assert names == ["gpucheck_probe-1.0-py3-none-any.whl"]
    env = dict(os.environ, PYTHONPATH=str(site))
    run = subprocess.run(
        [sys.executable, "-c", "import gpucheck_probe; print(gpucheck_probe.ANSWER)"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert run.stdout.strip() == "42", run.stderr
    with pytest.raises(SystemExit, match="no .whl files"):
        gpu_check.install_wheels(tmp_path / "work", tmp_path / "work2")


def test_the_wheel_list_names_composers_stack() -> None:
    names = {r.split("==")[0] for r in gpu_wheels.requirements()}
    assert {"mosaicml", "mosaicml-streaming", "omegaconf", "antlr4-python3-runtime"} <= names
    assert all("==" in r for r in gpu_wheels.requirements())  # pinned: one version each
