"""Functional builder of the encoder-decoder Transformer."""

from __future__ import annotations

import keras

from keras_transformer.models._stacks import (
    decoder_stack,
    embed,
    embedding,
    encoder_stack,
    outputs,
    token_input,
)
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

    Source ids -> embedding -> encoder stack; target ids (shifted right,
    starting with `[START]`) -> embedding -> decoder stack, whose
    cross-attention reads the encoder output; a final projection gives the
    next-token logits at every target position (teacher forcing). Padding
    masks are derived from the ids (`ids != 0`) and passed explicitly to every
    attention layer, so padding never changes the logits of real positions.
    Heads have size `d_model // num_heads`, as in the paper.

    Layers are named `encoder_embedding`, `encoder_layer_{i}`,
    `decoder_embedding`, `decoder_layer_{i}`, `logits` (with shared
    embeddings, one `shared_embedding` layer serves all three matrices).

    Args:
        source_vocab_size: source vocabulary size (0 is padding).
        target_vocab_size: target vocabulary size (0 is padding).
        config: a `TransformerConfig`; None for its defaults.
        **sizes: `TransformerConfig` fields as keywords (`num_layers=2`,
            `d_model=64`, ...), replacing the config's values.
        share_embeddings: one vocabulary, and one matrix for the source
            embedding, the target embedding and the pre-softmax projection
            (section 3.4); requires equal vocabulary sizes.
        return_attention_scores: output a dict with `"logits"` and the
            attention weights of every layer (`"encoder_layer_0_self_attention"`,
            `"decoder_layer_0_cross_attention"`, ...), each
            `(batch, num_heads, q_len, kv_len)`. Build a second model with this
            flag and `set_weights(trained.get_weights())` to plot attention.
        name: model name.

    Inputs:
        a dict `{"source": int (batch, src_len), "target": int (batch, tgt_len)}`.

    Returns:
        A `keras.Model` with float32 logits `(batch, tgt_len, target_vocab_size)`.

    Example:

    >>> import numpy as np
    >>> model = build_transformer(100, 120, num_layers=1, d_model=16, num_heads=2, dff=32)
    >>> logits = model({"source": np.array([[5, 6, 7, 0]]), "target": np.array([[2, 8, 9]])})
    >>> tuple(logits.shape), logits.dtype.name
    ((1, 3, 120), 'float32')

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.
    """
    cfg = TransformerConfig.resolve(config, sizes)
    if share_embeddings and source_vocab_size != target_vocab_size:
        raise ValueError(
            "share_embeddings=True needs one vocabulary, but received "
            f"source_vocab_size={source_vocab_size} and target_vocab_size={target_vocab_size}. "
            "Build a joint vocabulary for both languages or pass share_embeddings=False."
        )
    source = token_input("source")
    target = token_input("target")
    scores = {} if return_attention_scores else None

    if share_embeddings:
        source_embedding = target_embedding = embedding(source_vocab_size, cfg, "shared_embedding")
    else:
        source_embedding = embedding(source_vocab_size, cfg, "encoder_embedding")
        target_embedding = embedding(target_vocab_size, cfg, "decoder_embedding")

    source_mask, x = embed(source, source_embedding, cfg, "encoder")
    context = encoder_stack(x, source_mask, cfg, scores)  # (batch, src_len, d_model)

    target_mask, y = embed(target, target_embedding, cfg, "decoder")
    y = decoder_stack(
        y, target_mask, context, source_mask, cfg, scores
    )  # (batch, tgt_len, d_model)

    if share_embeddings:
        logits = target_embedding(y, reverse=True)  # (batch, tgt_len, vocab), float32
    else:
        logits = keras.layers.Dense(target_vocab_size, dtype="float32", name="logits")(y)
    return keras.Model({"source": source, "target": target}, outputs(logits, scores), name=name)
