"""Subprocess helper of test_distribute.py: each tf.distribute run in a fresh process.

Logical CPU devices and multi-worker collectives can only be configured before
TensorFlow initializes, which the pytest process has long done. Each mode
prints its result as JSON on the last line of stdout.

    python tests/training/distribute_worker.py compare --out DIR
        Single device vs MirroredStrategy on 2 logical CPUs, same global
        batch: epoch 1 on each; then the mirrored run is interrupted and a
        fresh model resumes epoch 2 from BackupAndRestore's backup.
    TF_CONFIG=... python tests/training/distribute_worker.py multiworker --out DIR
        One worker of a two-worker `keras-transformer train --strategy
        multiworker` run into DIR/run; the worker also saves its initial
        weights (before `fit`) to DIR/worker_<index>.initial.weights.h5 and
        its final weights to DIR/worker_<index>.weights.h5 (train() deletes a
        non-chief worker's own files, so `Model.save` is wrapped to keep a copy).
    python tests/training/distribute_worker.py single --out DIR
        The same `keras-transformer train` run without a strategy (one
        process, the same global batch) into DIR/single, saving its weights
        the same way to DIR/single.weights.h5.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

GLOBAL_BATCH = 8
STEPS = 3  # per epoch
LENGTH = 6  # symbols per copy-task sequence
TINY_MODEL = {"num_layers": 1, "d_model": 16, "num_heads": 2, "dff": 32, "dropout": 0.0}
TINY_RUN = [
    "--num-train",
    "64",
    "--num-validation",
    "8",
    "--num-test",
    "4",
    "--epochs",
    "1",
    "--num-layers",
    "1",
    "--d-model",
    "16",
    "--num-heads",
    "2",
    "--dff",
    "32",
    "--batch-size",
    "16",
    "--max-length",
    "16",
    "--warmup-steps",
    "10",
    "--dropout",
    "0",  # dropout masks drawn per worker could not match a single process
]


class _Interrupt(Exception):
    pass


def _copy_data():
    """Fixed-length copy task: every row holds LENGTH + 1 label tokens, on every replica."""
    from keras_transformer import data
    from keras_transformer.training.datasets import with_known_length

    task = data.load_task(
        "copy", length=LENGTH, num_train=GLOBAL_BATCH * STEPS, num_validation=0, num_test=0
    )
    tokenizer = data.WordPieceTokenizer.learn([s for s, _ in task.train], 40)
    dataset = data.make_dataset(
        task.train,
        tokenizer,
        tokenizer,
        batch_size=GLOBAL_BATCH,
        max_length=LENGTH + 2,
        shuffle=False,  # the same batches, in the same order, in every run
    )
    dataset, _ = with_known_length(dataset)
    return dataset, tokenizer.vocab_size


def _model(strategy, vocab_size: int, element_spec, seed: int = 0):
    import keras

    from keras_transformer import models
    from keras_transformer.training import (
        MaskedAccuracy,
        MaskedSparseCategoricalCrossentropy,
        devices,
        make_optimizer,
    )

    keras.utils.set_random_seed(seed)
    with strategy.scope():
        model = models.build_transformer(vocab_size, vocab_size, max_length=16, **TINY_MODEL)
        model.compile(
            optimizer=make_optimizer(TINY_MODEL["d_model"], warmup_steps=4),
            loss=MaskedSparseCategoricalCrossentropy(label_smoothing=0.1),
            metrics=[MaskedAccuracy()],
        )
    return devices.prepare_for_strategy(model, element_spec)


def _fit(model, dataset, epochs: int, callbacks=()) -> list[float]:
    """Per-step `loss` logs (Keras' running mean within each epoch)."""
    import keras

    losses: list[float] = []
    record = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: losses.append(float(logs["loss"]))
    )
    try:
        model.fit(dataset, epochs=epochs, callbacks=[*callbacks, record], shuffle=False, verbose=0)
    except _Interrupt:
        pass
    return losses


def _weight_differences(a, b) -> dict[str, float]:
    import numpy as np

    return {
        v.path: float(np.max(np.abs(v.numpy() - w.numpy())))
        for v, w in zip(a.weights, b.weights, strict=True)
    }


def compare(args) -> dict:
    import keras

    from keras_transformer.training import devices

    mirrored = devices.make_strategy("mirrored", cpu_devices=2)  # first TensorFlow call
    single = devices.make_strategy("none")
    dataset, vocab_size = _copy_data()
    spec = dataset.element_spec

    single_model = _model(single, vocab_size, spec)
    single_losses = _fit(single_model, dataset, epochs=2)

    # Mirrored: epoch 1, then interrupted; BackupAndRestore saved the state after epoch 1.
    backup = os.path.join(args.out, "backup")

    def interrupt(epoch, logs):
        if epoch == 1:
            raise _Interrupt

    first = _model(mirrored, vocab_size, spec)
    mirrored_losses = _fit(
        first,
        dataset,
        epochs=2,
        callbacks=[
            keras.callbacks.BackupAndRestore(backup),
            keras.callbacks.LambdaCallback(on_epoch_begin=interrupt),
        ],
    )
    # A fresh model (other initial weights) restores weights, optimizer and epoch.
    resumed = _model(mirrored, vocab_size, spec, seed=1)
    resumed_losses = _fit(
        resumed, dataset, epochs=2, callbacks=[keras.callbacks.BackupAndRestore(backup)]
    )

    # Evaluation of a batch that splits unevenly (2 + 1 rows) over the replicas.
    uneven = dataset.unbatch().take(3).batch(3)
    return {
        "replicas": mirrored.num_replicas_in_sync,
        "single_losses": single_losses,
        "mirrored_losses": mirrored_losses,
        "resumed_losses": resumed_losses,
        "resumed_iterations": int(resumed.optimizer.iterations.numpy()),
        "weight_differences": _weight_differences(single_model, resumed),
        "single_evaluate": single_model.evaluate(uneven, verbose=0),
        "mirrored_evaluate": resumed.evaluate(uneven, verbose=0),
    }


def _train_keeping_weights(out: str, name: str, strategy: list[str]) -> dict:
    """`keras-transformer train *TINY_RUN *strategy --out out/run_name`, keeping copies of
    the weights before `fit` (out/name.initial.weights.h5) and at the final save
    (out/name.weights.h5)."""
    import keras

    from keras_transformer.cli import main as cli

    weights = os.path.join(out, f"{name}.weights.h5")
    initial = os.path.join(out, f"{name}.initial.weights.h5")
    save, fit = keras.Model.save, keras.Model.fit

    def save_and_keep_weights(self, filepath, *a, **k):
        save(self, filepath, *a, **k)
        self.save_weights(weights)

    def fit_keeping_initial_weights(self, *a, **k):
        if not os.path.exists(initial):  # the first fit only: the seeded initial weights
            self.save_weights(initial)
        return fit(self, *a, **k)

    keras.Model.save = save_and_keep_weights
    keras.Model.fit = fit_keeping_initial_weights
    run_dir = os.path.join(out, "run" if strategy else name)
    status = cli(["train", *TINY_RUN, *strategy, "--out", run_dir])
    return {"status": status, "weights": weights, "initial_weights": initial}


def multiworker(args) -> dict:
    index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
    result = _train_keeping_weights(args.out, f"worker_{index}", ["--strategy", "multiworker"])
    return {"index": index, **result}


def single(args) -> dict:
    return _train_keeping_weights(args.out, "single", [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("compare", "multiworker", "single"))
    parser.add_argument("--out", required=True, help="directory for this run's files")
    args = parser.parse_args(argv)
    result = {"compare": compare, "multiworker": multiworker, "single": single}[args.mode](args)
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
