"""A long EpiDoc edition comes to convert as a streamed record (stoicheia.sources.epidoc_stream):
the same records, text, lines and counts (in their order) as the walk that builds the whole
text, the same shards, and beyond the parsed tree memory that does not grow with the edition."""

from __future__ import annotations

import shutil
import tracemalloc
from collections import Counter

import pytest

from stoicheia.data.record_parts import record_parts
from stoicheia.data.shards import convert
from stoicheia.sources import epidoc_stream, plain
from stoicheia.sources.epidoc import _parse, read_epidoc
from stoicheia.sources.epidoc_walk import EpiDocOptions
from stoicheia.text import filter as text_filter

_UNIT = (
    '<lb/>τῆς πρὸς πάντας ἀνθρώπ<supplied reason="lost">ους</supplied> εὐνοίας '
    'πειραθέντε<gap reason="lost" quantity="1" unit="character"/> καὶ τῆς ἀνυπερβλήτου '
    "χρηστότητος μετασχόντες Δομιτίου Λατρωνιανοῦ τοῦ λαμπροτάτου ἐπανορθωτοῦ ἡ βουλὴ καὶ ὁ "
    "δῆμος εὐνοίας χάριν\n"
)


def _edition(path, n, unit=_UNIT):
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<TEI xmlns="http://www.tei-c.org/ns/1.0">'
        "<teiHeader><fileDesc><titleStmt><title>large</title></titleStmt></fileDesc>"
        '</teiHeader><text><body><div type="edition" xml:lang="grc"><ab>'
        + unit * n
        + "</ab></div></body></text></TEI>\n",
        encoding="utf-8",
    )
    return path


def _both(path, opts=None):
    """(records and counts read whole, the same read as streamed records)."""
    whole_counts, counts = Counter(), Counter()
    whole = [
        (r.id, r.line, r.text, r.lines, dict(r.meta))
        for r in read_epidoc(path, counts=whole_counts, options=opts)
    ]
    got = []
    for r in read_epidoc(path, counts=counts, options=opts, chunks=True):
        assert r.streamed is not None and r.text == "" and r.lines == ()
        text, lines = r.stream()
        got.append((r.id, r.line, "".join(text), tuple(lines), dict(r.meta)))
    return whole, list(whole_counts.items()), got, list(counts.items())


@pytest.mark.parametrize("flush", [1, 3, 40])
@pytest.mark.parametrize("corpus", ["cretan", "igcyr", "iip", "iospe", "isicily"])
def test_streamed_records_are_those_of_the_whole_walk_on_real_files(
    corpus_root, monkeypatch, corpus, flush
):
    monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", -1)  # every unit streamed
    monkeypatch.setattr(epidoc_stream, "FLUSH_PIECES", flush)
    files = sorted((corpus_root / corpus).rglob("*.xml"))[::9]
    n = 0
    for f in files:
        try:
            whole, whole_counts, got, counts = _both(f)
        except Exception as e:  # a file the reader refuses is refused either way
            assert type(e).__name__ == "SourceError"
            continue
        assert got == whole, f
        assert counts == whole_counts, f  # the same counts, first seen in the same order
        n += len(whole)
    assert n > 20


def test_options_and_a_long_edition_stream_as_whole(tmp_path, monkeypatch):
    path = _edition(tmp_path / "long.xml", 300)
    monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", 1000)
    monkeypatch.setattr(epidoc_stream, "FLUSH_PIECES", 16)
    for opts in (EpiDocOptions(), EpiDocOptions(supplied_lost="lacuna", orig_case="as written")):
        whole, whole_counts, got, counts = _both(path, opts)
        assert got == whole and counts == whole_counts
        assert len(whole[0][3]) == 300


def test_a_record_read_twice_is_counted_once(tmp_path, monkeypatch):
    path = _edition(tmp_path / "long.xml", 50)
    monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", 100)
    monkeypatch.setattr(epidoc_stream, "FLUSH_PIECES", 8)
    whole_counts, counts = Counter(), Counter()
    (whole,) = read_epidoc(path, counts=whole_counts)
    for rec in read_epidoc(path, counts=counts, chunks=True):
        text, lines = rec.stream()
        next(text)  # the caller gives up (lines misaligned) and reads it whole again
        again, lines_again = rec.stream()
        assert "".join(again) == whole.text and tuple(lines_again) == whole.lines
    assert list(counts.items()) == list(whole_counts.items())


def _peaks(tmp_path, streamed, unit=_UNIT):
    """(peak Python bytes, letters) of reading an edition of one <ab> of 400 and 800 lines
    (``unit`` each) and cutting it into parts as convert does."""
    peaks, sizes = [], []
    for n in (400, 800):
        path = _edition(tmp_path / f"long{n}.xml", n, unit)
        doc = _parse(path, Counter())
        tracemalloc.start()
        try:
            parts = letters = 0
            for rec in read_epidoc(path, tree=doc, chunks=True):
                assert (rec.streamed is not None) == streamed
                text, lines = rec.stream()
                for planes, _ in record_parts(text, {}, lines, min_greek=0.5, max_letters=64):
                    parts += 1
                    letters += len(planes)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        sizes.append(letters)
        assert parts > n
    return peaks, sizes


def test_a_long_edition_is_not_held_whole_beyond_the_tree(tmp_path, monkeypatch):
    """The walk that builds the whole text grows with the edition, the streamed one does not
    (the parsed tree, lxml's, is not Python's memory and is held either way)."""
    monkeypatch.setattr(text_filter, "ENCODE_PIECE_CHARS", 2000)
    monkeypatch.setattr(epidoc_stream, "FLUSH_PIECES", 256)
    whole, sizes = _peaks(tmp_path, streamed=False)
    monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", 1000)
    streamed, same = _peaks(tmp_path, streamed=True)
    assert same == sizes and sizes[1] > 1.9 * sizes[0] > 50_000
    letters_added = sizes[1] - sizes[0]
    assert (whole[1] - whole[0]) / letters_added > 8  # the walk's pieces, the text, its lines
    assert (streamed[1] - streamed[0]) / letters_added < 0.5  # the same, whatever the length
    assert streamed[1] < whole[1] / 4


def test_an_edition_without_line_breaks_streams_in_pieces(tmp_path, monkeypatch):
    """An edition with no <lb/> is one line: its pieces were held to its end (the open line's);
    now it has no lines, the same text, and memory that does not grow with it."""
    unit = _UNIT.replace("<lb/>", "")
    path = _edition(tmp_path / "nolb.xml", 300, unit)
    monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", 1000)
    monkeypatch.setattr(epidoc_stream, "FLUSH_PIECES", 16)
    whole, whole_counts, got, counts = _both(path)
    assert got == whole and counts == whole_counts and whole[0][3] == ()
    monkeypatch.setattr(text_filter, "ENCODE_PIECE_CHARS", 2000)
    monkeypatch.setattr(epidoc_stream, "FLUSH_PIECES", 256)
    monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", 1000)
    streamed, sizes = _peaks(tmp_path, streamed=True, unit=unit)
    assert sizes[1] > 1.9 * sizes[0] > 50_000
    assert (streamed[1] - streamed[0]) / (sizes[1] - sizes[0]) < 0.5


def test_shards_of_streamed_editions_are_those_of_whole_ones(tmp_path, corpus_root, monkeypatch):
    src = tmp_path / "bronze"
    src.mkdir()
    for f in sorted((corpus_root / "isicily" / "inscriptions").glob("ISic*.xml"))[:400:8]:
        shutil.copy(f, src / f.name)
    _edition(src / "long.xml", 400)
    kw = dict(
        max_record_letters=64,
        val_fraction=0.1,
        inscription_dev_digits=[6],
        progress=False,
        parallels_index=False,
    )
    old = convert({"bronze": [src]}, tmp_path / "old", **kw)
    monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", -1)
    monkeypatch.setattr(epidoc_stream, "FLUSH_PIECES", 5)
    new = convert({"bronze": [src]}, tmp_path / "new", **kw)
    assert new == old
    assert sum(old["tiers"]["bronze"]["samples_written"].values()) > 100

    def files(folder):
        return {
            p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*"))
            if p.is_file()
        }

    assert files(tmp_path / "new") == files(tmp_path / "old")
