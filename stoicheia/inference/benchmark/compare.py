"""Two runs of the benchmark on the same dev set compared gap by gap
(``scripts/benchmark_compare.py``, ``scripts/benchmark_matrix.py``): what changed between them
(a corpus added with ``stoicheia add-corpus``, a view of the shards without a tier, another
index or n-gram), after − before per decoder and figure with the paired cluster bootstrap of
:mod:`.bootstrap` (the inscriptions resampled, both runs scored on the same resampled gaps),
overall or per corpus.

The runs are ``benchmark.json`` results (:func:`load`); their gaps must be the same (same
shards' dev set, same ``--seed`` and ``--spans-per-text``): :func:`paired_rows` refuses others.
"""

from __future__ import annotations

import json
from pathlib import Path

from stoicheia.inference.benchmark.bootstrap import gap_arrays, paired_differences
from stoicheia.inference.benchmark.scoring import pooled_figures


class CompareError(ValueError):
    """Two runs that cannot be compared, or a folder without a readable result; the message
    names the file or protocol and the fix."""


#: the inscription corpora in the order the tables give them (the EpiDoc headers' names, as
#: the benchmark's rows carry them); a corpus not named here follows, sorted
CORPORA = ("I.Sicily", "IOSPE", "IGCyr", "I.Cret.", "IIP")
#: the figures a comparison gives (those of ``paired_differences``)
FIGURES = ("top1", "top20", "cer")
#: how the tables name the decoders and the protocols
DECODER_NAMES = {
    "ngram": "n-gram",
    "parallels": "parallels",
    "model": "network",
    "fused3": "fused3",
}
PROTOCOL_LABELS = {
    "hidden": "hidden spans",
    "supplements": "editors' supplements",
    "unknown": "unknown width",
    "edge": "the stone's edge",
}


def load(folder: str | Path) -> dict:
    """``benchmark.json`` of a ``stoicheia benchmark --out`` folder. Raises
    :class:`CompareError` naming the file when it is missing or unreadable."""
    path = Path(folder) / "benchmark.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CompareError(f"{path}: {err}; give a `stoicheia benchmark --out` folder") from None


def _key(row: dict) -> tuple:
    return (row.get("text"), row.get("start"), row.get("end"), row.get("truth"))


def protocols(before: dict, after: dict) -> list[str]:
    """The protocols both runs hold, sorted."""
    return sorted(set(before["protocols"]) & set(after["protocols"]))


def decoders(before: dict, after: dict, protocol: str) -> list[str]:
    """The decoders both runs scored on ``protocol``, in the second run's order."""
    return [
        d
        for d in after["protocols"][protocol]["decoders"]
        if d in before["protocols"][protocol]["decoders"]
    ]


def corpora(run: dict) -> list[str]:
    """The corpora of the run's gaps (:data:`CORPORA` first, in that order, then the others
    sorted); gaps without a corpus are not counted."""
    seen = {
        r["corpus"] for p in run["protocols"].values() for r in p["examples"] if r.get("corpus")
    }
    return [c for c in CORPORA if c in seen] + sorted(seen - set(CORPORA))


def paired_rows(
    before: dict,
    after: dict,
    protocol: str,
    names: list[str],
    corpus: str | None = None,
    half: str = "report",
    without_twins: bool = False,
) -> list[dict]:
    """The gaps of ``protocol`` kept by ``corpus`` (None: all), ``half`` (``report``,
    ``selection`` or ``all``) and ``without_twins``, each as one example row holding the
    decoders ``names`` of both runs as ``DECODER@before`` and ``DECODER@after`` (the form
    :func:`~stoicheia.inference.benchmark.bootstrap.paired_differences` pairs). Raises
    :class:`CompareError` with the reason when the two runs restored other gaps."""
    b_rows = before["protocols"][protocol]["examples"]
    a_rows = after["protocols"][protocol]["examples"]
    if [_key(r) for r in b_rows] != [_key(r) for r in a_rows]:
        raise CompareError(
            f"protocol {protocol}: the two runs restored other gaps; run "
            "both on the same shards' dev set with the same --seed and --spans-per-text"
        )
    return [
        {
            "text": a["text"],
            "truth": a["truth"],
            **{f"{d}@before": b[d] for d in names},
            **{f"{d}@after": a[d] for d in names},
        }
        for b, a in zip(b_rows, a_rows, strict=True)
        if (half == "all" or a.get("half") == half)
        and not (without_twins and (a.get("twin") or b.get("twin")))
        and (corpus is None or a.get("corpus") == corpus)
    ]


def gains(rows: list[dict], names: list[str], resamples: int) -> dict[str, dict[str, dict]]:
    """Per decoder of ``names`` and figure of :data:`FIGURES`: ``{"before", "after", "diff",
    "low", "high"}`` over the paired ``rows`` (:func:`paired_rows`; at least one), fractions
    (CER: lower is better); ``low``/``high``: the 95 % interval of ``after − before`` (the
    inscriptions resampled ``resamples`` times, seed 1234), ``None`` for gaps of one
    inscription."""
    pairs = [(f"{d}@after", f"{d}@before") for d in names]
    diffs = paired_differences(rows, pairs, resamples=resamples, seed=1234)
    out: dict[str, dict[str, dict]] = {}
    for d in names:
        was, now = (
            pooled_figures(*gap_arrays(rows, f"{d}@{w}")[:3], ks=[1, 20])
            for w in ("before", "after")
        )
        per = diffs[f"{d}@after-{d}@before"]
        out[d] = {f: {"before": float(was[f]), "after": float(now[f]), **per[f]} for f in FIGURES}
    return out


def interval(x: dict, width: int = 0) -> str:
    """``+2.4 [+1.2, +3.7]*`` in points (``*``: the interval excludes 0), or ``+2.4`` without
    an interval; ``width``: of each bound, padded with spaces (aligned columns)."""
    if x["low"] is None:
        return f"{100 * x['diff']:+.1f}"
    star = "*" if x["low"] > 0 or x["high"] < 0 else ""
    low, high = (f"{100 * x[k]:+{width}.1f}" for k in ("low", "high"))
    return f"{100 * x['diff']:+.1f} [{low}, {high}]{star}"


def inscriptions(rows: list[dict]) -> int:
    """The inscriptions the gaps of ``rows`` come from (the text id before ``#``)."""
    return len({r["text"].split("#", 1)[0] for r in rows})


def compare(
    before: dict,
    after: dict,
    corpus: str | None,
    half: str,
    resamples: int,
    without_twins: bool = False,
) -> list[str]:
    """The lines of the comparison (``scripts/benchmark_compare.py``'s default output). Raises
    :class:`CompareError` with the reason when the two runs' gaps differ."""
    lines = []
    for protocol in protocols(before, after):
        names = decoders(before, after, protocol)
        rows = paired_rows(before, after, protocol, names, corpus, half, without_twins)
        if not rows:
            continue
        per = gains(rows, names, resamples)
        lines.append(
            f"{protocol}: {len(rows):,} gaps of {inscriptions(rows)} inscriptions ({half} half"
            f"{', ' + corpus if corpus else ''}"
            f"{', without the texts that have a training twin' if without_twins else ''}); "
            "after − before, 95 % paired-bootstrap interval"
        )
        for d in names:
            told = [
                f"{f} {100 * x['before']:.1f} -> {100 * x['after']:.1f} ({interval(x, 5)})"
                for f, x in per[d].items()
            ]
            lines.append(f"  {d:<10} " + ";  ".join(told))
    return lines


def per_corpus_table(
    before: dict,
    after: dict,
    half: str,
    resamples: int,
    figure: str = "top1",
    names: list[str] | None = None,
    without_twins: bool = False,
) -> list[str]:
    """The Markdown table of ``scripts/benchmark_compare.py --per-corpus``: per protocol, a row
    per corpus and one for all of them; per decoder of ``names`` (None: all both runs scored)
    ``figure`` before → after in points and after − before with its 95 % interval. Raises
    :class:`CompareError` for a decoder not both runs scored or gaps that differ."""
    cols = names
    lines: list[str] = []
    for protocol in protocols(before, after):
        have = decoders(before, after, protocol)
        cols = names or have
        missing = [d for d in cols if d not in have]
        if missing:
            raise CompareError(
                f"protocol {protocol}: decoder(s) {', '.join(missing)} not "
                f"scored by both runs; they scored {', '.join(have)}"
            )
        if not lines:
            head = [DECODER_NAMES.get(d, d) + f" {figure}" for d in cols]
            lines.append("| protocol | corpus | gaps (inscriptions) | " + " | ".join(head) + " |")
            lines.append("|---|---|---:|" + "---:|" * len(cols))
        for corpus in [*corpora(after), None]:
            rows = paired_rows(before, after, protocol, cols, corpus, half, without_twins)
            if not rows:
                continue
            per = gains(rows, cols, resamples)
            cells = [
                f"{100 * per[d][figure]['before']:.1f} → {100 * per[d][figure]['after']:.1f}, "
                f"{interval(per[d][figure])}"
                for d in cols
            ]
            lines.append(
                f"| {PROTOCOL_LABELS.get(protocol, protocol)} | {corpus or 'all'} | "
                f"{len(rows):,} ({inscriptions(rows)}) | " + " | ".join(cells) + " |"
            )
    return lines


def matrix_table(
    full: dict,
    without: dict[str, dict],
    protocol: str,
    decoder: str,
    half: str,
    resamples: int,
    figure: str = "top1",
    without_twins: bool = False,
) -> list[str]:
    """What each tier adds, corpus by corpus (``scripts/benchmark_matrix.py``): the Markdown
    table of ``protocol`` with a row per name of ``without`` (a tier; its value the run on the
    shards without it, ``full`` the run with every tier) and a column per corpus of ``full``
    and one for all of them; each cell ``decoder``'s ``figure`` of ``full`` minus that without
    the tier, in points, with its 95 % interval (``*``: it excludes 0). A first row gives the
    gaps (inscriptions) per corpus and a last one ``full``'s own figure. Raises
    :class:`CompareError` for a run without ``protocol`` or ``decoder``, or gaps that differ."""
    if not without:
        raise CompareError("no run without a tier to compare with: give at least one")
    cols = [*corpora(full), None]
    for name, run in without.items():
        if protocol not in run["protocols"] or protocol not in full["protocols"]:
            raise CompareError(f"protocol {protocol}: not run both with and without {name}")
        if decoder not in decoders(run, full, protocol):
            raise CompareError(
                f"protocol {protocol}: decoder {decoder} not scored both with and without {name}; "
                f"they scored {', '.join(decoders(run, full, protocol))}"
            )
    label = PROTOCOL_LABELS.get(protocol, protocol)
    lines = [
        f"| {label}: {DECODER_NAMES.get(decoder, decoder)} {figure}, with all − without | "
        + " | ".join(c or "all" for c in cols)
        + " |",
        "|---|" + "---:|" * len(cols),
    ]
    sizes: list[str] = []
    own: list[str] = []
    for corpus in cols:  # the run with every tier alone: its gaps and its figure
        rows = paired_rows(full, full, protocol, [decoder], corpus, half, without_twins)
        sizes.append(f"{len(rows):,} ({inscriptions(rows)})" if rows else "0")
        if rows:
            fig = pooled_figures(*gap_arrays(rows, f"{decoder}@after")[:3], ks=[1, 20])[figure]
            own.append(f"{100 * float(fig):.1f}")
        else:
            own.append("–")
    lines.append("| gaps (inscriptions) | " + " | ".join(sizes) + " |")
    for name, run in without.items():
        cells = []
        for corpus in cols:
            rows = paired_rows(run, full, protocol, [decoder], corpus, half, without_twins)
            cells.append(
                interval(gains(rows, [decoder], resamples)[decoder][figure]) if rows else "–"
            )
        lines.append(f"| without {name} | " + " | ".join(cells) + " |")
    lines.append(f"| with all: {figure} | " + " | ".join(own) + " |")
    return lines
