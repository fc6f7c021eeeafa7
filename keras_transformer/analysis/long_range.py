"""Long-range dependencies: the `recall` task at growing distance, one model per column.

In `load_task("recall", distance=n)` the target is the symbol `n` positions from the end of a
source of varying length: the RNN must carry it through `n - 1` later steps (O(T)), the CNN sees
`num_layers * (kernel_size - 1)` back, the Transformer finds it in one layer (O(1)). Every model
is trained briefly with the same data, loss and Adam; chance is `1 / vocab_size`.
"""

import time
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_transformer.analysis.complexity import _check

LONG_RANGE_MODELS: tuple[str, ...] = ("transformer", "rnn", "rnn_attention", "cnn")
"""Models `recall_accuracy` trains: Transformer, LSTM seq2seq without / with attention, CNN."""


def build_recall_model(
    name: str,
    vocab_size: int,
    d_model: int,
    max_length: int,
    *,
    num_layers: int = 2,
    num_heads: int = 1,
) -> keras.Model:
    """One of `LONG_RANGE_MODELS` at width `d_model`.

    Args:
        name: one of `LONG_RANGE_MODELS` (Transformer with `dff = 2 d_model`; RNNs one LSTM
            layer a side; CNN `num_layers` width-3 convolutions a side; Luong attention).
        vocab_size: size of the joint source / target vocabulary.
        d_model: model width.
        max_length: longest sequence (position tables).
        num_layers: layers of the Transformer and the CNN.
        num_heads: heads of the Transformer. One wide head learns the lookup sooner: at distance
            8 (`d_model=32`, one layer) 0.95 took 6-7 epochs with 1 head, 10 with 2, >10 with 4.

    Returns:
        An uncompiled `keras.Model` with the `{"source", "target"}` -> logits interface.

    Example:
    >>> build_recall_model("rnn", 20, 8, 12).name
    'rnn_seq2seq'
    """
    from keras_transformer.models import build_cnn_seq2seq, build_rnn_seq2seq, build_transformer

    if name == "transformer":
        return build_transformer(
            vocab_size,
            vocab_size,
            num_layers=num_layers,
            d_model=d_model,
            num_heads=num_heads,
            dff=2 * d_model,
            dropout=0.0,
            max_length=max_length,
        )
    if name in ("rnn", "rnn_attention"):
        attention = "luong" if name == "rnn_attention" else None
        return build_rnn_seq2seq(vocab_size, vocab_size, units=d_model, attention=attention)
    if name == "cnn":
        return build_cnn_seq2seq(
            vocab_size, vocab_size, filters=d_model, num_layers=num_layers, max_length=max_length
        )
    raise ValueError(f"name={name!r} is not a known model; choose one of {LONG_RANGE_MODELS}")


@dataclass
class RecallData:
    """One distance of the recall task, tokenized and batched once for every model.

    Attributes:
        distance: how far from the end the answer sits.
        train: `make_dataset` batches `({"source", "target"}, labels)` of known length.
        test: `(inputs, recalled symbol ids)` batches for scoring.
        vocab_size: size of the joint vocabulary (`WordPieceTokenizer`).
        max_length: longest framed source (`[START]` symbols `[END]`).
        steps: training batches per epoch.
    """

    distance: int
    train: tf.data.Dataset
    test: list[tuple[dict[str, Any], np.ndarray]]
    vocab_size: int
    max_length: int
    steps: int


def recall_data(
    distance: int,
    *,
    num_train: int = 2000,
    num_test: int = 200,
    batch_size: int = 32,
    vocab_size: int = 10,
    seed: int = 0,
) -> RecallData:
    """Generates, tokenizes and batches `load_task("recall", distance=distance)`.

    Sources are padded to one length and decoder inputs (`[START] answer`) to 2: one shape.

    Args:
        distance: how far from the end the answer sits (sources `distance .. distance + 8`).
        num_train, num_test: training and held-out pairs.
        batch_size: training pairs per step.
        vocab_size: symbols of the task.
        seed: seed of the data and its shuffling.

    Returns:
        A `RecallData`.

    Example:
    >>> prepared = recall_data(3, num_train=16, num_test=4, batch_size=8)
    >>> prepared.max_length, len(prepared.test[0][1])
    (13, 4)
    """
    from keras_transformer import data

    _check(distance=distance, batch_size=batch_size)
    task = data.load_task(
        "recall",
        distance=distance,
        vocab_size=vocab_size,
        num_train=num_train,
        num_validation=0,
        num_test=num_test,
        seed=seed,
    )
    tokenizer = data.WordPieceTokenizer.learn([s for s, _ in task.train], vocab_size + 20)
    max_length = task.info["length"][1] + 2  # [START] symbols [END]
    common = {"max_length": max_length, "bucket_boundaries": [2, max_length], "seed": seed}
    train = data.make_dataset(
        task.train, tokenizer, tokenizer, batch_size=min(batch_size, num_train), **common
    )
    steps = sum(1 for _ in train)  # one pass fills the cache and gives the epoch length
    train = train.apply(tf.data.experimental.assert_cardinality(steps))
    test = data.make_dataset(
        task.test,
        tokenizer,
        tokenizer,
        batch_size=max(num_test, 1),
        shuffle=False,
        drop_remainder=False,
        **common,
    )
    batches = [(inputs, labels.numpy()[:, 0]) for inputs, labels in test]  # recalled symbol
    return RecallData(distance, train, batches, tokenizer.vocab_size, max_length, steps)


def recall_accuracy(
    name: str,
    distance: int | RecallData,
    *,
    num_train: int = 2000,
    num_test: int = 200,
    epochs: int = 10,
    batch_size: int = 32,
    d_model: int = 32,
    num_layers: int = 2,
    num_heads: int = 1,
    vocab_size: int = 10,
    learning_rate: float = 3e-3,
    seed: int = 0,
    run_eagerly: bool = False,
) -> dict[str, Any]:
    """Trains model `name` on `recall` at `distance`; scores the recalled symbol (teacher-forced).

    Args:
        name: one of `LONG_RANGE_MODELS`.
        distance: how far from the end the answer sits, or a prepared `RecallData` (then
            `num_train`, `num_test`, `batch_size` and `vocab_size` are those it was made with).
        num_train, num_test, batch_size, vocab_size: as in `recall_data`.
        epochs: passes over the training pairs.
        d_model, num_layers, num_heads: as in `build_recall_model`.
        learning_rate: Adam's constant learning rate.
        seed: seed of the data and of the weights.
        run_eagerly: train without `tf.function` (only worth it for a handful of steps).

    Returns:
        `{"accuracy": float, "seconds": float, "parameters": int, "final_loss": float}`.

    Example:
    >>> result = recall_accuracy("rnn", 1, num_train=64, num_test=16, epochs=1, d_model=8,
    ...                          run_eagerly=True)
    >>> 0.0 <= result["accuracy"] <= 1.0
    True
    """
    from keras_transformer.training import MaskedSparseCategoricalCrossentropy

    _check(epochs=epochs)
    prepared = distance
    if not isinstance(prepared, RecallData):
        prepared = recall_data(
            distance,
            num_train=num_train,
            num_test=num_test,
            batch_size=batch_size,
            vocab_size=vocab_size,
            seed=seed,
        )
    keras.utils.set_random_seed(seed)
    model = build_recall_model(
        name,
        prepared.vocab_size,
        d_model,
        prepared.max_length,
        num_layers=num_layers,
        num_heads=num_heads,
    )
    optimizer, loss = keras.optimizers.Adam(learning_rate), MaskedSparseCategoricalCrossentropy()
    # A whole epoch per call: these models are so small that the per-step Python overhead would
    # otherwise dominate (measured ~30% on 2 cores).
    steps = 1 if run_eagerly else prepared.steps
    model.compile(optimizer, loss, run_eagerly=run_eagerly, steps_per_execution=steps)
    start = time.perf_counter()
    history = model.fit(prepared.train, epochs=epochs, shuffle=False, verbose=0)  # tf.data shuffles
    seconds = time.perf_counter() - start
    correct = total = 0
    for inputs, labels in prepared.test:
        logits = np.asarray(model(inputs, training=False))  # (batch, tgt_len, vocab)
        correct += int(np.sum(np.argmax(logits[:, 0], axis=-1) == labels))
        total += labels.shape[0]
    return {
        "accuracy": correct / total,
        "seconds": round(seconds, 2),
        "parameters": int(model.count_params()),
        "final_loss": float(history.history["loss"][-1]),
    }


def long_range_experiment(
    distances: list[int], models: tuple[str, ...] = ("transformer", "rnn", "cnn"), **kwargs: Any
) -> dict[str, Any]:
    """`recall_accuracy` of every model at every distance.

    Args:
        distances: distances to test, e.g. `[1, 4, 16]`.
        models: names from `LONG_RANGE_MODELS`.
        **kwargs: passed to `recall_accuracy` (`num_train`, `epochs`, `d_model`, ...).

    Returns:
        `{"distances": [...], "chance": 1 / vocab_size, "accuracy": {model: [...]},
        "seconds": {model: [...]}, "parameters": {model: [...]}, "settings": kwargs}`.

    Example:
    >>> result = long_range_experiment([1], ("cnn",), num_train=64, num_test=16, epochs=1,
    ...                                d_model=8, run_eagerly=True)
    >>> sorted(result["accuracy"])
    ['cnn']
    """
    for name in models:
        if name not in LONG_RANGE_MODELS:
            raise ValueError(
                f"models contains {name!r}, not a known model; choose from {LONG_RANGE_MODELS}"
            )
    keys = ("accuracy", "seconds", "parameters")
    chance = 1.0 / kwargs.get("vocab_size", 10)
    result: dict[str, Any] = {"distances": list(distances), "chance": chance}
    result.update({key: {name: [] for name in models} for key in keys}, settings=dict(kwargs))
    data_keys = ("num_train", "num_test", "batch_size", "vocab_size", "seed")
    data_options = {key: kwargs[key] for key in data_keys if key in kwargs}
    for distance in distances:
        prepared = recall_data(distance, **data_options)  # shared by every model
        for name in models:
            run = recall_accuracy(name, prepared, **kwargs)  # ignores the data options
            for key in keys:
                result[key][name].append(run[key])
    return result
