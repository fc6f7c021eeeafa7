"""Framing: `[START] ids [END]` rows, the shape every model input of the package takes.

`frame` works on token ids inside a `tf.data` map or a `tf.function`;
`encode_source` tokenizes, frames and pads strings in one call, for inference
and for the batching modules of the encoder-only and dual-encoder runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from keras_transformer._validation import check_int


def frame(ids: tf.RaggedTensor, start_id: int, end_id: int, max_length: int) -> tf.RaggedTensor:
    """Adds `[START]` and `[END]` around each row and trims it to `max_length` tokens.

    The text is cut, never the `[END]`: a row keeps its first `max_length - 2`
    tokens.

    Args:
        ids: `(batch, None)` ragged token ids.
        start_id: id of `[START]`.
        end_id: id of `[END]`.
        max_length: longest framed row, `[START]` and `[END]` included (>= 3).

    Returns:
        `(batch, None)` ragged ids of the same dtype.

    Example:

    >>> frame(tf.ragged.constant([[7, 8, 9], [7]]), 2, 3, max_length=4).to_list()
    [[2, 7, 8, 3], [2, 7, 3]]
    """
    ids = ids[:, : max_length - 2]  # (batch, <= max_length - 2)
    rows = tf.stack([ids.nrows(), 1])
    starts = tf.RaggedTensor.from_tensor(tf.fill(rows, tf.constant(start_id, ids.dtype)))
    ends = tf.RaggedTensor.from_tensor(tf.fill(rows, tf.constant(end_id, ids.dtype)))
    return tf.concat([starts, ids, ends], axis=1)  # (batch, <= max_length)


def encode_source(strings: Sequence[str] | tf.Tensor, tokenizer: Any, max_length: int) -> tf.Tensor:
    """Source strings -> `[START] ids [END]`, trimmed to `max_length`, padded with 0.

    The same framing as `make_dataset` gives the `"source"` input; made of
    TensorFlow ops only, so it also runs inside a `tf.function` for serving.

    Args:
        strings: `(batch,)` strings.
        tokenizer: a `WordPieceTokenizer` (anything with `tokenize`, `start_id`, `end_id`).
        max_length: longest row, `[START]` and `[END]` included.

    Returns:
        int32 tensor `(batch, longest framed row)`.

    Example:

    >>> from keras_transformer.data.text.tokenizer import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer.learn(["a b c", "b a"], vocab_size=20)
    >>> encode_source(["a b", "c"], tokenizer, max_length=8).shape
    TensorShape([2, 4])
    """
    check_int("max_length", max_length, minimum=3)
    ids = frame(tokenizer.tokenize(strings), tokenizer.start_id, tokenizer.end_id, max_length)
    return tf.cast(ids.to_tensor(default_value=0), tf.int32)  # (batch, src_len)
