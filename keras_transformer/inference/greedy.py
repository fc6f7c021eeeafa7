"""Greedy decoding that re-runs the whole decoder at every step (no cache).

The plain, easy-to-read decoding loop: at step `t` the model sees the source
and the target prefix `[START] y_1 ... y_t` (padded to a fixed length so the
step function compiles once) and the most likely next token is appended.
Causal masking makes the padding after position `t` irrelevant.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf


def greedy_decode(
    model: keras.Model,
    source_ids,
    *,
    start_id: int,
    end_id: int,
    max_length: int,
    batch_size: int = 128,
) -> np.ndarray:
    """Greedy translation of a batch of source id sequences.

    Args:
        model: a `build_transformer` model (inputs `"source"` and `"target"`).
        source_ids: int array `(num, src_len)`, 0-padded, with START/END.
        start_id: id of `[START]`, the first decoder input.
        end_id: id of `[END]`; decoding of a row stops once it is produced.
        max_length: largest number of generated tokens (END included).
        batch_size: rows decoded at once.

    Returns:
        int32 array `(num, max_length)` of generated tokens (START excluded,
        END included), 0 after END.

    Example:

    >>> from keras_transformer.models import build_transformer
    >>> model = build_transformer(10, 12, num_layers=1, d_model=8, num_heads=2, dff=16)
    >>> out = greedy_decode(model, np.array([[2, 5, 6, 3]]), start_id=2, end_id=3, max_length=5)
    >>> out.shape
    (1, 5)
    """
    source_ids = np.asarray(source_ids, dtype="int32")
    if source_ids.ndim != 2:
        raise ValueError(
            f"source_ids must be a 2-D batch (num, src_len); received shape {source_ids.shape}."
        )

    @tf.function(reduce_retracing=True)
    def next_tokens(source, target, position):
        logits = model({"source": source, "target": target}, training=False)
        return tf.argmax(tf.gather(logits, position, axis=1), axis=-1, output_type=tf.int32)

    results = []
    for begin in range(0, len(source_ids), batch_size):
        source = source_ids[begin : begin + batch_size]
        rows = len(source)
        target = np.zeros((rows, max_length + 1), "int32")
        target[:, 0] = start_id
        done = np.zeros(rows, bool)
        for t in range(max_length):
            token = next_tokens(source, target[:, :-1], tf.constant(t)).numpy()
            token = np.where(done, 0, token)
            target[:, t + 1] = token
            done |= token == end_id
            if done.all():
                break
        results.append(target[:, 1:])
    if not results:
        return np.zeros((0, max_length), "int32")
    return np.concatenate(results, axis=0)
