"""``stoicheia evaluate``: a trained model's held-out figures, per tier and per work.

Two passes over the records:

1. **Reference noise** (the training evaluators' batches,
   :func:`stoicheia.data.eval_batches.build_eval_batches`, and their metrics,
   :func:`stoicheia.model.metrics.eval_metrics`): iid masking at rate ``t`` (0.30), every aux
   channel hidden. Bits per character over the masked letters, boundary F1,
   diacritic and punctuation accuracy per slot and macro-averaged over classes.
2. **Masked words** (:func:`stoicheia.data.eval_batches.build_word_batches`): whole words become
   known-width lacunae, the rest of the letters stay visible (channels hidden). A word counts
   as restored at top-1 when the most likely letter sequence (letters scored independently
   from one forward pass, :func:`stoicheia.inference.restore.decoding.kbest_independent`) equals it,
   at top-5 when it is among the 5 best. Beside it, the same words filled by a letter n-gram
   (:class:`stoicheia.inference.ngram.LetterNgram`) trained on the training shards, and the
   letter-unigram entropy of the training mix (what ``bits_per_char`` must beat; the caller
   adds it as ``unigram_entropy_bits``, :func:`stoicheia.data.corpus_stats.run_unigram_bits`).

Every record is noised from a seed of its own identity (``(seed, record_key(id))``, a hash
of the record id, :func:`stoicheia.data.eval_batches.record_key`), and each work's records are
packed among themselves, so a group's figures do not depend on which other records or groups
are evaluated beside it. A figure with nothing to score in a group (no supervised slot of
its kind, no masked word; boundary F1 with no word end in the targets or the predictions) is
``nan`` in the result and "-" in the table, never 0 or 1.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from stoicheia.data.eval_batches import build_eval_batches, build_word_batches, record_key
from stoicheia.data.eval_sets import EvalRecord, read_split_records
from stoicheia.inference.loading import LoadedModel
from stoicheia.inference.ngram import LetterNgram, ids_to_letters
from stoicheia.inference.restore.decoding import kbest_independent
from stoicheia.model.metrics import EVAL_METRICS, eval_metrics, update_metric
from stoicheia.text.alphabet import NUM_LETTERS

log = logging.getLogger(__name__)

WORD_METRICS = ("word_top1", "word_top5", "ngram_top1", "ngram_top5")


@dataclass
class EvalOptions:
    """Settings of :func:`evaluate`.

    ``seq_len``: row length in slots; ``rows``: rows per forward pass; ``t``: reference masking
    rate; ``seed``: noise seed (a record seeded by ``(seed, record_key(record id))``);
    ``word_rate``: probability that a word of >= 2 letters is masked in the word pass (at least
    ``word_gap`` known letters between masked words); ``top_k``: the wider of the two
    exact-match ranks (5).
    """

    seq_len: int = 512
    rows: int = 8
    t: float = 0.30
    seed: int = 1234
    word_rate: float = 0.15
    word_gap: int = 8
    top_k: int = 5


def train_ngram(
    shard_root: str | Path,
    tier_weights: dict[str, float] | None,
    order: int = 5,
    max_letters: int = 20_000_000,
) -> tuple[LetterNgram, dict[str, Any]]:
    """A :class:`LetterNgram` of ``order`` fitted on the ``train`` split of the shards, at most
    ``max_letters`` letters, shared among the tiers with a positive weight in proportion to
    their weight (all tiers alike when ``tier_weights`` is None); records in shard order.
    A tier added after training (``stoicheia add-corpus``: ``stats.json``'s ``added_tiers``)
    that ``tier_weights`` does not name is counted whole, beyond ``max_letters``, as
    ``add-corpus`` extends a run's ``ngram.npz`` with it.
    Returns the model and what it was trained on (shards, letters per tier)."""
    root = Path(shard_root)
    present = sorted(p.name for p in root.iterdir() if (p / "train" / "index.json").exists())
    weights = {
        t: w
        for t, w in (tier_weights or {t: 1.0 for t in present}).items()
        if w > 0 and t in present
    }
    if not weights:
        raise FileNotFoundError(
            f"{root}: no train shards of the tiers {sorted(tier_weights or {})}"
        )
    total = sum(weights.values())
    seqs: list[np.ndarray] = []
    used: dict[str, int] = {}
    for tier, w in weights.items():
        cap = int(max_letters * w / total)
        n = 0
        for rec in _iter_split(root, tier):
            if n >= cap:
                break
            seqs.append(rec.planes.chars)
            n += len(rec.planes)
        used[tier] = n
    for tier in added_tiers(root):
        if tier in present and tier not in weights:
            n = 0
            for rec in _iter_split(root, tier):
                seqs.append(rec.planes.chars)
                n += len(rec.planes)
            used[tier] = n
    model = LetterNgram(order).fit(seqs)
    return model, {"shards": str(root), "order": order, "letters": used}


def added_tiers(root: str | Path) -> list[str]:
    """The tiers ``stoicheia add-corpus`` added to the shards at ``root`` after conversion
    (``stats.json``'s ``added_tiers``), in the order added; ``[]`` without ``stats.json``."""
    import json

    try:
        stats = json.loads((Path(root) / "stats.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return list(stats.get("added_tiers") or {})


def iter_train_chars(root: str | Path, tier: str):
    """The ``chars`` plane (uint8 ``(n,)``) of every train sample of ``tier`` under ``root``,
    in shard order (what :func:`train_ngram` counts)."""
    for rec in _iter_split(Path(root), tier):
        yield rec.planes.chars


def _iter_split(root: Path, tier: str):
    from stoicheia.data.eval_sets import local_val_dataset
    from stoicheia.data.shards import decode_planes

    ds = local_val_dataset(str((root / tier / "train").resolve()))
    for i in range(ds.num_samples):
        s = ds.get_item(i)
        yield EvalRecord(decode_planes(s), tier, str(s["work"]), str(s["id"]))


def _scored(metric: Any) -> bool:
    """True if ``metric`` saw something to score: a supervised slot (``count``), and for
    boundary F1 a word end in the targets or the predictions (F1 is undefined otherwise;
    torchmetrics' 0 would read as "every boundary missed")."""
    if hasattr(metric, "tp"):
        return int(2 * metric.tp + metric.fp + metric.fn) > 0
    count = getattr(metric, "count", None)
    return count is None or int(count.sum()) > 0


def _groups(rec: EvalRecord) -> tuple[str, str, str]:
    return "all", f"tier {rec.tier}", f"work {rec.tier}/{rec.work}"


def evaluate(
    model: LoadedModel,
    records: list[EvalRecord],
    options: EvalOptions | None = None,
    ngram: LetterNgram | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Evaluate ``model`` on ``records`` (module docstring).

    Returns ``{"groups": {name: {metric: value, "records": n, "letters": n, "masked_letters": n,
    "words": n}}, "options": ..., "ngram_order": ... (if ``ngram``)}``; group names are
    ``all``, ``tier T`` and ``work T/W``. Metric values are floats (``nan`` where nothing was
    scored, e.g. dia accuracy on a source without accents, boundary F1 with no word end).
    Each record is noised by its own id (:func:`record_key`), so a group's values do not
    depend on the other records given. Raises ``ValueError`` for no records.
    """
    if not records:
        raise ValueError("evaluate: no records to evaluate")
    opt = options or EvalOptions()
    say = progress or (lambda msg: None)
    metrics: dict[str, dict[str, Any]] = defaultdict(eval_metrics)
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    by_work: dict[str, list[int]] = defaultdict(list)
    for k, rec in enumerate(records):
        by_work[_groups(rec)[2]].append(k)
        for g in _groups(rec):
            counts[g]["records"] += 1
            counts[g]["letters"] += len(rec.planes)

    say(f"reference noise (t = {opt.t}) on {len(records)} records in {len(by_work)} works")
    for ks in by_work.values():
        names = _groups(records[ks[0]])
        keys = [record_key(records[k].id) for k in ks]
        batches = build_eval_batches(
            [records[k].planes for k in ks], opt.seq_len, opt.rows, opt.t, opt.seed, keys=keys
        )
        for batch in batches:
            out = model(batch)
            out = {h: v.cpu() for h, v in out.items()}
            for g in names:
                for m in metrics[g].values():
                    update_metric(m, out, batch)
                counts[g]["masked_letters"] += int((batch["tgt_chars"] >= 0).sum())

    say(
        f"masked words (rate {opt.word_rate}): model"
        + (f" and {ngram.order}-gram" if ngram else "")
    )
    hits: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    batches, words = build_word_batches(
        [r.planes for r in records],
        opt.seq_len,
        opt.rows,
        opt.word_rate,
        opt.seed,
        opt.word_gap,
        keys=[record_key(r.id) for r in records],
    )
    by_batch: dict[int, list[Any]] = defaultdict(list)
    for w in words:
        by_batch[w.batch].append(w)
    for b, batch in enumerate(batches):
        logp = (
            torch.log_softmax(model(batch)["char"][..., :NUM_LETTERS].float(), dim=-1).cpu().numpy()
        )
        chars = batch["tgt_chars"].numpy()
        inputs = batch["chars"].numpy()
        for w in by_batch[b]:
            truth = chars[w.row, w.start : w.end]
            best = kbest_independent(logp[w.row, w.start : w.end], opt.top_k)
            ranks = [np.array_equal(ids, truth) for ids, _ in best]
            row_hits = {"word_top1": ranks[0], "word_top5": any(ranks)}
            if ngram is not None:
                n1 = ngram.order - 1
                left = inputs[w.row, max(0, w.start - n1) : w.start]  # shorter at a record start
                right = inputs[w.row, w.end : w.end + n1]  # PAD or MASK ends it (topk_fill)
                cands = ngram.topk_fill(left, w.end - w.start, right, k=opt.top_k)
                text = ids_to_letters(truth)
                names_ = [c for c, _ in cands]
                row_hits["ngram_top1"] = names_[0] == text
                row_hits["ngram_top5"] = text in names_
            for g in _groups(records[w.record]):
                counts[g]["words"] += 1
                for key, hit in row_hits.items():
                    hits[g][key] += int(hit)

    groups: dict[str, dict[str, Any]] = {}
    order = sorted(counts, key=lambda g: (g != "all", not g.startswith("tier"), g))
    for g in order:
        row: dict[str, Any] = dict(counts[g])
        for name, m in metrics[g].items():
            row[name] = float(m.compute()) if _scored(m) else math.nan
        n = counts[g].get("words", 0)
        for key in WORD_METRICS:
            if key.startswith("ngram") and ngram is None:
                continue
            row[key] = hits[g][key] / n if n else math.nan
        groups[g] = row
    result: dict[str, Any] = {"groups": groups, "options": vars(opt).copy()}
    if ngram is not None:
        result["ngram_order"] = ngram.order
    return result


#: Columns of the readable table: (key, heading, format).
TABLE_COLUMNS = (
    ("records", "records", "{:d}"),
    ("masked_letters", "masked", "{:d}"),
    ("bits_per_char", "bits/char", "{:.4f}"),
    ("boundary_f1", "bound F1", "{:.4f}"),
    ("dia_acc", "dia acc", "{:.4f}"),
    ("dia_macro_acc", "dia macro", "{:.4f}"),
    ("punct_acc", "punct acc", "{:.4f}"),
    ("punct_macro_acc", "punct macro", "{:.4f}"),
    ("words", "words", "{:d}"),
    ("word_top1", "word@1", "{:.3f}"),
    ("word_top5", "word@5", "{:.3f}"),
    ("ngram_top1", "ngram@1", "{:.3f}"),
    ("ngram_top5", "ngram@5", "{:.3f}"),
)


def format_table(result: dict[str, Any], max_works: int | None = None) -> list[str]:
    """The result of :func:`evaluate` as aligned text lines: one row per group (``all``, each
    tier, each work; ``max_works`` keeps the works with most records), then a line with the
    baselines."""
    groups = result["groups"]
    names = [g for g in groups if not g.startswith("work ")]
    works = [g for g in groups if g.startswith("work ")]
    works.sort(key=lambda g: -groups[g]["records"])
    if max_works is not None and len(works) > max_works:
        names += works[:max_works]
        dropped = len(works) - max_works
    else:
        names += works
        dropped = 0
    cols = [c for c in TABLE_COLUMNS if any(c[0] in groups[g] for g in names)]
    width = max(len(n) for n in names)
    head = f"{'':<{width}}  " + "  ".join(f"{h:>{max(len(h), 7)}}" for _, h, _ in cols)
    lines = [head]
    for g in names:
        cells = []
        for key, h, fmt in cols:
            v = groups[g].get(key)
            text = "-" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)
            cells.append(f"{text:>{max(len(h), 7)}}")
        lines.append(f"{g:<{width}}  " + "  ".join(cells))
    if dropped:
        lines.append(f"({dropped} more works in the JSON file)")
    o = result["options"]
    base = (
        f"reference noise: iid masking t = {o['t']}, seed {o['seed']}; masked words: "
        f"rate {o['word_rate']}, words of >= 2 letters, letters scored from one forward pass"
    )
    lines.append(base)
    baselines = []
    if result.get("unigram_entropy_bits") is not None:
        baselines.append(
            "letter-unigram entropy of the training mix "
            f"{result['unigram_entropy_bits']:.3f} bits (bits/char must beat it)"
        )
    if "ngram_order" in result:
        baselines.append(
            f"ngram@k: a {result['ngram_order']}-gram letter model (Witten-Bell) of the "
            f"training shards, {sum(result.get('ngram', {}).get('letters', {}).values()):,} letters"
        )
    if baselines:
        lines.append("baselines: " + "; ".join(baselines))
    return lines


def is_shard_folder(path: str | Path) -> bool:
    """True if ``path`` is the output folder of ``stoicheia convert`` (a ``stats.json``, or a
    ``TIER/train`` or ``TIER/val`` folder with an MDS ``index.json``)."""
    p = Path(path)
    if not p.is_dir():
        return False
    if (p / "stats.json").exists():
        return True
    return any(
        (t / s / "index.json").exists() for t in p.iterdir() if t.is_dir() for s in ("train", "val")
    )


def _missing_input(given: str) -> str:
    """The message for an input path that does not exist, naming it exactly as given."""
    m = re.fullmatch(r"(.+?)((?::\d*)+)", given)
    if m and Path(m.group(1)).exists():
        return (
            f"{given!r}: no such file or folder ({m.group(1)!r} exists: drop the "
            f"{m.group(2)!r} after it)"
        )
    return f"{given!r}: no such file or folder; check the path"


def _tiers_without_index(root: Path, split: str, present: list[str]) -> list[str]:
    """Tiers that the folder's ``stats.json`` says have ``split`` records but that have no
    readable index there (a damaged or half-copied shard folder)."""
    try:
        tiers = json.loads((root / "stats.json").read_text(encoding="utf-8")).get("tiers", {})
    except (OSError, ValueError, AttributeError):
        return []
    return sorted(
        t
        for t, st in tiers.items()
        if isinstance(st, dict)
        and (st.get("records_kept") or {}).get(split, 0) > 0
        and t not in present
    )


def load_records(
    inputs: list[str],
    split: str | None = None,
    tiers: list[str] | None = None,
    max_records: int | None = None,
) -> tuple[list[EvalRecord], dict[str, Any]]:
    """The records to evaluate: one shard folder (its ``split`` records, default ``val``, of
    ``tiers``, default all that have records) or raw source files / folders (converted on
    the fly, tier ``input``). ``max_records`` caps the records per tier.

    Returns the records and a description: ``{"shards", "split", "tiers"}``, or ``{"files",
    "rejected": {reason: count}, "not_read": [files of the folders that are no sources]}``.

    Raises ``FileNotFoundError`` for an input that does not exist (named exactly as given) or
    shards without records of ``split``; ``ValueError`` for a shard folder given beside other
    inputs, a tier the shards have no ``split`` records of (the message lists those they
    have), ``tiers``/``split`` given for raw files, ``max_records < 1`` and no Greek record;
    :class:`stoicheia.sources.SourceError` for a file the readers cannot read.
    """
    from stoicheia.data.eval_sets import read_text_records
    from stoicheia.data.shard_index import index_samples

    if max_records is not None and max_records < 1:
        raise ValueError(
            f"--max-records {max_records}: give at least 1 record per tier "
            "(or leave it out for all)"
        )
    missing = [x for x in inputs if not Path(x).exists()]
    if missing:
        more = f" ({len(missing) - 1} more inputs missing)" if len(missing) > 1 else ""
        raise FileNotFoundError(f"--shards {_missing_input(str(missing[0]))}{more}")
    seen: dict[Path, str] = {}
    for x in inputs:
        if Path(x).resolve() in seen:
            raise ValueError(
                f"--shards {x!r} is given twice ({seen[Path(x).resolve()]!r} too): its records "
                "would count twice; give it once"
            )
        seen[Path(x).resolve()] = x
    shard_dirs = [x for x in inputs if is_shard_folder(x)]
    if shard_dirs and len(inputs) > 1:
        others = [x for x in inputs if x != shard_dirs[0]]
        raise ValueError(
            f"--shards {shard_dirs[0]!r} is a shard folder (output of `stoicheia convert`), "
            f"given beside {', '.join(map(repr, others[:3]))}"
            f"{' ...' if len(others) > 3 else ''}: give one shard folder alone, or raw source "
            "files only (run evaluate once for each)"
        )
    if shard_dirs:
        root = Path(shard_dirs[0])
        split = split or "val"
        dirs = sorted(p for p in root.iterdir() if p.is_dir())
        present = [
            p.name
            for p in dirs
            if (p / split / "index.json").exists() and index_samples(p / split) > 0
        ]
        if not present:
            have = sorted(
                f"{p.name}/{s}"
                for p in dirs
                for s in ("train", "val")
                if (p / s / "index.json").exists()
            )
            raise FileNotFoundError(
                f"{root}: no tier has {split} records "
                f"(the shards hold {', '.join(have) or 'no split'}); "
                + (
                    "give --split train, or convert with --val-fraction > 0"
                    if split == "val"
                    else "give another shard folder"
                )
            )
        damaged = _tiers_without_index(root, split, present)
        if damaged:
            raise FileNotFoundError(
                f"{root}: stats.json lists {split} records of {', '.join(damaged)}, but "
                f"{damaged[0]}/{split}/index.json is missing or empty: the shard folder is "
                "damaged; convert it again"
            )
        tiers = list(dict.fromkeys(tiers)) if tiers else tiers  # a tier named twice counts once
        absent = [t for t in tiers or [] if t not in present]
        if absent:
            raise ValueError(
                f"--tiers {' '.join(absent)}: the shards at {root} have no {split} records of "
                f"{'that tier' if len(absent) == 1 else 'those tiers'}; "
                f"tiers with {split} records: {', '.join(present)}"
            )
        chosen = list(tiers) if tiers else present
        recs = read_split_records(root, split, chosen, max_records)
        return recs, {"shards": str(root), "split": split, "tiers": chosen}
    if tiers:
        raise ValueError(
            f"--tiers {' '.join(tiers)}: tiers are those of a shard folder, and "
            f"{', '.join(inputs)} are raw source files (read as one tier, 'input'): "
            "leave --tiers out"
        )
    if split is not None:
        raise ValueError(
            f"--split {split}: splits are those of a shard folder, and {', '.join(inputs)} "
            "are raw source files: leave --split out"
        )
    not_read: list[Path] = []
    recs, rejected = read_text_records(inputs, not_read=not_read)
    if max_records is not None:
        recs = recs[:max_records]
    return recs, {
        "files": list(inputs),
        "rejected": dict(rejected),
        "not_read": [str(p) for p in not_read],
    }


__all__ = [
    "EVAL_METRICS",
    "EvalOptions",
    "evaluate",
    "format_table",
    "is_shard_folder",
    "load_records",
    "train_ngram",
]
