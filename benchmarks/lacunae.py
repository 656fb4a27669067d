"""Benchmark: the lacunae of real editions against the gaps the training noise draws.

    .venv/bin/python benchmarks/lacunae.py [--corpus ../shared/corpus] [--shards data/shards]
        [--records 2000] [--seed 0] [--table]

Prints figures; asserts nothing. For the EpiDoc corpora (I.Sicily, IOSPE, IGCyr, Cretan
Institutional Inscriptions; read with the project's EpiDoc reader, so exactly the text the
shards hold) it finds every lost stretch: the letters of ``<supplied reason="lost">`` and the
``<gap reason="lost">`` next to them (only spaces between), as one stretch. A stretch is
*supplied* (all its letters restored by the editor), *exact* (a gap of a stated number of
letters), *about* (``precision="low"``/``ca.``, or a range ``atLeast``/``atMost``) or *unknown*
(``extent="unknown"``: any part of unknown width). Its width is its letters plus the stated
widths (the estimate for *about*). Its place in the word: *whole words* (it starts and ends at
word edges), *word start* (starts at a word's start, ends inside a word), *word end*, *inside*;
in the text: whether it holds the text's first or last word (and the share of texts whose first
or last word is lost), and the share of letters lost on the first and last line (against the
other lines). The place in the word counts the stretches off the text's edges. I.Sicily
files of the inscription dev set of digit 4 (I.Sicily's numbers ending in 4, the other
corpora's files by the hash of :func:`stoicheia.data.splits.dev_digit`) are left out: the
table the ``lacuna`` noise draws from (``--table`` prints it) must not be fitted on the dev
set. (Their twins in other corpora, which ``convert`` also sends to the dev set, are not
looked for here: a few texts.)

Then it draws the training noise of ``yamls/demo.yaml`` (each pattern alone and the mix) on the
same inscriptions' training records (``--shards``: ``bronze/train``) and measures its masked
runs the same way.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from stoicheia.noise.lacuna_table import WIDTH_BUCKETS, width_bucket  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CORPORA = ("isicily", "iospe", "igcyr", "cretan")
PLACES = ("whole words", "word start", "word end", "inside")


def _dev_file(path: Path) -> bool:
    """True for a file of the inscription dev set of digit 4 (``stoicheia convert
    --inscription-dev-digit 4``: I.Sicily's number, else a hash of the file name)."""
    from stoicheia.data.splits import dev_digit

    return dev_digit(path.name) == 4


def _items(text: str, counts: Counter):
    """The record as a list of items: ``("k", None)`` a kept letter, ``("l", None)`` a lost
    letter restored by the editor, ``("g", Lacuna)`` a gap, ``(" ", None)`` a word break."""
    from stoicheia.text.leiden import parse_leiden_lenient
    from stoicheia.text.leiden_segments import Editorial, Lacuna, Text

    out: list[tuple[str, object]] = []
    for seg in parse_leiden_lenient(text, counts):
        if isinstance(seg, Lacuna):
            out.append(("g", seg))
        elif isinstance(seg, (Text, Editorial)):
            lost = isinstance(seg, Editorial) and seg.reason == "lost"
            for ch in seg.text:
                if ch.isspace():
                    out.append((" ", None))
                elif ch.isalpha():
                    out.append(("l" if lost else "k", None))
    return out


def _stretches(items):
    """Lost stretches as ``(first item, last item, kind, width)`` over ``items``."""
    out = []
    i, n = 0, len(items)
    while i < n:
        if items[i][0] not in "lg":
            i += 1
            continue
        j, kinds, width = i, set(), 0
        last = i
        while j < n and items[j][0] in "lg ":
            kind, seg = items[j]
            if kind == "l":
                kinds.add("supplied")
                width += 1
                last = j
            elif kind == "g":
                last = j
                if seg.max_width is None:
                    kinds.add("unknown")
                elif seg.known_width:
                    kinds.add("exact")
                    width += seg.min_width
                else:
                    kinds.add("about")
                    width += (seg.min_width + seg.max_width) // 2
            j += 1
        kind = next(k for k in ("unknown", "about", "exact", "supplied") if k in kinds)
        out.append((i, last, kind, width))
        i = last + 1
    return out


def _place(items, a: int, b: int) -> str:
    """Where the stretch ``items[a..b]`` sits in its words."""
    starts = a == 0 or items[a - 1][0] == " "
    ends = b == len(items) - 1 or items[b + 1][0] == " "
    return (
        PLACES[0] if starts and ends else PLACES[1] if starts else PLACES[2] if ends else PLACES[3]
    )


def _word_edges(items) -> tuple[int, int]:
    """Item index of the end of the first word and of the start of the last word."""
    letters = [k for k, (c, _) in enumerate(items) if c != " "]
    if not letters:
        return -1, len(items)
    first_end = letters[0]
    while first_end + 1 < len(items) and items[first_end + 1][0] != " ":
        first_end += 1
    last_start = letters[-1]
    while last_start > 0 and items[last_start - 1][0] != " ":
        last_start -= 1
    return first_end, last_start


class Tally:
    """Counts of the lost stretches of a set of texts."""

    def __init__(self) -> None:
        self.kind: Counter = Counter()
        self.width: Counter = Counter()  # bucket -> stretches of a stated width
        self.place: Counter = Counter()
        self.first_word = self.last_word = self.stretches = 0
        self.texts_first = self.texts_last = 0  # texts whose first / last word is lost
        self.letters = self.lost = 0
        self.line_letters: Counter = Counter()  # first / last / other -> letters
        self.line_lost: Counter = Counter()
        self.texts = 0

    def add_text(self, items, lines=None) -> None:
        """Add one record: ``items`` as :func:`_items` gives them, ``lines`` (optional) the
        items of each of its lines."""
        self.texts += 1
        first_end, last_start = _word_edges(items)
        lost_first = lost_last = False
        for a, b, kind, width in _stretches(items):
            self.stretches += 1
            self.kind[kind] += 1
            if kind != "unknown":
                self.width[width_bucket(max(1, width))] += 1
            first, last = a <= first_end, b >= last_start
            if not (first or last):  # place in the word: stretches off the text's edges
                self.place[_place(items, a, b)] += 1
            self.first_word += first
            self.last_word += last
            lost_first |= first
            lost_last |= last
        self.texts_first += lost_first
        self.texts_last += lost_last
        for c, seg in items:
            if c in "kl":
                self.letters += 1
            if c == "l":
                self.lost += 1
            if c == "g" and seg.max_width is not None:
                w = (seg.min_width + seg.max_width) // 2
                self.letters += w
                self.lost += w
        if lines and len(lines) >= 3:
            for k, line in enumerate(lines):
                where = "first" if k == 0 else "last" if k == len(lines) - 1 else "other"
                for c, seg in line:
                    w = 1 if c in "kl" else 0
                    if c == "g" and seg.max_width is not None:
                        w = (seg.min_width + seg.max_width) // 2
                    self.line_letters[where] += w
                    if c in "lg":
                        self.line_lost[where] += w


def measure_editions(corpus: Path) -> dict[str, Tally]:
    """Tally of each EpiDoc corpus (and ``all``), the inscription dev set left out."""
    from stoicheia.sources.epidoc import read_epidoc
    from stoicheia.sources.record import SourceError

    out = {}
    total = Tally()
    for name in CORPORA:
        folder = corpus / name
        if not folder.is_dir():
            continue
        tally = Tally()
        counts: Counter = Counter()
        for path in sorted(folder.rglob("*.xml")):
            if _dev_file(path):
                continue
            try:
                records = list(read_epidoc(path, folder, counts=counts))
            except (SourceError, ValueError):
                continue
            for rec in records:
                items = _items(rec.text, counts)
                lines = [_items(t, counts) for _, t in rec.lines] if rec.lines else None
                tally.add_text(items, lines)
                total.add_text(items, lines)
        out[name] = tally
    out["all"] = total
    return out


def measure_noise(shards: Path, records: int, seed: int) -> dict[str, Tally]:
    """Tally of the masked runs the demo's noise (each pattern alone, and the mix) draws on
    the first ``records`` inscription training records of ``shards/bronze/train``."""
    from streaming import StreamingDataset

    from stoicheia.config import load_config
    from stoicheia.data.shards import decode_planes
    from stoicheia.noise import NoiseConfig, noise_record
    from stoicheia.noise.patterns import PATTERNS
    from stoicheia.text.alphabet import BLANK, MASK

    cfg = load_config(REPO / "yamls/demo.yaml").noise
    ds = StreamingDataset(local=str(shards / "bronze" / "train"), shuffle=False, batch_size=1)
    planes = [decode_planes(ds[k]) for k in range(min(records, ds.num_samples))]
    out = {}
    kinds = {"mix": dict(cfg.weights), **{p: {p: 1.0} for p in PATTERNS if p != "substitute"}}
    for name, weights in kinds.items():
        noise = NoiseConfig(**{**cfg.__dict__, "weights": weights})
        noise.__dict__.pop("_cache", None)
        rng = np.random.default_rng(seed)
        tally = Tally()
        for p in planes:
            if p.lacuna is not None and p.lacuna.any():
                keep = p.lacuna == 0
            else:
                keep = np.ones(len(p.chars), dtype=bool)
            z = noise_record(p, rng, noise)
            items = []
            # the original letters in order; a masked one is lost, BLANK slots make the gap
            # of unknown extent; word breaks from the true boundary plane
            k = 0
            for s in range(len(z.chars)):
                if z.tgt_chars[s] == BLANK:
                    if items and items[-1][0] == "g":
                        continue
                    items.append(("g", _UNKNOWN))
                    continue
                if not keep[k]:
                    k += 1
                    continue
                if z.word_start[s] and items:
                    items.append((" ", None))
                items.append(("l" if z.chars[s] == MASK else "k", None))
                k += 1
            tally.add_text(items)
        out[name] = tally
    return out


class _Unknown:
    max_width = None
    min_width = 0
    known_width = False


_UNKNOWN = _Unknown()


def _pct(a: float, b: float) -> str:
    return f"{100 * a / b:.1f}" if b else "-"


def table(tallies: dict[str, Tally]) -> list[str]:
    """The tallies as a Markdown table, one column per tally."""
    names = list(tallies)
    rows = [
        "| | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
        "| texts | " + " | ".join(f"{t.texts:,}" for t in tallies.values()) + " |",
        "| lost stretches | " + " | ".join(f"{t.stretches:,}" for t in tallies.values()) + " |",
        "| letters lost, % | "
        + " | ".join(_pct(t.lost, t.letters) for t in tallies.values())
        + " |",
    ]
    for kind in ("supplied", "exact", "about", "unknown"):
        rows.append(
            f"| {kind}, % of stretches | "
            + " | ".join(_pct(t.kind[kind], t.stretches) for t in tallies.values())
            + " |"
        )
    for b in WIDTH_BUCKETS:
        rows.append(
            f"| width {b}, % of stated widths | "
            + " | ".join(_pct(t.width[b], sum(t.width.values())) for t in tallies.values())
            + " |"
        )
    for place in PLACES:
        rows.append(
            f"| {place}, % of stretches off the text's edges | "
            + " | ".join(_pct(t.place[place], sum(t.place.values())) for t in tallies.values())
            + " |"
        )
    rows.append(
        "| texts whose first word is lost, % | "
        + " | ".join(_pct(t.texts_first, t.texts) for t in tallies.values())
        + " |"
    )
    rows.append(
        "| texts whose last word is lost, % | "
        + " | ".join(_pct(t.texts_last, t.texts) for t in tallies.values())
        + " |"
    )
    rows.append(
        "| holds the text's first word, % | "
        + " | ".join(_pct(t.first_word, t.stretches) for t in tallies.values())
        + " |"
    )
    rows.append(
        "| holds the text's last word, % | "
        + " | ".join(_pct(t.last_word, t.stretches) for t in tallies.values())
        + " |"
    )
    for where in ("first", "last"):
        rows.append(
            f"| {where} line: letters lost / all letters there, % | "
            + " | ".join(_pct(t.line_lost[where], t.line_letters[where]) for t in tallies.values())
            + " |"
        )
    rows.append(
        "| other lines: letters lost / all letters there, % | "
        + " | ".join(_pct(t.line_lost["other"], t.line_letters["other"]) for t in tallies.values())
        + " |"
    )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    ap.add_argument("--shards", default=str(REPO / "data" / "shards"))
    ap.add_argument("--records", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--table", action="store_true", help="print the lacuna noise's table too")
    args = ap.parse_args()
    editions = measure_editions(Path(args.corpus))
    print("## Lost stretches in the editions (the inscription dev set left out)\n")
    print("\n".join(table(editions)))
    if Path(args.shards, "bronze", "train").is_dir():
        print("\n## Masked runs of the demo's noise on the inscriptions' training records\n")
        print("\n".join(table(measure_noise(Path(args.shards), args.records, args.seed))))
    if args.table:
        t = editions["all"]
        widths = {b: t.width[b] for b in WIDTH_BUCKETS}
        print("\n## lacuna noise table (stoicheia/noise/lacuna_table.py)\n")
        print("WIDTH_COUNTS =", widths)
        print("KIND_COUNTS =", {k: t.kind[k] for k in ("supplied", "exact", "about", "unknown")})
        print("PLACE_COUNTS =", {p: t.place[p] for p in PLACES})
        print("TEXTS_FIRST_LOST, TEXTS_LAST_LOST, TEXTS =", t.texts_first, t.texts_last, t.texts)


if __name__ == "__main__":
    main()
