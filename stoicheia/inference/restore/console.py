"""The console lines of a restoration (``stoicheia restore`` without ``--json``): the input,
each restoration with its probability (a percentage, as every figure) and a line of ``^`` under
the restored letters, and per gap its widths, the editor's reading scored, its alternatives and
its letters' probabilities.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from stoicheia.inference.restore.input_style import input_style
from stoicheia.inference.restore.rendering import screen_width

if TYPE_CHECKING:
    from stoicheia.inference.restore import RestoreResult


def _pct(p: float) -> str:
    return f"{100 * p:.0f}%" if p >= 0.005 else "<1%"


def reading_pct(p: float) -> str:
    """A whole restoration's probability as a percentage, the unit of every other figure
    ``restore`` prints: whole per cent from 1 % (``71%``), two significant digits below
    (``0.56%``, ``0.0031%``: a text of several gaps has small ones, and #k's order must still
    show), ``<0.0001%`` below that."""
    x = 100.0 * p
    if x >= 0.995:
        return f"{x:.0f}%"
    if x >= 1e-4:
        digits = 1 - math.floor(math.log10(x))
        return f"{x:.{digits}f}%"
    return "<0.0001%"


def _under(head: str, text: str, marks: str) -> list[str]:
    """``text`` after ``head``, each of its lines (a text typed line by line) indented under the
    first and followed by its part of ``marks`` (one mark per character on screen, the line
    break counting one), if that part marks anything."""
    pad = " " * len(head)
    out, pos = [], 0
    for k, line in enumerate(text.split("\n")):
        w = screen_width(line)
        out.append((pad if k else head) + line)
        if marks[pos : pos + w].strip():
            out.append(pad + marks[pos : pos + w].rstrip())
        pos += w + 1
    return out


def format_result(result: RestoreResult) -> list[str]:
    """Lines for the console: the input, each restoration with its probability and a line
    of ``^`` under the restored letters, then per gap: its notation as typed, the probability
    of each width (uncertain width), the editor's reading scored, the gap's own alternatives
    and the probability of each letter of the best fill."""
    lines = _under("input     ", result.input, "")
    for i, r in enumerate(result.restorations, 1):
        # "#10" as wide as "#1 ": the restorations stay in one column past the ninth
        lines += _under(f"{f'#{i}':<3}{reading_pct(math.exp(r.logprob)):>8}  ", r.text, r.marks)
    best = result.restorations[0] if result.restorations else None
    upper_text = input_style(result.input).capitals and not result.respace
    if result.gaps:
        lines.append("gaps (each with the others as in #1):")
    for g in result.gaps:
        head = f"  {g.index + 1}. {g.kind} {g.notation}"
        if not g.fixed_width:
            head += f": {g.min_letters} to {g.max_letters} letters"
        if g.width_probs:
            # a width no kept fill has (probability 0) is not listed: '<1%' would say it has some
            top = sorted(((w, p) for w, p in g.width_probs.items() if p > 0), key=lambda t: -t[1])[
                :4
            ]
            head += "; width " + ", ".join(f"{w} {_pct(p)}" for w, p in top)
        lines.append(head)
        if g.editor is not None:
            lines.append(
                f"     editor's reading {g.editor.reading}: {_pct(g.editor.prob)}, "
                f"rank {g.editor.rank} among the model's readings of its width"
            )
        if g.alternatives:
            lines.append(
                "     alternatives: "
                + "  ".join(f"{a.fill} {_pct(a.prob)}" for a in g.alternatives)
            )
        if best is not None and g.letter_probs:
            letters = best.fills[g.index]
            upper = upper_text if g.capitals is None else g.capitals  # None with respace
            if upper:  # the letters as the text shows them
                letters = letters.upper()
            lines.append(
                "     letters: "
                + " ".join(f"{c} {_pct(p)}" for c, p in zip(letters, g.letter_probs, strict=False))
            )
        if g.parallels is not None:
            from stoicheia.inference.parallels.display import parallel_lines

            lines += parallel_lines(g.parallels)
    lines += [f"({n})" for n in result.notes]
    legend = (
        "^ restored letter, . changed reading; percentages: probabilities (#k's: of the whole "
        "restoration, its gaps' readings together)"
    )
    if any(g.parallels is not None and g.parallels.fills for g in result.gaps):
        legend += "; in a parallel, ⟪ ⟫ the letters matched around the gap, ⸢ ⸣ its fill"
    lines.append(legend)
    return lines


__all__ = ["format_result", "reading_pct"]
