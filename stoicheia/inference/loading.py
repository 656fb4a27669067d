"""Load a trained encoder for use: from a Composer training checkpoint or an exported model.

:func:`load_model` takes

* a training checkpoint (``best.pt``, ``final.pt``, ``ep0-ba1200-rank0.pt``, ...), a local
  path or an object-store URI (``s3://``, ``gs://``, ``oci://``; fetched with Composer's
  ``get_file``), or a run folder (its ``best.pt``, else ``final.pt``, else ``latest-rank0.pt``);
* an export folder written by ``stoicheia export`` (``config.json`` + ``model.safetensors``).

The model shape comes from the checkpoint itself (the ``RunRecord`` callback state written by
every run of this version), else from ``config.json`` beside the checkpoint in its run folder,
else from the YAML given as ``config`` (checkpoints of older runs: give the YAML the run was
trained with).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from stoicheia.model.config import EncoderConfig
from stoicheia.model.encoder import CharBertEncoder
from stoicheia.model.precision import INFERENCE_PRECISIONS, inference_precision

log = logging.getLogger(__name__)

EXPORT_CONFIG = "config.json"
EXPORT_WEIGHTS = "model.safetensors"
_ENCODER_FIELDS = tuple(EncoderConfig.__dataclass_fields__)


class ModelLoadError(ValueError):
    """The path holds no usable model; the message names the path and the fix."""


@dataclass
class LoadedModel:
    """A trained encoder ready for inference (``eval()`` mode, no gradients needed).

    Attributes:
        encoder: the :class:`CharBertEncoder`, on ``device``.
        config: the run configuration as a plain dict (``model``, ``data``, ``noise``,
            ``train``, ``run_name``...; an export holds what its checkpoint held).
        source: the path or URI it was loaded from.
        kind: ``"checkpoint"`` or ``"export"``.
        step: the training batch of the weights (``None`` when unknown).
        info: extra facts of an export (held-out figures, training data), else ``{}``.
        precision: ``"fp32"`` or ``"bf16"`` (the forward under bf16 autocast; weights and
            logits stay float32), chosen by
            :func:`~stoicheia.model.precision.inference_precision`.
    """

    encoder: CharBertEncoder
    config: dict[str, Any]
    source: str
    kind: str
    step: int | None = None
    info: dict[str, Any] = field(default_factory=dict)
    precision: str = "fp32"

    @property
    def device(self) -> torch.device:
        """Where the weights are."""
        return next(self.encoder.parameters()).device

    @property
    def encoder_config(self) -> EncoderConfig:
        """The encoder's shape."""
        return self.encoder.cfg

    @torch.no_grad()
    def __call__(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Float32 logits of :meth:`CharBertEncoder.forward` for a collated batch (moved to the
        model's device), under bf16 autocast when ``precision`` is ``"bf16"``."""
        dev = self.device
        batch = {k: v.to(dev) for k, v in batch.items()}
        if self.precision == "bf16":
            with torch.autocast(dev.type, dtype=torch.bfloat16):
                return self.encoder(batch)
        return self.encoder(batch)


def available_devices() -> list[str]:
    """The devices a model can be loaded on here: ``cpu``, then ``cuda:0``... for every CUDA
    GPU torch sees, and ``mps`` on a Mac with Metal."""
    out = ["cpu"]
    if torch.cuda.is_available():
        out += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        out.append("mps")
    return out


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``"auto"``/``None``: the first CUDA GPU if torch sees one, else the CPU; else the named
    device (``cpu``, ``cuda``, ``cuda:N``, ``mps``).

    Raises :class:`ModelLoadError` (a ``ValueError``) for a name torch does not read
    (``gpu0``), a device type other than cpu/cuda/mps, and a device this machine does not
    have (no CUDA GPU visible, ``cuda:3`` with two GPUs); the message lists the devices there are.
    """
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    have = ", ".join(available_devices())
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ModelLoadError(
            f"device {str(device)!r} is not a device name; give auto, cpu, cuda or cuda:N "
            f"(here: {have})"
        ) from None
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            import os

            seen = os.environ.get("CUDA_VISIBLE_DEVICES")
            why = f" (CUDA_VISIBLE_DEVICES={seen!r})" if seen is not None else ""
            raise ModelLoadError(
                f"device {str(device)!r}: no CUDA GPU is visible on this machine{why}; "
                f"give --device cpu or auto (here: {have})"
            )
        if dev.index is not None and dev.index >= n:
            raise ModelLoadError(
                f"device {str(device)!r}: this machine has {n} visible CUDA GPU(s), cuda:0 to "
                f"cuda:{n - 1}; give one of {have}"
            )
    elif dev.type == "mps":
        if "mps" not in available_devices():
            raise ModelLoadError(
                f"device {str(device)!r}: Metal (mps) is not available here; give one of {have}"
            )
    elif dev.type != "cpu":
        raise ModelLoadError(
            f"device {str(device)!r}: only cpu, cuda and mps are supported; "
            f"give one of auto, {have}"
        )
    return dev


def _config_from_yaml(config: str | Path | dict[str, Any]) -> dict[str, Any]:
    if isinstance(config, dict):
        return config
    from stoicheia.config import ConfigError, load_config, to_dict

    try:
        return to_dict(load_config(config))
    except ConfigError as err:
        text = str(err)
        raise ModelLoadError(
            f"--config {text}" if text.startswith(str(config)) else f"--config {config}: {text}"
        ) from None
    except OSError as err:  # a folder, no permission...
        raise ModelLoadError(
            f"--config {config}: cannot read it ({err.strerror}); give the run's YAML file"
        ) from None


def _encoder_config(config: dict[str, Any], where: str) -> EncoderConfig:
    model = config.get("model") or config.get("encoder")
    if not isinstance(model, dict):
        raise ModelLoadError(f"{where}: the configuration has no model section")
    try:
        return EncoderConfig(**{k: model[k] for k in _ENCODER_FIELDS if k in model}).validate()
    except (TypeError, ValueError) as err:
        raise ModelLoadError(f"{where}: bad model configuration: {err}") from err


def _strip_prefix(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Encoder weights without the ``encoder.`` (and a DDP ``module.``) prefix."""
    out = {}
    for k, v in weights.items():
        k = k.removeprefix("module.")
        if k.startswith("encoder."):
            out[k.removeprefix("encoder.")] = v
    return out


def _build(
    cfg: EncoderConfig, weights: dict[str, torch.Tensor], where: str, device: torch.device
) -> CharBertEncoder:
    cfg = attention_for(cfg, device)
    encoder = CharBertEncoder(cfg)
    try:
        encoder.load_state_dict(weights, strict=True)
    except RuntimeError as err:
        raise ModelLoadError(
            f"{where}: the weights do not fit the model shape {cfg} "
            f"({str(err).splitlines()[0]}); give the YAML the model was trained with (--config)"
        ) from err
    encoder.check_inputs = True
    return encoder.to(device).eval()


def attention_for(cfg: EncoderConfig, device: torch.device) -> EncoderConfig:
    """``cfg`` with the attention back-end for inference on ``device``: a model trained with
    ``attn_impl: flex`` runs SDPA, on every device. Both compute the same attention (same rule,
    same weights; tested to agree). Off CUDA, FlexAttention has no compiled kernel and runs its
    unfused reference path, which builds the full ``(B, H, T, T)`` scores and is several times
    slower than SDPA. On CUDA, FlexAttention compiles its kernel and block mask for each row
    length; inference rows come in every length (one per text), so it would recompile for each
    new length and, past Dynamo's recompile limit, fall back to that reference path. SDPA takes
    every length without compiling. (Training keeps flex: its rows have one length.)
    ``device`` is kept in the signature for callers that choose per device."""
    del device
    if cfg.attn_impl == "flex":
        return dataclasses.replace(cfg, attn_impl="sdpa")
    return cfg


def is_export_dir(path: str | Path) -> bool:
    """True if ``path`` is a folder written by ``stoicheia export``."""
    p = Path(path)
    return p.is_dir() and (p / EXPORT_CONFIG).exists() and (p / EXPORT_WEIGHTS).exists()


def _checkpoint_file(path: str) -> tuple[Path, str]:
    """A local checkpoint file for ``path`` (downloading a URI); also its run folder."""
    if "://" in path:
        from composer.utils import get_file

        dest = Path(tempfile.mkdtemp(prefix="stoicheia-ckpt-")) / Path(path).name
        try:
            get_file(path, str(dest), progress_bar=False)
        except Exception as err:  # object-store clients raise many types
            raise ModelLoadError(
                f"{path}: cannot fetch the checkpoint ({err}); check the URI and the credentials"
            ) from err
        return dest, ""
    p = Path(path)
    if p.is_dir():
        for name in ("best.pt", "final.pt", "latest-rank0.pt"):
            if (p / name).exists():
                return p / name, str(p)
        raise ModelLoadError(
            f"{p}: the folder holds no best.pt, final.pt, latest-rank0.pt, nor an export "
            "(config.json + model.safetensors); give a checkpoint file or an export folder"
        )
    if not p.exists():
        raise ModelLoadError(
            f"{p}: no such file or folder; give a training checkpoint (.pt), a run folder or an "
            "export folder"
        )
    return p, str(p.parent)


def _zip_head(path: Path) -> bool:
    """Whether ``path`` starts as a zip archive does (a torch checkpoint): an empty or text
    file in a run folder is not offered as a checkpoint to use instead."""
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"PK"
    except OSError:
        return False


def _other_checkpoints_hint(file: Path) -> str:
    """The fix for an unreadable checkpoint: the other checkpoints of its folder (those that
    start as a zip archive), newest first."""
    try:
        others = sorted(
            (
                p
                for p in file.parent.glob("*.pt")
                if p.resolve() != file.resolve() and not p.name.startswith(".") and _zip_head(p)
            ),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
    except OSError:
        others = []
    if others:
        shown = ", ".join(p.name for p in others[:4]) + (
            f" and {len(others) - 4} more" if len(others) > 4 else ""
        )
        return (
            f"use another checkpoint of the run (the run folder {file.parent} also holds {shown}), "
            "or copy or download the file again"
        )
    return (
        f"copy or download the file again ({file.parent} holds no other checkpoint of the run to "
        "use instead)"
    )


def inference_threads() -> int:
    """Torch CPU threads for inference: the cores not busy with other work (the 1-minute load
    average of ``os.getloadavg``), at least 1; ``OMP_NUM_THREADS``, when set, wins.

    Why not all cores: a forward pass's threads wait for each other at every operation, so on
    a machine whose cores are busy one descheduled thread stalls them all. Measured on 2 shared
    cores (benchmarks/restore_latency.py, load about 3): a top-20 restoration of a 235-letter text
    takes 11.4 s with 2 threads and 1.2 s with 1."""
    if os.environ.get("OMP_NUM_THREADS"):
        return torch.get_num_threads()
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except OSError:
        busy = 0.0
    return max(1, min(cores, int(cores - busy + 0.5)))


def load_model(
    path: str | Path | None = None,
    *,
    config: str | Path | dict[str, Any] | None = None,
    device: str | torch.device | None = "auto",
    precision: str = "auto",
) -> LoadedModel:
    """Load a trained encoder (module docstring) on ``device`` (``"auto"``: GPU if any).

    ``precision``: ``auto``, ``fp32`` or ``bf16``, resolved by
    :func:`~stoicheia.model.precision.inference_precision` (``auto``: bf16 autocast on a CPU
    with bf16 instructions for a model wide enough that it pays, else fp32); the result is the
    returned model's ``precision``.

    ``config``: a YAML run config (or its dict) to take the model shape from, for checkpoints
    that carry none. Raises :class:`ModelLoadError` (a ``ValueError``) naming the path and the
    fix: a device this machine lacks (:func:`resolve_device`), an unreadable ``config`` (checked
    before the checkpoint is read), missing file, unreadable checkpoint (the fix names the
    other checkpoints of its folder), no model shape, weights of another shape.

    ``path`` left out: the shipped base model (:mod:`stoicheia.inference.shipped`), as the
    command line's ``stoicheia restore TEXT`` does; :class:`ModelLoadError` where the checkout
    has none.

    On the CPU it sets torch's threads to :func:`inference_threads`.
    """
    if path is None:
        from stoicheia.inference.shipped import shipped_dir

        path = shipped_dir()
        if path is None:
            raise ModelLoadError(
                "no model given and no shipped model in stoicheia/base_model (a checkout "
                "without it: `stoicheia export RUN_FOLDER --ship` writes it); give a checkpoint, "
                "run folder or export folder"
            )
    dev = resolve_device(device)
    if precision not in INFERENCE_PRECISIONS:
        raise ModelLoadError(
            f"precision {precision!r}: give one of {', '.join(INFERENCE_PRECISIONS)}"
        )
    if dev.type == "cpu":
        torch.set_num_threads(inference_threads())
    source = str(path)
    given_config = (
        _config_from_yaml(config) if config is not None else None
    )  # a wrong --config fails first
    if "://" not in source and is_export_dir(source):
        return _with_precision(_load_export(Path(source), dev, config), precision)
    file, folder = _checkpoint_file(source)
    from stoicheia.checkpoint_files import checkpoint_is_complete

    with open(file, "rb") as fh:
        head = fh.read(4)
    if head[:2] != b"PK":  # torch.save writes a zip archive (see _zip_head)
        what = "an empty file" if not head else f"a file that starts {head!r}, not a zip archive"
        try:
            Path(file).read_text(encoding="utf-8")
            what = "a text file" if head else what
        except (UnicodeDecodeError, OSError):
            pass
        raise ModelLoadError(
            f"{file}: not a checkpoint ({what}); give a checkpoint written by training "
            "(best.pt, final.pt or ep*-ba*-rank0.pt of a run folder) or an export folder"
        )
    if not checkpoint_is_complete(Path(file)):  # a bit flip or a cut file must not load as weights
        raise ModelLoadError(
            f"{file}: incomplete or corrupt checkpoint (a truncated file, a failed CRC check or "
            f"a missing tensor record); {_other_checkpoints_hint(Path(file))}"
        )
    try:
        ckpt = torch.load(file, map_location="cpu", weights_only=False)
    except Exception as err:  # a truncated zip, a non-torch file...
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ModelLoadError(
            f"{file}: not a readable torch checkpoint ({first}); "
            f"{_other_checkpoints_hint(Path(file))}"
        ) from err
    state = ckpt.get("state", ckpt) if isinstance(ckpt, dict) else None
    if not isinstance(state, dict) or "model" not in state:
        raise ModelLoadError(
            f"{file}: not a Composer training checkpoint (no state.model); give best.pt, "
            "final.pt or ep*-ba*-rank0.pt"
        )
    if given_config is not None:
        run_config = given_config
    else:
        recorded = (state.get("callbacks") or {}).get("RunRecord")
        run_config = recorded.get("config") if isinstance(recorded, dict) else None
        if run_config is None and folder and (Path(folder) / "config.json").exists():
            run_config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
        if run_config is None:
            raise ModelLoadError(
                f"{file}: the checkpoint does not record its model shape (written before runs "
                "kept their config); give the YAML it was trained with, e.g. --config "
                "yamls/demo.yaml"
            )
    cfg = _encoder_config(run_config, str(file))
    encoder = _build(cfg, _strip_prefix(state["model"]), str(file), dev)
    ts = state.get("timestamp")
    step = None
    try:
        step = int(ts["Timestamp"]["batch"]) if isinstance(ts, dict) else int(ts.batch)
    except (KeyError, TypeError, AttributeError):
        pass
    return _with_precision(LoadedModel(encoder, run_config, source, "checkpoint", step), precision)


def _with_precision(model: LoadedModel, precision: str) -> LoadedModel:
    """``model`` with the precision :func:`inference_precision` chooses for it (logged)."""
    try:
        choice = inference_precision(precision, model.device.type, model.encoder_config.d_model)
    except ValueError as err:
        raise ModelLoadError(f"{model.source}: {err}") from None
    model.precision = choice.precision
    # said only when it is not the plain fp32 (a restoration's output stays the model's answer)
    log.log(
        logging.DEBUG if choice.precision == "fp32" else logging.INFO,
        "[model] precision: %s",
        choice.reason,
    )
    return model


def _load_export(folder: Path, dev: torch.device, config: Any) -> LoadedModel:
    from safetensors.torch import load_file

    again = "export the checkpoint again (stoicheia export CHECKPOINT OUT_DIR --overwrite)"
    try:
        meta = json.loads((folder / EXPORT_CONFIG).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ModelLoadError(f"{folder / EXPORT_CONFIG}: not valid JSON ({err}); {again}") from err
    if not isinstance(meta, dict):
        raise ModelLoadError(
            f"{folder / EXPORT_CONFIG}: not an export's config (a JSON object); {again}"
        )
    run_config = meta.get("stoicheia", {}).get("run_config") or {"model": meta.get("encoder", {})}
    cfg = _encoder_config({"model": meta.get("encoder", {})}, str(folder / EXPORT_CONFIG))
    try:
        weights = load_file(str(folder / EXPORT_WEIGHTS))
    except Exception as err:  # safetensors raises its own error types for a cut or foreign file
        raise ModelLoadError(
            f"{folder / EXPORT_WEIGHTS}: unreadable weights ({str(err).splitlines()[0]}); {again}"
        ) from err
    encoder = _build(cfg, _strip_prefix(weights), str(folder), dev)
    info = dict(meta.get("stoicheia", {}))
    return LoadedModel(encoder, run_config, str(folder), "export", info.get("step"), info)
