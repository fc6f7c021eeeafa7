"""Dual encoder: one shared encoder embeds both sides of a pair; in-batch similarities."""

import keras

from keras_transformer.layers import InBatchSimilarity, PaddingMask, SequencePooling
from keras_transformer.models._stacks import token_input
from keras_transformer.models.config import TransformerConfig
from keras_transformer.models.encoder import build_encoder


def build_dual_encoder(
    vocab_size: int,
    *,
    pooling: str = "mean",
    temperature: float = 0.05,
    config: TransformerConfig | None = None,
    **sizes,
) -> tuple[keras.Model, keras.Model]:
    """A shared `build_encoder` applied to both sides, pooled, compared in the batch.

    Args:
        vocab_size: size of the joint vocabulary (0 is padding).
        pooling, temperature: `"mean"` or `"cls"` sentence vector; of `InBatchSimilarity`.
        config, **sizes: of the encoder, as in `build_encoder`.

    Returns:
        `(model, encoder)`: `{"left", "right"}` ids -> logits `(batch, batch)`; the encoder.

    Example:
    >>> import numpy as np
    >>> model, encoder = build_dual_encoder(30, num_layers=1, d_model=8, num_heads=2, dff=16)
    >>> ids = np.array([[2, 7, 3], [2, 8, 3]])
    >>> tuple(model({"left": ids, "right": ids}).shape)
    (2, 2)
    """
    encoder = build_encoder(vocab_size, config=config, name="sentence_encoder", **sizes)
    pool = SequencePooling(pooling, name=f"{pooling}_pooling")
    inputs = {side: token_input(side) for side in ("left", "right")}
    vectors = []
    for side, ids in inputs.items():
        mask = PaddingMask(name=f"{side}_padding_mask")(ids)
        vectors.append(pool(encoder(ids), padding_mask=mask))  # (batch, d_model)
    logits = InBatchSimilarity(temperature, name="similarity")(vectors)
    return keras.Model(inputs, logits, name="dual_encoder"), encoder
