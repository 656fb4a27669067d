"""The gaps of the restoration benchmark: texts of the inscription dev set, and the protocols.

The texts are the editions of the inscription dev set (``stoicheia convert
--inscription-dev-digit 4``; ``stats.json`` lists each inscription with its EpiDoc file),
read again from EpiDoc by :func:`stoicheia.sources.read_source`, which writes Leiden: the
edition as the editor printed it, supplements ``[καὶ]`` as supplied text, real gaps as
lacunae ``[....]`` / ``[---]``, uncertain letters with their dot below.

A :class:`Task` is one text with one *target* gap written as a lacuna; the rest of the text
stays as printed. The four protocols (``docs/measuring-restoration.md``; all of them built by
:func:`~.tasks.build_tasks`):

* ``hidden`` (Ithaca's, Assael et al., Nature 2022): spans of 1-10 letters of intact text
  (letters read with certainty, outside every editorial bracket) are hidden one at a time
  and given as a known-width lacuna ``[....]``; ``spans_per_text`` per text, drawn with a
  seed from the text's id, so the same spans come back on every run and machine;
* ``supplements``: each ``<supplied reason="lost">`` of 1-10 letters that fills a bracket of
  its own becomes a known-width lacuna in turn; the editor's letters are the truth;
* ``unknown``: the spans of ``hidden`` given as ``[---]``: the width must come back too;
* ``edge``: the stone's edge, the first or last word of the text as ``[---]`` with text on one
  side only (:mod:`.edge`).

Truth and fills are compared on *base letters* (:func:`base_letters`: no accents,
breathings or capitals, final sigma folded into sigma), as Ithaca scores.
"""

from __future__ import annotations

import functools
import hashlib
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stoicheia.text.alphabet import LETTERS
from stoicheia.text.encode import text_to_planes
from stoicheia.text.leiden import parse_leiden
from stoicheia.text.leiden_segments import DOT_BELOW, Editorial, Lacuna, LeidenError, Text

PROTOCOLS = ("hidden", "supplements", "unknown", "edge")
MIN_LETTERS, MAX_LETTERS = 1, 10  # the gap lengths scored (Ithaca: 1-10 characters)


@dataclass(frozen=True)
class DevText:
    """One record of an inscription of the dev set: ``id`` (``ISic000154.xml#1``), ``work``
    (the work id of the shards), ``epidoc`` (the file read) and ``text`` (Leiden, as printed)."""

    id: str
    work: str
    epidoc: str
    text: str


@dataclass(frozen=True)
class Task:
    """One gap to restore.

    ``input``: the Leiden text given to the decoders, with the target written as
    ``[....]`` (known width) or ``[---]``; ``start``/``end``: character offsets of the target's
    notation in ``input``, brackets included; ``target``: the index of the target among the
    lacunae of ``input`` (:class:`~stoicheia.text.leiden_segments.Lacuna` segments of
    :func:`~stoicheia.text.leiden.parse_leiden`, in reading order); ``truth``: its base
    letters (1-10); ``known_width``: whether the decoders are told the width. ``protocol``:
    one of :data:`PROTOCOLS`.
    """

    protocol: str
    text_id: str
    input: str
    start: int
    end: int
    target: int
    truth: str
    known_width: bool


class BenchmarkError(ValueError):
    """The benchmark cannot run as asked; the message names the file or option and the fix."""


def base_letters(s: str) -> str:
    """The base letters of ``s``: lower case, no marks, final sigma folded into sigma
    (``"Τὸν Δῆμον"`` -> ``"τονδημον"``); anything that is not a Greek letter is left out."""
    planes, _ = text_to_planes(unicodedata.normalize("NFC", s))
    return "".join(LETTERS[int(c)] for c in planes.chars)


@functools.lru_cache(maxsize=4096)
def _is_letter(ch: str) -> bool:
    return len(text_to_planes(ch)[0]) == 1


def read_dev_texts(
    shard_root: str | Path,
    max_texts: int | None = None,
    sample: int | None = None,
    counts: Counter | None = None,
    epidoc_root: str | Path | None = None,
) -> list[DevText]:
    """The records of the inscription dev set of the converted corpus at ``shard_root``, read
    from their EpiDoc files with the EpiDoc options of the conversion (``stats.json``), except
    that supplements are always kept as bracketed text (the ``supplements`` protocol needs
    them). Records that ``convert`` would reject (not Greek enough, empty) are left out and
    counted in ``counts`` (``rejected:<reason>``); ``max_texts`` keeps the first records;
    ``sample`` keeps the records of ``sample`` inscriptions drawn evenly from the whole dev set
    (those whose BLAKE2b hash of ``"stoicheia-dev-sample|" + work`` is lowest: every corpus and
    both halves in proportion, the same inscriptions on every machine, a larger sample holding
    a smaller one).
    ``epidoc_root``: read each file as ``epidoc_root / work`` (the work id is the path relative
    to the tier's folder) instead of the path recorded at conversion.

    Raises :class:`BenchmarkError` when ``stats.json`` lists no inscription dev set (convert
    with ``--inscription-dev-digit 4``) or an EpiDoc file listed there is missing.
    """
    from stoicheia.data.corpus_stats import read_stats
    from stoicheia.sources import EpiDocOptions, read_source
    from stoicheia.text.encode import drop_stacked_marks
    from stoicheia.text.filter import normalise_record

    try:
        stats = read_stats(Path(shard_root))
    except FileNotFoundError as err:
        raise BenchmarkError(str(err)) from None
    works = (stats.get("inscription_dev") or {}).get("works") or []
    if not works:
        raise BenchmarkError(
            f"{Path(shard_root) / 'stats.json'} lists no inscription dev set: convert with "
            "--inscription-dev-digit 4 (see docs/measuring-restoration.md); the benchmark "
            "restores texts the model never trained on"
        )
    opts = dict(stats.get("epidoc") or {})
    opts["supplied_lost"] = "text"
    options = EpiDocOptions(
        **{k: v for k, v in opts.items() if k in ("supplied_lost", "expansions", "choice")}
    )
    min_greek = float(stats.get("min_greek", 0.95))
    counts = counts if counts is not None else Counter()
    out: list[DevText] = []
    if sample is not None:
        keep = set(sorted((w["work"] for w in works), key=_sample_rank)[:sample])
        works = [w for w in works if w["work"] in keep]
    for w in works:
        path = Path(epidoc_root) / w["work"] if epidoc_root is not None else Path(w["epidoc"])
        if not path.exists():
            fix = (
                "give the folder the tier was converted from (e.g. ../shared/corpus/isicily)"
                if epidoc_root is not None
                else "give --epidoc-root, the folder the tier was converted from "
                "(e.g. ../shared/corpus/isicily), or convert again on this machine"
            )
            raise BenchmarkError(
                f"{path}: the EpiDoc file of the dev inscription {w['work']} (listed in "
                f"{Path(shard_root) / 'stats.json'}) is missing; {fix}"
            )
        for rec in read_source(path, None, epidoc=options):
            norm = normalise_record(rec.text, known=rec.known, min_greek=min_greek)
            if norm.planes is None:
                counts[f"rejected:{norm.reject_reason or 'rejected'}"] += 1
                continue
            # a letter with two marks of one kind (IOSPE 5.272: two perispomeni) keeps its
            # first, as in the shards: restore's notation refuses it, so the text's gaps would
            # fail for every decoder
            text, removed = drop_stacked_marks(rec.text)
            if removed:
                counts["second_mark_on_a_letter"] += removed
            out.append(DevText(rec.id, w["work"], str(path), text))
            if max_texts is not None and len(out) >= max_texts:
                return out
    return out


def _sample_rank(work: str) -> bytes:
    return hashlib.blake2b(f"stoicheia-dev-sample|{work}".encode(), digest_size=8).digest()


def _lacuna_index(text: str, start: int) -> int:
    """The index among the lacunae of ``text`` of the one whose bracket opens at ``start``."""
    lacunae = [s for s in parse_leiden(text) if isinstance(s, Lacuna)]
    for k, seg in enumerate(lacunae):
        if seg.start == start + 1:
            return k
    raise AssertionError(f"no lacuna opens at {start} in {text!r}")


def gap_task(
    protocol: str,
    text_id: str,
    text: str,
    a: int,
    b: int,
    notation: str,
    truth: str,
    known: bool,
    counts: Counter,
) -> Task | None:
    """The task of ``text`` with characters ``[a, b)`` replaced by the lacuna ``notation``, or
    ``None`` (counted in ``counts``) when nothing is left to read it from
    (``no_letter_left``) or the parser refuses the lacuna beside its neighbours
    (``unreadable_with_the_gap``)."""
    new = text[:a] + notation + text[b:]
    if not base_letters(text[:a] + text[b:]):
        counts["no_letter_left"] += 1
        return None
    try:
        target = _lacuna_index(new, a)
    except LeidenError:
        counts["unreadable_with_the_gap"] += 1
        return None
    return Task(protocol, text_id, new, a, a + len(notation), target, truth, known)


def supplement_tasks(dev: DevText, counts: Counter | None = None) -> list[Task]:
    """One task per editor's supplement of ``dev`` (protocol ``supplements``), in reading
    order: the supplement ``[τὸν]`` becomes ``[...]`` (one dot per base letter), the rest of
    the text as printed. Supplements outside 1-10 letters (``supplement_length``), those
    sharing their bracket with a lacuna (``[καὶ ---]``, ``supplement_shares_bracket``) and
    those that are all the letters of the text (``no_letter_left``) are left out and counted
    in ``counts``."""
    counts = counts if counts is not None else Counter()
    text = dev.text
    tasks = []
    for seg in parse_leiden(text):
        if not (isinstance(seg, Editorial) and seg.reason == "lost"):
            continue
        truth = base_letters(seg.text)
        if not MIN_LETTERS <= len(truth) <= MAX_LETTERS:
            counts["supplement_length"] += 1
            continue
        a, b = seg.start - 1, seg.end + 1  # the brackets
        if text[a] != "[" or text[b - 1] != "]":
            counts["supplement_shares_bracket"] += 1
            continue
        notation = "[" + "." * len(truth) + "]"
        task = gap_task("supplements", dev.id, text, a, b, notation, truth, True, counts)
        if task is not None:
            tasks.append(task)
    return tasks


def intact_runs(text: str) -> list[list[tuple[int, int]]]:
    """Runs of intact letters: ``[(start, end) of each letter with its marks, ...]``; a run
    holds letters of :class:`~stoicheia.text.leiden_segments.Text` segments read with certainty,
    separated by nothing or by spaces only (punctuation, a digit, a bracket end a run)."""
    runs: list[list[tuple[int, int]]] = []
    for seg in parse_leiden(text):
        if not isinstance(seg, Text):
            continue
        run: list[tuple[int, int]] = []
        i, end = seg.start, seg.end
        while i < end:
            ch = text[i]
            j = i + 1
            while j < end and unicodedata.combining(text[j]):
                j += 1
            if (
                _is_letter(unicodedata.normalize("NFC", text[i:j].replace(DOT_BELOW, "")))
                and DOT_BELOW not in text[i + 1 : j]
            ):
                run.append((i, j))
            elif ch != " " or not run:
                if run:
                    runs.append(run)
                run = []
            i = j
        if run:
            runs.append(run)
    return runs


def text_seed(seed: int, text_id: str) -> int:
    """A seed for one text: ``seed`` and the text's id hashed (BLAKE2b), the same on every run
    and machine and independent of which other texts are benchmarked."""
    digest = hashlib.blake2b(f"{seed}|{text_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def hidden_spans(dev: DevText, n: int, seed: int) -> list[tuple[int, int, str]]:
    """Up to ``n`` distinct spans of 1-10 intact letters of ``dev.text`` (protocol ``hidden``):
    ``[(start, end, truth letters), ...]``, character offsets. For each span a length is drawn
    uniformly among the lengths that fit in some run of intact letters (:func:`intact_runs`),
    then a place uniformly among those of that length; a span drawn twice is drawn again (at
    most ``20 n`` draws). Seeded by :func:`text_seed`: reproducible."""
    runs = intact_runs(dev.text)
    longest = max((len(r) for r in runs), default=0)
    lengths = list(range(MIN_LETTERS, min(MAX_LETTERS, longest) + 1))
    if not lengths or n <= 0:
        return []
    rng = np.random.default_rng(text_seed(seed, dev.id))
    chosen: dict[tuple[int, int], str] = {}
    for _ in range(20 * n):
        if len(chosen) >= n:
            break
        length = int(rng.choice(lengths))
        places = [(r, k) for r, run in enumerate(runs) for k in range(len(run) - length + 1)]
        r, k = places[int(rng.integers(len(places)))]
        a, b = runs[r][k][0], runs[r][k + length - 1][1]
        if (a, b) not in chosen:
            chosen[(a, b)] = base_letters(dev.text[a:b])
    return [(a, b, t) for (a, b), t in chosen.items()]


def span_tasks(
    dev: DevText, n: int, seed: int, protocol: str = "hidden", counts: Counter | None = None
) -> list[Task]:
    """The tasks of protocol ``hidden`` (``[....]``, the width given) or ``unknown`` (``[---]``)
    on the same spans (:func:`hidden_spans`). A text without intact letters gives none
    (counted ``text_without_intact_letters`` in ``counts``); a span that holds every letter
    of the text is left out (``no_letter_left``)."""
    if protocol not in ("hidden", "unknown"):
        raise BenchmarkError(f"span_tasks: protocol {protocol!r}; use 'hidden' or 'unknown'")
    counts = counts if counts is not None else Counter()
    tasks = []
    spans = hidden_spans(dev, n, seed)
    if not spans and n > 0:
        counts["text_without_intact_letters"] += 1
    for a, b, truth in spans:
        notation = "[" + "." * len(truth) + "]" if protocol == "hidden" else "[---]"
        task = gap_task(
            protocol, dev.id, dev.text, a, b, notation, truth, protocol == "hidden", counts
        )
        if task is not None:
            tasks.append(task)
    return tasks


def inscription_of(text_id: str) -> str:
    """The inscription (EpiDoc file) of a dev text id (:attr:`DevText.id`): ``ISic000154.xml#1``
    -> ``ISic000154.xml``."""
    return text_id.split("#", 1)[0]


__all__ = [
    "PROTOCOLS",
    "BenchmarkError",
    "DevText",
    "Task",
    "base_letters",
    "gap_task",
    "hidden_spans",
    "intact_runs",
    "inscription_of",
    "read_dev_texts",
    "span_tasks",
    "supplement_tasks",
    "text_seed",
]
