"""The parallels of a gap as console lines (``stoicheia restore``, under each gap)."""

from __future__ import annotations

from stoicheia.inference.parallels.search import GapParallels


def _one_side(before: int, after: int) -> tuple[str, str] | None:
    """``("before", "after")`` when only the letters before the gap were there to match,
    ``("after", "before")`` when only those after it, else ``None``."""
    if before and not after:
        return "before", "after"
    if after and not before:
        return "after", "before"
    return None


def matched_where(before: int, after: int) -> str:
    """Where the parallels' letters were matched, for a heading, from the letters of context
    the search had ``before`` and ``after`` the gap: ``"on both sides"``, or for a gap with
    text on one side only (a stone's edge, a lacuna beside it) ``"before the gap; nothing
    after it to match"`` / ``"after the gap; nothing before it to match"``. The page's
    ``matchedWhere`` (stoicheia/serve/static/app.js) says the same."""
    side = _one_side(before, after)
    return "on both sides" if side is None else f"{side[0]} the gap; nothing {side[1]} it to match"


def parallel_lines(found: GapParallels, top: int = 3, per_fill: int = 2) -> list[str]:
    """Lines for one gap: its ``top`` fills from the parallels, each with what supplies it (the
    source, the context matched on each side, the passage as printed with the matched letters
    between ``⟪ ⟫`` and the fill between ``⸢ ⸣``), indented under the gap's other lines. The
    heading says where the letters were matched (:func:`matched_where`)."""
    rows = found.to_json(top=top, per_fill=per_fill)
    before, after = len(found.left), len(found.right)
    if not rows:
        side = _one_side(before, after)
        ctx = (
            f"{before + after} letters of context searched"
            if side is None
            else f"{before + after} letters of context {side[0]} the gap searched; nothing "
            f"{side[1]} it to match"
        )
        return [f"     parallels: none in the corpus ({ctx})"]
    lines = [
        f"     parallels (corpus passages with the same letters {matched_where(before, after)}):"
    ]
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


__all__ = ["matched_where", "parallel_lines"]
