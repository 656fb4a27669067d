"""Request and response bodies of the restoration server's JSON API (pydantic models; FastAPI
publishes them as the OpenAPI schema at ``/openapi.json``, served locally; FastAPI's ``/docs``
page is off because it loads Swagger UI from a CDN).

The response is the restore result JSON of ``stoicheia restore --json`` (every field of
:meth:`~stoicheia.inference.restore.RestoreResult.to_json`, nothing dropped; see
``docs/restoration-page.md``), plus ``epidoc`` (one ``<ab>`` fragment per restoration) and
``respaced`` (the model's rendering of each restoration, when ``respace`` or ``accents`` was
asked).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from stoicheia.text.leiden_segments import MAX_LACUNA_WIDTH

#: the most restorations one request may ask for (each costs beam width in forward passes)
MAX_TOP_K = 20


class RestoreRequest(BaseModel):
    """What ``POST /restore`` takes: a Leiden text and the options of ``stoicheia restore``.

    Strict types (pydantic ``strict``): ``"top_k": true`` or ``"respace": "yes"`` are refused
    with the field and the type it must be, not read as 1 or True; an integer is taken for
    ``about_margin`` (JSON does not tell 1 from 1.0). The text has no length limit of its own:
    the request body's (256 KiB, ``stoicheia.serve.body_limit.MAX_JSON_BYTES``) is the only one, as
    ``stoicheia restore`` has none (a 50,000-letter text, 117 KB, is restored window by
    window)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    text: str = Field(
        ...,
        min_length=1,
        description="Greek text in Leiden notation: [...] [.5.] [-ca.5-] [5±3] [---] [καὶ] α̣ "
        "(no length limit but the request body's, 256 KiB)",
        examples=["καὶ τοῦ δή[5±3] τοῦ ἑαυτοῦ"],
    )
    top_k: int = Field(5, ge=1, le=MAX_TOP_K, description="restorations returned, best first")
    unknown_width: int = Field(
        20,
        ge=1,
        le=MAX_LACUNA_WIDTH,
        description="most letters a lacuna of unknown width [---] may hold",
    )
    about_margin: float = Field(
        0.25, ge=0, le=1, description="[-ca.N-] means N ± max(1, round(margin × N)) letters"
    )
    respace: bool = Field(
        False, description="word division, accents, capitals and punctuation from the model"
    )
    accents: bool = Field(
        False,
        description="accents, breathings and capitals from the model, the input's word "
        "division and punctuation kept (not with respace)",
    )
    supplements: Literal["keep", "repredict"] = Field(
        "keep", description="keep the letters an editor supplied in [ ] or re-predict them"
    )
    decoder: Literal["fused", "parallels", "ngram", "model"] | None = Field(
        None,
        description="which decoder fills the gaps: fused (network, n-gram and parallels as "
        "whole readings), parallels (the corpus's parallels first, then the n-gram), ngram (the "
        "letter n-gram alone), model (the network alone); null: the server's default (GET "
        "/model)",
    )


class Alternative(BaseModel):
    """One fill of one gap."""

    fill: str
    prob: float = Field(description="probability, 0 to 1")
    logprob: float = Field(description="natural log of prob (nats)")


class EditorReading(BaseModel):
    """How the model scores the editor's supplement of a re-predicted gap."""

    reading: str
    prob: float
    rank: int


class ParallelOut(BaseModel):
    """One corpus passage that supplies a fill (docs/parallels.md)."""

    tier: str
    work: str = Field(description="EpiDoc file or Author/work.xml of the training text")
    record: str
    label: str = Field(description="the source as listed, e.g. 'ISic000154, l. 5'")
    line: str | None = Field(
        default=None,
        description="the edition's printed line(s) of the passage ('5', '5–6'); null: unknown",
    )
    url: str = Field(description="the edition's own page (I.Sicily), or ''")
    record_index: int = Field(description="row of the parallels index: GET /source/{row}")
    at: list[int] = Field(
        description="[start, end) of the matched passage in the record, in letters"
    )
    letters_matched: list[int] = Field(description="[before, after]: context letters matched")
    supplies: str = Field(description="what the passage has in the gap, as printed")
    pieces: list[str] = Field(
        description="before, left context matched, fill, right context matched, after (as printed)"
    )
    passage: str = Field(description="the pieces joined, matched context in ⟪ ⟫, fill in ⸢ ⸣")


class FillParallelsOut(BaseModel):
    """A fill the parallels supply for a gap, with its best parallels."""

    fill: str = Field(description="the fill's letters (base letters)")
    letters_matched: int = Field(description="context letters matched, both sides together")
    sides: list[int] = Field(description="[before, after]")
    sources: int = Field(description="independent sources (copies of one text count once)")
    prob: float = Field(description="its share of the gap's parallels, 0 to 1")
    parallels: list[ParallelOut]
    lone_letter: int | None = Field(
        None,
        description="where its word division, between the text's, leaves a letter alone as a "
        "word Greek does not write (πρὸ [ς δὲ]): that letter's place in the fill, and the fill "
        "is not offered; null: none",
    )


class GapOut(BaseModel):
    """One lacuna, uncertain letter or re-predicted supplement of the input."""

    index: int
    kind: Literal["lacuna", "uncertain", "supplement"]
    notation: str = Field(description="as typed, e.g. '[---]', '[.5.]', 'α̣', '[περὶ]'")
    start: int = Field(
        description="offset of the notation in input, in Unicode code points (Python str "
        "indices; a character outside the BMP such as 𐅵 counts one, not two UTF-16 units)"
    )
    end: int = Field(description="offset just past the notation, in code points")
    min_letters: int
    max_letters: int
    fill: str = Field(description="best fill as printed")
    letter_probs: list[float] = Field(description="one probability per letter of fill")
    alternatives: list[Alternative] = Field(description="this gap's own top-k fills, distinct")
    width_probs: dict[str, float] | None = Field(
        description="P(width = N letters) for a gap of uncertain width"
    )
    editor: EditorReading | None = None
    parallels: list[FillParallelsOut] | None = Field(
        None, description="the gap's parallels, best first (absent without a parallels index)"
    )
    parallels_context: list[int] | None = Field(
        None,
        description="[before, after]: the letters of context the parallels were searched "
        "with on each side of the gap; 0 on the side where the text has none (a stone's edge, "
        "a lacuna beside it): the letters were matched on the other side only (absent without "
        "a parallels index)",
    )


class RestorationOut(BaseModel):
    """One restoration of the whole text."""

    text: str = Field(description="the input with each gap replaced by its fill, in Leiden")
    logprob: float = Field(
        description="natural-log probability of the whole restoration (its gaps' readings "
        "together; an editor's supplement kept with score_supplements at its score); the page "
        "shows exp(logprob) as a percentage"
    )
    fills: list[str] = Field(description="fills[j] is the fill of gaps[j], as printed")
    letters: list[str] = Field(
        description="letters[j] is the same fill in base letters (lower case, no marks, "
        "no word breaks), as in stoicheia restore --json"
    )


class RestoreResponse(BaseModel):
    """What ``POST /restore`` answers."""

    input: str
    gaps: list[GapOut]
    restorations: list[RestorationOut]
    notes: list[str]
    epidoc: list[str] = Field(
        description="each restoration as an EpiDoc <ab> fragment (same order)"
    )
    respaced: list[str] | None = Field(
        None,
        description="with respace (or accents): each restoration as the model writes it (word "
        "division, accents, capitals, punctuation from its heads, or its accents alone; "
        "restored letters in [ ]), else null",
    )


class ErrorResponse(BaseModel):
    """Every refused request: one line saying what is wrong and how to fix it."""

    error: str


class ModelInfo(BaseModel):
    """The model the server restores with (``GET /model``)."""

    source: str = Field(
        description="the checkpoint by its folder and file name (stoicheia-demo/best.pt) or its "
        "object-store URI; never the server's absolute path"
    )
    kind: str
    step: int | None
    run_name: str | None
    shipped: bool = Field(
        False,
        description="whether it is the base model shipped inside the package (docs/model-card.md)",
    )
    seq_len: int
    epidoc_upload: bool = Field(description="whether POST /restore-epidoc is available")
    ngram: bool = Field(description="whether a letter n-gram is fused into the search")
    ngram_weight: float = Field(description="its weight, 0 to 1 (0 without one)")
    parallels: bool = Field(
        description="whether a parallels index is open: each gap lists its parallels"
    )
    parallels_weight: float = Field(
        description="their weight in the letter-by-letter search, 0 to 1 (0: not fused so)"
    )
    readings: bool = Field(
        False,
        description="whether the parallels' fills compete with the search's as whole readings "
        "(the fused decoder's default with an index)",
    )
    experts_error: str | None = Field(
        None, description="why the n-gram or the parallels could not be read, else null"
    )
    decoders: list[str] = Field(
        default_factory=list, description="the decoders a request may ask for (its 'decoder')"
    )
    decoder: str = Field("fused", description="the decoder used when a request names none")


__all__ = [
    "MAX_TOP_K",
    "Alternative",
    "EditorReading",
    "ErrorResponse",
    "GapOut",
    "ModelInfo",
    "RestorationOut",
    "RestoreRequest",
    "RestoreResponse",
]
