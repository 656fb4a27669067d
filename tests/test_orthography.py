"""The marks a restored letter may carry (stoicheia.text.orthography)."""

from __future__ import annotations

import numpy as np
import pytest

from stoicheia.text import alphabet as A
from stoicheia.text.encode import text_to_planes
from stoicheia.text.orthography import possible_marks


def _ids(word: str) -> np.ndarray:
    return np.array([A.LETTERS.index(c) for c in word])


def _allowed(word: str, boundary=None) -> list[set[tuple[int, int, int, int]]]:
    b = np.zeros(len(word), int) if boundary is None else np.array(boundary)
    if boundary is None:
        b[-1] = A.BOUNDARY_WORD
    m = possible_marks(_ids(word), b)
    return [{A.dia_fields(d) for d in np.flatnonzero(row)} for row in m]


def test_marks_by_letter_and_place():
    a, p, a2, n = _allowed("απαν")
    assert (0, 1, 0, 0) in a and (1, 2, 1, 0) in a  # ἀ, ᾅ at the start of a word
    assert p == {(0, 0, 0, 0)} and n == {(0, 0, 0, 0)}  # consonants: nothing
    assert (2, 0, 0, 0) in a2 and not any(f[1] for f in a2)  # ὰ at the end, no breathing inside
    assert (2, 0, 0, 0) not in a  # no grave before another vowel of the word
    ai = _allowed("αιρω")
    assert (0, 1, 0, 0) in ai[1] and (0, 2, 0, 0) in ai[1]  # αἰ, αἱ: the diphthong's second vowel
    assert not any(f[1] for f in _allowed("αα")[1])  # αἀ: never
    rho = _allowed("ρητορ")
    assert {f[1] for f in rho[0]} == {0, 2} and rho[4] == {(0, 0, 0, 0)}  # ῥ, never ῤ or final ῥ
    assert not any(f[0] == 3 for f in _allowed("ε")[0])  # no circumflex on a short vowel
    assert not any(f[2] for f in _allowed("ι")[0]) and not any(f[3] for f in _allowed("α")[0])


def test_an_unknown_word_division_forbids_nothing_it_might_need():
    # scriptio continua: any letter may begin a word, so a breathing is allowed everywhere a
    # vowel stands, and a grave before a vowel too
    unknown = [A.BOUNDARY_UNKNOWN] * 4
    allowed = _allowed("ααπα", unknown)
    assert any(f[1] for f in allowed[1]) and any(f[0] == 2 for f in allowed[0])


def test_real_text_is_allowed_but_for_crasis(corpus_root):
    # Every accented sentence of the UD Perseus dev treebank: the rules forbid none of its marks
    # but the coronis of crasis (κἀκεῖ, ταὐτόν, τοὔνομα), which they leave out on purpose.
    forbidden = total = 0
    path = corpus_root / "ud" / "grc_perseus-ud-dev.conllu"
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("# text ="):
            continue
        p, _ = text_to_planes(line.split("=", 1)[1])
        keep = (p.chars < A.NUM_LETTERS) & (p.dia < A.NUM_DIA)
        m = possible_marks(p.chars[p.chars < A.NUM_LETTERS], p.boundary[p.chars < A.NUM_LETTERS])
        d = p.dia[p.chars < A.NUM_LETTERS].astype(int)
        k = keep[p.chars < A.NUM_LETTERS]
        forbidden += int((~m[np.arange(len(d))[k], d[k]]).sum())
        total += int(k.sum())
    assert total > 50_000 and forbidden / total < 5e-4, (forbidden, total)


def test_bad_arrays_are_refused():
    with pytest.raises(ValueError, match="alike"):
        possible_marks(np.zeros(3, int), np.zeros(2, int))
    with pytest.raises(ValueError, match="0..23"):
        possible_marks(np.array([A.MASK]), np.array([1]))
