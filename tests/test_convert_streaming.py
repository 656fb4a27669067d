"""A long record's parts go from the reader to the shard writer a chunk at a time (spooled on
disk past stoicheia.data.part_spool.CHUNK_PARTS), each record encoded and cut piece by piece
(stoicheia.data.record_parts), and the shards are those of the old path that encoded each
record whole and held every part in memory."""

from __future__ import annotations

import functools
import pickle
import shutil

import pytest

from stoicheia.data import part_spool, shards
from stoicheia.data.part_spool import SpooledParts
from stoicheia.data.record_parts import record_parts
from stoicheia.data.shards import _convert_file, convert
from stoicheia.sources import plain
from stoicheia.text import filter as text_filter

_WORDS = "τῆς πρὸς πάντας ἀνθρώπους εὐνοίας πειραθέντες καὶ τῆς ἀνυπερβλήτου χρηστότητος "


def test_the_reader_holds_at_most_two_chunks_of_parts(tmp_path, monkeypatch):
    monkeypatch.setattr(part_spool, "CHUNK_PARTS", 4)
    src = tmp_path / "paragraphs.txt"
    # one long paragraph (hundreds of parts of 16 letters), then short ones (one part each)
    short = "\n\n".join(["καὶ τῆς"] * 30)
    src.write_text(_WORDS * 40 + "\n\n" + short + "\n", encoding="utf-8")
    job = (str(src), str(tmp_path), 16, 0.95, None)

    whole = _convert_file((*job, None))  # no spool: every part in memory, as before
    streamed = _convert_file((*job, str(tmp_path / "spool")))

    assert whole.error is None and streamed.error is None
    n_parts = sum(len(r[3]) for r in whole.records)
    assert len(whole.records) == 31 and n_parts > 200
    assert whole.parts_held == n_parts  # the counter counts what the old path held
    assert streamed.parts_held <= 2 * 4
    long = streamed.records[0][3]
    assert isinstance(long, SpooledParts) and len(long) == len(whole.records[0][3])
    with open(long.path, "rb") as f:
        sizes = []
        for off in long.offsets:
            f.seek(off)
            sizes.append(len(pickle.load(f)))
    assert max(sizes) <= 4 and sum(sizes) == len(long)
    # the first short paragraphs stay in memory, the rest are spooled: nothing piles up
    assert all(isinstance(r[3], list) for r in streamed.records[1:5])
    assert all(isinstance(r[3], SpooledParts) for r in streamed.records[5:])
    for (*head_a, parts_a), (*head_b, parts_b) in zip(
        [(r[0], r[1], r[2], r[4], r[5], r[3]) for r in whole.records],
        [(r[0], r[1], r[2], r[4], r[5], r[3]) for r in streamed.records],
        strict=True,
    ):
        assert head_a == head_b
        assert list(parts_a) == list(parts_b)


def _files(folder):
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("workers", [1, 2])
def test_shards_are_byte_identical_to_the_old_path_on_real_files(
    tmp_path, corpus_root, monkeypatch, workers
):
    perseus = corpus_root / "perseus" / "Demades" / "demad_gk.xml"
    isicily = tmp_path / "isicily"
    isicily.mkdir()
    for name in ("ISic000046.xml", "ISic000406.xml", "ISic000612.xml", "ISic000634.xml"):
        shutil.copy(corpus_root / "isicily" / "inscriptions" / name, isicily / name)
    txt = tmp_path / "plain.txt"  # a long paragraph, read in chunks below, and short ones
    txt.write_text(
        ("Διονύ-\nσιος " + _WORDS + "ἀλλ\u0313 ἐπεὶ\r\n") * 30 + "\n \nκαὶ τῆς\n\n" + _WORDS * 3,
        encoding="utf-8",
    )
    inputs = {"gold": [perseus], "bronze": [isicily], "silver": [txt]}
    kw = dict(
        max_record_letters=16,
        val_fraction=0.1,
        inscription_dev_digits=[6],  # held until every tier is read: spooled parts wait
        progress=False,
        parallels_index=False,
    )
    if workers == 1:  # pieces of 300 characters: most records are encoded and cut streamed
        monkeypatch.setattr(text_filter, "ENCODE_PIECE_CHARS", 300)
    # CHUNK_PARTS past any file's parts: nothing spooled, every part in memory, and each
    # record encoded whole before it is cut (the old path)
    monkeypatch.setattr(part_spool, "CHUNK_PARTS", 10**9)
    monkeypatch.setattr(shards, "record_parts", functools.partial(record_parts, whole=True))
    old = convert(inputs, tmp_path / "old", workers=1, **kw)
    monkeypatch.setattr(shards, "record_parts", record_parts)
    if workers == 1:  # paragraphs of more than 500 characters read in chunks of about 100
        monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", 500)
        monkeypatch.setattr(plain, "_NORMALISE_CHARS", 100)
    monkeypatch.setattr(part_spool, "CHUNK_PARTS", 3)
    if workers > 1:  # spawned workers import the module afresh: the default chunk there
        monkeypatch.setattr(part_spool, "CHUNK_PARTS", part_spool.CHUNK_PARTS)
    new = convert(inputs, tmp_path / "new", workers=workers, **kw)
    assert new == old
    assert old["tiers"]["bronze"]["records_kept"].get("inscription_dev", 0) > 0
    assert sum(old["tiers"]["gold"]["samples_written"].values()) > 100
    assert _files(tmp_path / "new") == _files(tmp_path / "old")
    assert not (tmp_path / "new" / "spool").exists()
