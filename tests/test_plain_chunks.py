"""A .txt file read in chunks (read_plaintext(chunks=True), what convert asks for) gives the
records, texts and counts of the file read whole, and never holds a long paragraph whole; an
EpiDoc edition's whitespace is collapsed in pieces, as whole."""

from __future__ import annotations

from collections import Counter

import pytest

from stoicheia.sources import SourceError, plain, read_source
from stoicheia.sources.plain import read_plaintext

_WORDS = "τῆς πρὸς πάντας ἀνθρώπους εὐνοίας πειραθέντες καὶ τῆς ἀνυπερβλήτου χρηστότητος "

_TEXTS = {
    "paragraphs": "μῆνιν ἄειδε θεὰ\nΠηληϊάδεω Ἀχιλῆος\n\n\nοὐλομένην ἣ μυρί᾽\n",
    "crlf and lone cr": "ἄνδρα μοι ἔννεπε,\r\nμοῦσα,\rπολύτροπον\r\n \r\nὃς μάλα πολλὰ\r",
    "hyphens at line ends": ("Διονύ-\nσιος καὶ πο‐\n  τῷ " + _WORDS) * 9 + "\n\n" + _WORDS,
    "elision on consonants": ("ἀλλ\u0313 ἐπεὶ δ\u0313 οὖν  \t" + _WORDS + "\n") * 8,
    "whitespace around": "  \n\t\n   " + _WORDS * 5 + "   \n  \n \u2028 " + _WORDS + "  ",
    "one long line": _WORDS * 40,
    "bom and decomposed": "\ufeff" + "α\u0313\u0301ν ε\u0301ν" * 60 + "\n\n\n",
    "blank lines of spaces": "\n".join([_WORDS, "      ", _WORDS * 3, "\t", "", _WORDS]),
}


def _whole_and_chunked(path, monkeypatch, long):
    whole_counts, chunk_counts = Counter(), Counter()
    whole = list(read_plaintext(path, counts=whole_counts))
    monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", long)
    monkeypatch.setattr(plain, "_READ_BYTES", 7)
    monkeypatch.setattr(plain, "_NORMALISE_CHARS", 20)
    got, chunked = [], 0
    for rec in read_plaintext(path, counts=chunk_counts, chunks=True):
        chunked += rec.chunked is not None
        got.append((rec, "".join(rec.chunks())))
    return whole, whole_counts, got, chunk_counts, chunked


@pytest.mark.parametrize("name", sorted(_TEXTS))
@pytest.mark.parametrize("long", [30, 10**9])
def test_chunks_read_the_same_records_and_counts(tmp_path, monkeypatch, name, long):
    path = tmp_path / "text.txt"
    path.write_bytes(_TEXTS[name].encode("utf-8"))
    whole, whole_counts, got, chunk_counts, chunked = _whole_and_chunked(path, monkeypatch, long)
    assert [(r.id, r.line, r.text) for r in whole] == [(r.id, r.line, t) for r, t in got]
    assert list(chunk_counts.items()) == list(whole_counts.items())
    if long == 30:
        assert chunked > 0
    else:
        assert chunked == 0 and all(r.text == t for r, t in got)


def test_chunks_not_read_by_the_caller_are_skipped(tmp_path, monkeypatch):
    path = tmp_path / "text.txt"
    path.write_text(_WORDS * 20 + "\n\nκαὶ τῆς\n\n" + _WORDS * 20 + "\n", encoding="utf-8")
    monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", 100)
    monkeypatch.setattr(plain, "_READ_BYTES", 64)
    counts = Counter()
    recs = list(read_plaintext(path, counts=counts, chunks=True))
    assert [r.id for r in recs] == ["text.txt#1", "text.txt#2", "text.txt#3"]
    assert recs[1].text == "καὶ τῆς" and recs[1].line == 3 and recs[2].line == 5
    assert counts["records"] == 3


def test_bytes_that_are_not_utf8_are_named_by_line(tmp_path, monkeypatch):
    path = tmp_path / "bad.txt"
    path.write_bytes((_WORDS + "\n").encode() * 30 + b"\xff\xfe\n")
    monkeypatch.setattr(plain, "_READ_BYTES", 50)
    with pytest.raises(SourceError, match=r"bad.txt:31: bytes are not UTF-8"):
        list(read_source(path, chunks=True))


def test_a_long_paragraph_is_given_in_chunks_of_bounded_size(tmp_path):
    path = tmp_path / "long.txt"
    path.write_text(_WORDS * 30_000, encoding="utf-8")  # 2.4 million characters, one line
    records = read_plaintext(path, chunks=True)
    rec = next(records)
    assert rec.text == "" and rec.chunked is not None
    sizes = [len(c) for c in rec.chunks()]  # read before the reader goes on
    assert list(records) == []
    assert max(sizes) <= 2 * plain._NORMALISE_CHARS
    assert sum(sizes) == len(_WORDS) * 30_000 - 1  # the last space stripped


@pytest.mark.parametrize("piece", [1, 2, 5, 64])
def test_an_epidoc_text_has_its_spaces_collapsed_in_pieces_as_whole(monkeypatch, piece):
    from stoicheia.sources import epidoc_leiden

    texts = [
        "  " + _WORDS * 3 + " \n\t ",
        "\u2028[ab]\n\n cd   ef\u00a0 g",
        " " * 40,
        "ἀλλ’" * 30,
        "",
    ]
    want = [epidoc_leiden._WS.sub(" ", t).strip() for t in texts]
    monkeypatch.setattr(epidoc_leiden, "_SPACES_PIECE", piece)
    assert [epidoc_leiden._single_spaces(t) for t in texts] == want
