"""Functional builder of the Transformer decoder."""

from __future__ import annotations

import keras

from keras_transformer.models._stacks import (
    decoder_stack,
    embed,
    embedding,
    outputs,
    token_input,
)
from keras_transformer.models.config import TransformerConfig


def build_decoder(
    vocab_size: int,
    *,
    config: TransformerConfig | None = None,
    return_attention_scores: bool = False,
    name: str = "decoder",
    **sizes,
) -> keras.Model:
    """The decoder stack with its output projection, as a Functional model.

    Target ids are embedded and run through `num_layers` x `DecoderLayer`
    (causal self-attention, cross-attention to `context`, feed-forward), then a
    final `Dense` gives float32 logits over the target vocabulary.

    Inputs (a dict):
        `"target"`: int ids `(batch, tgt_len)` (0 is padding);
        `"context"`: the encoder output `(batch, src_len, d_model)`;
        `"context_padding_mask"`: bool `(batch, src_len)`, `True` on real
        source tokens.

    Args:
        vocab_size: target vocabulary size.
        config: a `TransformerConfig`; None for its defaults.
        **sizes: `TransformerConfig` fields as keywords (`num_layers=2`,
            `d_model=64`, ...), replacing the config's values.
        return_attention_scores: output a dict with `"logits"` and every
            layer's self- and cross-attention weights.
        name: model name.

    Returns:
        A model giving logits `(batch, tgt_len, vocab_size)`.

    Example:

    >>> import numpy as np
    >>> decoder = build_decoder(50, num_layers=1, d_model=16, num_heads=2, dff=32)
    >>> logits = decoder({"target": np.array([[2, 9, 4]]),
    ...                   "context": np.zeros((1, 5, 16), "float32"),
    ...                   "context_padding_mask": np.array([[1, 1, 1, 0, 0]], bool)})
    >>> tuple(logits.shape)
    (1, 3, 50)
    """
    cfg = TransformerConfig.resolve(config, sizes)
    ids = token_input("target")
    context = keras.Input(shape=(None, cfg.d_model), name="context")
    context_mask = keras.Input(shape=(None,), dtype="bool", name="context_padding_mask")
    scores = {} if return_attention_scores else None
    padding_mask, x = embed(ids, embedding(vocab_size, cfg, "decoder_embedding"), cfg, "decoder")
    x = decoder_stack(x, padding_mask, context, context_mask, cfg, scores)
    logits = keras.layers.Dense(vocab_size, dtype="float32", name="logits")(x)
    inputs = {"target": ids, "context": context, "context_padding_mask": context_mask}
    return keras.Model(inputs, outputs(logits, scores), name=name)
