"""Which split a converted record goes to: ``train``, the held-out ``val``, or the inscription
dev set (``inscription_dev``), by rules that depend on the record alone (a stable hash of its id,
its work, its inscription number), never on file order, the machine or Python's hash seed.

:func:`stoicheia.data.shards.convert` writes one MDS folder per tier and split.
"""

from __future__ import annotations

import hashlib
import re

#: the splits every tier has; :data:`INSCRIPTION_DEV` is added when that set is held out
SPLITS = ("train", "val")
INSCRIPTION_DEV = "inscription_dev"  # the split folder of the inscription dev set
# An inscription's number is the run of digits of its EpiDoc file name: ISic000154.xml -> 154.
_INSCRIPTION_FILE = re.compile(r"[A-Za-z]+(\d+)\.xml")


def held_out_hash(record_id: str) -> float:
    """Stable pseudo-random number in ``[0, 1)`` from a record id (BLAKE2b, first 8 bytes).

    It does not depend on file order, Python's hash seed or the machine, so the held-out split
    is the same on every run.
    """
    digest = hashlib.blake2b(record_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def inscription_number(work: str) -> int | None:
    """The number of an inscription from its work id (the EpiDoc file's path relative to the
    tier's folder): ``inscriptions/ISic000154.xml`` -> ``154``. ``None`` when the file name is
    not letters followed by digits and ``.xml`` (a Perseus work, a CoNLL-U file, ...)."""
    name = work.split("#", 1)[0].rsplit("/", 1)[-1]
    m = _INSCRIPTION_FILE.fullmatch(name)
    return int(m.group(1)) if m else None


def is_inscription_dev(work: str, source: str, digits: frozenset[int]) -> bool:
    """True for an EpiDoc record (``source == "epidoc"``) whose inscription number ends in one of
    ``digits``: the inscription dev set. The rule is Ithaca's (Assael et al., Nature 2022, held
    out PHI inscriptions by the last digit of their number), applied to I.Sicily numbers:
    ISic000154 is number 154, last digit 4."""
    if not digits or source != "epidoc":
        return False
    number = inscription_number(work)
    return number is not None and number % 10 in digits


def choose_split(
    record_id: str,
    work: str,
    val_fraction: float,
    val_works: frozenset[str],
    *,
    source: str = "",
    dev_digits: frozenset[int] = frozenset(),
) -> str:
    """The split of one record: ``"inscription_dev"`` for the inscription dev set (see
    :func:`is_inscription_dev`; before any other rule, so it never reaches ``train`` nor
    ``val``), ``"val"`` when the whole work is held out or the record id hashes below
    ``val_fraction``, else ``"train"``."""
    if is_inscription_dev(work, source, dev_digits):
        return INSCRIPTION_DEV
    if work in val_works or held_out_hash(record_id) < val_fraction:
        return "val"
    return "train"
