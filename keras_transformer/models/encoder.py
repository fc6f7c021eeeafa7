"""Functional builder of the Transformer encoder."""

import keras

from keras_transformer.models._stacks import embed, embedding, encoder_stack, token_input
from keras_transformer.models.config import TransformerConfig


def build_encoder(
    vocab_size: int,
    *,
    config: TransformerConfig | None = None,
    return_attention_scores: bool = False,
    name: str = "encoder",
    **sizes,
) -> keras.Model:
    """Embedding -> `num_layers` x `EncoderLayer` (explicit padding masks) as a Functional model.

    Args:
        vocab_size: number of token ids (0 is padding).
        config, **sizes: a `TransformerConfig` and/or its fields as keywords (these win).
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
    return keras.Model(ids, x if scores is None else {"output": x, **scores}, name=name)
