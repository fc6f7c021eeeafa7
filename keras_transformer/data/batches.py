"""Batches for the Transformer's other uses: per-token labels, prefixes, sequence labels, pairs.

`make_dataset` (pipeline.py) prepares encoder-decoder pairs; the functions here
prepare the inputs of the encoder-only, decoder-only and dual-encoder runs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_transformer.data import it_referent
from keras_transformer.data.pipeline import encode_source, frame


def it_token_arrays(
    pairs: list[tuple[str, str]], tokenizer, max_length: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ids, per-token labels and the position of "it" for `it-referent` pairs.

    Labels follow the package's padding convention: 0 means "no label here"
    (ignored by `MaskedSparseCategoricalCrossentropy` and `MaskedAccuracy`), and
    the position of "it" holds `1 + class` (1: the subject, 2: the object). A
    token classifier for this task therefore has `1 + len(CLASS_NAMES)` outputs.

    Args:
        pairs: `(sentence, referent)` pairs of `it_referent_task`.
        tokenizer: a `WordPieceTokenizer` whose vocabulary holds the word "it".
        max_length: longest framed row (`[START]` and `[END]` included).

    Returns:
        `(ids, labels, positions)`: int32 `(n, seq_len)`, `(n, seq_len)`, `(n,)`.

    Example:

    >>> from keras_transformer.data import load_task, WordPieceTokenizer
    >>> task = load_task("it-referent", num_train=50, num_validation=0, num_test=0)
    >>> tokenizer = WordPieceTokenizer.learn([s for s, _ in task.train], 300)
    >>> ids, labels, positions = it_token_arrays(task.train[:2], tokenizer, 32)
    >>> int((labels != 0).sum()), bool(ids[0, positions[0]] == tokenizer.token_to_id("it"))
    (2, True)
    """
    ids = np.asarray(encode_source([s for s, _ in pairs], tokenizer, max_length))
    hits = ids == tokenizer.token_to_id("it")
    if not (hits.sum(axis=1) == 1).all():
        raise ValueError(
            "every sentence must hold the token 'it' exactly once within "
            f"max_length={max_length}; raise max_length or check the sentences."
        )
    positions = hits.argmax(axis=1).astype("int32")
    labels = np.zeros_like(ids)
    labels[np.arange(len(ids)), positions] = 1 + it_referent.referent_labels(pairs)
    return ids.astype("int32"), labels.astype("int32"), positions


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


def classification_dataset(
    pairs: list[tuple[str, str]],
    tokenizer,
    class_names: Sequence[str],
    *,
    batch_size: int,
    max_length: int,
    seed: int = 0,
    shuffle: bool = False,
) -> tf.data.Dataset:
    """`(ids, label)` batches for `build_classifier`: `[START] text [END]`, label index.

    Example:

    >>> from keras_transformer.data import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer.learn(["good film", "bad film"], 40)
    >>> ds = classification_dataset([("good film", "pos"), ("bad film", "neg")], tokenizer,
    ...                             ["neg", "pos"], batch_size=2, max_length=8)
    >>> [tuple(t.shape) for t in next(iter(ds))], next(iter(ds))[1].numpy().tolist()
    ([(2, 8), (2,)], [1, 0])
    """
    unknown = sorted({label for _, label in pairs} - set(class_names))
    if unknown:
        raise ValueError(f"labels {unknown} are not among the class names {list(class_names)}")
    ids = np.asarray(encode_source([s for s, _ in pairs], tokenizer, max_length))
    labels = np.array([list(class_names).index(label) for _, label in pairs], "int32")
    return array_dataset(ids.astype("int32"), labels, batch_size, shuffle=shuffle, seed=seed)


def array_dataset(inputs, labels, batch_size: int, *, shuffle: bool, seed: int) -> tf.data.Dataset:
    """Batches of equal-length arrays, shuffled every epoch when `shuffle`."""
    ds = tf.data.Dataset.from_tensor_slices((inputs, labels))
    if shuffle:
        ds = ds.shuffle(len(labels), seed=seed, reshuffle_each_iteration=True)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def prefix_dataset(
    pairs: list[tuple[str, str]], tokenizer, *, batch_size: int, max_length: int, shuffle: bool,
    seed: int = 0,
) -> tf.data.Dataset:  # fmt: skip
    """`prefix_sequences` batches, padded to each batch's longest row (full batches when shuffled)."""
    ds = tf.data.Dataset.from_tensor_slices(prefix_sequences(pairs, tokenizer, max_length))
    if shuffle:
        ds = ds.shuffle(len(pairs), seed=seed, reshuffle_each_iteration=True)
    ds = ds.ragged_batch(batch_size, drop_remainder=shuffle)
    # No cache() after the shuffle: it would replay the first epoch's order every epoch.
    return ds.map(lambda x, y: (x.to_tensor(), y.to_tensor())).prefetch(tf.data.AUTOTUNE)


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
