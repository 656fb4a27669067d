"""Tests of stoicheia.model: encoder shapes, masking, RoPE, init, loss and metrics (CPU, small)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn
from torch.nn.attention.flex_attention import create_mask, flex_attention

from stoicheia.model import (
    BitsPerChar,
    BoundaryF1,
    CharBertEncoder,
    DiaAccuracy,
    EncoderConfig,
    PunctAccuracy,
    mlp_hidden_size,
)
from stoicheia.model.attention import attend, dense_mask, flex_block_mask, make_mask_mod
from stoicheia.text.alphabet import (
    BOUNDARY_UNKNOWN,
    DIA_UNKNOWN,
    IGNORE_INDEX,
    MASK,
    PAD,
    PUNCT_UNKNOWN,
)

IMPLS = ["sdpa", "flex"]
# head_dim 16: the smallest that attn_impl="flex" accepts.
SMALL = dict(d_model=32, n_heads=2, n_layers=2, global_every=2, char_window=4, init_std=0.1)


def small_cfg(**kw: object) -> EncoderConfig:
    return EncoderConfig(**{**SMALL, **kw})  # type: ignore[arg-type]


def make_model(seed: int = 0, **kw: object) -> CharBertEncoder:
    torch.manual_seed(seed)
    return CharBertEncoder(small_cfg(**kw)).eval()


def make_batch(rows: list[list[int | str]], T: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Rows are lists of document lengths (int) or "pad:n" gaps; the rest of the row is padding.

    Documents get random letters with ~1/3 masked (targets and MDLM weight 1/t at masked slots),
    random planes with some UNKNOWN, and all five targets; padding gets PAD/UNKNOWN and -100.
    """
    g = torch.Generator().manual_seed(seed)
    B = len(rows)
    seg = torch.zeros(B, T, dtype=torch.int32)
    pos = torch.zeros(B, T, dtype=torch.int32)
    for b, row in enumerate(rows):
        at, doc = 0, 0
        for item in row:
            if isinstance(item, str):
                at += int(item.split(":")[1])
                continue
            doc += 1
            seg[b, at : at + item] = doc
            pos[b, at : at + item] = torch.arange(item, dtype=torch.int32)
            at += item
        assert at <= T
    real = seg != 0
    letters = torch.randint(0, 24, (B, T), generator=g)
    masked = (torch.rand(B, T, generator=g) < 0.35) & real
    chars = torch.where(masked, torch.full_like(letters, MASK), letters)
    chars[~real] = PAD
    tgt_boundary = torch.randint(0, 3, (B, T), generator=g)
    tgt_dia = torch.randint(0, 48, (B, T), generator=g)
    tgt_cap = torch.randint(0, 2, (B, T), generator=g)
    tgt_punct = torch.randint(0, 6, (B, T), generator=g)
    hide = torch.rand(B, T, generator=g) < 0.3
    boundary = torch.where(hide, BOUNDARY_UNKNOWN, tgt_boundary)
    dia = torch.where(hide, DIA_UNKNOWN, tgt_dia)
    punct = torch.where(hide, PUNCT_UNKNOWN, tgt_punct)
    boundary[~real], dia[~real], punct[~real] = BOUNDARY_UNKNOWN, DIA_UNKNOWN, PUNCT_UNKNOWN
    ign = torch.full_like(letters, IGNORE_INDEX)
    return {
        "chars": chars,
        "boundary": boundary,
        "dia": dia,
        "punct": punct,
        "seg_id": seg,
        "pos": pos,
        "tgt_chars": torch.where(masked, letters, ign),
        "tgt_boundary": torch.where(hide & real, tgt_boundary, ign),
        "tgt_dia": torch.where(hide & real, tgt_dia, ign),
        "tgt_cap": torch.where(real, tgt_cap, ign),
        "tgt_punct": torch.where(hide & real, tgt_punct, ign),
        "weight": torch.where(masked, torch.tensor(1 / 0.35), torch.tensor(0.0)),
    }


# --- config ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw, field",
    [
        (dict(d_model=30, n_heads=4), "n_heads"),  # does not divide
        (dict(d_model=12, n_heads=4), "n_heads"),  # head_dim 3 is odd
        (dict(attn_impl="flash"), "attn_impl"),
        (dict(attn_impl="flex", d_model=32, n_heads=4), "n_heads"),  # head_dim 8 < 16
        (dict(char_window=7), "char_window"),
        (dict(char_window=0), "char_window"),
        (dict(n_layers=0), "n_layers"),
        (dict(global_every=0), "global_every"),
        (dict(d_model=32.0), "d_model"),
        (dict(norm_eps=0.0), "norm_eps"),
        (dict(init_std=-0.02), "init_std"),
        (dict(rope_theta=0), "rope_theta"),
    ],
)
def test_config_validation_names_the_field(kw: dict, field: str) -> None:
    cfg = EncoderConfig(**kw)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=rf"^model\.{field}="):
        cfg.validate()
    with pytest.raises(ValueError, match=rf"^model\.{field}="):
        CharBertEncoder(cfg)


def test_default_config_is_valid_and_layers_are_3_local_1_global() -> None:
    cfg = EncoderConfig().validate()
    assert [cfg.is_global(i) for i in range(8)] == [False, False, False, True] * 2
    model = CharBertEncoder(EncoderConfig(n_layers=8))
    assert [b.is_global for b in model.blocks] == [False, False, False, True] * 2


def test_mlp_hidden_rounding() -> None:
    # 8/3 * d rounded up to a multiple of 64.
    assert [mlp_hidden_size(d) for d in (64, 96, 256, 768, 1024)] == [192, 256, 704, 2048, 2752]
    model = CharBertEncoder(EncoderConfig(d_model=256, n_layers=1))
    assert model.blocks[0].mlp.wi.weight.shape == (2 * 704, 256)
    assert model.blocks[0].mlp.wo.weight.shape == (256, 704)


# --- structure and init -------------------------------------------------------------------


def test_no_biases_anywhere() -> None:
    model = CharBertEncoder(small_cfg())
    assert not [n for n, _ in model.named_parameters() if "bias" in n]
    for m in model.modules():
        assert getattr(m, "bias", None) is None, type(m).__name__
    assert (
        sum(isinstance(m, nn.RMSNorm) for m in model.modules()) == 2 * 4 + 1
    )  # attn, q, k, mlp per block + final


def test_init_std_and_scaled_output_projections() -> None:
    torch.manual_seed(0)
    cfg = EncoderConfig(d_model=256, n_layers=8, init_std=0.02)
    model = CharBertEncoder(cfg)
    assert model.blocks[0].attn.qkv.weight.std().item() == pytest.approx(0.02, rel=0.03)
    assert model.embed["chars"].weight.std().item() == pytest.approx(0.02, rel=0.1)
    scaled = 0.02 / math.sqrt(16)
    assert model.blocks[3].attn.out.weight.std().item() == pytest.approx(scaled, rel=0.03)
    assert model.blocks[3].mlp.wo.weight.std().item() == pytest.approx(scaled, rel=0.03)
    assert torch.equal(model.final_norm.weight, torch.ones(256))


# --- forward --------------------------------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLS)
def test_output_shapes_and_dtype(impl: str) -> None:
    batch = make_batch([[10, 20], [30]], T=33)
    out = make_model(attn_impl=impl)(batch)
    sizes = {"char": 27, "boundary": 3, "dia": 48, "cap": 2, "punct": 6}
    assert {k: tuple(v.shape) for k, v in out.items()} == {k: (2, 33, c) for k, c in sizes.items()}
    assert all(v.dtype == torch.float32 for v in out.values())


def test_tensor_arguments_and_defaults_match_batch_dict() -> None:
    model = make_model()
    batch = make_batch([[25]], T=25)
    for k in ("boundary", "dia", "punct"):
        batch[k] = torch.full_like(
            batch[k], {"boundary": BOUNDARY_UNKNOWN, "dia": DIA_UNKNOWN, "punct": PUNCT_UNKNOWN}[k]
        )
    full = model(batch)["char"]
    assert torch.equal(
        model(batch["chars"], seg_id=batch["seg_id"], pos=batch["pos"])["char"], full
    )
    assert torch.allclose(
        model(batch["chars"])["char"], full, atol=1e-6
    )  # one document, pos = 0..T-1


def test_bad_inputs_raise_clear_errors() -> None:
    model = make_model()
    batch = make_batch([[10]], T=12)
    with pytest.raises(ValueError, match=r"dia \(valid 0\.\.48\)"):
        model({**batch, "dia": batch["dia"] + 49})
    with pytest.raises(ValueError, match="BLANK"):
        model({**batch, "chars": torch.full_like(batch["chars"], 25)})
    with pytest.raises(ValueError, match=r"seg_id has shape \(1, 11\)"):
        model({**batch, "seg_id": batch["seg_id"][:, :11]})
    with pytest.raises(ValueError, match="pos has dtype torch.float32"):
        model({**batch, "pos": batch["pos"].float()})


@pytest.mark.parametrize("impl", IMPLS)
def test_padding_never_gives_nan_forward_or_backward(impl: str) -> None:
    from stoicheia.model import StoicheiaModel

    torch.manual_seed(0)
    model = StoicheiaModel(small_cfg(attn_impl=impl))
    # row 0 entirely padding; row 1 padding between documents and at the end.
    batch = make_batch([[], [7, "pad:5", 9]], T=30)
    out = model(batch)
    assert all(torch.isfinite(v).all() for v in out.values())
    loss = model.loss(out, batch)
    assert torch.isfinite(loss)
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize(
    "layers",
    [
        dict(n_layers=1, global_every=2),
        dict(n_layers=1, global_every=1),
        dict(n_layers=2, global_every=2),
    ],
    ids=["local", "global", "mixed"],
)
def test_documents_are_isolated(impl: str, layers: dict) -> None:
    model = make_model(attn_impl=impl, **layers)  # char_window 4 < document length 12
    batch = make_batch([[12, 14, "pad:2"]], T=28)
    changed = dict(batch)
    for k, n in (("chars", 24), ("boundary", 4), ("dia", 49), ("punct", 7)):
        changed[k] = batch[k].clone()
        changed[k][0, 12:26] = torch.randint(
            0, n, (14,), generator=torch.Generator().manual_seed(1)
        )
    a, b = model(batch), model(changed)
    for k in a:
        assert torch.allclose(a[k][0, :12], b[k][0, :12], atol=1e-6), k
    assert not torch.allclose(
        a["char"][0, 12:26], b["char"][0, 12:26], atol=1e-3
    )  # doc 2 did change


@pytest.mark.parametrize("impl", IMPLS)
def test_local_window_limits_influence(impl: str) -> None:
    # One local block, window 4: slot i sees j only if |i - j| <= 2.
    model = make_model(attn_impl=impl, n_layers=1, global_every=2, char_window=4)
    batch = make_batch([[20]], T=20)
    base = model(batch)["char"][0]
    i = 9
    for j in range(20):
        poked = dict(batch, chars=batch["chars"].clone())
        poked["chars"][0, j] = (batch["chars"][0, j] + 5) % 24
        moved = not torch.allclose(model(poked)["char"][0, i], base[i], atol=1e-6)
        assert moved == (abs(i - j) <= 2), j


def test_sdpa_and_flex_agree_forward_and_backward() -> None:
    batch = make_batch([[9, 30, "pad:3", 20], [70], []], T=70, seed=3)
    outs, grads = [], []
    for impl in IMPLS:
        model = make_model(seed=5, attn_impl=impl, n_layers=4, global_every=4, char_window=8)
        out = model(batch)
        loss = sum((v * torch.linspace(-1, 1, v.shape[-1])).sum() for v in out.values())
        loss.backward()
        outs.append(out)
        grads.append({n: p.grad for n, p in model.named_parameters()})
    for k in outs[0]:
        torch.testing.assert_close(outs[0][k], outs[1][k], atol=1e-5, rtol=1e-4)
    for n in grads[0]:
        torch.testing.assert_close(grads[0][n], grads[1][n], atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("half_window", [None, 1, 3])
def test_flex_mask_mod_equals_dense_mask(half_window: int | None) -> None:
    batch = make_batch([[5, "pad:2", 6, 3], [], [16]], T=16)
    seg = batch["seg_id"]
    dense = dense_mask(seg, half_window)  # (B, 1, T, T)
    from_mod = create_mask(make_mask_mod(seg, half_window), 3, 1, 16, 16, device="cpu")
    assert torch.equal(from_mod, dense)
    # Spot checks of the rule itself: padding sees only itself, documents never mix.
    assert dense[1, 0].equal(torch.eye(16, dtype=torch.bool))
    assert not dense[0, 0, 4, 7] and not dense[0, 0, 5, 5 + 2 - 1 + 1]
    assert dense[0, 0, 5, 5] and not dense[0, 0, 5, 4]


def test_rope_uses_document_position_not_row_index() -> None:
    model = make_model(n_layers=2, global_every=2, char_window=8)
    alone = make_batch([[15]], T=40, seed=7)
    # The same document placed after another one: row offset 20, pos still 0..14.
    shifted = make_batch([[20, 15]], T=40, seed=8)
    for k in ("chars", "boundary", "dia", "punct"):
        shifted[k][0, 20:35] = alone[k][0, :15]
    a, b = model(alone), model(shifted)
    for k in a:
        torch.testing.assert_close(a[k][0, :15], b[k][0, 20:35], atol=2e-6, rtol=1e-5)
    # And pos is really consumed: stretching it changes the outputs.
    stretched = model({**alone, "pos": alone["pos"] * 3})
    assert not torch.allclose(stretched["char"][0, :15], a["char"][0, :15], atol=1e-3)


# --- loss -----------------------------------------------------------------------------------


def test_loss_matches_hand_computation_and_stashes_terms() -> None:
    from stoicheia.model import StoicheiaModel

    torch.manual_seed(0)
    model = StoicheiaModel(small_cfg(), aux_weight=0.25)
    batch = make_batch([[10, "pad:3", 8], [17, 4]], T=22, seed=2)
    out = model(batch)
    loss = model.loss(out, batch)

    def ce(logits: torch.Tensor, t: int) -> float:
        return -torch.log_softmax(logits.double(), -1)[t].item()

    char_sum, n_char, aux = 0.0, 0, 0.0
    for b in range(2):
        for i in range(22):
            t = int(batch["tgt_chars"][b, i])
            if t != IGNORE_INDEX:
                char_sum += float(batch["weight"][b, i]) * ce(out["char"][b, i], t)
                n_char += 1
    for head, key in (
        ("boundary", "tgt_boundary"),
        ("dia", "tgt_dia"),
        ("cap", "tgt_cap"),
        ("punct", "tgt_punct"),
    ):
        vals = [
            ce(out[head][b, i], int(batch[key][b, i]))
            for b in range(2)
            for i in range(22)
            if batch[key][b, i] != IGNORE_INDEX
        ]
        assert vals, head
        aux += sum(vals) / len(vals)
        assert model.last_loss_terms[head].item() == pytest.approx(sum(vals) / len(vals), rel=1e-5)
    assert n_char > 0
    n_slots = int((batch["seg_id"] != 0).sum())  # MDLM: the ELBO averages over all slots
    assert n_slots > n_char
    assert model.last_loss_terms["char"].item() == pytest.approx(char_sum / n_slots, rel=1e-5)
    assert loss.item() == pytest.approx(char_sum / n_slots + 0.25 * aux, rel=1e-5)
    assert model.last_loss_terms["total"].item() == loss.item()
    assert not any(v.requires_grad for v in model.last_loss_terms.values())


def test_every_parameter_gets_a_gradient_without_punct_labels() -> None:
    from stoicheia.model import StoicheiaModel

    torch.manual_seed(0)
    model = StoicheiaModel(small_cfg(n_layers=4, global_every=4))
    batch = make_batch([[12, 6], [20]], T=20)
    batch["tgt_punct"] = torch.full_like(batch["tgt_punct"], IGNORE_INDEX)
    loss = model.loss(model(batch), batch)
    assert torch.isfinite(loss) and model.last_loss_terms["punct"].item() == 0.0
    loss.backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None]
    assert not missing
    assert torch.count_nonzero(model.encoder.heads["punct"].weight.grad) == 0
    assert torch.count_nonzero(model.encoder.heads["dia"].weight.grad) > 0


def test_padding_changes_affect_neither_loss_nor_metrics() -> None:
    from stoicheia.model import StoicheiaModel

    torch.manual_seed(0)
    model = StoicheiaModel(small_cfg()).eval()
    batch = make_batch([[10, "pad:4", 8], [15]], T=24, seed=4)
    pad = batch["seg_id"] == 0
    g = torch.Generator().manual_seed(9)
    noisy = dict(batch)
    for k, n in (("chars", 24), ("boundary", 4), ("dia", 49), ("punct", 7)):
        noisy[k] = torch.where(pad, torch.randint(0, n, batch[k].shape, generator=g), batch[k])
    noisy["pos"] = torch.where(
        pad, torch.randint(0, 99, batch["pos"].shape, generator=g, dtype=torch.int32), batch["pos"]
    )
    noisy["weight"] = torch.where(
        pad, torch.tensor(float("nan")), batch["weight"]
    )  # targets stay -100

    def evaluate(b: dict[str, torch.Tensor]) -> tuple[float, dict[str, float]]:
        out = model(b)
        loss = model.loss(out, b).item()
        metrics = {k: m.clone() for k, m in model.get_metrics(is_train=False).items()}
        for m in metrics.values():
            model.update_metric(b, out, m)
        return loss, {k: m.compute().item() for k, m in metrics.items()}

    loss_a, met_a = evaluate(batch)
    loss_b, met_b = evaluate(noisy)
    assert loss_b == pytest.approx(loss_a, abs=1e-6)
    assert met_b == pytest.approx(met_a, abs=1e-6)
    assert set(met_a) == {
        "bits_per_char",
        "boundary_f1",
        "dia_acc",
        "dia_macro_acc",
        "punct_acc",
        "punct_macro_acc",
    }


def test_composer_model_api() -> None:
    from composer.models import ComposerModel

    from stoicheia.model import StoicheiaModel

    model = StoicheiaModel(small_cfg())
    assert isinstance(model, ComposerModel)
    assert list(model.get_metrics(is_train=True)) == ["bits_per_char"]
    batch = make_batch([[12]], T=12)
    out = model.eval_forward(batch)
    assert model.eval_forward(batch, out) is out
    metric = model.get_metrics(is_train=False)["dia_acc"]
    model.update_metric(batch, out, metric)
    assert int(metric.count) == int((batch["tgt_dia"] != IGNORE_INDEX).sum())
    with pytest.raises(ValueError, match="aux_weight"):
        StoicheiaModel(small_cfg(), aux_weight=-1.0)
    with pytest.raises(KeyError, match="tgt_cap"):
        model.loss(out, {k: v for k, v in batch.items() if k != "tgt_cap"})


# --- metrics --------------------------------------------------------------------------------


def test_bits_per_char_hand_computed() -> None:
    logits = torch.zeros(1, 3, 27)
    logits[0, 1, 5] = math.log(3.0)  # p(target 5) = 3 / (3 + 26)
    logits[0, 2] = torch.randn(27) * 50  # ignored slot
    target = torch.tensor([[0, 5, IGNORE_INDEX]])
    m = BitsPerChar()
    m.update(logits, target)
    expected = (math.log2(27) + math.log2(29 / 3)) / 2
    assert m.compute().item() == pytest.approx(expected, rel=1e-6)
    m.update(
        torch.zeros(1, 1, 27), torch.tensor([[25]])
    )  # accumulates: a third slot, log2(27) bits
    assert m.compute().item() == pytest.approx(
        (2 * math.log2(27) + math.log2(29 / 3)) / 3, rel=1e-6
    )
    m.reset()
    with pytest.warns(UserWarning, match="before the ``update``"):
        assert math.isnan(m.compute().item())


def one_hot_logits(pred: list[int], classes: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor([pred]), classes).float() * 4.0


def test_boundary_f1_hand_computed() -> None:
    m = BoundaryF1()
    # target: 0 1 2 1 0 -  ; predicted: 0 2 1 0 1 2  -> TP 2 (slots 1, 2), FP 1 (4), FN 1 (3)
    m.update(one_hot_logits([0, 2, 1, 0, 1, 2], 3), torch.tensor([[0, 1, 2, 1, 0, IGNORE_INDEX]]))
    assert (int(m.tp), int(m.fp), int(m.fn)) == (2, 1, 1)
    assert m.compute().item() == pytest.approx(2 / 3)
    m.reset()
    m.update(one_hot_logits([0, 0], 3), torch.tensor([[0, 0]]))
    assert m.compute().item() == 0.0


def test_dia_and_punct_accuracy_hand_computed() -> None:
    dia = DiaAccuracy()
    dia.update(one_hot_logits([3, 4, 9, 7], 48), torch.tensor([[3, 5, IGNORE_INDEX, 7]]))
    assert dia.compute().item() == pytest.approx(2 / 3)
    punct = PunctAccuracy()
    punct.update(one_hot_logits([0, 1, 2], 6), torch.tensor([[0, 2, 2]]))
    punct.update(one_hot_logits([5], 6), torch.tensor([[IGNORE_INDEX]]))
    assert punct.compute().item() == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="do not match"):
        punct.update(one_hot_logits([5, 1], 6), torch.tensor([[1]]))


# --- compiled FlexAttention on CPU ---------------------------------------------------------


@pytest.mark.slow
def test_compiled_flex_matches_dense_on_cpu() -> None:
    """torch.compile(flex_attention) with our mask_mod equals SDPA with the dense mask.

    torch 2.7.0's inductor CPU flex template only compiles with one OpenMP thread (see
    stoicheia.model.attention._flex), hence set_num_threads(1); the compile takes ~15 s.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        batch = make_batch([[40, "pad:8", 60], [150]], T=150)
        seg = batch["seg_id"]
        q, k, v = (
            torch.randn(2, 2, 150, 16, generator=torch.Generator().manual_seed(s)) for s in range(3)
        )
        compiled = torch.compile(flex_attention, dynamic=False)
        got = compiled(q, k, v, block_mask=flex_block_mask(seg, 8))
        want = attend(q, k, v, dense_mask(seg, 8), "sdpa")
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
    finally:
        torch.set_num_threads(threads)


def test_id_range_check_runs_once_per_shape_in_training_and_always_in_eval(monkeypatch) -> None:
    """The range check's one device sync: on the first training batch of each shape, not per
    step; on every evaluation/inference call."""
    model = make_model()
    calls = []
    real = torch.Tensor.tolist
    monkeypatch.setattr(torch.Tensor, "tolist", lambda t: calls.append(1) or real(t))
    batch = make_batch([[10]], T=12)
    model.train()
    for _ in range(3):
        model(batch)
    assert len(calls) == 1
    model(make_batch([[10]], T=14))  # a new shape is checked once more
    assert len(calls) == 2
    # a bad id in a later training batch of a checked shape is not read back (no sync) ...
    model({**batch, "chars": torch.full_like(batch["chars"], 25)})
    assert len(calls) == 2
    # ... but evaluation and inference check every call
    model.eval()
    with torch.no_grad():
        model(batch)
        model(batch)
        assert len(calls) == 4
        with pytest.raises(ValueError, match="BLANK"):
            model({**batch, "chars": torch.full_like(batch["chars"], 25)})
