"""Functional builder of the Transformer decoder."""

import keras

from keras_transformer.models._stacks import decoder_stack, embed, embedding, outputs, token_input
from keras_transformer.models.config import TransformerConfig


def build_decoder(
    vocab_size: int,
    *,
    config: TransformerConfig | None = None,
    return_attention_scores: bool = False,
    name: str = "decoder",
    **sizes,
) -> keras.Model:
    """Target ids -> embedding -> `num_layers` x `DecoderLayer` -> `Dense` logits, Functional.

    Inputs (a dict): `"target"` int ids `(batch, tgt_len)`; `"context"`, the encoder
    output `(batch, src_len, d_model)`; `"context_padding_mask"`, bool `(batch, src_len)`.

    Args:
        vocab_size: target vocabulary size.
        config, **sizes: a `TransformerConfig` and/or its fields as keywords (these win).
        return_attention_scores: output a dict with `"logits"` and every layer's weights.
        name: model name.

    Returns:
        A model giving float32 logits `(batch, tgt_len, vocab_size)`.

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
