"""Encoder-only model for sequence classification."""

import keras

from keras_transformer._validation import check_positive_int
from keras_transformer.errors import UserInputError
from keras_transformer.layers.sequence_pooling import SequencePooling
from keras_transformer.models._stacks import embed, embedding, encoder_stack, outputs, token_input
from keras_transformer.models.config import TransformerConfig


def build_classifier(
    vocab_size: int,
    num_classes: int,
    *,
    pooling: str = "cls",
    config: TransformerConfig | None = None,
    return_attention_scores: bool = False,
    name: str = "classifier",
    **sizes,
) -> keras.Model:
    """Encoder-only Transformer whose output, pooled by `SequencePooling`, gives class logits.

    Args:
        vocab_size, num_classes: number of token ids (0 is padding), of classes.
        pooling: `"cls"` (first position, a `[START]`/`[CLS]` token) or `"mean"`.
        config, **sizes: a `TransformerConfig` and/or its fields as keywords (these win).
        return_attention_scores: as in `build_encoder`.
        name: model name.

    Returns:
        A model mapping int ids `(batch, seq_len)` to logits `(batch, num_classes)`.

    Example:
    >>> import numpy as np
    >>> model = build_classifier(100, 3, num_layers=1, d_model=16, num_heads=2, dff=32)
    >>> tuple(model(np.array([[2, 5, 6, 3, 0]])).shape)
    (1, 3)
    """
    check_positive_int("num_classes", num_classes)
    if pooling not in SequencePooling.MODES:
        raise UserInputError(
            f"pooling must be one of {SequencePooling.MODES}; received pooling={pooling!r}."
        )
    cfg = TransformerConfig.resolve(config, sizes)
    ids = token_input("tokens")
    scores = {} if return_attention_scores else None
    padding_mask, x = embed(ids, embedding(vocab_size, cfg, "encoder_embedding"), cfg, "encoder")
    x = encoder_stack(x, padding_mask, cfg, scores)
    pooled = SequencePooling(pooling, name=f"{pooling}_pooling")(x, padding_mask=padding_mask)
    pooled = keras.layers.Dropout(cfg.dropout, name="pooled_dropout")(pooled)
    logits = keras.layers.Dense(num_classes, dtype="float32", name="logits")(pooled)
    return keras.Model(ids, outputs(logits, scores), name=name)
