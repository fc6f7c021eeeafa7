"""Contrastive batches for the dual encoder: aligned pairs, the other rows as negatives.

Row i of the `"left"` input matches row i of the `"right"` input; every other
row of the batch is a negative (in-batch negatives), so the label of row i is i.
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

from keras_transformer.data.batching.framing import frame


def pair_dataset(
    pairs: Sequence[tuple[str, str]],
    tokenizer,
    *,
    batch_size: int,
    max_length: int,
    shuffle: bool = True,
    seed: int = 0,
) -> tf.data.Dataset:
    """`({"left", "right"} ids, labels = 0..batch-1)` batches for in-batch negatives.

    Every batch is full (`drop_remainder`), since its size is the number of classes.
    """
    start, end = tokenizer.start_id, tokenizer.end_id
    left = frame(tokenizer.tokenize(tf.constant([s for s, _ in pairs])), start, end, max_length)
    right = frame(tokenizer.tokenize(tf.constant([t for _, t in pairs])), start, end, max_length)
    ds = tf.data.Dataset.from_tensor_slices((tf.cast(left, tf.int32), tf.cast(right, tf.int32)))
    if shuffle:
        ds = ds.shuffle(len(pairs), seed=seed, reshuffle_each_iteration=True)
    ds = ds.ragged_batch(batch_size, drop_remainder=True)

    def to_inputs(a, b):
        labels = tf.range(tf.shape(a.row_lengths())[0])  # row i matches column i
        return {"left": a.to_tensor(), "right": b.to_tensor()}, labels

    return ds.map(to_inputs).prefetch(tf.data.AUTOTUNE)
