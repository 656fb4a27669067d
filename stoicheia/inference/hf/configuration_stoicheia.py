"""Hugging Face configuration of a Stoicheia encoder (copied by `stoicheia export`)."""

from transformers import PretrainedConfig


class StoicheiaConfig(PretrainedConfig):
    """The encoder shape (``encoder``: the fields of ``EncoderConfig``) and, under
    ``stoicheia``, what the exporter recorded (run configuration, step, held-out figures)."""

    model_type = "stoicheia"

    def __init__(self, encoder=None, stoicheia=None, **kwargs):
        self.encoder = dict(encoder or {})
        self.stoicheia = dict(stoicheia or {})
        super().__init__(**kwargs)
