"""The parallels of a gap as console lines (``stoicheia restore``, under each gap)."""

from __future__ import annotations

from stoicheia.inference.parallels.search import GapParallels


def parallel_lines(found: GapParallels, top: int = 3, per_fill: int = 2) -> list[str]:
    """Lines for one gap: its ``top`` fills from the parallels, each with what supplies it (the
    source, the context matched on each side, the passage as printed with the matched letters
    between ``⟪ ⟫`` and the fill between ``⸢ ⸣``), indented under the gap's other lines."""
    rows = found.to_json(top=top, per_fill=per_fill)
    if not rows:
        ctx = len(found.left) + len(found.right)
        return [f"     parallels: none in the corpus ({ctx} letters of context searched)"]
    lines = ["     parallels (corpus passages with the same letters on both sides):"]
    for r in rows:
        shown = r["parallels"][0]["supplies"] if r["parallels"] else r["fill"]
        lines.append(
            f"       {shown}: {r['letters_matched']} letters matched ({r['sides'][0]} before, "
            f"{r['sides'][1]} after), {r['sources']} source{'s' if r['sources'] != 1 else ''}, "
            f"{r['prob']:.0%} of the parallels"
            + (
                "; left out: its word division, between the text's, leaves a letter alone"
                if r.get("lone_letter") is not None
                else ""
            )
        )
        for p in r["parallels"]:
            where = p["label"] + (f" {p['url']}" if p["url"] else "")
            lines.append(f"         {where} [{p['tier']}]: {p['passage']}")
    return lines


__all__ = ["parallel_lines"]
