"""The notes a restoration carries (``RestoreResult.notes``, printed in parentheses): how the
input was read where a scholar may have meant otherwise (:func:`reading_notes`), what
``--respace`` rebuilds (:func:`respace_note`), and how it was decoded (:func:`decoding_notes`).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from stoicheia.inference.restore.gaps import Gap
from stoicheia.inference.restore.reading import Reading
from stoicheia.text.clusters import CONTROLS
from stoicheia.text.leiden_segments import DOT_BELOW

#: the editor's and the stone's signs that ``--respace``, which rebuilds the text from the
#: planes, does not print (a note says so when the input has any outside its gaps)
EDITORIAL_SIGNS = frozenset("[]()⟦⟧{}⟨⟩⸢⸣|/\\❦⁝⁞⁙‖’'ʼ\n" + DOT_BELOW)

#: a word of Latin capitals that all look like Greek ones, touching no other letter: the encoder
#: reads it as Latin and leaves it out (the Latin A I of ΚΕΙ[..]AI)
_GREEK_LETTER = re.compile("[\u0370-\u03ff\u1f00-\u1fff]")
_LATIN_CAPITALS = re.compile(r"(?<![^\W\d_])[ABEZHIKMNOPTXY]+(?![^\W\d_])")


def reading_notes(reading: Reading) -> list[str]:
    """Notes on how ``reading``'s text was read where a scholar may have meant otherwise,
    from what its encoding left out (``reading.encoded.dropped``): letters of another script,
    control characters, Latin letters inside Greek words, words of Latin capitals that look
    Greek (left out of what the model sees), invisible formatting characters, look-alike
    letters of other scripts inside Greek words (read as the Greek letter), and ``[…]`` (three
    letters)."""
    text, gaps = reading.text, reading.gaps
    notes = []
    dropped = reading.encoded.dropped
    if dropped.get("other"):
        foreign = "".join(
            dict.fromkeys(
                c
                for c in text
                if unicodedata.category(c).startswith("L")
                and not unicodedata.name(c, "").startswith(("GREEK", "LATIN"))
            )
        )
        notes.append(
            f"left out, not Greek: {dropped['other']} letter(s) of another script ({foreign[:20]})"
        )
    if dropped.get("control"):
        codes = ", ".join(dict.fromkeys(f"U+{ord(c):04X}" for c in text if c in CONTROLS))
        notes.append(
            f"left out: {dropped['control']} control character(s) ({codes[:40]}), no word break"
        )
    invisible = [c for c in text if unicodedata.category(c) == "Cf"]
    if invisible:  # a zero-width space, a bidirectional override, a byte-order mark...
        codes = ", ".join(dict.fromkeys(f"U+{ord(c):04X}" for c in invisible))
        notes.append(
            f"{len(invisible)} invisible formatting character(s) in the text ({codes[:40]}): "
            "not read as letters; they stay in the printed text as typed"
        )
    mixed = [w for w in text.split() if re.search("[A-Za-z]", w) and _GREEK_LETTER.search(w)]
    if dropped.get("latin_in_word") and mixed:
        notes.append(
            f"left out: Latin letters inside Greek words ({', '.join(dict.fromkeys(mixed))}); "
            "type them in Greek letters if they are Greek"
        )
    alike = dropped.get("latin_lookalike", 0) + dropped.get("script_lookalike", 0)
    if alike:
        words = [
            w
            for w in text.split()
            if _GREEK_LETTER.search(w)
            and any(
                unicodedata.category(c).startswith("L") and not _GREEK_LETTER.match(c) for c in w
            )
        ]
        notes.append(
            f"read as Greek: {alike} letter(s) of another script that look Greek, inside Greek "
            f"words ({', '.join(dict.fromkeys(words)) or '?'}); check they are the Greek "
            "letters meant"
        )
    latin = list(dict.fromkeys(_LATIN_CAPITALS.findall(text)))
    if latin:
        notes.append(
            f"left out as Latin, not read as Greek: {', '.join(latin)} (every letter of them "
            "looks like a Greek capital: if they are Greek, type them in Greek letters)"
        )
    ellipsis = [g.notation for g in gaps if "…" in g.notation]
    if ellipsis:
        notes.append(
            f"{ellipsis[0]} is read as a lacuna of 3 letters per '…' (three dots); type [---] "
            "for a lacuna of unknown width"
        )
    return notes


def _and(words: list[str]) -> str:
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


def respace_note(reading: Reading, predicted: list[str], option: str = "--respace") -> str:
    """The note of ``--respace`` (or ``--accents``, ``option``): the text rebuilt from the
    planes with the model's
    ``predicted`` channels (:func:`~stoicheia.inference.restore.reading.respace_items`), the
    input's others kept, and the input's signs (:data:`EDITORIAL_SIGNS`) outside its gaps that
    the rebuilt text does not print."""
    rest = reading.text
    for g in sorted(reading.gaps, key=lambda g: -g.start):
        rest = rest[: g.start] + rest[g.end :]
    dropped = sorted({ch for ch in rest if ch in EDITORIAL_SIGNS})
    if any(g.kind == "uncertain" for g in reading.gaps) and DOT_BELOW not in dropped:
        dropped.append(DOT_BELOW)  # a kept uncertain letter prints without its dot
    names = {
        DOT_BELOW: "dots below",
        "\n": "line breaks",
        "’": "elision marks ’",
        "'": "'",
        "ʼ": "ʼ",
    }
    shown = " ".join(names.get(ch, ch) for ch in dropped)
    channels = ("accents", "punctuation")
    if option != "--respace":  # --accents keeps the word division: said
        channels = ("word division", *channels)
    kept = [x for x in channels if x not in predicted]
    note = f"{option} rebuilds the text from the planes, in lower case" + (
        f", with the model's {_and(predicted)}" if predicted else ""
    )
    if kept:
        note += f"; the input's {_and(kept)} kept"
    if dropped:
        note += f"; the input's {shown} are not in it, only the restored letters are in brackets"
    return note


def decoding_notes(
    fusion: Any, windows: int, window: int, held: bool, score_supplements: bool, gaps: list[Gap]
) -> list[str]:
    """Notes on how the gaps were decoded: the letter n-gram and the parallels fused in
    (``fusion``: a :class:`~stoicheia.inference.restore.gap_search.Fusion` or None), decoding
    in ``windows`` windows of at most ``window`` slots, and the editor's supplements scored
    (``held``: kept as printed; else re-predicted)."""
    notes = []
    decoder = getattr(fusion, "decoder", "fused") if fusion is not None else "fused"
    if decoder == "ngram":
        notes.append(f"decoder ngram: the letter n-gram alone ({fusion.source})")
    elif decoder == "parallels" and getattr(fusion, "parallels", None) is None:
        # asked for the parallels first, with no index to find them in: say what it printed
        notes.append(
            "decoder parallels, but no parallels index was found: these are the letter "
            "n-gram's readings alone; give --parallels INDEX (`stoicheia index SHARDS` builds "
            "one; for the shipped model, `stoicheia parallels --build`)"
        )
    elif decoder == "parallels":
        notes.append(
            "decoder parallels: the parallels' fills first, by their share, then the "
            "letter n-gram's"
        )
    elif decoder == "model":
        notes.append("decoder model: the network alone")
    elif fusion is not None and fusion.ngram is not None:
        notes.append(
            f"fused with a letter {fusion.ngram.order}-gram at weight {fusion.weight:g}: "
            f"{fusion.source}"
        )
    if fusion is not None and fusion.parallels is not None:
        readings = getattr(fusion, "readings", None)
        notes.append(
            f"parallels from {fusion.parallels.manifest['letters']:,} letters of training text"
            + _added(fusion.parallels.manifest)
            + ", "
            + (
                f"their fills weighed with the search's as whole readings: "
                f"{fusion.parallels_source}"
                if decoder == "fused" and readings is not None
                else f"fused at weight {fusion.parallels_weight:g}: {fusion.parallels_source}"
                if decoder == "fused" and fusion.parallels_weight > 0
                else "listed first (--decoder parallels)"
                if decoder == "parallels"
                else "shown, not fused" + (" (parallels weight 0)" if decoder == "fused" else "")
            )
        )
    if windows > 1:
        notes.append(f"each gap decoded in a window of at most {window} slots around it")
    if held:
        notes.append(
            "editor's supplements kept as printed, each scored against the model's readings of "
            "its width (--score-supplements)"
        )
    elif score_supplements and any(g.kind == "supplement" for g in gaps):
        notes.append(
            "editor's supplements hidden from the model and re-predicted, to score them "
            "(--score-supplements)"
        )
    return notes


__all__ = ["EDITORIAL_SIGNS", "decoding_notes", "reading_notes", "respace_note"]


def _added(manifest: dict) -> str:
    """`` (iip's 91,945 of them added by `stoicheia add-corpus`, not trained on)`` for an index
    holding tiers added after conversion, else ``""``."""
    added = (manifest.get("shards") or {}).get("added_tiers") or []
    per_tier = manifest.get("per_tier") or {}
    if not added:
        return ""
    told = ", ".join(f"{t}'s {(per_tier.get(t) or {}).get('letters', 0):,}" for t in added)
    return f" ({told} of them added by `stoicheia add-corpus`, not trained on)"
