"""The model card of an export: its ``README.md``, a Hugging Face model card with YAML front
matter (the model's shape and steps, how to use it, the training data per tier, the held-out
figures and the licences of the corpora it was trained on)."""

from __future__ import annotations

import json
from typing import Any

from stoicheia.inference.export.training_data import ngram_beside, tier_phases, trained_tiers
from stoicheia.inference.loading import LoadedModel

__all__ = ["model_card"]


def _fmt(v: Any) -> str:
    return f"{v:.4f}" if isinstance(v, float) else str(v)


def model_card(model: LoadedModel, info: dict[str, Any]) -> str:
    """The ``README.md`` of an export (Hugging Face model card with YAML front matter)."""
    cfg = model.encoder.cfg
    n_params = sum(p.numel() for p in model.encoder.parameters())
    run = model.config or {}
    td = info.get("training_data") or {}
    lines = [
        "---",
        "library_name: transformers",
        "language: grc",
        "license: other",
        "tags: [ancient-greek, masked-diffusion, character-level, epigraphy, papyrology, "
        "text-restoration]",
        "---",
        "",
        f"# Stoicheia: {run.get('run_name', 'a character-level encoder for Ancient Greek')}",
        "",
        "A character-level masked-diffusion Transformer encoder for Ancient Greek, trained with "
        "the Stoicheia recipe. It restores lost letters (lacunae of known or unknown width), "
        "word division, accents and breathings, capitals and punctuation.",
        "",
        "## Model",
        "",
        f"- {n_params / 1e6:.2f} M parameters: d_model {cfg.d_model}, {cfg.n_layers} layers, "
        f"{cfg.n_heads} heads, local window {cfg.char_window} letters, every "
        f"{cfg.global_every}th layer global",
        f"- trained for {info.get('step')} optimizer steps (batches)"
        if info.get("step") is not None
        else "- training steps: unknown",
        f"- exported from `{info.get('exported_from')}`",
        "",
        "## Use",
        "",
        "```python",
        "from transformers import AutoModel, AutoTokenizer",
        "tok = AutoTokenizer.from_pretrained(PATH, trust_remote_code=True)",
        "model = AutoModel.from_pretrained(PATH, trust_remote_code=True).eval()",
        'batch = tok(["μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχι[...]ος"], return_tensors="pt",',
        "            return_planes=True)",
        "logits = model(**batch)  # logits per head: char (B, T, 27), boundary, dia, cap, punct",
        'tok.batch_decode(logits["char"].argmax(-1), skip_special_tokens=True)  # the letters',
        "tok.render(logits, batch)  # the text with its lacunae filled in [ ]",
        "```",
        "",
        'With the `stoicheia` package: `stoicheia restore PATH "TEXT"` and '
        "`stoicheia evaluate PATH --shards DIR`"
        + (
            "; `restore` fuses in the letter n-gram of `ngram.npz` (in this folder) at the weight "
            "chosen on the inscription dev set (`--ngram-weight 0 --parallels-weight 0`: the "
            "model alone)."
            if ngram_beside(model) is not None
            else "."
        ),
        "",
        "## Training data",
        "",
    ]
    weights = td.get("tier_weights") or {}
    tiers = td.get("tiers") or {}
    trained = trained_tiers(run)
    shown = sorted(trained) if trained is not None else sorted(set(weights) | set(tiers))
    if shown:
        lines += [
            "| tier | weight (share of letters) | train letters | held-out letters "
            "| train records |",
            "|---|---|---|---|---|",
        ]
        for tier in shown:
            st = tiers.get(tier, {})
            lines.append(
                f"| {tier} | {weights.get(tier, 0)} | "
                f"{st.get('letters', {}).get('train', '?'):,} | "
                f"{st.get('letters', {}).get('val', '?'):,} | "
                f"{st.get('records', {}).get('train', '?'):,} |"
                if st
                else f"| {tier} | {weights.get(tier, 0)} | ? | ? | ? |"
            )
        lines.append("")
        phases = tier_phases(run)
        if phases:
            lines += [
                "The tier weights change during training (`callbacks.anneal_data.phases`): "
                f"`{json.dumps(phases)}`.",
                "",
            ]
        unused = sorted(set(tiers) - set(shown))
        if unused:
            lines += [
                f"The shards also hold {', '.join(unused)}, which this run did not train on "
                "(weight 0).",
                "",
            ]
    if td.get("sources"):
        lines.append(
            "Sources per tier: "
            + "; ".join(f"{t}: {', '.join(s)}" for t, s in td["sources"].items())
            + "."
        )
        lines.append("")
    if td.get("val_works"):
        lines.append(
            "Works held out entirely (never trained on): " + ", ".join(td["val_works"]) + "."
        )
        lines.append("")
    held = info.get("held_out") or {}
    lines += ["## Held-out figures", ""]
    sets = held.get("sets") or {}
    if sets:
        names = sorted({m for v in sets.values() for m in v})
        lines += [
            f"Reference noise: iid masking at t = {run.get('data', {}).get('eval_t', 0.30)}, "
            f"every other channel hidden; evaluation at step {held.get('step')}.",
            "",
            "| set | " + " | ".join(names) + " |",
            "|---|" + "---|" * len(names),
        ]
        for s, vals in sets.items():
            lines.append(f"| {s} | " + " | ".join(_fmt(vals.get(m, "")) for m in names) + " |")
        if held.get("unigram_entropy_bits") is not None:
            lines += [
                "",
                "Letter-unigram entropy of the training mix: "
                f"{held['unigram_entropy_bits']:.3f} bits.",
            ]
    else:
        lines.append(
            "No held-out evaluation was recorded with this checkpoint; run `stoicheia evaluate`."
        )
    lines += ["", "## Licence", ""]
    if td.get("licences"):
        lines += [f"- {lic}" for lic in td["licences"]]
        lines += [
            "",
            "The weights are derived from these corpora; their terms (attribution, share-alike "
            "and, for the treebanks, non-commercial use) apply to this model. "
            "Hence `license: other`.",
        ]
    else:
        lines.append(
            "The licences of the training corpora were not recorded with this export; check the "
            "corpora used."
        )
    if td.get("licences_unknown"):
        lines.append(
            f"Sources without a known licence: {', '.join(td['licences_unknown'])}: "
            "state their terms."
        )
    return "\n".join(lines) + "\n"
