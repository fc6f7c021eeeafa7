"""Encoder-only masked language model (BERT's pre-training objective)."""

import keras

from keras_transformer.models import _stacks as stacks
from keras_transformer.models.config import TransformerConfig


def build_masked_language_model(
    vocab_size: int,
    *,
    config: TransformerConfig | None = None,
    tie_embeddings: bool = True,
    name: str = "masked_language_model",
    **sizes,
) -> keras.Model:
    """Encoder with BERT's head, predicting the original token at every position.

    BERT's head (appendix A): `Dense(d_model, gelu)` -> `LayerNormalization` -> vocabulary;
    `build_encoder`'s layer names, so `transfer_weights` moves the encoder on.
    Masking: no causal mask; padding (id 0) is masked out of attention.

    Args:
        vocab_size: number of token ids (0 is padding).
        config, **sizes: a `TransformerConfig` and/or its fields as keywords (these win).
        tie_embeddings: score against the token embedding matrix (BERT) instead of a `Dense`.
        name: model name.

    Returns:
        A model from int ids `(batch, seq_len)` to float32 logits `(batch, seq_len, vocab_size)`.

    Example:
    >>> import numpy as np
    >>> model = build_masked_language_model(50, num_layers=1, d_model=16, num_heads=2, dff=32)
    >>> tuple(model(np.array([[2, 7, 5, 9, 3, 0]])).shape)
    (1, 6, 50)

    Reference:
        Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers", 2019.
    """
    cfg = TransformerConfig.resolve(config, sizes)
    ids = stacks.token_input("tokens")
    token_embedding = stacks.embedding(vocab_size, cfg, "encoder_embedding")
    padding_mask, x = stacks.embed(ids, token_embedding, cfg, "encoder")
    x = stacks.encoder_stack(x, padding_mask, cfg, None)  # (batch, seq_len, d_model)
    x = keras.layers.Dense(cfg.d_model, activation="gelu", name="mlm_transform")(x)
    x = keras.layers.LayerNormalization(epsilon=1e-6, name="mlm_norm")(x)
    tied = token_embedding if tie_embeddings else None
    return keras.Model(ids, stacks.logits(x, vocab_size, tied, name="mlm_logits"), name=name)
