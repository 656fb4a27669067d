"""The inputs and the output folder of ``stoicheia convert``
(:func:`stoicheia.data.shards.convert`): the source files of every ``TIER=PATH``, whether an
existing output folder may be replaced, and the kind of a reader's refusal, for the per-input
counts of ``stats.json``."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from stoicheia.data.corpus_stats import TierStats
from stoicheia.sources import SourceError, iter_source_files

__all__ = ["ConvertError", "check_replaceable", "refusal_reason", "source_files"]


class ConvertError(Exception):
    """A source could not be converted; the message names the file and the fix (raised by
    :func:`stoicheia.data.shards.convert`, which exports it)."""


def refusal_reason(error: str) -> str:
    """The kind of a reader's refusal, for counting: ``"malformed XML"``, ``"the file holds
    unresolved merge-conflict markers"``, ... (the message without its file, line and fix)."""
    msg = error.split(". Fix:", 1)[0]
    msg = re.sub(r"^.*?:\d+: ", "", msg, count=1)
    return re.split(r"[:(]", msg, maxsplit=1)[0].strip()[:80]


def source_files(tier: str, paths: Sequence[Path], st: TierStats) -> list[tuple[Path, Path, Path]]:
    """``(source file, its root, the path given)`` for every source file under ``paths`` (the
    root: the directory given, record ids are relative to it); files that are not sources are
    listed in ``st.files_not_read``. Raises :class:`ConvertError` for a missing path or no
    source."""
    found: list[tuple[Path, Path, Path]] = []
    for given in paths:
        given = Path(given)
        if not given.exists():
            raise ConvertError(
                f"{given}: no such file or directory (tier {tier!r}); check the path"
            )
        root = given if given.is_dir() else given.parent
        not_read: list[Path] = []
        try:
            found.extend((f, root, given) for f in iter_source_files([given], skipped=not_read))
        except SourceError as err:
            raise ConvertError(str(err)) from None
        # stats.json is UTF-8: a name that is not is listed escaped
        st.files_not_read.extend(
            str(f).encode("utf-8", "backslashreplace").decode("utf-8") for f in not_read
        )
    if not found:
        raise ConvertError(
            f"tier {tier!r}: no .xml/.conllu/.txt/.jsonl files under {', '.join(map(str, paths))}"
        )
    return found


def check_replaceable(out: Path, inputs: Mapping[str, Sequence[Path]]) -> None:
    """Refuse to replace ``out`` (``--overwrite``) when that would delete anything ``convert``
    did not write there: an input inside it, or an entry other than ``stats.json`` and the
    tier folders its ``stats.json`` names. Raises :class:`ConvertError` listing them."""
    try:
        tiers = set(json.loads((out / "stats.json").read_text(encoding="utf-8")).get("tiers", {}))
    except (OSError, ValueError, AttributeError):
        tiers = set()
    foreign = sorted(
        e.name
        for e in out.iterdir()
        if e.name not in ("stats.json", "parallels") and not (e.is_dir() and e.name in tiers)
    )
    if foreign:
        shown = ", ".join(foreign[:8]) + (
            f" and {len(foreign) - 8} more" if len(foreign) > 8 else ""
        )
        raise ConvertError(
            f"--out {out} holds {len(foreign)} entr{'y' if len(foreign) == 1 else 'ies'} that "
            f"convert did not write ({shown}); --overwrite replaces the whole folder and would "
            "delete them: move them out or choose another --out"
        )
    root = out.resolve()
    for tier, paths in inputs.items():
        for given in paths:
            q = Path(given).resolve()
            if q == root or root in q.parents:
                raise ConvertError(
                    f"input {tier}={given} lies inside --out {out}, which --overwrite replaces: "
                    "choose another --out"
                )
