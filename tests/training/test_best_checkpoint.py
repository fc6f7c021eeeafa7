"""The best checkpoint: the lowest `val_loss` of all epochs, across a resume, never a NaN epoch.

A one-weight linear model trained by SGD towards y = 2x, validated on y = x:
its weight moves 0 -> 0.4 -> 0.72 -> 0.98 -> 1.18 -> ..., so `val_loss` is
lowest at epoch 2 and rises after it; the best checkpoint is known exactly.
"""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.plots import read_history
from keras_transformer.training.callbacks import BestWeights
from keras_transformer.training.fitting import fit_run


def linear_model():
    model = keras.Sequential(
        [keras.Input((1,)), keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")]
    )
    model.compile(keras.optimizers.SGD(0.1), "mse")
    return model


class Interrupted(Exception):
    pass


def train_data(stop_at_epoch=None):
    epochs = []

    def batches():
        epochs.append(1)
        if stop_at_epoch is not None and len(epochs) > stop_at_epoch:
            raise Interrupted(f"interrupted in epoch {stop_at_epoch}")
        yield np.ones((4, 1), "float32"), np.full((4, 1), 2.0, "float32")

    spec = (tf.TensorSpec([None, 1], tf.float32), tf.TensorSpec([None, 1], tf.float32))
    return tf.data.Dataset.from_generator(batches, output_signature=spec)


VAL = tf.data.Dataset.from_tensors((np.ones((4, 1), "float32"), np.ones((4, 1), "float32")))


def fit(run_dir, train, model=None, **options):
    """`fit_run` of the linear model on `train` for 6 epochs (patience 10), or as `options` say."""
    options = {"epochs": 6, "early_stopping_patience": 10, **options}
    model = model or linear_model()
    return fit_run(model, train, VAL, run_dir=str(run_dir), tensorboard=False, **options)


def best_val_loss(run_dir):
    model = linear_model()
    model.load_weights(run_dir / "checkpoints" / "best.weights.h5")
    return model.evaluate(VAL, verbose=0)


def test_the_best_checkpoint_survives_a_resume(tmp_path):
    run_dir = tmp_path / "run"
    with pytest.raises(Exception, match="interrupted in epoch 4"):
        fit(run_dir, train_data(stop_at_epoch=4))  # epochs 0-3 done, the best among them
    before = read_history(str(run_dir / "history.csv"))["val_loss"]
    assert len(before) == 4 and int(np.argmin(before)) == 2
    fit(run_dir, train_data())  # resumes at epoch 4; epochs 4 and 5 are worse than epoch 2
    history = read_history(str(run_dir / "history.csv"))
    assert list(history["epoch"]) == [0, 1, 2, 3, 4, 5]
    assert min(history["val_loss"][4:]) > min(before)
    # the file holds epoch 2's weights, not the best of the resumed epochs only
    assert best_val_loss(run_dir) == pytest.approx(min(history["val_loss"]), rel=1e-5)


def test_an_uninterrupted_run_keeps_the_same_best(tmp_path):
    fit(tmp_path / "run", train_data())
    history = read_history(str(tmp_path / "run" / "history.csv"))
    assert int(np.argmin(history["val_loss"])) == 2
    assert best_val_loss(tmp_path / "run") == pytest.approx(min(history["val_loss"]), rel=1e-5)


@pytest.mark.parametrize(
    "logs",
    [
        {"loss": math.nan, "val_loss": 0.01},
        {"loss": 1.0, "val_loss": math.nan},
        {"loss": math.inf, "val_loss": 0.01},
        {"loss": 1.0, "val_loss": -math.inf},
        {"loss": 1.0},  # no val_loss logged
    ],
)
def test_a_nan_or_infinite_epoch_is_never_saved_as_best(tmp_path, logs):
    path = str(tmp_path / "best.weights.h5")
    model = linear_model()
    callback = BestWeights(path, "val_loss")
    callback.set_model(model)
    callback.on_epoch_end(0, {"loss": 1.0, "val_loss": 0.5})
    saved = linear_model()
    saved.load_weights(path)
    assert callback.best == 0.5
    model.layers[0].kernel.assign([[7.0]])  # the "diverged" weights of the next epoch
    callback.on_epoch_end(1, logs)
    saved.load_weights(path)
    assert float(saved.layers[0].kernel.numpy()[0, 0]) == 0.0 and callback.best == 0.5
    callback.on_epoch_end(2, {"loss": 1.0, "val_loss": 0.4})  # a finite improvement is saved
    saved.load_weights(path)
    assert float(saved.layers[0].kernel.numpy()[0, 0]) == 7.0 and callback.best == 0.4


def test_a_resumed_callback_must_beat_the_logged_best(tmp_path):
    path = str(tmp_path / "best.weights.h5")
    callback = BestWeights(path, "val_loss", initial_best=0.2)
    callback.set_model(linear_model())
    callback.on_epoch_end(3, {"loss": 1.0, "val_loss": 0.3})
    assert not (tmp_path / "best.weights.h5").exists()
    callback.on_epoch_end(4, {"loss": 1.0, "val_loss": 0.1})
    assert (tmp_path / "best.weights.h5").exists() and callback.best == 0.1


def test_an_early_stop_says_why_in_one_line_shown_by_default(tmp_path, caplog):
    # val_loss falls, then rises: patience 2 stops two epochs after its lowest, before 6.
    with caplog.at_level("INFO", logger="keras_transformer.progress"):
        result = fit(tmp_path / "run", train_data(), early_stopping_patience=2)
    assert result.epochs_run < 6
    assert result.stop_reason == "val_loss did not improve for 2 epochs (early stopping)"
    lines = [r.getMessage() for r in caplog.records if r.name == "keras_transformer.progress"]
    assert lines == [
        f"training stopped early after epoch {result.epochs_run}: val_loss did not improve for "
        "2 epochs (early stopping)"
    ]
    # the progress logger shows INFO lines without -v (the package's own logger is WARNING)
    import logging

    assert logging.getLogger("keras_transformer.progress").level == logging.INFO


def test_keep_last_keeps_the_weights_training_ended_with_where_they_are_not_the_best(tmp_path):
    # val_loss is lowest at epoch 2 of 6: the model holds epoch 2's weights, and the weights of
    # epoch 5 are kept beside them for a recipe to choose (Recipe.choose_weights).
    model = linear_model()
    result = fit(tmp_path / "run", train_data(), model, keep_last=True)
    assert result.last_weights == str(tmp_path / "run" / "checkpoints" / "last.weights.h5")
    assert model.evaluate(VAL, verbose=0) == pytest.approx(best_val_loss(tmp_path / "run"))
    last = linear_model()
    last.load_weights(result.last_weights)
    assert float(last.get_weights()[0][0, 0]) > float(model.get_weights()[0][0, 0]) > 0.7
    # Two epochs: the last is the best, so no second file.
    short = fit(tmp_path / "short", train_data(), epochs=2, keep_last=True)
    assert short.last_weights is None
    assert not (tmp_path / "short" / "checkpoints" / "last.weights.h5").exists()
