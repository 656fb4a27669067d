"""Reader for JSON Lines (``.jsonl``) files of Unicode Greek: one record per line.

A line is parsed whole by the standard library's :mod:`json` (no parser that reads a string
in pieces is installed), so a line longer than :data:`MAX_JSONL_LINE_CHARS` is refused with the
fix rather than held; a long text is normalised a piece at a time as a ``.txt`` paragraph is
(:mod:`stoicheia.sources.plain`, whose :func:`~stoicheia.sources.plain.normalise_text` every
text goes through).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from . import plain
from .record import SourceError, SourceRecord, relative_name

__all__ = ["MAX_JSONL_LINE_CHARS", "read_jsonl"]

#: The longest line of a JSON Lines file (characters, the line end included): a line is
#: parsed whole (the standard library's parser reads no string in pieces), so a longer one is
#: refused, naming the fix, rather than held: 16 M characters, about 30 MB of Greek.
MAX_JSONL_LINE_CHARS = 1 << 24
_PLANES = frozenset({"chars", "boundary", "dia", "cap", "punct"})


def read_jsonl(
    path: Path,
    root: Path | None = None,
    *,
    counts: Counter[str] | None = None,
    chunks: bool = False,
) -> Iterator[SourceRecord]:
    """Yield one record per line of a JSON Lines file.

    Each non-blank line is a JSON object with ``"id"`` and ``"text"``, both non-empty strings
    (``text`` must stay non-empty after :func:`~stoicheia.sources.plain.normalise_text`).
    Optional: ``"work"`` (a non-empty string; default: the file) and ``"known"`` (an object
    mapping plane names to booleans, e.g. ``{"punct": false}``). Record id ``<file>#<id>``;
    ``source`` ``"jsonl"``. Raises :class:`SourceError` naming the line for invalid JSON, a
    non-object, a missing or empty ``id``/``text``, a bad ``work``/``known``, a duplicate
    ``id``, non-UTF-8 bytes, or a line of more than :data:`MAX_JSONL_LINE_CHARS` characters
    (its size and the fix named: a line is parsed whole, so a longer one is refused rather
    than held). The file is read a line at a time
    (:func:`~stoicheia.sources.plain.iter_utf8_lines`): memory holds one line and the ids
    seen, whatever the file's size; the records before a bad line have been yielded when it
    raises (``stoicheia convert`` then drops the whole file). ``chunks=True``: a text longer
    than :data:`~stoicheia.sources.plain.STREAM_PARAGRAPH_CHARS` comes as a record read in
    chunks (normalised a piece at a time, as a long ``.txt`` paragraph; its line and parsed
    text are held).
    """
    path = Path(path)
    file = str(path)
    counts = counts if counts is not None else Counter()
    rel = relative_name(path, root)
    first_line: dict[str, int] = {}
    example = '{"id": "hom.il.1.1", "text": "μῆνιν ἄειδε θεὰ"}'
    # line by line from the file: one record held at a time, not the file
    lines = enumerate(plain.iter_utf8_lines(path, MAX_JSONL_LINE_CHARS), 1)
    while True:
        try:
            i, line = next(lines, (0, ""))  # (line number, line); (0, "") at the end
        except plain.LineTooLong as e:
            raise SourceError(
                file,
                e.number,
                f"a JSON Lines record longer than {MAX_JSONL_LINE_CHARS:,} characters (this "
                f"line holds {e.chars:,}, {e.size / 1e6:.1f} MB; a line is parsed whole, so "
                "it is not read)",
                "split the record into several lines (a book, a chapter or a paragraph each; "
                'give them one "work" to keep them together), or give the text as a .txt file '
                "(read in pieces, paragraphs of any length)",
            ) from None
        if not i:
            break
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise SourceError(
                file,
                i,
                f"invalid JSON ({e.msg} at column {e.colno})",
                f"write one JSON object per line, e.g. {example}",
            ) from None
        if not isinstance(obj, dict):
            raise SourceError(
                file,
                i,
                f"line is a JSON {type(obj).__name__}, not an object",
                f"write one JSON object per line, e.g. {example}",
            )
        for key in ("id", "text"):
            value = obj.get(key)
            if not isinstance(value, str) or not value.strip():
                what = "missing" if key not in obj else "not a non-empty string"
                raise SourceError(
                    file,
                    i,
                    f'"{key}" is {what}',
                    f'give "{key}" as a non-empty string, e.g. {example}',
                )
        rid = obj["id"].strip()
        if rid in first_line:
            raise SourceError(
                file,
                i,
                f'duplicate id "{rid}" (first on line {first_line[rid]})',
                "make every id unique within the file",
            )
        first_line[rid] = i
        work = obj.get("work", None)
        if work is not None and (not isinstance(work, str) or not work.strip()):
            raise SourceError(
                file,
                i,
                '"work" is not a non-empty string',
                'drop "work" or give the id of the whole work as a string',
            )
        known = _known(obj.get("known", {}), file, i)
        record = SourceRecord(
            id=f"{rel}#{rid}",
            text="",
            source="jsonl",
            work=f"{rel}#{work.strip()}" if work else rel,
            file=file,
            line=i,
            known=known,
        )
        raw, obj, line = obj["text"], None, ""
        if chunks and len(raw) > plain.STREAM_PARAGRAPH_CHARS:
            chunked = plain._counted_chunks(_slices(raw, plain._NORMALISE_CHARS), counts)
            raw = ""
            yield replace(record, chunked=lambda chunked=chunked: chunked)
            for _ in chunked:  # whatever the caller did not read
                pass
            continue
        text = plain.normalise_text(raw, counts)
        if not text:
            raise SourceError(file, i, '"text" is only whitespace', "give the record's text")
        counts["records"] += 1
        counts["chars"] += len(text)
        yield replace(record, text=text)


def _slices(s: str, size: int) -> Iterator[str]:
    """``s`` in slices of ``size`` characters, made as they are read."""
    for k in range(0, len(s), size):
        yield s[k : k + size]


def _known(value: object, file: str, line: int) -> Mapping[str, bool]:
    fix = 'give "known" as an object of plane names to booleans, e.g. {"punct": false}'
    if not isinstance(value, dict):
        raise SourceError(file, line, '"known" is not an object', fix)
    for k, v in value.items():
        if k not in _PLANES or not isinstance(v, bool):
            raise SourceError(
                file,
                line,
                f'"known" has {k!r}: {v!r}; planes are {sorted(_PLANES)} with boolean values',
                fix,
            )
    if value.get("chars") is False:
        raise SourceError(
            file,
            line,
            '"known" says the letters are not recorded',
            'drop "chars" from "known": every record has its letters',
        )
    return MappingProxyType(dict(value))
