"""Token-level classifier: one prediction per position, from an encoder or a causal decoder."""

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

    An encoder (`encoder_layer_{i}`), or with `causal` a same-size decoder-only stack
    (`decoder_layer_{i}`, position `t` sees `0..t`). Padding is masked (`ids != 0`).

    Args:
        vocab_size, num_classes: number of token ids (0 is padding), of classes per position.
        causal: causal self-attention (decoder-only) instead of global (encoder).
        config, **sizes: a `TransformerConfig` and/or its fields as keywords (these win).
        return_attention_scores: output a dict with `"logits"` and every layer's weights.
        name: model name (default `"token_classifier"` or `"causal_token_classifier"`).

    Returns:
        A model from int ids `(batch, seq_len)` to float32 logits `(batch, seq_len, num_classes)`.

    Example:
    >>> import numpy as np
    >>> sizes = dict(num_layers=1, d_model=16, num_heads=2, dff=32)
    >>> encoder = build_token_classifier(50, 2, **sizes)
    >>> tuple(encoder(np.array([[2, 7, 9, 3, 0]])).shape)
    (1, 5, 2)
    >>> encoder.count_params() == build_token_classifier(50, 2, causal=True, **sizes).count_params()
    True
    """
    check_positive_int("num_classes", num_classes)
    cfg = TransformerConfig.resolve(config, sizes)
    prefix = "decoder" if causal else "encoder"
    ids = stacks.token_input("tokens")
    scores = {} if return_attention_scores else None
    embedding = stacks.embedding(vocab_size, cfg, f"{prefix}_embedding")
    padding_mask, x = stacks.embed(ids, embedding, cfg, prefix)
    if causal:
        x = stacks.decoder_stack(x, padding_mask, None, None, cfg, scores)
    else:
        x = stacks.encoder_stack(x, padding_mask, cfg, scores)
    x = keras.layers.Dropout(cfg.dropout, name="head_dropout")(x)
    logits = keras.layers.Dense(num_classes, dtype="float32", name="logits")(x)
    if name is None:
        name = "causal_token_classifier" if causal else "token_classifier"
    return keras.Model(ids, stacks.outputs(logits, scores), name=name)
