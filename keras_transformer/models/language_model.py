"""Decoder-only Transformer language model."""

from __future__ import annotations

import keras

from keras_transformer.models._stacks import (
    StackConfig,
    decoder_stack,
    embed,
    embedding,
    outputs,
    token_input,
)


def build_language_model(
    vocab_size: int,
    *,
    num_layers: int = 4,
    d_model: int = 128,
    num_heads: int = 8,
    dff: int = 512,
    dropout: float = 0.1,
    attention_dropout: float = 0.0,
    max_length: int = 512,
    tie_embeddings: bool = False,
    norm_first: bool = False,
    learned_positions: bool = False,
    return_attention_scores: bool = False,
    name: str = "language_model",
) -> keras.Model:
    """Decoder-only Transformer: causal self-attention, no cross-attention.

    Position `t` sees tokens `0..t` and predicts token `t+1`. Reading an input
    as a prefix ("source [SEP] target"), the same model can map an input to
    an output without a separate encoder.

    Args:
        vocab_size: number of token ids (0 is padding).
        num_layers, d_model, num_heads, dff, dropout, attention_dropout,
        max_length, norm_first, learned_positions: as in `build_encoder`.
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
    cfg = StackConfig.pick(locals())
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
