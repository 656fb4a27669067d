"""``stoicheia export``: a trained encoder as a Hugging Face model folder.

The folder holds

* ``model.safetensors``: the encoder weights (float32, names ``encoder.<module path>``);
* ``config.json``: ``model_type`` ``stoicheia``, the encoder shape, ``auto_map`` (so
  ``transformers.AutoModel.from_pretrained(folder, trust_remote_code=True)`` finds the code)
  and, under ``stoicheia``, the run configuration, step and held-out figures;
* the code: ``configuration_stoicheia.py``, ``modeling_stoicheia.py`` and the encoder's own
  modules (``stoicheia_alphabet.py``, ``stoicheia_config.py``, ``stoicheia_attention.py``,
  ``stoicheia_encoder.py``). These are *copies of this package's source files* with their
  ``stoicheia.*`` imports made relative, written at export time: the exported model runs the
  very code that was trained, and the round-trip test compares logits;
* ``README.md``: the model card (training data, tiers, steps, held-out figures, licences).

``stoicheia evaluate`` and ``stoicheia restore`` (and :func:`load_model`) read the folder too.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

from stoicheia.inference.loading import EXPORT_CONFIG, EXPORT_WEIGHTS, LoadedModel
from stoicheia.publish import partial_folder, publish_folder

_PKG = Path(__file__).resolve().parents[1]
#: exported file name -> package source file
CODE_FILES = {
    "stoicheia_alphabet.py": _PKG / "text" / "alphabet.py",
    "stoicheia_config.py": _PKG / "model" / "config.py",
    "stoicheia_attention.py": _PKG / "model" / "attention.py",
    "stoicheia_encoder.py": _PKG / "model" / "encoder.py",
}
_IMPORTS = {
    "stoicheia.text.alphabet": ".stoicheia_alphabet",
    "stoicheia.model.config": ".stoicheia_config",
    "stoicheia.model.attention": ".stoicheia_attention",
    "stoicheia.model.encoder": ".stoicheia_encoder",
}

#: Licence of the corpora the repository's readers produce, by record ``source`` prefix
#: (from ../shared/corpus/README.md and the licence files there).
CORPUS_LICENCES = {
    "perseus": "Perseus Digital Library Greek texts (Tufts University; via cltk/greek_text_perseus): CC BY-SA 3.0 US",
    "ud:grc_perseus": "UD Ancient Greek-Perseus treebank: CC BY-NC-SA 2.5",
    "ud:grc_proiel": "UD Ancient Greek-PROIEL treebank: CC BY-NC-SA 3.0",
    "isicily": "I.Sicily inscriptions (J. Prag et al.): CC BY 4.0",
}

CONFIGURATION_PY = '''"""Hugging Face configuration of a Stoicheia encoder (written by `stoicheia export`)."""

from transformers import PretrainedConfig


class StoicheiaConfig(PretrainedConfig):
    """The encoder shape (``encoder``: the fields of ``EncoderConfig``) and, under
    ``stoicheia``, what the exporter recorded (run configuration, step, held-out figures)."""

    model_type = "stoicheia"

    def __init__(self, encoder=None, stoicheia=None, **kwargs):
        self.encoder = dict(encoder or {})
        self.stoicheia = dict(stoicheia or {})
        super().__init__(**kwargs)
'''

MODELING_PY = '''"""Hugging Face wrapper of the Stoicheia character encoder (written by `stoicheia export`).

Inputs are the aligned letter planes, each ``(B, T)`` int64: ``chars`` (letters 0..23 in the
order of ``stoicheia_alphabet.LETTERS``, MASK 24 for a lost letter, PAD 26), and optionally
``boundary``, ``dia``, ``punct`` (their UNKNOWN ids by default), ``seg_id`` and ``pos``;
``input_ids`` is accepted for ``chars`` and ``attention_mask`` for ``seg_id``. The
output is the dict of float32 logits ``char`` (B, T, 27), ``boundary`` (B, T, 3), ``dia``
(B, T, 48), ``cap`` (B, T, 2), ``punct`` (B, T, 6). Turn Greek text into planes with the
``stoicheia`` package (``stoicheia.text.planes.text_to_planes``), or use ``stoicheia restore``.
"""

from transformers import PreTrainedModel

from .configuration_stoicheia import StoicheiaConfig

# transformers copies only the files this module imports itself, so every module of the
# encoder is named here, also those that only the encoder imports.
from .stoicheia_alphabet import LETTERS  # noqa: F401
from .stoicheia_attention import build_masks  # noqa: F401
from .stoicheia_config import EncoderConfig
from .stoicheia_encoder import CharBertEncoder


class StoicheiaEncoderModel(PreTrainedModel):
    """The encoder of a Stoicheia checkpoint; ``forward`` is ``CharBertEncoder.forward``."""

    config_class = StoicheiaConfig
    base_model_prefix = "stoicheia"
    main_input_name = "chars"

    def __init__(self, config):
        super().__init__(config)
        self.encoder = CharBertEncoder(EncoderConfig(**config.encoder))
        self.post_init()

    def _init_weights(self, module):
        pass  # the encoder initialises itself; from_pretrained then loads every weight

    def forward(self, chars=None, boundary=None, dia=None, punct=None, seg_id=None, pos=None, input_ids=None,
                attention_mask=None, **kwargs):
        """Logits of ``CharBertEncoder.forward``. ``input_ids`` is another name for ``chars`` (the
        name transformers code passes); ``attention_mask`` (1 text, 0 padding) stands for
        ``seg_id`` when that is not given. Raises ``ValueError`` for no ids, both names, or a
        tensor that is not (B, T); ``TypeError`` for an argument the model does not take."""
        if input_ids is not None:
            if chars is not None:
                raise ValueError("give the letter ids once: chars or input_ids, not both")
            chars = input_ids
        if chars is None:
            raise ValueError("no letter ids: call model(chars) or model(input_ids=chars) with a (B, T) int64 tensor")
        if attention_mask is not None and seg_id is None:
            seg_id = attention_mask.long() if hasattr(attention_mask, "long") else attention_mask
        extra = sorted(k for k, v in kwargs.items() if v is not None and v is not False)
        if extra:
            raise TypeError(
                f"unexpected argument(s) {', '.join(extra)}; the model takes chars (or input_ids), boundary, dia, punct, "
                "seg_id (or attention_mask) and pos"
            )
        return self.encoder(chars, boundary=boundary, dia=dia, punct=punct, seg_id=seg_id, pos=pos)
'''


def _relative_source(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    for module, rel in _IMPORTS.items():
        text = re.sub(rf"^(\s*)from {re.escape(module)} import", rf"\1from {rel} import", text, flags=re.MULTILINE)
    if re.search(r"^\s*(from|import) stoicheia\b", text, flags=re.MULTILINE):
        raise RuntimeError(f"{path} imports a stoicheia module that the export does not carry; add it to CODE_FILES")
    return text


def write_code(out: Path) -> list[str]:
    """Write the remote code into ``out``; returns the file names."""
    names = []
    for name, src in CODE_FILES.items():
        (out / name).write_text(_relative_source(src), encoding="utf-8")
        names.append(name)
    (out / "configuration_stoicheia.py").write_text(CONFIGURATION_PY, encoding="utf-8")
    (out / "modeling_stoicheia.py").write_text(MODELING_PY, encoding="utf-8")
    return [*names, "configuration_stoicheia.py", "modeling_stoicheia.py"]


def export_model(
    model: LoadedModel,
    out_dir: str | Path,
    *,
    held_out: dict[str, Any] | None = None,
    training_data: dict[str, Any] | None = None,
    overwrite: bool = False,
) -> Path:
    """Write the folder of the module docstring for ``model``; returns its path.

    ``held_out``: figures to record and print in the card, e.g. ``{"step": 1200, "sets":
    {"dev": {"bits_per_char": 2.94, ...}}}``; ``training_data``: what the model was trained on
    (:func:`describe_training_data`). The folder is written whole as ``OUT.partial`` and then
    renamed, so an interrupted export leaves the old folder (or none), never a mixture. Raises
    ``FileExistsError`` for a non-empty ``out_dir`` unless ``overwrite``, and, even with it,
    for a folder holding files an export does not write (a run folder, say).
    """
    import shutil

    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{out} exists and is not empty; choose another folder or pass --overwrite")
        foreign = sorted(e.name for e in out.iterdir() if e.name not in export_file_names())
        if foreign:
            shown = ", ".join(foreign[:6]) + (f" and {len(foreign) - 6} more" if len(foreign) > 6 else "")
            raise FileExistsError(
                f"{out} holds files an export does not write ({shown}): --overwrite replaces the whole folder and "
                "would delete them (is it a run folder?); choose another OUT_DIR"
            )
    # Written whole into OUT.partial, then renamed: a Ctrl-C or a full disk never leaves a
    # folder whose weights and config.json come from two different exports.
    tmp = partial_folder(out)
    try:
        _write_export(model, tmp, held_out, training_data)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    publish_folder(tmp, out)
    return out


def export_file_names() -> set[str]:
    """The names an export folder holds: the weights, ``config.json``, the model card and the
    model code (a ``__pycache__`` that ``transformers`` may leave is allowed too)."""
    return {EXPORT_WEIGHTS, EXPORT_CONFIG, "README.md", "__pycache__", *CODE_FILES,
            "configuration_stoicheia.py", "modeling_stoicheia.py"}


def _write_export(model: LoadedModel, out: Path, held_out: dict[str, Any] | None,
                  training_data: dict[str, Any] | None) -> None:
    from safetensors.torch import save_file

    weights = {f"encoder.{k}": v.detach().cpu().contiguous() for k, v in model.encoder.state_dict().items()}
    save_file(weights, str(out / EXPORT_WEIGHTS), metadata={"format": "pt"})
    # safetensors writes through a private temporary file (mode 0600): give the weights the
    # mode of the other files (0666 less the umask), so a shared group can read them.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(out / EXPORT_WEIGHTS, 0o666 & ~umask)
    write_code(out)
    info = {
        "run_config": model.config,
        "step": model.step,
        "exported_from": model.source,
        "held_out": held_out or {},
        "training_data": training_data or {},
    }
    config = {
        "model_type": "stoicheia",
        "architectures": ["StoicheiaEncoderModel"],
        "auto_map": {
            "AutoConfig": "configuration_stoicheia.StoicheiaConfig",
            "AutoModel": "modeling_stoicheia.StoicheiaEncoderModel",
        },
        "encoder": dataclasses.asdict(model.encoder.cfg),
        "torch_dtype": "float32",
        "stoicheia": info,
    }
    (out / EXPORT_CONFIG).write_text(json.dumps(config, indent=2, ensure_ascii=False, default=float) + "\n", encoding="utf-8")
    (out / "README.md").write_text(model_card(model, info), encoding="utf-8")


def find_shard_root(run_config: dict[str, Any], checkpoint: str | Path | None = None) -> Path | None:
    """The run's ``data.shard_root`` as a local folder with a ``stats.json``: as given (from the
    current folder), else, for a relative path and a checkpoint in the run's own
    ``train.save_folder``, relative to the folder the run was started from (the checkpoint's
    folder without the ``save_folder`` part). ``None`` when neither exists."""
    data = run_config.get("data", {}) or {}
    given = data.get("shard_root")
    if not given:
        return None
    if (Path(given) / "stats.json").exists():
        return Path(given)
    save = str((run_config.get("train", {}) or {}).get("save_folder", "")).format(run_name=run_config.get("run_name", ""))
    if checkpoint is None or Path(given).is_absolute() or not save or "://" in save or Path(save).is_absolute():
        return None
    folder = Path(checkpoint).resolve()
    folder = folder if folder.is_dir() else folder.parent
    parts = Path(save).parts
    if folder.parts[-len(parts):] != parts:
        return None
    base = Path(*folder.parts[: -len(parts)])
    return base / given if (base / given / "stats.json").exists() else None


def describe_training_data(run_config: dict[str, Any], shard_root: Path | None = None) -> dict[str, Any]:
    """What the run trained on, from ``shard_root/stats.json`` (see :func:`find_shard_root`):
    tiers with their weights, train/held-out letters and records, the held-out works, and the
    licences of the corpora (:data:`CORPUS_LICENCES`, matched on the record sources stored in
    the shards). Missing facts are left out, never guessed."""
    data = run_config.get("data", {}) or {}
    out: dict[str, Any] = {"tier_weights": data.get("tier_weights", {}), "shard_root": str(shard_root or data.get("shard_root"))}
    if shard_root is None or not (Path(shard_root) / "stats.json").exists():
        return out
    root = Path(shard_root)
    stats_file = root / "stats.json"
    stats = json.loads(stats_file.read_text(encoding="utf-8"))
    out["tiers"] = {
        tier: {"letters": st.get("letters", {}), "records": st.get("records_kept", {}), "files": st.get("files")}
        for tier, st in stats.get("tiers", {}).items()
    }
    out["val_works"] = stats.get("val_works", [])
    out["val_fraction"] = stats.get("val_fraction")
    sources = _sources(root)
    out["sources"] = sources
    out["licences"] = sorted({lic for srcs in sources.values() for s in srcs for p, lic in CORPUS_LICENCES.items() if s == p or s.startswith(p)})
    unknown = sorted({s for srcs in sources.values() for s in srcs if not any(s == p or s.startswith(p) for p in CORPUS_LICENCES)})
    if unknown:
        out["licences_unknown"] = unknown
    return out


def _sources(root: Path) -> dict[str, list[str]]:
    """Distinct ``source`` values of every record of every tier and split (reads the shards)."""
    from stoicheia.data.eval_sets import local_val_dataset

    found: dict[str, set[str]] = {}
    for tier_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for split in ("train", "val"):
            if not (tier_dir / split / "index.json").exists():
                continue
            ds = local_val_dataset(str((tier_dir / split).resolve()))
            for i in range(ds.num_samples):
                found.setdefault(tier_dir.name, set()).add(str(ds.get_item(i)["source"]))
    return {t: sorted(s) for t, s in found.items()}


def _phases(run_config: dict[str, Any]) -> list[Any]:
    """The run's tier-mix phases (``callbacks.anneal_data.phases``: ``[[until, {tier: weight}], ...]``), or ``[]``."""
    anneal = (run_config.get("callbacks") or {}).get("anneal_data")
    phases = anneal.get("phases") if isinstance(anneal, dict) else None
    return list(phases) if isinstance(phases, list) else []


def trained_tiers(run_config: dict[str, Any]) -> set[str] | None:
    """The tiers the run trained on: a positive weight in ``data.tier_weights`` or in a phase
    of ``callbacks.anneal_data.phases``. ``None`` when the configuration records no weights."""
    weights = (run_config.get("data") or {}).get("tier_weights")
    mixes = [w for w in [weights] + [p[1] for p in _phases(run_config) if isinstance(p, list) and len(p) == 2] if isinstance(w, dict)]
    if not mixes:
        return None
    return {t for mix in mixes for t, w in mix.items() if isinstance(w, (int, float)) and w > 0}


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
        "tags: [ancient-greek, masked-diffusion, character-level, epigraphy, papyrology, text-restoration]",
        "---",
        "",
        f"# Stoicheia: {run.get('run_name', 'a character-level encoder for Ancient Greek')}",
        "",
        "A character-level masked-diffusion Transformer encoder for Ancient Greek, trained with the "
        "Stoicheia recipe. It restores lost letters (lacunae of known or unknown width), word "
        "division, accents and breathings, capitals and punctuation.",
        "",
        "## Model",
        "",
        f"- {n_params / 1e6:.2f} M parameters: d_model {cfg.d_model}, {cfg.n_layers} layers, {cfg.n_heads} heads, "
        f"local window {cfg.char_window} letters, every {cfg.global_every}th layer global",
        f"- trained for {info.get('step')} optimizer steps (batches)" if info.get("step") is not None else "- training steps: unknown",
        f"- exported from `{info.get('exported_from')}`",
        "",
        "## Use",
        "",
        "```python",
        "from transformers import AutoModel",
        "model = AutoModel.from_pretrained(PATH, trust_remote_code=True)",
        "logits = model(chars)  # chars: (B, T) int64 letter ids, 24 = MASK (input_ids=chars also works); a dict of logits",
        "```",
        "",
        "With the `stoicheia` package: `stoicheia restore PATH \"TEXT\"` and `stoicheia evaluate PATH --shards DIR`.",
        "",
        "## Training data",
        "",
    ]
    weights = td.get("tier_weights") or {}
    tiers = td.get("tiers") or {}
    trained = trained_tiers(run)
    shown = sorted(trained) if trained is not None else sorted(set(weights) | set(tiers))
    if shown:
        lines += ["| tier | weight | train letters | held-out letters | train records |", "|---|---|---|---|---|"]
        for tier in shown:
            st = tiers.get(tier, {})
            lines.append(
                f"| {tier} | {weights.get(tier, 0)} | {st.get('letters', {}).get('train', '?'):,} | "
                f"{st.get('letters', {}).get('val', '?'):,} | {st.get('records', {}).get('train', '?'):,} |"
                if st else f"| {tier} | {weights.get(tier, 0)} | ? | ? | ? |"
            )
        lines.append("")
        phases = _phases(run)
        if phases:
            lines += [f"The tier weights change during training (`callbacks.anneal_data.phases`): `{json.dumps(phases)}`.", ""]
        unused = sorted(set(tiers) - set(shown))
        if unused:
            lines += [f"The shards also hold {', '.join(unused)}, which this run did not train on (weight 0).", ""]
    if td.get("sources"):
        lines.append("Sources per tier: " + "; ".join(f"{t}: {', '.join(s)}" for t, s in td["sources"].items()) + ".")
        lines.append("")
    if td.get("val_works"):
        lines.append("Works held out entirely (never trained on): " + ", ".join(td["val_works"]) + ".")
        lines.append("")
    held = info.get("held_out") or {}
    lines += ["## Held-out figures", ""]
    sets = held.get("sets") or {}
    if sets:
        names = sorted({m for v in sets.values() for m in v})
        lines += [
            f"Reference noise: iid masking at t = {run.get('data', {}).get('eval_t', 0.30)}, every other channel hidden; "
            f"evaluation at step {held.get('step')}.",
            "",
            "| set | " + " | ".join(names) + " |",
            "|---|" + "---|" * len(names),
        ]
        for s, vals in sets.items():
            lines.append(f"| {s} | " + " | ".join(_fmt(vals.get(m, '')) for m in names) + " |")
        if held.get("unigram_entropy_bits") is not None:
            lines += ["", f"Letter-unigram entropy of the training mix: {held['unigram_entropy_bits']:.3f} bits."]
    else:
        lines.append("No held-out evaluation was recorded with this checkpoint; run `stoicheia evaluate`.")
    lines += ["", "## Licence", ""]
    if td.get("licences"):
        lines += [f"- {lic}" for lic in td["licences"]]
        lines += [
            "",
            "The weights are derived from these corpora; their terms (attribution, share-alike and, for the "
            "treebanks, non-commercial use) apply to this model. Hence `license: other`.",
        ]
    else:
        lines.append("The licences of the training corpora were not recorded with this export; check the corpora used.")
    if td.get("licences_unknown"):
        lines.append(f"Sources without a known licence: {', '.join(td['licences_unknown'])}: state their terms.")
    return "\n".join(lines) + "\n"
