"""Write an export folder (:func:`export_model`): the weights (safetensors), ``config.json``,
``tokenizer_config.json``, the code (:mod:`.carried_code`), the model card (:mod:`.model_card`)
and the n-gram beside the checkpoint, written whole under a temporary name and then renamed.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from stoicheia.inference.export.carried_code import HF_FILES, code_files, write_code
from stoicheia.inference.export.model_card import model_card
from stoicheia.inference.export.training_data import ngram_beside
from stoicheia.inference.loading import EXPORT_CONFIG, EXPORT_WEIGHTS, LoadedModel
from stoicheia.publish import publishing

__all__ = ["TOKENIZER_CONFIG", "export_file_names", "export_model", "tokenizer_config"]

TOKENIZER_CONFIG = "tokenizer_config.json"


def tokenizer_config(model: LoadedModel) -> dict[str, Any]:
    """The ``tokenizer_config.json`` of an export: the tokenizer class and where its code is
    (``auto_map``, for ``AutoTokenizer.from_pretrained(folder, trust_remote_code=True)``),
    its special tokens and ``model_max_length``, the row length (letter slots) the model was
    trained on (``data.seq_len``; left out when the run configuration has none)."""
    out: dict[str, Any] = {
        "tokenizer_class": "StoicheiaTokenizer",
        "auto_map": {"AutoTokenizer": ["tokenization_stoicheia.StoicheiaTokenizer", None]},
        "mask_token": "[MASK]",
        "pad_token": "[PAD]",
        "additional_special_tokens": ["[BLANK]"],
        "padding_side": "right",
        "clean_up_tokenization_spaces": False,
    }
    seq_len = ((model.config or {}).get("data") or {}).get("seq_len")
    if isinstance(seq_len, int) and seq_len > 0:
        out["model_max_length"] = seq_len
    return out


def export_model(
    model: LoadedModel,
    out_dir: str | Path,
    *,
    held_out: dict[str, Any] | None = None,
    training_data: dict[str, Any] | None = None,
    overwrite: bool = False,
    weights_dtype: str = "float32",
) -> Path:
    """Write the export folder for ``model`` (:mod:`stoicheia.inference.export`); returns its path.

    ``held_out``: figures to record and print in the card, e.g. ``{"step": 1200, "sets":
    {"dev": {"bits_per_char": 2.94, ...}}}``; ``training_data``: what the model was trained on
    (:func:`~.training_data.describe_training_data`). The folder is written whole as
    ``OUT.partial`` and then renamed, so an interrupted export leaves the old folder (or none),
    never a mixture. Raises
    :class:`~stoicheia.publish.WriteError` (one line: the folder and the cause) when the disk is
    full or a file size limit is reached, and
    ``FileExistsError`` for a non-empty ``out_dir`` unless ``overwrite``, and, even with it,
    for a folder holding files an export does not write (a run folder, say).
    ``weights_dtype``: ``float32`` (as trained), ``float16`` or ``bfloat16`` (half the bytes;
    the shipped model, :mod:`.shipping`); the loaders cast the weights back to float32.
    """
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise FileExistsError(
                f"{out} exists and is not empty; choose another folder or pass --overwrite"
            )
        foreign = sorted(e.name for e in out.iterdir() if e.name not in export_file_names())
        if foreign:
            shown = ", ".join(foreign[:6]) + (
                f" and {len(foreign) - 6} more" if len(foreign) > 6 else ""
            )
            raise FileExistsError(
                f"{out} holds files an export does not write ({shown}): --overwrite replaces the "
                "whole folder and would delete them (is it a run folder?); choose another OUT_DIR"
            )
    # Written whole into OUT.partial, then renamed: a Ctrl-C or a full disk never leaves a
    # folder whose weights and config.json come from two different exports.
    with publishing(out) as tmp:  # a failed write: WriteError naming OUT, no OUT.partial left
        _write_export(model, tmp, held_out, training_data, weights_dtype)
    return out


def export_file_names() -> set[str]:
    """The names an export folder holds: the weights, ``config.json``, the model card, the
    model and tokenizer code, ``tokenizer_config.json``, the n-gram ``ngram.npz`` and the fusion
    weights ``fusion.json`` (a ``__pycache__`` that ``transformers`` may leave is allowed too)."""
    from stoicheia.inference.restore.fusion_file import FUSION_FILE, NGRAM_FILE

    names = {
        EXPORT_WEIGHTS,
        EXPORT_CONFIG,
        TOKENIZER_CONFIG,
        "README.md",
        "__pycache__",
        NGRAM_FILE,
        FUSION_FILE,
    }
    return names | set(HF_FILES) | set(code_files())


def _write_export(
    model: LoadedModel,
    out: Path,
    held_out: dict[str, Any] | None,
    training_data: dict[str, Any] | None,
    weights_dtype: str = "float32",
) -> None:
    import torch
    from safetensors.torch import save_file

    dtype = getattr(torch, weights_dtype)
    weights = {
        f"encoder.{k}": (
            v.detach().cpu().to(dtype) if v.is_floating_point() else v.detach().cpu()
        ).contiguous()
        for k, v in model.encoder.state_dict().items()
    }
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
            "AutoTokenizer": ["tokenization_stoicheia.StoicheiaTokenizer", None],
        },
        "encoder": dataclasses.asdict(model.encoder.cfg),
        "torch_dtype": weights_dtype,
        "stoicheia": info,
    }
    (out / EXPORT_CONFIG).write_text(
        json.dumps(config, indent=2, ensure_ascii=False, default=float) + "\n", encoding="utf-8"
    )
    tok_config = json.dumps(tokenizer_config(model), indent=2, ensure_ascii=False)
    (out / TOKENIZER_CONFIG).write_text(tok_config + "\n", encoding="utf-8")
    (out / "README.md").write_text(model_card(model, info), encoding="utf-8")
    ngram = ngram_beside(model)
    if ngram is not None:
        import shutil

        shutil.copyfile(ngram, out / ngram.name)
    from stoicheia.inference.restore.fusion_file import FUSION_FILE, FusionConfig, fusion_beside

    fusion = fusion_beside(str(model.source))
    if fusion is not None:
        # the weights travel (also a parallels weight without an n-gram); the parallels index
        # named there is a folder of this machine: the export looks for one where the run's
        # shards would be (data.shard_root)
        config = FusionConfig.load(fusion)
        config.parallels_index = None
        config.save(out / FUSION_FILE)
