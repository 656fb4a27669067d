"""Reading the parallels index (:mod:`stoicheia.data.parallels_index` writes it).

:class:`ParallelsIndex` memory-maps the arrays (``numpy.load(mmap_mode="c")``: copy-on-write,
so the clean pages are the page cache's and are shared by every process that opens the index;
libdivsufsort's search needs a writable buffer, which this gives without copying) and answers:
where does a letter string occur (:meth:`ParallelsIndex.find`), which record and work a slot
belongs to (:meth:`ParallelsIndex.source`), and how a stretch of a record is printed
(:meth:`ParallelsIndex.printed`), and on which of its edition's lines a stretch stands
(:meth:`ParallelsIndex.lines`).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stoicheia.data.parallels_layout import INDEX_DIR, VERSION
from stoicheia.data.splits import inscription_number
from stoicheia.text import alphabet as A
from stoicheia.text.planes import Planes
from stoicheia.text.render import planes_to_text

#: I.Sicily's page of an inscription (the ``idno type="URI"`` of the EpiDoc files)
ISICILY_URL = "http://sicily.classics.ox.ac.uk/inscription/ISic{number:06d}"


class IndexError_(ValueError):
    """The index folder is missing or unreadable; the message names it and the fix."""


#: a Perseus work file: ``Author/abbreviation_gk.xml`` (``Homer/hom.il_gk.xml``)
_PERSEUS_WORK = re.compile(r"(?P<author>[^/]+)/(?P<work>[^/]+?)_gk\.xml")


@dataclass(frozen=True)
class Source:
    """Where a slot (or a stretch) of the index comes from: ``tier``, ``work`` (EpiDoc file or
    ``Author/work.xml``), ``record`` id, ``record_index`` (row of the index), ``offset`` (slot in
    the record), ``url`` (I.Sicily's page for an I.Sicily inscription, else ``""``), ``line``
    (the edition's printed line of the stretch: ``"5"``, or ``"5–6"`` when it runs over two or
    more lines; ``None`` when the record carries no line numbers), ``span`` (whether a
    stretch was asked for, so that the label says the line, or that it is unknown) and
    ``citation`` (the corpus's own citation of an inscription, ``IOSPE I² 10``, ``I.Cret. I
    xiv 1``, ``IIP akko0003``, from the index's ``works_meta``; ``""`` when unknown). ``url``
    is the project's page of the inscription when the file gives one (I.Sicily, IGCyr, IOSPE)."""

    tier: str
    work: str
    record: str
    record_index: int
    offset: int
    url: str = ""
    line: str | None = None
    span: bool = False
    citation: str = ""

    def label(self) -> str:
        """``ISic000154, l. 5``, ``IOSPE I² 10, l. 3`` (the corpus's citation when the index
        holds it; ``ll. 5–6`` over two lines, ``line unknown`` for shards or an
        index without line numbers) for an inscription: its file's name, its text part when
        the file has several (``ISic000406, text b, l. 3``) and the line when a stretch was
        asked for; for a Perseus work, its author and the canonical reference of the stretch
        from the TEI's own numbering (``Josephus, AJ 14.195``, ``Homer, Iliad 1.5–7``: the
        lines the reader took from the file, :func:`cited_range`), or, for shards converted
        before the Perseus reader kept them or without a stretch, the work's abbreviation
        and the record's division (``Homer, hom.il 1``); else the record id."""
        part = self.record.split("#", 1)[-1] if "#" in self.record else ""
        if self.citation or inscription_number(self.work) is not None:
            name = self.citation or self.work.rsplit("/", 1)[-1].removesuffix(".xml")
            out = name if part in ("", "1") else f"{name}, text {part}"
            if not self.span:
                return out
            if self.line is None:
                return f"{out}, line unknown"
            return f"{out}, {'ll.' if '–' in self.line else 'l.'} {self.line}"
        m = _PERSEUS_WORK.fullmatch(self.work)
        if m is not None and self.span and self.line:
            return f"{m['author']}, {cited_range(self.line)}"
        if m is not None and part:
            return f"{m['author']}, {m['work']} {part}"
        return self.record


def cited_range(lines: str) -> str:
    """A range of canonical references written as a classicist writes it, the part the two
    ends share given once: ``"AJ 14.195–AJ 14.196"`` -> ``"AJ 14.195–196"``, ``"Iliad
    1.5–Iliad 1.7"`` -> ``"Iliad 1.5–7"``; one reference (no en dash) is returned as it is."""
    first, dash, last = lines.partition("–")
    if not dash:
        return lines
    cut = 0
    for i, (a, b) in enumerate(zip(first, last, strict=False)):
        if a != b:
            break
        if a in ". ":
            cut = i + 1
    return f"{first}–{last[cut:]}"


class ParallelsIndex:
    """The memory-mapped index at ``folder`` (``SHARDS/parallels``, or the shards folder itself).

    Attributes: ``text`` uint8 ``(N,)`` (letter id + 1, 0 a separator), ``sa`` int32 ``(N,)``,
    ``rec_start`` int64 ``(R+1,)``, ``line_start`` int64 ``(L,)`` (the slot where each numbered
    line of an edition begins), ``manifest`` dict. Raises :class:`IndexError_` for a folder
    without ``manifest.json`` or of another version (build it with ``stoicheia index``).
    """

    def __init__(self, folder: str | Path) -> None:
        folder = Path(folder)
        if not (folder / "manifest.json").exists() and (folder / INDEX_DIR).is_dir():
            folder = folder / INDEX_DIR
        man = folder / "manifest.json"
        if not man.exists():
            raise IndexError_(
                f"{folder}: no parallels index (manifest.json); "
                "build it with `stoicheia index SHARDS_DIR`"
            )
        self.folder = folder
        rebuild = "rebuild it with `stoicheia index SHARDS_DIR`"
        try:
            self.manifest = json.loads(man.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:  # a hand edit, a copy cut short, no read permission
            raise IndexError_(f"{man}: not a readable index manifest ({err}); {rebuild}") from None
        if not isinstance(self.manifest, dict) or self.manifest.get("version") != VERSION:
            got = self.manifest.get("version") if isinstance(self.manifest, dict) else None
            raise IndexError_(f"{man}: index version {got}, expected {VERSION}; {rebuild}")

        def load(name: str, mmap: bool = True) -> np.ndarray:
            path = folder / f"{name}.npy"
            try:
                if not mmap:  # one entry per record (thousands): read into memory
                    return np.load(path)
                # a plain ndarray view of the map: numpy.memmap's indexing costs microseconds
                return np.load(path, mmap_mode="c").view(np.ndarray)
            except (OSError, ValueError, EOFError) as err:  # missing, truncated, not a .npy
                raise IndexError_(f"{path}: unreadable ({err}); {rebuild}") from None

        self.text = load("text")
        self.sa = load("sa")
        self.look = load("look")
        self.flow = load("flow")
        self.rec_start = load("rec_start", mmap=False)
        self.rec_tier = load("rec_tier", mmap=False)
        self.rec_work = load("rec_work", mmap=False)
        self._ids, self._ids_off = load("ids"), load("ids_off")
        self._works, self._works_off = load("works"), load("works_off")
        self._meta: dict[int, dict] = {}
        if (folder / "works_meta.npy").exists():  # an index built before it has none
            self._works_meta, self._works_meta_off = load("works_meta"), load("works_meta_off")
        else:
            self._works_meta = self._works_meta_off = None
        self.line_start = load("line_start", mmap=False)
        self._line_label, self._line_label_off = load("line_label"), load("line_label_off")
        self.tiers: list[str] = list(self.manifest.get("tiers", []))
        self._words: np.ndarray | None = None
        self._check(rebuild)

    def _check(self, rebuild: str) -> None:
        """Raise :class:`IndexError_` when the arrays do not fit each other and the manifest
        (files of two builds mixed, or a hand edit): libdivsufsort's search would read past a
        short suffix array (a crash, not an error)."""
        n = len(self.text)
        r = self.manifest.get("records")
        wants = [
            ("text", self.text, np.uint8, self.manifest.get("slots")),
            ("sa", self.sa, np.int32, n),
            ("look", self.look, np.uint8, n),
            ("flow", self.flow, np.uint8, n),
            ("rec_start", self.rec_start, np.int64, None if r is None else r + 1),
            ("rec_tier", self.rec_tier, np.uint8, r),
            ("rec_work", self.rec_work, np.int32, r),
            ("ids_off", self._ids_off, np.int64, None if r is None else r + 1),
            ("works_off", self._works_off, np.int64, None),
        ]
        for name, arr, dtype, size in wants:
            if arr.ndim != 1 or arr.dtype != dtype or (size is not None and len(arr) != size):
                raise IndexError_(
                    f"{self.folder / (name + '.npy')}: {arr.dtype}{list(arr.shape)}, expected "
                    f"{np.dtype(dtype)}[{size if size is not None else 'n'}] (files of another "
                    f"build?); {rebuild}"
                )
        if r is None or len(self.rec_start) == 0 or int(self.rec_start[-1]) != n:
            raise IndexError_(
                f"{self.folder / 'rec_start.npy'}: the records do not end at the text's "
                f"{n:,} slots (files of another build?); {rebuild}"
            )
        if int(self._ids_off[-1]) != len(self._ids) or int(self._works_off[-1]) != len(self._works):
            raise IndexError_(
                f"{self.folder}: ids.npy or works.npy do not fit their offsets; {rebuild}"
            )
        if self.rec_tier.size and int(self.rec_tier.max()) >= len(self.tiers):
            raise IndexError_(
                f"{self.folder / 'manifest.json'}: a record's tier is not in 'tiers'; {rebuild}"
            )
        if self.rec_work.size and int(self.rec_work.max()) >= len(self._works_off) - 1:
            raise IndexError_(
                f"{self.folder / 'rec_work.npy'}: a record's work is not in works.npy; {rebuild}"
            )

    def words(self) -> np.ndarray:
        """The sorted distinct hashes (uint64 ``(W,)``) of the words the indexed records attest
        (:mod:`stoicheia.data.word_hashes`): ``words.npy``, or made from the letters and their
        word ends once per process for an index built before the file."""
        if self._words is None:
            path = self.folder / "words.npy"
            if path.exists():
                try:
                    self._words = np.load(path, mmap_mode="r").view(np.ndarray)
                except (OSError, ValueError, EOFError) as err:
                    raise IndexError_(
                        f"{path}: unreadable ({err}); rebuild it with `stoicheia index SHARDS_DIR`"
                    ) from None
            else:
                from stoicheia.data.word_hashes import corpus_words

                self._words = corpus_words(self.text, self.flow % 4)
        return self._words

    def attested(self, hashes: np.ndarray) -> np.ndarray:
        """Bool per hash of ``hashes`` (uint64): whether the corpus attests that word."""
        words = self.words()
        h = np.asarray(hashes, dtype=np.uint64)
        if not len(words):
            return np.zeros(len(h), dtype=bool)
        at = np.minimum(np.searchsorted(words, h), len(words) - 1)
        return words[at] == h

    def __len__(self) -> int:
        """Letter slots indexed, separators included."""
        return int(self.text.shape[0])

    @property
    def records(self) -> int:
        return int(self.rec_start.shape[0] - 1)

    def find(self, letters: np.ndarray) -> tuple[int, int]:
        """The suffix-array range ``[lo, hi)`` of the suffixes that begin with ``letters`` (int
        letter ids 0..23, shape ``(m,)``, ``m >= 1``): ``sa[lo:hi]`` are the slots where it occurs.
        libdivsufsort's binary search (``pydivsufsort.sa_search``), O(m log N)."""
        import pydivsufsort

        pat = (np.asarray(letters, dtype=np.int64) + 1).astype(np.uint8)
        if len(pat) == 0 or len(self.text) == 0:
            return 0, 0
        count, left = pydivsufsort.sa_search(self.text, self.sa, pat)
        if not count:  # the library answers (0, None) for a pattern that does not occur
            return 0, 0
        return int(left), int(left) + int(count)

    def count(self, letters: np.ndarray) -> int:
        lo, hi = self.find(letters)
        return hi - lo

    def record_of(self, pos: np.ndarray) -> np.ndarray:
        """Int64 record rows of slots ``pos`` (any int array)."""
        return np.searchsorted(self.rec_start, np.asarray(pos, dtype=np.int64), side="right") - 1

    def record_id(self, r: int) -> str:
        return bytes(self._ids[self._ids_off[r] : self._ids_off[r + 1]]).decode("utf-8")

    def work_name(self, w: int) -> str:
        return bytes(self._works[self._works_off[w] : self._works_off[w + 1]]).decode("utf-8")

    def work_meta(self, w: int) -> dict:
        """What the source says of work ``w`` (``corpus``, ``citation``, ``url``, ``place``,
        ...; :attr:`stoicheia.sources.SourceRecord.meta`), ``{}`` when the index has none."""
        if self._works_meta is None or w + 1 >= len(self._works_meta_off):
            return {}
        if w not in self._meta:
            a, b = int(self._works_meta_off[w]), int(self._works_meta_off[w + 1])
            raw = bytes(self._works_meta[a:b]).decode("utf-8")
            try:
                self._meta[w] = json.loads(raw) if raw else {}
            except ValueError:  # a hand edit: no citation rather than no parallels
                self._meta[w] = {}
        return self._meta[w]

    def line_index(self, pos: int, r: int) -> int | None:
        """The row in ``line_start`` of the line of record row ``r`` that slot ``pos`` stands
        on, or ``None`` (the record has no line numbers, or ``pos`` is before its first)."""
        k = int(np.searchsorted(self.line_start, pos, side="right")) - 1
        if k < 0 or self.line_start[k] < self.rec_start[r]:
            return None
        return k

    def line_label(self, k: int) -> str:
        """The printed number of line row ``k``."""
        a, b = self._line_label_off[k], self._line_label_off[k + 1]
        return bytes(self._line_label[a:b]).decode("utf-8")

    def lines(self, a: int, b: int) -> str | None:
        """The edition's lines that slots ``[a, b)`` of one record stand on: ``"5"``, ``"5–6"``
        (first and last, an en dash), or ``None`` when the record has no line numbers."""
        r = int(self.record_of(np.array([a]))[0])
        first = self.line_index(a, r)
        last = self.line_index(max(a, b - 1), r)
        if last is None:
            return None
        if first is None:  # the stretch begins before the first numbered line
            first = last
        if first == last:
            return self.line_label(first)
        return f"{self.line_label(first)}–{self.line_label(last)}"

    def source(self, pos: int, span: tuple[int, int] | None = None) -> Source:
        """The :class:`Source` of slot ``pos``; with ``span`` (slots ``[a, b)`` of the same
        record, e.g. a match with its context), also the lines it stands on."""
        r = int(self.record_of(np.array([pos]))[0])
        work = self.work_name(int(self.rec_work[r]))
        meta = self.work_meta(int(self.rec_work[r]))
        number = inscription_number(work)
        url = ISICILY_URL.format(number=number) if number is not None and "ISic" in work else ""
        url = str(meta.get("url") or url)
        return Source(
            self.tiers[int(self.rec_tier[r])],
            work,
            self.record_id(r),
            r,
            int(pos - self.rec_start[r]),
            url,
            self.lines(*span) if span is not None else None,
            span is not None,
            str(meta.get("citation") or ""),
        )

    def planes(self, a: int, b: int) -> Planes:
        """The :class:`Planes` of slots ``[a, b)`` (one record: the caller keeps to it)."""
        t = np.asarray(self.text[a:b])
        lk = np.asarray(self.look[a:b])
        fl = np.asarray(self.flow[a:b])
        lac = (fl // 28).astype(np.uint8)
        chars = np.where(lac > 0, A.MASK, np.maximum(t.astype(np.int16) - 1, 0)).astype(np.uint8)
        return Planes(
            chars,
            (fl % 4).astype(np.uint8),
            (lk // 3).astype(np.uint8),
            (lk % 3).astype(np.uint8),
            ((fl // 4) % 7).astype(np.uint8),
            lac,
        )

    def printed_parts(self, a: int, b: int, cuts: list[int]) -> list[str]:
        """Slots ``[a, b)`` as printed (accents, capitals, punctuation, lacunae in Leiden), cut at
        the absolute slots ``cuts`` (inside ``[a, b]``, ascending): one string per piece, a
        word space kept at the end of the piece it follows."""
        edges = [a, *[min(max(c, a), b) for c in cuts], b]
        out = []
        for x, y in zip(edges[:-1], edges[1:], strict=True):
            if x >= y:
                out.append("")
                continue
            piece = planes_to_text(self.planes(x, y))
            ends = int(self.flow[y - 1]) % 4 in (A.BOUNDARY_WORD, A.BOUNDARY_SENTENCE)
            out.append(piece + (" " if ends and y < b else ""))
        return out

    def record_span(self, r: int) -> tuple[int, int]:
        """The slots ``[start, end)`` of record row ``r`` (its separator excluded)."""
        return int(self.rec_start[r]), int(self.rec_start[r + 1]) - 1


@functools.lru_cache(maxsize=4)
def open_index(folder: str) -> ParallelsIndex:
    """One :class:`ParallelsIndex` per folder and process (opening maps files: milliseconds)."""
    return ParallelsIndex(folder)


__all__ = ["ISICILY_URL", "IndexError_", "ParallelsIndex", "Source", "open_index"]
