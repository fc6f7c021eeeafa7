"""Decoder-only Transformer language model."""

import keras

from keras_transformer.models import _stacks as stacks
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
    """Decoder-only Transformer (no cross-attention): position `t` sees `0..t`, predicts `t+1`.

    Args:
        vocab_size: number of token ids (0 is padding).
        config, **sizes: a `TransformerConfig` and/or its fields as keywords (these win).
        tie_embeddings: use the token embedding matrix as the output projection.
        return_attention_scores: output a dict of `"logits"` and `"decoder_layer_{i}_self_attention"`.
        name: model name.

    Returns:
        A model from int ids `(batch, seq_len)` to float32 logits `(batch, seq_len, vocab_size)`.

    Example:
    >>> import numpy as np
    >>> lm = build_language_model(60, num_layers=1, d_model=16, num_heads=2, dff=32)
    >>> tuple(lm(np.array([[2, 7, 9]])).shape)
    (1, 3, 60)
    """
    cfg = TransformerConfig.resolve(config, sizes)
    ids = stacks.token_input("tokens")
    scores = {} if return_attention_scores else None
    token_embedding = stacks.embedding(vocab_size, cfg, "decoder_embedding")
    padding_mask, x = stacks.embed(ids, token_embedding, cfg, "decoder")
    x = stacks.decoder_stack(x, padding_mask, None, None, cfg, scores)
    logits = stacks.logits(x, vocab_size, token_embedding if tie_embeddings else None)
    return keras.Model(ids, stacks.outputs(logits, scores), name=name)
