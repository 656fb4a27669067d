"""Which split a converted record goes to: ``train``, the held-out ``val``, or the inscription
dev set (``inscription_dev``), by rules that depend on the record alone (a stable hash of its id,
its work, its inscription number) and, for an inscription, on its group of twins
(:mod:`stoicheia.data.twins`), never on file order, the machine or Python's hash seed.

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


_ISICILY_FILE = re.compile(r"ISic(\d+)\.xml")


def dev_digit(work: str) -> int:
    """The digit (0-9) that puts an EpiDoc inscription in the dev set or not.

    * An I.Sicily file (``ISic000154.xml``): the last digit of its number (4). This is Ithaca's
      rule (Assael et al., Nature 2022, held out PHI inscriptions by the last digit of their
      number), kept so that figures stay comparable with earlier dev sets.
    * Any other file (``5.72.xml`` of IOSPE, ``igcyr131500.xml``, ``ic1_14_1.xml``,
      ``akko0001.xml``, a user's own corpus): the last digit of a stable hash of the file name
      (:func:`held_out_hash` x 10). Numbers in other corpora do not spread evenly over their
      last digit (261 of IGCyr's 299 files end in 0), a hash does: each digit takes one file in
      ten of every corpus, the same on every machine and run.

    The folder is not part of the rule (``work`` may be ``inscriptions/ISic000154.xml`` or
    ``ISic000154.xml``), so a corpus moved or given as another folder keeps its dev set."""
    name = work.split("#", 1)[0].rsplit("/", 1)[-1]
    m = _ISICILY_FILE.fullmatch(name)
    if m:
        return int(m.group(1)) % 10
    return min(int(held_out_hash(f"inscription-dev|{name}") * 10), 9)


def is_inscription_dev(work: str, source: str, digits: frozenset[int]) -> bool:
    """True for an EpiDoc record (``source == "epidoc"``) whose :func:`dev_digit` is one of
    ``digits``: the inscription dev set."""
    if not digits or source != "epidoc":
        return False
    return dev_digit(work) in digits


def choose_split(
    record_id: str,
    work: str,
    val_fraction: float,
    val_works: frozenset[str],
    *,
    source: str = "",
    dev_digits: frozenset[int] = frozenset(),
    dev_key: str | None = None,
) -> str:
    """The split of one record: ``"inscription_dev"`` for the inscription dev set (see
    :func:`is_inscription_dev`; before any other rule, so it never reaches ``train`` nor
    ``val``), ``"val"`` when the whole work is held out or the record id hashes below
    ``val_fraction``, else ``"train"``.

    ``dev_key``: the work whose :func:`dev_digit` decides instead of ``work``'s own: the first
    member of ``work``'s group of twins (:mod:`stoicheia.data.twins`), so that all twins go
    to the dev set together or not at all."""
    if is_inscription_dev(dev_key or work, source, dev_digits):
        return INSCRIPTION_DEV
    if work in val_works or held_out_hash(record_id) < val_fraction:
        return "val"
    return "train"
