"""Decoder-only Transformer language model."""

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


def build_language_model(
    vocab_size: int,
    *,
    config: TransformerConfig | None = None,
    tie_embeddings: bool = False,
    return_attention_scores: bool = False,
    name: str = "language_model",
    **sizes,
) -> keras.Model:
    """Decoder-only Transformer: causal self-attention, no cross-attention.

    Position `t` sees tokens `0..t` and predicts token `t+1`. Reading an input
    as a prefix ("source [SEP] target"), the same model can map an input to
    an output without a separate encoder.

    Args:
        vocab_size: number of token ids (0 is padding).
        config: a `TransformerConfig`; None for its defaults.
        **sizes: `TransformerConfig` fields as keywords (`num_layers=2`,
            `d_model=64`, ...), replacing the config's values.
        tie_embeddings: use the token embedding matrix as the output projection.
        return_attention_scores: output a dict with `"logits"` and every layer's
            `"decoder_layer_{i}_self_attention"` weights.
        name: model name.

    Returns:
        A model mapping int ids `(batch, seq_len)` to float32 logits
        `(batch, seq_len, vocab_size)`.

    Example:

    >>> import numpy as np
    >>> lm = build_language_model(60, num_layers=1, d_model=16, num_heads=2, dff=32)
    >>> tuple(lm(np.array([[2, 7, 9]])).shape)
    (1, 3, 60)
    """
    cfg = TransformerConfig.resolve(config, sizes)
    ids = token_input("tokens")
    scores = {} if return_attention_scores else None
    token_embedding = embedding(vocab_size, cfg, "decoder_embedding")
    padding_mask, x = embed(ids, token_embedding, cfg, "decoder")
    x = decoder_stack(x, padding_mask, None, None, cfg, scores)
    if tie_embeddings:
        logits = token_embedding(x, reverse=True)
    else:
        logits = keras.layers.Dense(vocab_size, dtype="float32", name="logits")(x)
    return keras.Model(ids, outputs(logits, scores), name=name)
