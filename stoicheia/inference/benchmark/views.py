"""The benchmark's views: the same gaps seen by half of the dev set and with or without twins.

Every gap of a result made with the halves (:mod:`.halves`) carries, in its entry of
the protocol's ``examples``, the ``half`` of its inscription (``"selection"`` or ``"report"``)
and ``twin``: whether its text has a near-duplicate among the training records
(:mod:`.contamination`). A view is a subset of those gaps, and its figures are
recomputed from the per-gap entries exactly as the benchmark computes its own
(:func:`~.scoring.summarise_rows`):

* ``report``: the gaps of the report half, the headline (the fusion weights were chosen on
  the other half);
* ``report_without_twins``: the same, less the gaps of texts that have a training twin;
* ``selection``: the gaps of the selection half, on which the weights were chosen (the
  fused row there is an upper estimate);
* ``all_without_twins``: every gap of texts without a twin (both halves);
* ``report:CORPUS`` (one per corpus, when the dev set holds texts of two corpora or more):
  the report half's gaps of the texts of one corpus (``I.Sicily``, ``IOSPE``, ``IGCyr``,
  ``I.Cret.``, ``IIP``: the ``corpus`` of each gap's entry, from the EpiDoc header via
  ``stats.json``), so that each region's figures and intervals stand apart.

Each view holds ``{"gaps", "inscriptions", "texts", "decoders": {name: figures, by length
band included}}``; :func:`~.bootstrap.add_differences` adds its intervals.
"""

from __future__ import annotations

from collections.abc import Callable

from stoicheia.inference.benchmark.protocols import inscription_of
from stoicheia.inference.benchmark.scoring import summarise_rows

#: view -> which gaps (per-gap entries of ``examples``) it holds, in the order reported.
VIEWS: dict[str, Callable[[dict], bool]] = {
    "report": lambda r: r.get("half") == "report",
    "report_without_twins": lambda r: r.get("half") == "report" and not r.get("twin"),
    "selection": lambda r: r.get("half") == "selection",
    "all_without_twins": lambda r: not r.get("twin"),
}
#: how the table names each view (the parenthesis where fusion weights were chosen)
VIEW_NAMES = {
    "report": ("report half", " (headline; the fusion weights were chosen on the other half)"),
    "report_without_twins": ("report half without the texts that have a training twin", ""),
    "selection": (
        "selection half",
        " (the fusion weights were chosen on these gaps: an upper estimate)",
    ),
    "all_without_twins": ("both halves without the texts that have a training twin", ""),
}


#: the prefix of a per-corpus view: ``report:IOSPE``
CORPUS_VIEW = "report:"


def view_name(view: str, fused: bool) -> str:
    """How the table names ``view``; ``fused``: fusion weights were chosen on the selection
    half (the name then says which half chose them)."""
    if view.startswith(CORPUS_VIEW):
        return f"report half, {view[len(CORPUS_VIEW) :]} only"
    name, why = VIEW_NAMES[view]
    return name + (why if fused else "")


def _keep(view: str) -> Callable[[dict], bool]:
    if view.startswith(CORPUS_VIEW):
        corpus = view[len(CORPUS_VIEW) :]
        return lambda r: r.get("half") == "report" and r.get("corpus") == corpus
    return VIEWS[view]


def rows_of(examples: list[dict], view: str) -> list[dict]:
    """The per-gap entries of ``examples`` in ``view`` (a key of :data:`VIEWS`, or
    ``report:CORPUS``). Raises ``KeyError`` for an unknown view."""
    keep = _keep(view)
    return [r for r in examples if keep(r)]


def corpus_views(examples: list[dict]) -> list[str]:
    """The per-corpus views of ``examples``: ``report:CORPUS`` for each corpus of their
    entries, sorted, when there are two or more (one corpus: the report view itself)."""
    corpora = sorted({str(r["corpus"]) for r in examples if r.get("corpus")})
    return [CORPUS_VIEW + c for c in corpora] if len(corpora) > 1 else []


def add_views(result: dict) -> dict:
    """Add ``views`` (module docstring) to each protocol of a benchmark result whose per-gap
    entries carry their ``half``, in place, and return ``result``; a result written before the
    halves is returned as it is. The figures of a view of no gap are ``{"gaps": 0, ...}``."""
    for res in result.get("protocols", {}).values():
        examples = res.get("examples") or []
        if not examples or any("half" not in r for r in examples):
            continue
        decoders = list(res.get("decoders", {}))
        known = not any("length_right" in f for f in res["decoders"].values())
        views = {}
        for view in [*VIEWS, *corpus_views(examples)]:
            rows = rows_of(examples, view)
            views[view] = {
                "gaps": len(rows),
                "inscriptions": len({inscription_of(str(r["text"])) for r in rows}),
                "texts": len({r["text"] for r in rows}),
                "decoders": {name: summarise_rows(rows, name, known) for name in decoders},
            }
        res["views"] = views
    return result


__all__ = [
    "CORPUS_VIEW",
    "VIEWS",
    "VIEW_NAMES",
    "add_views",
    "corpus_views",
    "rows_of",
    "view_name",
]
