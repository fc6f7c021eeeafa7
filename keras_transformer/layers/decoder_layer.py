"""One layer of the Transformer decoder (section 3.1 of the paper)."""

import keras

from keras_transformer.layers.attention_blocks import CrossAttention, SelfAttention
from keras_transformer.layers.encoder_layer import EncoderLayer


@keras.saving.register_keras_serializable(package="keras_transformer")
class DecoderLayer(EncoderLayer):
    """Causal self-attention, cross-attention to the encoder, feed-forward.

    Section 3.1: target position `t` sees targets `<= t` and the whole source.
    `cross_attention=False` gives the block of a decoder-only model.
    Masking: `padding_mask` hides padded target keys, `context_padding_mask` padded sources.

    Args:
        num_heads, dff, **kwargs: as in `EncoderLayer`.
        cross_attention: include the cross-attention sub-layer.

    Call arguments:
        inputs: target stream `(batch, tgt_len, d_model)`.
        context: encoder output `(batch, src_len, d_model)`; `None` with a cache or none.
        padding_mask: optional bool `(batch, kv_len)` of the target keys.
        context_padding_mask, training: optional bool `(batch, src_len)`; dropout active.
        return_attention_scores: also return `{"self_attention": ..., "cross_attention": ...}`.
        self_attention_cache: `(batch, 2, max_len, num_heads, key_dim)`, step by step.
        cross_attention_cache, cache_update_index: from `cross_attention.compute_cache(context)`;
            absolute position of `inputs[:, 0]` in the self-attention cache.

    Returns:
        `(batch, tgt_len, d_model)`, plus the scores dict and/or the updated cache (last).

    Example:
    >>> import numpy as np
    >>> x, context = np.random.rand(2, 4, 8), np.random.rand(2, 6, 8)
    >>> tuple(DecoderLayer(num_heads=2, dff=16)(x, context).shape)
    (2, 4, 8)

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.1.
    """

    def __init__(self, num_heads: int, dff: int, cross_attention: bool = True, **kwargs):
        super().__init__(num_heads, dff, **kwargs)
        self.cross_attention = cross_attention

    def build(self, inputs_shape, context_shape=None):
        kwargs = self._attention_kwargs()
        self.self_attention = SelfAttention(**kwargs, causal=True, name="self_attention")
        self.self_attention.build(inputs_shape)
        if self.cross_attention:
            self.cross_attention_block = CrossAttention(**kwargs, name="cross_attention")
            self.cross_attention_block.build(inputs_shape, context_shape or inputs_shape)
        self._build_feed_forward(inputs_shape)

    def call(
        self,
        inputs,
        context=None,
        padding_mask=None,
        context_padding_mask=None,
        training=None,
        return_attention_scores=False,
        self_attention_cache=None,
        cross_attention_cache=None,
        cache_update_index=None,
    ):
        results = self.self_attention(
            inputs,
            padding_mask=padding_mask,
            training=training,
            return_attention_scores=return_attention_scores,
            cache=self_attention_cache,
            cache_update_index=cache_update_index,
        )
        x, *extra = results if isinstance(results, tuple) else (results,)
        scores = {"self_attention": extra[0]} if return_attention_scores else {}
        if self.cross_attention:
            if context is None and cross_attention_cache is None:
                raise ValueError(
                    f"{self.name}: cross-attention needs `context` (the encoder output) "
                    "or `cross_attention_cache`; received neither. Pass the encoder "
                    "output, or build the layer with cross_attention=False."
                )
            x = self.cross_attention_block(
                x,
                context,
                context_padding_mask=context_padding_mask,
                training=training,
                return_attention_scores=return_attention_scores,
                cache=cross_attention_cache,
            )
            if return_attention_scores:
                x, scores["cross_attention"] = x
        outputs = (self.feed_forward(x, training=training),)
        outputs += (scores,) if return_attention_scores else ()
        outputs += () if self_attention_cache is None else (extra[-1],)
        return outputs[0] if len(outputs) == 1 else outputs

    def get_config(self):
        return {**super().get_config(), "cross_attention": self.cross_attention}
