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
``part``, ``source``, ``tier``, ``work`` and ``lines`` (where the edition's numbered lines
begin: :mod:`stoicheia.data.line_numbers`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import re
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from streaming import MDSWriter

from stoicheia.data.line_numbers import LINES_COLUMN, encode_lines, line_starts, lines_of_parts
from stoicheia.data.shard_index import index_samples  # noqa: F401  (its home before; kept importable)
from stoicheia.publish import partial_folder, publish_folder, write_failure
from stoicheia.sources import EpiDocOptions, SourceError, iter_source_files, read_source
from stoicheia.text.alphabet import LETTERS, NUM_LETTERS, PLANES
from stoicheia.text.filter import normalise_record
from stoicheia.text.planes import Planes

COLUMNS = {
    "id": "str",
    "part": "int",
    "source": "str",
    "tier": "str",
    "work": "str",
    **{name: "bytes" for name in PLANES},
    LINES_COLUMN: "str",  # the edition's line numbers (stoicheia.data.line_numbers)
}
SPLITS = ("train", "val")
#: Seconds between the plain progress lines of a conversion that is not on a terminal.
PROGRESS_EVERY = 30.0
INSCRIPTION_DEV = "inscription_dev"  # the split folder of the inscription dev set
# An inscription's number is the run of digits of its EpiDoc file name: ISic000154.xml -> 154.
_INSCRIPTION_FILE = re.compile(r"[A-Za-z]+(\d+)\.xml")


class ConvertError(Exception):
    """A source could not be converted; the message names the file and the fix."""


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
    reader_counts: Counter = field(
        default_factory=Counter
    )  # what readers read and left out, by kind
    files_without_records: list[str] = field(default_factory=list)  # read, but no record kept
    leiden: Counter = field(
        default_factory=Counter
    )  # lacunae, supplied letters, ... (kept records and dropped)
    lacuna_slots: Counter = field(default_factory=Counter)  # split -> real-lacuna slots stored
    files_not_read: list[str] = field(default_factory=list)  # in the directories, not a source
    stripped: Counter = field(default_factory=Counter)  # kind -> characters dropped
    letter_counts: np.ndarray = field(
        default_factory=lambda: np.zeros(NUM_LETTERS, dtype=np.int64)
    )  # train split

    def to_json(self) -> dict:
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
            "files_not_read": self.files_not_read,
            "reader_counts": dict(self.reader_counts.most_common()),
            "stripped_characters": dict(self.stripped.most_common()),
            "leiden": dict(self.leiden.most_common()),
        }


def _left_out(reader_counts: Counter, most: int = 6) -> str:
    """The commonest kinds the readers left out (``lang:la: 1, edition_skipped:...``), for
    error messages; the tallies of what was read (records, chars, ...) are not listed."""
    read = {"records", "chars", "sentences", "gaps", "choice", "expansions", "symbol", "space"}
    kinds = [(k, v) for k, v in reader_counts.most_common() if k not in read]
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


def split_at_words(planes: Planes, max_letters: int) -> list[Planes]:
    """Cut ``planes`` into consecutive parts of at most ``max_letters`` letters at word starts.

    No word is cut unless a single word is longer than ``max_letters`` (then it is cut hard,
    which real Greek never needs at the sizes used here). Every letter lands in exactly one
    part, in order. Raises ``ValueError`` if ``max_letters < 1``.
    """
    if max_letters < 1:
        raise ValueError(f"max_letters must be >= 1, got {max_letters}")
    n = len(planes)
    if n <= max_letters:
        return [planes]
    starts = planes.word_starts()
    parts = []
    begin = 0
    while n - begin > max_letters:
        limit = begin + max_letters
        # the last word start in (begin, limit]: cutting there keeps every word whole
        k = np.searchsorted(starts, limit, side="right") - 1
        cut = int(starts[k]) if k >= 0 and starts[k] > begin else limit
        parts.append(planes[begin:cut])
        begin = cut
    parts.append(planes[begin:])
    return parts


@dataclass
class _FileResult:
    """What one worker made of one source file (picklable)."""

    path: str
    error: str | None = None
    records: list[tuple[str, str, str, list[dict[str, bytes]], int]] = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)
    stripped: Counter = field(default_factory=Counter)
    reader: Counter = field(
        default_factory=Counter
    )  # what the reader kept out of the text, by kind
    leiden: Counter = field(default_factory=Counter)  # what the Leiden notation held, by kind


def _convert_file(args: tuple[str, str | None, int, float, EpiDocOptions | None]) -> _FileResult:
    path, root, max_letters, min_greek, epidoc = args
    result = _FileResult(path=path)
    try:
        for rec in read_source(
            Path(path), Path(root) if root else None, counts=result.reader, epidoc=epidoc
        ):
            norm = normalise_record(rec.text, known=rec.known, min_greek=min_greek)
            result.stripped.update(norm.dropped)
            result.leiden.update(norm.leiden)
            if norm.planes is None:
                result.dropped[norm.reject_reason or "rejected"] += 1
                continue
            cut = split_at_words(norm.planes, max_letters)
            starts = line_starts(norm.planes.chars, rec.lines, rec.known, result.reader)
            lines = lines_of_parts(starts, [len(p) for p in cut])
            parts = [
                {**{name: getattr(p, name).tobytes() for name in PLANES}, LINES_COLUMN: ln}
                for p, ln in zip(cut, map(encode_lines, lines), strict=True)
            ]
            result.records.append(
                (rec.id, rec.source, rec.work, parts, len(norm.planes.word_starts()))
            )
    except SourceError as err:
        result.error = str(err)
        result.records.clear()
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

    Returns:
        The statistics written to ``OUT/stats.json``.

    Raises:
        ConvertError: unreadable file without ``skip_bad``; output exists; no input files; a
            tier with no records at all; ``inscription_dev_digits`` not digits 0-9 or matching no
            EpiDoc inscription of the inputs.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():  # before listing it: a file cannot be listed
        raise ConvertError(f"--out {out} is a file; give a directory")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise ConvertError(
            f"{out} already exists and is not empty; pass --overwrite or choose another --out"
        )
    if out.exists() and any(out.iterdir()) and not (out / "stats.json").exists():
        raise ConvertError(
            f"--out {out} is not empty and holds no stats.json, so it is not a converted corpus; "
            "--overwrite only replaces earlier output of `stoicheia convert`: choose another --out"
        )
    if out.exists() and any(out.iterdir()):
        _check_replaceable(out, inputs)
    if not 0.0 <= val_fraction < 1.0:
        raise ConvertError(f"--val-fraction must be in [0, 1), got {val_fraction}")
    if max_record_letters < 16:
        raise ConvertError(f"--max-record-letters must be >= 16, got {max_record_letters}")
    if not 0.0 <= min_greek <= 1.0:
        raise ConvertError(f"--min-greek must be in [0, 1], got {min_greek}")
    bad_tiers = [t for t in inputs if not re.fullmatch(r"[A-Za-z0-9_-]+", t)]
    if bad_tiers:
        raise ConvertError(f"tier names may use letters, digits, '_' and '-' only: {bad_tiers}")
    val_works = frozenset(val_works)
    dev_digits = frozenset(inscription_dev_digits)
    bad_digits = sorted(d for d in dev_digits if not (isinstance(d, int) and 0 <= d <= 9))
    if bad_digits:
        raise ConvertError(f"--inscription-dev-digit takes single digits 0-9, got {bad_digits}")
    dev_works: dict[tuple[str, str], dict] = {}  # (tier, work) -> its entry in stats.json
    stats: dict[str, TierStats] = {}
    tmp = partial_folder(out)
    try:
        seen_works: set[str] = set()
        warnings: list[str] = []

        for tier, paths in inputs.items():
            st = stats[tier] = TierStats()
            jobs = []
            for given in paths:
                given = Path(given)
                if not given.exists():
                    raise ConvertError(
                        f"{given}: no such file or directory (tier {tier!r}); check the path"
                    )
                root = given if given.is_dir() else given.parent
                not_read: list[Path] = []
                try:
                    found = iter_source_files([given], skipped=not_read)
                except SourceError as err:
                    raise ConvertError(str(err)) from None
                for f in found:
                    jobs.append((str(f), str(root), max_record_letters, min_greek, epidoc))
                # stats.json is UTF-8: a name that is not is listed escaped
                st.files_not_read.extend(
                    str(f).encode("utf-8", "backslashreplace").decode("utf-8") for f in not_read
                )
            if not jobs:
                raise ConvertError(
                    f"tier {tier!r}: no .xml/.conllu/.txt/.jsonl files under {', '.join(map(str, paths))}"
                )
            writers = {
                split: MDSWriter(
                    out=str(tmp / tier / split),
                    columns=COLUMNS,
                    compression="zstd",
                    size_limit=1 << 25,
                )
                for split in SPLITS + ((INSCRIPTION_DEV,) if dev_digits else ())
            }
            try:
                for res in _map_files(jobs, workers, progress, tier):
                    st.files += 1
                    if res.error is not None:
                        if not skip_bad:
                            raise ConvertError(
                                f"{res.error}\n(pass --skip-bad to convert the other files and count this one as skipped)"
                            )
                        st.files_skipped[res.path] = res.error
                        continue
                    st.records_dropped.update(res.dropped)
                    st.stripped.update(res.stripped)
                    st.reader_counts.update(res.reader)
                    st.leiden.update(res.leiden)
                    if not res.records:
                        st.files_without_records.append(res.path)
                    for rec_id, source, work, parts, n_words in res.records:
                        seen_works.add(work)
                        split = choose_split(
                            rec_id,
                            work,
                            val_fraction,
                            val_works,
                            source=source,
                            dev_digits=dev_digits,
                        )
                        if split == INSCRIPTION_DEV:
                            entry = dev_works.setdefault(
                                (tier, work),
                                {
                                    "tier": tier,
                                    "work": work,
                                    "epidoc": str(Path(res.path).resolve()),
                                    "records": 0,
                                    "letters": 0,
                                },
                            )
                            entry["records"] += 1
                            entry["letters"] += sum(
                                len(p["chars"])
                                - int(np.count_nonzero(np.frombuffer(p["lacuna"], dtype=np.uint8)))
                                for p in parts
                            )
                        st.records_kept[split] += 1
                        st.words[split] += n_words
                        for k, planes in enumerate(parts):
                            st.parts[split] += 1
                            chars = np.frombuffer(planes["chars"], dtype=np.uint8)
                            real = np.frombuffer(planes["lacuna"], dtype=np.uint8) > 0
                            n_real = int(np.count_nonzero(real))
                            # real-lacuna slots are not letters: counted apart
                            st.letters[split] += len(chars) - n_real
                            st.lacuna_slots[split] += n_real
                            if split == "train":
                                st.letter_counts += np.bincount(chars[~real], minlength=NUM_LETTERS)
                            writers[split].write(
                                {
                                    "id": rec_id,
                                    "part": k,
                                    "source": source,
                                    "tier": tier,
                                    "work": work,
                                    **planes,
                                }
                            )
            finally:
                for w in writers.values():
                    w.finish()
            if dev_digits and st.records_kept[INSCRIPTION_DEV] == 0:
                shutil.rmtree(
                    tmp / tier / INSCRIPTION_DEV, ignore_errors=True
                )  # no empty split folder
            if sum(st.records_kept.values()) == 0:
                raise ConvertError(
                    f"tier {tier!r}: no Greek record in {', '.join(map(str, paths))} "
                    f"(records dropped: {dict(st.records_dropped) or 'none'}; files without records: "
                    f"{', '.join(st.files_without_records) or 'none'}; left out by the readers: "
                    f"{_left_out(st.reader_counts) or 'nothing'}). Check that these are Greek "
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
                f"--val-work names works that no input holds: {unknown}. Work ids are paths relative to "
                f"the directory given for the tier, e.g. {examples}"
            )
        if dev_digits and not dev_works:
            raise ConvertError(
                f"--inscription-dev-digit {' '.join(map(str, sorted(dev_digits)))}: no EpiDoc inscription of the inputs has a "
                "number ending in it (file names such as inscriptions/ISic000154.xml, number 154); give the I.Sicily "
                "folder as a tier (e.g. bronze=../shared/corpus/isicily) or leave the option out"
            )
        summary = {
            "tiers": {tier: st.to_json() for tier, st in stats.items()},
            "val_fraction": val_fraction,
            "val_works": sorted(val_works),
            "inscription_dev": {
                "digits": sorted(dev_digits),
                "rule": "EpiDoc files named LETTERS+NUMBER.xml whose number ends in one of the digits (Ithaca's rule); "
                f"their records are in TIER/{INSCRIPTION_DEV}, never in train or val",
                "works": [dev_works[k] for k in sorted(dev_works)],
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
        # Nothing half-written survives a failure (or Ctrl-C): the output appears whole or not at all.
        shutil.rmtree(tmp, ignore_errors=True)
        failure = write_failure(err, out)  # a full disk or a size limit: one line, not a traceback
        if failure is not None and failure is not err:
            raise failure from err
        raise
    # Publish atomically: a killed conversion never leaves a half-written OUT behind.
    # With --overwrite the old output is replaced only now, after the new one is complete.
    publish_folder(tmp, out)
    return summary


def _check_replaceable(out: Path, inputs: Mapping[str, Sequence[Path]]) -> None:
    """Refuse to replace ``out`` (``--overwrite``) when that would delete anything ``convert``
    did not write there: an input inside it, or an entry other than ``stats.json`` and the
    tier folders its ``stats.json`` names. Raises :class:`ConvertError` listing them."""
    try:
        tiers = set(json.loads((out / "stats.json").read_text(encoding="utf-8")).get("tiers", {}))
    except (OSError, ValueError, AttributeError):
        tiers = set()
    foreign = sorted(
        e.name
        for e in out.iterdir()
        if e.name not in ("stats.json", "parallels") and not (e.is_dir() and e.name in tiers)
    )
    if foreign:
        shown = ", ".join(foreign[:8]) + (
            f" and {len(foreign) - 8} more" if len(foreign) > 8 else ""
        )
        raise ConvertError(
            f"--out {out} holds {len(foreign)} entr{'y' if len(foreign) == 1 else 'ies'} that convert did not write "
            f"({shown}); --overwrite replaces the whole folder and would delete them: move them out or choose another --out"
        )
    root = out.resolve()
    for tier, paths in inputs.items():
        for given in paths:
            q = Path(given).resolve()
            if q == root or root in q.parents:
                raise ConvertError(
                    f"input {tier}={given} lies inside --out {out}, which --overwrite replaces: choose another --out"
                )


def _map_files(
    jobs: list[tuple], workers: int, progress: bool | str, tier: str
) -> Iterator[_FileResult]:
    """The results of :func:`_convert_file` for ``jobs``, in order, with a progress display:
    ``progress=True`` (a terminal) a rich bar with files done of all, records read, time
    spent and left; ``"lines"`` one plain line on stderr every :data:`PROGRESS_EVERY` seconds
    (so that a batch job's log is not silent for minutes); ``False`` nothing."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files"),
        TextColumn("{task.fields[records]:,} records"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    records = 0
    t0 = last = time.monotonic()
    with Progress(*columns, disable=progress is not True, transient=True) as bar:
        task = bar.add_task(f"converting {tier}", total=len(jobs), records=0)

        def step(res: _FileResult, done: int) -> None:
            nonlocal records, last
            records += len(res.records)
            bar.update(task, advance=1, records=records)
            now = time.monotonic()
            if progress == "lines" and now - last >= PROGRESS_EVERY and done < len(jobs):
                left = (now - t0) / done * (len(jobs) - done)
                print(
                    f"convert: {tier} {done}/{len(jobs)} files, {records:,} records, ETA {left / 60:.0f} min",
                    file=sys.stderr,
                    flush=True,
                )
                last = now

        if workers <= 1:
            for k, job in enumerate(jobs, 1):
                res = _convert_file(job)
                yield res
                step(res, k)
            return
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(workers) as pool:
            # Largest files first would balance better, but the output order must not depend
            # on timing: imap keeps the input order.
            for k, res in enumerate(pool.imap(_convert_file, jobs, chunksize=1), 1):
                yield res
                step(res, k)


def read_stats(shard_root: Path) -> dict:
    """Load ``stats.json`` of a converted corpus. Raises ``FileNotFoundError`` with the fix."""
    path = Path(shard_root) / "stats.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: run `stoicheia convert` first (see README)")
    return json.loads(path.read_text(encoding="utf-8"))


def decode_planes(sample: Mapping[str, bytes]) -> Planes:
    """Turn the plane columns of one MDS sample back into :class:`Planes` (uint8, shape (n,))."""
    # shards written before the lacuna plane existed have no "lacuna" column: no real lacuna
    arrays = {
        name: np.frombuffer(sample[name], dtype=np.uint8)
        for name in PLANES
        if name != "lacuna" or name in sample
    }
    lengths = {len(a) for a in arrays.values()}
    if len(lengths) != 1:
        raise ValueError(
            f"sample {sample.get('id')!r}: planes of unequal lengths {sorted(lengths)}; the shard is corrupt, re-run convert"
        )
    return Planes(**arrays)
