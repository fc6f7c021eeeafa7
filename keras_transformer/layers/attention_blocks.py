"""Self-attention (global or causal) and cross-attention sub-layers.

Each block is one sub-layer of the paper's encoder or decoder: multi-head
attention, dropout on its output, then the residual connection and layer
normalization of `AddNorm` (section 3.1 and 5.4 of the paper).
"""

from __future__ import annotations

import keras
from keras import ops

from keras_transformer._validation import check_divisible, check_positive_int, check_rate
from keras_transformer.layers.add_norm import AddNorm
from keras_transformer.layers.attention import MultiHeadAttention


class _AttentionBlock(keras.layers.Layer):
    """Shared constructor, build and config of the two attention blocks."""

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
        check_positive_int("num_heads", num_heads)
        if key_dim is not None:
            check_positive_int("key_dim", key_dim)
        check_rate("dropout", dropout)
        check_rate("attention_dropout", attention_dropout)
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.norm_first = norm_first
        self.supports_masking = True

    def _build_block(self, input_shape, kv_shape):
        d_model = input_shape[-1]
        key_dim = self.key_dim
        if key_dim is None:
            check_divisible(d_model, self.num_heads)
            key_dim = d_model // self.num_heads
        self.attention = MultiHeadAttention(
            num_heads=self.num_heads,
            key_dim=key_dim,
            dropout=self.attention_dropout,
            dtype=self.dtype_policy,
            name="attention",
        )
        self.attention.build(input_shape, kv_shape)
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="dropout"
        )
        self.add_norm = AddNorm(
            norm_first=self.norm_first, dtype=self.dtype_policy, name="add_norm"
        )
        self.add_norm.build(input_shape)

    def _finish(self, inputs, attended, training):
        return self.add_norm(inputs, self.dropout_layer(attended, training=training))

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "norm_first": self.norm_first,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_transformer")
class SelfAttention(_AttentionBlock):
    """Self-attention sub-layer: every position attends to the sequence itself.

    Global (encoder, `causal=False`): each position sees every real position,
    before and after it. Causal (decoder, `causal=True`): position `t` sees only
    positions `<= t`, so training with teacher forcing cannot peek at the
    tokens it must predict (section 3.2.3).

    Masking: pass `padding_mask` (bool `(batch, seq_len)`, `True` on real
    tokens); padded keys get weight 0. Outputs at padded positions are
    meaningless and must be ignored downstream (the loss masks them).

    Args:
        num_heads: attention heads.
        key_dim: size per head; default `d_model // num_heads`.
        dropout: dropout on the sub-layer output before the residual add.
        attention_dropout: dropout on the attention weights.
        norm_first: pre-LN instead of the paper's post-LN.
        causal: apply the causal (look-ahead) mask.

    Call arguments:
        inputs: `(batch, seq_len, d_model)`.
        padding_mask: optional bool `(batch, kv_len)`.
        training: whether dropout is active.
        return_attention_scores: also return `(batch, num_heads, seq_len, kv_len)`.
        cache, cache_update_index: key/value cache for step-by-step decoding,
            see `MultiHeadAttention`; the cache is then returned last.

    Returns:
        `(batch, seq_len, d_model)`, plus the scores and/or the cache.

    Example:

    >>> import numpy as np
    >>> block = SelfAttention(num_heads=2, causal=True)
    >>> x = np.random.rand(2, 5, 8).astype("float32")
    >>> tuple(block(x, padding_mask=np.ones((2, 5), bool)).shape)
    (2, 5, 8)

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, sections 3.2.3, 5.4.
    """

    def __init__(self, num_heads: int, causal: bool = False, **kwargs):
        super().__init__(num_heads, **kwargs)
        self.causal = causal

    def build(self, input_shape):
        self._build_block(input_shape, input_shape)

    def call(
        self,
        inputs,
        padding_mask=None,
        training=None,
        return_attention_scores=False,
        cache=None,
        cache_update_index=None,
    ):
        h = self.add_norm.normalize_input(inputs)
        attention_mask = None
        if padding_mask is not None:
            attention_mask = ops.expand_dims(
                ops.cast(padding_mask, "bool"), 1
            )  # (batch, 1, kv_len)
        results = self.attention(
            h,
            h,
            attention_mask=attention_mask,
            use_causal_mask=self.causal,
            return_attention_scores=return_attention_scores,
            training=training,
            cache=cache,
            cache_update_index=cache_update_index,
        )
        if not isinstance(results, tuple):
            results = (results,)
        output = self._finish(inputs, results[0], training)
        return output if len(results) == 1 else (output, *results[1:])

    def get_config(self):
        config = super().get_config()
        config.update({"causal": self.causal})
        return config


@keras.saving.register_keras_serializable(package="keras_transformer")
class CrossAttention(_AttentionBlock):
    """Cross-attention sub-layer: decoder positions attend to the encoder output.

    Queries come from the decoder stream, keys and values from the encoder
    output (`context`), so every target position can read any source position
    (section 3.2.3, "encoder-decoder attention").

    Masking: pass `context_padding_mask` (bool `(batch, src_len)`, `True` on
    real source tokens); padded source positions get weight 0, so appending
    padding to the source does not change the result.

    Args:
        num_heads, key_dim, dropout, attention_dropout, norm_first: as in
            `SelfAttention`.

    Call arguments:
        inputs: decoder stream `(batch, tgt_len, d_model)`.
        context: encoder output `(batch, src_len, d_model)`; may be `None`
            when `cache` holds its keys and values.
        context_padding_mask: optional bool `(batch, src_len)`.
        training: whether dropout is active.
        return_attention_scores: also return `(batch, num_heads, tgt_len, src_len)`.
        cache: precomputed keys and values of the context from
            `compute_cache(context)`, shape `(batch, 2, src_len, num_heads, key_dim)`.

    Returns:
        `(batch, tgt_len, d_model)`, plus the scores if asked.

    Example:

    >>> import numpy as np
    >>> block = CrossAttention(num_heads=2)
    >>> x = np.random.rand(2, 3, 8).astype("float32")
    >>> context = np.random.rand(2, 6, 8).astype("float32")
    >>> out, scores = block(x, context, return_attention_scores=True)
    >>> tuple(out.shape), tuple(scores.shape)
    ((2, 3, 8), (2, 2, 3, 6))

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.2.3.
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
        h = self.add_norm.normalize_input(inputs)
        attention_mask = None
        if context_padding_mask is not None:
            attention_mask = ops.expand_dims(ops.cast(context_padding_mask, "bool"), 1)
        value = context if context is not None else h  # unused when a cache is given
        results = self.attention(
            h,
            value,
            attention_mask=attention_mask,
            return_attention_scores=return_attention_scores,
            training=training,
            cache=cache,
        )
        if cache is not None:
            results = results[:-1] if return_attention_scores else results[0]
        if return_attention_scores:
            return self._finish(inputs, results[0], training), results[1]
        return self._finish(inputs, results, training)

    def compute_cache(self, context):
        """Keys and values of `context`, `(batch, 2, src_len, num_heads, key_dim)`.

        Computed once per source batch and reused at every decoding step.
        """
        return ops.stack(
            [self.attention.key_dense(context), self.attention.value_dense(context)], axis=1
        )
