"""Write the restoration page's example inscriptions (stoicheia/serve/static/examples.json).

The examples are real I.Sicily inscriptions of the development set (file numbers ending in 4)
with lacunae, read with the project's EpiDoc reader (:func:`stoicheia.sources.epidoc.read_epidoc`)
exactly as ``convert`` reads them, so the Leiden text on the page is what the model was
evaluated on, with one exception: a lost line. The reader writes ``<gap unit="line">`` as a
lacuna ``[---]`` (the training text has no line structure); on the page that would be a
character gap the model is asked to fill. A lost line is not letters the model can restore, so
the examples show it as the Leiden for lost lines, ``- - - - - -`` on a line of its own (one
such line per lost line when ``quantity`` counts them, one for ``extent="unknown"``): the
restorer reads it as text, not a gap, leaves it as it is, and the page's "Copy as EpiDoc"
writes it back as ``<gap reason="lost" extent="unknown" unit="line"/>``. I.Sicily is CC BY 4.0
(J. Prag et al., http://sicily.classics.ox.ac.uk); the JSON carries that attribution, each
inscription's URI and its date as the file gives it.

Usage (from the project root)::

    .venv/bin/python scripts/make_serve_examples.py [--corpus ../shared/corpus/isicily/inscriptions]

Exit status 2 with one line if an inscription is missing, outside the development set, not a
single Greek record, or has no lacuna.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from lxml import etree

from stoicheia.sources import SourceError
from stoicheia.sources.epidoc import read_epidoc
from stoicheia.text.leiden import parse_leiden
from stoicheia.text.leiden_segments import Lacuna

#: short funerary texts with lacunae of known and unknown width (chosen by hand for the page)
CHOSEN = ("ISic003084", "ISic001684", "ISic000864")
OUT = Path(__file__).resolve().parents[1] / "stoicheia" / "serve" / "static" / "examples.json"
TEI = "{http://www.tei-c.org/ns/1.0}"
#: the Leiden for a lost line (on a line of its own)
LOST_LINE = "- - - - - -"
#: what stands for a lost line while the reader reads the edition (a private-use character: no
#: Leiden sign, kept as text by the reader)
_LINE_MARK = "\ue0a1"


def _mark_lost_lines(root: etree._Element) -> int:
    """Replace every ``<gap unit="line">`` of the editions by :data:`_LINE_MARK` text (once
    per lost line when ``quantity`` is a number, else once), keeping the text after it; returns
    the lost lines marked."""
    marked = 0
    for ed in root.iter(f"{TEI}div"):
        if ed.get("type") != "edition":
            continue
        for gap in list(ed.iter(f"{TEI}gap")):
            if (gap.get("unit") or "").strip() != "line":
                continue
            qty = (gap.get("quantity") or "").strip()
            n = int(qty) if qty.isdigit() and int(qty) > 0 else 1
            text = f" {_LINE_MARK * n} " + (gap.tail or "")
            parent, prev = gap.getparent(), gap.getprevious()
            if prev is not None:
                prev.tail = (prev.tail or "") + text
            else:
                parent.text = (parent.text or "") + text
            parent.remove(gap)
            marked += n
    return marked


def _lost_lines_as_leiden(text: str) -> str:
    """``text`` with each :data:`_LINE_MARK` as :data:`LOST_LINE` on a line of its own."""
    lines = re.sub(rf"\s*{_LINE_MARK}\s*", lambda _: f"\n{LOST_LINE}\n", text)
    return re.sub(r"\n+", "\n", lines).strip()


def describe(path: Path) -> dict[str, str]:
    """Title, URI and date of an I.Sicily file (from its header)."""
    root = etree.parse(str(path)).getroot()

    def first(xpath: str) -> str:
        found = root.find(xpath)
        return " ".join((found.text or "").split()) if found is not None else ""

    return {
        "title": first(f".//{TEI}titleStmt/{TEI}title"),
        "url": first(f".//{TEI}idno[@type='URI']"),
        "date": first(f".//{TEI}origDate"),
    }


def example(corpus: Path, name: str) -> dict[str, str]:
    """The page's entry for inscription ``name``; raises ``ValueError`` naming what is wrong."""
    path = corpus / f"{name}.xml"
    if not path.is_file():
        raise ValueError(f"{path}: no such file; give --corpus, the I.Sicily inscriptions folder")
    if not name.endswith("4"):
        raise ValueError(f"{name} is not in the development set (file numbers ending in 4)")
    root = etree.parse(str(path)).getroot()
    _mark_lost_lines(root)
    try:
        records = list(read_epidoc(path, tree=root))
    except SourceError as err:
        raise ValueError(str(err)) from None
    if len(records) != 1:
        raise ValueError(
            f"{path}: {len(records)} Greek records; choose an inscription with one edition text"
        )
    text = _lost_lines_as_leiden(records[0].text)
    if not any(isinstance(s, Lacuna) for s in parse_leiden(text)):
        raise ValueError(f"{path}: no lacuna in its edition; choose an inscription with one")
    return {"id": name, **describe(path), "text": text}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus",
        default="../shared/corpus/isicily/inscriptions",
        help="I.Sicily inscriptions folder",
    )
    parser.add_argument("--out", default=str(OUT), help=f"JSON to write (default {OUT})")
    args = parser.parse_args(argv)
    try:
        examples = [example(Path(args.corpus), name) for name in CHOSEN]
    except ValueError as err:
        print(f"make_serve_examples: error: {err}", file=sys.stderr)
        return 2
    data = {
        "source": "I.Sicily, J. Prag et al., http://sicily.classics.ox.ac.uk",
        "licence": "CC BY 4.0",
        "note": (
            "edition text read with stoicheia.sources.epidoc.read_epidoc "
            "(scripts/make_serve_examples.py)"
        ),
        "examples": examples,
    }
    Path(args.out).write_text(
        json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    print(f"wrote {args.out}: {', '.join(e['id'] for e in examples)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
