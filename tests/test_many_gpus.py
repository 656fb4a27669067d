"""Ready for many GPUs (CPU tests): gradient accumulation weighted by the letters scored, the
bf16 gradient compression hook, the gloo interface of the flag group, the record length
against the row length, and checkpoint retention."""

from __future__ import annotations

import copy

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
