"""``restore`` gives back the input's Leiden with only the fills added, and what the model
believes about each gap (issue 15, parts 3 and 4)."""

from __future__ import annotations

import json
import math
import re
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stoicheia.inference.restore import RestoreError, format_result, restore
from stoicheia.inference.restore.console import reading_pct
from stoicheia.text import alphabet as A
from stoicheia.text.encode import text_to_planes

sys.path.insert(0, str(Path(__file__).parent))
from restore_stub import Loaded as _Loaded  # noqa: E402
from restore_stub import StubNetwork, stub_model  # noqa: E402

STUB = stub_model(marks=True)


def _letters(s: str) -> str:
    return "".join(A.LETTERS[c] for c in text_to_planes(s)[0].chars)


def _words(corpus_root) -> list[str]:
    path = corpus_root / "ud" / "grc_perseus-ud-dev.conllu"
    words: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# text = "):
            words += [w.strip(",.;·:") for w in line[9:].split()]
        if len(words) > 2000:
            break
    return [w for w in words if len(_letters(w)) >= 3 and len(_letters(w)) == len(w.strip())]


def _check_round_trip(text: str, res) -> None:
    """Each gap's notation is the input's, as typed; the output equals the input outside the
    fills, character for character; putting each notation back in place of its fill gives the
    input; a fill's letters are the restoration's letters."""
    for g in res.gaps:
        assert text[g.start : g.end] == g.notation
    for r in res.restorations:
        assert len(r.printed) == len(r.fills) == len(res.gaps)
        back, out_pos, in_pos = [], 0, 0
        for g, f, letters in sorted(
            zip(res.gaps, r.printed, r.fills, strict=True), key=lambda t: t[0].start
        ):
            same = text[in_pos : g.start]
            assert r.text[out_pos : out_pos + len(same)] == same, (text, r.text)
            out_pos += len(same)
            rep = f"[{f}]" if g.bracketed else f
            assert r.text[out_pos : out_pos + len(rep)] == rep, (text, r.text, rep)
            assert _letters(f) == letters, (f, letters)
            assert "[" not in f and "]" not in f
            back += [same, g.notation]
            out_pos += len(rep)
            in_pos = g.end
        assert r.text[out_pos:] == text[in_pos:]
        back.append(r.text[out_pos:])
        assert "".join(back) == text


# every sign of issue 15 part 3: the editor's, the stone's, line division
_STONE = ["⁝", "·", ",", "ἐπ’", "δ’", "λεʹ", "ϛ", "ϝ", "ϟ", "ϡ", "12", "Marcus", ":"]


@st.composite
def leiden_texts(draw, words):
    n = draw(st.integers(4, 12))
    toks: list[str] = [draw(st.sampled_from(words)), draw(st.sampled_from(words))]  # some context
    has_gap = False
    for _ in range(n):
        w = draw(st.sampled_from(words))
        kind = draw(st.integers(0, 24))
        k = len(w)
        if kind == 0:
            toks.append(f"[{'.' * k}]")
        elif kind == 1:
            toks.append(f"[.{k}.]")
        elif kind == 2:
            toks.append(f"[-ca.{k}-]")
        elif kind == 3:
            toks.append(f"[{k}±{max(1, k // 3)}]" if k > 1 else "[.1.]")
        elif kind == 4:
            toks.append(f"[.{max(1, k - 2)}-{k + 1}.]")
        elif kind == 5:
            toks.append(draw(st.sampled_from(["[---]", "[ - - - ]", "[– – –]"])))
        elif kind == 6:
            toks.append(
                w[:2] + "[" + "." * (k - 2) + "]" + draw(st.sampled_from([",", "·", "", " ⁝"]))
            )
        elif kind == 7:
            toks.append(f"[{w}]")  # an editor's supplement
        elif kind == 8:
            toks.append(w[:2] + f"[{w[2:]}]")
        elif kind == 9:
            toks.append(f"[{w} ---]")  # supplement and lacuna in one bracket
        elif kind == 10:
            toks.append(w[:2] + "(" + w[2:] + ")")  # expansion
        elif kind == 11:
            o, c = draw(st.sampled_from([("⟦", "⟧"), ("{", "}"), ("⟨", "⟩"), ("⸢", "⸣")]))
            toks.append(o + w + c)
        elif kind == 12:
            toks.append("vac.")
        elif kind == 13:
            i = draw(st.integers(0, k - 1))
            toks.append(w[: i + 1] + "\u0323" + w[i + 1 :])  # an uncertain letter
        elif kind == 14:
            toks.append(draw(st.sampled_from(_STONE)))
        elif kind == 15:
            toks.append(w[:2] + draw(st.sampled_from(["|", "/"])) + w[2:])  # line end inside a word
        elif kind == 16:
            toks.append(w[:2] + "-")  # a hyphen at a line end
        elif kind == 17:
            toks.append("\u0323 \u0323")  # traces of two illegible letters
        else:
            toks.append(w)
            continue
        has_gap |= kind in (0, 1, 2, 3, 4, 5, 6, 9, 13, 17)
    if not has_gap:
        toks.append("[...]")
    text = " ".join(toks)
    if draw(st.booleans()) and draw(st.booleans()):  # a capital text without accents
        text = unicodedata.normalize(
            "NFC",
            "".join(
                c
                for c in unicodedata.normalize("NFD", text)
                if not unicodedata.combining(c) or c == "\u0323"
            ),
        ).upper()
    return text


@pytest.fixture(scope="module")
def words(corpus_root):
    return _words(corpus_root)


def test_round_trip_on_random_leiden_texts(words):
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(leiden_texts(words), st.booleans())
    def run(text, repredict):
        res = restore(
            STUB,
            text,
            top_k=2,
            beam=2,
            alternatives=1,
            unknown_width=6,
            supplements="repredict" if repredict else "keep",
        )
        _check_round_trip(text, res)
        style_caps = not any(c.islower() for c in text if "\u0370" <= c <= "\u1fff")
        for g in res.gaps:
            if g.kind in ("lacuna", "supplement") and not g.traces:
                if style_caps:
                    assert g.fill == g.fill.upper() and not any(
                        unicodedata.combining(c) for c in unicodedata.normalize("NFD", g.fill)
                    )
            assert g.fill == res.restorations[0].printed[g.index]

    run()


def test_fill_follows_the_input_style():
    # capitals in a capital text, without accents; accents where the input has them; none where
    # it has none
    caps = restore(STUB, "ΣΤΕ[....]ΩΣΑΙ", top_k=1, alternatives=0)
    fill = caps.gaps[0].fill
    assert (
        fill == fill.upper() and len(fill) == 4 and caps.restorations[0].text == f"ΣΤΕ[{fill}]ΩΣΑΙ"
    )
    accented = restore(STUB, "καὶ τοῦ λόγου [.6.] τῶν θεῶν", top_k=1, alternatives=0)
    assert any(
        unicodedata.combining(c) for c in unicodedata.normalize("NFD", accented.gaps[0].fill)
    )
    plain = restore(STUB, "και του λογου [.6.] των θεων", top_k=1, alternatives=0)
    assert not any(
        unicodedata.combining(c) for c in unicodedata.normalize("NFD", plain.gaps[0].fill)
    )
    # the stone's and the editor's signs stay, the header shows the notation as typed
    text = (
        "δεκάτ[...], ἐπὶ [περὶ] Αὐρ(ήλιος) ⟦ἀβγ⟧ {δ} ⟨ε⟩ ⸢ζ⸣ vac. ἐπ’ [ - - - ]· λεʹ ϛ 12 Marcus "
        "⁝ τοῦ|το ἔρ/γον δια- λέγω ἐ̣πὶ"
    )
    res = restore(STUB, text, top_k=2, unknown_width=6)
    _check_round_trip(text, res)
    assert [g.kind for g in res.gaps] == ["lacuna", "lacuna", "uncertain"]
    assert any(
        line.startswith("  2. lacuna [ - - - ]: 1 to 6 letters") for line in format_result(res)
    )


def test_width_probabilities_and_alternatives():
    res = restore(STUB, "καὶ [5±3] καὶ [---] τοῦ [.4.] ἐ̣πὶ", top_k=3, beam=4, unknown_width=9)
    for g in res.gaps:
        fills = [a.fill for a in g.alternatives]
        assert len(fills) == len(set(fills)) >= 1  # the gap's own top-k, distinct
        assert all(
            0 < a.prob <= 1 and a.prob == pytest.approx(math.exp(a.logprob)) for a in g.alternatives
        )
        assert [a.logprob for a in g.alternatives] == sorted(
            (a.logprob for a in g.alternatives), reverse=True
        )
        assert sum(a.prob for a in g.alternatives) <= 1 + 1e-9
        assert len(g.letter_probs) == len(res.restorations[0].fills[g.index])
        if g.fixed_width:
            assert g.width_probs is None
        else:
            assert set(g.width_probs) == set(range(g.min_letters, g.max_letters + 1))
            assert sum(g.width_probs.values()) == pytest.approx(1.0)
            # the beam's mass is a lower bound of its width's probability
            for a in g.alternatives:
                assert g.width_probs[len(a.letters)] >= a.prob - 1e-9
    # the whole-text top-k is distinct in at least one gap's letters
    assert len({tuple(r.fills) for r in res.restorations}) == len(res.restorations) == 3
    js = res.to_json()
    assert json.loads(json.dumps(js, ensure_ascii=False)) == js
    assert set(js) == {"input", "gaps", "restorations", "notes"}
    assert set(js["gaps"][0]) == {
        "index",
        "kind",
        "notation",
        "start",
        "end",
        "min_letters",
        "max_letters",
        "fill",
        "letter_probs",
        "alternatives",
        "width_probs",
        "editor",
    }
    assert sum(js["gaps"][1]["width_probs"].values()) == pytest.approx(1.0, abs=1e-5)
    for r in js["restorations"]:
        assert len(r["fills"]) == len(js["gaps"])


PHRASE = "καὶ τοῦ λόγου περὶ τῶν θεῶν "


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """One torch thread: on a busy machine the tiny model's ops cost more in thread hand-offs
    than in arithmetic (30 times more, measured on 2 shared cores)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def phrase_model():
    """A 2-layer encoder trained for 150 steps on one repeated phrase, its letters hidden at
    random (a few seconds on an idle CPU core)."""
    from stoicheia.model.config import EncoderConfig
    from stoicheia.model.encoder import CharBertEncoder

    torch.manual_seed(0)
    p = text_to_planes((PHRASE * 3).strip())[0]
    planes = {
        k: torch.from_numpy(getattr(p, k).astype(np.int64))
        for k in ("chars", "boundary", "dia", "punct")
    }
    enc = CharBertEncoder(
        EncoderConfig(d_model=48, n_layers=2, n_heads=2, char_window=64, global_every=2)
    )
    opt = torch.optim.AdamW(enc.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    T = planes["chars"].shape[0]
    for _ in range(150):
        hide = torch.rand(16, T, generator=gen) < torch.rand(16, 1, generator=gen) * 0.6 + 0.05
        batch = {k: v.expand(16, T).clone() for k, v in planes.items()}
        batch["chars"][hide] = A.MASK
        for k, unknown in (
            ("boundary", A.BOUNDARY_UNKNOWN),
            ("dia", A.DIA_UNKNOWN),
            ("punct", A.PUNCT_UNKNOWN),
        ):
            batch[k][hide] = unknown
        logits = enc(batch)["char"]
        loss = torch.nn.functional.cross_entropy(logits[hide], planes["chars"].expand(16, T)[hide])
        opt.zero_grad()
        loss.backward()
        opt.step()
    enc.eval()
    return _Loaded(enc, {"data": {"seq_len": 256}}, "phrase", "checkpoint")


def test_supplement_score_of_the_reading_the_model_was_trained_to_prefer(phrase_model):
    good = "καὶ τοῦ λόγου [περὶ] τῶν θεῶν καὶ τοῦ λόγου περὶ τῶν θεῶν"
    res = restore(
        phrase_model, good, top_k=2, score_supplements=True
    )  # only a supplement: still something to restore
    (g,) = res.gaps
    assert g.kind == "supplement" and g.notation == "[περὶ]" and g.editor.reading == "περὶ"
    assert g.editor.rank == 1 and g.editor.prob > 0.5
    assert g.alternatives[0].letters == "περι" and g.editor.prob == pytest.approx(
        g.alternatives[0].prob
    )
    bad = restore(phrase_model, good.replace("[περὶ]", "[παρὰ]"), top_k=2, score_supplements=True)
    assert bad.gaps[0].editor.rank > 1 and bad.gaps[0].editor.prob < 0.1
    assert "editor's reading περὶ" in "\n".join(format_result(res))
    with pytest.raises(ValueError, match="nothing to restore"):
        restore(phrase_model, good)  # the supplement kept and not scored: nothing to restore


def test_scored_supplements_are_kept_in_the_text_unless_re_predicted(phrase_model):
    text = "καὶ τοῦ λόγου [παρὰ] τῶν θεῶν καὶ τοῦ λόγου περὶ τῶν θεῶν"
    kept = restore(phrase_model, text, top_k=2, score_supplements=True)
    assert [r.text for r in kept.restorations] == [text], "the editor's reading stays, as typed"
    assert "^" not in kept.restorations[0].marks and kept.gaps[0].fill == "παρὰ"
    assert kept.gaps[0].editor.rank > 1 and kept.gaps[0].alternatives[0].letters == "περι"
    assert any("kept as printed" in n for n in kept.notes)
    replaced = restore(phrase_model, text, top_k=2, score_supplements=True, supplements="repredict")
    assert replaced.restorations[0].fills == ["περι"] and replaced.restorations[0].text != text
    assert replaced.gaps[0].editor.reading == "παρὰ" and any(
        "re-predicted" in n for n in replaced.notes
    )


def test_a_scored_reading_is_printed_at_its_probability_as_a_percentage(phrase_model):
    """``--score-supplements`` with the supplement kept printed ``#1 0.000`` (the log of the
    letters restored: none) beside ``editor's reading περὶ: 64%``: #k's figure is the whole
    reading's probability, the kept supplement at its score, in per cent like every figure."""
    good = "καὶ τοῦ λόγου [περὶ] τῶν θεῶν καὶ τοῦ λόγου περὶ τῶν θεῶν"
    res = restore(phrase_model, good, top_k=1, score_supplements=True)
    p = res.gaps[0].editor.prob
    assert 0.05 < p < 0.995 and math.exp(res.restorations[0].logprob) == pytest.approx(p)
    lines = format_result(res)
    first = next(line for line in lines if line.startswith("#1"))
    assert first.split()[1] == f"{100 * p:.0f}%", first
    assert f"editor's reading περὶ: {100 * p:.0f}%" in "\n".join(lines)
    # a lacuna: the figure is the product of the gaps' readings, the unit the same
    lac = restore(phrase_model, "καὶ τοῦ λόγου [....] τῶν θεῶν καὶ τοῦ [....] περὶ", top_k=2)
    shown = [line.split()[1] for line in format_result(lac) if line.startswith("#")]
    assert shown == [reading_pct(math.exp(r.logprob)) for r in lac.restorations]
    assert all(s.endswith("%") for s in shown) and "natural log" not in "\n".join(
        format_result(lac)
    )


@pytest.mark.parametrize(
    "p, shown",
    [
        (1.0, "100%"),
        (0.64, "64%"),
        (0.01, "1%"),
        (0.0056, "0.56%"),
        (3.1e-5, "0.0031%"),
        (1e-9, "<0.0001%"),
    ],
)
def test_a_whole_reading_s_percentage_keeps_two_digits_below_one_per_cent(p, shown):
    assert reading_pct(p) == shown


def test_scoring_a_supplement_leaves_the_other_gaps_as_without_it(phrase_model):
    """A supplement kept as printed and scored is text to every other gap, also to a lacuna
    before it: the lacuna's fills and figures are those of the same text without the option."""
    text = "καὶ τοῦ λόγου [....] τῶν θεῶν καὶ τοῦ λόγου [περὶ] τῶν θεῶν"
    plain = restore(phrase_model, text, top_k=3)
    scored = restore(phrase_model, text, top_k=3, score_supplements=True)
    assert [r.text for r in scored.restorations] == [r.text for r in plain.restorations]
    # each whole reading's figure counts the kept supplement at its score, the same for all
    held = math.log(scored.gaps[1].editor.prob)
    assert [r.logprob for r in scored.restorations] == pytest.approx(
        [r.logprob + held for r in plain.restorations]
    )
    assert [a.prob for a in scored.gaps[0].alternatives] == pytest.approx(
        [a.prob for a in plain.gaps[0].alternatives]
    )
    assert scored.gaps[1].editor.reading == "περὶ"


def test_fused_width_probabilities_are_those_of_the_fills_the_search_kept():
    """Fused with an n-gram, a gap's width probabilities come from the candidates the search
    kept, so they agree with the fills shown: each width has at least the summed probability of
    its alternatives; the model alone keeps the BLANK chain of its forward pass."""
    from stoicheia.inference.ngram import LetterNgram
    from stoicheia.inference.restore.gap_search import Fusion

    ngram = LetterNgram(3).fit(
        [np.array([A.LETTERS.index(c) for c in "καιτονλογονκαιτουθεου" * 30], dtype=np.uint8)]
    )
    text = "καὶ τὸν [5±3] καὶ [---] τοῦ θεοῦ"
    fused = restore(
        STUB, text, top_k=3, unknown_width=9, alternatives=20, fusion=Fusion(ngram, 0.8)
    )
    for g in fused.gaps:
        assert set(g.width_probs) == set(range(g.min_letters, g.max_letters + 1))
        assert sum(g.width_probs.values()) == pytest.approx(1.0)
        for w in g.width_probs:
            same = sum(a.prob for a in g.alternatives if len(a.letters) == w)
            assert g.width_probs[w] >= same - 1e-9
    # a width none of the kept fills has is not listed (as '<1%' it would seem possible)
    g = fused.gaps[1]
    g.width_probs = {w: 0.0 for w in g.width_probs} | {6: 0.99, 9: 0.01}
    (head,) = [x for x in format_result(fused) if x.startswith("  2. lacuna [---]")]
    assert head.endswith("; width 6 99%, 9 1%"), head
    alone = restore(STUB, text, top_k=3, unknown_width=9, fusion=None)
    chained = [p for p in alone.gaps[0].width_probs.values()]
    assert chained != [p for p in fused.gaps[0].width_probs.values()]
    assert all(p > 0 for p in chained), "the BLANK chain gives every width some probability"


def test_a_capital_stretch_of_a_mixed_text_is_filled_in_capitals():
    """The fill follows the words beside its gap: in capitals (without marks) inside a heading
    typed in capitals, in lowercase in the accented text after it, also in the gap list."""
    from stoicheia.inference.restore.input_style import near_capitals

    text = "ΘΕΟΙΣ ΚΑΤΑ[....]ΟΙΣ. καὶ τὸν πατέρα ἔφη π[...]αι μέν"
    res = restore(STUB, text, top_k=1)
    heading, prose = res.gaps
    assert heading.fill == heading.fill.upper() and heading.fill.strip()
    assert all(not unicodedata.combining(c) for c in unicodedata.normalize("NFD", heading.fill))
    assert prose.fill == prose.fill.lower()
    assert all(a.fill == a.fill.upper() for a in heading.alternatives)
    shown = "\n".join(format_result(res))
    assert "letters: " + res.restorations[0].fills[0][0].upper() + " " in shown
    assert "letters: " + res.restorations[0].fills[1][0] + " " in shown
    # the nearest word on each side decides, across brackets and signs
    assert near_capitals("ΚΑΙ ΤΟΝ [...] ΔΗΜΟΝ καὶ", 8, 13) is True
    assert near_capitals("τοῦ Καλλιτύχου [...] ἐτελεύτησεν", 15, 20) is False
    assert near_capitals("ΤΟΝ [...] καὶ", 4, 9) is False
    assert near_capitals("[...]", 0, 5) is None
    # a gap inside a word follows that word (the fresh user's ΚΑΤΑ[τοῦτοὺς] and [ὦν]ΑΧ)
    assert near_capitals("ΘΕΟΙΣ ΚΑΤΑ[.......] | Φαβία Μελ[---]", 10, 19) is True
    assert near_capitals("Φαχθοβάρ [..]ΑΧ", 9, 13) is True
    assert near_capitals("Φαβία Μελ[---] ΚΑΙ", 9, 14) is False
    assert near_capitals("ἐπὶ δυῶν ἀνδρῶν Λ [---]", 18, 23) is None  # a lone Λ: the text decides


def test_dots_in_an_erasure_are_letters_to_restore_dashes_are_not():
    """Dots inside an erasure (``⟦...⟧``, ``[[...]]``) are erased letters that cannot be read,
    one a dot: a lacuna of that width, restored (issue 33: they were dropped); dashes
    (``⟦ - - - ⟧``) give no width and stay as printed, and the error says so."""
    for text in ("καὶ τὸν [[...]] πατέρα", "καὶ τὸν ⟦...⟧ πατέρα"):
        (gap,) = restore(STUB, text).gaps
        assert len(gap.fill) == 3, (text, gap.fill)
    with pytest.raises(ValueError, match=r"nothing to restore.*is an erasure, kept as printed"):
        restore(STUB, "καὶ τὸν ⟦ - - - ⟧ πατέρα")
    with pytest.raises(ValueError, match="nothing to restore") as err:
        restore(STUB, "καὶ τὸν ⟦πατέρα⟧")
    assert "erasure" not in str(err.value)


@pytest.mark.parametrize(
    "text, printed",
    [
        ("καὶ τὸν ⟦...⟧ πατέρα", r"καὶ τὸν ⟦\[[^][]+\]⟧ πατέρα"),
        ("καὶ τὸν ⟦πα..ρα⟧ ἔθηκε", r"καὶ τὸν ⟦πα\[[^][]+\]ρα⟧ ἔθηκε"),
        ("καὶ τὸν ⸢..τέρα⸣ ἔθηκε", r"καὶ τὸν ⸢\[[^][]+\]τέρα⸣ ἔθηκε"),
        ("καὶ τὸν 〚..〛 πατέρα", r"καὶ τὸν 〚\[[^][]+\]〛 πατέρα"),
        ("καὶ τὸν ⟦. . .⟧ πατέρα", r"καὶ τὸν ⟦\[[^][ ]+\]⟧ πατέρα"),  # spaced: one lacuna
    ],
)
def test_letters_restored_in_an_erasure_or_half_brackets_keep_both_brackets(text, printed):
    """The fill of the dots of a ``⟦ ⟧`` or ``⸢ ⸣`` is printed ``[fill]`` inside the brackets,
    which stay: ``⟦...⟧`` printed ``ντε`` (brackets gone, the letters as if read on the stone)
    and ``⸢..υλῇ⸣`` printed ``βουλῇ⸣`` (an unbalanced half bracket) were wrong Leiden."""
    res = restore(STUB, text, top_k=2, beam=2)
    _check_round_trip(text, res)
    for r in res.restorations:
        assert re.fullmatch(printed, r.text), r.text


def test_respace_prints_each_fill_one_way_and_says_which_signs_it_leaves_out():
    """--respace rebuilds a capital Leiden text in lowercase with the heads' marks: the gaps'
    fills and letters are listed as the restoration prints them, not in the input's capitals,
    and a note names the editor's signs outside the gaps that the rebuilt text does not keep."""
    text = "ΚΑΙ ΤΟΝ [ΛΟΓΟΝ] ΤΟΥ | ΘΕΟΥ Π[....]Ι ΤΩΝ"
    res = restore(STUB, text, top_k=2, respace=True)
    (g,) = res.gaps
    assert g.fill == res.restorations[0].printed[0] and g.fill == g.fill.lower()
    assert g.fill in res.restorations[0].text
    assert all(a.fill == a.fill.lower() for a in g.alternatives)
    shown = "\n".join(format_result(res))
    first = res.restorations[0].fills[0][0]  # base letters, lowercase
    assert f"letters: {first} " in shown and f"letters: {first.upper()} " not in shown
    (note,) = [n for n in res.notes if "--respace" in n]
    assert "[ ] |" in note and "model's word division, accents and punctuation" in note
    plain = restore(STUB, "καὶ τὸν λόγον π[....]ι τῶν", top_k=1, respace=True)
    (note,) = [n for n in plain.notes if "--respace" in n]
    assert "model's word division and punctuation; the input's accents kept" in note
    assert "not in it" not in note, "nothing left out, nothing said"
    kept = restore(STUB, text, top_k=1)
    assert kept.gaps[0].fill == kept.gaps[0].fill.upper(), "without --respace: the input's style"


def test_the_probabilities_shown_for_a_fill_agree():
    """A restoration's figure is the natural log of the product of its fills' probabilities
    (each gap's first alternative in restoration #1), and each letter's probability is at least
    its fill's (it sums the kept fills that share the letter)."""
    res = restore(STUB, "καὶ [5±3] καὶ [---] τοῦ [.4.] ἐ̣πὶ", top_k=3, unknown_width=9)
    best = res.restorations[0]
    assert best.logprob == pytest.approx(sum(math.log(g.alternatives[0].prob) for g in res.gaps))
    for g in res.gaps:
        assert g.alternatives[0].letters == best.fills[g.index]
        assert all(p >= g.alternatives[0].prob - 1e-9 for p in g.letter_probs)


def test_progress_is_reported_and_ends_at_its_total():
    seen: list[tuple[int, int]] = []
    restore(
        STUB,
        "καὶ [---] τοῦ [.4.] λόγου",
        top_k=2,
        unknown_width=8,
        progress=lambda d, t: seen.append((d, t)),
    )
    assert len(seen) >= 3 and seen[-1][0] == seen[-1][1]
    assert all(0 < d <= t for d, t in seen) and [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_lookalike_letters_inside_greek_words_are_counted_as_the_encoder_reads_them():
    """A Latin o (or Cyrillic т) typed inside a Greek word is a Greek letter to the encoder; the
    restore reader counts it the same way (it failed with "N letters encoded but M read")."""
    from stoicheia.text.lookalikes import fold_lookalikes

    text = "[---] [ἐ]πορίσατο [---]εντος ἐνπέραμo [....] ἐπὶ тοῦ Marcus hιαρὸν"
    folded = fold_lookalikes(text)
    assert len(folded) == len(text)
    assert (
        folded.count("ο") == text.count("ο") + 1
        and "ἐπὶ τοῦ" in folded
        and "Marcus" in folded
        and "hιαρὸν" in folded
    )
    res = restore(STUB, text, top_k=1, unknown_width=4)
    _check_round_trip(text, res)
    assert "ἐνπέραμo" in res.restorations[0].text, (
        "the input is given back as typed outside the gaps"
    )


class _MarksEverywhere(StubNetwork):
    """The stub, its ``dia`` head preferring a grave with a smooth breathing on every slot, then
    a circumflex with an iota subscript: marks that Greek writes on few letters and places."""

    def __init__(self) -> None:
        super().__init__(marks=True)

    def __call__(self, batch):
        out = super().__call__(batch)
        out["dia"][:, :, A.dia_id(2, 1, 0, 0)] = 5.0
        out["dia"][:, :, A.dia_id(3, 0, 1, 0)] = 4.0
        return out


MARKS_EVERYWHERE = _Loaded(_MarksEverywhere(), {"data": {"seq_len": 512}}, "stub", "checkpoint")


def test_restored_letters_carry_only_marks_greek_writes_there():
    # The dia head scores each slot alone; its best mark was printed even where no Greek text has
    # it: a grave on a consonant ('απαν̀'), a breathing inside a word ('αἀ').
    res = restore(MARKS_EVERYWHERE, "καὶ τοῦ λόγου [.12.] τῶν θεῶν", top_k=1, alternatives=0)
    fill = res.gaps[0].fill
    words = unicodedata.normalize("NFD", fill).split()
    inner = [c for w in words for c in w[:-1] if c in ",.·;:\u0387"]
    assert not inner, fill  # punctuation ends a word, never inside one
    words = [w.rstrip(",.·;:\u0387") for w in words]
    assert len(words) >= 2 and sum(len(w) for w in words) > 12  # letters and their marks
    vowels, marks = set("αεηιουω"), []
    for w in words:
        letters = [[c, ""] for c in w if not unicodedata.combining(c)]
        k = -1
        for c in w:
            if unicodedata.combining(c):
                letters[k][1] += c
            else:
                k += 1
        for i, (c, m) in enumerate(letters):
            marks.append(m)
            if c not in vowels:
                assert m in ("", "\u0314") and (m == "" or (c == "ρ" and i == 0)), (fill, c, m)
            if "\u0313" in m or "\u0314" in m:  # a breathing: the word's first vowel (or diphthong)
                assert i == 0 or (
                    i == 1
                    and letters[0][0] + c in ("αι", "ει", "οι", "υι", "αυ", "ευ", "ηυ", "ου", "ωυ")
                ), (fill, i)
            if "\u0300" in m:  # a grave: no vowel after it in its word
                assert not any(x in vowels for x, _ in letters[i + 1 :]), (fill, i)
            if "\u0342" in m:
                assert c not in "εο", fill
            if "\u0345" in m:
                assert c in "αηω", fill
    # the head's choice is still taken where Greek allows it: its second favourite, a
    # circumflex with an iota subscript, on an η, ω or α
    assert any("\u0342" in m and "\u0345" in m for m in marks), fill


def test_respace_keeps_the_accents_and_punctuation_the_input_gives():
    """--respace predicts the word division; an accented input's marks and its punctuation (a
    raised dot, a comma) stay as typed, and a punctuation mark ends a word. Before, every mark
    and sign came from the heads: the stub's acute replaced the input's graves and its
    punctuation dropped the typed '·'."""
    text = "καὶ τὸν λόγον· π[....]ι τῶν θεῶν, ἐπὶ"
    res = restore(STUB, text, top_k=1, respace=True)
    out = res.restorations[0].text
    (note,) = [n for n in res.notes if "--respace" in n]
    assert "model's word division; the input's accents and punctuation kept" in note

    def letters_with_marks(s: str) -> list[str]:
        s = unicodedata.normalize("NFD", s.replace("[", "").replace("]", ""))
        out: list[str] = []
        for ch in s:
            if unicodedata.combining(ch) and out:
                out[-1] += ch
            elif ch.isalpha():
                out.append(ch)
        return out

    got = letters_with_marks(out)
    before = letters_with_marks(text[: text.index("[")])
    after = letters_with_marks(text[text.index("]") + 1 :])
    assert len(got) == len(before) + 4 + len(after)
    assert got[: len(before)] == before and got[-len(after) :] == after  # the typed marks
    nfc = unicodedata.normalize("NFC", out)  # the raised dot U+0387 -> U+00B7
    assert "ῶν, " in nfc and "ν· " in nfc, "the typed punctuation, each ending its word"


def _marks_by_letter(s: str) -> list[tuple[str, str]]:
    out: list[list[str]] = []
    for ch in unicodedata.normalize("NFD", s):
        if unicodedata.combining(ch) and out:
            out[-1][1] += ch
        elif ch.isalpha():
            out.append([ch.lower(), ""])
    return [(c, m.replace(DOT, "")) for c, m in out]


DOT = "\u0323"


def test_a_changed_reading_and_a_supplement_s_alternatives_take_their_own_marks():
    # The typed marks of an uncertain letter, and the editor's marks of a scored supplement,
    # were copied by position onto whatever letter the model put there ('σ̣̓', 'γαρ̀').
    res = restore(MARKS_EVERYWHERE, "ἐνθάδε κεῖ[..]αι [ἔτη] ἐ̣ καὶ", top_k=3, score_supplements=True)
    consonant_marks = []
    for g in res.gaps:
        for a in g.alternatives:
            for c, m in _marks_by_letter(a.fill):
                if c not in "αεηιουωρ":
                    consonant_marks.append((a.fill, m))
    assert not [x for x in consonant_marks if x[1]], consonant_marks
    assert any(g.kind == "uncertain" and len(g.alternatives) > 1 for g in res.gaps)


def test_respace_keeps_the_punctuation_typed_after_a_gap():
    res = restore(STUB, "Διονύσιος ἐνθάδε κεῖται· ἔζησεν ἔτη [..]. χαῖρε.", top_k=1, respace=True)
    text = res.restorations[0].text
    assert "]." in text or re.search(r"\.\]? ", text), text
    assert text.count(".") == 2, text


def test_a_text_typed_line_by_line_prints_line_under_line_with_its_own_marks():
    text = "ἐνθάδε κεῖ[..]αι\nΔιονύσιος [---]\nχαῖρε"
    res = restore(STUB, text, top_k=1, unknown_width=4)
    lines = format_result(res)
    start = next(i for i, ln in enumerate(lines) if ln.startswith("#1 "))
    first, marks1, second, marks2, third = lines[start : start + 5]
    col = first.index("ἐνθάδε")
    assert second[:col].strip() == "" and second[col:].startswith("Διονύσιος [")
    assert third[:col].strip() == "" and third[col:] == "χαῖρε"
    # each line's ^ stand between its own brackets, on screen (combining marks take no column)
    for line, marks in ((first, marks1), (second, marks2)):
        assert set(marks.strip()) == {"^"}
        carets = [j for j, ch in enumerate(marks) if ch == "^"]
        assert _screen_col(line, line.index("[")) < min(carets)
        assert max(carets) < _screen_col(line, line.index("]"))
    assert lines[0].startswith("input     ἐνθάδε") and lines[1] == " " * 10 + "Διονύσιος [---]"


def _screen_col(line: str, index: int) -> int:
    return sum(1 for c in line[:index] if not unicodedata.combining(c))


def test_latin_capitals_that_look_greek_and_an_ellipsis_are_noted():
    res = restore(STUB, "ΕΝΘΑΔΕ ΚΕΙ[..]AI ZHΣAΣ ETH Marcus", top_k=1)
    (note,) = [n for n in res.notes if "left out as Latin" in n]
    assert "AI, ETH" in note and "Marcus" not in note and "ZH" not in note
    greek = restore(STUB, "ΕΝΘΑΔΕ ΚΕΙ[..]ΑΙ ΖΗΣΑΣ ΕΤΗ", top_k=1)
    assert not any("Latin" in n or "read as Greek" in n for n in greek.notes)
    # invisible formatting characters (zero-width space, right-to-left override, BOM): said
    res = restore(STUB, "καὶ τῷ\u200b [...] δή\u202eμῳ\ufeff", top_k=1)
    (note,) = [n for n in res.notes if "invisible" in n]
    assert note.startswith("3 invisible formatting") and "U+200B, U+202E, U+FEFF" in note
    # Latin capitals inside a Greek word are read as the Greek letters they look like: said
    res = restore(STUB, "καὶ ἔδωKE [...] τῷ δήμῳ", top_k=1)
    (note,) = [n for n in res.notes if n.startswith("read as Greek")]
    assert "2 letter(s)" in note and "(ἔδωKE)" in note
    res = restore(STUB, "ἐνθάδε κεῖ[…]αι", top_k=1)
    assert any(n.startswith("[…] is read as a lacuna of 3 letters") for n in res.notes)
    assert res.gaps[0].min_letters == res.gaps[0].max_letters == 3


def test_the_letters_around_a_gap_decide_its_last_letter():
    """Letters Greek cannot write there are not offered (the fresh user's 'ψ̣ὐχὴν', '[σ]ὐνοίας',
    'ἢ̣’', '[δὲ]’', 'ἀλλὰ [ς] δῆμος'); a gap glued to a word with a breathing ends a word."""
    from stoicheia.inference.restore.reading import parse_input

    vowels = {A.LETTERS.index(c) for c in "αεηιουω"}

    def last(text: str, k: int = 0) -> set[int] | None:
        g = parse_input(text)[1][k]
        return None if g.last_letters is None else set(np.flatnonzero(g.last_letters).tolist())

    assert last("ὁ δῆμος κ̣αὶ ε̣ὐχὴν ἀνέθηκε", 1) == {A.LETTERS.index(c) for c in "αεηοω"}
    assert last("θεοῖς πᾶσι [.]ἱ στρατευσάμενοι") == {A.LETTERS.index(c) for c in "αεου"}
    assert last("ον δαπαν δ̣’ ἐμ μέσσαις") == set(range(24)) - vowels
    assert last("ἀλλὰ ἐγὼ [..]’ ἐμοῦ") == set(range(24)) - vowels
    lone = {A.LETTERS.index(c) for c in "αεηοω"}  # ὁ ἡ ἤ ὦ ἅ ἕ: never ι or υ alone
    assert last("ἀλλὰ [.] δῆμος") == lone
    assert last("ὁ δῆμος ἐπρυτάνευε, [.] ἐγραμμάτευε") == lone  # was [ἶ] at 97 %
    assert last("καὶ τὸν [...]ν λόγον") is None
    alone = parse_input("ἐνθάδε κεῖται\n[---]\nΔιονύσιος")[1][0]  # a whole word: [ς] was its fill
    assert set(np.flatnonzero(alone.one_letter).tolist()) == lone
    assert parse_input("καὶ [---]ος")[1][0].one_letter is None
    glued = parse_input("Ἀθηναῖοι [...]ἐν Σικελίᾳ")[1][0]
    assert glued.last_letters is None and glued.end_boundary == A.BOUNDARY_WORD
    # and the decoder keeps to them: the stub's favourite letters are consonants
    res = restore(STUB, "θεοῖς πᾶσι [.]ἱ στρατευσάμενοι", top_k=3)
    assert res.gaps[0].alternatives and all(a.fill in "αεου" for a in res.gaps[0].alternatives)


def test_respace_starts_a_word_at_a_typed_breathing_and_names_what_it_drops():
    res = restore(STUB, "ἀλλ’ ἐγὼ οὐκ οἶδα [...]· δι’ ὅτι, ὦ ἄνδρες.", top_k=1, respace=True)
    text = unicodedata.normalize("NFC", res.restorations[0].text)
    for start in ("ἐ", "οὐ", "ὅ", "ὦ", "ἄ"):  # the stub divides the rest of the words at will
        assert f" {start}" in text, (start, text)  # each typed breathing begins a word
    (note,) = [n for n in res.notes if "--respace" in n]
    assert "elision marks ’" in note
    lines = restore(STUB, "ὁ δῆ̣μος\nἐτίμησεν [...]", top_k=1, respace=True)
    (note,) = [n for n in lines.notes if "--respace" in n]
    assert "line breaks" in note and "dots below" in note


def test_letters_of_other_scripts_and_latin_inside_greek_words_are_noted():
    res = restore(STUB, "ἐνθάδε שלום κεῖ[..]αι toῦ", top_k=1)
    assert any("4 letter(s) of another script (שלום)" in n for n in res.notes)
    assert any("Latin letters inside Greek words (toῦ)" in n for n in res.notes)
    assert not [n for n in restore(STUB, "ἐνθάδε κεῖ[..]αι", top_k=1).notes if "left out" in n]


class _LoneLetters:
    """A stand-in model that fills each lacuna's slots with ``letters`` in turn (the first
    hidden slot of a row gets ``letters[0]``...) and ends a word after every letter in
    ``breaks_after`` (as it sees the letter: the rendering's pass sees the fill), no word break
    elsewhere."""

    def __init__(self, letters: str, breaks_after: str) -> None:
        self.letters = [A.LETTERS.index(c) for c in letters]
        self.breaks = [A.LETTERS.index(c) for c in breaks_after]

    def __call__(self, batch):
        chars = batch["chars"]
        B, T = chars.shape
        out = {
            h: torch.zeros(B, T, n)
            for h, n in (("char", 27), ("boundary", 3), ("dia", 48), ("cap", 2), ("punct", 6))
        }
        out["boundary"][:, :, A.BOUNDARY_INTERNAL] = 1.0
        out["boundary"][:, :, A.BOUNDARY_WORD] = torch.isin(chars, torch.tensor(self.breaks)) * 2.0
        for b in range(B):
            hidden = (chars[b] == A.MASK).nonzero().flatten().tolist()
            for k, t in enumerate(hidden):
                out["char"][b, t, self.letters[k % len(self.letters)]] = 6.0
        return out


@pytest.mark.parametrize(
    "text, letters, breaks_after, lone",
    [
        ("καὶ τοῦ [..] τῶν", "σπ", "σπ", "ς π"),  # [ς π]
        ("καὶ τοῦ [.....] τῶν", "σκαικ", "σι", "ς και κ"),  # [ς καὶ κ]
        ("ΚΑΙ ΤΟΥ [....] ΤΩΝ", "κπαι", "κ", "Κ ΠΑΙ"),  # a lone κ in capitals
    ],
)
def test_no_fill_makes_a_word_of_a_lone_consonant(text, letters, breaks_after, lone):
    """The boundary head ends a word after a restored consonant (a lone final sigma: [ς π],
    [ς καὶ κ]); Greek has no such word, so the break the head holds least likely is dropped,
    in the restorations, the gap's fill and its alternatives, with or without respace."""
    model = _Loaded(
        _LoneLetters(letters, breaks_after), {"data": {"seq_len": 512}}, "lone", "checkpoint"
    )
    for respace in (False, True):
        res = restore(model, text, top_k=1, alternatives=2, respace=respace)
        (g,) = res.gaps
        text_out = res.restorations[0].text
        # the words the fill touches (with respace its first letters may end a typed word)
        a = text_out.rfind(" ", 0, text_out.index("[")) + 1
        e = text_out.find(" ", text_out.index("]"))
        touched = text_out[a : e if e >= 0 else None].replace("[", "").replace("]", "")
        shown = [touched] if respace else [touched, g.fill, *(x.fill for x in g.alternatives)]
        for s in shown:
            words = re.findall(r"[^\W\d_]+", unicodedata.normalize("NFC", s))
            assert "ς" not in words and "Σ" not in words, (respace, s)
            assert not any(
                len(w) == 1 and unicodedata.normalize("NFD", w)[0].lower() not in "αεηιουω"
                for w in words
            ), (respace, s)
        bare = "".join(
            c for c in unicodedata.normalize("NFD", g.fill) if not unicodedata.combining(c)
        )
        assert respace or lone not in bare, g.fill
        assert _letters(g.fill) == letters[: len(_letters(g.fill))]  # the same letters


def test_one_letter_words_greek_writes_are_kept():
    """A vowel (ὁ, ἡ, ἤ, ὦ) is a word of one letter, but never ι or υ; so is an elided δ’ τ’ θ’
    γ’ μ’, before a word that begins with a vowel only; never a lone σ (ς), nor another
    consonant."""
    from stoicheia.inference.restore.word_division import lone_word_allowed, no_lone_consonants

    ids = {c: A.LETTERS.index(c) for c in "οηωδτγμσπκαιυ"}
    assert all(lone_word_allowed(ids[c], None) for c in "οηωα")
    assert not any(lone_word_allowed(ids[c], ids["α"]) for c in "ιυ")
    assert lone_word_allowed(ids["δ"], ids["ι"])  # δ’ before a word that begins with ι
    assert lone_word_allowed(ids["δ"], ids["α"]) and lone_word_allowed(ids["τ"], ids["ο"])
    assert not lone_word_allowed(ids["δ"], ids["π"]) and not lone_word_allowed(ids["δ"], None)
    assert not any(lone_word_allowed(ids[c], ids["α"]) for c in "σπκ")
    W, NB = A.BOUNDARY_WORD, A.BOUNDARY_INTERNAL
    # "και δ αλλα": the elided δ stays a word; "και σ αλλα": the σ joins the likelier side
    for lone, kept in (("δ", True), ("σ", False)):
        word = "και" + lone + "αλλα"
        chans = [(A.LETTERS.index(c), NB, 0, 0, 0) for c in word]
        for i in (2, 3):
            chans[i] = (chans[i][0], W, 0, 0, 0)
        chans[-1] = (chans[-1][0], A.BOUNDARY_SENTENCE, 0, 0, 0)
        logb = np.log(np.full((len(word), 3), 1 / 3))
        logb[2, NB], logb[3, NB] = -3.0, -0.5  # no break after σ is the likelier
        restored = [i == 3 for i in range(len(word))]
        removed = no_lone_consonants(chans, restored, [True] * len(word), logb)
        assert removed == (0 if kept else 1)
        assert [c[1] for c in chans][2:4] == ([W, W] if kept else [W, NB])


def _skeleton(s: str) -> str:
    """``s`` without what a bracket holds, marks or case: the letters outside the gaps, the
    spaces between them and the punctuation."""
    s = re.sub(r"\[[^\]]*\]", "", s)
    bare = "".join(c for c in unicodedata.normalize("NFD", s) if not unicodedata.combining(c))
    return bare.lower().replace("ς", "σ")


def test_accents_keep_the_word_division_and_punctuation():
    """``accents``: a text typed with spaces but without marks gets the model's accents and
    breathings, and keeps its own word division and punctuation, where ``respace`` throws the
    division away (the stub breaks a word every fourth slot, puts a comma every sixth); the
    gap is still filled, and the note says what was predicted and what kept."""
    text = "και τον λογον π[....]ι των θεων, επι τον δημον"
    res = restore(STUB, text, top_k=1, accents=True)
    out = res.restorations[0].text
    assert _skeleton(out) == _skeleton(text), out
    assert any(unicodedata.combining(c) for c in unicodedata.normalize("NFD", out)), out
    assert res.restorations[0].fills[0] and "[" in out
    (note,) = [n for n in res.notes if "--accents" in n]
    assert "model's accents; the input's word division and punctuation kept" in note
    respaced = restore(STUB, text, top_k=1, respace=True).restorations[0].text
    assert _skeleton(respaced) != _skeleton(text), "the stub's division: the test can fail"
    # an editor's division with breathings typed inside a word stays as typed
    joined = "δι’ὅτι π[..]ι"
    out = restore(STUB, joined.replace("’", ""), top_k=1, accents=True).restorations[0].text
    assert _skeleton(out).split()[0] == "διοτι", out
    with pytest.raises(RestoreError, match="use one of them"):
        restore(STUB, text, respace=True, accents=True)
    # a text with nothing to restore is accented all the same
    plain = restore(STUB, "και τον λογον", top_k=1, accents=True).restorations[0].text
    assert _skeleton(plain) == "και τον λογον" and plain != "και τον λογον"


def test_accents_on_the_command_line_and_the_api(capsys):
    """``--accents`` is an option of ``stoicheia restore`` (refused with ``--respace`` before
    the model is loaded) and ``"accents": true`` a field of the API, named so in its advice."""
    from stoicheia.cli import main
    from stoicheia.serve.api_errors import api_wording
    from stoicheia.serve.schemas import RestoreRequest

    assert main(["restore", "no-such.pt", "--respace", "--accents", "καὶ [..]"]) == 2
    err = capsys.readouterr().err
    assert "--respace predicts the word division and --accents keeps the input's" in err
    assert "no-such.pt" not in err  # said before any checkpoint is looked for
    assert RestoreRequest(text="και [..]", accents=True).accents is True
    with pytest.raises(RestoreError, match="or --accents for the accents alone") as refused:
        restore(STUB, "και τον λογον", top_k=1)
    assert api_wording(str(refused.value)).endswith(
        'send "respace": true to predict word division, accents and punctuation, '
        'or "accents": true for the accents alone'
    )


def test_ten_restorations_print_in_one_column():
    """``--top-k 10``: the tenth restoration's text starts where the first's does."""
    from stoicheia.inference.restore import format_result

    res = restore(STUB, "καὶ τῶι [...] δήμωι", top_k=10)
    rows = [ln for ln in format_result(res) if re.match(r"#\d+ ", ln)]
    assert len(rows) == 10
    assert len({ln.index("καὶ") for ln in rows}) == 1, rows


def test_a_text_typed_in_coptic_or_cyrillic_letters_is_named_as_such():
    """A text all in Coptic (or Cyrillic) letters that print like Greek ones was refused as
    'no Greek letter' with no word of the letters it had."""
    for text, shown in (
        ("ⲉⲇⲟⲝⲉ ⲧⲏ [...] ⲕⲁⲓ", "(ⲁ ⲇ ⲉ ⲏ ⲓ ⲕ ⲝ ⲟ ...)"),
        ("едоксе [...]", "(д е к о с)"),
    ):
        with pytest.raises(RestoreError) as err:
            restore(STUB, text)
        said = f"letters of another script are not read {shown}: type the text in Greek letters"
        assert said in str(err.value)
    with pytest.raises(RestoreError) as err:
        restore(STUB, "edoxe [...]")
    assert "another script" not in str(err.value)


def test_a_text_with_only_supplements_points_to_score_supplements():
    """'ἔδοξε [τῇ] [βουλῇ]' was refused pointing only to --respace and --accents; an editor who
    typed supplements is told that --score-supplements scores them."""
    with pytest.raises(RestoreError) as err:
        restore(STUB, "ἔδοξε [τῇ] [βουλῇ]")
    assert "its editor's supplements are kept as read: --score-supplements scores them" in str(
        err.value
    )
    with pytest.raises(RestoreError) as err:
        restore(STUB, "ἔδοξε τῇ βουλῇ")
    assert "--score-supplements" not in str(err.value)


def test_the_marks_line_keeps_the_tabs_of_the_text():
    """A text with tabs (pasted from a table) had its ``^`` marks a tab's width off."""
    res = restore(STUB, "ἔδοξε\tτῇ\t[...]\tκαὶ", top_k=1)
    (r,) = res.restorations
    assert r.marks == "     \t  \t ^^^"
    assert r.text.split("\t")[:2] == ["ἔδοξε", "τῇ"]


@pytest.mark.parametrize("text", ["[.....]", "[---]", "[...] [...]"])
def test_a_text_that_is_all_lacuna_says_a_lacuna_needs_letters_around_it(text):
    """A whole text that is one gap was told only 'no Greek letter ... with its lacunae'."""
    with pytest.raises(RestoreError) as err:
        restore(STUB, text)
    assert str(err.value).endswith(
        "; a lacuna is restored from the letters around it: give the text on either side"
    )
