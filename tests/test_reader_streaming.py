"""The JSON Lines and CoNLL-U readers read their file a line at a time: the same records as the
whole file gives, memory bounded by a line (JSONL) or a document (CoNLL-U; a long document
comes in chunks to convert), never by the file."""

from __future__ import annotations

import json
import tracemalloc
from collections import Counter

import conllu as conllu_lib
import pytest

from stoicheia.data import shards
from stoicheia.data.shards import convert
from stoicheia.sources import (
    SourceError,
    conllu,
    jsonl,
    plain,
    read_conllu,
    read_jsonl,
    read_source,
)
from stoicheia.sources.conllu import _slug

_WORDS = "τῆς πρὸς πάντας ἀνθρώπους εὐνοίας πειραθέντες καὶ τῆς ἀνυπερβλήτου χρηστότητος"


def _peak(fn):
    """(result of ``fn()``, the most bytes Python allocated while it ran)."""
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("read_bytes", [1, 7, 64, 1 << 20])
def test_lines_read_in_pieces_are_the_lines_of_the_whole_file(tmp_path, monkeypatch, read_bytes):
    path = tmp_path / "t.txt"
    text = "\ufeffα\r\nβ\rγ\n\nδ\u2028ε\u0085ζ\r\r\n" + "η" * 100 + "\r\nθ\r"
    path.write_bytes(text.encode("utf-8"))
    monkeypatch.setattr(plain, "_READ_BYTES", read_bytes)
    assert list(plain.iter_utf8_lines(path)) == plain.read_utf8_lines(path)
    path.write_bytes(b"")
    assert list(plain.iter_utf8_lines(path)) == plain.read_utf8_lines(path) == []
    path.write_bytes("ι\nκ".encode())
    assert list(plain.iter_utf8_lines(path)) == ["ι\n", "κ"]


def _jsonl(path, n):
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            row = {"id": f"r{i}", "text": f"{_WORDS} {i} " * 8}
            if i % 3 == 0:
                row["work"] = f"w{i // 30}"
            f.write(json.dumps(row, ensure_ascii=i % 2 == 0) + ("\r\n" if i % 5 else "\n"))
            if i % 7 == 0:
                f.write("  \n")


def test_jsonl_is_read_a_line_at_a_time(tmp_path, monkeypatch):
    path = tmp_path / "big.jsonl"
    _jsonl(path, 1000)  # about 1.5 MB
    size = path.stat().st_size
    whole_counts, counts = Counter(), Counter()
    whole = list(read_jsonl(path, tmp_path, counts=whole_counts))
    monkeypatch.setattr(plain, "_READ_BYTES", 4096)

    def ids_only():  # what convert keeps of a record is not the reader's: keep nothing
        return sum(1 for _ in read_jsonl(path, tmp_path, counts=counts))

    n, peak = _peak(ids_only)
    assert n == 1000 and counts == whole_counts
    # the file read whole took several times its size (bytes, text, lines); now a few pieces
    # and the ids seen (for the duplicate check)
    assert peak < size / 4
    assert list(read_jsonl(path, tmp_path)) == whole


def test_long_jsonl_texts_come_in_chunks_with_the_same_text_and_counts(tmp_path, monkeypatch):
    path = tmp_path / "long.jsonl"
    rows = [
        {"id": "a", "text": ("Διονύ-\nσιος " + _WORDS + " ἀλλ\u0313 ἐπεὶ\r\n") * 30},
        {"id": "b", "text": "  καὶ τῆς  "},
        {"id": "c", "text": "\u2028 " + (_WORDS + "\n\n") * 40 + " \t"},
        {"id": "d", "text": "α\u0313\u0301ν ε\u0301ν " * 200},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    whole_counts, counts = Counter(), Counter()
    whole = list(read_jsonl(path, counts=whole_counts))
    monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", 100)
    monkeypatch.setattr(plain, "_NORMALISE_CHARS", 37)
    got = []
    for rec in read_source(path, counts=counts, chunks=True):
        got.append((rec.id, rec.line, rec.work, rec.chunked is not None, "".join(rec.chunks())))
    assert [g[:3] for g in got] == [(r.id, r.line, r.work) for r in whole]
    assert [g[4] for g in got] == [r.text for r in whole]
    assert [g[3] for g in got] == [True, False, True, True]
    assert list(counts.items()) == list(whole_counts.items())
    path.write_text(json.dumps({"id": "w", "text": " \n\t" * 60}) + "\n", encoding="utf-8")
    with pytest.raises(SourceError, match=r"long.jsonl:1: \"text\" is not a non-empty"):
        list(read_source(path, chunks=True))


def test_jsonl_errors_still_name_their_line_when_read_in_pieces(tmp_path, monkeypatch):
    path = tmp_path / "bad.jsonl"
    _jsonl(path, 40)
    with open(path, "ab") as f:
        f.write(b'{"id": "x", "text": "\xff"}\n')
    lines = len(path.read_bytes().split(b"\n")) - 1  # the bad one is the last
    monkeypatch.setattr(plain, "_READ_BYTES", 100)
    with pytest.raises(SourceError, match=rf"bad.jsonl:{lines}: bytes are not UTF-8"):
        list(read_jsonl(path))


@pytest.mark.parametrize("read_bytes", [7, 1 << 20])
def test_a_jsonl_line_too_long_to_parse_is_refused_named_unread(tmp_path, monkeypatch, read_bytes):
    """A line is parsed whole (json.loads): past MAX_JSONL_LINE_CHARS it is refused with its
    line number, its size and the fix, read to its end but never held; the lines before it
    gave their records; convert refuses the file and counts the reason."""
    path = tmp_path / "long.jsonl"
    long = json.dumps({"id": "big", "text": _WORDS * 20}, ensure_ascii=False) + "\n"
    short = json.dumps({"id": "a", "text": _WORDS}, ensure_ascii=False) + "\n"
    path.write_text(short + "\n" + long + short.replace('"a"', '"b"'), encoding="utf-8")
    monkeypatch.setattr(plain, "_READ_BYTES", read_bytes)
    monkeypatch.setattr(jsonl, "MAX_JSONL_LINE_CHARS", len(short) + 10)
    got = []
    with pytest.raises(SourceError) as err:
        for rec in read_jsonl(path):
            got.append(rec.id)
    assert got == ["long.jsonl#a"]
    assert err.value.line == 3
    size = len(long.encode("utf-8"))
    assert f"this line holds {len(long):,}, {size / 1e6:.1f} MB" in err.value.message
    assert "split the record into several lines" in err.value.fix and ".txt" in err.value.fix
    # the line is counted, not held: the lines under the limit are read as before
    with pytest.raises(plain.LineTooLong) as too_long:
        _peak(lambda: list(plain.iter_utf8_lines(path, len(short) + 10)))
    assert (too_long.value.number, too_long.value.chars) == (3, len(long))
    assert too_long.value.size == size
    monkeypatch.setattr(jsonl, "MAX_JSONL_LINE_CHARS", len(long))
    assert [r.id for r in read_jsonl(path)] == ["long.jsonl#a", "long.jsonl#big", "long.jsonl#b"]
    monkeypatch.setattr(jsonl, "MAX_JSONL_LINE_CHARS", len(long) - 1)
    ok = tmp_path / "ok.txt"
    ok.write_text(_WORDS + "\n", encoding="utf-8")
    stats = convert(
        {"bronze": [path, ok]},
        tmp_path / "out",
        val_fraction=0,
        skip_bad=True,
        progress=False,
        parallels_index=False,
    )
    tier = stats["tiers"]["bronze"]
    reason = f"a JSON Lines record longer than {len(long) - 1:,} characters"
    assert tier["per_input"][str(path)] == {"files": 1, "refused": 1, f"refused:{reason}": 1}
    assert tier["files_skipped"][str(path)].startswith(f"{path}:3: {reason} (this line holds")
    assert tier["per_input"][str(ok)]["records"] == 1


def _documents_read_whole(path):
    """The records' (id, work, line, text) as the file read whole and parsed at once by the
    conllu package gives them: sentences grouped into documents (module docstring of
    stoicheia.sources.conllu)."""
    text = path.read_text(encoding="utf-8")
    sentences = conllu_lib.parse(text)
    # the first line of each sentence block
    starts, in_block = [], False
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip() and not in_block:
            starts.append(i)
        in_block = bool(line.strip())
    assert len(starts) == len(sentences)
    docs, newdoc = [], None
    for start, s in zip(starts, sentences, strict=True):
        meta = s.metadata
        newdoc = meta["newdoc id"].strip() if "newdoc id" in meta else newdoc
        if newdoc is not None:
            m = conllu._TLG_WORK.match(newdoc)
            name, work = newdoc, (m.group(1) if m else newdoc)
        elif meta.get("source"):
            name = meta["source"].strip()
            work = conllu._TRAILING_NUMBERS.sub("", name) or name
        else:
            name, work = "doc", "doc"
        if not docs or docs[-1][0] != name:
            docs.append([name, work, start, []])
        docs[-1][3].append(plain.normalise_text(meta["text"]))
    seen = Counter()
    out = []
    for name, work, start, texts in docs:
        seen[_slug(name)] += 1
        key = _slug(name) + (f"~{seen[_slug(name)]}" if seen[_slug(name)] > 1 else "")
        out.append((f"{path.name}#{key}", f"{path.name}#{_slug(work)}", start, " ".join(texts)))
    return out


@pytest.mark.parametrize("name", ["grc_perseus-ud-dev.conllu", "grc_proiel-ud-dev.conllu"])
def test_conllu_documents_are_those_of_the_whole_file(corpus_root, monkeypatch, name):
    path = corpus_root / "ud" / name
    expected = _documents_read_whole(path)
    monkeypatch.setattr(plain, "_READ_BYTES", 4096)
    got = [(r.id, r.work, r.line, r.text) for r in read_conllu(path)]
    assert got == expected and len(got) >= 4


@pytest.mark.parametrize("name", ["grc_perseus-ud-dev.conllu", "grc_proiel-ud-dev.conllu"])
def test_conllu_is_read_a_document_at_a_time(corpus_root, monkeypatch, name):
    path = corpus_root / "ud" / name
    whole_counts, counts = Counter(), Counter()
    whole = list(read_conllu(path, counts=whole_counts))
    longest = max(len(r.text) for r in whole)
    monkeypatch.setattr(plain, "_READ_BYTES", 4096)
    monkeypatch.setattr(conllu, "STREAM_PARAGRAPH_CHARS", 2000)

    def read_chunked():
        got = []
        for rec in read_source(path, counts=counts, chunks=True):
            n = 0
            for chunk in rec.chunks():  # what convert does: each chunk on its way
                n += len(chunk)
            got.append((rec.id, rec.work, rec.line, rec.chunked is not None, n))
        return got

    got, peak = _peak(read_chunked)
    assert [g[:3] for g in got] == [(r.id, r.work, r.line) for r in whole]
    assert [g[4] for g in got] == [len(r.text) for r in whole]
    assert sum(g[3] for g in got) > 0  # long documents came in chunks
    assert counts == whole_counts
    # not the file (2 MB of CoNLL-U, several times that as text and lines): one sentence's
    # parse (hundreds of token dicts for a long one) and less than a document
    assert peak < path.stat().st_size / 4
    assert max(g[4] for g in got) == longest > 2000
    # the chunks read one after the other are the document's text
    chunked = {r.id: "".join(r.chunks()) for r in read_conllu(path, chunks=True)}
    assert chunked == {r.id: r.text for r in whole}


def test_conllu_errors_after_documents_still_name_the_line(tmp_path, monkeypatch):
    path = tmp_path / "x-ud-dev.conllu"
    tok = "1\tλόγος\tλόγος\tNOUN\t_\t_\t0\troot\t_\t_\n"
    good = "".join(f"# newdoc id = d{i}\n# text = λόγος\n{tok}\n" for i in range(30))
    path.write_text(good + "# text = λόγος\n1\tλόγος\tNOUN\n", encoding="utf-8")
    monkeypatch.setattr(plain, "_READ_BYTES", 64)
    with pytest.raises(SourceError, match=r"x-ud-dev.conllu:122: token line has 3"):
        list(read_conllu(path))


def test_shards_of_documents_read_in_chunks_are_those_of_whole_documents(
    tmp_path, corpus_root, monkeypatch
):
    ud = [corpus_root / "ud" / f"grc_{tb}-ud-dev.conllu" for tb in ("proiel", "perseus")]
    ud.append(tmp_path / "texts.jsonl")  # and JSON Lines texts, long and short
    _jsonl(ud[-1], 40)
    kw = dict(val_fraction=0.1, progress=False, parallels_index=False, max_record_letters=256)
    old = convert({"silver": ud}, tmp_path / "old", **kw)
    monkeypatch.setattr(conllu, "STREAM_PARAGRAPH_CHARS", 3000)
    monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", 300)
    monkeypatch.setattr(plain, "_READ_BYTES", 4096)
    seen = Counter()
    real = shards.read_source

    def counting(*a, **k):
        for rec in real(*a, **k):
            seen["chunked"] += rec.chunked is not None
            yield rec

    monkeypatch.setattr(shards, "read_source", counting)
    new = convert({"silver": ud}, tmp_path / "new", **kw)
    assert seen["chunked"] > 5 + 30  # documents and JSON texts
    assert new == old
    files = {
        p.relative_to(tmp_path / "old").as_posix(): p.read_bytes()
        for p in sorted((tmp_path / "old").rglob("*"))
        if p.is_file()
    }
    assert files == {
        p.relative_to(tmp_path / "new").as_posix(): p.read_bytes()
        for p in sorted((tmp_path / "new").rglob("*"))
        if p.is_file()
    }
    assert sum(old["tiers"]["silver"]["samples_written"].values()) > 100
