"""EpiDoc and TEI as editors write them (issue 23, part 2): entities declared in the DOCTYPE,
an editor's alternatives in ``<choice>``, and elements that are not the text, read by
``convert`` (counted in its stats) and by ``restore --epidoc`` alike."""

from __future__ import annotations

import http.server
import threading
from collections import Counter
from pathlib import Path

import pytest

from stoicheia.data.shards import ConvertError, convert
from stoicheia.sources import EpiDocOptions, SourceError, read_epidoc, read_perseus, read_source
from stoicheia.sources.epidoc_choice import choose
from stoicheia.text.encode import encode_text

HEADER = (
    '<teiHeader><profileDesc><textLang mainLang="grc"/></profileDesc>'
    "<revisionDesc><change>&kai;</change></revisionDesc></teiHeader>"
)


def _tei(tmp_path: Path, body: str, doctype: str = "", name: str = "t.xml", header=None) -> Path:
    path = tmp_path / name
    path.write_text(
        f'<?xml version="1.0" encoding="UTF-8"?>\n{doctype}'
        f'<TEI xmlns="http://www.tei-c.org/ns/1.0">{header if header is not None else HEADER}\n'
        f'<text><body><div type="edition" xml:lang="grc"><ab>{body}</ab></div></body></text>'
        "</TEI>\n",
        encoding="utf-8",
    )
    return path


KAI = (
    '<!DOCTYPE TEI [\n<!ENTITY kai "καὶ">\n<!ENTITY tou "τ&omicron;ῦ">\n<!ENTITY omicron "ο">\n]>\n'
)


def _read(path: Path, **options) -> tuple[str, Counter]:
    counts = Counter()
    (rec,) = read_epidoc(path, path.parent, counts=counts, options=EpiDocOptions(**options))
    return rec.text, counts


# --- entities ----------------------------------------------------------------------------


def test_internal_entities_are_expanded_and_counted(tmp_path):
    path = _tei(tmp_path, "ὁ δῆμος &kai; ἡ βουλὴ &tou; Διὸς &kai;", KAI)
    text, counts = _read(path)
    # the word was simply gone before (the reference was an entity node every reader skipped)
    assert text == "ὁ δῆμος καὶ ἡ βουλὴ τοῦ Διὸς καὶ"
    # the references in the text and the header (&kai; of the <change>), not those in the DOCTYPE
    assert counts["entity_expanded"] == 4
    stats = convert({"bronze": [path]}, tmp_path / "out", val_fraction=0.0, progress=False)
    st = stats["tiers"]["bronze"]
    assert st["reader_counts"]["entity_expanded"] == 4
    assert st["letters"]["train"] == len(encode_text(text).planes)


def test_an_entity_inside_a_word_keeps_the_word_whole(tmp_path):
    path = _tei(tmp_path, "ἐ&pi;ὶ τοῦ", '<!DOCTYPE TEI [<!ENTITY pi "π">]>\n', header="")
    text, _ = _read(path)
    assert text == "ἐπὶ τοῦ" and len(encode_text(text).planes.word_starts()) == 2


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 (the handler's name)
        _Recorder.hits.append(self.path)
        body = b'<!ENTITY leaked "LEAKED">'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def recorder():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Recorder.hits = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_external_entities_are_never_read_and_the_file_is_refused_in_one_line(tmp_path, recorder):
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRETWORD", encoding="utf-8")
    cases = {
        "file.xml": f'<!DOCTYPE TEI [<!ENTITY ext SYSTEM "{secret.as_uri()}">]>\n',
        "relative.xml": '<!DOCTYPE TEI [<!ENTITY ext SYSTEM "secret.txt">]>\n',
        "http.xml": f'<!DOCTYPE TEI [<!ENTITY ext SYSTEM "{recorder}/e">]>\n',
        "public.xml": f'<!DOCTYPE TEI [<!ENTITY ext PUBLIC "-//X//Y" "{recorder}/p">]>\n',
    }
    for name, doctype in cases.items():
        path = _tei(tmp_path, "λόγος &ext; καὶ", doctype, name=name, header="")
        with pytest.raises(SourceError) as e:
            list(read_source(path, tmp_path))
        msg = str(e.value)
        assert msg.startswith(f"{path}:") and "\n" not in msg
        assert "&ext; is external" in msg and "never read" in msg
        assert "SECRETWORD" not in msg
    # a DTD and a parameter entity on the network are not fetched either
    dtd = _tei(
        tmp_path,
        "λόγος καὶ",
        f'<!DOCTYPE TEI SYSTEM "{recorder}/tei.dtd" '
        f'[<!ENTITY % p SYSTEM "{recorder}/p.ent"> %p;]>\n',
        name="dtd.xml",
        header="",
    )
    try:
        texts = [r.text for r in read_source(dtd, tmp_path)]
        assert texts == ["λόγος καὶ"]
    except SourceError as e:  # refused is fine too: what matters is that nothing was read
        assert "LEAKED" not in str(e)
    assert _Recorder.hits == []
    # convert refuses such a file with the same line, or skips and lists it with --skip-bad
    path = tmp_path / "file.xml"
    with pytest.raises(ConvertError, match="&ext; is external"):
        convert({"bronze": [path]}, tmp_path / "out", val_fraction=0.0, progress=False)
    good = _tei(tmp_path, "ὁ δῆμος &kai;", KAI, name="good.xml")
    stats = convert(
        {"bronze": [path, good]}, tmp_path / "o2", val_fraction=0.0, progress=False, skip_bad=True
    )
    st = stats["tiers"]["bronze"]
    assert list(st["files_skipped"]) == [str(path)]
    assert sum(st["records_kept"].values()) == 1


def test_undeclared_entity_and_entity_bomb_are_refused_in_one_line(tmp_path):
    path = _tei(tmp_path, "λόγος &nbsp; καὶ", '<!DOCTYPE TEI SYSTEM "tei-epidoc.dtd">\n', header="")
    with pytest.raises(SourceError, match=r"&nbsp; is not declared in the file's DOCTYPE"):
        list(read_source(path, tmp_path))
    lols = '<!ENTITY l0 "λόγος ">' + "".join(
        f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10)
    )
    bomb = _tei(tmp_path, "&l9;", f"<!DOCTYPE TEI [{lols}]>\n", name="bomb.xml", header="")
    with pytest.raises(SourceError, match="expand past the parser's limit") as e:
        list(read_source(bomb, tmp_path))
    assert "\n" not in str(e.value)


def test_perseus_never_reads_an_external_entity(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRETWORD", encoding="utf-8")
    path = tmp_path / "x_gk.xml"
    path.write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE TEI.2 [<!ENTITY ext SYSTEM "{secret.as_uri()}">]>\n'
        '<TEI.2><text lang="greek"><body><div1 n="1"><p>lo/gos &ext;</p></div1></body></text>'
        "</TEI.2>\n",
        encoding="utf-8",
    )
    with pytest.raises(SourceError, match=r"unknown SGML entity &ext;") as e:
        list(read_perseus(path, tmp_path))
    assert "SECRETWORD" not in str(e.value)


def test_a_doctype_whose_entity_holds_a_bracket_is_still_found(tmp_path):
    path = _tei(
        tmp_path, "λόγος&rs; καὶ", '<!DOCTYPE TEI [<!ENTITY rs "">\n<!ENTITY x "]>">]>\n', header=""
    )
    text, _ = _read(path)
    assert text == "λόγος καὶ"
    assert [r.text for r in read_source(path, tmp_path)] == ["λόγος καὶ"]


# --- <choice> -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "names, options, pick, alternatives",
    [
        (["sic", "corr"], {}, 1, False),
        (["corr", "sic"], {}, 0, False),
        (["sic", "corr"], {"choice": "original"}, 0, False),
        (["orig", "reg"], {}, 1, False),
        (["reg", "orig"], {"choice": "original"}, 1, False),
        (["abbr", "expan"], {}, 1, False),
        (["abbr", "expan"], {"expansions": "abbreviated"}, 0, False),
        (["unclear", "unclear"], {}, 0, True),
        (["unclear", "unclear", "unclear"], {"choice": "original"}, 0, True),
        (["seg", "seg"], {}, 0, True),
        (["reg", "reg", "orig"], {}, 0, False),
        ([], {}, None, False),
    ],
)
def test_the_reading_of_each_kind_of_choice(names, options, pick, alternatives):
    res = choose(names, **options)
    assert (res.pick, res.alternatives) == (pick, alternatives)
    assert sorted([*res.left_out, *([] if pick is None else [pick])]) == list(range(len(names)))


def test_alternatives_for_one_letter_are_one_uncertain_letter(tmp_path):
    path = _tei(
        tmp_path,
        "ἔδ<choice><unclear>κ</unclear><unclear>χ</unclear></choice>ε "
        "<choice><seg>ἐπὶ</seg><seg>ἐπεὶ</seg></choice> τοῦ",
        header="",
    )
    text, counts = _read(path)
    # before: ἔδε (nothing) and ἐπὶἐπεὶ was impossible only because a dict kept one <seg>
    assert text == "ἔδκ̣ε ἐ̣π̣ὶ̣ τοῦ"
    assert counts["choice_alternatives"] == 2
    assert counts["reading_left_out:unclear"] == 1 and counts["reading_left_out:seg"] == 1
    enc = encode_text(text, strict=True)
    assert enc.leiden["uncertain_letters"] == 4 and len(enc.planes.word_starts()) == 3


def test_paired_choices_give_one_reading_and_count_the_other(tmp_path):
    path = _tei(
        tmp_path,
        "<choice><sic>ἀνέθεκε</sic><corr>ἀνέθηκε</corr></choice> "
        "<choice><orig>Διονύσιοσ</orig><reg>Διονύσιος</reg></choice> "
        "<choice><abbr>Αὐρ</abbr><expan>Αὐρ<ex>ήλιος</ex></expan></choice>",
        header="",
    )
    text, counts = _read(path)
    assert text == "ἀνέθηκε Διονύσιος Αὐρ(ήλιος)"
    assert counts["reading_left_out:sic"] == 1 and counts["reading_left_out:orig"] == 1
    assert counts["reading_left_out:abbr"] == 1 and counts["choice"] == 3
    text, _ = _read(path, choice="original", expansions="abbreviated")
    assert text == "ἀνέθεκε Διονύσιοσ Αὐρ"


# --- elements that are not the text -------------------------------------------------------


def test_elements_that_are_not_text_are_left_out_counted_and_never_glued(tmp_path):
    path = _tei(
        tmp_path,
        "ὁ δῆμος<index><term>δῆμος</term></index> ἔδωκε<note>sic, lege ἔδωκεν</note> "
        "τὴν<bibl>IG XIV 1</bibl> στή<figure><figDesc>a leaf</figDesc></figure>λην "
        '<fw type="header">ΣΤΗΛΗ</fw>καὶ<certainty locus="value" match=".."/> '
        '<ref target="#n1">1</ref>τοὺς <ref target="#w">θεούς</ref> <term>ἄρχων</term>',
        header="",
    )
    text, counts = _read(path)
    assert text == "ὁ δῆμος ἔδωκε τὴν στήλην καὶ τοὺς θεούς ἄρχων"
    for name in ("index", "note", "bibl", "figure", "fw", "certainty", "ref"):
        assert counts[f"excluded:{name}"] == 1, name
    # a <term> outside an index is text (read, and counted as markup the reader does not name)
    assert [k for k in counts if k.startswith("unknown_element:")] == ["unknown_element:term"]
    stats = convert({"bronze": [path]}, tmp_path / "out", val_fraction=0.0, progress=False)
    rc = stats["tiers"]["bronze"]["reader_counts"]
    assert rc["excluded:index"] == 1 and rc["excluded:note"] == 1


def test_plus_and_backslash_typed_in_the_xml_are_not_read_as_leiden(tmp_path):
    """EpiDoc writes a loss as <gap> and a cross as <g>: a "++" or "\\" typed in the XML text
    would be a lacuna or an opening bracket to the Leiden parser; removed and counted."""
    path = _tei(tmp_path, "++ Ἐν ὀνόματι τοῦ θε\\οῦ", header="")
    text, counts = _read(path)
    assert text == "Ἐν ὀνόματι τοῦ θεοῦ"
    assert counts["literal_plus"] == 2 and counts["literal_bracket"] == 1
    assert encode_text(text, strict=True).leiden["lacunae"] == 0
