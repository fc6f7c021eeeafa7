"""Encoder-only masked language model (BERT's pre-training objective)."""

from __future__ import annotations

import keras

from keras_transformer.models._stacks import (
    embed,
    embedding,
    encoder_stack,
    token_input,
)
from keras_transformer.models.config import TransformerConfig


def build_masked_language_model(
    vocab_size: int,
    *,
    config: TransformerConfig | None = None,
    tie_embeddings: bool = True,
    name: str = "masked_language_model",
    **sizes,
) -> keras.Model:
    """Encoder with a head that predicts the original token at every position.

    The encoder is the one `build_encoder` and `build_classifier` build, with
    the same layer names (`encoder_embedding`, `encoder_layer_0`, ...), so after
    pre-training its weights move into a classifier with
    `keras_transformer.models.transfer_weights`. The head follows BERT
    (section 3.1 and appendix A): `Dense(d_model, gelu)` -> `LayerNormalization`
    -> a projection on the vocabulary (the token embedding matrix, tied),
    float32 logits. Trained on `mask_tokens` batches,
    the loss counts the selected positions only (labels are 0 elsewhere).

    Masking: no causal mask (every position sees the whole sentence); padding
    (id 0) is masked out of attention, as in every builder.

    Args:
        vocab_size: number of token ids (0 is padding).
        config: a `TransformerConfig`; None for its defaults.
        **sizes: `TransformerConfig` fields as keywords (`num_layers=2`,
            `d_model=64`, ...), replacing the config's values.
        tie_embeddings: score the output against the token embedding matrix
            (BERT's choice: words predicted in the same contexts get similar
            *input* embeddings, which is what fine-tuning inherits) instead of
            a separate `Dense(vocab_size)`.
        name: model name.

    Returns:
        A model mapping int ids `(batch, seq_len)` to logits
        `(batch, seq_len, vocab_size)`.

    Example:

    >>> import numpy as np
    >>> model = build_masked_language_model(50, num_layers=1, d_model=16, num_heads=2, dff=32)
    >>> tuple(model(np.array([[2, 7, 5, 9, 3, 0]])).shape)
    (1, 6, 50)

    Reference:
        Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers
        for Language Understanding", 2019.
    """
    cfg = TransformerConfig.resolve(config, sizes)
    ids = token_input("tokens")
    token_embedding = embedding(vocab_size, cfg, "encoder_embedding")
    padding_mask, x = embed(ids, token_embedding, cfg, "encoder")
    x = encoder_stack(x, padding_mask, cfg, None)  # (batch, seq_len, d_model)
    x = keras.layers.Dense(cfg.d_model, activation="gelu", name="mlm_transform")(x)
    x = keras.layers.LayerNormalization(epsilon=1e-6, name="mlm_norm")(x)
    if tie_embeddings:  # scores against every token's input embedding, as BERT does
        logits = token_embedding(x, reverse=True)  # (batch, seq_len, vocab_size), float32
    else:
        logits = keras.layers.Dense(vocab_size, dtype="float32", name="mlm_logits")(x)
    return keras.Model(ids, logits, name=name)
