"""The attention sub-layers of section 3.1: attention, dropout (5.4), then `AddNorm`.

`SelfAttention` (global in the encoder, causal in the decoder) and `CrossAttention` are the
blocks `EncoderLayer` and `DecoderLayer` are made of; `FeedForwardBlock` is the third kind.
"""

import keras
from keras import ops

from keras_transformer._validation import check_divisible, check_num_heads, check_rate, check_size
from keras_transformer.layers._nested import ShowsSublayers
from keras_transformer.layers.add_norm import AddNorm
from keras_transformer.layers.attention import MultiHeadAttention


class _AttentionBlock(ShowsSublayers, keras.layers.Layer):
    """What the two attention blocks share: arguments, sub-layers and config."""

    def __init__(
        self,
        num_heads: int,
        key_dim: int | None = None,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        norm_first: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_num_heads(num_heads)
        if key_dim is not None:
            check_size("key_dim", key_dim)
        check_rate("dropout", dropout)
        check_rate("attention_dropout", attention_dropout)
        self.num_heads, self.key_dim, self.norm_first = num_heads, key_dim, norm_first
        self.dropout, self.attention_dropout = dropout, attention_dropout
        self.supports_masking = True

    def _build_block(self, inputs_shape, context_shape):
        key_dim = self.key_dim
        if key_dim is None:  # section 3.2.2: the heads split d_model
            check_divisible(inputs_shape[-1], self.num_heads)
            key_dim = inputs_shape[-1] // self.num_heads
        dtype = self.dtype_policy
        self.attention = MultiHeadAttention(
            self.num_heads, key_dim, dropout=self.attention_dropout, dtype=dtype, name="attention"
        )
        self.attention.build(inputs_shape, context_shape)
        self.dropout_layer = keras.layers.Dropout(self.dropout, dtype=dtype, name="dropout")
        self.add_norm = AddNorm(norm_first=self.norm_first, dtype=dtype, name="add_norm")
        self.add_norm.build(inputs_shape)

    def get_config(self):
        names = ("num_heads", "key_dim", "dropout", "attention_dropout", "norm_first")
        return {**super().get_config(), **{n: getattr(self, n) for n in names}}


@keras.saving.register_keras_serializable(package="keras_transformer")
class SelfAttention(_AttentionBlock):
    r"""Self-attention block: $\mathrm{AddNorm}(x, \mathrm{Dropout}(\mathrm{MultiHead}(x, x, x)))$.

    Section 3.2.3: every position attends to the sequence itself; global in the encoder, or
    `causal` in the decoder (position `t` sees only positions `<= t`). The block owns its
    `attention` (`MultiHeadAttention`), its residual dropout (section 5.4) and its `add_norm`.
    Masking: `padding_mask` gives padded keys weight 0; the outputs at padded positions are
    meaningless and never read by real positions.

    Args:
        num_heads, key_dim: attention heads; size per head (default `d_model // num_heads`).
        dropout, attention_dropout: on the output before the residual add, on the weights.
        norm_first, causal: pre-LN instead of post-LN; apply the causal (look-ahead) mask.

    Call arguments:
        inputs: `(batch, seq_len, d_model)`.
        padding_mask, training: optional bool `(batch, kv_len)`; whether dropout is active.
        return_attention_scores: also return `(batch, num_heads, seq_len, kv_len)`.
        cache, cache_update_index: see `MultiHeadAttention`; the cache is returned last.

    Returns:
        `(batch, seq_len, d_model)`, plus the scores and/or the cache.

    Example:
    >>> import numpy as np
    >>> x = np.random.rand(2, 5, 8).astype("float32")
    >>> tuple(SelfAttention(num_heads=2, causal=True)(x, padding_mask=np.ones((2, 5), bool)).shape)
    (2, 5, 8)

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, sections 3.1, 3.2.3, 5.4.
    """

    def __init__(self, num_heads: int, causal: bool = False, **kwargs):
        super().__init__(num_heads, **kwargs)
        self.causal = causal

    def build(self, inputs_shape):
        self._build_block(inputs_shape, inputs_shape)

    def call(
        self,
        inputs,
        padding_mask=None,
        training=None,
        return_attention_scores=False,
        cache=None,
        cache_update_index=None,
    ):
        x = self.add_norm.normalize_input(inputs)  # pre-LN: LayerNorm(x); post-LN: x
        attended, *extra = _as_tuple(
            self.attention(
                x,
                x,
                attention_mask=_key_mask(padding_mask),
                use_causal_mask=self.causal,
                return_attention_scores=return_attention_scores,
                training=training,
                cache=cache,
                cache_update_index=cache_update_index,
            )
        )  # extra: [scores (batch, num_heads, seq_len, kv_len)], [cache]
        output = self.add_norm(inputs, self.dropout_layer(attended, training=training))
        return output if not extra else (output, *extra)

    def get_config(self):
        return {**super().get_config(), "causal": self.causal}


@keras.saving.register_keras_serializable(package="keras_transformer")
class CrossAttention(_AttentionBlock):
    r"""Cross-attention block: $\mathrm{AddNorm}(x, \mathrm{Dropout}(\mathrm{MultiHead}(x, c, c)))$.

    Section 3.2.3: the queries come from the decoder stream `x` (the output of the decoder's
    self-attention block), the keys and values from the encoder output `context`. The block
    owns its `attention`, its residual dropout and its `add_norm`.
    Masking: `context_padding_mask` (`True` on real tokens) gives padded sources weight 0.

    Args:
        num_heads, key_dim, dropout, attention_dropout, norm_first: as in `SelfAttention`.

    Call arguments:
        inputs: decoder stream `(batch, tgt_len, d_model)`.
        context: encoder output `(batch, src_len, d_model)`; `None` with a `cache`.
        context_padding_mask, training: optional bool `(batch, src_len)`; dropout active.
        return_attention_scores: also return `(batch, num_heads, tgt_len, src_len)`.
        cache: `compute_cache(context)`, `(batch, 2, src_len, num_heads, key_dim)`, read only.

    Returns:
        `(batch, tgt_len, d_model)`, plus the scores if asked.

    Example:
    >>> import numpy as np
    >>> x, context = np.random.rand(2, 3, 8), np.random.rand(2, 6, 8)
    >>> out, scores = CrossAttention(num_heads=2)(x, context, return_attention_scores=True)
    >>> tuple(out.shape), tuple(scores.shape)
    ((2, 3, 8), (2, 2, 3, 6))

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, sections 3.1, 3.2.3, 5.4.
    """

    def build(self, inputs_shape, context_shape=None):
        self._build_block(inputs_shape, context_shape or inputs_shape)

    def call(
        self,
        inputs,
        context=None,
        context_padding_mask=None,
        training=None,
        return_attention_scores=False,
        cache=None,
    ):
        x = self.add_norm.normalize_input(inputs)
        attended, *extra = _as_tuple(
            self.attention(
                x,  # queries: the decoder stream
                x if context is None else context,  # keys and values (unused with a cache)
                attention_mask=_key_mask(context_padding_mask),
                return_attention_scores=return_attention_scores,
                training=training,
                cache=cache,  # read only: no cache_update_index
            )
        )  # extra: [scores (batch, num_heads, tgt_len, src_len)], [cache, unchanged]
        output = self.add_norm(inputs, self.dropout_layer(attended, training=training))
        return (output, extra[0]) if return_attention_scores else output

    def compute_cache(self, context):
        """Keys and values of `context`, `(batch, 2, src_len, num_heads, key_dim)`, for reuse."""
        return self.attention.compute_cache(context)


def _key_mask(padding_mask):
    """Bool `(batch, kv_len)` of real keys -> `(batch, 1, kv_len)`, the same for every query."""
    return None if padding_mask is None else ops.expand_dims(ops.cast(padding_mask, "bool"), 1)


def _as_tuple(results) -> tuple:
    return results if isinstance(results, tuple) else (results,)
