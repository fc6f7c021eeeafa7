"""Functional builder of the Transformer encoder."""

from __future__ import annotations

import keras

from keras_transformer.models._stacks import (
    StackConfig,
    embed,
    embedding,
    encoder_stack,
    outputs,
    token_input,
)


def build_encoder(
    vocab_size: int,
    *,
    num_layers: int = 4,
    d_model: int = 128,
    num_heads: int = 8,
    dff: int = 512,
    dropout: float = 0.1,
    attention_dropout: float = 0.0,
    max_length: int = 512,
    norm_first: bool = False,
    learned_positions: bool = False,
    return_attention_scores: bool = False,
    name: str = "encoder",
) -> keras.Model:
    """The encoder stack as a Functional `keras.Model`.

    `PositionalEmbedding` -> dropout -> `num_layers` x `EncoderLayer`, with the
    padding mask derived from the ids (`ids != 0`) and passed to every layer.

    Args:
        vocab_size: number of token ids (0 is padding).
        num_layers: number of encoder layers (N in the paper).
        d_model: model width.
        num_heads: attention heads; `d_model` must be divisible by it.
        dff: feed-forward inner size.
        dropout: residual and embedding dropout.
        attention_dropout: dropout on attention weights.
        max_length: largest sequence length the position table covers.
        norm_first: pre-LN instead of post-LN (adds a final LayerNorm).
        learned_positions: learned position embeddings instead of the sinusoid.
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
    cfg = StackConfig.pick(locals())
    ids = token_input("tokens")
    scores = {} if return_attention_scores else None
    padding_mask, x = embed(ids, embedding(vocab_size, cfg, "encoder_embedding"), cfg, "encoder")
    x = encoder_stack(x, padding_mask, cfg, scores)
    result = outputs(x, scores)
    if isinstance(result, dict):
        result = {"output": result.pop("logits"), **result}
    return keras.Model(ids, result, name=name)
