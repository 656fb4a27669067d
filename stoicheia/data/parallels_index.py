"""The parallels index: a suffix array over the letters of the TRAINING records of every tier.

Epigraphers restore a gap by its parallels: other texts that carry the same words on both sides
of it. This module builds, beside the shards of a converted corpus, the index that finds them
(:mod:`stoicheia.inference.parallels` queries it). Layout of ``SHARDS/parallels/``::

    manifest.json   version, tiers, counts, what was indexed and what was kept out
    text.npy        uint8 (N,)  letter id + 1 (1..24) per letter slot; 0 = a record separator
                                or a real-lacuna slot (no match crosses either)
    sa.npy          int32 (N,)  the suffix array of text.npy (libdivsufsort, ``pydivsufsort``)
    look.npy        uint8 (N,)  dia * 3 + cap (the accents and capital, for display)
    flow.npy        uint8 (N,)  boundary + 4 * punct + 28 * lacuna (word ends kept apart from the
                                letters, so that matching ignores word division)
    rec_start.npy   int64 (R+1,) the first slot of each record in text.npy; rec_start[R] = N
    rec_tier.npy    uint8 (R,)  index into manifest["tiers"]
    rec_work.npy    int32 (R,)  index into the works table
    ids.npy, ids_off.npy        the record ids, UTF-8 bytes and int64 (R+1,) offsets
    works.npy, works_off.npy    the work ids (EpiDoc file or ``Author/work.xml``), likewise
    works_meta.npy, works_meta_off.npy  what the source says of each work, JSON (an
                                inscription's corpus, citation, web page, place, date: the
                                shards' ``meta`` column); ``""`` when nothing. An index built
                                before these files existed has none (then no citation is shown)
    line_start.npy  int64 (L,)  the slot in text.npy where each numbered line of an edition
                                begins (ascending; records without line numbers have none)
    line_label.npy, line_label_off.npy  the printed number of each line (``"5"``, ``"10a"``),
                                UTF-8 bytes and int64 (L+1,) offsets
    words.npy       uint64 (W,) the words the records attest, as sorted distinct hashes
                                (:mod:`stoicheia.data.word_hashes`); an index built before it
                                has none, and its readers make the list when first asked

Slot ``i`` of record ``r`` is ``text[rec_start[r] + i]``; each record is followed by one
separator. Parts of one long record (written as several MDS samples) are joined again. The
line numbers come from the shards' ``lines`` column (:mod:`stoicheia.data.line_numbers`);
shards written without it give no lines (a parallel's line is then unknown).

Only the ``train`` split of each tier is read: never ``val`` (held-out records and the
``--val-work`` works) nor ``inscription_dev`` (the inscription dev set); as a second guard, a
train record whose work is listed in ``stats.json`` as a val work or a dev inscription is
refused (:class:`IndexBuildError`), since that would mean the shards are inconsistent.

Every array is a plain ``.npy`` file, opened with ``numpy.load(mmap_mode=...)`` by the readers:
the pages are shared between processes through the page cache and opening costs milliseconds.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from stoicheia.data.corpus_stats import read_stats
from stoicheia.data.line_numbers import decode_lines
from stoicheia.data.parallels_layout import (
    INDEX_DIR,
    INDEX_FILES,
    SEPARATOR,
    VERSION,
    shards_provenance,
)
from stoicheia.data.record_meta import META_COLUMN
from stoicheia.data.sample_planes import decode_planes
from stoicheia.data.shard_index import index_samples
from stoicheia.data.word_hashes import corpus_words
from stoicheia.publish import write_failure


class IndexBuildError(Exception):
    """The index could not be built; the message names the folder and the fix."""


def _blob(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Strings as one UTF-8 uint8 array and int64 ``(len+1,)`` offsets."""
    raw = [s.encode("utf-8") for s in strings]
    off = np.zeros(len(raw) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(b) for b in raw])
    return np.frombuffer(b"".join(raw), dtype=np.uint8).copy(), off


def _train_samples(split_dir: Path):
    """The samples of one local MDS split, in shard order (a read-only ``StreamingDataset``)."""
    from streaming import StreamingDataset

    from stoicheia.data.shm import retry_prefix_race

    ds = retry_prefix_race(
        lambda: StreamingDataset(local=str(split_dir.resolve()), batch_size=1, shuffle=False)
    )
    return ds, ds.num_samples


def build_index(
    shard_root: str | Path,
    out: str | Path | None = None,
    *,
    progress: bool | str = True,
    overwrite: bool = True,
    fraction: float = 1.0,
) -> dict:
    """Build the parallels index of the converted corpus at ``shard_root`` into ``out`` (default
    ``shard_root/parallels``); returns the manifest (also written to ``manifest.json``).

    Reads ``TIER/train`` of every tier named in ``stats.json``, joins the parts of each record,
    writes the arrays of the module docstring and sorts the suffixes with libdivsufsort
    (``pydivsufsort.divsufsort``; int32 positions, so at most 2**31 - 1 letter slots).
    ``progress``: ``True`` a rich bar (samples read per tier, then the sort), ``"lines"`` one line
    per stage on stderr, ``False`` nothing. ``fraction`` in (0, 1]: only the first share of each
    tier's train samples (``benchmarks/parallels_index.py`` measures growth with it).

    Raises :class:`IndexBuildError` when ``stats.json`` is missing, no tier has train records, a
    train record belongs to a val work or a dev inscription, ``out`` exists and ``overwrite`` is
    False, or the corpus is too large for int32 positions.
    """
    import pydivsufsort
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    root = Path(shard_root)
    try:
        stats = read_stats(root)
    except (FileNotFoundError, ValueError) as err:
        raise IndexBuildError(f"{root}: {err}") from None
    out = Path(out) if out is not None else root / INDEX_DIR
    if out.exists() and not overwrite:
        raise IndexBuildError(f"{out} exists; pass overwrite=True (--overwrite) to rebuild it")
    _refuse_foreign_folder(out)
    if not 0.0 < fraction <= 1.0:
        raise IndexBuildError(f"fraction {fraction}: give a share in (0, 1]")
    tiers = list(stats.get("tiers", {}))
    held_works = set(stats.get("val_works", []))
    dev_works = {(w["tier"], w["work"]) for w in stats.get("inscription_dev", {}).get("works", [])}
    t0 = time.perf_counter()

    chunks_text: list[np.ndarray] = []
    chunks_look: list[np.ndarray] = []
    chunks_flow: list[np.ndarray] = []
    lengths: list[int] = []
    rec_tier: list[int] = []
    rec_work: list[int] = []
    rec_ids: list[str] = []
    line_start: list[int] = []
    line_label: list[str] = []
    total = 0  # slots laid out so far (text.npy's length)
    works: dict[str, int] = {}
    works_meta: list[str] = []  # per work: the shards' meta column (JSON, "" if none)
    per_tier: dict[str, dict[str, int]] = {}
    sep = np.zeros(1, dtype=np.uint8)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=progress is not True,
        transient=True,
    ) as bar:
        for t, tier in enumerate(tiers):
            split = root / tier / "train"
            if not (split / "index.json").exists() or index_samples(split) == 0:
                per_tier[tier] = {"records": 0, "letters": 0}
                continue
            ds, n = _train_samples(split)
            n = max(1, round(n * fraction)) if fraction < 1.0 else n
            task = bar.add_task(f"indexing {tier}", total=n)
            if progress == "lines":
                print(f"index: reading {tier}/train ({n:,} samples)", file=sys.stderr, flush=True)
            last_id = None
            n_rec = n_let = 0
            for i in range(n):
                s = ds.get_item(i)
                work = str(s["work"])
                if work in held_works or (tier, work) in dev_works:
                    raise IndexBuildError(
                        f"{split}: record {s['id']!r} of {work!r} is in train, but stats.json "
                        "holds that work out (a val work or a dev inscription): the shards are "
                        "inconsistent; convert again"
                    )
                p = decode_planes(s)
                chars = np.where(p.lacuna > 0, SEPARATOR, p.chars.astype(np.int16) + 1)
                chars = chars.astype(np.uint8)
                look = (p.dia.astype(np.uint16) * 3 + p.cap).astype(np.uint8)
                flow = (p.boundary + 4 * p.punct.astype(np.uint16) + 28 * p.lacuna).astype(np.uint8)
                rid = str(s["id"])
                joined = rid == last_id and int(s.get("part", 0)) > 0 and chunks_text
                if joined:
                    # the next part of the same record: no separator between the parts
                    chunks_text[-1] = chunks_text[-1][:-1]
                    lengths[-1] += len(chars)
                    total -= 1
                else:
                    if work not in works:
                        works[work] = len(works)
                        works_meta.append(str(s.get(META_COLUMN) or ""))
                    lengths.append(len(chars))
                    rec_tier.append(t)
                    rec_work.append(works[work])
                    rec_ids.append(rid)
                    n_rec += 1
                lines = decode_lines(s)
                if lines:
                    line_start.extend(total + off for off, _ in lines)
                    line_label.extend(label for _, label in lines)
                total += len(chars) + 1
                chunks_text += [chars, sep]
                chunks_look.append(look)
                chunks_flow.append(flow)
                n_let += int(np.count_nonzero(chars))
                last_id = rid
                bar.update(task, advance=1)
            per_tier[tier] = {"records": n_rec, "letters": n_let}
        # look/flow hold one array per sample: lay them out like the text
        text = np.concatenate(chunks_text) if chunks_text else np.zeros(0, np.uint8)
        look, flow = _align(chunks_look, chunks_flow, lengths)
        if not lengths:
            raise IndexBuildError(
                f"{root}: no tier has train records (TIER/train/index.json); convert a corpus first"
            )
        if len(text) >= 2**31 - 1:
            raise IndexBuildError(
                f"{root}: {len(text):,} letter slots, more than int32 suffix-array positions hold"
            )
        sort = bar.add_task("sorting suffixes", total=1)
        if progress == "lines":
            print(f"index: sorting {len(text):,} suffixes", file=sys.stderr, flush=True)
        sa = pydivsufsort.divsufsort(text)
        bar.update(sort, advance=1)
    starts = np.zeros(len(lengths) + 1, dtype=np.int64)
    starts[1:] = np.cumsum(np.asarray(lengths, dtype=np.int64) + 1)
    manifest = {
        "version": VERSION,
        "tiers": tiers,
        "per_tier": per_tier,
        "records": len(lengths),
        "slots": int(len(text)),
        "letters": int(np.count_nonzero(text)),
        "works": len(works),
        "lines": len(line_start),
        "records_with_lines": int(
            np.unique(np.searchsorted(starts, np.asarray(line_start, np.int64), "right")).size
        ),
        "indexed_split": "train",
        # which shards: compared with the checkpoint's own (stoicheia.data.parallels_layout)
        "shards": shards_provenance(root),
        "fraction": fraction,
        "kept_out": {
            "val_works": len(held_works),
            "inscription_dev_works": len(dev_works),
            "splits": ["val", "inscription_dev"],
        },
        "build_seconds": round(time.perf_counter() - t0, 2),
        "library": f"pydivsufsort {getattr(pydivsufsort, '__version__', '')}".strip(),
    }
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        np.save(tmp / "text.npy", text)
        np.save(tmp / "sa.npy", sa.astype(np.int32, copy=False))
        np.save(tmp / "look.npy", look)
        np.save(tmp / "flow.npy", flow)
        np.save(tmp / "rec_start.npy", starts)
        np.save(tmp / "rec_tier.npy", np.asarray(rec_tier, dtype=np.uint8))
        np.save(tmp / "rec_work.npy", np.asarray(rec_work, dtype=np.int32))
        np.save(tmp / "line_start.npy", np.asarray(line_start, dtype=np.int64))
        np.save(tmp / "words.npy", corpus_words(text, flow % 4))
        for name, strings in (
            ("ids", rec_ids),
            ("works", list(works)),
            ("works_meta", works_meta),
            ("line_label", line_label),
        ):
            blob, off = _blob(strings)
            np.save(tmp / f"{name}.npy", blob)
            np.save(tmp / f"{name}_off.npy", off)
        manifest["bytes"] = sum(f.stat().st_size for f in tmp.iterdir())
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    except BaseException as err:
        # a full disk or a size limit: one line, not a traceback; asked before the partial files
        # go, since numpy's short write carries no errno and only a disk still full tells
        failure = write_failure(err, out)
        shutil.rmtree(tmp, ignore_errors=True)
        if failure is not None and failure is not err:
            raise failure from err
        raise
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return manifest


def _refuse_foreign_folder(out: Path) -> None:
    """Raise :class:`IndexBuildError` when ``out`` exists and holds anything but index files: the
    build replaces the folder whole, and ``--out SHARDS_DIR`` (or ``--out ~``) would delete it."""
    if not out.exists():
        return
    if not out.is_dir():
        raise IndexBuildError(f"--out {out} is a file; give a folder for the index")
    foreign = sorted(p.name for p in out.iterdir() if p.name not in INDEX_FILES)
    if foreign:
        raise IndexBuildError(
            f"--out {out} exists and holds {len(foreign)} entries that are no part of an index "
            f"({', '.join(foreign[:3])}); the build replaces the folder whole, so give a new or "
            "empty folder (default SHARDS_DIR/parallels)"
        )


def _align(
    looks: list[np.ndarray], flows: list[np.ndarray], lengths: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """The look/flow planes (one array per MDS sample) laid out like ``text.npy``: each
    record's slots (its parts joined), then one separator."""
    look_all, flow_all = looks, flows
    out_look: list[np.ndarray] = []
    out_flow: list[np.ndarray] = []
    sep = np.zeros(1, dtype=np.uint8)
    k = 0
    for n in lengths:
        got = 0
        while got < n:
            out_look.append(look_all[k])
            out_flow.append(flow_all[k])
            got += len(look_all[k])
            k += 1
        out_look.append(sep)
        out_flow.append(sep)
    if not out_look:
        return np.zeros(0, np.uint8), np.zeros(0, np.uint8)
    return np.concatenate(out_look), np.concatenate(out_flow)


__all__ = ["INDEX_DIR", "SEPARATOR", "VERSION", "IndexBuildError", "build_index"]
