"""Long-range dependencies: the `recall` task at growing distance, one model per column.

In `load_task("recall", distance=n)` the target is the symbol `n` positions from the end of a
source of varying length: the RNN must carry it through `n - 1` later steps (O(T)); an encoder
position of the CNN sees `num_layers * (kernel_size - 1) / 2` neighbours on each side, so some
position sees both the symbol and `[END]` only while `n <= num_layers * (kernel_size - 1)`; the
Transformer finds it in one layer (O(1)). Every model is trained briefly with the same data,
loss and Adam; chance is `1 / vocab_size`. `long_range_experiment` repeats each run over seeds
(data and weights) and can give every model the Transformer's number of parameters.
"""

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_transformer.analysis.complexity import _check
from keras_transformer.errors import UserInputError

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
    raise UserInputError(f"name={name!r} is not a known model; choose one of {LONG_RANGE_MODELS}")


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
        make_train: builds a fresh `train` (same pairs, same seed). `recall_accuracy` trains on
            a fresh one, so every model sees the same order of batches whatever was trained
            on this `RecallData` before (a shared dataset reshuffles on every pass).
    """

    distance: int
    train: tf.data.Dataset
    test: list[tuple[dict[str, Any], np.ndarray]]
    vocab_size: int
    max_length: int
    steps: int
    make_train: Callable[[], tf.data.Dataset] | None = None


def recall_data(
    distance: int,
    *,
    num_train: int = 2000,
    num_test: int = 200,
    batch_size: int = 32,
    vocab_size: int = 10,
    seed: int = 0,
    max_length: int | None = None,
) -> RecallData:
    """Generates, tokenizes and batches `load_task("recall", distance=distance)`.

    Sources are padded to one length and decoder inputs (`[START] answer`) to 2: one shape.

    Args:
        distance: how far from the end the answer sits (sources `distance .. distance + 8`).
        num_train, num_test: training and held-out pairs.
        batch_size: training pairs per step.
        vocab_size: symbols of the task.
        seed: seed of the data and its shuffling.
        max_length: pad the framed sources to this length (at least `distance + 10`, the
            default): several distances then share one input shape, so one traced training
            step serves them all. Padding is masked: it changes no model's outputs.

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
    longest = task.info["length"][1] + 2  # [START] symbols [END]
    if max_length is not None and max_length < longest:
        raise UserInputError(
            f"max_length={max_length} is shorter than the longest framed source at "
            f"distance={distance} ({longest}); use max_length >= {longest} or None"
        )
    max_length = longest if max_length is None else max_length
    common = {"max_length": max_length, "bucket_boundaries": [2, max_length], "seed": seed}
    train_pairs = task.train

    def batches() -> tf.data.Dataset:
        return data.make_dataset(
            train_pairs, tokenizer, tokenizer, batch_size=min(batch_size, num_train), **common
        )

    steps = sum(1 for _ in batches())  # the epoch length (bucketing hides it from tf.data)

    def make_train() -> tf.data.Dataset:
        return batches().apply(tf.data.experimental.assert_cardinality(steps))

    test = data.make_dataset(
        task.test,
        tokenizer,
        tokenizer,
        batch_size=max(num_test, 1),
        shuffle=False,
        drop_remainder=False,
        **common,
    )
    test_batches = [(inputs, labels.numpy()[:, 0]) for inputs, labels in test]  # recalled symbol
    return RecallData(
        distance, make_train(), test_batches, tokenizer.vocab_size, max_length, steps, make_train
    )


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
    curve: bool = False,
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
        curve: also score after every epoch (`"curve"`: one accuracy per epoch).

    Returns:
        `{"accuracy": float, "seconds": float, "parameters": int, "final_loss": float}`
        (and `"curve"`); `seconds` is the time `fit` took, the first call tracing included.

    Example:
    >>> result = recall_accuracy("rnn", 1, num_train=64, num_test=16, epochs=1, d_model=8,
    ...                          run_eagerly=True)
    >>> 0.0 <= result["accuracy"] <= 1.0
    True
    """
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
    shape = {"d_model": d_model, "num_layers": num_layers, "num_heads": num_heads}
    trainer = _Trainer(name, prepared, shape, run_eagerly)
    return trainer.run(prepared, epochs, seed, learning_rate, curve)


class _Trainer:
    """One model of `build_recall_model`, compiled once; `run` trains it from a seed's weights.

    Tracing the training step costs more than training these small models (measured on 2 busy
    cores, 2-layer Transformer: ~15 s to trace, ~11 s for 8 epochs), so the runs of several
    seeds and learning rates with one input shape share the traced step: each run loads the
    weights a fresh build under its seed draws, the optimizer's initial state and its learning
    rate, the same start as a new model.
    """

    def __init__(
        self, name: str, prepared: RecallData, shape: dict[str, int], run_eagerly: bool
    ) -> None:
        self.name, self.shape = name, dict(shape)
        self.sizes = (prepared.vocab_size, prepared.max_length, prepared.steps)
        self.run_eagerly = run_eagerly
        self.model: keras.Model | None = None
        self.optimizer_start: list[np.ndarray] = []

    def build(self, seed: int) -> keras.Model:
        keras.utils.set_random_seed(seed)
        vocab_size, max_length, _ = self.sizes
        width, layers = (
            self.shape["d_model"],
            {k: self.shape[k] for k in ("num_layers", "num_heads")},
        )
        return build_recall_model(self.name, vocab_size, width, max_length, **layers)

    def run(
        self,
        prepared: RecallData,
        epochs: int,
        seed: int,
        learning_rate: float,
        curve: bool = False,
    ) -> dict[str, Any]:
        """Trains from the weights of `seed` on `prepared` (same sizes) and scores the model."""
        from keras_transformer.training import MaskedSparseCategoricalCrossentropy

        if (prepared.vocab_size, prepared.max_length, prepared.steps) != self.sizes:
            raise ValueError("prepared has other sizes than the data this model was built for")
        if self.model is None:
            model = self.model = self.build(seed)
            optimizer = keras.optimizers.Adam(learning_rate)
            optimizer.build(model.trainable_variables)
            self.optimizer_start = [np.array(v.numpy()) for v in optimizer.variables]
            # A whole epoch per call: these models are so small that the per-step Python
            # overhead would otherwise dominate (measured ~30% on 2 cores).
            steps = 1 if self.run_eagerly else prepared.steps
            loss = MaskedSparseCategoricalCrossentropy()
            model.compile(optimizer, loss, run_eagerly=self.run_eagerly, steps_per_execution=steps)
        else:
            self.model.set_weights(self.build(seed).get_weights())
            for variable, value in zip(
                self.model.optimizer.variables, self.optimizer_start, strict=True
            ):
                variable.assign(value)
            self.model.optimizer.learning_rate.assign(learning_rate)
        return _train_and_score(self.model, prepared, epochs, seed, curve)


def _score(model: keras.Model, prepared: RecallData) -> float:
    """Fraction of held-out sources whose symbol the model recalls (teacher-forced)."""
    correct = total = 0
    for inputs, labels in prepared.test:
        logits = np.asarray(model(inputs, training=False))  # (batch, tgt_len, vocab)
        correct += int(np.sum(np.argmax(logits[:, 0], axis=-1) == labels))
        total += labels.shape[0]
    return correct / total


def _train_and_score(
    model: keras.Model, prepared: RecallData, epochs: int, seed: int, curve: bool = False
) -> dict[str, Any]:
    keras.utils.set_random_seed(seed)
    # A fresh dataset, made after the seed: the same batches in the same order for every model.
    train = prepared.make_train() if prepared.make_train is not None else prepared.train
    callbacks = [_Curve(prepared)] if curve else []
    start = time.perf_counter()
    history = model.fit(train, epochs=epochs, shuffle=False, verbose=0, callbacks=callbacks)
    seconds = time.perf_counter() - start - sum(c.seconds for c in callbacks)
    result = {
        "accuracy": _score(model, prepared),
        "seconds": round(seconds, 2),
        "parameters": int(model.count_params()),
        "final_loss": float(history.history["loss"][-1]),
    }
    if curve:
        result["curve"] = callbacks[0].scores
    return result


class _Curve(keras.callbacks.Callback):
    """Scores the model after every epoch; its own time is kept apart from the training's."""

    def __init__(self, prepared: RecallData) -> None:
        super().__init__()
        self.prepared, self.scores, self.seconds = prepared, [], 0.0

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        start = time.perf_counter()
        self.scores.append(_score(self.model, self.prepared))
        self.seconds += time.perf_counter() - start


def width_for_parameters(
    name: str,
    parameters: int,
    vocab_size: int,
    max_length: int,
    *,
    num_layers: int = 2,
    num_heads: int = 1,
) -> int:
    """The width at which `build_recall_model(name, ...)` has the closest to `parameters` weights.

    Every model's parameter count is a quadratic in its width (embeddings and biases linear,
    layers quadratic): it is counted at three widths, solved for `parameters`, and the nearest
    widths (multiples of `num_heads`) are checked. The Transformer's count comes from
    `models.parameters.transformer_parameters` (exact, without building); the others' from
    `count_params()` of built models.

    Args:
        name: one of `LONG_RANGE_MODELS`.
        parameters: the target number of weights.
        vocab_size, max_length, num_layers, num_heads: as in `build_recall_model`.

    Returns:
        The width (`d_model`, LSTM units or CNN filters).

    Example:
    >>> budget = build_recall_model("transformer", 26, 32, 18).count_params()
    >>> width = width_for_parameters("rnn", budget, 26, 18)
    >>> width, build_recall_model("rnn", 26, width, 18).count_params(), budget
    (51, 46028, 45274)
    """
    _check(parameters=parameters, num_heads=num_heads)

    def count(width: int) -> int:
        if name == "transformer":
            from keras_transformer.models.parameters import transformer_parameters

            return transformer_parameters(
                vocab_size,
                vocab_size,
                num_layers=num_layers,
                d_model=width,
                num_heads=num_heads,
                dff=2 * width,  # as build_recall_model
                max_length=max_length,
            )
        built = build_recall_model(
            name, vocab_size, width, max_length, num_layers=num_layers, num_heads=num_heads
        )
        return int(built.count_params())

    probes = [num_heads * k for k in (4, 8, 16)]
    a, b, c = np.polyfit(probes, [count(w) for w in probes], 2)
    root = (-b + np.sqrt(max(b * b - 4 * a * (c - parameters), 0.0))) / (2 * a)
    nearest = max(1, int(round(root / num_heads)))
    candidates = [num_heads * k for k in (nearest - 1, nearest, nearest + 1) if k >= 1]
    return min(candidates, key=lambda width: abs(count(width) - parameters))


def long_range_experiment(
    distances: list[int],
    models: tuple[str, ...] = ("transformer", "rnn", "cnn"),
    *,
    seeds: Sequence[int] | None = None,
    match_parameters: bool = False,
    curves: bool | Sequence[str] = False,
    cache: dict | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """`recall_accuracy` of every model at every distance, for every seed.

    A seed draws the data (pairs and their order) and the weights: one `RecallData` per
    distance and seed, shared by the models.

    Args:
        distances: distances to test, e.g. `[1, 4, 16]`.
        models: names from `LONG_RANGE_MODELS`.
        seeds: seeds to repeat every run with; default `[seed]` (the `seed` keyword, else 0).
        match_parameters: give every model the width (`width_for_parameters`) at which it
            has about as many weights as the Transformer of width `d_model`; otherwise every
            model has width `d_model`.
        curves: also score every run after every epoch (`"curves"`): `True` for every model,
            or the names of the models to follow.
        cache: a dict to pass to several calls (empty at first): they then share the data of
            each distance and seed, and the traced training step of each model shape (a
            second learning rate for a model reuses the first one's trace).
        **kwargs: passed to `recall_accuracy` (`num_train`, `epochs`, `d_model`, ...).

    Returns:
        `{"distances": [...], "chance": 1 / vocab_size, "seeds": [...], "widths": {model: w},
        "vocab_size", "max_length" (of the data, for `width_for_parameters`),
        "accuracy": {model: [mean over seeds, per distance]}, "accuracy_min", "accuracy_max"
        (the spread over seeds, same shape), "accuracy_runs": {model: [[per seed] per
        distance]}, "seconds": {model: [mean training seconds per distance]} (the first run of a
        model also traces its training step), "parameters": {model: [...]}, "settings": kwargs}`;
        with `curves`, `"curves": {model: [[accuracy per epoch, per seed] per distance]}`.

    Example:
    >>> result = long_range_experiment([1], ("cnn",), num_train=64, num_test=16, epochs=1,
    ...                                d_model=8, run_eagerly=True)
    >>> sorted(result["accuracy"]), result["seeds"]
    (['cnn'], [0])
    """
    for name in models:
        if name not in LONG_RANGE_MODELS:
            raise UserInputError(
                f"models contains {name!r}, not a known model; choose from {LONG_RANGE_MODELS}"
            )
    if seeds is not None and "seed" in kwargs:
        raise UserInputError(f"pass seeds={list(seeds)} or seed={kwargs['seed']}, not both")
    seeds = [int(s) for s in (seeds if seeds is not None else [kwargs.pop("seed", 0)])]
    if not seeds:
        raise UserInputError("seeds=[] is empty; give at least one seed, e.g. seeds=[0]")
    known = {"num_train", "num_test", "batch_size", "vocab_size", "epochs", "d_model"}
    known |= {"num_layers", "num_heads", "learning_rate", "run_eagerly"}
    if unknown := sorted(set(kwargs) - known):
        raise UserInputError(
            f"unknown options {unknown}; long_range_experiment takes {sorted(known)}"
        )
    chance = 1.0 / kwargs.get("vocab_size", 10)
    runs: dict[str, list[list[dict[str, Any]]]] = {name: [] for name in models}
    data_keys = ("num_train", "num_test", "batch_size", "vocab_size")
    data_options = {key: kwargs[key] for key in data_keys if key in kwargs}
    data_options["max_length"] = max(distances) + 10  # one input shape: one traced step
    shape = {"d_model": kwargs.get("d_model", 32)}
    shape.update(num_layers=kwargs.get("num_layers", 2), num_heads=kwargs.get("num_heads", 1))
    learning_rate, run_eagerly = kwargs.get("learning_rate", 3e-3), kwargs.get("run_eagerly", False)
    epochs = kwargs.get("epochs", 10)
    _check(epochs=epochs)
    followed = (
        set(models)
        if curves is True
        else {curves}
        if isinstance(curves, str)
        else set(curves or ())
    )
    widths = {name: shape["d_model"] for name in models}
    cache = {} if cache is None else cache
    datasets, trainers = cache.setdefault("data", {}), cache.setdefault("trainers", {})
    matched = False
    for distance in distances:
        for name in models:
            runs[name].append([])
        for seed in seeds:
            data_key = (distance, seed, tuple(sorted(data_options.items())))
            if data_key not in datasets:
                datasets[data_key] = recall_data(distance, seed=seed, **data_options)
            prepared = datasets[data_key]  # shared by every model
            if match_parameters and not matched:  # once, on the first data
                layers = {"num_layers": shape["num_layers"], "num_heads": shape["num_heads"]}
                vocab, length = prepared.vocab_size, prepared.max_length
                reference = build_recall_model(
                    "transformer", vocab, shape["d_model"], length, **layers
                )
                budget = reference.count_params()
                for name in set(models) - {"transformer"}:
                    widths[name] = width_for_parameters(name, budget, vocab, length, **layers)
                matched = True
            for name in models:
                own = dict(shape, d_model=widths[name])
                sizes = (prepared.vocab_size, prepared.max_length, prepared.steps)
                key = (name, *sizes, *sorted(own.items()), run_eagerly)
                if key not in trainers:
                    trainers[key] = _Trainer(name, prepared, own, run_eagerly)
                run = trainers[key].run(prepared, epochs, seed, learning_rate, name in followed)
                runs[name][-1].append(run)
    result: dict[str, Any] = {
        "distances": list(distances),
        "chance": chance,
        "seeds": seeds,
        "widths": widths,
        "vocab_size": prepared.vocab_size,  # of the last data (the same for every distance)
        "max_length": prepared.max_length,  # one padded source length for every distance
    }
    for key, reduce in (("accuracy", np.mean), ("accuracy_min", np.min), ("accuracy_max", np.max)):
        result[key] = {
            name: [float(reduce([run["accuracy"] for run in at])) for at in per_distance]
            for name, per_distance in runs.items()
        }
    result["accuracy_runs"] = {
        name: [[run["accuracy"] for run in at] for at in per_distance]
        for name, per_distance in runs.items()
    }
    result["seconds"] = {
        name: [round(float(np.mean([run["seconds"] for run in at])), 2) for at in per_distance]
        for name, per_distance in runs.items()
    }
    result["parameters"] = {
        name: [at[0]["parameters"] for at in per_distance] for name, per_distance in runs.items()
    }
    if followed:
        result["curves"] = {
            name: [[run["curve"] for run in at] for at in per_distance]
            for name, per_distance in runs.items()
            if name in followed
        }
    result["settings"] = dict(kwargs)
    return result
