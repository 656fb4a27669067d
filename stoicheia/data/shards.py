"""Source files to MDS shards: one directory per tier, each with a ``train`` and a ``val`` split
(and an ``inscription_dev`` split when the inscription dev set is held out).

Layout written by :func:`convert`::

    OUT/
      stats.json               letters, words, records kept and dropped, stripped characters
      gold/train/index.json    MDS shards (zstd) read by streaming.StreamingDataset
      gold/val/index.json
      silver/train/...
      bronze/inscription_dev/  the inscription dev set (``inscription_dev_digits``): never
                               trained on, never in ``val`` either (the restoration benchmark's
                               texts; ``stats.json`` lists their EpiDoc files)

Each MDS sample is one record (or one word-aligned part of a long record) with the columns in
:data:`COLUMNS`: the five letter planes as raw ``uint8`` bytes of equal length, plus ``id``,
``part``, ``source``, ``tier``, ``work``, ``lines`` (where the edition's numbered lines
begin: :mod:`stoicheia.data.line_numbers`) and ``meta`` (what the source says of the work, as
JSON: an inscription's corpus, citation, web page, place, date and object;
:mod:`stoicheia.data.record_meta`).

The split each record goes to is decided by :mod:`stoicheia.data.splits`, the counts of
``stats.json`` are kept by :mod:`stoicheia.data.corpus_stats`, and the source files are read in
worker processes by :mod:`stoicheia.data.conversion_pool`; this module writes the shards.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from streaming import MDSWriter

from stoicheia.data.conversion_pool import map_files
from stoicheia.data.convert_inputs import (
    ConvertError,
    check_replaceable,
    refusal_reason,
    source_files,
)
from stoicheia.data.corpus_stats import TierStats, why_no_record
from stoicheia.data.line_numbers import LINES_COLUMN, encode_lines
from stoicheia.data.part_spool import PartSpool, SpooledParts
from stoicheia.data.record_meta import META_COLUMN, citation_of, meta_json
from stoicheia.data.record_parts import LinesMisaligned, record_parts
from stoicheia.data.sample_planes import decode_planes, split_at_words  # noqa: F401  (old names)
from stoicheia.data.splits import INSCRIPTION_DEV, SPLITS, choose_split
from stoicheia.data.twins import held_and_known_twins, twin_key
from stoicheia.publish import partial_folder, publish_folder, write_failure
from stoicheia.sources import EpiDocOptions, SourceError, read_source
from stoicheia.text.alphabet import NUM_LETTERS, PLANES
from stoicheia.text.planes import Planes

COLUMNS = {
    "id": "str",
    "part": "int",
    "source": "str",
    "tier": "str",
    "work": "str",
    **{name: "bytes" for name in PLANES},
    LINES_COLUMN: "str",  # the edition's line numbers (stoicheia.data.line_numbers)
    META_COLUMN: "str",  # what the source says of the work, JSON (SourceRecord.meta; "" if none)
}


@dataclass
class _FileResult:
    """What one worker made of one source file (picklable). Each record is ``(id, source,
    work, parts, words, meta)``; its parts (one dict of sample columns each) are a list, or
    :class:`~stoicheia.data.part_spool.SpooledParts` read back from disk one chunk at a time
    once the file has more than :data:`~stoicheia.data.part_spool.CHUNK_PARTS` parts."""

    path: str
    error: str | None = None
    records: list[tuple[str, str, str, list[dict] | SpooledParts, int, str]] = field(
        default_factory=list
    )
    dropped: Counter = field(default_factory=Counter)
    stripped: Counter = field(default_factory=Counter)
    reader: Counter = field(
        default_factory=Counter
    )  # what the reader kept out of the text, by kind
    leiden: Counter = field(default_factory=Counter)  # what the Leiden notation held, by kind
    parts_held: int = 0  # the most parts of the file the worker held in memory at once


def _samples(parts: Iterable[tuple[Planes, list[tuple[int, str]]]]) -> Iterator[dict]:
    """The sample columns of each part of a record (:mod:`stoicheia.data.record_parts`), made
    one at a time (the bytes of a part exist only until it is spooled or written): its planes
    and its line starts (offsets from the part's start)."""
    for p, starts in parts:
        yield {
            **{name: getattr(p, name).tobytes() for name in PLANES},
            LINES_COLUMN: encode_lines(starts),
        }


def _convert_file(
    args: tuple[str, str | None, int, float, EpiDocOptions | None, str | None],
) -> _FileResult:
    """Read and normalise one source file (in a worker process): ``args`` are the file, its
    root, ``max_record_letters``, ``min_greek``, the EpiDoc options and the spool folder
    (``None``: every part kept in memory, no spool). Each record is cut into parts as it is
    encoded (:func:`stoicheia.data.record_parts.record_parts`), so that a long paragraph is
    never held whole as planes."""
    path, root, max_letters, min_greek, epidoc, spool_dir = args
    result = _FileResult(path=path)
    spool = PartSpool(Path(spool_dir) if spool_dir else None)
    try:
        for rec in read_source(
            Path(path),
            Path(root) if root else None,
            counts=result.reader,
            epidoc=epidoc,
            chunks=True,
        ):
            how = dict(min_greek=min_greek, max_letters=max_letters)
            text, lines = rec.stream()  # a long record: its chunks (and lines) as they come
            made = record_parts(text, rec.known, lines, **how)
            try:
                parts = spool.take(_samples(made))
            except LinesMisaligned:  # a long record whose lines need realigning: whole
                text, lines = rec.stream() if rec.streamed else (rec.text, rec.lines)
                made = record_parts(text, rec.known, lines, whole=True, **how)
                parts = spool.take(_samples(made))
            result.stripped.update(made.dropped)
            result.leiden.update(made.leiden)
            if made.reject_reason is not None:
                spool.drop(parts)
                result.dropped[made.reject_reason] += 1
                continue
            result.reader.update(made.line_counts)
            meta = meta_json(rec.meta)
            result.records.append((rec.id, rec.source, rec.work, parts, made.n_words, meta))
    except SourceError as err:
        result.error = str(err)
        result.records.clear()
    finally:
        spool.close()
        result.parts_held = spool.peak
    return result


def convert(
    inputs: Mapping[str, Sequence[Path]],
    out: Path,
    *,
    val_fraction: float = 0.005,
    val_works: Iterable[str] = (),
    max_record_letters: int = 2048,
    min_greek: float = 0.95,
    skip_bad: bool = False,
    workers: int = 1,
    overwrite: bool = False,
    progress: bool | str = True,
    epidoc: EpiDocOptions | None = None,
    inscription_dev_digits: Iterable[int] = (),
    parallels_index: bool = True,
    known_texts: Mapping[str, np.ndarray] | None = None,
) -> dict:
    """Read every source file of every tier and write MDS shards plus ``stats.json``.

    Args:
        inputs: tier name -> files or directories (directories are searched recursively for
            ``.xml``, ``.conllu``, ``.txt`` and ``.jsonl``). Record ids are relative to each
            directory given, e.g. ``Homer/hom.il_gk.xml#1``.
        out: output directory; it must not exist unless ``overwrite``.
        val_fraction: share of records (by a stable hash of the record id) held out.
        val_works: work ids (``Author/file.xml``) sent to ``val`` whole.
        max_record_letters: longer records are stored as several word-aligned parts (letters).
        min_greek: records with a smaller share of Greek letters are dropped and counted.
        skip_bad: if False, the first unreadable file stops the conversion with its error;
            if True, it is skipped, and ``stats.json`` names it with the reason.
        workers: processes that read and normalise files in parallel (output order is fixed).
        progress: ``True``: a progress bar (files, records, ETA) on stderr; ``"lines"``: a
            plain progress line every 30 s (not a terminal); ``False``: none.
        epidoc: options of the EpiDoc reader (``supplied_lost``, ``expansions``, ``choice``);
            recorded in ``stats.json``.
        inscription_dev_digits: EpiDoc inscriptions whose number ends in one of these digits
            (``ISic000154.xml``: 154, digit 4) form the inscription dev set: their records go to
            the tier's ``inscription_dev`` split, never to ``train`` or ``val``, and
            ``stats.json`` (``inscription_dev.works``) lists each with its EpiDoc file.
        parallels_index: also build the parallels index of the train records into
            ``OUT/parallels`` (:func:`stoicheia.data.parallels_index.build_index`).
        known_texts: texts already converted elsewhere (key ``"TIER\\tWORK"`` -> uint8 letter
            ids ``(n,)``, lacunae left out; ``stoicheia add-corpus`` passes those of the shards it
            adds to): an EpiDoc text of the inputs that is a twin of one of them
            (:mod:`stoicheia.data.twins`) is not written, and ``stats.json``'s
            ``inscription_dev.twins_of_known`` lists it with its twin; its records are counted
            dropped (``twin of a text already in the shards``).

    Returns:
        The statistics written to ``OUT/stats.json``.

    Raises:
        ConvertError: unreadable file without ``skip_bad``; output exists; no input files; a
            tier with no records at all; ``inscription_dev_digits`` not digits 0-9 or matching no
            EpiDoc inscription of the inputs.
    """
    out = Path(out)
    val_works = frozenset(val_works)
    dev_digits = frozenset(inscription_dev_digits)
    _check_options(out, inputs, overwrite, val_fraction, max_record_letters, min_greek, dev_digits)
    dev_works: dict[tuple[str, str], dict] = {}  # (tier, work) -> its entry in stats.json
    stats: dict[str, TierStats] = {}
    tmp = partial_folder(out)
    # parts of long files on their way from the readers to the writers (part_spool)
    spool_dir = tmp / "spool"
    try:
        seen_works: set[str] = set()
        warnings: list[str] = []

        writers: dict[str, dict[str, MDSWriter]] = {}
        # EpiDoc records wait until every tier is read when the dev set is held out: twins (one
        # text under two numbers, across corpora and tiers) are found first, and each group of
        # twins goes to one split (stoicheia.data.twins).
        held: list[tuple[str, str, tuple]] = []
        given_of: dict[str, str] = {}  # source file -> the PATH of TIER=PATH it was found under

        def store(tier: str, path: str, rec: tuple, dev_key: str | None = None) -> None:
            rec_id, source, work, parts, n_words, meta = rec
            st = stats[tier]
            mine = st.per_input.setdefault(given_of[path], Counter())
            split = choose_split(
                rec_id,
                work,
                val_fraction,
                val_works,
                source=source,
                dev_digits=dev_digits,
                dev_key=dev_key,
            )
            entry = None
            if split == INSCRIPTION_DEV:
                entry = dev_works.setdefault(
                    (tier, work),
                    {
                        "tier": tier,
                        "work": work,
                        "epidoc": str(Path(path).resolve()),
                        **citation_of(meta),
                        "records": 0,
                        "letters": 0,
                    },
                )
                entry["records"] += 1
            st.records_kept[split] += 1
            mine["records"] += 1
            st.words[split] += n_words
            for k, planes in enumerate(parts):
                st.parts[split] += 1
                chars = np.frombuffer(planes["chars"], dtype=np.uint8)
                real = np.frombuffer(planes["lacuna"], dtype=np.uint8) > 0
                n_real = int(np.count_nonzero(real))
                # real-lacuna slots are not letters: counted apart
                st.letters[split] += len(chars) - n_real
                st.lacuna_slots[split] += n_real
                mine["letters"] += len(chars) - n_real
                mine["lacuna_slots"] += n_real
                if entry is not None:
                    entry["letters"] += len(chars) - n_real
                if split == "train":
                    st.letter_counts += np.bincount(chars[~real], minlength=NUM_LETTERS)
                writers[tier][split].write(
                    {
                        "id": rec_id,
                        "part": k,
                        "source": source,
                        "tier": tier,
                        "work": work,
                        **planes,
                        META_COLUMN: meta,
                    }
                )

        try:
            for tier, paths in inputs.items():
                st = stats[tier] = TierStats()
                files = source_files(tier, paths, st)
                jobs = [
                    (str(f), str(root), max_record_letters, min_greek, epidoc, str(spool_dir))
                    for f, root, _ in files
                ]
                given_of.update((str(f), str(given)) for f, _, given in files)
                writers[tier] = {
                    split: MDSWriter(
                        out=str(tmp / tier / split),
                        columns=COLUMNS,
                        compression="zstd",
                        size_limit=1 << 25,
                    )
                    for split in SPLITS + ((INSCRIPTION_DEV,) if dev_digits else ())
                }
                for res in map_files(_convert_file, jobs, workers, progress, tier):
                    st.files += 1
                    mine = st.per_input.setdefault(given_of[res.path], Counter())
                    mine["files"] += 1
                    if res.error is not None:
                        if not skip_bad:
                            raise ConvertError(
                                f"{res.error}\n(pass --skip-bad to convert the other files "
                                "and count this one as skipped)"
                            )
                        st.files_skipped[res.path] = res.error
                        mine["refused"] += 1
                        mine[f"refused:{refusal_reason(res.error)}"] += 1
                        continue
                    mine["supplements"] += res.reader.get("supplements", 0)
                    st.records_dropped.update(res.dropped)
                    st.stripped.update(res.stripped)
                    st.reader_counts.update(res.reader)
                    st.leiden.update(res.leiden)
                    if not res.records:
                        mine["without_record"] += 1
                        st.files_without_records.append(res.path)
                        st.files_without_records_why[why_no_record(res.dropped, res.reader)] += 1
                    kept = False
                    for rec in res.records:
                        seen_works.add(rec[2])
                        if (dev_digits or known_texts) and rec[1] == "epidoc":
                            held.append((tier, res.path, rec))
                            kept = True
                        else:
                            store(tier, res.path, rec)
                    spooled = {r[3].path for r in res.records if isinstance(r[3], SpooledParts)}
                    if not kept:  # written: its spool is not needed any more
                        for spool_file in spooled:
                            Path(spool_file).unlink()
            twins, known_twins = held_and_known_twins(held, known_texts or {})
            first_of = {m: g.members[0] for g in twins for m in g.members}
            for tier, path, rec in held:
                key = twin_key(tier, rec[2])
                if key in known_twins:
                    # one text under two numbers: already in the shards, not added twice
                    stats[tier].records_dropped[TWIN_OF_KNOWN] += 1
                    stats[tier].per_input.setdefault(given_of[path], Counter())[
                        "twins_of_known"
                    ] += 1
                    continue
                first = first_of.get(key)
                store(tier, path, rec, dev_key=first.split("\t", 1)[1] if first else None)
            twins_json = [
                {"members": [m.replace("\t", "/", 1) for m in g.members], "pairs": len(g.pairs)}
                for g in twins
            ]
        finally:
            for tier_writers in writers.values():
                for w in tier_writers.values():
                    w.finish()
            shutil.rmtree(spool_dir, ignore_errors=True)
        for tier, paths in inputs.items():
            st = stats[tier]
            if dev_digits and st.records_kept[INSCRIPTION_DEV] == 0:
                # no empty split folder
                shutil.rmtree(tmp / tier / INSCRIPTION_DEV, ignore_errors=True)
            if sum(st.records_kept.values()) == 0:
                raise ConvertError(
                    f"tier {tier!r}: no Greek record in {', '.join(map(str, paths))} "
                    f"(records dropped: {dict(st.records_dropped) or 'none'}; "
                    f"files without records: {', '.join(st.files_without_records) or 'none'}; "
                    f"files refused: {_refused(st.files_skipped)}; "
                    "left out by the readers: "
                    f"{st.left_out() or 'nothing'}). Check that these are Greek "
                    "sources (Perseus TEI, EpiDoc, CoNLL-U, .txt, .jsonl) or lower --min-greek"
                )
            if st.records_kept["val"] == 0:
                warnings.append(
                    f"tier {tier!r} has no held-out (val) record: it will not be evaluated; "
                    "raise --val-fraction or name a --val-work to evaluate it"
                )
            if st.records_kept["train"] == 0:
                raise ConvertError(
                    f"tier {tier!r}: every record went to val; lower --val-fraction or --val-work"
                )
        unknown = sorted(val_works - seen_works)
        if unknown:
            examples = ", ".join(sorted(seen_works)[:3])
            raise ConvertError(
                f"--val-work names works that no input holds: {unknown}. Work ids are paths "
                f"relative to the directory given for the tier, e.g. {examples}"
            )
        if dev_digits and not dev_works:
            raise ConvertError(
                f"--inscription-dev-digit {' '.join(map(str, sorted(dev_digits)))}: no EpiDoc "
                "inscription of the inputs has that dev digit (an I.Sicily number's last digit, "
                "else a hash of the file name: stoicheia.data.splits.dev_digit); give a folder "
                "of EpiDoc inscriptions as a tier (e.g. bronze=../shared/corpus/isicily) or "
                "leave the option out"
            )
        summary = {
            "tiers": {tier: st.to_json() for tier, st in stats.items()},
            "val_fraction": val_fraction,
            "val_works": sorted(val_works),
            "inscription_dev": {
                "digits": sorted(dev_digits),
                "rule": "EpiDoc files whose dev digit is one of the digits: the last digit of "
                "an I.Sicily number (Ithaca's rule), else of a stable hash of the file name "
                "(stoicheia.data.splits.dev_digit); twins (the same text under two numbers) "
                "go with their group's first member; their records are in "
                f"TIER/{INSCRIPTION_DEV}, never in train or val",
                "works": [dev_works[k] for k in sorted(dev_works)],
                "twin_groups": twins_json,
                "twins_of_known": [
                    {
                        "work": k.replace("\t", "/", 1),
                        "twin_of": [m.replace("\t", "/", 1) for m in v[0]],
                        "jaccard": v[1],
                    }
                    for k, v in sorted(known_twins.items())
                ],
            },
            "max_record_letters": max_record_letters,
            "warnings": warnings,
            "min_greek": min_greek,
            "epidoc": dataclasses.asdict(epidoc or EpiDocOptions()),
        }
        (tmp / "stats.json").write_text(
            json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        if parallels_index:
            from stoicheia.data.parallels_index import build_index

            build_index(tmp, progress=progress)
    except BaseException as err:
        # Nothing half-written survives a failure (or Ctrl-C): the output appears whole or not
        # at all.
        shutil.rmtree(tmp, ignore_errors=True)
        failure = write_failure(err, out)  # a full disk or a size limit: one line, not a traceback
        if failure is not None and failure is not err:
            raise failure from err
        raise
    # Publish atomically: a killed conversion never leaves a half-written OUT behind.
    # With --overwrite the old output is replaced only now, after the new one is complete.
    publish_folder(tmp, out)
    return summary


def _refused(skipped: Mapping[str, str]) -> str:
    """The first three refused files with the reader's first line each, for a message."""
    if not skipped:
        return "none"
    shown = "; ".join(f"{why.splitlines()[0]}" for why in list(skipped.values())[:3])
    return shown + (f"; and {len(skipped) - 3} more" if len(skipped) > 3 else "")


#: why the records of a text already in the shards (``known_texts``) were not written
TWIN_OF_KNOWN = "twin of a text already in the shards"


def _check_options(
    out: Path,
    inputs: Mapping[str, Sequence[Path]],
    overwrite: bool,
    val_fraction: float,
    max_record_letters: int,
    min_greek: float,
    dev_digits: frozenset[int],
) -> None:
    """Refuse, before anything is read, an ``out`` that cannot be (re)written and options out
    of range (:class:`ConvertError` naming the option and the fix)."""
    if out.exists() and not out.is_dir():  # before listing it: a file cannot be listed
        raise ConvertError(f"--out {out} is a file; give a directory")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise ConvertError(
            f"{out} already exists and is not empty; pass --overwrite or choose another --out"
        )
    if out.exists() and any(out.iterdir()) and not (out / "stats.json").exists():
        raise ConvertError(
            f"--out {out} is not empty and holds no stats.json, so it is not a converted "
            "corpus; --overwrite only replaces earlier output of `stoicheia convert`: choose "
            "another --out"
        )
    if out.exists() and any(out.iterdir()):
        check_replaceable(out, inputs)
    if not 0.0 <= val_fraction < 1.0:
        raise ConvertError(f"--val-fraction must be in [0, 1), got {val_fraction}")
    if max_record_letters < 16:
        raise ConvertError(f"--max-record-letters must be >= 16, got {max_record_letters}")
    if not 0.0 <= min_greek <= 1.0:
        raise ConvertError(f"--min-greek must be in [0, 1], got {min_greek}")
    bad_tiers = [t for t in inputs if not re.fullmatch(r"[A-Za-z0-9_-]+", t)]
    if bad_tiers:
        raise ConvertError(f"tier names may use letters, digits, '_' and '-' only: {bad_tiers}")
    bad_digits = sorted(d for d in dev_digits if not (isinstance(d, int) and 0 <= d <= 9))
    if bad_digits:
        raise ConvertError(f"--inscription-dev-digit takes single digits 0-9, got {bad_digits}")
