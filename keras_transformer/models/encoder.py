"""Functional builder of the Transformer encoder."""

from __future__ import annotations

import keras

from keras_transformer.models._stacks import (
    embed,
    embedding,
    encoder_stack,
    outputs,
    token_input,
)
from keras_transformer.models.config import TransformerConfig


def build_encoder(
    vocab_size: int,
    *,
    config: TransformerConfig | None = None,
    return_attention_scores: bool = False,
    name: str = "encoder",
    **sizes,
) -> keras.Model:
    """The encoder stack as a Functional `keras.Model`.

    `PositionalEmbedding` -> dropout -> `num_layers` x `EncoderLayer`, with the
    padding mask derived from the ids (`ids != 0`) and passed to every layer.

    Args:
        vocab_size: number of token ids (0 is padding).
        config: a `TransformerConfig`; None for its defaults.
        **sizes: `TransformerConfig` fields as keywords (`num_layers=2`,
            `d_model=64`, ...), replacing the config's values.
        return_attention_scores: output a dict `{"output": ..., "encoder_layer_i_self_attention": ...}`.
        name: model name.

    Returns:
        A model mapping int ids `(batch, seq_len)` to `(batch, seq_len, d_model)`.

    Example:

    >>> import numpy as np
    >>> encoder = build_encoder(100, num_layers=2, d_model=16, num_heads=2, dff=32)
    >>> tuple(encoder(np.array([[5, 6, 7, 0]])).shape)
    (1, 4, 16)
    """
    cfg = TransformerConfig.resolve(config, sizes)
    ids = token_input("tokens")
    scores = {} if return_attention_scores else None
    padding_mask, x = embed(ids, embedding(vocab_size, cfg, "encoder_embedding"), cfg, "encoder")
    x = encoder_stack(x, padding_mask, cfg, scores)
    result = outputs(x, scores)
    if isinstance(result, dict):
        result = {"output": result.pop("logits"), **result}
    return keras.Model(ids, result, name=name)
