"""Tests for stoicheia.sources: real corpus files -> records of NFC Unicode Greek.

Most checks read real passages of ../shared/corpus (Perseus TEI in Beta Code, UD treebanks);
small inline fixtures cover what the corpus lacks (``<lb break="no"/>``, error cases).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from pathlib import Path

import pytest

from stoicheia.sources import (
    SourceError,
    SourceRecord,
    iter_source_files,
    read_conllu,
    read_jsonl,
    read_perseus,
    read_plaintext,
    read_source,
)
from stoicheia.sources.betacode import beta_to_unicode, fix_sigmas, strip_latin_spans

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
PERSEUS = CORPUS / "perseus"
UD = CORPUS / "ud"

_cache: dict[str, tuple[list[SourceRecord], Counter]] = {}


def perseus(rel: str) -> tuple[list[SourceRecord], Counter]:
    """Records and counts of one real Perseus file (read once per test session)."""
    if rel not in _cache:
        counts: Counter = Counter()
        _cache[rel] = (list(read_perseus(PERSEUS / rel, PERSEUS, counts=counts)), counts)
    return _cache[rel]


def record(rel: str, cite: str) -> SourceRecord:
    recs = {r.id: r for r in perseus(rel)[0]}
    return recs[f"{rel}#{cite}"]


def tei(body: str, subset: str = "") -> str:
    """A minimal TEI P4 file like the Perseus ones (DOCTYPE with an external DTD)."""
    return (
        '<?xml version="1.0"?>\n'
        '<!DOCTYPE TEI.2 PUBLIC "-//TEI P4//DTD Main DTD Driver File//EN" '
        f'"http://www.tei-c.org/Guidelines/DTD/tei2.dtd" [\n{subset}]>\n'
        "<TEI.2><teiHeader><fileDesc><titleStmt><title>Test (Greek). Machine readable text"
        "</title>&responsibility;</titleStmt></fileDesc></teiHeader>\n"
        f"<text><body>\n{body}\n</body></text></TEI.2>\n"
    )


def read_tei(tmp_path: Path, body: str, subset: str = "", counts: Counter | None = None):
    p = tmp_path / "t_gk.xml"
    p.write_text(tei(body, subset), encoding="utf-8")
    return list(read_perseus(p, tmp_path, counts=counts))


# ----------------------------------------------------------------------------------------
# Perseus: real passages
# ----------------------------------------------------------------------------------------


def test_iliad_first_record_starts_with_the_first_line():
    r = record("Homer/hom.il_gk.xml", "1")
    assert r.text.startswith("μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχιλῆος οὐλομένην, ἣ μυρί’ Ἀχαιοῖς")
    assert r.source == "perseus" and r.work == "Homer/hom.il_gk.xml"
    assert r.file.endswith("hom.il_gk.xml") and r.line == 69  # <div1 type="Book" n="1">
    assert dict(r.known) == {}
    assert unicodedata.is_normalized("NFC", r.text)
    # capital with breathing and accent, diaeresis (*)/ai+di, proi/+ayen), raised dot
    assert "πολλὰς δ’ ἰφθίμους ψυχὰς Ἄϊδι προΐαψεν ἡρώων," in r.text
    assert "Διὸς υἱός· ὃ γὰρ βασιλῆϊ χολωθεὶς" in r.text
    assert "ἔριδι ξυνέηκε μάχεσθαι; Λητοῦς" in r.text  # Beta ';' is the question mark
    ids = [x.id for x in perseus("Homer/hom.il_gk.xml")[0]]
    assert ids == [f"Homer/hom.il_gk.xml#{n}" for n in range(1, 25)]


def test_header_text_never_appears():
    recs, counts = perseus("Homer/hom.il_gk.xml")
    text = " ".join(r.text for r in recs)
    for header in ("Machine readable text", "Lauren Burka", "Oxford University Press"):
        assert beta_to_unicode(header) not in text  # not even converted to Greek letters
    assert counts["excluded:teiHeader"] == 1


def test_entity_lpar_is_a_parenthesis_not_a_breathing():
    # Sophocles, Philoctetes 854 (a line in the kommos):
    # <l>&lpar;a)leh\s u(/pnos e)sqlo/s,&rpar;</l>
    r = record("Sophocles/soph.phil_gk.xml", "10.4")
    assert "ἐκτέταται νύχιος, (ἀλεὴς ὕπνος ἐσθλός,) οὐ χερός, οὐ ποδός" in r.text


def test_entity_mdash_and_hyphenated_word_across_lines():
    # Dionysius, Ant. Rom. 11.28: 'e)n gramma-\ntistou=&mdash;h)=n de\ ...'
    r = record("Dionysius/dh.hist04_gk.xml", "11.28")
    assert "ἀναγινώσκουσαν ἐν γραμματιστοῦ—ἦν δὲ τὰ διδασκαλεῖα τότε τῶν παίδων" in r.text


def test_entity_dot_joins_a_word_broken_at_a_line_end():
    # Plutarch, Antony 67 (chapter milestones -> records): 'ai( sunh/qeis gu&dot;\nnai=kes'
    r = record("Plutarch/plut.ant_gk.xml", "67")
    assert "ἐνταῦθα δ’ αὐτοὺς αἱ συνήθεις γυναῖκες πρῶτον μὲν" in r.text


def test_entity_lsqb_brackets_kept_as_punctuation():
    # Hesiod, Theogony 111: <l>&lsqb;oi(/ t' e)k tw=n e)ge/nonto qeoi/, dwth=res e)a/wn &rsqb;</l>
    texts = " ".join(r.text for r in perseus("Hesiod/hes.th_gk.xml")[0])
    assert "[οἵ τ’ ἐκ τῶν ἐγένοντο θεοί, δωτῆρες ἐάων ]" in texts


def test_note_inside_a_verse_line_is_cut_and_the_words_around_it_stay_whole():
    # Aeschines 2.144 quotes Hesiod:
    # <l>polloi\ fhmi/cwsi:<note ...>English...</note> qeo/s nu ...</l>
    r = record("Aeschines/aeschin_gk.xml", "2.144")
    assert "ἥντινα λαοὶ πολλοὶ φημίξωσι· θεός νυ τίς ἐστι καὶ αὐτή." in r.text
    assert "Baiter" not in r.text and beta_to_unicode("Baiter and Sauppe") not in r.text
    # Elegy/2: a self-closing note glued to two words: i(dru/sato<note .../> bwmo\n
    r = record("Elegy/2_gk.xml", "2.14.2.3")
    assert "σεμνὴν φιλίην ἱδρύσατο βωμὸν ἀνδρὸς ὃν" in r.text


def test_paragraph_milestone_is_a_word_boundary():
    # Plato, Republic 332d: 'u(gi/eian;<milestone ed="P" unit="para"/>i)atro/s.' (no space)
    r = record("Plato/plat.rep_gk.xml", "1")
    assert "πρὸς νόσον καὶ ὑγίειαν; ἰατρός." in r.text


def test_latin_span_in_real_euclid_is_excluded():
    # Euclid 6 Def. 1 ends with the Beta Code Latin span '&amp;`2* 1$'
    r = record("Euclid/euc.elem_gk.xml", "6.Def.1")
    assert r.text.startswith(
        "Ὅμοια σχήματα εὐθύγραμμά ἐστιν, ὅσα τάς τε γωνίας ἴσας ἔχει κατὰ μίαν καὶ τὰς "
        "περὶ τὰς ἴσας γωνίας πλευρὰς ἀνάλογον. [Ἀντιπεπονθότα δὲ σχήματά ἐστιν,"
    )
    assert "`" not in r.text and "Β" not in r.text  # '&`2* 1$' would give `Β
    assert perseus("Euclid/euc.elem_gk.xml")[1]["latin_span"] == 1


def test_untagged_latin_quotation_is_dropped():
    # Elegy/1: Gellius quoted in Latin inside a <quote> with no lang attribute
    recs, counts = perseus("Elegy/1_gk.xml")
    text = " ".join(r.text for r in recs)
    assert counts["latin_quote"] == 18  # Horace, Cicero, Pliny... quoted as testimonia
    for word in ("lascivia", "paginae", "Fescenninos", "quibus"):
        assert beta_to_unicode(word) not in text, word


def test_speaker_labels_do_not_leak():
    # Aristophanes' Birds: 288 <speaker>*pisqe/tairos</speaker> labels; the nominative is
    # spoken once in the text (source line 1413: 'e)moi\ me\n o)/noma *pisqe/tairos')
    recs, counts = perseus("Aristophanes/aristoph.birds_gk.xml")
    assert counts["excluded:speaker"] > 700
    text = " ".join(r.text for r in recs)
    assert text.count("Πισθέταιρος") == 1 and "ἐμοὶ μὲν ὄνομα Πισθέταιρος, τῳδεδὶ" in text


def test_no_latin_letters_leak_on_a_sample_of_works():
    """ASCII letters in the output (conversion failures) and Latin words left in the Beta
    Code (untagged English/Latin) on works with heavy English notes and apparatus."""
    sample = [
        "Homer/hom.il_gk.xml",
        "Aeschines/aeschin_gk.xml",
        "Plutarch/plut.sull_gk.xml",
        "Hippocrates/hp.jones_gk.xml",
        "Athenaeus/ath12_gk.xml",
        "Lucian/44_gk.xml",
        "Euclid/euc.elem_gk.xml",
        "Bible/nt_gk.xml",
    ]
    letters = ascii_letters = latin_tokens = tokens = 0
    for rel in sample:
        recs, counts = perseus(rel)
        text = "".join(r.text for r in recs)
        letters += sum(ch.isalpha() for ch in text)
        ascii_letters += len(re.findall(r"[A-Za-z]", text))
        latin_tokens += counts["latin_looking_token"]
        tokens += sum(r.text.count(" ") + 1 for r in recs)
    assert letters > 2_000_000
    assert ascii_letters == 0
    assert latin_tokens / tokens < 2e-5  # Aeschines keeps 5 "Unknown" bibliography words


def test_ids_unique_and_duplicates_get_a_suffix():
    # Aeschylus' strophe and antistrophe share n:
    # <div2 type="strophe" n="1"> ... "antistrophe" n="1"
    recs, counts = perseus("Aeschylus/aesch.ag_gk.xml")
    ids = [r.id for r in recs]
    assert len(ids) == len(set(ids))
    assert "Aeschylus/aesch.ag_gk.xml#2.1" in ids and "Aeschylus/aesch.ag_gk.xml#2.1~2" in ids
    assert counts["duplicate_id"] == sum("~" in i for i in ids) > 0
    lines = [r.line for r in recs]
    assert lines == sorted(lines)  # document order


def test_group_texts_put_the_text_n_in_the_id_and_count_unnumbered_divs():
    ids = [r.id.split("#")[1] for r in perseus("Lucian/55_gk.xml")[0]]
    # text 1 has no div; text 2 has unnumbered div1s (-> 1, 2, 3); text 3 has letters n=1..4
    assert ids == ["1", "2", "2.1", "2.2", "2.3", "3.1", "3.2", "3.3", "3.4"]


def test_plutarch_editions_share_one_work():
    loeb = perseus("Plutarch/plut.081_loeb_gk.xml")[0][0]
    teub = perseus("Plutarch/plut.081_teubner_gk.xml")[0][0]
    assert loeb.work == teub.work == "Plutarch/plut.081_gk.xml"
    assert loeb.id.startswith("Plutarch/plut.081_loeb_gk.xml#")


def test_elision_written_as_breathing_and_literal_parentheses_are_repaired():
    # Arrian uses ')' for elision ('a)ll)', 'd)') in some passages
    recs, counts = perseus("Arrian/arrian.anab_gk.xml")
    text = " ".join(r.text for r in recs)
    assert counts["repaired_elision"] > 500
    assert "ἀλλ)" not in text and "δ)" not in text
    # Hippocrates (upper-case Beta Code): R)*R( is a double rho, not a capital inside a word
    recs, counts = perseus("Hippocrates/hp.littre_gk.xml")
    text = " ".join(r.text for r in recs)
    assert counts["repaired_double_rho"] > 200 and "ῤῬ" not in text and "ῤῥ" in text


def test_every_record_is_nfc_and_has_no_control_or_private_use_characters():
    for rel in ["Homer/hom.il_gk.xml", "Bible/nt_gk.xml", "Polybius/hist_gk.xml"]:
        for r in perseus(rel)[0]:
            assert r.text and r.text == r.text.strip() and "  " not in r.text
            assert unicodedata.is_normalized("NFC", r.text)
            assert not re.search(r"[\x00-\x1f\ue000-\uf8ff]", r.text), r.id
    assert perseus("Bible/nt_gk.xml")[1]["markup_debris"] == 1  # 'proshu/cmilestone ... />anto'


# ----------------------------------------------------------------------------------------
# Perseus: inline fixtures (what the corpus lacks) and errors
# ----------------------------------------------------------------------------------------


def test_lb_break_no_joins_and_plain_lb_separates(tmp_path):
    recs = read_tei(
        tmp_path, '<div1 n="1"><p>a)nqrw/<lb break="no"/>pous kai\\<lb/>qeou/s</p></div1>'
    )
    assert [r.text for r in recs] == ["ἀνθρώπους καὶ θεούς"]
    assert recs[0].id == "t_gk.xml#1"


def test_latin_span_inline_fixture(tmp_path):
    counts: Counter = Counter()
    recs = read_tei(
        tmp_path,
        '<div1 n="1"><p>ta\\ &amp;Pyrrhi regis$ pra/gmata &amp;finis</p></div1>',
        counts=counts,
    )
    assert recs[0].text == "τὰ πράγματα"
    assert counts["latin_span"] == 2 and counts["latin_unterminated"] == 1


def test_escaped_entity_reference_is_an_entity_not_latin(tmp_path):
    # Plutarch teubner files write &amp;ldquo; for a quotation mark
    recs = read_tei(tmp_path, '<div1 n="1"><p>&amp;ldquo;oi)/moi&amp;rdquo; le/gein</p></div1>')
    assert recs[0].text == "“οἴμοι” λέγειν"


def test_entities_expand_after_conversion(tmp_path):
    # a naive substitution before conversion would make 'a)' and 'o(' breathings
    recs = read_tei(
        tmp_path, '<div1 n="1"><p>ta/xa&rpar; &lpar;o(/te&rsqb; lo/gos&rsqb;</p></div1>'
    )
    assert recs[0].text == "τάχα) (ὅτε] λόγος]"


def test_file_declared_entities_are_honoured(tmp_path):
    recs = read_tei(tmp_path, '<div1 n="1"><p>lo/&star;gos</p></div1>', '<!ENTITY star "" >\n')
    assert recs[0].text == "λόγος"


def test_unknown_entity_is_an_error_with_its_line(tmp_path):
    p = tmp_path / "bad_gk.xml"
    p.write_text(tei('<div1 n="1">\n<p>lo/gos</p>\n<p>a)/nqrwpos &frobnicate;</p></div1>'))
    with pytest.raises(SourceError) as e:
        list(read_perseus(p, tmp_path))
    line = next(i for i, s in enumerate(p.read_text().splitlines(), 1) if "&frobnicate;" in s)
    assert e.value.line == line and e.value.file == str(p)
    assert (
        "&frobnicate;" in str(e.value)
        and "ENTITIES" in str(e.value)
        and f":{line}:" in str(e.value)
    )


def test_malformed_xml_is_an_error_with_file_line_and_fix(tmp_path):
    p = tmp_path / "bad_gk.xml"
    p.write_text(tei('<div1 n="1">\n<p>lo/gos\n</div1>'))
    with pytest.raises(SourceError) as e:
        list(read_perseus(p, tmp_path))
    assert e.value.file == str(p) and e.value.line > 5
    assert "malformed XML" in str(e.value) and "Fix:" in str(e.value)


def test_excluded_elements_and_their_tails(tmp_path):
    body = (
        '<div1 n="1"><head>*bi/blos</head><sp><speaker>*xoro/s</speaker>'
        '<l>lo/gos<note lang="en">English note</note> kai\\ <foreign lang="la">verbum</foreign> '
        'e)/rgon<gap/>a)/llo</l></sp><p lang="la">Latin paragraph</p>'
        "<label>ei)s to\\n au)to/n</label><p>tri/gw<figure/>non <num>*a*b</num></p></div1>"
    )
    counts: Counter = Counter()
    recs = read_tei(tmp_path, body, counts=counts)
    assert recs[0].text == "λόγος καὶ ἔργον ἄλλο τρίγωνον ΑΒ"
    for key in (
        "excluded:head",
        "excluded:speaker",
        "excluded:note",
        "excluded:gap",
        "excluded:label",
        "excluded:figure",
        "lang:la",
    ):
        assert counts[key] >= 1, key


def test_untagged_latin_text_node_is_dropped(tmp_path):
    counts: Counter = Counter()
    recs = read_tei(
        tmp_path,
        '<div1 n="1"><p>lo/gos</p><p>Cur inter omnes Arbores sola Palma '
        "adsurgit</p><p>Ambr. e)/rgon</p></div1>",
        counts=counts,
    )
    assert recs[0].text == "λόγος αμβρ. ἔργον"  # a lone siglum with Greek is only counted
    assert counts["latin_chunk"] == 1 and counts["latin_looking_token"] == 1


def test_division_without_text_is_counted_not_yielded(tmp_path):
    counts: Counter = Counter()
    recs = read_tei(
        tmp_path,
        '<div1 n="1"><head>only a title</head></div1><div1 n="2"><p>kai/</p></div1>',
        counts=counts,
    )
    assert [r.id for r in recs] == ["t_gk.xml#2"] and counts["empty_division"] == 1


# ----------------------------------------------------------------------------------------
# Beta Code conversion around the library
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("beta", "uni"),
    [
        ("*)/ai+di", "Ἄϊδι"),
        ("th=| *)aqhna/a|", "τῇ Ἀθηνάᾳ"),
        ("ui(o/s: o(\\ ga\\r", "υἱός· ὃ γὰρ"),  # ':' is the raised dot (U+0387 -> NFC U+00B7)
        ("ti/s;", "τίς;"),  # ';' is the question mark (U+037E -> NFC ';')
        ("a)ll' a)ei/", "ἀλλ’ ἀεί"),
        ("ta' kai\\ pa' tou=", "τα’ καὶ πα’ τοῦ"),  # not the library's breve keys ᾱ
        (
            "fh\\|s tw\\| kai\\ a\\|",
            "φῂς τῲ καὶ ᾲ",
        ),  # grave + iota subscript: missing in the library
        ("e)/la[s]en pa=s] qeo/s", "ἔλα[σ]εν πᾶς] θεός"),  # sigma inside brackets stays medial
        ("o(\\ s1' e)ceparei= w(/s2per", "ὃ σ’ ἐξεπαρεῖ ὥςπερ"),  # explicit medial/final sigma
        ("s3 *s3", "ϲ Ϲ"),
        ("e)n #2# i(storiw=n #5 #1", "ἐν ϛʹ ἱστοριῶν ϡ ϟ"),  # numerals; ʹ is NFC of U+0374
        ("o(/tti % min", "ὅττι † μιν"),
        ("[1teu/casqai]1 [2dh\\]2", "(τεύξασθαι) ⟨δὴ⟩"),
        ("a?ro?", "α\u0323ρο\u0323"),  # uncertain letters: combining dot below
        ("kai\\ 30. e)/fh", "καὶ . ἔφη"),  # editors' numbers are not Greek
        (")en de\\ toi=s", "Ἐν δὲ τοῖς"),  # capital whose '*' was lost (Strabo)
        ("(ou) ga\\r h)=n) kai/", "(οὐ γὰρ ἦν) καί"),  # a parenthesis before a breathing vowel
        ("diedi/dou), me/xri", "διεδίδου), μέχρι"),  # ')' closing a parenthesis, not a breathing
        ("kei) mh\\ ka)n", "κεἰ μὴ κἀν"),  # crasis keeps its coronis
        ("a)ll) e)gw\\ d) ou)", "ἀλλ’ ἐγὼ δ’ οὐ"),  # ')' as elision
        ("=*)iris", "Ἶρις"),
        ("KATAR)*R(A/YANTA", "καταῤῥάψαντα"),
        ("a)/nqrwpos", "ἄνθρωπος"),
    ],
)
def test_beta_to_unicode(beta, uni):
    assert beta_to_unicode(beta) == uni
    assert unicodedata.is_normalized("NFC", beta_to_unicode(beta))


def test_beta_colon_is_never_a_colon():
    out = beta_to_unicode("e)/fh: kai\\")
    assert ":" not in out and "\u00b7" in out
    assert unicodedata.normalize("NFC", "\u0387") == "\u00b7"  # why the output holds U+00B7


def test_strip_latin_spans_counts():
    counts: Counter = Counter()
    assert strip_latin_spans("ab &cd$ ef &gh", counts) == "ab   ef  "
    assert counts == Counter(latin_span=2, latin_chars=7, latin_unterminated=1)


def test_fix_sigmas():
    assert fix_sigmas("λόγοσ καὶ λόγος, ὁ[ς]δε") == "λόγος καὶ λόγος, ὁ[σ]δε"
    assert fix_sigmas("‘λόγοσ’") == "‘λόγος’"  # a real U+2019 here is a closing quote
    assert beta_to_unicode("s1' e)ceparei=") == "σ’ ἐξεπαρεῖ"  # Beta ' is elision: medial


# ----------------------------------------------------------------------------------------
# CoNLL-U
# ----------------------------------------------------------------------------------------


def test_conllu_perseus_groups_by_newdoc():
    counts: Counter = Counter()
    recs = list(read_conllu(UD / "grc_perseus-ud-dev.conllu", CORPUS, counts=counts))
    assert [r.id for r in recs] == [
        "ud/grc_perseus-ud-dev.conllu#tlg0003.tlg001.perseus-grc1.1.tb.xml",
        "ud/grc_perseus-ud-dev.conllu#tlg0007.tlg004.perseus-grc1.tb.xml",
        "ud/grc_perseus-ud-dev.conllu#tlg0007.tlg015.perseus-grc1.tb.xml",
        "ud/grc_perseus-ud-dev.conllu#tlg0008.tlg001.perseus-grc1.12.tb.xml",
    ]
    assert counts["sentences"] == 1137 and counts["records"] == 4
    r = recs[0]
    assert r.source == "ud:grc_perseus" and dict(r.known) == {} and r.line == 1
    assert r.work == "ud/grc_perseus-ud-dev.conllu#tlg0003.tlg001"  # Thucydides
    assert r.text.startswith("τὰ γὰρ πρὸ αὐτῶν καὶ τὰ ἔτι παλαίτερα σαφῶς μὲν εὑρεῖν")
    # elision written as a combining comma above (δ̓) becomes U+2019
    assert "\u0313" not in "".join(x.text for x in recs) and counts["elision_mark"] == 333
    assert "οἱ δ’ οὖν ὡς" in " ".join(x.text for x in recs)


def test_conllu_proiel_groups_by_source_and_has_no_punctuation():
    recs = list(read_conllu(UD / "grc_proiel-ud-dev.conllu", CORPUS))
    assert len(recs) == 66
    first = recs[0]
    assert first.id == "ud/grc_proiel-ud-dev.conllu#Histories_Book_1_chapter_10"
    assert first.work == "ud/grc_proiel-ud-dev.conllu#Histories"
    assert first.source == "ud:grc_proiel" and dict(first.known) == {"punct": False}
    assert first.text.startswith("ὃ μὲν δὴ ὡς οὐκ ἐδύνατο διαφυγεῖν ἦν ἕτοιμος ὁ δὲ Κανδαύλης")
    assert recs[-1].work == "ud/grc_proiel-ud-dev.conllu#The_Greek_New_Testament_Revelation"
    assert all(dict(r.known) == {"punct": False} for r in recs)
    assert not any(re.search(r"[,.;·]", r.text) for r in recs)


def test_conllu_sentence_without_text_is_an_error(tmp_path):
    p = tmp_path / "x-ud-dev.conllu"
    p.write_text(
        "# sent_id = 1\n# text = λόγος\n1\tλόγος\tλόγος\tNOUN\t_\t_\t0\troot\t_\t_\n\n"
        "# sent_id = 2\n1\tκαί\tκαί\tCCONJ\t_\t_\t0\troot\t_\t_\n\n",
        encoding="utf-8",
    )
    with pytest.raises(SourceError) as e:
        list(read_conllu(p))
    assert e.value.line == 5 and "# text" in str(e.value)


# ----------------------------------------------------------------------------------------
# Plain text, JSONL, dispatch
# ----------------------------------------------------------------------------------------


def test_plaintext_paragraphs(tmp_path):
    p = tmp_path / "a.txt"
    decomposed = unicodedata.normalize("NFD", "μῆνιν ἄειδε")
    p.write_text(f"{decomposed} θεὰ\nΠηληϊάδεω\n\n\n  \nἈχιλῆος οὐλομένην\n", encoding="utf-8")
    recs = list(read_plaintext(p, tmp_path))
    assert [(r.id, r.line, r.text) for r in recs] == [
        ("a.txt#1", 1, "μῆνιν ἄειδε θεὰ Πηληϊάδεω"),
        ("a.txt#2", 6, "Ἀχιλῆος οὐλομένην"),
    ]
    assert recs[0].source == "plain" and recs[0].work == "a.txt"


def test_plaintext_not_utf8_names_the_line(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes("λόγος\nκαὶ\n".encode() + b"\xff\n")
    with pytest.raises(SourceError) as e:
        list(read_plaintext(p))
    assert e.value.line == 3


def test_jsonl_records_and_options(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text(
        '{"id": "a", "text": "λόγος  καὶ\\nἔργον"}\n\n'
        '{"id": "b", "text": "οὐ", "work": "w", "known": {"punct": false}}\n',
        encoding="utf-8",
    )
    recs = list(read_jsonl(p, tmp_path))
    assert [(r.id, r.line, r.text, r.work, dict(r.known)) for r in recs] == [
        ("r.jsonl#a", 1, "λόγος καὶ ἔργον", "r.jsonl", {}),
        ("r.jsonl#b", 3, "οὐ", "r.jsonl#w", {"punct": False}),
    ]


@pytest.mark.parametrize(
    ("line2", "message"),
    [
        ('{"id": "b", "text": "καὶ"', "invalid JSON"),
        ('{"text": "καὶ"}', '"id" is missing'),
        ('{"id": "b", "text": ""}', '"text" is not a non-empty string'),
        ('{"id": "b", "text": 3}', '"text" is not a non-empty string'),
        ('["b", "καὶ"]', "not an object"),
        ('{"id": "a", "text": "καὶ"}', 'duplicate id "a" (first on line 1)'),
        ('{"id": "b", "text": "καὶ", "known": {"accents": false}}', '"known" has'),
    ],
)
def test_jsonl_errors_name_the_line(tmp_path, line2, message):
    p = tmp_path / "r.jsonl"
    p.write_text('{"id": "a", "text": "λόγος"}\n' + line2 + "\n", encoding="utf-8")
    with pytest.raises(SourceError) as e:
        list(read_jsonl(p))
    assert e.value.line == 2 and message in str(e.value) and str(p) in str(e.value)


def test_read_source_dispatch_and_unknown_suffix(tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("λόγος\n", encoding="utf-8")
    assert [r.text for r in read_source(p)] == ["λόγος"]
    q = tmp_path / "a.csv"
    q.write_text("x\n")
    with pytest.raises(SourceError, match="unknown source file type '.csv'"):
        read_source(q)


def test_iter_source_files_expands_directories(tmp_path):
    skipped: list[Path] = []
    files = iter_source_files(
        [UD, PERSEUS / "Hesiod", PERSEUS / "Hesiod" / "hes.th_gk.xml"], skipped=skipped
    )
    assert [f.name for f in files] == [
        "hes.sh_gk.xml",
        "hes.th_gk.xml",
        "hes.wd_gk.xml",
        "grc_perseus-ud-dev.conllu",
        "grc_proiel-ud-dev.conllu",
    ]
    # the treebank licences end in .txt but are not Greek text
    assert sorted(f.name for f in skipped) == [
        "LICENSE-perseus-treebank.txt",
        "LICENSE-proiel-treebank.txt",
    ]
    assert len(iter_source_files([PERSEUS])) == 392
    with pytest.raises(SourceError, match="no such file"):
        iter_source_files([tmp_path / "missing"])
    (tmp_path / "notes.md").write_text("x")
    assert iter_source_files([tmp_path]) == []  # the caller decides whether that is an error


def test_an_xml_file_cut_short_is_named_as_such(tmp_path):
    """A file that ends inside its elements (a download cut short) says so, with the fix,
    rather than lxml's "Premature end of data" alone."""
    from stoicheia.sources.xml_entities import XmlReadError, parse_tei

    whole = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<TEI xmlns="http://www.tei-c.org/ns/1.0">\n'
        "<text><body>\n<ab>λόγος</ab>\n</body></text>\n</TEI>\n"
    ).encode()
    parse_tei(whole)  # whole, it reads
    with pytest.raises(XmlReadError) as e:
        parse_tei(whole[: whole.index(b"</ab>") + 2])
    assert "cut short" in str(e.value) and "download it again whole" in str(e.value)
    with pytest.raises(XmlReadError) as e:  # a misnested tag is not called cut short
        parse_tei(whole.replace(b"</ab>", b"</q>"))
    assert "cut short" not in str(e.value)
