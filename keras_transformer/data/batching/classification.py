"""Classification batches for the encoder-only runs: one label per sequence or per token.

`classification_dataset` gives one label per text (`build_classifier`);
`it_token_arrays` gives per-token labels at the word "it" (`it-referent`,
`build_token_classifier`); `array_dataset` batches such arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_transformer.data.batching.framing import encode_source
from keras_transformer.data.tasks import it_referent
from keras_transformer.errors import UserInputError


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
        raise UserInputError(f"labels {unknown} are not among the class names {list(class_names)}")
    ids = np.asarray(encode_source([s for s, _ in pairs], tokenizer, max_length))
    labels = np.array([list(class_names).index(label) for _, label in pairs], "int32")
    return array_dataset(ids.astype("int32"), labels, batch_size, shuffle=shuffle, seed=seed)


def array_dataset(inputs, labels, batch_size: int, *, shuffle: bool, seed: int) -> tf.data.Dataset:
    """Batches of equal-length arrays, shuffled every epoch when `shuffle`."""
    ds = tf.data.Dataset.from_tensor_slices((inputs, labels))
    if shuffle:
        ds = ds.shuffle(len(labels), seed=seed, reshuffle_each_iteration=True)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)
