"""Token-level classifier: one prediction per position, from an encoder or a causal decoder."""

from __future__ import annotations

import keras

from keras_transformer._validation import check_positive_int
from keras_transformer.models import _stacks as stacks
from keras_transformer.models.config import TransformerConfig


def build_token_classifier(
    vocab_size: int,
    num_classes: int,
    *,
    causal: bool = False,
    config: TransformerConfig | None = None,
    return_attention_scores: bool = False,
    name: str | None = None,
    **sizes,
) -> keras.Model:
    """Transformer stack with a `Dense` head at every position (token classification).

    With `causal=False` the stack is the encoder (`encoder_layer_{i}`, global
    self-attention): the vector at position `t` is computed from the whole
    sentence. With `causal=True` it is a decoder-only stack (`decoder_layer_{i}`,
    causal self-attention, no cross-attention) of exactly the same size: the
    vector at `t` sees only positions `0..t`. The course's "it" experiment trains
    both on `it-referent` and reads the prediction at the position of "it".
    Padding is masked explicitly (`ids != 0`).

    Args:
        vocab_size: number of token ids (0 is padding).
        num_classes: classes per position.
        causal: causal self-attention (decoder-only) instead of global (encoder).
        config: a `TransformerConfig`; None for its defaults.
        **sizes: `TransformerConfig` fields as keywords (`num_layers=2`,
            `d_model=64`, ...), replacing the config's values.
        return_attention_scores: output a dict with `"logits"` and every layer's
            self-attention weights `(batch, num_heads, seq_len, seq_len)`.
        name: model name (default `"token_classifier"` or `"causal_token_classifier"`).

    Returns:
        A model mapping int ids `(batch, seq_len)` to float32 logits
        `(batch, seq_len, num_classes)`.

    Example:

    >>> import numpy as np
    >>> encoder = build_token_classifier(50, 2, num_layers=1, d_model=16, num_heads=2, dff=32)
    >>> decoder = build_token_classifier(50, 2, causal=True, num_layers=1, d_model=16,
    ...                                  num_heads=2, dff=32)
    >>> tuple(encoder(np.array([[2, 7, 9, 3, 0]])).shape)
    (1, 5, 2)
    >>> encoder.count_params() == decoder.count_params()
    True
    """
    check_positive_int("num_classes", num_classes)
    cfg = TransformerConfig.resolve(config, sizes)
    prefix = "decoder" if causal else "encoder"
    ids = stacks.token_input("tokens")
    scores = {} if return_attention_scores else None
    padding_mask, x = stacks.embed(
        ids, stacks.embedding(vocab_size, cfg, f"{prefix}_embedding"), cfg, prefix
    )
    if causal:
        x = stacks.decoder_stack(x, padding_mask, None, None, cfg, scores)
    else:
        x = stacks.encoder_stack(x, padding_mask, cfg, scores)
    x = keras.layers.Dropout(cfg.dropout, name="head_dropout")(x)
    logits = keras.layers.Dense(num_classes, dtype="float32", name="logits")(x)
    if name is None:
        name = "causal_token_classifier" if causal else "token_classifier"
    return keras.Model(ids, stacks.outputs(logits, scores), name=name)
