"""What an EpiDoc header says about an inscription: its corpus, citation, web page, place, date
and object, so that a record (and a parallel found in it) can be cited as the corpus cites it.

Read from ``<teiHeader>`` only, never fetched (IIP's ``xi:include`` of remote files is not
followed). Each project has its own habits; the keys of :func:`inscription_meta` (each present
only when the file gives it):

================  ===========================================================================
``corpus``        the corpus: ``I.Sicily``, ``IOSPE``, ``IGCyr``, ``I.Cret.`` (Cretan
                  Institutional Inscriptions), ``IIP``, else ``EpiDoc``
``citation``      the corpus's own citation: ``ISic000046``; ``IOSPE I² 10`` (file ``1.10``:
                  volume 1 is the second edition of volume I), ``IOSPE V 183``; ``IGCyr000100``
                  / ``GVCyr001`` (the file names the project asks to be cited by); ``I.Cret. I
                  xiv 1`` (``IC I 14 1*``; other print corpora as the file names them, ``SEG
                  23.566``); ``IIP akko0003``
``url``           the project's page of the inscription: the ``<idno type="URI">`` the file
                  gives (I.Sicily, IGCyr: the second edition's), else the project's pattern
                  where it has one (IOSPE: ``https://iospe.kcl.ac.uk/<file>.html``)
``place``         the ancient place: ``<placeName type="ancient">`` of ``<origPlace>``, the
                  ``<origPlace>`` text (not IGCyr's placeholder ``Findspot.``),
                  ``<placeName type="ancientFindspot">``, or IIP's ``<settlement>``; English
                  where the file gives several languages (IOSPE)
``findspot``      where it was found: the ``<placeName>`` of ``<provenance type="found">``
``not_before``    the date, years (negative: BC), from ``<origDate>`` (IIP: the ``<date>``
``not_after``     of ``<origin>``): ``notBefore``/``notAfter`` (also ``-custom``), or ``when``
``object_type``   ``<objectType>`` (English first), or IIP's ``<objectDesc ana>`` terms
================  ===========================================================================
"""

from __future__ import annotations

import re
from pathlib import Path

from lxml import etree

from .epidoc_tei import TEI_NS, XML_LANG

__all__ = ["inscription_meta", "roman"]

_T = "{" + TEI_NS + "}"
_WS = re.compile(r"\s+")
_YEAR = re.compile(r"\s*(-?)0*([0-9]{1,4})(?:-[0-9]{2}){0,2}\s*")
_IOSPE_VOLUMES = {"1": "I²", "2": "II", "3": "III", "4": "IV", "5": "V"}
_IC = re.compile(r"IC\s+(I{1,3}|IV)\s+(\d+)(?:\s+(\d+))?\s*\**")


def roman(n: int, lower: bool = False) -> str:
    """``n`` (1..3999) in Roman numerals (``14`` -> ``XIV``; ``lower``: ``xiv``)."""
    out = []
    for value, sign in (
        (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
        (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
    ):  # fmt: skip
        while n >= value:
            out.append(sign)
            n -= value
    s = "".join(out)
    return s.lower() if lower else s


def _text(el: etree._Element | None) -> str:
    if el is None:
        return ""
    return _WS.sub(" ", "".join(el.itertext())).strip().rstrip(".:;, ").strip()


def _english(el: etree._Element | None) -> str:
    """The text of ``el``, its English ``<seg xml:lang="en">`` when it has language variants."""
    if el is None:
        return ""
    for seg in el.iter(_T + "seg"):
        if seg.get(XML_LANG) == "en":
            return _text(seg)
    return _text(el)


def _first(header: etree._Element, path: str) -> etree._Element | None:
    found = header.findall(path)
    english = [e for e in found if e.get(XML_LANG) == "en" or _is_in_english(e)]
    return (english or found or [None])[0]


def _is_in_english(el: etree._Element) -> bool:
    return any(a.get(XML_LANG) == "en" for a in el.iterancestors())


def _year(value: str | None) -> int | None:
    m = _YEAR.fullmatch(value or "")
    if not m:
        return None
    return -int(m.group(2)) if m.group(1) else int(m.group(2))


def _idno(header: etree._Element, kind: str, subtype: str | None = None) -> str:
    for el in header.iter(_T + "idno"):
        if el.get("type") == kind and (subtype is None or el.get("subtype") == subtype):
            t = _text(el)
            if t:
                return t
    return ""


def _corpus(root: etree._Element, header: etree._Element, path: Path) -> dict[str, str]:
    filename = _idno(header, "filename", "second-edition") or _idno(header, "filename")
    stem = path.stem
    if filename.startswith("ISic") or stem.startswith("ISic"):
        cite = filename or stem
        url = _idno(header, "URI") or f"http://sicily.classics.ox.ac.uk/inscription/{cite}"
        return {"corpus": "I.Sicily", "citation": cite, "url": url}
    if re.fullmatch(r"(IG|GV)Cyr\d+", filename, re.I):
        url = _idno(header, "URI", "second-edition") or _idno(header, "URI")
        return {"corpus": "IGCyr", "citation": filename, **({"url": url} if url else {})}
    if _idno(header, "IIP") or (root.get("n") or "").lower() == "iip":
        return {"corpus": "IIP", "citation": f"IIP {root.get(f'{{{_XML}}}id') or stem}"}
    m = re.fullmatch(r"([1-5])\.(\d[\w.]*)", filename)
    authority = _text(header.find(f".//{_T}publicationStmt/{_T}authority"))
    if m and (_idno(header, "PE") or authority == "King's College London"):
        vol, num = m.groups()
        return {
            "corpus": "IOSPE",
            "citation": f"IOSPE {_IOSPE_VOLUMES[vol]} {num}",
            "url": f"https://iospe.kcl.ac.uk/{filename}.html",
        }
    if _idno(header, "projectNo") and filename:
        ic = _IC.fullmatch(filename)
        if ic:
            vol, chapter, num = ic.groups()
            cite = f"I.Cret. {vol} {roman(int(chapter), lower=True)}" + (f" {num}" if num else "")
            if num is None:  # IC IV 72: volume IV is numbered straight through
                cite = f"I.Cret. {vol} {chapter}"
        else:
            cite = filename.rstrip("* ")
        return {"corpus": "I.Cret.", "citation": cite}
    out = {"corpus": "EpiDoc", "citation": filename or stem}
    url = _idno(header, "URI")
    return {**out, **({"url": url} if url else {})}


_XML = "http://www.w3.org/XML/1998/namespace"


def inscription_meta(root: etree._Element, path: Path) -> dict[str, str | int]:
    """The metadata of one EpiDoc file (module docstring) as a dict of the keys it gives."""
    header = root.find(f"{_T}teiHeader")
    if header is None:
        return {"corpus": "EpiDoc", "citation": Path(path).stem}
    meta: dict[str, str | int] = dict(_corpus(root, header, Path(path)))
    origin = header.find(f".//{_T}history/{_T}origin")
    orig_place = header.find(f".//{_T}origPlace")
    place = ""
    if orig_place is not None:
        ancient = [p for p in orig_place.iter(_T + "placeName") if p.get("type") == "ancient"]
        place = _text(ancient[0]) if ancient else ""
    if not place and orig_place is not None:
        place = _english(orig_place)
        if place.lower() in ("findspot", "unknown", ""):
            place = ""
    if not place:
        found = [p for p in header.iter(_T + "placeName") if p.get("type") == "ancientFindspot"]
        english = [p for p in found if _is_in_english(p)]
        place = _text((english or found or [None])[0])
    if not place and origin is not None:
        place = _text(origin.find(f".//{_T}settlement"))
    if place:
        meta["place"] = place
    for prov in header.iter(_T + "provenance"):
        if prov.get("type") == "found":
            names = list(prov.iter(_T + "placeName"))
            english = [p for p in names if _is_in_english(p)]
            spot = _text((english or names or [None])[0])
            if spot:
                meta["findspot"] = spot
                break
    date = header.find(f".//{_T}origDate")
    if date is None and origin is not None:
        date = origin.find(f"{_T}date")
    if date is not None:
        lo = _year(date.get("notBefore") or date.get("notBefore-custom") or date.get("when"))
        hi = _year(date.get("notAfter") or date.get("notAfter-custom") or date.get("when"))
        if lo is not None:
            meta["not_before"] = lo
        if hi is not None:
            meta["not_after"] = hi
    obj = _first(header, f".//{_T}objectType")
    kind = _text(obj)
    if not kind:
        desc = header.find(f".//{_T}objectDesc")
        if desc is not None and desc.get("ana"):
            kind = " ".join(t.lstrip("#").replace("_", " ") for t in desc.get("ana").split())
    if kind:
        meta["object_type"] = kind
    return meta
