"""A long Perseus division comes to convert as a streamed record: its Beta Code waits for the
records in a spool (stoicheia.sources.perseus_spool, on disk past a bound) and is converted a
piece at a time (stoicheia.sources.perseus_text): the same records, text, citation lines and
counts (in their order) as the reader that converts each division whole, and beyond the tree
memory that does not grow with the division."""

from __future__ import annotations

import itertools
import random
import tracemalloc
from collections import Counter

import pytest

from stoicheia.data.record_parts import record_parts
from stoicheia.sources import perseus, perseus_spool, perseus_text, plain
from stoicheia.sources.perseus import _check_beta_code, read_perseus
from stoicheia.sources.perseus_entities import parse_perseus_xml
from stoicheia.sources.perseus_text import cite_parts, unicode_chunks, unicode_text
from stoicheia.sources.record import SourceError, read_utf8
from stoicheia.text import filter as text_filter

#: Beta Code with what the conversion treats across words: a hyphen at a line end, lost
#: letters in brackets (across words too), sigmas before brackets and spaces, a numeral acute,
#: digits and codes, an elision, capitals, a bracket that a '[' (not a ']') follows
_BETA = (
    "th=s pro\\s pa/ntas gramma-\n  tistou= e)/la[s]en [!!! !!] kai\\ lb/ a)ll) #2# %3 "
    "*)odusseu\\s [ou) !! [a] 12 dh=mos\u00a0 eu)noi/as xa/rin [! kai\\] a!b "
)


def _chunkings(s: str, rng: random.Random):
    yield [s]
    yield list(s)
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(s)), rng.randint(1, 30)))
        yield [s[a:b] for a, b in itertools.pairwise([0, *cuts, len(s)])]


@pytest.mark.parametrize("piece", [1, 7, 40, 1 << 16])
def test_the_text_in_pieces_is_the_text_converted_whole(monkeypatch, piece):
    monkeypatch.setattr(perseus_text, "PIECE_CHARS", piece)
    rng = random.Random(piece)
    expand = {0xE000: "(", 0xE001: " ", 0xE002: ""}
    for beta in (_BETA * 5, _BETA.replace(" ", "\ue000 ") * 2, "\ue001" + _BETA + "\ue002 x"):
        whole_counts = Counter()
        whole = unicode_text(beta, expand, whole_counts)
        assert "[... ..]" in whole or "\ue000" in beta  # lost letters across a word
        for chunks in _chunkings(beta, rng):
            counts = Counter()
            got = list(unicode_chunks(chunks, expand, counts))
            assert all(got) and "".join(got) == whole
            assert list(counts.items()) == list(whole_counts.items())


def test_citation_points_cut_across_chunks_are_whole():
    beta = "a \x03AJ|14|195\x04b c\x03AJ|14|196\x04\x03x\x04 d"
    want = [("a ", None), (None, "AJ|14|195"), ("b c", None), (None, "AJ|14|196"), (None, "x")]
    want.append((" d", None))
    for chunks in ([beta], list(beta), [beta[:5], beta[5:17], beta[17:]]):
        got = list(cite_parts(chunks))
        texts = "".join(t for t, _ in got if t is not None)
        assert texts == "a b c d" and [n for _, n in got if n is not None] == [
            n for _, n in want if n is not None
        ]


def test_the_beta_code_check_counts_a_word_cut_across_chunks_once():
    english = "the quick brown fox jumps over the lazy dog " * 5  # 45 words, none accented
    with pytest.raises(SourceError, match="45 words"):
        _check_beta_code([[english]], 1, "x.xml")
    with pytest.raises(SourceError, match="0 of 45 words"):
        _check_beta_code([[english[k : k + 3] for k in range(0, len(english), 3)]], 1, "x.xml")
    # one accented word in four cut in two: still 1 word, still accented (25% > 20%)
    greek = "xa/rin the dog fox " * 10
    _check_beta_code([[greek[k : k + 2] for k in range(0, len(greek), 2)]], 1, "x.xml")


def _read(path, root, streamed, interleave=True):
    """(records as tuples, counts items) of a Perseus file, read whole or streamed."""
    counts = Counter()
    out = []
    for r in read_perseus(path, root, counts=counts, chunks=streamed):
        assert (r.streamed is not None) == (streamed and r.text == "")
        text, lines = r.stream()
        if interleave:  # as convert reads them: a chunk of text, a line, ...
            t_it, l_it = iter(text), iter(lines)
            texts, got_lines = [], []
            for t, line in itertools.zip_longest(t_it, l_it):
                if t is not None:
                    assert t
                    texts.append(t)
                if line is not None:
                    got_lines.append(line)
            text, lines = "".join(texts), tuple(got_lines)
        else:
            text = text if isinstance(text, str) else "".join(text)
            lines = tuple(lines)
        out.append((r.id, r.line, r.work, r.source, text, lines))
    return out, list(counts.items())


_REAL = [
    "Plutarch/plut.sull_gk.xml",  # no division: one record per chapter milestone
    "Plutarch/plut.070_teubner_gk.xml",  # lost letters [!!!]
    "Sophocles/soph.ant_gk.xml",  # verse lines counted on through the episodes
    "Hesiod/hes.th_gk.xml",
    "Dionysius/dh.006_gk.xml",  # numeral acutes
    "Elegy/1_gk.xml",  # Latin left out
]


@pytest.mark.parametrize("rel", _REAL)
def test_streamed_records_are_those_read_whole_on_real_files(corpus_root, monkeypatch, rel):
    root = corpus_root / "perseus"
    whole, whole_counts = _read(root / rel, root, streamed=False)
    monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", -1)  # every record streamed
    monkeypatch.setattr(perseus_spool, "HOLD_BETA_CHARS", 3000)  # the spool file written
    monkeypatch.setattr(perseus_spool, "READ_CHARS", 97)
    monkeypatch.setattr(perseus_text, "PIECE_CHARS", 301)
    spills = []
    spill = perseus_spool.BetaSpool.spill
    monkeypatch.setattr(perseus_spool.BetaSpool, "spill", lambda s: spills.append(spill(s)))
    got, counts = _read(root / rel, root, streamed=True)
    assert whole and spills
    assert got == whole
    assert counts == whole_counts  # the same counts, first made in the same order


def _long_division(path, n):
    """A Perseus file whose one <div1> is one <p> of ``n`` sections (the benchmark's)."""
    unit = (
        "th=s pro\\s pa/ntas a)nqrw/pous eu)noi/as peiraqe/ntes kai\\ th=s a)nuperblh/tou "
        "xrhsto/thtos metasxo/ntes *domiti/ou *latrwnianou= tou= lampro/tatou e)panorqwtou= "
        'h( boulh\\ kai\\ o( dh=mos eu)noi/as xa/rin <milestone unit="section" n="{n}"/>\n'
    )
    path.write_text(
        '<?xml version="1.0"?>\n<TEI.2><teiHeader><fileDesc><titleStmt>'
        "<title>Large (Greek). Machine readable text</title></titleStmt></fileDesc>"
        '</teiHeader><text lang="greek"><body><div1 type="book" n="1"><p>'
        + "".join(unit.format(n=k) for k in range(1, n + 1))
        + "</p></div1></body></text></TEI.2>\n",
        encoding="utf-8",
    )
    return path


def test_a_long_division_streamed_is_the_division_read_whole(tmp_path, monkeypatch):
    path = _long_division(tmp_path / "long.xml", 300)
    whole, whole_counts = _read(path, tmp_path, streamed=False)
    monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", 1000)
    monkeypatch.setattr(perseus_spool, "HOLD_BETA_CHARS", 5000)
    monkeypatch.setattr(perseus_text, "PIECE_CHARS", 500)
    for interleave in (True, False):
        got, counts = _read(path, tmp_path, streamed=True, interleave=interleave)
        assert got == whole and counts == whole_counts
    assert len(whole) == 1 and len(whole[0][5]) == 301  # the text before section 1, then 300
    assert whole[0][5][5][0] == "Large 1.5"


def test_a_record_read_twice_is_counted_once(tmp_path, monkeypatch):
    path = _long_division(tmp_path / "long.xml", 50)
    (whole,), whole_counts = _read(path, tmp_path, streamed=False)
    monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", 100)
    monkeypatch.setattr(perseus_text, "PIECE_CHARS", 200)
    counts = Counter()
    for rec in read_perseus(path, tmp_path, counts=counts, chunks=True):
        text, _ = rec.stream()
        next(text)  # the caller gives up (lines misaligned) and reads it whole again
        again, lines = rec.stream()
        assert "".join(again) == whole[4] and tuple(lines) == whole[5]
    assert list(counts.items()) == whole_counts


def _peaks(tmp_path, monkeypatch, streamed):
    """(peak Python bytes, letters) of reading a division of 400 and 800 sections and cutting
    it into parts as convert does, the file parsed before (the parse holds the file's text)."""
    peaks, sizes = [], []
    for n in (400, 800):
        path = _long_division(tmp_path / f"long{n}.xml", n)
        parsed = parse_perseus_xml(read_utf8(path), str(path))
        monkeypatch.setattr(perseus, "parse_perseus_xml", lambda text, file, parsed=parsed: parsed)
        monkeypatch.setattr(perseus, "read_utf8", lambda path: "")
        tracemalloc.start()
        try:
            letters = 0
            for rec in read_perseus(path, tmp_path, chunks=True):
                assert (rec.streamed is not None) == streamed
                text, lines = rec.stream()
                for planes, _ in record_parts(text, {}, lines, min_greek=0.5, max_letters=64):
                    letters += len(planes)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        sizes.append(letters)
    return peaks, sizes


def test_a_long_division_is_not_held_whole(tmp_path, monkeypatch):
    """Converted whole, the division's Beta Code, text and lines grow with it (about 15 bytes
    a letter); streamed, with the Beta Code past a bound on disk, they do not (the parsed
    tree, lxml's, is not Python's memory and is freed after the walk)."""
    monkeypatch.setattr(text_filter, "ENCODE_PIECE_CHARS", 2000)
    whole, sizes = _peaks(tmp_path, monkeypatch, streamed=False)
    monkeypatch.setattr(plain, "STREAM_PARAGRAPH_CHARS", 1000)
    monkeypatch.setattr(perseus_spool, "HOLD_BETA_CHARS", 20_000)
    monkeypatch.setattr(perseus_text, "PIECE_CHARS", 2000)
    streamed, same = _peaks(tmp_path, monkeypatch, streamed=True)
    assert same == sizes and sizes[1] > 1.9 * sizes[0] > 50_000
    letters_added = sizes[1] - sizes[0]
    assert (whole[1] - whole[0]) / letters_added > 8
    assert (streamed[1] - streamed[0]) / letters_added < 0.5
    assert streamed[1] < whole[1] / 4
