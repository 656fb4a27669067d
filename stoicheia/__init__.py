"""Stoicheia: a character-level masked-diffusion encoder for Ancient Greek.

For users of a trained model::

    import stoicheia
    model = stoicheia.load_model("checkpoints/stoicheia-demo/best.pt")   # or an export folder
    result = stoicheia.restore(model, "καὶ τοῦ δή[5±3] τοῦ ἑαυτοῦ")
    print(result.restorations[0].text)

:func:`load_model` is :func:`stoicheia.inference.loading.load_model`; :func:`restore` is
:func:`stoicheia.inference.restore.restore`; :func:`restore_epidoc` (the lacunae of an EpiDoc
file) is :func:`stoicheia.inference.epidoc.restore.restore_epidoc`. They are imported on first
use (they load torch).
"""

from __future__ import annotations

from typing import Any

__all__ = ["load_model", "restore", "restore_epidoc"]


def __getattr__(name: str) -> Any:
    if name == "load_model":
        from stoicheia.inference.loading import load_model

        return load_model
    if name == "restore":
        from stoicheia.inference.restore import restore

        return restore
    if name == "restore_epidoc":
        from stoicheia.inference.epidoc.restore import restore_epidoc

        return restore_epidoc
    raise AttributeError(f"module 'stoicheia' has no attribute {name!r}")
