"""The measurement functions of benchmarks/plateau.py on known inputs and a tiny model."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
import torch

from stoicheia.model.composer_model import StoicheiaModel
from stoicheia.model.config import EncoderConfig
from stoicheia.text.alphabet import MASK, PAD

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
import plateau  # noqa: E402


def test_attention_stats_of_known_patterns():
    seg = torch.tensor([[1, 1, 1, 0]])
    probs = torch.zeros(1, 2, 4, 4)
    probs[0, 0, :3, :3] = 1 / 3  # head 0: uniform over the document's 3 slots
    probs[0, 1] = torch.eye(4)  # head 1: each slot on itself
    probs[0, 0, 3, 3] = 1.0  # the pad query sees itself only (excluded from the means)
    s = plateau.attention_stats(probs, seg)
    assert s["entropy"] == pytest.approx([math.log2(3), 0.0])
    assert s["uniform"] == pytest.approx([math.log2(3), 0.0])
    assert s["self"] == pytest.approx([1 / 3, 1.0])
    # every query of the 3-slot document has its 2 other slots within distance 2
    assert s["near"] == pytest.approx([2 / 3, 0.0])


def test_attention_stats_near_excludes_distance_three():
    seg = torch.ones(1, 4, dtype=torch.long)
    probs = torch.zeros(1, 1, 4, 4)
    probs[0, 0, :, 0] = 1.0  # all on slot 0: self for query 0, near for 1 and 2, far for 3
    s = plateau.attention_stats(probs, seg)
    assert s["self"] == pytest.approx([0.25])
    assert s["near"] == pytest.approx([0.5])
    assert s["entropy"] == pytest.approx([0.0])


def test_mask_rate_and_neighbours_of_a_known_batch():
    chars = torch.tensor([[MASK, 3, MASK, MASK, 5, PAD], [MASK, MASK, 2, MASK, 7, 1]])
    seg = torch.tensor([[1, 1, 1, 2, 2, 0], [1, 1, 1, 1, 2, 2]])
    assert plateau.mask_rate(chars, seg) == pytest.approx(6 / 11)
    near = plateau.neighbour_visible(chars, seg)
    # row 0: slot 3's left neighbour (slot 2) is of another document, its right one shows 5;
    # slot 4's only neighbour in its document is masked; row 1: slot 3's right neighbour and
    # slot 4's left one are of the other document
    assert near[0].tolist() == [True, False, True, True, False, False]
    assert near[1].tolist() == [False, True, False, True, True, True]
    assert plateau.mask_rate(torch.full((1, 3), PAD), torch.zeros(1, 3)) == 0.0


def test_split_loss_counts_and_bits():
    chars = torch.tensor([[MASK, 3, MASK, MASK, MASK]])
    seg = torch.ones(1, 5, dtype=torch.long)
    tgt = torch.tensor([[4, -100, 6, 7, -100]])  # slot 4 masked but unsupervised
    logits = torch.zeros(1, 5, 27)
    logits[0, 3, 7] = 100.0  # slot 3 (no visible neighbour) is certain and right
    out = plateau.split_loss(logits, {"chars": chars, "seg_id": seg, "tgt_chars": tgt})
    assert (out["n_masked"], out["n_near"], out["n_far"]) == (3, 2, 1)
    assert out["near_bits"] == pytest.approx(math.log2(27), rel=1e-5)
    assert out["far_bits"] == pytest.approx(0.0, abs=1e-5)
    assert out["masked_bits"] == pytest.approx(2 / 3 * math.log2(27), rel=1e-5)


def _tiny(seed: int = 0) -> StoicheiaModel:
    torch.manual_seed(seed)
    return StoicheiaModel(
        EncoderConfig(d_model=32, n_layers=2, n_heads=2, char_window=8, global_every=2)
    )


def test_grad_norms_grouped_per_block():
    model = _tiny()
    numel: dict[str, int] = {}
    for name, p in model.named_parameters():
        p.grad = torch.full_like(p, 2.0)
        numel[plateau.block_of(name)] = numel.get(plateau.block_of(name), 0) + p.numel()
    norms = plateau.grad_norms(model)
    assert list(norms) == ["embed", "L0.attn", "L0.mlp", "L1.attn", "L1.mlp", "head"]
    for block, n in numel.items():
        assert norms[block] == pytest.approx(2.0 * math.sqrt(n))
    assert plateau.block_of("encoder.blocks.1.attn_norm.weight") == "L1.attn"
    with pytest.raises(ValueError, match="no block"):
        plateau.block_of("encoder.something")


def test_attention_probs_match_the_model_and_probe_covers_every_layer():
    model = _tiny(1)
    T = 20
    chars = torch.randint(0, 24, (2, T))
    chars[0, 15:] = PAD
    seg = torch.ones(2, T, dtype=torch.long)
    seg[0, 15:] = 0
    seg[1, 9:] = 2
    pos = torch.cat([torch.arange(T)[None], torch.cat([torch.arange(9), torch.arange(11)])[None]])
    batch = {"chars": chars, "seg_id": seg, "pos": pos}
    captured = {}
    attn = model.encoder.blocks[0].attn
    h = attn.register_forward_hook(lambda m, a, o: captured.update(args=a, out=o))
    model.eval()
    with torch.no_grad():
        model(batch)
    h.remove()
    x, cos, sin, mask, _ = captured["args"]
    probs = plateau.attention_probs(attn, x, cos, sin, mask)
    B, _, _ = x.shape
    v = attn.qkv(x).view(B, T, 3, attn.n_heads, attn.head_dim).permute(2, 0, 3, 1, 4)[2]
    y = (probs @ v).transpose(1, 2).reshape(B, T, -1)
    assert torch.allclose(attn.out(y), captured["out"], atol=1e-5)
    stats = plateau.probe_attention(model, batch)
    assert list(stats) == ["L0", "L1"]
    # local block 0 (window 8: 4 each side) sees at most 9 keys, global block 1 a whole document
    assert max(stats["L0"]["uniform"]) <= math.log2(9) + 1e-6
    assert max(stats["L1"]["uniform"]) > math.log2(9)
    assert all(
        0.0 <= e <= u + 1e-5
        for e, u in zip(stats["L1"]["entropy"], stats["L1"]["uniform"], strict=True)
    )


def test_exit_step():
    bits = [4.2] * 12 + [3.0] * 12
    lines = [{"kind": "step", "step": i + 1, "near_bits": b} for i, b in enumerate(bits)]
    lines.insert(3, {"kind": "probe"})
    lines[0]["near_bits"] = float("nan")  # a step without such slots counts for nothing
    assert plateau.exit_step(lines, 3.9) == 15  # steps 6..15: three at 3.0 bring the mean to 3.84
    assert plateau.exit_step(lines, 2.0) is None
    for r in lines[1:]:
        r["far_bits"] = 5.0
    assert plateau.exit_step(lines[1:], 3.9, key="far_bits") is None


def test_qk_norm_init_sets_the_gains_and_sharpens_the_first_attention():
    with pytest.raises(ValueError, match=r"^model\.qk_norm_init="):
        EncoderConfig(qk_norm_init=0.0).validate()
    torch.manual_seed(3)
    chars = torch.randint(0, 24, (2, 16))
    batch = {"chars": chars, "seg_id": torch.ones(2, 16, dtype=torch.long)}
    entropy = {}
    for gain in (1.0, 2.0):
        torch.manual_seed(0)
        cfg = EncoderConfig(d_model=32, n_layers=2, n_heads=2, char_window=8, qk_norm_init=gain)
        model = StoicheiaModel(cfg)
        for b in model.encoder.blocks:
            assert torch.equal(b.attn.q_norm.weight, torch.full((16,), gain))
            assert torch.equal(b.attn.k_norm.weight, torch.full((16,), gain))
        assert torch.equal(model.encoder.final_norm.weight, torch.ones(32))
        stats = plateau.probe_attention(model, batch)
        entropy[gain] = sum(sum(s["entropy"]) for s in stats.values())
    # the same weights otherwise: logits 4 times larger give rows of lower entropy
    assert entropy[2.0] < entropy[1.0] - 1.0


def test_window_mean_and_compare(tmp_path, capsys):
    lines = [{"kind": "run", "seed": 5, "qk_gain": 2.0, "t_early": None, "set": []}]
    for s in range(1, 31):
        near = 4.0 if s <= 20 else 3.0
        lines.append(
            {"kind": "step", "step": s, "near_bits": near, "far_bits": 4.0, "masked_bits": 3.5}
        )
    assert plateau.window_mean(lines, "near_bits", 20) == pytest.approx(4.0)
    assert plateau.window_mean(lines, "near_bits", 30, 20) == pytest.approx(3.5)
    assert math.isnan(plateau.window_mean(lines, "near_bits", 100, 20))
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    plateau.compare([path], 3.9, None, [20, 30])
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row[:5] == ["qk", "gain", "2", "(seed", "5)"]
    assert row[5:8] == ["22", "4.000", "3.500"]  # exit at step 22: 2 steps at 3.0 of 10
