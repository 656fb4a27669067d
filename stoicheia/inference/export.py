"""``stoicheia export``: a trained encoder as a Hugging Face model folder.

The folder holds

* ``model.safetensors``: the encoder weights (float32, names ``encoder.<module path>``);
* ``config.json``: ``model_type`` ``stoicheia``, the encoder shape, ``auto_map`` (so
  ``transformers.AutoModel.from_pretrained(folder, trust_remote_code=True)`` and
  ``AutoTokenizer.from_pretrained(...)`` find the code) and, under ``stoicheia``, the run
  configuration, step and held-out figures;
* ``tokenizer_config.json``: the tokenizer class (``auto_map``) and its special tokens;
* the code: ``configuration_stoicheia.py``, ``modeling_stoicheia.py`` and
  ``tokenization_stoicheia.py``, copied as they are from ``stoicheia/inference/hf/``, and the
  package modules they use (``stoicheia_encoder.py``, ``stoicheia_encode.py``, ... :
  :func:`code_files`), *copies of this package's source files* with their ``stoicheia.*``
  imports made relative, written at export time: the exported model runs the very code that
  was trained and its tokenizer encodes text exactly as the training data was encoded (the
  round-trip tests compare logits and planes). The folder needs ``torch``, ``numpy`` and
  ``transformers``, never ``stoicheia``;
* ``README.md``: the model card (training data, tiers, steps, held-out figures, licences);
* ``ngram.npz``, when the checkpoint has one beside it (``stoicheia benchmark --save-ngram``):
  the letter n-gram and the fusion weight chosen on the inscription dev set, copied as it is,
  so that ``stoicheia restore EXPORT`` fuses it in as it does for the checkpoint.

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
from stoicheia.publish import publishing

_PKG = Path(__file__).resolve().parents[1]
#: the Hugging Face modules an export carries as they are (see ``stoicheia/inference/hf``)
HF_DIR = Path(__file__).resolve().parent / "hf"
HF_FILES = ("configuration_stoicheia.py", "modeling_stoicheia.py", "tokenization_stoicheia.py")
#: the modules ``transformers`` loads by name (``auto_map``); each must import every
#: ``stoicheia_*`` module it needs itself (see :func:`_check_carried`)
_ENTRY_FILES = ("modeling_stoicheia.py", "tokenization_stoicheia.py")
#: the package folders whose modules an export may carry (torch, numpy and the standard
#: library only: nothing of training, data loading or Composer)
_CARRIED_PACKAGES = ("model", "text")
TOKENIZER_CONFIG = "tokenizer_config.json"

#: Licence of the corpora the repository's readers produce, by record ``source`` prefix
#: (from ../shared/corpus/README.md and the licence files there).
CORPUS_LICENCES = {
    "perseus": "Perseus Digital Library Greek texts (Tufts University; via cltk/greek_text_perseus): CC BY-SA 3.0 US",
    "ud:grc_perseus": "UD Ancient Greek-Perseus treebank: CC BY-NC-SA 2.5",
    "ud:grc_proiel": "UD Ancient Greek-PROIEL treebank: CC BY-NC-SA 3.0",
    "isicily": "I.Sicily inscriptions (J. Prag et al., http://sicily.classics.ox.ac.uk): CC BY 4.0",
}
#: The EpiDoc reader's records all have the source ``epidoc``; the collection is told by the
#: file name (the record's work): I.Sicily names its files ``ISic000001.xml``. A match makes
#: the source ``epidoc:COLLECTION``, looked up in :data:`CORPUS_LICENCES`.
EPIDOC_COLLECTIONS = {"isicily": re.compile(r"(?:^|/)ISic\d{6}\.xml$")}

_ABSOLUTE = re.compile(r"^(\s*)from stoicheia\.(?:model|text)\.(\w+) import", re.MULTILINE)
_PACKAGE = re.compile(
    r"^(\s*)from stoicheia\.(?:model|text) import (\w+)(?: as (\w+))?[ \t]*$", re.MULTILINE
)
_ANY_STOICHEIA = re.compile(r"^\s*(from|import) stoicheia\b", re.MULTILINE)
#: the relative imports of an exported module: ``from .stoicheia_x import`` (what
#: ``transformers`` follows; its ``get_relative_imports`` uses this pattern) and ``from .
#: import stoicheia_x`` (which it does not follow)
_FOLLOWED = re.compile(r"^\s*from\s+\.(\S+)\s+import", re.MULTILINE)
_RELATIVE = re.compile(r"^\s*from\s+\.(\w*)\s+import\s+\(?\s*(\w+)", re.MULTILINE)


def _package_module(exported: str) -> Path:
    """The package source of the exported module ``stoicheia_<name>`` (``<name>.py`` of
    :data:`_CARRIED_PACKAGES`). Raises ``RuntimeError`` for none or several."""
    name = exported.removeprefix("stoicheia_")
    found = [_PKG / pkg / f"{name}.py" for pkg in _CARRIED_PACKAGES]
    found = [f for f in found if f.exists()]
    if len(found) != 1:
        where = " and ".join(str(f) for f in found) or "none"
        raise RuntimeError(
            f"the export names its module {exported}.py after one module {name}.py of "
            f"stoicheia/{{{','.join(_CARRIED_PACKAGES)}}}, found {where}"
        )
    return found[0]


def _relative_imports(text: str) -> set[str]:
    """The sibling modules ``text`` imports (``from .x import`` and ``from . import x``)."""
    return {mod or name for mod, name in _RELATIVE.findall(text)}


def _relative_source(path: Path) -> str:
    """``path``'s source with its ``stoicheia.model``/``stoicheia.text`` imports made
    relative (``from stoicheia.text.planes import`` -> ``from .stoicheia_planes import``,
    ``from stoicheia.text import alphabet as A`` -> ``from . import stoicheia_alphabet as
    A``). Raises ``RuntimeError`` for any other import of ``stoicheia``."""
    text = _ABSOLUTE.sub(r"\1from .stoicheia_\2 import", path.read_text(encoding="utf-8"))
    text = _PACKAGE.sub(
        lambda m: f"{m.group(1)}from . import stoicheia_{m.group(2)} as {m.group(3) or m.group(2)}",
        text,
    )
    if _ANY_STOICHEIA.search(text):
        raise RuntimeError(
            f"{path} imports a stoicheia module outside stoicheia."
            f"{{{','.join(_CARRIED_PACKAGES)}}} (or in a form the export cannot rewrite): the "
            "exported model code must run with torch, numpy and transformers only"
        )
    return text


def code_files() -> dict[str, Path]:
    """The package modules an export carries: ``{"stoicheia_<name>.py": source path}``,
    every ``stoicheia_*`` module the files of :data:`HF_FILES` import, and theirs in turn."""
    sources = [(HF_DIR / f).read_text(encoding="utf-8") for f in HF_FILES]
    used = set().union(*(_relative_imports(text) for text in sources))
    todo = sorted(m for m in used if m.startswith("stoicheia_"))
    found: dict[str, Path] = {}
    while todo:
        mod = todo.pop()
        if f"{mod}.py" in found:
            continue
        src = _package_module(mod)
        found[f"{mod}.py"] = src
        todo += sorted(_relative_imports(_relative_source(src)))
    return dict(sorted(found.items()))


def _check_carried(out: Path) -> None:
    """Raise ``RuntimeError`` unless each entry module of ``out`` imports, in the form
    ``transformers`` follows, every sibling module it needs directly or through others:
    ``transformers`` copies a local folder's entry module and only the files it imports
    itself into its module cache, so a module missing there fails to import in a notebook."""
    for entry in _ENTRY_FILES:
        direct = set(_FOLLOWED.findall((out / entry).read_text(encoding="utf-8")))
        need: set[str] = set()
        todo = sorted(_relative_imports((out / entry).read_text(encoding="utf-8")))
        while todo:
            mod = todo.pop()
            if mod not in need:
                need.add(mod)
                todo += sorted(_relative_imports((out / f"{mod}.py").read_text(encoding="utf-8")))
        missing = sorted(need - direct)
        if missing:
            raise RuntimeError(
                f"stoicheia/inference/hf/{entry} needs {', '.join(missing)} (through the modules "
                "it imports) but does not import it as `from .MODULE import NAME`, so transformers "
                f"would not copy it; add `from .{missing[0]} import ...  # noqa: F401`"
            )


def write_code(out: Path) -> list[str]:
    """Write the model and tokenizer code into ``out``; returns the file names.

    The files of :data:`HF_FILES` are copied byte for byte; the package modules they use
    (:func:`code_files`) are written with their imports made relative, so the folder imports
    no ``stoicheia``. Raises ``RuntimeError`` when the code cannot be carried that way.
    """
    import shutil

    names = []
    for name in HF_FILES:
        shutil.copyfile(HF_DIR / name, out / name)
        names.append(name)
    for name, src in code_files().items():
        (out / name).write_text(_relative_source(src), encoding="utf-8")
        names.append(name)
    _check_carried(out)
    return names


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
) -> Path:
    """Write the folder of the module docstring for ``model``; returns its path.

    ``held_out``: figures to record and print in the card, e.g. ``{"step": 1200, "sets":
    {"dev": {"bits_per_char": 2.94, ...}}}``; ``training_data``: what the model was trained on
    (:func:`describe_training_data`). The folder is written whole as ``OUT.partial`` and then
    renamed, so an interrupted export leaves the old folder (or none), never a mixture. Raises
    :class:`~stoicheia.publish.WriteError` (one line: the folder and the cause) when the disk is
    full or a file size limit is reached, and
    ``FileExistsError`` for a non-empty ``out_dir`` unless ``overwrite``, and, even with it,
    for a folder holding files an export does not write (a run folder, say).
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
                f"{out} holds files an export does not write ({shown}): --overwrite replaces the whole folder and "
                "would delete them (is it a run folder?); choose another OUT_DIR"
            )
    # Written whole into OUT.partial, then renamed: a Ctrl-C or a full disk never leaves a
    # folder whose weights and config.json come from two different exports.
    with publishing(out) as tmp:  # a failed write: WriteError naming OUT, no OUT.partial left
        _write_export(model, tmp, held_out, training_data)
    return out


def export_file_names() -> set[str]:
    """The names an export folder holds: the weights, ``config.json``, the model card, the
    model and tokenizer code, ``tokenizer_config.json`` and the n-gram ``ngram.npz`` (a
    ``__pycache__`` that ``transformers`` may leave is allowed too)."""
    from stoicheia.inference.restore.fusion_file import NGRAM_FILE

    names = {
        EXPORT_WEIGHTS,
        EXPORT_CONFIG,
        TOKENIZER_CONFIG,
        "README.md",
        "__pycache__",
        NGRAM_FILE,
    }
    return names | set(HF_FILES) | set(code_files())


def _write_export(
    model: LoadedModel,
    out: Path,
    held_out: dict[str, Any] | None,
    training_data: dict[str, Any] | None,
) -> None:
    from safetensors.torch import save_file

    weights = {
        f"encoder.{k}": v.detach().cpu().contiguous() for k, v in model.encoder.state_dict().items()
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
        "torch_dtype": "float32",
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


def ngram_beside(model: LoadedModel) -> Path | None:
    """The ``ngram.npz`` beside ``model``'s checkpoint or export folder (the one ``restore``
    fuses in), or ``None`` when there is none."""
    from stoicheia.inference.restore.fusion_file import beside

    path = beside(str(model.source))
    return path if path is not None and path.is_file() else None


def find_shard_root(
    run_config: dict[str, Any], checkpoint: str | Path | None = None
) -> Path | None:
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
    save = str((run_config.get("train", {}) or {}).get("save_folder", "")).format(
        run_name=run_config.get("run_name", "")
    )
    if (
        checkpoint is None
        or Path(given).is_absolute()
        or not save
        or "://" in save
        or Path(save).is_absolute()
    ):
        return None
    folder = Path(checkpoint).resolve()
    folder = folder if folder.is_dir() else folder.parent
    parts = Path(save).parts
    if folder.parts[-len(parts) :] != parts:
        return None
    base = Path(*folder.parts[: -len(parts)])
    return base / given if (base / given / "stats.json").exists() else None


def describe_training_data(
    run_config: dict[str, Any], shard_root: Path | None = None
) -> dict[str, Any]:
    """What the run trained on, from ``shard_root/stats.json`` (see :func:`find_shard_root`):
    tiers with their weights, train/held-out letters and records, the held-out works, and the
    licences of the corpora (:data:`CORPUS_LICENCES`, matched on the record sources stored in
    the shards). Missing facts are left out, never guessed."""
    data = run_config.get("data", {}) or {}
    out: dict[str, Any] = {
        "tier_weights": data.get("tier_weights", {}),
        "shard_root": str(shard_root or data.get("shard_root")),
    }
    if shard_root is None or not (Path(shard_root) / "stats.json").exists():
        return out
    root = Path(shard_root)
    stats_file = root / "stats.json"
    stats = json.loads(stats_file.read_text(encoding="utf-8"))
    out["tiers"] = {
        tier: {
            "letters": st.get("letters", {}),
            "records": st.get("records_kept", {}),
            "files": st.get("files"),
        }
        for tier, st in stats.get("tiers", {}).items()
    }
    out["val_works"] = stats.get("val_works", [])
    out["val_fraction"] = stats.get("val_fraction")
    sources = _sources(root)
    trained = trained_tiers(run_config)
    if trained is not None:  # a tier of weight 0 in every phase trained nothing
        sources = {t: srcs for t, srcs in sources.items() if t in trained}
    out["sources"] = sources
    out["licences"] = sorted(
        {lic for srcs in sources.values() for s in srcs if (lic := source_licence(s))}
    )
    unknown = sorted({s for srcs in sources.values() for s in srcs if source_licence(s) is None})
    if unknown:
        out["licences_unknown"] = unknown
    return out


def source_licence(source: str) -> str | None:
    """The licence of a record source as :func:`_sources` names it (``perseus``,
    ``ud:grc_proiel``, ``epidoc:isicily``, ...), from :data:`CORPUS_LICENCES`; ``None`` if unknown."""
    name = source.split(":", 1)[1] if source.startswith("epidoc:") else source
    for prefix, lic in CORPUS_LICENCES.items():
        if name == prefix or name.startswith(prefix):
            return lic
    return None


def _source_name(source: str, work: str) -> str:
    if source == "epidoc":
        for collection, pattern in EPIDOC_COLLECTIONS.items():
            if pattern.search(work):
                return f"epidoc:{collection}"
    return source


def _sources(root: Path) -> dict[str, list[str]]:
    """Distinct sources of every record of every tier and split (reads the shards): the
    record's ``source``, for EpiDoc records with the collection its work names
    (:data:`EPIDOC_COLLECTIONS`), e.g. ``epidoc:isicily``."""
    from stoicheia.data.eval_sets import local_val_dataset
    from stoicheia.data.shard_index import index_samples

    found: dict[str, set[str]] = {}
    for tier_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for split in ("train", "val"):
            if (
                not (tier_dir / split / "index.json").exists()
                or index_samples(tier_dir / split) == 0
            ):
                continue  # streaming refuses an empty split (convert --val-fraction 0)
            ds = local_val_dataset(str((tier_dir / split).resolve()))
            for i in range(ds.num_samples):
                item = ds.get_item(i)
                found.setdefault(tier_dir.name, set()).add(
                    _source_name(str(item["source"]), str(item["work"]))
                )
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
    mixes = [
        w
        for w in [weights]
        + [p[1] for p in _phases(run_config) if isinstance(p, list) and len(p) == 2]
        if isinstance(w, dict)
    ]
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
        'With the `stoicheia` package: `stoicheia restore PATH "TEXT"` and `stoicheia evaluate PATH --shards DIR`'
        + (
            "; `restore` fuses in the letter n-gram of `ngram.npz` (in this folder) at the weight chosen on "
            "the inscription dev set (`--ngram-weight 0`: the model alone)."
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
            "| tier | weight | train letters | held-out letters | train records |",
            "|---|---|---|---|---|",
        ]
        for tier in shown:
            st = tiers.get(tier, {})
            lines.append(
                f"| {tier} | {weights.get(tier, 0)} | {st.get('letters', {}).get('train', '?'):,} | "
                f"{st.get('letters', {}).get('val', '?'):,} | {st.get('records', {}).get('train', '?'):,} |"
                if st
                else f"| {tier} | {weights.get(tier, 0)} | ? | ? | ? |"
            )
        lines.append("")
        phases = _phases(run)
        if phases:
            lines += [
                f"The tier weights change during training (`callbacks.anneal_data.phases`): `{json.dumps(phases)}`.",
                "",
            ]
        unused = sorted(set(tiers) - set(shown))
        if unused:
            lines += [
                f"The shards also hold {', '.join(unused)}, which this run did not train on (weight 0).",
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
            f"Reference noise: iid masking at t = {run.get('data', {}).get('eval_t', 0.30)}, every other channel hidden; "
            f"evaluation at step {held.get('step')}.",
            "",
            "| set | " + " | ".join(names) + " |",
            "|---|" + "---|" * len(names),
        ]
        for s, vals in sets.items():
            lines.append(f"| {s} | " + " | ".join(_fmt(vals.get(m, "")) for m in names) + " |")
        if held.get("unigram_entropy_bits") is not None:
            lines += [
                "",
                f"Letter-unigram entropy of the training mix: {held['unigram_entropy_bits']:.3f} bits.",
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
            "The weights are derived from these corpora; their terms (attribution, share-alike and, for the "
            "treebanks, non-commercial use) apply to this model. Hence `license: other`.",
        ]
    else:
        lines.append(
            "The licences of the training corpora were not recorded with this export; check the corpora used."
        )
    if td.get("licences_unknown"):
        lines.append(
            f"Sources without a known licence: {', '.join(td['licences_unknown'])}: state their terms."
        )
    return "\n".join(lines) + "\n"
