"""A dual encoder trained with in-batch negatives: sentence vectors for semantic search.

One encoder (shared weights) embeds both sides of each pair; in a batch of
`B` pairs the `B x B` matrix of cosine similarities should be largest on the
diagonal, so the loss is a `B`-way softmax cross-entropy whose right answer for
row `i` is column `i` (the other rows' targets are the "negatives"). After
training, `SentenceEncoder(encoder, tokenizer)` embeds strings and ranks
candidates; on `numbers` pairs, the right translation of a held-out number is
found among all the test translations (`retrieval_accuracy`).
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import tensorflow as tf
from keras import ops

from keras_transformer.data.pipeline import frame
from keras_transformer.inference.sentence_encoder import SentenceEncoder
from keras_transformer.layers import PaddingMask
from keras_transformer.layers.sequence_pooling import SequencePooling
from keras_transformer.models import build_encoder


@keras.saving.register_keras_serializable(package="keras_transformer")
class InBatchSimilarity(keras.layers.Layer):
    """Cosine similarity of every left vector with every right vector, over a temperature.

    Args:
        temperature: divides the cosines (small values sharpen the softmax).

    Call arguments:
        inputs: `[left, right]`, each `(batch, d)`.

    Returns:
        float32 logits `(batch, batch)`; row `i`'s right answer is column `i`.

    Example:

    >>> import numpy as np
    >>> x = np.array([[1.0, 0.0], [0.0, 2.0]], "float32")
    >>> np.asarray(InBatchSimilarity(temperature=1.0)([x, x])).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """

    def __init__(self, temperature: float = 0.05, **kwargs):
        super().__init__(**kwargs)
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0; received temperature={temperature}.")
        self.temperature = temperature

    def call(self, inputs):
        left, right = (ops.cast(x, "float32") for x in inputs)
        left = left / ops.maximum(ops.norm(left, axis=-1, keepdims=True), 1e-12)
        right = right / ops.maximum(ops.norm(right, axis=-1, keepdims=True), 1e-12)
        return ops.matmul(left, ops.transpose(right)) / self.temperature  # (batch, batch)

    def get_config(self):
        config = super().get_config()
        config.update({"temperature": self.temperature})
        return config


def build_dual_encoder(
    vocab_size: int,
    *,
    pooling: str = "mean",
    temperature: float = 0.05,
    num_layers: int = 2,
    d_model: int = 128,
    num_heads: int = 4,
    dff: int = 256,
    dropout: float = 0.1,
    max_length: int = 64,
) -> tuple[keras.Model, keras.Model]:
    """A shared `build_encoder` applied to both sides, pooled, compared in the batch.

    Args:
        vocab_size: size of the joint vocabulary (0 is padding).
        pooling: `"mean"` or `"cls"` sentence vector.
        temperature: of `InBatchSimilarity`.
        num_layers, d_model, num_heads, dff, dropout, max_length: of the encoder.

    Returns:
        `(model, encoder)`: the model maps `{"left", "right"}` ids `(batch, len)`
        to logits `(batch, batch)`; `encoder` is the shared sentence encoder.

    Example:

    >>> import numpy as np
    >>> model, encoder = build_dual_encoder(30, num_layers=1, d_model=8, num_heads=2, dff=16)
    >>> ids = np.array([[2, 7, 3], [2, 8, 3]])
    >>> tuple(model({"left": ids, "right": ids}).shape)
    (2, 2)
    """
    encoder = build_encoder(
        vocab_size,
        num_layers=num_layers,
        d_model=d_model,
        num_heads=num_heads,
        dff=dff,
        dropout=dropout,
        max_length=max_length,
        name="sentence_encoder",
    )
    pool = SequencePooling(pooling, name=f"{pooling}_pooling")
    vectors = []
    inputs = {}
    for side in ("left", "right"):
        ids = keras.Input(shape=(None,), dtype="int32", name=side)
        inputs[side] = ids
        mask = PaddingMask(name=f"{side}_padding_mask")(ids)
        vectors.append(pool(encoder(ids), padding_mask=mask))  # (batch, d_model)
    logits = InBatchSimilarity(temperature, name="similarity")(vectors)
    return keras.Model(inputs, logits, name="dual_encoder"), encoder


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


def train_dual_encoder(
    train_pairs: Sequence[tuple[str, str]],
    validation_pairs: Sequence[tuple[str, str]],
    tokenizer,
    *,
    epochs: int = 10,
    batch_size: int = 64,
    learning_rate: float = 1e-3,
    max_length: int = 48,
    seed: int = 0,
    verbose: int = 0,
    **model_kwargs,
) -> tuple[SentenceEncoder, keras.callbacks.History]:
    """Trains `build_dual_encoder` on pairs and returns a `SentenceEncoder`.

    Args:
        train_pairs: `(left, right)` strings that mean the same (e.g. a number
            in English and in German).
        validation_pairs: held-out pairs for the validation loss.
        tokenizer: one joint `WordPieceTokenizer` over both sides.
        epochs, batch_size, learning_rate: of Adam; `batch_size` is also the
            number of candidates each pair is contrasted with.
        max_length: longest framed sentence.
        seed: shuffling and initialization seed.
        verbose: `model.fit` verbosity.
        **model_kwargs: `build_dual_encoder` options (`d_model`, `num_layers`, ...).

    Returns:
        `(SentenceEncoder, history)`.
    """
    keras.utils.set_random_seed(seed)
    pooling = model_kwargs.get("pooling", "mean")
    model, encoder = build_dual_encoder(tokenizer.vocab_size, max_length=max_length, **model_kwargs)
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="in_batch_accuracy")],
    )

    def dataset(pairs, training):
        return pair_dataset(
            pairs, tokenizer, batch_size=batch_size, max_length=max_length, shuffle=training,
            seed=seed,
        )  # fmt: skip

    history = model.fit(
        dataset(train_pairs, True),
        validation_data=dataset(validation_pairs, False) if validation_pairs else None,
        epochs=epochs,
        shuffle=False,  # the tf.data pipeline shuffles itself
        verbose=verbose,
    )
    return SentenceEncoder(encoder, tokenizer, pooling=pooling, max_length=max_length), history


def load_sentence_encoder(run_dir: str) -> SentenceEncoder:
    """The `SentenceEncoder` of a `keras-transformer train --architecture dual-encoder` run.

    Args:
        run_dir: the run directory (`model.keras`, `tokenizers/joint/`, `config.json`).

    Returns:
        A `SentenceEncoder` over the trained shared encoder, with the run's
        pooling and `max_length`.
    """
    import json
    import os

    from keras_transformer.data import WordPieceTokenizer

    paths = [os.path.join(run_dir, name) for name in ("config.json", "model.keras")]
    missing = [os.path.basename(p) for p in paths if not os.path.isfile(p)]
    if missing:
        raise FileNotFoundError(
            f"{run_dir} is not a finished dual-encoder run directory (missing {missing})."
        )
    with open(paths[0]) as handle:
        config = json.load(handle)
    if config.get("architecture") != "dual-encoder":
        raise ValueError(f"{run_dir} is not a dual-encoder run (config.json architecture).")
    model = keras.models.load_model(paths[1], safe_mode=True)
    tokenizer = WordPieceTokenizer.load(os.path.join(run_dir, "tokenizers", "joint"))
    return SentenceEncoder(
        model.get_layer("sentence_encoder"),
        tokenizer,
        pooling=config.get("pooling", "mean"),
        max_length=config["max_length"],
    )
