"""Hugging Face wrapper of the Stoicheia character encoder (copied by `stoicheia export`).

Inputs are the aligned letter planes, each ``(B, T)`` int64: ``chars`` (letters 0..23 in the
order of ``stoicheia_alphabet.LETTERS``, MASK 24 for a lost letter, PAD 26), and optionally
``boundary``, ``dia``, ``punct`` (their UNKNOWN ids by default), ``seg_id`` and ``pos``;
``input_ids`` is accepted for ``chars`` and ``attention_mask`` for ``seg_id``. The
output is the dict of float32 logits ``char`` (B, T, 27), ``boundary`` (B, T, 3), ``dia``
(B, T, 48), ``cap`` (B, T, 2), ``punct`` (B, T, 6).

Greek text becomes these inputs with the tokenizer of the same folder
(``tokenization_stoicheia.py``)::

    tok = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    batch = tok(["μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχι[...]ος"], return_tensors="pt", return_planes=True)
    logits = model(**batch)
    tok.batch_decode(logits["char"].argmax(-1), skip_special_tokens=True)  # the letters
    tok.render(logits, batch)  # the text, lacunae filled in [ ]

``stoicheia restore FOLDER "TEXT"`` (the ``stoicheia`` package) decodes lacunae iteratively,
with beams and lacunae of uncertain width.
"""

from transformers import PreTrainedModel

from .configuration_stoicheia import StoicheiaConfig

# transformers copies the files this module imports (and theirs), so every module of the
# encoder is named here, also those that only the encoder imports.
from .stoicheia_alphabet import LETTERS  # noqa: F401
from .stoicheia_attention import build_masks  # noqa: F401
from .stoicheia_config import EncoderConfig
from .stoicheia_encoder import CharBertEncoder


class StoicheiaEncoderModel(PreTrainedModel):
    """The encoder of a Stoicheia checkpoint; ``forward`` is ``CharBertEncoder.forward``."""

    config_class = StoicheiaConfig
    base_model_prefix = "stoicheia"
    main_input_name = "chars"

    def __init__(self, config):
        super().__init__(config)
        self.encoder = CharBertEncoder(EncoderConfig(**config.encoder))
        self.post_init()

    def _init_weights(self, module):
        pass  # the encoder initialises itself; from_pretrained then loads every weight

    def forward(
        self,
        chars=None,
        boundary=None,
        dia=None,
        punct=None,
        seg_id=None,
        pos=None,
        input_ids=None,
        attention_mask=None,
        cap=None,
        lacuna=None,
        **kwargs,
    ):
        """Logits of ``CharBertEncoder.forward``. ``input_ids`` is another name for ``chars``
        (the name transformers code passes); ``attention_mask`` (1 text, 0 padding) stands for
        ``seg_id`` when that is not given; ``cap`` and ``lacuna`` (what the tokenizer adds with
        ``return_planes=True``) are accepted and not used: the encoder reads neither. Raises
        ``ValueError`` for no ids, both names, or a tensor that is not (B, T); ``TypeError``
        for an argument the model does not take."""
        if input_ids is not None:
            if chars is not None:
                raise ValueError("give the letter ids once: chars or input_ids, not both")
            chars = input_ids
        if chars is None:
            raise ValueError(
                "no letter ids: call model(chars) or model(input_ids=chars) with a (B, T) "
                "int64 tensor"
            )
        if attention_mask is not None and seg_id is None:
            seg_id = attention_mask.long() if hasattr(attention_mask, "long") else attention_mask
        extra = sorted(k for k, v in kwargs.items() if v is not None and v is not False)
        if extra:
            raise TypeError(
                f"unexpected argument(s) {', '.join(extra)}; the model takes chars (or "
                "input_ids), boundary, dia, punct, seg_id (or attention_mask) and pos"
            )
        return self.encoder(chars, boundary=boundary, dia=dia, punct=punct, seg_id=seg_id, pos=pos)
