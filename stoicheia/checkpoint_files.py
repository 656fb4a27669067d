"""Read a torch checkpoint file without loading it: is it complete, what tensor shapes it holds.

Used by training (a run folder's checkpoints, a ``train.load_path``, the object store) and by
inference (``load_model``) alike. Nothing here imports Composer, and torch only for the size of
a storage type: a checkpoint's ``data.pkl`` is unpickled with every class replaced by a
stand-in (:class:`_Anything`), so no code of the file runs and it is safe on untrusted files.

A kill during the tensor writes can leave a zip that opens, passes its CRC check and holds
``data.pkl`` but lacks some ``data/N`` tensor records (loading fails with "failed locating file
data/N"): :func:`checkpoint_is_complete` checks every record ``data.pkl`` names, with its size.
"""

from __future__ import annotations

import collections
import pickle
import zipfile
from pathlib import Path
from typing import Any


class _Anything:
    """Stands for every object in a scanned pickle: accepts any construction and state, so
    no class of the checkpoint is imported or run."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> _Anything:
        return _Anything()

    def __setstate__(self, state: Any) -> None:
        pass

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def append(self, value: Any) -> None:
        pass

    def extend(self, values: Any) -> None:
        pass


#: Bytes per element of torch's storage classes (torch/storage.py), so that checking a
#: checkpoint needs no torch import; other names ask torch.
_ITEMSIZE = {
    "UntypedStorage": 1,
    "ByteStorage": 1,
    "CharStorage": 1,
    "BoolStorage": 1,
    "QUInt8Storage": 1,
    "QInt8Storage": 1,
    "ShortStorage": 2,
    "HalfStorage": 2,
    "BFloat16Storage": 2,
    "IntStorage": 4,
    "FloatStorage": 4,
    "QInt32Storage": 4,
    "LongStorage": 8,
    "DoubleStorage": 8,
    "ComplexFloatStorage": 8,
    "ComplexDoubleStorage": 16,
}


class _StorageType:
    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def itemsize(self) -> int:
        """Bytes per element of ``torch.<name>`` (1 for ``UntypedStorage`` and unknown types)."""
        if (
            self.name in _ITEMSIZE
        ):  # without importing torch (seconds): `stoicheia status` checks files
            return _ITEMSIZE[self.name]
        import warnings

        import torch

        with warnings.catch_warnings():  # torch's legacy typed-storage classes warn when touched
            warnings.simplefilter("ignore")
            cls = getattr(torch, self.name, None)
            dtype = getattr(cls, "dtype", None)
        return dtype.itemsize if isinstance(dtype, torch.dtype) else 1


class TensorShape(tuple):
    """Stands for a tensor in a scanned pickle: its shape (a tuple of ints)."""


#: What reading a cut, corrupt or foreign file as a torch checkpoint can raise.
_UNREADABLE = (
    zipfile.BadZipFile,
    OSError,
    EOFError,
    ValueError,
    pickle.UnpicklingError,
    IndexError,
    KeyError,
    TypeError,
    AttributeError,
)


def _rebuild_tensor(storage: Any, offset: Any, size: Any, *args: Any, **kwargs: Any) -> TensorShape:
    return TensorShape(int(n) for n in size)


def _rebuild_parameter(data: Any, *args: Any, **kwargs: Any) -> Any:
    return data


#: The few callables of a torch pickle that are rebuilt for real: containers (so that a state
#: dict keeps its keys) and tensors (as their shapes). Nothing else of the file runs.
_SAFE: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
}


class _StorageScanner(pickle.Unpickler):
    """Unpickles a torch ``data.pkl`` with every class replaced by :class:`_Anything`,
    recording the persistent ids ``('storage', type, key, location, numel)`` of its tensor
    storages (the format of ``torch.serialization._save``)."""

    def __init__(self, fh: Any) -> None:
        super().__init__(fh)
        self.storages: list[tuple[str, int]] = []  # (record key, bytes)

    def find_class(self, module: str, name: str) -> Any:
        if module == "torch" and name.endswith("Storage"):
            return _StorageType(name)
        if (module, name) in _SAFE:
            return _SAFE[module, name]
        return _Anything

    def persistent_load(self, pid: Any) -> Any:
        if isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage":
            stype, key, numel = pid[1], str(pid[2]), int(pid[4])
            itemsize = stype.itemsize if isinstance(stype, _StorageType) else 1
            self.storages.append((key, numel * itemsize))
        return _Anything()


def missing_records(path: Path | str) -> list[str] | None:
    """The storage records that ``data.pkl`` of checkpoint ``path`` names but the zip lacks
    (or holds short), e.g. ``['data/7']``; ``None`` if ``path`` is no readable torch zip
    checkpoint (not a zip, truncated, no ``data.pkl``, a CRC error, an unreadable pickle)."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = {i.filename: i for i in zf.infolist()}
            pkls = [n for n in infos if n.endswith("/data.pkl") or n == "data.pkl"]
            if len(pkls) != 1:
                return None
            prefix = pkls[0][: -len("data.pkl")]
            if zf.testzip() is not None:  # reads every member once and checks its CRC-32
                return None
            with zf.open(pkls[0]) as fh:
                scanner = _StorageScanner(fh)
                scanner.load()
    except _UNREADABLE:
        return None
    missing = []
    for key, nbytes in scanner.storages:
        info = infos.get(f"{prefix}data/{key}")
        if info is None or info.file_size < nbytes:
            missing.append(f"data/{key}")
    return missing


def checkpoint_is_complete(path: Path | str) -> bool:
    """True if ``path`` is a torch zip checkpoint that can be loaded in full: a readable zip
    with one ``data.pkl``, every member passing its CRC-32, and every tensor storage record
    that ``data.pkl`` references present with at least the bytes its storage needs.

    Reads the whole file once (the CRC check; ~0.3 s per GB from the page cache, see the
    README) and unpickles ``data.pkl`` without importing or running any class of it (every
    object is replaced by a stand-in), so it is safe on untrusted files. Never raises.
    """
    missing = missing_records(path)
    return missing == []


def validate_checkpoint(path: Path | str, specs: Any = None) -> bool:
    """:func:`checkpoint_is_complete` with the signature of Composer's
    ``CHECKPOINT_VALIDATION_FUNCTION`` hook (``specs`` is ignored)."""
    return checkpoint_is_complete(path)


def model_shapes(path: Path | str) -> dict[str, tuple[int, ...]] | None:
    """``{parameter name: shape}`` of the model weights in the Composer checkpoint ``path``
    (``state.model``; a DDP ``module.`` prefix removed), read from its ``data.pkl`` without
    loading a tensor or running any code of the file. ``None`` if ``path`` is no readable torch
    zip or holds no ``state.model`` mapping. Reads only ``data.pkl`` (no CRC check of the
    tensors: see :func:`checkpoint_is_complete` for that)."""
    try:
        with zipfile.ZipFile(path) as zf:
            pkls = [n for n in zf.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
            if len(pkls) != 1:
                return None
            with zf.open(pkls[0]) as fh:
                obj = _StorageScanner(fh).load()
    except _UNREADABLE:
        return None
    state = obj.get("state", obj) if isinstance(obj, dict) else None
    model = state.get("model") if isinstance(state, dict) else None
    if not isinstance(model, dict):
        return None
    return {strip_ddp(k): tuple(v) for k, v in model.items() if isinstance(v, TensorShape)}


def strip_ddp(name: str) -> str:
    """A parameter name without the ``module.`` prefix that ``DistributedDataParallel`` adds."""
    return name[len("module.") :] if name.startswith("module.") else name


def shape_mismatches(
    saved: dict[str, tuple[int, ...]], model: dict[str, tuple[int, ...]]
) -> list[str]:
    """What differs between the parameter shapes of a checkpoint (``saved``) and of the model
    it is to be loaded into (``model``), one description per parameter, e.g.
    ``"model.embed.weight: [96, 64] in the checkpoint, [96, 32] in this model"``, missing
    and unexpected names included; ``[]`` if they agree."""
    out = []
    for name in sorted(set(saved) | set(model)):
        if name not in saved:
            out.append(f"{name}: missing from the checkpoint")
        elif name not in model:
            out.append(f"{name}: in the checkpoint, not in this model")
        elif tuple(saved[name]) != tuple(model[name]):
            out.append(
                f"{name}: {list(saved[name])} in the checkpoint, {list(model[name])} in this model"
            )
    return out
