"""EpiDoc in and out (issue 12, part 1): ``stoicheia.restore_epidoc`` and ``restore --epidoc``,
on real I.Sicily files and a tiny trained model."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from lxml import etree

sys.path.insert(0, str(Path(__file__).parent))
from tiny import train_tiny  # noqa: E402

TEI = "{http://www.tei-c.org/ns/1.0}"
# small real inscriptions that hold, between them, every kind of <gap>: a known width
# (quantity), a range (atLeast/atMost), about N (precision="low"), an unknown width, lost
# lines (unit="line") and illegible letters
FILES = {
    "ISic001375.xml": "quantity, atLeast/atMost, extent=unknown",
    "ISic001382.xml": "precision=low, unit=line",
    "ISic003181.xml": "quantity, extent=unknown, unit=line",
    "ISic001856.xml": "atLeast/atMost, illegible, quantity",
}
FAST = {"top_k": 2, "beam": 2, "unknown_width": 4, "when": "2026-12-01"}


def _isicily(corpus_root: Path, name: str) -> Path:
    return corpus_root / "isicily" / "inscriptions" / name


# --- pieces that need no model ------------------------------------------------------------


def test_element_spans_skip_comments_cdata_and_quoted_brackets():
    from stoicheia.inference.epidoc.byte_spans import _element_spans, _locate

    data = (
        b'<?xml version="1.0"?>\n<a x="1 > 0"><!-- <gap/> --><b/><![CDATA[<gap/>]]>'
        b"<c y='a>b'>t<gap reason=\"lost\"/></c></a>"
    )
    spans = _element_spans(data)
    assert [s.name for s in spans] == [b"a", b"b", b"c", b"gap"]
    gap = spans[3]
    assert data[gap.start : gap.end] == b'<gap reason="lost"/>'
    c = spans[2]
    assert data[c.start : c.end] == b"<c y='a>b'>t<gap reason=\"lost\"/></c>"
    doc = etree.fromstring(data)
    located = _locate(doc, data)
    assert located[doc.find(".//gap")] == gap


def test_gap_readings_by_hand():
    """Readings of a gap: its fill as printed, then its own alternatives, with the decoder's
    probabilities (the ones restore prints), not renormalised over the top-k."""
    from stoicheia.inference.epidoc.restore import gap_readings

    alt = SimpleNamespace
    gaps = [
        SimpleNamespace(
            fill="τε καὶ",
            alternatives=[alt(fill="τε καὶ", prob=0.2), alt(fill="τὰ καὶ", prob=0.05)],
        ),
        SimpleNamespace(fill="ος", alternatives=[alt(fill="ος", prob=0.012)]),
    ]
    res = SimpleNamespace(gaps=gaps)
    assert gap_readings(res, 0) == [("τε καὶ", 0.2), ("τὰ καὶ", 0.05)]
    assert gap_readings(res, 1) == [("ος", 0.012)], "one reading: its own probability, not 1"


def test_header_entries_placed_and_indented_in_place():
    """The respStmt goes after the last child of <titleStmt>, the change into <listChange> (or
    a new <revisionDesc>), indented like their siblings, CRLF kept; nothing else moves."""
    from stoicheia.inference.epidoc.byte_spans import _locate
    from stoicheia.inference.epidoc.write_back import _header_edits

    model = SimpleNamespace(config={"run_name": "demo&1"}, step=7, source="ck&1.pt")
    head = (
        '<TEI xmlns="http://www.tei-c.org/ns/1.0">\r\n  <teiHeader>\r\n'
        "    <fileDesc>\r\n      <titleStmt>\r\n"
        "        <title>T</title>\r\n      </titleStmt>\r\n    </fileDesc>\r\n"
    )
    for rev, expect_change in (
        (
            "    <revisionDesc>\r\n      <listChange>\r\n"
            '        <change when="2020-01-01">x</change>\r\n'
            "      </listChange>\r\n    </revisionDesc>\r\n",
            '<change when="2020-01-01">x</change>\r\n'
            '        <change when="2026-12-01" who="#stoicheia">',
        ),
        (
            "",
            "</fileDesc>\r\n    <revisionDesc><listChange>"
            '<change when="2026-12-01" who="#stoicheia">',
        ),
    ):
        data = (head + rev + "  </teiHeader>\r\n</TEI>").encode()
        doc = etree.fromstring(data)
        edits = _header_edits(
            doc, data, _locate(doc, data), "t.xml", "stoicheia", model, 2, 5, "2026-12-01"
        )
        out, at = [], 0
        for s, e, b in sorted(edits):
            out += [data[at:s], b]
            at = e
        new = b"".join(out + [data[at:]]).decode()
        assert (
            "<title>T</title>\r\n        <respStmt>"
            '<name xml:id="stoicheia">Stoicheia (run demo&amp;1, step 7)</name>' in new
        )
        assert "ck&amp;1.pt" not in new and expect_change in new  # no path of this machine
        assert "\n" not in new.replace("\r\n", "")  # no bare LF in a CRLF file
        assert etree.fromstring(new.encode()) is not None


def _apply(data: bytes, edits) -> bytes:
    out, at = [], 0
    for s, e, b in sorted(edits):
        out += [data[at:s], b]
        at = e
    return b"".join(out + [data[at:]])


def test_header_entries_leave_the_tail_of_the_last_entry_where_it_was(corpus_root):
    """ISic001355's last <change> ends its line with a space: the new <change> goes on a line
    of its own after that space, so every byte of the old line stays as it was (the space had
    moved after the new entry)."""
    from stoicheia.inference.epidoc.byte_spans import _locate
    from stoicheia.inference.epidoc.write_back import _header_edits

    model = SimpleNamespace(config={"run_name": "demo"}, step=7, source="ck.pt")
    data = _isicily(corpus_root, "ISic001355.xml").read_bytes()
    last = b"tagged names and persons</change> \n\t</listChange>"
    assert last in data  # the trailing space of the fixture
    doc = etree.fromstring(data)
    new = _apply(
        data,
        _header_edits(
            doc, data, _locate(doc, data), "t.xml", "stoicheia", model, 1, 5, "2026-12-01"
        ),
    )
    assert re.search(
        rb"tagged names and persons</change> \n {16}<change when=\"2026-12-01\" who=\"#stoicheia\">"
        rb"[^<]*</change>\n\t</listChange>",
        new,
    ), new[new.index(b"tagged names") :][:300]
    # and a tail of spaces before the parent's end tag on the same line stays before the entry
    data = (
        b'<TEI xmlns="http://www.tei-c.org/ns/1.0"><teiHeader><fileDesc><titleStmt>'
        b"<title>T</title>\t </titleStmt></fileDesc></teiHeader></TEI>"
    )
    doc = etree.fromstring(data)
    new = _apply(
        data,
        _header_edits(
            doc, data, _locate(doc, data), "t.xml", "stoicheia", model, 1, 5, "2026-12-01"
        ),
    )
    assert b"<title>T</title>\t <respStmt>" in new and b"</respStmt></titleStmt>" in new


def test_kept_gap_attributes_by_hand():
    """The <supplied> keeps a gap's identity and place (xml:id, n, xml:lang, rend: as written)
    and drops the editor's judgement of the loss (reason, resp, cert); what describes the loss
    (quantity, unit, extent, precision, atLeast/atMost) it keeps where the extent is unknown or
    approximate (issue 31: the editor's statement stays beside the model's reading), and drops
    for a counted loss (the letters written say it)."""
    from stoicheia.inference.epidoc.byte_spans import _element_spans
    from stoicheia.inference.epidoc.write_back import _kept_attributes, _supplied_xml

    data = (
        b'<ab><tei:gap reason=\'lost\' quantity="6" unit="character" precision="low" '
        b'xml:id="A&#x3b5;1"\n  n="30" atLeast="1" atMost="2" extent="x" cert="low" resp="#ed" '
        b'rend="x" xml:lang="grc"/></ab>'
    )
    span = _element_spans(data)[1]
    kept = _kept_attributes(data, span)
    assert [n for n, _ in kept] == [
        "quantity",
        "unit",
        "precision",
        "xml:id",
        "n",
        "atLeast",
        "atMost",
        "extent",
        "rend",
        "xml:lang",
    ]
    counted = b'<ab><gap reason="lost" quantity="6" unit="character" n="3"/></ab>'
    assert [n for n, _ in _kept_attributes(counted, _element_spans(counted)[1])] == ["n"]
    kept = [(n, raw) for n, raw in kept if n in ("xml:id", "n", "rend", "xml:lang")]
    assert kept[0][1] == b'xml:id="A&#x3b5;1"'
    out = _supplied_xml("tei:", "A\u03b51", "stoicheia", "τοῦ", 0.5, [("τῶν", 0.2)], kept)
    assert out.startswith(
        '<tei:supplied reason="lost" cert="low" resp="#stoicheia" xml:id="A&#x3b5;1" n="30" '
        'rend="x" xml:lang="grc">τοῦ</tei:supplied><tei:certainty target="#A\u03b51" '
    )
    assert out.count('target="#A\u03b51"') == 2
    plain = _supplied_xml("", "stoicheia-1", "stoicheia", "τοῦ", 0.5, [], [])
    assert plain.startswith(
        '<supplied reason="lost" cert="low" resp="#stoicheia" xml:id="stoicheia-1">'
    )


def test_capitals_of_an_orig_reach_the_decoder_as_written(corpus_root):
    """ISic002760 writes diplomatic capitals in <orig>: the text the decoder gets keeps them
    (``ΘΑ [...] ΟΔ``), so the decoder's style rule fills a gap among them in capitals, as
    ``restore`` does for the same Leiden; the training reader still lower-cases them."""
    from stoicheia.inference.epidoc.plan import plan_epidoc
    from stoicheia.sources import EpiDocOptions, read_epidoc

    plan = plan_epidoc(_isicily(corpus_root, "ISic002760.xml"))
    text = " ".join(p.text for p in plan.pieces)
    assert "⸢ΘΑ⸣ [...] ΟΔ ⸢ΑΜΕΛΜΟΥΚΗΠΡΟΣΑΗΝΟΣ⸣" in text and "[..]ΑΧ Ἀδοναήλ" in text
    (rec,) = read_epidoc(_isicily(corpus_root, "ISic002760.xml"))
    assert "⸢θα⸣ [...] οδ" in rec.text
    with pytest.raises(ValueError, match="orig_case"):
        EpiDocOptions(orig_case="upper")


def test_not_epidoc_not_greek_malformed_are_one_line_errors(corpus_root, tmp_path):
    from stoicheia.inference.epidoc.outcomes import EpiDocRestoreError
    from stoicheia.inference.epidoc.restore import restore_epidoc

    bad = tmp_path / "cut.xml"
    bad.write_bytes(_isicily(corpus_root, "ISic001375.xml").read_bytes()[:5000])
    with pytest.raises(
        EpiDocRestoreError,
        match=r"cut\.xml:\d+: malformed XML .*cut short.*download it again whole",
    ):
        restore_epidoc(None, bad)
    # a text file named .xml is said to be plain text, not lxml's "Start tag expected" with
    # "repair the markup" (there is no markup to repair)
    plain = tmp_path / "notes.xml"
    plain.write_bytes("\ufeff\nἔδοξε τῇ βουλῇ [...]\n".encode())
    with pytest.raises(
        EpiDocRestoreError,
        match=r"notes\.xml:2: not XML: it starts with plain text \('ἔδοξε τῇ βουλῇ \[\.\.\.\]'\)"
        r", not with a tag; give the XML file itself",
    ):
        restore_epidoc(None, plain)
    # an empty or blank file is said to be one, not lxml's "malformed XML (Document is empty)"
    for name, data, what in (
        ("empty.xml", b"", r"empty file \(0 bytes\)"),
        ("blank.xml", b"\xef\xbb\xbf \n\t\n", r"blank file \(7 bytes, only whitespace\)"),
    ):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(EpiDocRestoreError, match=rf"^\S*{name}: {what}: nothing to restore;"):
            restore_epidoc(None, tmp_path / name)
    with pytest.raises(EpiDocRestoreError, match=r"root element is <html>, not a TEI P5 <TEI>"):
        restore_epidoc(None, "<html><body>καὶ</body></html>")
    with pytest.raises(
        EpiDocRestoreError, match=r"ISic000829\.xml: no Greek edition \(the edition is in la\)"
    ):
        restore_epidoc(None, _isicily(corpus_root, "ISic000829.xml"))


# --- a tiny trained model -----------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(small_shards, tmp_path_factory):
    return train_tiny(
        small_shards,
        tmp_path_factory.mktemp("runs"),
        "epi",
        "train.nominal_steps=2",
        "train.max_steps=2",
        "train.save_interval=2",
        "train.log_every=1",
    )


@pytest.fixture(scope="module")
def model(trained):
    from stoicheia.inference.loading import load_model

    return load_model(trained, device="cpu")


_ADDED_GAP = re.compile(
    # the editor's statement of an unknown or approximate loss stays on the <supplied>
    # a reading the parallels carry is evidence="parallel", its sources named in a <desc>
    rb'<supplied reason="lost" cert="low" resp="#stoicheia"(?: evidence="parallel")? '
    rb'xml:id="stoicheia-\d+"'
    rb'(?: (?:quantity|unit|extent|precision|atLeast|atMost)="[^"]*")*>[^<]*</supplied>'
    rb'(?:<certainty target="#stoicheia-\d+" locus="value"'
    rb'(?: assertedValue="[^"]*")? degree="[0-9.]+" resp="#stoicheia"'
    rb"(?:/>|><desc>parallels: [^<]*</desc></certainty>))+"
)
# an entry and the line break and indent put before it (no more: the spaces ending the line
# before are the file's)
_ADDED_HEADER = re.compile(
    rb'(?:\r?\n[ \t]*)?<respStmt><name xml:id="stoicheia">[^<]*</name><resp>[^<]*</resp></respStmt>'
    rb'|(?:\r?\n[ \t]*)?<change when="2026-12-01" who="#stoicheia">[^<]*</change>'
)


@pytest.mark.parametrize("name", sorted(FILES))
def test_only_the_restored_gaps_and_the_header_entry_change(corpus_root, model, name):
    from stoicheia.inference.epidoc.byte_spans import _locate
    from stoicheia.inference.epidoc.restore import restore_epidoc

    src = _isicily(corpus_root, name)
    before = src.read_bytes()
    result = restore_epidoc(model, src, **FAST)
    restored = [g for g in result.gaps if g.status == "restored"]
    assert restored, f"{name}: nothing restored"
    # the bytes: the output, with what was added taken out, is the input with each restored
    # <gap> element taken out: nothing else moved or changed
    expect, at = [], 0
    for g in sorted(restored, key=lambda g: g.start):
        assert before[g.start : g.start + 4] == b"<gap"
        expect += [before[at : g.start], b"\x00GAP\x00"]
        at = g.end
    expect.append(before[at:])
    stripped, n_gaps = _ADDED_GAP.subn(b"\x00GAP\x00", result.xml)
    stripped, n_header = _ADDED_HEADER.subn(b"", stripped)
    assert n_gaps == len(restored) and n_header == 2
    assert stripped == b"".join(expect)
    # the XML: each <supplied> stands where its <gap> stood (same parent), the left gaps are
    # still there, the pointers resolve, the fills are Greek letters
    old, new = etree.fromstring(before), etree.fromstring(result.xml)
    sup = new.findall(f".//{TEI}supplied[@resp='#stoicheia']")
    assert [s.text for s in sup] == [g.fill for g in restored]
    for (
        s
    ) in sup:  # Greek letters, with the word breaks and punctuation the model printed between them
        assert re.fullmatch(
            r"[\u0370-\u03ff\u1f00-\u1fff](.*[\u0370-\u03ff\u1f00-\u1fff])?", s.text
        ), s.text
        assert not re.search(r"[A-Za-z\[\]<>&]", s.text)
    at_byte = {span.start: el for el, span in _locate(old, before).items()}
    assert [s.getparent().tag for s in sup] == [at_byte[g.start].getparent().tag for g in restored]
    assert len(list(new.iter(f"{TEI}gap"))) == len(list(old.iter(f"{TEI}gap"))) - len(restored)
    ids = {e.get("{http://www.w3.org/XML/1998/namespace}id") for e in new.iter()}
    assert "stoicheia" in ids
    for c in new.iter(f"{TEI}certainty"):
        if c.get("resp") == "#stoicheia":
            assert c.get("target")[1:] in ids and 0.0 <= float(c.get("degree")) <= 1.0
    for g in restored:
        assert 0.0 < sum([g.prob, *(p for _, p in g.alternatives)]) <= 1.0 + 1e-6
    json.dumps(result.to_dict(), ensure_ascii=False)
    assert src.read_bytes() == before  # the input is never touched


def test_the_supplied_keeps_the_gaps_id_and_number(corpus_root, model):
    """ISic000800's gap has xml:id="AεABK" n="30", ISic000876's n="35": the <supplied> that
    replaces each keeps them (links and word numbers still resolve), its <certainty> entries
    point at the gap's own id; its loss was approximate (precision="low"), so the editor's
    statement of it stays (issue 31), a counted one goes."""
    from stoicheia.inference.epidoc.restore import restore_epidoc

    xid = "{http://www.w3.org/XML/1998/namespace}id"
    res = restore_epidoc(model, _isicily(corpus_root, "ISic000800.xml"), **FAST)
    assert [g.status for g in res.gaps] == ["restored"]
    doc = etree.fromstring(res.xml)
    (sup,) = doc.findall(f".//{TEI}supplied[@resp='#stoicheia']")
    assert sup.get(xid) == "AεABK" and sup.get("n") == "30"
    assert sup.get("quantity") == "6" and sup.get("precision") == "low"
    assert sup.get("unit") == "character" and sup.get("reason") == "lost"
    targets = {c.get("target") for c in doc.iter(f"{TEI}certainty") if c.get("resp")}
    assert targets == {"#AεABK"}
    assert [e for e in doc.iter() if e.get(xid) == "AεABK"] == [sup]  # the id stays unique
    res = restore_epidoc(model, _isicily(corpus_root, "ISic000876.xml"), **FAST)
    doc = etree.fromstring(res.xml)
    numbers = [s.get("n") for s in doc.findall(f".//{TEI}supplied[@resp='#stoicheia']")]
    assert numbers == ["35", "50"][: len(numbers)] and "35" in numbers
    for s in doc.findall(f".//{TEI}supplied[@resp='#stoicheia']"):
        assert s.get(xid).startswith("stoicheia-")  # no id of its own: the model's
        assert s.get("quantity") is None  # counted: the letters say it


def test_a_gap_among_capitals_is_filled_in_capitals(corpus_root, model):
    """ISic002760's ``ΘΑ <gap quantity="3"/> ΟΔ``: filled in capitals without marks, like the
    text path (it was filled in lower case with accents)."""
    from stoicheia.inference.epidoc.restore import restore_epidoc
    from stoicheia.inference.restore import restore

    src = _isicily(corpus_root, "ISic002760.xml")
    res = restore_epidoc(model, src, **FAST)
    (g,) = [g for g in res.gaps if g.notation == "[...]"]
    assert g.status == "restored"
    for fill in [g.fill, *(f for f, _ in g.alternatives)]:
        assert fill == fill.upper() and fill.isalpha(), fill
    # the same readings as the text path on the Leiden text it was given
    from stoicheia.inference.epidoc.plan import plan_epidoc

    (piece,) = plan_epidoc(src, window=96, unknown_width=4).pieces[:1]
    text = restore(model, piece.text, top_k=2, beam=2, unknown_width=4)
    assert [x.fill for x in text.gaps] == [x.fill for x in res.gaps if x.status == "restored"][
        : len(text.gaps)
    ]


def test_gap_kinds_are_filled_or_left_as_documented(corpus_root, model):
    from stoicheia.inference.epidoc.restore import restore_epidoc

    seen: dict[str, set[str]] = {}
    for name in FILES:
        for g in restore_epidoc(model, _isicily(corpus_root, name), **FAST).gaps:
            seen.setdefault(g.status, set()).add(g.reason if g.status == "left" else g.notation[:2])
    assert seen["left"] == {"lines", "illegible"}
    # exact width [.], range [.1-2.], about N [-ca.1-], unknown width [---]
    assert {"[.", "[-"} <= seen["restored"]
    assert "refused" not in seen


def test_a_gap_wider_than_the_window_is_left(corpus_root, model):
    from stoicheia.inference.epidoc.restore import restore_epidoc

    src = _isicily(corpus_root, "ISic001375.xml")
    result = restore_epidoc(
        model, src, **{**FAST, "unknown_width": 200}
    )  # [---]: 202 slots, window 96
    by = {g.notation: g for g in result.gaps}
    assert by["[---]"].status == "left" and by["[---]"].reason == "too wide"
    assert by["[.]"].status == "restored"
    assert (
        result.xml.count(b'<gap reason="lost"') == src.read_bytes().count(b'<gap reason="lost"') - 2
    )


def test_xml_given_as_text_and_determinism(corpus_root, model):
    from stoicheia.inference.epidoc.restore import restore_epidoc

    src = _isicily(corpus_root, "ISic003181.xml")
    a = restore_epidoc(model, src, **FAST)
    b = restore_epidoc(model, src.read_text(encoding="utf-8"), **FAST)
    assert a.xml == b.xml and b.source == "<xml>"


def _long_edition(corpus_root: Path, name: str, repeats: int, folder: Path) -> Path:
    """``name`` with the content of its edition's ``<ab>`` repeated ``repeats`` times: one long
    edition (a large file in small), built in ``folder``."""
    data = _isicily(corpus_root, name).read_bytes()
    m = re.search(rb"(<div type=\"edition\"[^>]*>\s*<ab>)(.*?)(</ab>)", data, re.S)
    out = folder / f"long-{name}"
    out.write_bytes(data[: m.start(2)] + m.group(2) * repeats + data[m.end(2) :])
    return out


def test_pieces_cut_at_word_breaks_outside_brackets_within_the_budget():
    """A text over the budget is cut at spaces outside every bracket, into pieces of at most the
    budget (in letter slots: a letter 1, a lacuna its slots) that cover it; the cut is the one
    farthest from a lacuna among those leaving a piece at least half the budget; a text within
    the budget is one piece; a run without spaces is cut before a letter."""
    from stoicheia.inference.epidoc.pieces import pieces, slot_offsets
    from stoicheia.text.leiden import parse_leiden
    from stoicheia.text.leiden_segments import Lacuna

    text = "καὶ τοῦ [...] δήμου [καὶ τῆς] πόλεως [.5.] ἔδοξε τῇ βουλῇ καὶ τῷ δήμῳ [---] ἐπειδὴ"
    lacs = {s.start: (s.end, s.max_width or 6) for s in parse_leiden(text) if isinstance(s, Lacuna)}
    cum, outside = slot_offsets(text, lacs)
    assert (
        cum[-1] == 3 + 3 + 3 + 5 + 6 + 6 + 5 + 5 + 2 + 5 + 3 + 2 + 4 + 6 + 6
    )  # letters and lacuna slots
    assert pieces(text, 0, len(text), lacs, 200) == [(0, len(text))]
    for budget in (30, 20, 12):
        cuts = pieces(text, 0, len(text), lacs, budget)
        assert cuts[0][0] == 0 and cuts[-1][1] == len(text)
        assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:], strict=False))
        for a, b in cuts:
            assert cum[b] - cum[a] <= budget, (budget, text[a:b])
            parse_leiden(text[a:b])  # never inside a bracket: every piece is Leiden on its own
        assert all(text[a].isspace() and outside[a] for a, _ in cuts[1:])
    # budget 20, the second half of it: the cut after δήμου (slot 14, 5 slots from [...]) or
    # after [καὶ τῆς] (slot 20, 6 slots from [.5.]): the one farther from a lacuna
    assert [text[a:b].strip() for a, b in pieces(text, 0, len(text), lacs, 20)][
        0
    ] == "καὶ τοῦ [...] δήμου [καὶ τῆς]"
    continua = "ΚΑΙΤΟΥ[...]ΔΗΜΟΥΚΑΙΤΗΣΠΟΛΕΩΣ"
    lacs = {s.start: (s.end, 3) for s in parse_leiden(continua) if isinstance(s, Lacuna)}
    cuts = pieces(continua, 0, len(continua), lacs, 10)
    assert "".join(continua[a:b] for a, b in cuts) == continua and len(cuts) == 3
    assert all(parse_leiden(continua[a:b]) for a, b in cuts)


def test_a_long_edition_is_restored_in_pieces_of_the_window(corpus_root, model, tmp_path):
    """A long edition (a large file in small) is planned in pieces that each fit the model's
    window, every gap to fill in one piece, and restored in full with its progress reported;
    the bytes outside the restored gaps do not change."""
    from stoicheia.inference.epidoc.plan import plan_epidoc
    from stoicheia.inference.epidoc.restore import restore_epidoc
    from stoicheia.inference.restore import parse_input

    src = _long_edition(corpus_root, "ISic001375.xml", 12, tmp_path)
    window = int(model.config["data"]["seq_len"])
    plan = plan_epidoc(src, window=window, unknown_width=FAST["unknown_width"])
    to_fill = [g.index for g in plan.gaps if g.status == "refused"]
    assert len(plan.gaps) == 36 and len(to_fill) == 36
    assert len(plan.pieces) > 1
    assert (
        sorted(i for p in plan.pieces for i in p.fill) == to_fill
    )  # each gap in exactly one piece
    for p in plan.pieces:
        items, gaps = parse_input(p.text, unknown_width=FAST["unknown_width"])
        slots = sum(gaps[it.gap].slots if it.gap is not None else 1 for it in items)
        assert slots <= window, p.text
    seen: list[tuple[int, int]] = []
    result = restore_epidoc(
        model, src, progress=lambda done, total: seen.append((done, total)), **FAST
    )
    assert result.count("restored") == 36
    assert seen[0] == (0, 36) and seen[-1] == (36, 36) and len(seen) == len(plan.pieces) + 1
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    before = src.read_bytes()
    stripped = _ADDED_HEADER.sub(b"", _ADDED_GAP.sub(b"\x00GAP\x00", result.xml))
    assert stripped == re.sub(rb"<gap [^>]*/>", b"\x00GAP\x00", before)


# --- the corpus run -------------------------------------------------------------------------


def _corpus(corpus_root: Path, folder: Path) -> Path:
    folder.mkdir()
    shutil.copy(_isicily(corpus_root, "ISic001382.xml"), folder / "a.xml")
    (folder / "b_malformed.xml").write_bytes(
        _isicily(corpus_root, "ISic001375.xml").read_bytes()[:3000]
    )
    (folder / "c_not_epidoc.xml").write_text(
        '<?xml version="1.0"?><html><p>ἀγαθῇ τύχῃ</p></html>', encoding="utf-8"
    )
    (folder / "sub").mkdir()
    shutil.copy(_isicily(corpus_root, "ISic003181.xml"), folder / "sub" / "d.xml")
    return folder


PROVENANCE = ".stoicheia-restore.jsonl"


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from stoicheia.cli import main

    code = main(["restore", *argv])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_corpus_run_goes_past_bad_files_resumes_and_is_deterministic(
    corpus_root, trained, tmp_path, capsys
):
    inp = _corpus(corpus_root, tmp_path / "in")
    out = tmp_path / "out"
    opts = ["--top-k", "2", "--beam", "2", "--unknown-width", "4"]
    code, stdout, stderr = _cli(
        capsys, str(trained), "--epidoc", str(inp), "--out", str(out), *opts
    )
    assert code == 0
    err = stderr.strip().splitlines()
    assert len(err) == 2, stderr
    assert "b_malformed.xml" in err[0] and "malformed XML" in err[0]
    assert "c_not_epidoc.xml" in err[1] and "not a TEI P5" in err[1]
    # the summary line, then what the restoration went without (the tiny run has no n-gram)
    line, *missing = stdout.strip().splitlines()
    assert [m.startswith("(") and "no ngram.npz" in m for m in missing] == [True], missing
    assert re.fullmatch(
        r"restore --epidoc: 4 files \(2 written, 0 already there, 2 refused\); "
        r"gaps \d+ restored / 2 left \(lines 2\) / 0 refused; [0-9.]+ s",
        line,
    ), line
    written = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert set(written) == {
        "a.xml",
        "sub/d.xml",
        PROVENANCE,
    }  # no temporary file left, the bad files not written; what each output was made from
    assert b'resp="#stoicheia"' in written["a.xml"]
    # resume: nothing to do
    code, stdout, _ = _cli(capsys, str(trained), "--epidoc", str(inp), "--out", str(out), *opts)
    assert code == 0 and "(0 written, 2 already there, 2 refused)" in stdout
    # one output lost: only it is written again, byte for byte the same
    (out / "sub" / "d.xml").unlink()
    code, stdout, _ = _cli(capsys, str(trained), "--epidoc", str(inp), "--out", str(out), *opts)
    assert code == 0 and "(1 written, 1 already there, 2 refused)" in stdout
    assert (out / "sub" / "d.xml").read_bytes() == written["sub/d.xml"]


def test_resume_redoes_an_output_of_another_input_or_checkpoint(
    corpus_root, trained, tmp_path, capsys
):
    """An output already there is kept only when it was made from the same input bytes by the
    same model with the same options (the provenance file says); else it is restored again."""
    inp = tmp_path / "in"
    inp.mkdir()
    shutil.copy(_isicily(corpus_root, "ISic001382.xml"), inp / "a.xml")
    out = tmp_path / "out"
    opts = ["--top-k", "2", "--beam", "2", "--unknown-width", "4"]
    run = [str(trained), "--epidoc", str(inp), "--out", str(out), *opts]
    assert _cli(capsys, *run)[0] == 0
    first = (out / "a.xml").read_bytes()
    # another input file under the same name: its output is not kept
    shutil.copy(_isicily(corpus_root, "ISic003181.xml"), inp / "a.xml")
    code, stdout, stderr = _cli(capsys, *run)
    assert code == 0 and "(1 written, 0 already there, 1 redone, 0 refused)" in stdout
    assert "made from another input file" in stderr and len(stderr.strip().splitlines()) == 1
    assert (out / "a.xml").read_bytes() != first
    assert b"ISic003181" in (out / "a.xml").read_bytes()
    # the same input and model: kept
    code, stdout, _ = _cli(capsys, *run)
    assert "(0 written, 1 already there, 0 refused)" in stdout
    # an output recorded as made by another checkpoint: redone
    lines = (out / PROVENANCE).read_text(encoding="utf-8").splitlines()
    entry = json.loads(lines[-1])
    entry["model"] = "run other, step 9, weights sha256:0000000000000000"
    (out / PROVENANCE).write_text(json.dumps(entry) + "\n", encoding="utf-8")
    code, stdout, stderr = _cli(capsys, *run)
    assert "1 redone" in stdout and "by another model (run other, step 9" in stderr
    # other options: redone; an output with no record at all: redone
    code, stdout, stderr = _cli(capsys, *run[:-1], "5")
    assert "1 redone" in stdout and "with other options" in stderr
    (out / PROVENANCE).unlink()
    code, stdout, stderr = _cli(capsys, *run)
    assert "1 redone" in stdout and "recorded no provenance" in stderr


def test_a_link_beside_its_target_in_a_folder_is_restored_once(
    corpus_root, trained, tmp_path, capsys
):
    inp = tmp_path / "in"
    inp.mkdir()
    shutil.copy(_isicily(corpus_root, "ISic000884.xml"), inp / "a.xml")
    (inp / "b_link.xml").symlink_to(inp / "a.xml")
    out = tmp_path / "out"
    code, stdout, stderr = _cli(
        capsys, str(trained), "--epidoc", str(inp), "--out", str(out), "--top-k", "2",
        "--beam", "2", "--unknown-width", "4",
    )  # fmt: skip
    assert code == 0
    assert "(1 written, 0 already there, 0 refused, 1 given twice)" in stdout
    assert "b_link.xml: given twice" in stderr
    assert sorted(p.name for p in out.iterdir()) == [PROVENANCE, "a.xml"]


def test_never_written_over_an_input(corpus_root, trained, tmp_path, capsys):
    inp = _corpus(corpus_root, tmp_path / "in")
    before = {p: p.read_bytes() for p in inp.rglob("*.xml")}
    code, _, err = _cli(capsys, str(trained), "--epidoc", str(inp), "--out", str(inp / "restored"))
    assert code == 2 and "inside the input folder" in err and len(err.strip().splitlines()) == 1
    code, _, err = _cli(capsys, str(trained), "--epidoc", str(inp), "--out", str(inp))
    assert code == 2 and "inside the input folder" in err
    # a file whose output name is the file itself: refused, one line, the run goes on
    code, out, err = _cli(
        capsys,
        str(trained),
        "--epidoc",
        str(inp / "a.xml"),
        str(inp / "sub" / "d.xml"),
        "--out",
        str(inp),
        "--top-k",
        "2",
        "--beam",
        "2",
        "--unknown-width",
        "4",
    )
    assert code == 0 and "a.xml" in err and "is an input; not written" in err
    assert "(1 written, 0 already there, 1 refused)" in out
    assert (inp / "d.xml").exists()
    assert all(p.read_bytes() == b for p, b in before.items())
    # usage errors before the model is loaded
    code, _, err = _cli(capsys, str(trained), "--epidoc", str(inp))
    assert code == 2 and "--epidoc needs --out DIR" in err
    code, _, err = _cli(
        capsys, str(trained), "--epidoc", str(tmp_path / "nope"), "--out", str(tmp_path / "o")
    )
    assert code == 2 and "no such file or folder" in err
    code, _, err = _cli(
        capsys, str(trained), "[---]ος", "--epidoc", str(inp), "--out", str(tmp_path / "o")
    )
    assert code == 2 and "not both" in err


def test_a_file_given_twice_is_restored_once(corpus_root, trained, tmp_path, capsys):
    """The same file named twice, or by two paths, is restored once and counted (it was
    refused as a clash of outputs)."""
    src = _isicily(corpus_root, "ISic000884.xml")
    other = src.parent.parent / "inscriptions" / src.name  # another path to the same file
    out = tmp_path / "out"
    code, stdout, stderr = _cli(
        capsys,
        str(trained),
        "--epidoc",
        str(src),
        str(src),
        str(other),
        "--out",
        str(out),
        "--top-k",
        "2",
        "--beam",
        "2",
        "--unknown-width",
        "4",
    )
    assert code == 0
    assert "(1 written, 0 already there, 0 refused, 2 given twice)" in stdout
    assert stderr.count("given twice") == 2 and "restored once" in stderr
    assert sorted(p.name for p in out.iterdir()) == [PROVENANCE, "ISic000884.xml"]


def test_folder_without_xml_and_broken_links_are_said(corpus_root, trained, tmp_path, capsys):
    """A folder with no *.xml file is one line before the model loads (it was a silent run of 0
    files); a broken link and a loop named *.xml are refused with their line, not left out
    silently; *.XML is read like *.xml; a link back up the tree is not followed."""
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("x")
    code, _, err = _cli(capsys, str(trained), "--epidoc", str(empty), "--out", str(tmp_path / "o"))
    assert (
        code == 2 and "no *.xml file in this folder" in err and len(err.strip().splitlines()) == 1
    )
    inp = tmp_path / "in"
    (inp / "sub").mkdir(parents=True)
    shutil.copy(_isicily(corpus_root, "ISic000884.xml"), inp / "UPPER.XML")
    (inp / "dangling.xml").symlink_to(tmp_path / "nowhere.xml")
    (inp / "loop.xml").symlink_to(inp / "loop.xml")
    (inp / "sub" / "up").symlink_to(inp)
    out = tmp_path / "out"
    code, stdout, stderr = _cli(
        capsys,
        str(trained),
        "--epidoc",
        str(inp),
        "--out",
        str(out),
        "--top-k",
        "2",
        "--beam",
        "2",
        "--unknown-width",
        "4",
    )
    assert code == 0, stderr
    assert "3 files (1 written, 0 already there, 2 refused)" in stdout
    assert "dangling.xml: cannot read it" in stderr and "loop.xml: cannot read it" in stderr
    assert sorted(p.name for p in out.iterdir()) == [PROVENANCE, "UPPER.XML"]


def test_a_run_where_every_file_is_refused_fails(trained, tmp_path, capsys):
    inp = tmp_path / "in"
    inp.mkdir()
    (inp / "a.xml").write_text(
        "<TEI><text><body><p>not EpiDoc</p></body></text></TEI>", encoding="utf-8"
    )
    (inp / "b.xml").write_text("<TEI><unclosed>", encoding="utf-8")
    (inp / "c.xml").write_bytes(b"")
    (inp / "d.xml").write_text("\n  \n", encoding="utf-8")
    code, out, err = _cli(
        capsys, str(trained), "--epidoc", str(inp), "--out", str(tmp_path / "out")
    )
    assert code == 2 and "every file was refused" in err
    assert "4 refused" in out  # the summary line is still printed
    lines = err.splitlines()
    assert any(
        x.endswith(
            "c.xml: empty file (0 bytes): nothing to restore; give the EpiDoc "
            "file itself (a failed copy or save leaves one empty)"
        )
        for x in lines
    )
    assert any(
        "d.xml: blank file (4 bytes, only whitespace): nothing to restore" in x for x in lines
    )
    assert "Document is empty" not in err and err.count("malformed XML") == 1  # b.xml's
    assert not [p for p in (tmp_path / "out").rglob("*.xml")]  # nothing written


# --- EpiDoc as editors write it (issue 23, part 2): restore reads it as convert does --------

_EDITOR_HEADER = (
    "<teiHeader><fileDesc><titleStmt><title>t &kai; u</title></titleStmt></fileDesc>"
    '<profileDesc><textLang mainLang="grc"/></profileDesc>'
    "<revisionDesc><listChange><change>&kai;</change></listChange></revisionDesc></teiHeader>"
)
_EDITOR_DOCTYPE = '<!DOCTYPE TEI [\n<!ENTITY kai "καὶ">\n<!ENTITY rs "]">\n]>\n'


def _editors_file(folder: Path, body: str, doctype: str = _EDITOR_DOCTYPE) -> Path:
    path = folder / "editors.xml"
    path.write_text(
        f'<?xml version="1.0" encoding="UTF-8"?>\n{doctype}'
        f'<TEI xmlns="http://www.tei-c.org/ns/1.0">{_EDITOR_HEADER}\n<text><body>'
        f'<div type="edition" xml:lang="grc"><ab>{body}</ab></div></body></text></TEI>\n',
        encoding="utf-8",
    )
    return path


_EDITOR_BODY = (
    'ὁ δῆμος<index><term>δῆμος</term></index> &kai; ἡ βουλὴ <gap reason="lost" quantity="3" '
    'unit="character"/> ἔδ<choice><unclear>κ</unclear><unclear>χ</unclear></choice>ε '
    "<note>lege ἔδωκε</note>τῷ &kai; <choice><sic>τοῖ</sic><corr>τοῖς</corr></choice> θεοῖς"
)


def test_restore_reads_entities_choices_and_left_out_elements_as_convert(tmp_path):
    """The context the model sees: the entity's word (it vanished), one uncertain letter for an
    editor's alternatives (it gave nothing), no index term glued to its word (δῆμοσδῆμος), no
    note; the same text convert reads, dots below aside."""
    from stoicheia.inference.epidoc.plan import plan_epidoc
    from stoicheia.sources import read_epidoc
    from stoicheia.text.leiden_segments import DOT_BELOW

    path = _editors_file(tmp_path, _EDITOR_BODY)
    plan = plan_epidoc(path)
    (piece,) = plan.pieces
    assert piece.text == "ὁ δῆμος καὶ ἡ βουλὴ [...] ἔδκε τῷ καὶ τοῖς θεοῖς"
    (rec,) = read_epidoc(path)
    assert rec.text == "ὁ δῆμος καὶ ἡ βουλὴ [...] ἔδκ̣ε τῷ καὶ τοῖς θεοῖς"
    assert rec.text.replace(DOT_BELOW, "") == piece.text


def test_restore_refuses_external_and_markup_entities_in_one_line(tmp_path):
    from stoicheia.inference.epidoc.outcomes import EpiDocRestoreError
    from stoicheia.inference.epidoc.restore import restore_epidoc

    secret = tmp_path / "secret.txt"
    secret.write_text("SECRETWORD", encoding="utf-8")
    ext = _editors_file(
        tmp_path,
        'λόγος &ext; <gap reason="lost" quantity="3" unit="character"/>',
        f'<!DOCTYPE TEI [<!ENTITY kai "καὶ"><!ENTITY ext SYSTEM "{secret.as_uri()}">]>\n',
    )
    with pytest.raises(EpiDocRestoreError, match=r"editors\.xml:\d+: the entity &ext; is external"):
        restore_epidoc(None, ext)
    markup = _editors_file(
        tmp_path,
        'λόγος &w; <gap reason="lost" quantity="3" unit="character"/>',
        '<!DOCTYPE TEI [<!ENTITY kai "καὶ"><!ENTITY w "<w>καὶ</w>">]>\n',
    )
    with pytest.raises(EpiDocRestoreError, match=r"the entity &w; holds markup") as e:
        restore_epidoc(None, markup)
    assert "\n" not in str(e.value)


def test_entity_references_stay_as_written_in_the_restored_file(tmp_path, model):
    """restore --epidoc edits the bytes at the gap: the DOCTYPE, every &kai; (header and
    edition) and every other byte stay as they were."""
    from stoicheia.inference.epidoc.restore import restore_epidoc

    path = _editors_file(tmp_path, _EDITOR_BODY)
    before = path.read_bytes()
    res = restore_epidoc(model, path, **FAST)
    (g,) = res.gaps
    assert g.status == "restored" and before[g.start : g.start + 4] == b"<gap"
    stripped, n = _ADDED_GAP.subn(b"\x00GAP\x00", res.xml)
    stripped, n_header = _ADDED_HEADER.subn(b"", stripped)
    assert n == 1 and n_header == 2
    assert stripped == before[: g.start] + b"\x00GAP\x00" + before[g.end :]
    assert res.xml.count(b"&kai;") == before.count(b"&kai;") == 4  # header 2, edition 2
    assert _EDITOR_DOCTYPE.encode() in res.xml


def test_a_gap_with_only_a_least_or_a_most_width_is_filled_within_it(tmp_path):
    """<gap atLeast="2"/> alone is [-min.2-] (it was an unreadable width, left), atMost alone
    [-max.3-]: convert writes them so and restore fills them within those bounds."""
    from stoicheia.inference.epidoc.plan import plan_epidoc
    from stoicheia.inference.restore import parse_input
    from stoicheia.sources import read_epidoc

    path = _editors_file(
        tmp_path,
        'ὁ δῆμος <gap reason="lost" atLeast="2" unit="character"/> καὶ '
        '<gap reason="lost" atMost="3" unit="character"/> βουλὴ',
    )
    (rec,) = read_epidoc(path)
    assert rec.text == "ὁ δῆμος [-min.2-] καὶ [-max.3-] βουλὴ"
    plan = plan_epidoc(path, unknown_width=5)
    assert [g.status for g in plan.gaps] == ["refused", "refused"]  # to fill: none left
    assert plan.to_fill == 2
    _, gaps = parse_input(plan.pieces[0].text, unknown_width=5)
    assert [(g.min_letters, g.max_letters) for g in gaps] == [(2, 5), (1, 3)]


def test_the_header_names_the_model_by_run_step_and_weights_hash(corpus_root, model, tmp_path):
    """``respStmt`` and ``change`` name the model by its run name, its step and the SHA-256 of
    its weights (the same for its export, loaded from elsewhere; another for one changed
    weight), never by a path of the machine it ran on."""
    import copy

    import torch

    from stoicheia.inference.epidoc.restore import restore_epidoc
    from stoicheia.inference.export.folder import export_model
    from stoicheia.inference.loading import load_model
    from stoicheia.inference.model_identity import model_identity, weights_sha256

    ident = model_identity(model)
    run = model.config["run_name"]
    assert re.fullmatch(rf"run {re.escape(run)}, step 2, weights sha256:[0-9a-f]{{16}}", ident)
    exported = load_model(export_model(model, tmp_path / "elsewhere" / "export"), device="cpu")
    assert weights_sha256(exported.encoder) == weights_sha256(model.encoder)
    changed = copy.deepcopy(model.encoder)
    with torch.no_grad():
        next(changed.parameters()).view(-1)[0] += 1e-3
    assert weights_sha256(changed) != weights_sha256(model.encoder)
    name = sorted(FILES)[0]
    xml = restore_epidoc(model, _isicily(corpus_root, name), **FAST).xml.decode("utf-8")
    header = xml[: xml.index("</teiHeader>")]
    assert f'<respStmt><name xml:id="stoicheia">Stoicheia ({ident})</name>' in header
    assert "Stoicheia restored" in header and f"(model: {ident};" in header
    source = Path(str(model.source))
    assert str(source.parent) not in header, "a path of this machine"
    assert "checkpoints/" not in header and ".pt" not in header
    # the shipped base model says so: a user's own demo has its run name and may have its step
    from stoicheia.inference.shipped import shipped_dir

    if shipped_dir() is not None:
        shipped = load_model(shipped_dir(), device="cpu")
        assert model_identity(shipped).startswith("shipped base model, run ")
        assert not model_identity(exported).startswith("shipped")


def test_a_tei_p4_file_is_refused_as_such_not_for_its_entities(corpus_root):
    """A Perseus file given to restore --epidoc is named a TEI P4 file (not EpiDoc): the
    undeclared-entity error would tell the user to edit a corpus file convert reads as it is."""
    from stoicheia.inference.epidoc.edition import read_edition
    from stoicheia.inference.epidoc.outcomes import EpiDocRestoreError

    perseus = corpus_root / "perseus" / "Aeschines" / "aeschin_gk.xml"
    with pytest.raises(EpiDocRestoreError, match=r"aeschin_gk\.xml: a TEI P4 file") as err:
        read_edition(perseus)
    assert "not declared" not in str(err.value)
    with pytest.raises(EpiDocRestoreError, match="a TEI P4 file"):
        read_edition(b"<?xml version='1.0'?><TEI.2><text><body><p>x</p></body></text></TEI.2>")


def test_ctrl_c_in_a_folder_says_how_far_and_the_same_command_goes_on(
    corpus_root, trained, tmp_path, capsys, monkeypatch
):
    """Ctrl-C while the 4th of 4 files is restored: one line says 3 of 4 were done and that the
    same command goes on from file 4; status 130; the rerun keeps a.xml and writes sub/d.xml."""
    import stoicheia.inference.epidoc.restore as epidoc_restore

    inp = _corpus(corpus_root, tmp_path / "in")
    out = tmp_path / "out"
    run = [str(trained), "--epidoc", str(inp), "--out", str(out), "--top-k", "2", "--beam", "2"]
    real = epidoc_restore.restore_epidoc

    def ctrl_c_at_d(model, src, **kw):
        if Path(src).name == "d.xml":
            raise KeyboardInterrupt
        return real(model, src, **kw)

    monkeypatch.setattr(epidoc_restore, "restore_epidoc", ctrl_c_at_d)
    code, _, stderr = _cli(capsys, *run)
    assert code == 130
    assert stderr.strip().splitlines()[-1] == (
        "stoicheia restore: interrupted (Ctrl-C): stopped after 3 of 4 files (1 written, "
        "0 already there, 2 refused; nothing half-written); the same command keeps the 1 output "
        f"there and goes on from file 4 ({inp / 'sub' / 'd.xml'}), 1 to go"
    )
    assert not (out / "sub" / "d.xml").exists()
    monkeypatch.setattr(epidoc_restore, "restore_epidoc", real)
    code, stdout, _ = _cli(capsys, *run)
    assert code == 0 and "(1 written, 1 already there, 2 refused)" in stdout


def test_a_restored_file_restored_again_keeps_no_stale_proposals(tmp_path, model):
    """A file restored with its gap left below the floor (its readings proposed after it) and
    fed again: the earlier run's proposals go with the gap, restored (they pointed, by
    ``@match``, at the nearest ``<gap>`` before them: another one, or none) or proposed again
    (they were doubled)."""
    from stoicheia.inference.epidoc.restore import restore_epidoc

    path = _editors_file(tmp_path, _EDITOR_BODY)
    first = restore_epidoc(model, path, min_probability=1.0, **FAST).xml
    match = b"<certainty match="
    assert first.count(match) == FAST["top_k"]
    again = restore_epidoc(model, first, min_probability=1.0, **FAST).xml
    assert again.count(match) == FAST["top_k"]
    written = restore_epidoc(model, first, min_probability=0.0, **FAST).xml
    assert written.count(match) == 0 and written.count(b"<supplied") == 1
    for xml in (again, written):
        etree.fromstring(xml)


@pytest.mark.parametrize(
    "code, fix",
    [
        (13, "give an --out folder you may write to"),  # EACCES
        (30, "give an --out folder you may write to"),  # EROFS
        (28, "free some space or give another --out"),  # ENOSPC
    ],
)
def test_an_out_folder_that_cannot_be_written_says_why_and_the_fix(
    corpus_root, trained, tmp_path, capsys, monkeypatch, code, fix
):
    """A read-only or forbidden --out said 'free space' (the fix for a full disk only)."""
    import os

    from stoicheia.inference.epidoc import corpus

    def refuse(*_, **__):
        raise PermissionError(code, os.strerror(code), str(tmp_path / "out" / "a.xml"))

    monkeypatch.setattr(corpus, "restore_corpus", refuse)
    inp = tmp_path / "in"
    inp.mkdir()
    shutil.copy(_isicily(corpus_root, "ISic001375.xml"), inp / "a.xml")
    got, _, err = _cli(capsys, str(trained), "--epidoc", str(inp), "--out", str(tmp_path / "out"))
    (line,) = err.strip().splitlines()
    assert got == 2 and f"({os.strerror(code)}); {fix} (the files written so far" in line
    assert code == 28 or "free" not in line
