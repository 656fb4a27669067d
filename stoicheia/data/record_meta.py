"""The shards' ``meta`` column: what the source says of a record's work (an inscription's
corpus, citation, web page, place, date and object: :attr:`stoicheia.sources.SourceRecord.meta`),
as JSON, so that a parallel can be cited as its corpus cites it."""

from __future__ import annotations

import json
from collections.abc import Mapping

__all__ = ["META_COLUMN", "citation_of", "meta_json", "record_meta"]

#: the MDS column (``str``: JSON, ``""`` when the source says nothing)
META_COLUMN = "meta"


def meta_json(meta: Mapping) -> str:
    """``meta`` as the column's JSON (``""`` for an empty mapping)."""
    return json.dumps(dict(meta), ensure_ascii=False) if meta else ""


def record_meta(sample: Mapping) -> dict:
    """The ``meta`` column of one MDS sample as a dict (``corpus``, ``citation``, ``url``,
    ``place``, ...); ``{}`` for a record without it or a shard written before the column
    existed."""
    raw = sample.get(META_COLUMN) or ""
    return json.loads(raw) if raw else {}


def citation_of(meta: str) -> dict[str, str]:
    """The ``corpus``, ``citation`` and ``url`` of a record's JSON ``meta`` (for
    ``stats.json``: the benchmark reports per corpus)."""
    got = json.loads(meta) if meta else {}
    return {k: got[k] for k in ("corpus", "citation", "url") if k in got}
