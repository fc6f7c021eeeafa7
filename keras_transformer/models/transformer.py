"""Functional builder of the encoder-decoder Transformer."""

import keras

from keras_transformer.errors import UserInputError
from keras_transformer.models import _stacks as stacks
from keras_transformer.models.config import TransformerConfig


def build_transformer(
    source_vocab_size: int,
    target_vocab_size: int,
    *,
    config: TransformerConfig | None = None,
    share_embeddings: bool = False,
    return_attention_scores: bool = False,
    name: str = "transformer",
    **sizes,
) -> keras.Model:
    """The encoder-decoder Transformer of the paper as one Functional model.

    Source -> encoder; target (shifted right) -> decoder, cross-attending to the
    encoder -> next-token logits. Layers: `encoder_embedding`, `encoder_layer_{i}`,
    `decoder_embedding`, `decoder_layer_{i}`, `logits` (or one `shared_embedding`).
    Masking: padding masks (`ids != 0`) go explicitly to every attention layer.

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (0 is padding).
        config, **sizes: a `TransformerConfig` and/or its fields as keywords (these win).
        share_embeddings: one matrix for embeddings and output (3.4); needs one vocabulary.
        return_attention_scores: output a dict with `"logits"` and every layer's
            `(batch, num_heads, q_len, kv_len)` weights (`"decoder_layer_0_cross_attention"`, ...).
        name: model name.

    Returns:
        A model from `{"source", "target"}` ids to float32 logits `(batch, tgt_len, vocab)`.

    Example:
    >>> import numpy as np
    >>> model = build_transformer(100, 120, num_layers=1, d_model=16, num_heads=2, dff=32)
    >>> logits = model({"source": np.array([[5, 6, 7, 0]]), "target": np.array([[2, 8, 9]])})
    >>> tuple(logits.shape), keras.backend.standardize_dtype(logits.dtype)
    ((1, 3, 120), 'float32')

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.
    """
    cfg = TransformerConfig.resolve(config, sizes)
    if share_embeddings and source_vocab_size != target_vocab_size:
        raise UserInputError(
            "share_embeddings=True needs one vocabulary, but received "
            f"source_vocab_size={source_vocab_size} and target_vocab_size={target_vocab_size}. "
            "Build a joint vocabulary for both languages or pass share_embeddings=False."
        )
    source, target = stacks.token_input("source"), stacks.token_input("target")
    scores = {} if return_attention_scores else None
    if share_embeddings:
        source_embedding = stacks.embedding(source_vocab_size, cfg, "shared_embedding")
        target_embedding = source_embedding
    else:
        source_embedding = stacks.embedding(source_vocab_size, cfg, "encoder_embedding")
        target_embedding = stacks.embedding(target_vocab_size, cfg, "decoder_embedding")
    source_mask, x = stacks.embed(source, source_embedding, cfg, "encoder")
    context = stacks.encoder_stack(x, source_mask, cfg, scores)  # (batch, src_len, d_model)
    target_mask, y = stacks.embed(target, target_embedding, cfg, "decoder")
    y = stacks.decoder_stack(y, target_mask, context, source_mask, cfg, scores)
    logits = stacks.logits(y, target_vocab_size, target_embedding if share_embeddings else None)
    inputs = {"source": source, "target": target}
    return keras.Model(inputs, stacks.outputs(logits, scores), name=name)
