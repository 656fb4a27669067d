"""Naming a loaded model so that the name means the same thing on any machine.

A path (``checkpoints/stoicheia-demo/best.pt``) says nothing once a restored file leaves the
machine it was made on: another run may have the same path, and the same weights may sit
elsewhere. :func:`model_identity` names a model by its run name, its training step and a
content hash of its weights (:func:`weights_sha256`), which is the same for a checkpoint and
for its export (the same tensors), wherever they are, and differs as soon as one weight does.
The base model shipped inside the package is also named as such: a user's own demo run has
the same run name (``stoicheia-demo``) and may have the same step, and an editor reading the
file should not have to compare hashes to tell the two apart.
"""

from __future__ import annotations

import hashlib
import weakref
from typing import Any

#: encoder -> its weights' hash, so that a corpus run hashes the weights once
_DIGESTS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
#: hex digits of the hash shown in a name (64 bits: no two runs' weights collide in practice)
SHOWN_HEX = 16


def weights_sha256(module: Any) -> str:
    """The SHA-256 (hex, 64 digits) of ``module``'s ``state_dict()`` (a ``torch.nn.Module``):
    for each entry in the order of its sorted names, the name (UTF-8), the dtype, the shape and
    the tensor's bytes (CPU, contiguous, native byte order), each followed by a NUL. Buffers
    count as weights do. Cached per module (weights are not changed in inference)."""
    known = _DIGESTS.get(module)
    if known is not None:
        return known
    import torch

    h = hashlib.sha256()
    state = module.state_dict()
    for name in sorted(state):
        t = state[name].detach().to("cpu").contiguous()
        h.update(name.encode("utf-8") + b"\0")
        h.update(f"{t.dtype}{tuple(t.shape)}".encode() + b"\0")
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() + b"\0")
    digest = h.hexdigest()
    _DIGESTS[module] = digest
    return digest


def model_identity(model: Any) -> str:
    """``run NAME, step N, weights sha256:XXXXXXXXXXXXXXXX`` for a loaded model (a
    :class:`~stoicheia.inference.loading.LoadedModel`: its ``config["run_name"]``, ``step`` and
    :func:`weights_sha256` of its ``encoder``, the first :data:`SHOWN_HEX` hex digits).
    ``run unnamed`` / ``step unknown`` where those are not recorded; without an ``encoder``
    (a stand-in model) the hash part is left out. ``shipped base model, run ...`` for the
    model shipped inside the package (its ``source`` the package's ``base_model`` folder)."""
    from stoicheia.inference.shipped import is_shipped

    run = (getattr(model, "config", None) or {}).get("run_name") or "unnamed"
    step = getattr(model, "step", None)
    parts = [f"run {run}", f"step {step}" if step is not None else "step unknown"]
    if is_shipped(getattr(model, "source", None)):
        parts.insert(0, "shipped base model")
    encoder = getattr(model, "encoder", None)
    if encoder is not None and hasattr(encoder, "state_dict"):
        parts.append(f"weights sha256:{weights_sha256(encoder)[:SHOWN_HEX]}")
    return ", ".join(parts)


__all__ = ["SHOWN_HEX", "model_identity", "weights_sha256"]
