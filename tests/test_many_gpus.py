"""Ready for many GPUs (CPU tests): gradient accumulation weighted by the letters scored, the
bf16 gradient compression hook, the gloo interface of the flag group, the record length
against the row length, and checkpoint retention."""

from __future__ import annotations

import copy

import pytest
import torch
from test_model import make_batch

from stoicheia.model import StoicheiaModel
from stoicheia.model.config import EncoderConfig

CFG = dict(d_model=32, n_heads=2, n_layers=2, global_every=2, char_window=8, init_std=0.1)


def _step(model: StoicheiaModel, batch: dict, micro_rows: int, on_tokens: bool) -> dict:
    """One optimizer step (SGD, lr 1: the weights move by minus the gradient) of Composer's
    Trainer on ``batch`` in micro-batches of ``micro_rows`` rows; the new weights."""
    from composer import Trainer

    from stoicheia.train.builder import train_data_spec

    spec = train_data_spec([batch])
    trainer = Trainer(
        model=model,
        train_dataloader=spec,
        max_duration="1ba",
        optimizers=torch.optim.SGD(model.parameters(), lr=1.0),
        device="cpu",
        precision="fp32",
        device_train_microbatch_size=micro_rows,
        accumulate_train_batch_on_tokens=on_tokens,
        progress_bar=False,
        log_to_console=False,
        seed=0,
    )
    trainer.fit()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_grad_accumulation_equals_one_big_batch_when_weighted_by_letters() -> None:
    """Two micro-batches of one row each, one nearly empty and one full, give the step of one
    batch of both rows: each micro-batch's loss is weighted by the letters it scores. Weighted
    by rows (Composer's default) the nearly empty row would count as much as the full one."""
    torch.manual_seed(0)
    base = StoicheiaModel(EncoderConfig(**CFG, attn_impl="sdpa"), aux_weight=0.0)  # type: ignore[arg-type]
    batch = make_batch([[12], [40, "pad:4", 50]], T=96)
    one = _step(copy.deepcopy(base), batch, 2, True)
    accum = _step(copy.deepcopy(base), batch, 1, True)
    by_rows = _step(copy.deepcopy(base), batch, 1, False)
    moved = max(float((one[k] - v).abs().max()) for k, v in base.state_dict().items())
    assert moved > 1e-3
    for k in one:
        torch.testing.assert_close(accum[k], one[k], atol=2e-6, rtol=1e-5)
    assert any(not torch.allclose(by_rows[k], one[k], atol=1e-4) for k in one)


def test_micro_batches_carry_their_letter_count_from_the_host() -> None:
    from stoicheia.train.builder import SLOTS_KEY, split_counting_letters, train_data_spec

    batch = make_batch([[12], [40, "pad:4", 50], []], T=96)
    parts = split_counting_letters(batch, 2)
    assert [p[SLOTS_KEY] for p in parts] == [102, 0]
    assert [tuple(p["chars"].shape) for p in parts] == [(2, 96), (1, 96)]
    spec = train_data_spec([batch])
    assert spec.get_num_tokens_in_batch(parts[0], token_type="loss_generating") == 102
    assert spec.get_num_tokens_in_batch(batch) == 102


def _config(**train):
    from stoicheia.config import load_config

    return load_config("yamls/demo.yaml", [f"train.{k}={v}" for k, v in train.items()])


def test_gradient_compression_choice() -> None:
    from stoicheia.config import ConfigError
    from stoicheia.train.device import gradient_hook

    auto, none, bf16 = _config(), _config(grad_compression="none"), _config(grad_compression="bf16")
    assert gradient_hook(auto, "gpu", "amp_bf16", 8).__name__ == "bf16_compress_hook"
    assert gradient_hook(auto, "gpu", "amp_bf16", 1) is None  # one process: no all-reduce
    assert gradient_hook(auto, "gpu", "fp32", 8) is None
    assert gradient_hook(auto, "cpu", "amp_bf16", 2) is None
    assert gradient_hook(none, "gpu", "amp_bf16", 8) is None
    assert gradient_hook(bf16, "cpu", "fp32", 2).__name__ == "bf16_compress_hook"
    with pytest.raises(ConfigError, match="train.grad_compression"):
        _config(grad_compression="fp16")


def _ddp_worker(rank: int, init: str, out: str) -> None:
    import torch.distributed as tdist
    from torch.nn.parallel import DistributedDataParallel

    from stoicheia.train.device import register_gradient_hook

    tdist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    torch.manual_seed(0)
    net = torch.nn.Linear(7, 5)
    ddp = DistributedDataParallel(net)
    import torch.distributed.algorithms.ddp_comm_hooks.default_hooks as hooks

    assert register_gradient_hook(ddp, hooks.bf16_compress_hook)
    assert not register_gradient_hook(net, hooks.bf16_compress_hook)  # not DDP: left alone
    x = torch.randn(3, 7, generator=torch.Generator().manual_seed(rank + 1))
    ddp(x).pow(2).sum().backward()
    torch.save({n: p.grad for n, p in net.named_parameters()}, f"{out}.{rank}")
    tdist.barrier()


def test_bf16_hook_all_reduces_gradients_in_bf16(tmp_path) -> None:
    """Two gloo processes: the averaged gradient equals the mean of the two local gradients,
    each rounded to bf16 (what the hook sends), and is the same on both."""
    import torch.multiprocessing as mp

    out = str(tmp_path / "grads")
    mp.spawn(_ddp_worker, args=(f"file://{tmp_path / 'init'}", out), nprocs=2)
    got = [torch.load(f"{out}.{r}") for r in (0, 1)]
    torch.manual_seed(0)
    net = torch.nn.Linear(7, 5)
    local = []
    for rank in (0, 1):
        net.zero_grad()
        x = torch.randn(3, 7, generator=torch.Generator().manual_seed(rank + 1))
        net(x).pow(2).sum().backward()
        local.append({n: p.grad.clone() for n, p in net.named_parameters()})
    for n in local[0]:
        assert torch.equal(got[0][n], got[1][n])
        bf = (local[0][n].bfloat16() + local[1][n].bfloat16()).float() / 2
        torch.testing.assert_close(got[0][n], bf, atol=0, rtol=1e-2)
        assert torch.equal(got[0][n].bfloat16().float() * 2, got[0][n] * 2)


def test_gloo_interface_on_several_nodes() -> None:
    from stoicheia.train.device import gloo_interface

    two_nodes = {"WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8", "MASTER_ADDR": "127.0.0.1"}
    assert gloo_interface({**two_nodes, "GLOO_SOCKET_IFNAME": "eth1"}) is None  # the job's own
    assert gloo_interface({**two_nodes, "WORLD_SIZE": "8"}) is None  # one node: gloo's choice
    assert gloo_interface({**two_nodes, "NCCL_SOCKET_IFNAME": "ib0,ib1"}) == "ib0,ib1"
    # NCCL's exclusion syntax is not an interface name: the route to the master decides
    assert gloo_interface({**two_nodes, "NCCL_SOCKET_IFNAME": "^docker"}) == "lo"
    assert gloo_interface(two_nodes) == "lo"


def test_rows_longer_than_the_records_are_named(tmp_path) -> None:
    """seq_len 8192 over records of at most 2048 letters: the long context is never trained,
    and the note names the convert option that fixes it."""
    import json

    from stoicheia.data.corpus_stats import context_note

    (tmp_path / "stats.json").write_text(json.dumps({"max_record_letters": 2048}))
    note = context_note(8192, tmp_path)
    assert note is not None and "--max-record-letters 8192" in note and "2048" in note
    assert context_note(2048, tmp_path) is None  # pieces of 1638 letters: the records fill them
    (tmp_path / "stats.json").write_text(json.dumps({"max_record_letters": 8192}))
    assert context_note(8192, tmp_path) is None
    assert context_note(8192, tmp_path / "missing") is None


def test_full_run_yaml_keeps_a_bounded_number_of_checkpoints() -> None:
    """The full run keeps the newest periodic checkpoints only (best.pt, pre_anneal.pt and
    final.pt are separate files, never pruned): not the ~390 GB of keeping all 80."""
    from stoicheia.config import load_config

    cfg = load_config("yamls/stoicheia.yaml", [])
    assert 1 <= cfg.train.save_num_checkpoints_to_keep <= 10


def test_more_processes_than_rows_per_step_names_the_batch_to_set() -> None:
    from stoicheia.config import ConfigError, batch_split, load_config

    train = load_config("yamls/stoicheia.yaml", []).train
    assert batch_split(train, 8) == (2, 64) and batch_split(train, 16) == (1, 64)
    with pytest.raises(ConfigError, match="micro_batch_rows to a divisor of 2"):
        batch_split(train, 32)  # 2 rows each: micro-batches of 1 or 2 rows
    with pytest.raises(ConfigError, match=r"cannot feed 128 processes.*multiple of 128"):
        batch_split(train, 128)
