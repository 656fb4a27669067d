"""The statistics of a converted corpus (``stats.json``): what each tier kept and dropped, and
the letter-unigram entropy that is the baseline of ``bits_per_char``.

:func:`stoicheia.data.shards.convert` fills a :class:`TierStats` per tier and writes
``stats.json``; :func:`read_stats` reads it back for training, evaluation and reports.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stoicheia.text.alphabet import LETTERS, NUM_LETTERS

#: what the readers tally as read (records, characters, ...), not as left out
_READ_KINDS = {
    "records",
    "chars",
    "sentences",
    "gaps",
    "choice",
    "expansions",
    "symbol",
    "space",
    "supplements",
}


@dataclass
class TierStats:
    """Counts for one tier, written to ``stats.json`` (letters are Greek letters kept)."""

    files: int = 0
    files_skipped: dict[str, str] = field(default_factory=dict)  # file -> reason
    records_kept: Counter = field(default_factory=Counter)  # split -> records (source records)
    parts: Counter = field(default_factory=Counter)  # split -> MDS samples written
    letters: Counter = field(default_factory=Counter)  # split -> letters
    words: Counter = field(default_factory=Counter)  # split -> words
    records_dropped: Counter = field(default_factory=Counter)  # reason -> records
    # what readers read and left out, by kind
    reader_counts: Counter = field(default_factory=Counter)
    files_without_records: list[str] = field(default_factory=list)  # read, but no record kept
    # why those files kept no record (see :func:`why_no_record`) -> files
    files_without_records_why: Counter = field(default_factory=Counter)
    # lacunae, supplied letters, ... (kept records and dropped)
    leiden: Counter = field(default_factory=Counter)
    lacuna_slots: Counter = field(default_factory=Counter)  # split -> real-lacuna slots stored
    files_not_read: list[str] = field(default_factory=list)  # in the directories, not a source
    stripped: Counter = field(default_factory=Counter)  # kind -> characters dropped
    # per input (each PATH of TIER=PATH): files read / refused (by reason) / without a record,
    # records kept, letters, real-lacuna slots, editors' supplements (<supplied reason="lost">)
    per_input: dict[str, Counter] = field(default_factory=dict)
    # letter counts of the train split, by letter id: int64, shape (NUM_LETTERS,)
    letter_counts: np.ndarray = field(default_factory=lambda: np.zeros(NUM_LETTERS, dtype=np.int64))

    def to_json(self) -> dict:
        """The tier's entry of ``stats.json``."""
        return {
            "letter_unigram_entropy_bits": unigram_entropy_bits(self.letter_counts),
            "letter_counts_train": dict(zip(LETTERS, self.letter_counts.tolist(), strict=False)),
            "files": self.files,
            "files_skipped": dict(sorted(self.files_skipped.items())),
            "records_kept": dict(self.records_kept),
            "samples_written": dict(self.parts),
            "letters": dict(self.letters),
            "real_lacuna_slots": dict(self.lacuna_slots),
            "words": dict(self.words),
            "records_dropped": dict(self.records_dropped),
            "files_without_records": self.files_without_records,
            "files_without_records_why": dict(self.files_without_records_why.most_common()),
            "files_not_read": self.files_not_read,
            "reader_counts": dict(self.reader_counts.most_common()),
            "stripped_characters": dict(self.stripped.most_common()),
            "leiden": dict(self.leiden.most_common()),
            "per_input": {k: dict(v) for k, v in self.per_input.items()},
        }

    def left_out(self, most: int = 6) -> str:
        """The commonest kinds the readers left out (``lang:la: 1, edition_skipped:...``), for
        error messages; the tallies of what was read (records, chars, ...) are not listed."""
        kinds = [(k, v) for k, v in self.reader_counts.most_common() if k not in _READ_KINDS]
        return ", ".join(f"{k}: {v}" for k, v in kinds[:most])


def unigram_entropy_bits(counts: np.ndarray) -> float:
    """Shannon entropy ``-sum p log2 p`` (bits per letter) of letter counts: the bits per
    character of a model that knows only letter frequencies, the baseline for ``bits_per_char``."""
    total = counts.sum()
    if total == 0:
        return float("nan")
    p = counts[counts > 0] / total
    return float(-(p * np.log2(p)).sum())


def mixture_unigram_entropy(stats: dict, tier_weights: Mapping[str, float]) -> float:
    """Unigram entropy (bits per letter) of the letter distribution the tier mix trains on:
    each tier's train letter frequencies weighted by its tier weight. NaN if unknown."""
    mix = np.zeros(NUM_LETTERS)
    for tier, w in tier_weights.items():
        counts = stats.get("tiers", {}).get(tier, {}).get("letter_counts_train")
        if w <= 0 or not counts:
            continue
        c = np.array([counts[ch] for ch in LETTERS], dtype=np.float64)
        mix += w * c / max(c.sum(), 1.0)
    return unigram_entropy_bits(mix)


def read_stats(shard_root: Path) -> dict:
    """Load ``stats.json`` of a converted corpus. Raises ``FileNotFoundError`` with the fix."""
    path = Path(shard_root) / "stats.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: run `stoicheia convert` first (see README)")
    return json.loads(path.read_text(encoding="utf-8"))


def mix_baseline_bits(stats_root: str | Path, tier_weights: Mapping[str, float]) -> float | None:
    """:func:`mixture_unigram_entropy` of the corpus at ``stats_root`` (bits per letter), or
    ``None`` when its ``stats.json`` is missing or older (no letter counts): then no baseline
    is shown."""
    try:
        return mixture_unigram_entropy(read_stats(Path(stats_root)), tier_weights)
    except (FileNotFoundError, ValueError, KeyError):
        return None  # shards from an object store, or an older stats.json: no baseline shown


def run_unigram_bits(
    config: Mapping[str, Any], stats_root: str | Path | None = None
) -> float | None:
    """The letter-unigram entropy of a run's training mix in bits per letter, the one figure
    that the training console, ``report``, the model card and ``evaluate`` print:
    :func:`mix_baseline_bits` of the corpus at ``stats_root`` (default the run's
    ``data.shard_root``) under the run's ``data.tier_weights``. ``config``: the run's
    configuration as a dict (``config.json``, a checkpoint's). ``None`` when the config names no
    shards or no tier weights, or the corpus has no usable ``stats.json``."""
    data = config.get("data") if isinstance(config, Mapping) else None
    if not isinstance(data, Mapping):
        return None
    root = stats_root if stats_root is not None else data.get("shard_root")
    weights = data.get("tier_weights")
    if not root or not isinstance(weights, Mapping) or not weights:
        return None
    try:
        value = mix_baseline_bits(root, weights)
    except (OSError, TypeError, ValueError):
        return None  # a stats.json that cannot be read, weights that are not numbers
    return value if value is not None and math.isfinite(value) else None


def context_note(seq_len: int, stats_root: str | Path) -> str | None:
    """A warning when the rows are much longer than the corpus's records, else ``None``.

    ``stoicheia convert --max-record-letters N`` (default 2048; ``max_record_letters`` in
    ``stats.json``) stores longer texts as separate records of at most N letters, and the
    noiser cuts a record into pieces of at most ``0.8 * seq_len`` letters (a fifth of the row is
    left for the expansion of lacunae of unknown width). With N below that, each row of
    ``seq_len`` slots packs several documents, attention never crosses a document, and no
    letter is trained with more than N letters of context: the long rows buy fuller batches,
    not long context. The note says so and names the fix (convert with ``--max-record-letters``
    at least ``0.8 * seq_len``). ``None`` too when ``stats.json`` is missing or does not record
    N."""
    try:
        n = int(read_stats(Path(stats_root))["max_record_letters"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None
    piece = max(1, int(seq_len * 0.8))
    if n >= piece:
        return None
    return (
        f"data.seq_len={seq_len}, but the shards hold records of at most {n} letters "
        f"(stoicheia convert --max-record-letters {n}): each row packs several documents and "
        f"no letter is trained with more than {n} letters of context. For the long context, "
        f"convert again with --max-record-letters {seq_len} (pieces are cut at {piece} "
        "letters, 0.8 x seq_len, either way); to pack short documents on purpose, ignore this"
    )


def why_no_record(dropped: Counter, reader: Counter) -> str:
    """Why a file that was read kept no record, from its own counts: ``dropped`` (records
    rejected by normalisation, by reason) and ``reader`` (what the reader left out, by kind).
    One of: ``records not Greek``, ``records empty`` (or another rejection reason), ``edition
    not in Greek`` (the edition's language, e.g. ``xml:lang="la"``), ``edition empty`` (the
    edition read holds no text: an IIP transcription left blank), ``no edition read`` (only
    editions of subtypes the reader does not take, :mod:`stoicheia.sources.epidoc_units`),
    ``no text``."""
    if dropped:
        reason = dropped.most_common(1)[0][0]
        return {"not_greek": "records not Greek", "empty": "records empty"}.get(
            reason, f"records rejected ({reason})"
        )
    if any(k.startswith("lang:") for k in reader):
        return "edition not in Greek"
    if reader.get("empty_division"):
        return "edition empty"
    if any(k.startswith("edition_skipped:") for k in reader) and not reader.get("records"):
        return "no edition read"
    return "no text"
