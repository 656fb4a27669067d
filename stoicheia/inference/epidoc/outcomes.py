"""What became of the gaps of a restored EpiDoc file (:class:`GapOutcome`,
:class:`EpiDocResult`), and the error for a file that cannot be restored
(:class:`EpiDocRestoreError`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EpiDocRestoreError", "EpiDocResult", "GapOutcome", "Readings", "by_reason"]

#: a restored gap's readings: ``(letters, probability, [(alternative, probability)])``, the
#: best first (:func:`~.restore.gap_readings`)
Readings = tuple[str, float, list[tuple[str, float]]]


def by_reason(reasons: Iterable[str] | Mapping[str, int]) -> list[tuple[str, int]]:
    """Gaps counted by reason, the most frequent first (then by name): ``reasons`` one reason
    per gap, or the counts already made. What ``restore --epidoc``'s summary line and the page
    say of the gaps left or refused (``below the confidence floor --min-probability 0.25,
    readings proposed 5, lines 2``)."""
    counts = Counter(reasons) if not isinstance(reasons, Mapping) else Counter(dict(reasons))
    return sorted(
        ((k or "no reason given", v) for k, v in counts.items() if v),
        key=lambda kv: (-kv[1], kv[0]),
    )


class EpiDocRestoreError(ValueError):
    """A file that cannot be restored as it is (not UTF-8, malformed XML, not EpiDoc, no Greek
    edition); the message names the file and the fix."""


@dataclass
class GapOutcome:
    """What became of one ``<gap>`` of the Greek edition.

    ``index``: its order among the gaps the reader met (0-based); ``line``: its line in the
    file; ``start``/``end``: byte offsets of the element in the original file (end exclusive);
    ``notation``: its Leiden form (``[---]``, ``[.5.]``, ``[-ca.5-]``, ``[.3-6.]``);
    ``status``: ``"restored"``, ``"left"`` or ``"refused"``; ``reason``: why it was left or
    refused (``""`` when restored); ``fill``: the letters written (as printed by the model:
    accents, word breaks); ``prob``: its probability among the top-k restorations;
    ``alternatives``: the other readings, ``[(letters, probability)]``, most probable first.
    """

    index: int
    line: int
    start: int
    end: int
    notation: str
    status: str
    reason: str = ""
    fill: str | None = None
    prob: float | None = None
    alternatives: list[tuple[str, float]] = field(default_factory=list)


@dataclass
class EpiDocResult:
    """What :func:`~.restore.restore_epidoc` returns: ``xml`` the restored file (bytes, UTF-8,
    equal to the input outside the edited spans), ``gaps`` one :class:`GapOutcome` per ``<gap>``
    of the Greek edition, in document order; ``source`` the file (or ``"<xml>"``)."""

    source: str
    xml: bytes
    gaps: list[GapOutcome]

    def count(self, status: str) -> int:
        """Gaps of one status (``"restored"``, ``"left"``, ``"refused"``)."""
        return sum(1 for g in self.gaps if g.status == status)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``source``, ``gaps`` (the fields of :class:`GapOutcome`; alternatives
        as ``{"fill", "prob"}``) and the counts; the XML itself is left out."""
        return {
            "source": self.source,
            "restored": self.count("restored"),
            "left": self.count("left"),
            "refused": self.count("refused"),
            "gaps": [
                {
                    **{k: v for k, v in vars(g).items() if k != "alternatives"},
                    "alternatives": [{"fill": f, "prob": p} for f, p in g.alternatives],
                }
                for g in self.gaps
            ],
        }
