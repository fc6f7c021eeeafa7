"""Translation pairs: string pairs -> padded, length-bucketed encoder-decoder batches.

Each pair is tokenized, framed as `[START] ... [END]` (`framing.frame`) and trimmed to
`max_length` tokens (the `[END]` survives trimming). The framed target
`t_0 .. t_n` is split into the decoder input `t_0 .. t_{n-1}` and the labels
`t_1 .. t_n` (teacher forcing: the label at position i is the next token).

Padding is to a small fixed set of lengths, the bucket boundaries, so that XLA
compiles a bounded number of shapes and short sentences are not padded to
`max_length`: every source is padded to the smallest boundary that holds it,
every decoder input (and its labels) likewise, independently, and each batch
holds pairs of one `(source bucket, target bucket)` combination. By default the
boundaries are the powers of two from 8 below `max_length`, then `max_length`
(`default_bucket_boundaries(64) == (8, 16, 32, 64)`), so at most
`len(boundaries) ** 2` shapes exist (`dataset_shapes` lists them); in practice
source and target lengths are correlated and far fewer occur. Padding id is 0.

Without XLA a new shape costs nothing, and padding to the boundaries wastes a
quarter of the step on long sentences (a 40-piece sentence padded to 64). With
`pad_to_bucket=False` each batch holds pairs whose longer side falls in one
narrow bucket (`fine_bucket_boundaries`: every 4 tokens) and is padded only
to its own longest source and target.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from keras_transformer._validation import check_int, check_positive_int, check_seed, is_int
from keras_transformer.data.batching.framing import frame
from keras_transformer.errors import UserInputError

_TOKENIZE_BATCH = 1024


def default_bucket_boundaries(max_length: int) -> tuple[int, ...]:
    """Padded lengths used when `bucket_boundaries=None`: powers of two from 8, then `max_length`.

    Example:

    >>> default_bucket_boundaries(64)
    (8, 16, 32, 64)
    >>> default_bucket_boundaries(100)
    (8, 16, 32, 64, 100)
    >>> default_bucket_boundaries(6)
    (6,)
    """
    check_int("max_length", max_length, minimum=3)
    boundaries = []
    length = 8
    while length < max_length:
        boundaries.append(length)
        length *= 2
    boundaries.append(max_length)
    return tuple(boundaries)


FINE_BUCKET_STEP = 4


def fine_bucket_boundaries(max_length: int) -> tuple[int, ...]:
    """Buckets of `make_dataset(..., pad_to_bucket=False)`: every `FINE_BUCKET_STEP` tokens.

    Example:

    >>> fine_bucket_boundaries(24)
    (4, 8, 12, 16, 20, 24)
    >>> fine_bucket_boundaries(10)
    (4, 8, 10)
    """
    check_int("max_length", max_length, minimum=3)
    return tuple(range(FINE_BUCKET_STEP, max_length, FINE_BUCKET_STEP)) + (max_length,)


def _resolve_boundaries(
    bucket_boundaries: Sequence[int] | None, max_length: int
) -> tuple[int, ...]:
    if bucket_boundaries is None:
        return default_bucket_boundaries(max_length)
    boundaries = list(bucket_boundaries)
    if (
        not boundaries
        or not all(map(is_int, boundaries))
        or any(b < 2 for b in boundaries)
        or any(a >= b for a, b in zip(boundaries[:-1], boundaries[1:], strict=True))
    ):
        raise UserInputError(
            f"bucket_boundaries={bucket_boundaries!r} must be strictly increasing ints >= 2, "
            f"e.g. {default_bucket_boundaries(max_length)}"
        )
    if boundaries[-1] > max_length:
        raise UserInputError(
            f"bucket_boundaries={bucket_boundaries!r} go beyond max_length={max_length}; "
            "no sequence is longer than max_length, so drop the larger boundaries"
        )
    if boundaries[-1] < max_length:
        boundaries.append(max_length)
    return tuple(boundaries)


def dataset_shapes(
    max_length: int, bucket_boundaries: Sequence[int] | None = None
) -> list[tuple[int, int]]:
    """Every `(source_len, target_len)` a batch of `make_dataset` can have (batch axis aside).

    The `"target"` input and the labels share `target_len`.

    Example:

    >>> dataset_shapes(16)
    [(8, 8), (8, 16), (16, 8), (16, 16)]
    """
    boundaries = _resolve_boundaries(bucket_boundaries, max_length)
    return [(s, t) for s in boundaries for t in boundaries]


def _check_pairs(pairs: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence):
        raise TypeError(
            f"pairs must be a list of (source, target) string pairs, got {type(pairs).__name__}"
        )
    if len(pairs) == 0:
        raise UserInputError("pairs is empty; pass at least one (source, target) pair")
    sources, targets = [], []
    for index, pair in enumerate(pairs):
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or not all(isinstance(side, str) for side in pair)
        ):
            raise TypeError(f"pairs[{index}]={pair!r} must be a (source: str, target: str) pair")
        sources.append(pair[0])
        targets.append(pair[1])
    return sources, targets


def make_dataset(
    pairs: Sequence[tuple[str, str]],
    source_tokenizer: Any,
    target_tokenizer: Any,
    *,
    batch_size: int = 64,
    max_length: int = 64,
    bucket_boundaries: Sequence[int] | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_remainder: bool = True,
    cache: bool = True,
    pad_to_bucket: bool = True,
) -> tf.data.Dataset:
    """Pairs of strings -> batches `({"source", "target"}, labels)` for `model.fit`.

    Args:
        pairs: `(source, target)` strings, e.g. `task.train`.
        source_tokenizer: tokenizer of the source side (`WordPieceTokenizer`).
        target_tokenizer: tokenizer of the target side (may be the same object).
        batch_size: pairs per batch.
        max_length: longest framed sequence, `[START]` and `[END]` included;
            longer ones are trimmed (keeping `[END]`). The decoder input and the
            labels are one shorter than the framed target.
        bucket_boundaries: increasing padded lengths; `None` for
            `default_bucket_boundaries(max_length)` (`fine_bucket_boundaries`
            when `pad_to_bucket=False`). `max_length` is appended if missing.
        shuffle: shuffle the pairs (whole dataset, reshuffled every epoch).
            Without shuffling, batches still come grouped by bucket, so the order
            is not the order of `pairs`.
        seed: shuffle seed.
        drop_remainder: drop incomplete batches (every batch then has exactly
            `batch_size` rows). Each bucket combination keeps its own remainder,
            so up to `len(dataset_shapes(...)) * (batch_size - 1)` pairs per
            epoch are left out (`len(boundaries) * (batch_size - 1)` with
            `pad_to_bucket=False`); pass `False` for evaluation so none is lost.
        cache: keep the tokenized pairs in memory after the first epoch.
        pad_to_bucket: `True`: pad each side to its bucket's boundary, so every
            batch has one of `dataset_shapes(...)` (what XLA wants). `False`:
            group pairs by the bucket of their longer side and pad each batch
            only to its longest source and target: fewer padded tokens, a shape
            per batch (for training without XLA).

    Returns:
        A `tf.data.Dataset` of `({"source": int32 (batch, S), "target": int32
        (batch, T)}, labels int32 (batch, T))` where `(S, T)` is one of
        `dataset_shapes(max_length, bucket_boundaries)` (with `pad_to_bucket`;
        else at most the boundary of the batch's bucket) and 0 is padding.

    Example:

    >>> from keras_transformer.data.text.tokenizer import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer.learn(["a b c", "c b a"], vocab_size=20)
    >>> dataset = make_dataset([("a b", "b a")] * 4, tokenizer, tokenizer, batch_size=2)
    >>> inputs, labels = next(iter(dataset))
    >>> inputs["source"].shape, inputs["target"].shape, labels.shape
    (TensorShape([2, 8]), TensorShape([2, 8]), TensorShape([2, 8]))
    """
    sources, targets = _check_pairs(pairs)
    check_positive_int("batch_size", batch_size)
    check_int("max_length", max_length, minimum=3)
    check_seed(seed)
    if not isinstance(pad_to_bucket, bool):
        raise TypeError(f"pad_to_bucket must be True or False, got {pad_to_bucket!r}")
    if bucket_boundaries is None and not pad_to_bucket:
        bucket_boundaries = fine_bucket_boundaries(max_length)
    boundaries = _resolve_boundaries(bucket_boundaries, max_length)
    num_buckets = len(boundaries)
    boundaries_t = tf.constant(boundaries, dtype=tf.int64)

    def tokenize(source: tf.Tensor, target: tf.Tensor) -> tuple[tf.RaggedTensor, tf.RaggedTensor]:
        src = frame(
            source_tokenizer.tokenize(source),
            source_tokenizer.start_id,
            source_tokenizer.end_id,
            max_length,
        )
        tgt = frame(
            target_tokenizer.tokenize(target),
            target_tokenizer.start_id,
            target_tokenizer.end_id,
            max_length,
        )
        return tf.cast(src, tf.int32), tf.cast(tgt, tf.int32)

    def bucket(length: tf.Tensor) -> tf.Tensor:
        # Index of the smallest boundary >= length.
        return tf.searchsorted(
            boundaries_t, tf.reshape(length, [1]), side="left", out_type=tf.int64
        )[0]

    def key(source: tf.Tensor, target: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        source_len = tf.size(source, out_type=tf.int64)
        target_len = tf.size(target, out_type=tf.int64)
        if not pad_to_bucket:  # one bucket for the longer side; each batch pads to its own
            return bucket(tf.maximum(source_len, target_len))
        return bucket(source_len) * num_buckets + bucket(target_len)

    def pad_batch(bucket_key: tf.Tensor, window: tf.data.Dataset) -> tf.data.Dataset:
        if not pad_to_bucket:
            return window.padded_batch(
                batch_size, padded_shapes=([None], [None], [None]), padding_values=(0, 0, 0)
            )
        source_len = tf.reshape(tf.gather(boundaries_t, bucket_key // num_buckets), [1])
        target_len = tf.reshape(tf.gather(boundaries_t, bucket_key % num_buckets), [1])
        return window.padded_batch(
            batch_size,
            padded_shapes=(source_len, target_len, target_len),
            padding_values=(0, 0, 0),
        )

    def to_inputs_and_labels(
        source: tf.Tensor, target: tf.Tensor, labels: tf.Tensor
    ) -> tuple[dict[str, tf.Tensor], tf.Tensor]:
        # source (batch, S); target and labels (batch, T)
        return {"source": source, "target": target}, labels

    dataset = tf.data.Dataset.from_tensor_slices((sources, targets))
    dataset = dataset.batch(_TOKENIZE_BATCH)
    dataset = dataset.map(tokenize, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    dataset = dataset.unbatch()  # one (None,) row per pair, typed as ragged rank 0
    # Teacher forcing, per pair before padding: the decoder reads [START] t_1 .. t_n
    # and predicts t_1 .. t_n [END]; so [END] never enters the decoder input.
    dataset = dataset.map(
        lambda source, target: (tf.identity(source), target[:-1], target[1:]),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    if cache:
        dataset = dataset.cache()
    if shuffle:
        dataset = dataset.shuffle(len(sources), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.group_by_window(key_func=key, reduce_func=pad_batch, window_size=batch_size)
    if drop_remainder:
        dataset = dataset.filter(lambda source, *_: tf.shape(source)[0] == batch_size)
    dataset = dataset.map(to_inputs_and_labels, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)
