"""A long record is encoded and cut piece by piece (stoicheia.data.record_parts) into exactly
the parts, line starts and counts of the whole-record path, and never held whole as planes."""

from __future__ import annotations

import tracemalloc
from collections import Counter

import numpy as np
import pytest

from stoicheia.data import record_parts as rp
from stoicheia.data.record_parts import LinesMisaligned, record_parts
from stoicheia.sources import read_source
from stoicheia.text import filter as text_filter

_WORDS = "τῆς πρὸς πάντας ἀνθρώπους εὐνοίας πειραθέντες καὶ τῆς ἀνυπερβλήτου χρηστότητος "


def _made(text, known=None, lines=(), *, whole, min_greek=0.95, max_letters=64):
    made = record_parts(
        text, known, lines, min_greek=min_greek, max_letters=max_letters, whole=whole
    )
    parts = [(p.to_dict(), starts) for p, starts in made]
    return parts, made


def _same(a, b):
    (pa, ma), (pb, mb) = a, b
    assert ma.reject_reason is None
    assert len(pa) == len(pb)
    for (da, sa), (db, sb) in zip(pa, pb, strict=True):
        assert sa == sb
        assert all(np.array_equal(da[k], db[k]) for k in da)
    assert (ma.reject_reason, ma.n_words) == (mb.reject_reason, mb.n_words)
    # the counts and their order (stats.json is written in that order)
    assert list(ma.dropped.items()) == list(mb.dropped.items())
    assert list(ma.leiden.items()) == list(mb.leiden.items())
    assert list(ma.line_counts.items()) == list(mb.line_counts.items())


def _records(paths):
    counts = Counter()
    for path in paths:
        yield from read_source(path, counts=counts)


def test_streamed_parts_are_those_of_the_whole_record_on_real_files(corpus_root, monkeypatch):
    # pieces of 300 characters for both paths: every record of more than 300 characters is
    # streamed, the whole-record path joins the same pieces
    monkeypatch.setattr(text_filter, "ENCODE_PIECE_CHARS", 300)
    files = [
        corpus_root / "perseus" / "Demades" / "demad_gk.xml",
        *(
            corpus_root / "isicily" / "inscriptions" / f"ISic00{n}.xml"
            for n in ("0046", "0406", "0612", "0634", "1174", "1246", "0668")
        ),
    ]
    streamed = realigned = 0
    for rec in _records(files):
        whole = _made(rec.text, rec.known, rec.lines, whole=True)
        try:
            new = _made(rec.text, rec.known, rec.lines, whole=False)
        except LinesMisaligned:  # only where the whole path realigns the lines
            assert whole[1].line_counts["line_numbers_realigned"] == 1
            realigned += 1
            continue
        _same(new, whole)
        streamed += len(rec.text) > 300
        assert all(len(d["chars"]) <= 64 for d, _ in new[0])
    assert streamed >= 5


@pytest.mark.parametrize("max_letters", [16, 17, 300, 5000])
def test_streamed_parts_with_lines_and_leiden_and_never_past_the_limit(monkeypatch, max_letters):
    monkeypatch.setattr(text_filter, "ENCODE_PIECE_CHARS", 200)
    lines = [
        (None, "καὶ"),
        *((str(k), f"τῆς πρὸς [πάν]τας ἀν[θρώ]πους {'ἀβγ'[k % 3]} εὐνοίας") for k in range(60)),
    ]
    lines.insert(5, ("4a", ""))  # a line with no letter gives way to the next
    text = " ".join(t for _, t in lines if t)
    whole = _made(text, lines=lines, whole=True, max_letters=max_letters)
    new = _made(text, lines=lines, whole=False, max_letters=max_letters)
    _same(new, whole)
    assert whole[1].line_counts["line_numbers"] == 60
    assert "line_numbers_realigned" not in whole[1].line_counts
    assert all(0 < len(d["chars"]) <= max_letters for d, _ in new[0])
    assert sum(len(d["chars"]) for d, _ in new[0]) > 1000


@pytest.mark.parametrize("max_letters", [16, 300])
def test_chunks_with_lines_read_as_the_parts_need_them(monkeypatch, max_letters):
    """A streamed EpiDoc record: its text in chunks, its lines an iterator read part by part
    (never ahead of the part that needs them by more than a line); the parts of the whole."""
    monkeypatch.setattr(text_filter, "ENCODE_PIECE_CHARS", 200)
    lines = [(str(k), f"τῆς πρὸς [πάν]τας ἀν[θρώ]πους {'ἀβγ'[k % 3]} εὐνοίας") for k in range(60)]
    text = " ".join(t for _, t in lines)
    read = []

    def lazy():
        for line in lines:
            read.append(line)
            yield line

    chunks = (text[i : i + 37] for i in range(0, len(text), 37))
    whole = _made(text, lines=lines, whole=True, max_letters=max_letters)
    made = record_parts(chunks, None, lazy(), min_greek=0.95, max_letters=max_letters)
    parts = []
    for p, starts in made:
        parts.append((p.to_dict(), starts))
        assert len(read) < 60 or len(parts) > len(whole[0]) - 3  # not all read at the start
    _same((parts, made), whole)
    # no line at all: no line starts, as for a record without lines
    plain = _made(text, whole=True, max_letters=max_letters)
    chunks = (text[i : i + 37] for i in range(0, len(text), 37))
    _same(_made(chunks, lines=iter(()), whole=False, max_letters=max_letters), plain)


def test_lines_that_do_not_hold_the_record_fall_back_to_the_whole_path(monkeypatch):
    monkeypatch.setattr(text_filter, "ENCODE_PIECE_CHARS", 200)
    text = _WORDS * 10
    lines = [("1", _WORDS * 5), ("2", _WORDS * 4)]  # a line short
    with pytest.raises(LinesMisaligned):
        _made(text, lines=lines, whole=False)
    parts, made = _made(text, lines=lines, whole=True)
    assert made.line_counts["line_numbers_realigned"] == 1 and parts


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Gallia est omnis divisa in partes tres " * 40, "not_greek"),
        (_WORDS * 8 + "Gallia est omnis divisa in partes tres " * 40, "not_greek"),
        ("[---] " * 200, "empty"),
        ("· , ; " * 200, "empty"),
    ],
)
def test_a_long_record_is_rejected_with_the_same_reason_and_counts(monkeypatch, text, reason):
    monkeypatch.setattr(text_filter, "ENCODE_PIECE_CHARS", 100)
    whole = _made(text, whole=True)
    new = _made(text, whole=False)
    assert whole[1].reject_reason == reason
    assert whole[0] == []
    assert new[1].reject_reason == reason
    assert list(new[1].dropped.items()) == list(whole[1].dropped.items())
    assert list(new[1].leiden.items()) == list(whole[1].leiden.items())
    assert not new[1].line_counts


def _peak(text: str, whole: bool) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        for _ in record_parts(text, None, (), min_greek=0.95, max_letters=2048, whole=whole):
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_of_a_long_record_is_bounded_by_the_piece_not_the_text(monkeypatch):
    # allocations traced by Python and numpy: deterministic for a given text; pieces of 2,048
    # characters (both paths), so that the encoder's working memory is small beside the text
    monkeypatch.setattr(text_filter, "ENCODE_PIECE_CHARS", 2048)
    short, long = _WORDS * 500, _WORDS * 2_000  # 40,000 and 160,000 characters
    streamed_short, streamed_long = _peak(short, False), _peak(long, False)
    whole_long = _peak(long, True)
    assert whole_long > 8 * len(long)  # the whole path holds the record's planes and more
    assert streamed_long < 1.5 * streamed_short  # flat in the text
    assert streamed_long < whole_long / 4


def test_the_limits_are_checked():
    with pytest.raises(ValueError, match="min_greek"):
        record_parts(_WORDS, None, (), min_greek=1.5, max_letters=16)
    with pytest.raises(ValueError, match="max_letters"):
        record_parts(_WORDS, None, (), min_greek=0.9, max_letters=0)
    assert rp.__all__ == ["LinesMisaligned", "RecordParts", "record_parts"]
