"""Prefix batches for the decoder-only runs: `[START] source [SEP] target [END]` sequences.

A language model translates by continuing a prompt `[START] source [SEP]`; it is
trained on the whole sequence with the loss on the target side only.
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf


def _column(rows, token_id: int) -> tf.RaggedTensor:
    return tf.RaggedTensor.from_tensor(tf.fill(rows, tf.constant(token_id, tf.int32)))


def encode_prompts(sources: Sequence[str], tokenizer, max_length: int) -> tf.RaggedTensor:
    """`[START] source [SEP]` per source (each source cut to `max_length - 2` tokens)."""
    ids = tf.cast(tokenizer.tokenize(tf.constant(list(sources)))[:, : max_length - 2], tf.int32)
    rows = tf.stack([ids.nrows(), 1])
    return tf.concat([_column(rows, tokenizer.start_id), ids, _column(rows, tokenizer.sep_id)], 1)


def prefix_sequences(
    pairs: list[tuple[str, str]], tokenizer, max_length: int
) -> tuple[tf.RaggedTensor, tf.RaggedTensor]:
    """`[START] source [SEP] target [END]` as inputs and labels for a language model.

    Each side keeps at most `max_length - 2` tokens. The inputs are the sequence
    without its last token, the labels the sequence shifted by one, with every
    label before the target set to 0 so the loss counts the target (and `[END]`)
    only: the model learns to continue a source, not to model sources.

    Args:
        pairs: `(source, target)` strings.
        tokenizer: one joint `WordPieceTokenizer` for both sides.
        max_length: longest framed side, as in `make_dataset`.

    Returns:
        `(inputs, labels)`, int32 ragged `(n, None)` of equal row lengths.

    Example:

    >>> from keras_transformer.data import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer.learn(["a b", "x y"], 40)
    >>> inputs, labels = prefix_sequences([("a b", "x")], tokenizer, 8)
    >>> [tokenizer.vocabulary[i] for i in inputs[0].numpy()]
    ['[START]', 'a', 'b', '[SEP]', 'x']
    >>> [tokenizer.vocabulary[i] for i in labels[0].numpy()]
    ['[PAD]', '[PAD]', '[PAD]', 'x', '[END]']
    """
    prompt = encode_prompts([s for s, _ in pairs], tokenizer, max_length)
    targets = tokenizer.tokenize(tf.constant([t for _, t in pairs]))[:, : max_length - 2]
    targets = tf.cast(targets, tf.int32)
    end = _column(tf.stack([targets.nrows(), 1]), tokenizer.end_id)
    inputs = tf.concat([prompt, targets, end], axis=1)[:, :-1]
    # label i is token i+1; positions before [SEP] (the source) get 0
    ignore = tf.ragged.map_flat_values(tf.zeros_like, prompt[:, :-1])
    return inputs, tf.concat([ignore, targets, end], axis=1)


def prefix_dataset(
    pairs: list[tuple[str, str]],
    tokenizer,
    *,
    batch_size: int,
    max_length: int,
    shuffle: bool,
    seed: int = 0,
) -> tf.data.Dataset:
    """`prefix_sequences` batches, padded to each batch's longest row (full batches when shuffled)."""
    ds = tf.data.Dataset.from_tensor_slices(prefix_sequences(pairs, tokenizer, max_length))
    if shuffle:
        ds = ds.shuffle(len(pairs), seed=seed, reshuffle_each_iteration=True)
    ds = ds.ragged_batch(batch_size, drop_remainder=shuffle)
    # No cache() after the shuffle: it would replay the first epoch's order every epoch.
    return ds.map(lambda x, y: (x.to_tensor(), y.to_tensor())).prefetch(tf.data.AUTOTUNE)
