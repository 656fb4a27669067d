"""Readers for Unicode Greek in plain text (``.txt``) and JSON Lines (``.jsonl``) files.

Both expect text that is already Unicode Greek (any normalisation form). Every reader in
this package passes its text through :func:`normalise_text`: NFC, whitespace runs (newlines
included) become one space, and a combining comma above (U+0313) left on a consonant after
NFC -- the elision mark of the Perseus treebank and of many Unicode editions (``δ̓``) --
becomes U+2019, the elision mark the Beta Code reader writes. Nothing else is changed:
punctuation and editorial brackets are kept.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType

from .record import SourceError, SourceRecord, read_utf8, relative_name

__all__ = ["normalise_text", "read_plaintext", "read_jsonl", "read_utf8_lines"]

_WS = re.compile(r"\s+")
_CONSONANT_PSILI = re.compile(r"(?<=[βγδζθκλμνξπρσςτφχψΒΓΔΖΘΚΛΜΝΞΠΡΣΤΦΧΨ])\u0313")
_PLANES = frozenset({"chars", "boundary", "dia", "cap", "punct"})


#: A word divided at a line end: a letter (its marks, a closing Leiden bracket, the ``/`` of
#: ``\ /`` or a lost-letter ``+``), a hyphen
#: (``-``, soft hyphen U+00AD, U+2010, U+2011, the double hyphen ``=`` U+2E17 U+2E40 of
#: papyrological editions), the line end, then a letter, an opening bracket (``\`` too) or a
#: lost-letter ``+`` on the next line.
_LINE_END_HYPHEN = re.compile(
    "(?<=[^\\W\\d_]|[\u0300-\u036f\\])⟩〉⟧〛}⸣⌉⸥⌋˺>/+])"
    "[\\-\u00ad\u2010\u2011=\u2e17\u2e40][ \t]*(?:\r\n|[\n\r\u2028\u2029\u0085])\\s*"
    "(?=[^\\W\\d_]|[\\[(⟨〈⟦〚{⸢⌈⸤⌊˹<\\\\+])"
)


def normalise_text(text: str, counts: Counter[str] | None = None) -> str:
    """NFC, single spaces, stripped; U+0313 on a consonant -> U+2019 (counted ``elision_mark``).

    A hyphen at a line end between two letters (``πο-⏎τῷ``; also U+00AD, U+2010, U+2011,
    ``=``, U+2E17, U+2E40) is removed with the line end: one word (counted ``hyphen_joined``).
    """
    text = unicodedata.normalize("NFC", text)
    if "\n" in text or "\r" in text or "\u2028" in text or "\u2029" in text or "\u0085" in text:
        text, n = _LINE_END_HYPHEN.subn("", text)
        if n and counts is not None:
            counts["hyphen_joined"] += n
    if "\u0313" in text:
        text, n = _CONSONANT_PSILI.subn("\u2019", text)
        if counts is not None:
            counts["elision_mark"] += n
    return _WS.sub(" ", text).strip()


#: Line ends: ``\\n``, ``\\r\\n`` and a lone ``\\r``, and nothing else. ``str.splitlines`` also
#: splits at U+2028, U+2029, U+0085 and other controls, which JSON allows raw inside a string:
#: a JSON Lines record holding one would be cut in two and rejected as invalid JSON.
_LINE_END = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


def read_utf8_lines(path: Path) -> list[str]:
    """The lines of ``path`` (with their line end), decoded as UTF-8 (a BOM is dropped).

    Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` only (see :data:`_LINE_END`): U+2028,
    U+0085 and the like inside a line are characters of that line (whitespace to
    :func:`normalise_text`). Raises :class:`SourceError` naming the first line that is not
    valid UTF-8.
    """
    text = read_utf8(Path(path), "utf-8-sig")
    lines = _LINE_END.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def read_plaintext(
    path: Path, root: Path | None = None, *, counts: Counter[str] | None = None
) -> Iterator[SourceRecord]:
    """Yield one record per paragraph of a UTF-8 text file.

    Paragraphs are separated by one or more blank (whitespace-only) lines; the lines of a
    paragraph are joined by spaces. Id ``<file>#<n>`` with ``n`` the 1-based paragraph
    number, ``line`` its first line, ``work`` the file, ``source`` ``"plain"``, all planes
    known. Raises :class:`SourceError` if the file is not UTF-8.
    """
    path = Path(path)
    counts = counts if counts is not None else Counter()
    rel = relative_name(path, root)
    para: list[str] = []
    start = 0
    number = 0

    def flush() -> Iterator[SourceRecord]:
        nonlocal number
        text = normalise_text(" ".join(para), counts)
        if text:
            number += 1
            counts["records"] += 1
            counts["chars"] += len(text)
            yield SourceRecord(
                id=f"{rel}#{number}",
                text=text,
                source="plain",
                work=rel,
                file=str(path),
                line=start,
                known=MappingProxyType({}),
            )

    for i, line in enumerate(read_utf8_lines(path), 1):
        if line.strip():
            if not para:
                start = i
            para.append(line)
        elif para:
            yield from flush()
            para = []
    if para:
        yield from flush()


def read_jsonl(
    path: Path, root: Path | None = None, *, counts: Counter[str] | None = None
) -> Iterator[SourceRecord]:
    """Yield one record per line of a JSON Lines file.

    Each non-blank line is a JSON object with ``"id"`` and ``"text"``, both non-empty strings
    (``text`` must stay non-empty after :func:`normalise_text`). Optional: ``"work"`` (a
    non-empty string; default: the file) and ``"known"`` (an object mapping plane names to
    booleans, e.g. ``{"punct": false}``). Record id ``<file>#<id>``; ``source`` ``"jsonl"``.
    Raises :class:`SourceError` naming the line for invalid JSON, a non-object, a missing or
    empty ``id``/``text``, a bad ``work``/``known``, a duplicate ``id``, or non-UTF-8 bytes.
    """
    path = Path(path)
    file = str(path)
    counts = counts if counts is not None else Counter()
    rel = relative_name(path, root)
    first_line: dict[str, int] = {}
    example = '{"id": "hom.il.1.1", "text": "μῆνιν ἄειδε θεὰ"}'
    for i, line in enumerate(read_utf8_lines(path), 1):
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
        text = normalise_text(obj["text"], counts)
        if not text:
            raise SourceError(file, i, '"text" is only whitespace', "give the record's text")
        counts["records"] += 1
        counts["chars"] += len(text)
        yield SourceRecord(
            id=f"{rel}#{rid}",
            text=text,
            source="jsonl",
            work=f"{rel}#{work.strip()}" if work else rel,
            file=file,
            line=i,
            known=known,
        )


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
