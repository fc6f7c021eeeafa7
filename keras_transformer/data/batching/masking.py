"""BERT's masked-language-model corruption, as TensorFlow ops for a tf.data pipeline.

Of the real tokens of a batch (never padding, never a reserved token such as
`[START]` or `[END]`), each is *selected* with probability `rate` (15%). A
selected token becomes `[MASK]` 80% of the time, a random ordinary token 10%
of the time, and stays unchanged 10% of the time; the model must predict the
original token at every selected position. Labels follow the package's
padding convention: the original id where a token was selected, 0 elsewhere,
so `MaskedSparseCategoricalCrossentropy` and `MaskedAccuracy` count the
selected positions only.

Randomness is stateless (`tf.random.stateless_*`) and driven by an explicit
seed, so a pipeline that draws a new seed per batch from
`tf.data.Dataset.random(seed)` is deterministic for its seed and still masks
differently every epoch (dynamic masking).
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

from keras_transformer._validation import check_positive_int, check_probability, check_seed
from keras_transformer.data.batching.framing import encode_source
from keras_transformer.data.text.tokenizer import RESERVED_TOKENS
from keras_transformer.errors import UserInputError


def mask_tokens(
    ids: tf.Tensor,
    seed: tf.Tensor | Sequence[int],
    *,
    vocab_size: int,
    mask_id: int = RESERVED_TOKENS.index("[MASK]"),
    num_reserved: int = len(RESERVED_TOKENS),
    rate: float = 0.15,
    mask_token_rate: float = 0.8,
    random_token_rate: float = 0.1,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Corrupts a batch of token ids for masked language modelling (BERT, section 3.1).

    Args:
        ids: int `(batch, seq_len)`, 0 is padding.
        seed: two integers (a `(2,)` tensor), the stateless random seed.
        vocab_size: size of the vocabulary; random replacements are drawn
            from the ordinary tokens `[num_reserved, vocab_size)`.
        mask_id: the id of `[MASK]`.
        num_reserved: ids below this are reserved tokens (`[PAD]`, `[START]`,
            `[END]`, ...): never selected, never drawn as replacements.
        rate: probability that a real token is selected.
        mask_token_rate: share of selected tokens replaced by `[MASK]`.
        random_token_rate: share of selected tokens replaced by a random token
            (the rest stay unchanged).

    Returns:
        `(inputs, labels)`, both with the shape and dtype of `ids`: the
        corrupted ids, and the original id at selected positions, 0 elsewhere.

    Example:

    >>> import numpy as np
    >>> ids = np.array([[2, 10, 11, 12, 13, 14, 15, 3, 0, 0]], "int32")
    >>> inputs, labels = mask_tokens(ids, [1, 2], vocab_size=20, rate=0.5)
    >>> labels.numpy()  # selected: 10, 12, 13, 14 (never [START]=2, [END]=3 or padding)
    array([[ 0, 10,  0, 12, 13, 14,  0,  0,  0,  0]], dtype=int32)
    >>> inputs.numpy()  # 10 -> random 14; 12, 13 -> [MASK]=5; 14 kept
    array([[ 2, 14, 11,  5,  5, 14, 15,  3,  0,  0]], dtype=int32)
    """
    check_positive_int("vocab_size", vocab_size)
    check_positive_int("num_reserved", num_reserved)
    if vocab_size <= num_reserved:
        raise UserInputError(
            f"vocab_size={vocab_size} must be larger than num_reserved={num_reserved}: "
            "random replacements are drawn from the ordinary tokens."
        )
    rate = check_probability("rate", rate)
    mask_token_rate = check_probability("mask_token_rate", mask_token_rate)
    random_token_rate = check_probability("random_token_rate", random_token_rate)
    if mask_token_rate + random_token_rate > 1.0:
        raise UserInputError(
            f"mask_token_rate + random_token_rate = {mask_token_rate + random_token_rate} "
            "must be <= 1 (the rest of the selected tokens stay unchanged)."
        )
    ids = tf.convert_to_tensor(ids)
    seed = tf.cast(tf.convert_to_tensor(seed), tf.int64)
    seeds = tf.random.experimental.stateless_split(seed, num=3)
    shape = tf.shape(ids)
    selectable = ids >= num_reserved  # (batch, seq_len): real, ordinary tokens
    selected = selectable & (tf.random.stateless_uniform(shape, seeds[0]) < rate)
    action = tf.random.stateless_uniform(shape, seeds[1])
    to_mask = selected & (action < mask_token_rate)
    to_random = (
        selected & (action >= mask_token_rate) & (action < mask_token_rate + random_token_rate)
    )
    random_ids = tf.random.stateless_uniform(
        shape, seeds[2], minval=num_reserved, maxval=vocab_size, dtype=tf.int32
    )
    inputs = tf.where(to_mask, tf.cast(mask_id, ids.dtype), ids)
    inputs = tf.where(to_random, tf.cast(random_ids, ids.dtype), inputs)
    labels = tf.where(selected, ids, tf.zeros_like(ids))
    return inputs, labels


def make_mlm_dataset(
    texts: Sequence[str],
    tokenizer,
    *,
    batch_size: int,
    max_length: int,
    seed: int = 0,
    shuffle: bool = True,
    rate: float = 0.15,
) -> tf.data.Dataset:
    """`(inputs, labels)` batches of masked sentences for `model.fit`.

    Each text is framed as `[START] tokens [END]` (as `encode_source` does, the
    `[START]` position doubling as BERT's `[CLS]`), trimmed to `max_length`,
    padded to the longest row of its batch, and corrupted by `mask_tokens` with a
    new seed per batch drawn from `tf.data.Dataset.random(seed)`: new masks every
    epoch when `shuffle` (training), the same masks every pass otherwise.

    Args:
        texts: the corpus, one string per example.
        tokenizer: a `WordPieceTokenizer` (its vocabulary holds `[MASK]`).
        batch_size: examples per batch.
        max_length: longest framed row.
        seed: seed of the shuffling and of the masking.
        shuffle: shuffle the texts and re-draw the masks every epoch (training).
        rate: selection probability passed to `mask_tokens`.

    Returns:
        A `tf.data.Dataset` of int32 `(inputs, labels)`, each `(batch, seq_len)`.

    Example:

    >>> from keras_transformer.data.text.tokenizer import WordPieceTokenizer
    >>> texts = ["the plot was dull", "a witty script"] * 4
    >>> tokenizer = WordPieceTokenizer.learn(texts, 40)
    >>> inputs, labels = next(iter(make_mlm_dataset(texts, tokenizer, batch_size=4,
    ...                                             max_length=16, seed=0)))
    >>> inputs.shape == labels.shape, inputs.shape[0]
    (True, 4)
    """
    check_positive_int("batch_size", batch_size)
    check_seed(seed)
    if isinstance(texts, (str, bytes)) or len(texts) == 0:
        raise UserInputError("texts must be a non-empty list of strings (the corpus)")
    ids = encode_source(list(texts), tokenizer, max_length)  # (n, longest framed row)
    lengths = tf.math.count_nonzero(ids, axis=1, dtype=tf.int32)
    ds = tf.data.Dataset.from_tensor_slices((ids, lengths))
    if shuffle:
        ds = ds.shuffle(len(texts), seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(batch_size)
    # Training draws new masks every epoch; evaluation keeps the same masks, so
    # validation losses of different epochs compare.
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=shuffle).batch(2)
    vocab_size = tokenizer.vocab_size
    mask_id = tokenizer.token_to_id("[MASK]")

    def corrupt(batch, batch_seed):
        rows, row_lengths = batch
        rows = rows[:, : tf.reduce_max(row_lengths)]  # (batch, longest row of the batch)
        return mask_tokens(rows, batch_seed, vocab_size=vocab_size, mask_id=mask_id, rate=rate)

    return tf.data.Dataset.zip(ds, seeds).map(corrupt).prefetch(tf.data.AUTOTUNE)
