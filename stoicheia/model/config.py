"""Shape of the character encoder: one dataclass, checked by :meth:`EncoderConfig.validate`."""

from __future__ import annotations

from dataclasses import dataclass

ATTN_IMPLS = ("sdpa", "flex")


def mlp_hidden_size(d_model: int) -> int:
    """GeGLU hidden width: ``8/3 * d_model`` rounded *up* to a multiple of 64.

    8/3 keeps the gated MLP's parameter count equal to a 4x non-gated MLP
    (Shazeer 2020, "GLU Variants Improve Transformer"); the multiple of 64 keeps the matmuls
    tensor-core friendly. Computed in integers, ``ceil(8 d / (3 * 64)) * 64``, so there is no
    float rounding (e.g. ``d_model=256`` -> 704, ``d_model=768`` -> 2048).
    """
    return -(-8 * d_model // (3 * 64)) * 64


@dataclass
class EncoderConfig:
    """Hyper-parameters of :class:`stoicheia.model.encoder.CharBertEncoder`.

    - ``d_model``: residual width; ``n_heads`` heads of ``head_dim = d_model // n_heads``.
    - ``n_layers``: number of blocks; block ``i`` is *global* (whole document) when
      ``(i + 1) % global_every == 0``, otherwise *local*: a slot attends only to slots of the
      same document with ``|i - j| <= char_window // 2``. With ``n_layers < global_every``
      every block is local; ``global_every=1`` makes every block global.
    - ``rope_theta``: RoPE base (Su et al. 2021), applied on the per-document position ``pos``.
    - ``norm_eps``: epsilon of every RMSNorm.
    - ``attn_impl``: ``"sdpa"`` (dense boolean mask, any device) or ``"flex"``
      (FlexAttention with a block-sparse mask; the GPU path).
    - ``init_std``: std of the normal init of every linear/embedding weight (output
      projections of attention and MLP are further scaled by ``1/sqrt(2 * n_layers)``).
    - ``qk_norm_init``: initial value of the gains of the per-head query and key RMSNorms
      (learned afterwards). Attention logits are ``g_q g_k cos(q, k) sqrt(head_dim)``, so at
      the default 1 a head's logits lie within ``+-sqrt(head_dim)`` and its first rows are
      nearly uniform; 2 scales the logits by 4 (the QK-norm scale of Henry et al. 2020,
      "Query-Key Normalization for Transformers", here only its starting value).
      docs/benchmarks.md, "The unigram plateau", measures what it changes.
    """

    d_model: int = 256
    n_layers: int = 4
    n_heads: int = 4
    char_window: int = 256
    global_every: int = 4
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    attn_impl: str = "sdpa"
    init_std: float = 0.02
    qk_norm_init: float = 1.0

    @property
    def head_dim(self) -> int:
        """Per-head width ``d_model // n_heads``."""
        return self.d_model // self.n_heads

    @property
    def mlp_hidden(self) -> int:
        """GeGLU hidden width, see :func:`mlp_hidden_size`."""
        return mlp_hidden_size(self.d_model)

    def is_global(self, layer: int) -> bool:
        """Whether block ``layer`` (0-based) attends over the whole document."""
        return (layer + 1) % self.global_every == 0

    def validate(self) -> EncoderConfig:
        """Check every field; returns ``self`` so it can be chained.

        Raises ``ValueError`` whose message starts with ``model.<field>`` and says what to use.
        """

        def bad(name: str, why: str) -> ValueError:
            return ValueError(f"model.{name}={getattr(self, name)!r}: {why}")

        for name in ("d_model", "n_layers", "n_heads", "char_window", "global_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise bad(name, "must be an integer")
            if value < 1:
                raise bad(name, "must be >= 1")
        if self.d_model % self.n_heads != 0:
            raise bad("n_heads", f"must divide d_model={self.d_model}")
        if self.head_dim % 2 != 0:
            raise bad(
                "n_heads",
                f"head_dim = d_model // n_heads = {self.head_dim} must be even "
                "(RoPE rotates pairs)",
            )
        if self.char_window < 2 or self.char_window % 2 != 0:
            raise bad(
                "char_window",
                "must be an even number >= 2 (a slot sees char_window // 2 on each side)",
            )
        for name in ("rope_theta", "norm_eps", "init_std", "qk_norm_init"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise bad(name, "must be a number > 0")
        if self.attn_impl not in ATTN_IMPLS:
            raise bad("attn_impl", f"must be one of {', '.join(ATTN_IMPLS)}")
        if self.attn_impl == "flex" and self.head_dim < 16:
            # FlexAttention's Triton kernel (torch 2.7) raises NYI for head dims below 16.
            raise bad(
                "n_heads",
                f"attn_impl='flex' needs head_dim >= 16, got {self.head_dim}; use fewer heads",
            )
        return self


#: Names of the held-out metrics in the order they are reported (the classes are
#: :data:`stoicheia.model.metrics.EVAL_METRICS`); here so that a configuration is checked
#: without importing torch. Lower is better only for ``bits_per_char``.
EVAL_METRIC_NAMES = (
    "bits_per_char",
    "boundary_f1",
    "dia_acc",
    "dia_macro_acc",
    "punct_acc",
    "punct_macro_acc",
)
