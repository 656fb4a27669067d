"""Greek text -> the inputs of a Stoicheia encoder, and its outputs -> Greek text
(copied into the folder by `stoicheia export`).

Load it the way the Hugging Face ecosystem does; the folder and ``transformers`` (with
``torch`` and ``numpy``) are all it needs::

    from transformers import AutoModel, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
    batch = tok(["μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχι[...]ος"], return_tensors="pt", return_planes=True)
    logits = model(**batch)
    tok.batch_decode(logits["char"].argmax(-1), skip_special_tokens=True)  # the letters
    tok.render(logits, batch)  # the text, lacunae filled in [ ], accents, capitals

Encoding is the ``stoicheia`` package's own: :meth:`StoicheiaTokenizer.encode_planes` calls
``encode_text`` of ``stoicheia_encode.py``, a copy of ``stoicheia/text/encode.py`` (with the
Leiden parser and the letter tables beside it) written into the folder at export time. So
any Unicode spelling (NFC, NFD, oxia or tonos forms, marks in any order) gives the letters
the model was trained on: one slot per Greek letter, ``ς``/``ϲ`` folded to ``σ``, capitals,
accents, breathings, iota subscript and diaeresis read off each letter into their own
planes, punctuation onto the letter before it, Leiden lacunae (``[...]``, ``[.5.]``,
``[-ca.5-]``, ``[---]``) as MASK slots. Spaces, digits, Latin letters and other characters
take no slot (they are counted in ``encode_planes(text).dropped``).

The vocabulary is the ``chars`` plane: the 24 letters α..ω (ids 0..23), ``[MASK]`` 24 (a
lost letter), ``[BLANK]`` 25 (the model's "no letter here", for lacunae of uncertain
width), ``[PAD]`` 26.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from transformers import BatchEncoding, PreTrainedTokenizer
from transformers.utils import logging as hf_logging

# transformers copies the files this module imports (and theirs) into its module cache.
from .stoicheia_alphabet import (
    BOUNDARY_SENTENCE,
    BOUNDARY_UNKNOWN,
    BOUNDARY_WORD,
    CAP_UNKNOWN,
    DIA_UNKNOWN,
    LETTERS,
    MASK,
    NUM_LETTERS,
    PAD,
    PUNCT_UNKNOWN,
)
from .stoicheia_clusters import LACUNA_CHARS  # noqa: F401
from .stoicheia_elision import resolve_context  # noqa: F401
from .stoicheia_encode import Encoded, encode_text
from .stoicheia_leiden import parse_leiden  # noqa: F401
from .stoicheia_leiden_lacunae import read_square  # noqa: F401
from .stoicheia_leiden_segments import Lacuna  # noqa: F401
from .stoicheia_lookalikes import fold_lookalikes  # noqa: F401
from .stoicheia_planes import Planes
from .stoicheia_prepass import prepass  # noqa: F401
from .stoicheia_render import planes_to_text

#: under transformers' own logger, so its verbosity settings apply (set_verbosity_error() hides it)
logger = hf_logging.get_logger("transformers.tokenization_stoicheia")
#: the key of the too-long warning in ``deprecation_warnings`` (given once per tokenizer, as
#: transformers' own tokenizers do)
_TOO_LONG = "sequence-length-is-longer-than-the-specified-maximum"

#: what a padding slot holds in each input plane
_PAD_VALUES = {
    "input_ids": PAD,
    "boundary": BOUNDARY_UNKNOWN,
    "dia": DIA_UNKNOWN,
    "punct": PUNCT_UNKNOWN,
    "attention_mask": 0,
    "cap": CAP_UNKNOWN,
    "lacuna": 0,
}
#: the planes of ``encode_text`` under the names the model takes (``chars`` is ``input_ids``)
_PLANE_OF = {
    "input_ids": "chars",
    "boundary": "boundary",
    "dia": "dia",
    "punct": "punct",
    "cap": "cap",
    "lacuna": "lacuna",
}


class StoicheiaTokenizer(PreTrainedTokenizer):
    """One token per Greek letter slot, with the letter's other planes alongside.

    ``tok(text_or_texts, return_tensors="pt")`` gives a :class:`BatchEncoding` of ``(B, T)``
    int64 arrays that ``model(**batch)`` takes: ``input_ids`` (the ``chars`` plane: letter
    0..23, MASK 24 at a lacuna slot, PAD 26), ``boundary`` (0 word-internal, 1 word-final,
    2 sentence-final, 3 unknown), ``dia`` (accent, breathing, iota subscript, diaeresis packed
    as ``((accent*3 + breathing)*2 + iota)*2 + diaeresis``, 48 unknown), ``punct`` (the mark
    after the letter: 0 none, 1 comma, 2 raised dot, 3 colon, 4 full stop, 5 question mark,
    6 unknown) and ``attention_mask`` (1 text, 0 padding). Shorter texts are padded on the
    right with PAD and the UNKNOWN ids. ``return_planes=True`` adds ``cap`` (1 capital, 2
    unknown) and ``lacuna`` (0 a letter, 1 a lost letter of known width, 2 of estimated
    width, 3 the stand-in of an unknown width): the model accepts and ignores them, and
    :meth:`render` keeps the text's capitals with them.
    """

    vocab_files_names: dict[str, str] = {}  # the vocabulary is the alphabet itself
    model_input_names = ["input_ids", "boundary", "dia", "punct", "attention_mask"]

    def __init__(self, mask_token="[MASK]", pad_token="[PAD]", blank_token="[BLANK]", **kwargs):
        self._tokens = [*LETTERS, mask_token, blank_token, pad_token]
        self._ids = {t: i for i, t in enumerate(self._tokens)}
        kwargs.setdefault("additional_special_tokens", [blank_token])
        super().__init__(mask_token=mask_token, pad_token=pad_token, **kwargs)

    # --- the vocabulary (the chars plane) -------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """27: the letters, MASK, BLANK and PAD."""
        return len(self._tokens)

    def get_vocab(self) -> dict[str, int]:
        """Token -> id: ``α`` 0 .. ``ω`` 23, ``[MASK]`` 24, ``[BLANK]`` 25, ``[PAD]`` 26."""
        return dict(self._ids)

    def _tokenize(self, text: str, **kwargs: Any) -> list[str]:
        """The letters of ``text`` as tokens (``[MASK]`` at a lacuna slot)."""
        return [self._tokens[c] for c in self.encode_planes(text).planes.chars.tolist()]

    def _convert_token_to_id(self, token: str) -> int:
        if token not in self._ids:
            raise ValueError(
                f"{token!r} is not a token; the tokens are the 24 letters α..ω, [MASK], [BLANK] "
                "and [PAD] (encode text with tok(text))"
            )
        return self._ids[token]

    def _convert_id_to_token(self, index: int) -> str:
        if not 0 <= int(index) < len(self._tokens):
            raise ValueError(f"id {index} is outside the vocabulary 0..{len(self._tokens) - 1}")
        return self._tokens[int(index)]

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        """The tokens joined without spaces (the letters carry no word division)."""
        return "".join(tokens)

    def _decode(self, token_ids, skip_special_tokens: bool = False, **kwargs: Any) -> str:
        """Letters of ``token_ids`` as one string; ``skip_special_tokens`` leaves out MASK,
        BLANK and PAD. (Word division, accents and capitals: :meth:`render`.)"""
        ids = [token_ids] if isinstance(token_ids, int) else [int(i) for i in token_ids]
        return "".join(
            self._convert_id_to_token(i)
            for i in ids
            if not (skip_special_tokens and i >= NUM_LETTERS)
        )

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple:
        """Nothing to write: the vocabulary is ``stoicheia_alphabet.LETTERS``."""
        return ()

    # --- text -> model inputs ---------------------------------------------------------------

    def encode_planes(self, text: str, strict: bool = False) -> Encoded:
        """``encode_text(text, strict=strict)`` of the stoicheia package: ``(planes, dropped,
        leiden)``, with ``planes`` the six aligned ``np.uint8`` arrays of shape ``(n,)``
        (``chars``, ``boundary``, ``dia``, ``cap``, ``punct``, ``lacuna``), ``dropped`` the
        characters that took no slot counted by kind, ``leiden`` what the notation held.
        ``strict=True`` raises ``LeidenError`` for notation that cannot be read (the default
        repairs it, as the corpus readers do, and counts ``leiden_repaired``); ``TypeError``
        for a text that is not a ``str``."""
        return encode_text(text, strict=strict)

    def __call__(
        self,
        text: str | list[str],
        *,
        return_tensors: str | None = None,
        padding: bool | str = True,
        return_attention_mask: bool = True,
        return_planes: bool = False,
        strict: bool = False,
        truncation: bool | str | None = None,
        max_length: int | None = None,
        **kwargs: Any,
    ) -> BatchEncoding:
        """Encode one text or a list of texts (class docstring for the keys).

        ``return_tensors``: ``"pt"`` or ``"np"`` for ``(B, T)`` int64 arrays (one text gives
        B = 1), ``None`` for lists (one text: flat lists). ``padding``: ``True``/``"longest"``
        pads to the longest text; ``False``/``"do_not_pad"`` leaves the rows as long as their
        texts (then tensors need texts of one length).

        Long texts. A text is cut only when asked: ``truncation=True`` (or
        ``"longest_first"``/``"only_first"``) keeps its first ``max_length`` letter slots
        (default ``tok.model_max_length``, the rows the model was trained on; the last ones
        with ``tok.truncation_side = "left"``). Without it, a text longer than
        ``model_max_length`` is encoded whole and a warning is logged (once per tokenizer, on
        transformers' logger, as its own tokenizers do): the model runs on such a row, but it
        was never trained on rows that long; ``stoicheia restore`` decodes a long text window
        by window.

        Raises ``ValueError`` for a text with no Greek letter (the message counts what was
        dropped), another ``padding`` or ``truncation``, ``max_length`` below 1 or given
        without ``truncation``, or rows of unequal length with ``padding=False`` and tensors;
        ``TypeError`` for an option this tokenizer does not take (``stride``,
        ``return_offsets_mapping``, ...).
        """
        if kwargs:
            raise TypeError(
                f"unexpected option(s) {', '.join(sorted(kwargs))}; the tokenizer takes "
                "return_tensors, padding, return_attention_mask, return_planes, strict, "
                "truncation and max_length"
            )
        if truncation not in (None, False, True, "do_not_truncate", "longest_first", "only_first"):
            raise ValueError(
                f"truncation={truncation!r}: pass truncation=True to cut texts to max_length "
                "letter slots (one text per row: 'longest_first' and 'only_first' do the same)"
            )
        cut = truncation not in (None, False, "do_not_truncate")
        if max_length is not None and (not isinstance(max_length, int) or max_length < 1):
            raise ValueError(f"max_length={max_length!r}: give a number of letter slots >= 1")
        if max_length is not None and not cut:
            raise ValueError(
                f"max_length={max_length} without truncation: a text is cut only when asked; "
                "pass truncation=True with it (padding is always to the longest text)"
            )
        limit = max_length if max_length is not None else self.model_max_length
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        if not texts:
            raise ValueError("no text given: pass a str or a non-empty list of str")
        rows = []
        for i, t in enumerate(texts):
            enc = self.encode_planes(t, strict=strict)
            if len(enc.planes) == 0:
                dropped = ", ".join(f"{k} {v}" for k, v in sorted(enc.dropped.items())) or "nothing"
                raise ValueError(
                    f"text {i} holds no Greek letter (dropped: {dropped}); give Greek text "
                    "(polytonic Unicode, Leiden notation for lacunae)"
                )
            planes = enc.planes
            if cut and len(planes) > limit:
                planes = (
                    planes[len(planes) - limit :]
                    if self.truncation_side == "left"
                    else planes[:limit]
                )
            elif not cut and len(planes) > self.model_max_length:
                self._warn_too_long(i, len(planes))
            rows.append(planes)
        keys = ["input_ids", "boundary", "dia", "punct"]
        keys += ["attention_mask"] if return_attention_mask else []
        keys += ["cap", "lacuna"] if return_planes else []
        lengths = [len(p) for p in rows]
        if padding not in (True, False, "longest", "do_not_pad"):
            raise ValueError(
                f"padding={padding!r}: this tokenizer pads to the longest text (True, "
                "'longest') or not at all (False, 'do_not_pad')"
            )
        pad = padding in (True, "longest")
        if not pad and return_tensors is not None and len(set(lengths)) > 1:
            raise ValueError(
                f"texts of {min(lengths)} to {max(lengths)} letters cannot make one tensor "
                "without padding: pass padding=True"
            )
        width = max(lengths)
        data: dict[str, Any] = {}
        for key in keys:
            out = []
            for p in rows:
                row = (
                    np.ones(len(p), np.int64)
                    if key == "attention_mask"
                    else getattr(p, _PLANE_OF[key]).astype(np.int64)
                )
                if pad and len(row) < width:
                    fill = np.full(width - len(row), _PAD_VALUES[key], np.int64)
                    row = np.concatenate([row, fill])
                out.append(row if return_tensors is not None else row.tolist())
            if return_tensors is not None:
                data[key] = np.stack(out)
            else:
                data[key] = out[0] if single else out
        return BatchEncoding(data, tensor_type=return_tensors)

    def _warn_too_long(self, i: int, n: int) -> None:
        """The too-long warning, once per tokenizer (transformers' ``deprecation_warnings``)."""
        if self.deprecation_warnings.get(_TOO_LONG, False):
            return
        self.deprecation_warnings[_TOO_LONG] = True
        logger.warning(
            f"text {i} takes {n} letter slots, more than model_max_length={self.model_max_length} "
            "(the rows the model was trained on): it is encoded whole and the model runs on it, "
            "but was never trained on rows this long; pass truncation=True to cut texts to "
            f"{self.model_max_length} slots, or restore long texts with `stoicheia restore`, "
            "which decodes them window by window (this warning is given once)"
        )

    # --- model outputs -> text ---------------------------------------------------------------

    def render(
        self, logits: dict[str, Any], batch: dict[str, Any] | None = None, brackets: bool = True
    ) -> list[str]:
        """One reading of each row as polytonic Greek text, from one forward pass.

        ``logits``: the model's output dict (``char`` (B, T, 27), ``boundary`` (B, T, 3),
        ``dia`` (B, T, 48), ``cap`` (B, T, 2), ``punct`` (B, T, 6); tensors or arrays).
        ``batch``: the :class:`BatchEncoding` the logits came from, or ``None``. With it,
        every letter and plane value the text gave is kept, and only what it did not give is
        taken from the model: the letter of each MASK slot (its most likely letter or BLANK;
        a BLANK slot is left out), and the unknown word division, accents, capitals and
        punctuation (most likely value of each head); letters the model filled are put in
        ``[ ]`` (Leiden for supplied letters) unless ``brackets=False``. Without it, every
        slot is read from the model. Padding (``attention_mask`` 0) is left out.

        This is a single pass, every slot at once; ``stoicheia restore`` decodes a lacuna
        letter by letter, most confident first, with beams, and fits lacunae of uncertain
        width. Raises ``ValueError`` for logits and a batch of different shapes.
        """
        arr = {k: _numpy(v) for k, v in logits.items()}
        b_size, t_size = arr["char"].shape[:2]
        given = {k: _numpy(v) for k, v in (batch or {}).items()}
        for k, v in given.items():
            if v.ndim == 1:
                given[k] = v = v[None, :]
            if v.shape[:2] != (b_size, t_size):
                raise ValueError(
                    f"batch[{k!r}] has shape {tuple(v.shape)}, the logits {(b_size, t_size)}"
                )
        # the letter of a slot: the most likely of the 24 letters and BLANK (MASK and PAD
        # are inputs only; BLANK ends a lacuna of uncertain width)
        scores = arr["char"][..., : NUM_LETTERS + 2].copy()
        scores[..., MASK] = -np.inf
        letter = scores.argmax(-1)
        heads = {k: arr[k].argmax(-1) for k in ("boundary", "dia", "cap", "punct")}
        unknown = {
            "boundary": BOUNDARY_UNKNOWN,
            "dia": DIA_UNKNOWN,
            "cap": CAP_UNKNOWN,
            "punct": PUNCT_UNKNOWN,
        }
        texts = []
        for b in range(b_size):
            n = int(given["attention_mask"][b].sum()) if "attention_mask" in given else t_size
            slots = []  # (chars, boundary, dia, cap, punct, filled)
            for i in range(n):
                inp = int(given["input_ids"][b, i]) if "input_ids" in given else MASK
                filled = inp >= NUM_LETTERS
                c = int(letter[b, i]) if filled else inp
                if c >= NUM_LETTERS:
                    continue  # BLANK: no letter in this slot
                vals = []
                for k in ("boundary", "dia", "cap", "punct"):
                    v = int(given[k][b, i]) if k in given else unknown[k]
                    vals.append(int(heads[k][b, i]) if v == unknown[k] else v)
                slots.append((c, *vals, filled and "input_ids" in given and brackets))
            texts.append(_render_slots(slots))
        return texts


def _numpy(x: Any) -> np.ndarray:
    """A tensor (any device) or array-like as a numpy array."""
    if hasattr(x, "detach"):
        x = x.detach().float().cpu() if x.is_floating_point() else x.detach().cpu()
        return x.numpy()
    return np.asarray(x)


def _render_slots(slots: list[tuple[int, int, int, int, int, bool]]) -> str:
    """Letters with their planes -> text; runs of filled letters in ``[ ]``, each bracket
    closing before the punctuation and the space that follow its last letter."""
    pieces = []
    for i, (c, b, d, cap, pu, filled) in enumerate(slots):
        ends = b in (BOUNDARY_WORD, BOUNDARY_SENTENCE)
        one = [np.array([v], np.uint8) for v in (c, BOUNDARY_WORD if ends else 0, d, cap)]
        letter = planes_to_text(Planes(*one, np.zeros(1, np.uint8)))
        with_punct = planes_to_text(Planes(*one, np.array([pu], np.uint8)))
        opens = filled and (i == 0 or not slots[i - 1][5])
        closes = filled and (i == len(slots) - 1 or not slots[i + 1][5])
        space = " " if ends and i < len(slots) - 1 else ""
        pieces.append(
            ("[" if opens else "")
            + letter
            + ("]" if closes else "")
            + with_punct[len(letter) :]
            + space
        )
    return "".join(pieces)
